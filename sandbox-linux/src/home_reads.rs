//! The home directories' allow-list on this machine: what it hides, what it grants besides,
//! and how the mount view covers what read rights cannot hide.
//!
//! Read rights hide what the list leaves out (`crate::hidden_reads`: a home directory and its
//! containers are granted listing only, the readable entries one by one, however many there
//! are), which costs a rule per readable entry and no mount. The mount view covers only:
//! - a hidden file directly in a home directory, and a hidden file a shell start-up file
//!   sources (`. ~/.rye/env`): it reads as empty instead of failing in every login shell;
//! - where read rights do not hide everything — no Landlock, or the network on with Landlock
//!   before ABI 9, which cannot refuse `connect()` to a socket file (an agent no catalogue lists
//!   keeps its socket in a dot directory) — every hidden entry: one stand-in each or, where
//!   that is fewer mounts, its home directory or container covered whole and the readable
//!   entries put back.
//!
//! A hidden entry that holds a granted place or a sourced file is covered as a container is:
//! whole, with those places put back.

use std::path::{Path, PathBuf};

use cordon_policies::{EnvSnapshot, HomeReading, HomeReads, HomeReadsInput, ResolvedPolicy};

use crate::listings::Listings;

/// What the caller's request and view make of the allow-list.
pub struct HomeListContext<'a> {
    pub reading: &'a HomeReading,
    pub view: &'a EnvSnapshot,
    /// The home directories (`$HOME`, the account's).
    pub homes: &'a [PathBuf],
    /// The workspace (the policy's cwd), fixed when the run or the server started. Never the
    /// command's own working directory, which an agent picks per call.
    pub workspace: &'a Path,
}

/// The list's plan for `policy`, planned with `listings`; `$CORDON_HOME` is hidden by read
/// rights too, wherever it lies, but for the writable roots inside it.
pub fn plan(
    context: &HomeListContext<'_>,
    policy: &ResolvedPolicy,
    listings: &Listings,
) -> HomeReads {
    let HomeReading::AllowList { also } = context.reading else {
        return HomeReads::default();
    };
    // A root that held a home directory was sealed into its plain entries before this: the
    // dot entries are in no root. A workspace that is or holds a home directory likewise
    // keeps none of its entries: the command works there, its secrets are not its workspace.
    let homes: Vec<PathBuf> =
        context.homes.iter().filter_map(|home| std::fs::canonicalize(home).ok()).collect();
    let mut keep: Vec<PathBuf> = policy.writable_roots.clone();
    keep.extend(
        std::fs::canonicalize(context.workspace)
            .ok()
            .filter(|cwd| !homes.iter().any(|home| home.starts_with(cwd))),
    );
    // The sockets the command may reach are put back wherever the list hides them.
    keep.extend(policy.allowed_sockets.iter().cloned());
    let env = context.view.view();
    let in_home = |dir: &Path| homes.iter().any(|home| dir.starts_with(home));
    // The `PATH` directories in a home (not one a command can write: a virtualenv's `bin` in
    // the workspace); the plan follows a link on the way only where no command can have
    // planted or re-pointed it.
    let writable = |path: &Path| keep.iter().any(|root| path.starts_with(root));
    let mut grant: Vec<PathBuf> = context
        .view
        .path_dirs
        .iter()
        .map(|dir| cordon_policies::lexically_normal(dir))
        .filter(|dir| in_home(dir) && !writable(dir))
        .collect();
    // What git's global configuration includes; from a file a command may once have written
    // (a dotfiles checkout), only what lies in the same hidden entry as that file.
    let mut grant_beside: Vec<(PathBuf, PathBuf)> = Vec::new();
    for home in homes.iter() {
        for include in crate::apply::direct_includes(home) {
            // Only files: a directory named as an include is no configuration git reads.
            if !std::fs::metadata(&include.file).is_ok_and(|m| m.is_file()) {
                continue;
            }
            match include.from_writable {
                None => grant.push(include.file),
                Some(from) => grant_beside.push((include.file, from)),
            }
        }
    }
    for path in also {
        grant.extend(cordon_policies::expand_hidden_path(path, &env));
    }
    let input = HomeReadsInput {
        homes: context.homes,
        relocations: &context.view.relocations,
        keep: &keep,
        grant: &grant,
        grant_beside: &grant_beside,
        hidden: &policy.hidden_paths,
    };
    let mut reads = cordon_policies::plan_home_reads(&input, listings);
    // cordon's own state: rules, config, journals, what runs held back, other workspaces'
    // caches. The writable roots inside it (this workspace's caches) keep their own grant.
    let cordon_home =
        context.view.cordon_home.as_deref().and_then(|h| std::fs::canonicalize(h).ok());
    if let Some(home) = cordon_home {
        // Never covered: the write layers' directories lie in it.
        let in_root = policy.writable_roots.iter().any(|root| home.starts_with(root));
        let inside_hidden =
            reads.hidden.iter().any(|hidden| home.starts_with(hidden) && *hidden != home);
        if !in_root && !inside_hidden {
            if !reads.hidden.contains(&home) {
                reads.hidden.push(home.clone());
            }
            reads.holding_granted.push(home);
        }
    }
    reads
}

/// The list's plan as the helper makes it, for the front end's messages and reports.
pub fn planned_home_reads(
    reading: &HomeReading,
    view: &EnvSnapshot,
    policy: &ResolvedPolicy,
    workspace: &Path,
) -> HomeReads {
    let homes = homes(view);
    let context = HomeListContext { reading, view, homes: &homes, workspace };
    plan(&context, policy, &Listings::new())
}

/// The home directories: `$HOME` as given (when absolute), and the password database's for
/// this user when that is another (as the view carries it, else looked up).
pub(crate) fn homes(view: &EnvSnapshot) -> Vec<PathBuf> {
    let given = view.home.as_deref().filter(|home| home.is_absolute()).map(Path::to_path_buf);
    let passwd = view.account_home.clone().or_else(|| {
        nix::unistd::User::from_uid(nix::unistd::getuid()).ok().flatten().map(|u| u.dir)
    });
    let mut homes: Vec<PathBuf> = given.into_iter().chain(passwd).collect();
    homes.dedup();
    homes
}

/// How far read rights hide on this kernel, for this command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadRights {
    /// Reads and connections to socket files.
    Everything,
    /// Reads only, and the command may connect to sockets (the network is on).
    ReadsOnly,
    /// Nothing (no Landlock).
    Nothing,
}

/// How the mount view covers the list's hidden entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HomeCovers {
    /// Stand-ins, one per path (added to the hidden paths).
    pub stand_ins: Vec<PathBuf>,
    /// Containers covered whole, with the entries put back.
    pub filtered: Vec<(PathBuf, Vec<PathBuf>)>,
}

/// A command that would start in an entry the list hides, where read rights cannot keep its
/// sockets from answering (or hide it at all) and a cover would take its directory away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartsInHiddenEntry {
    pub cwd: PathBuf,
    pub entry: PathBuf,
}

/// What the mount view covers for `reads`, given what read rights hide and the files the
/// homes' shell start-up files source. `cwds` (canonical) are where the command starts: a
/// directory among them is never covered whole (a cover would take it away), and one inside a
/// hidden entry and outside `keep` (the workspace, the writable roots: put back like any
/// granted place) cannot be hidden there at all when read rights do not hide everything.
pub fn covers(
    reads: &HomeReads,
    rights: ReadRights,
    homes: &[PathBuf],
    cwds: &[PathBuf],
) -> Result<HomeCovers, StartsInHiddenEntry> {
    let hidden_at = |path: &Path| reads.hidden.iter().find(|entry| path.starts_with(entry));
    // A sourced regular file, not a link: a stand-in mounted through a link covers its target.
    let quiet: Vec<PathBuf> = sourced_files(homes)
        .into_iter()
        .filter(|file| hidden_at(file).is_some())
        .filter(|file| std::fs::symlink_metadata(file).is_ok_and(|m| m.is_file()))
        .collect();
    // What a hidden entry holds that must stay reachable: granted places, sourced files.
    let held_in = |entry: &Path| -> Vec<PathBuf> {
        reads
            .granted
            .iter()
            .chain(&quiet)
            .filter(|place| place.starts_with(entry) && place.as_path() != entry)
            .cloned()
            .collect()
    };
    let mut covers = HomeCovers::default();
    covers.stand_ins.extend(quiet.iter().cloned());
    covers.stand_ins.extend(reads.top_files.iter().cloned());
    if rights == ReadRights::Everything {
        covers.stand_ins.sort();
        covers.stand_ins.dedup();
        return Ok(covers);
    }
    for cwd in cwds {
        let granted = reads.granted.iter().any(|place| cwd.starts_with(place));
        if let (Some(entry), false) = (hidden_at(cwd), granted) {
            return Err(StartsInHiddenEntry { cwd: cwd.clone(), entry: entry.clone() });
        }
    }
    let mut in_filtered: Vec<&Path> = Vec::new();
    for view in &reads.containers {
        // Covering the container costs one mount and one per place put back.
        let entries: Vec<&PathBuf> =
            reads.hidden.iter().filter(|e| e.parent() == Some(&view.dir)).collect();
        let mut shown = view.shown.clone();
        shown.extend(entries.iter().flat_map(|entry| held_in(entry)));
        if shown.len() < entries.len() && !cwds.contains(&view.dir) {
            covers.filtered.push((view.dir.clone(), shown));
            in_filtered.push(&view.dir);
        }
    }
    for entry in &reads.hidden {
        // A link is covered where it leads, which is hidden (or not) as its own place.
        let link = reads.links.binary_search(entry).is_ok();
        if link || in_filtered.iter().any(|dir| entry.parent() == Some(*dir)) {
            continue;
        }
        let inside = held_in(entry);
        if inside.is_empty() && reads.holding_granted.contains(entry) {
            // `$CORDON_HOME`, whose write layers are in use: read rights alone.
            continue;
        } else if inside.is_empty() {
            covers.stand_ins.push(entry.clone());
        } else if std::fs::symlink_metadata(entry).is_ok_and(|m| m.is_dir()) {
            covers.filtered.push((entry.clone(), inside));
        }
    }
    covers.stand_ins.sort();
    covers.stand_ins.dedup();
    Ok(covers)
}

/// The hidden entries read rights keep unreadable: not the links among them (a link is read
/// where it leads, which the plan took in when that lies in a home directory).
pub fn unreadable(reads: &HomeReads) -> impl Iterator<Item = &PathBuf> {
    reads.hidden.iter().filter(|entry| reads.links.binary_search(entry).is_err())
}

/// The shell start-up files of a home directory that a login or interactive shell reads.
const START_UP_FILES: &[&str] = &[
    ".profile",
    ".bash_profile",
    ".bash_login",
    ".bashrc",
    ".bash_aliases",
    ".zshenv",
    ".zprofile",
    ".zshrc",
    ".zlogin",
    ".kshrc",
    ".mkshrc",
];

/// How much of a start-up file is read.
const START_UP_CAP: u64 = 256 * 1024;

/// The files the homes' start-up files source (`. FILE`, `source FILE`), with `~`, `$HOME` and
/// `${HOME}` expanded; a word with any other expansion names no file cordon could tell.
fn sourced_files(homes: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for home in homes {
        for name in START_UP_FILES {
            let path = home.join(name);
            // The user's own files, which a dotfile manager often keeps as links.
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            let Ok(Some(bytes)) = cordon_policies::read_start_file(&path, START_UP_CAP) else {
                continue;
            };
            files.extend(sourced_in(&String::from_utf8_lossy(&bytes), home));
        }
    }
    files.sort();
    files.dedup();
    files
}

/// The files `text` sources, expanded against `home`.
fn sourced_in(text: &str, home: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for line in text.lines() {
        let line = line.split(" #").next().unwrap_or_default();
        for command in line.split([';', '&', '|']) {
            let mut words = command.split_whitespace();
            let mut word = words.next();
            while matches!(word, Some("then" | "do" | "else" | "{" | "(")) {
                word = words.next();
            }
            if !matches!(word, Some("." | "source")) {
                continue;
            }
            let Some(file) = words.next() else { continue };
            let file = file.trim_matches(|c| c == '"' || c == '\'');
            let home_text = home.to_string_lossy();
            let expanded = if let Some(rest) = file.strip_prefix("~/") {
                format!("{home_text}/{rest}")
            } else {
                file.replacen("${HOME}", &home_text, 1).replacen("$HOME", &home_text, 1)
            };
            if expanded.starts_with('/') && !expanded.contains(['$', '`', '*', '?']) {
                files.push(cordon_policies::lexically_normal(Path::new(&expanded)));
            }
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_files_start_up_files_source_are_read_as_a_shell_would_name_them() {
        let text = r#"
# a comment . /not/this
. "$HOME/.rye/env"
[ -f ~/.atuin/bin/env ] && . ~/.atuin/bin/env
if [ -f ${HOME}/.wasmer/wasmer.sh ]; then source ${HOME}/.wasmer/wasmer.sh; fi
. /etc/profile.d/x.sh
. "$XDG_CONFIG_HOME/x"
source $HOME/../h/.secrets
"#;
        assert_eq!(
            sourced_in(text, Path::new("/h")),
            [
                "/h/.rye/env",
                "/h/.atuin/bin/env",
                "/h/.wasmer/wasmer.sh",
                "/etc/profile.d/x.sh",
                "/h/.secrets"
            ]
            .map(PathBuf::from)
        );
    }
}
