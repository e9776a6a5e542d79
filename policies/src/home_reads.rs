//! Which entries of the home directories the allow-list hides, and which places it grants
//! although they lie in a hidden entry.
//!
//! Kept readable whatever the list says: an entry that is, holds or lies in a writable root or
//! the working directory (a workspace at `~/.dotfiles`, an `--add-dir` under a dot entry).
//! Granted besides the list, unless a hidden path is there: where an allowed link leads (a
//! `~/.gitconfig` kept by a dotfile manager), and the places the caller names — the files the
//! user's global git configuration includes, the `PATH` directories, `--unhide`.
//!
//! A hidden entry that is a link hides where it leads too, when that lies in a home directory
//! (a `~/.aws` that a dotfile manager keeps at `~/dotfiles/aws`); a link out of the home
//! directories hides its name only: where it leads is not the list's to judge.
//!
//! Pure: the caller hands in how to list a directory and resolve a path.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::hidden_paths::Relocations;
use crate::home_list::{HOME_CONTAINERS, RELOCATED_CONTAINERS, home_entry_readable};

/// How the plan looks at the file system.
pub trait HomeFileSystem {
    /// The path with every symbolic link resolved, when it exists.
    fn canonical(&self, path: &Path) -> Option<PathBuf>;
    /// The names in `dir` and what each is (a final link not followed); `None` when it cannot
    /// be read.
    fn entries(&self, dir: &Path) -> Option<Vec<(OsString, HomeEntryKind)>>;
}

/// What an entry of a container is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HomeEntryKind {
    Directory,
    Link,
    /// A file, socket, FIFO or device.
    Other,
}

/// What the plan starts from. Every path absolute.
#[derive(Debug, Clone, Copy)]
pub struct HomeReadsInput<'a> {
    /// The home directories (`$HOME`, and the account's when that is another).
    pub homes: &'a [PathBuf],
    /// The relocating variables as set (the `XDG_*` ones move containers).
    pub relocations: &'a Relocations,
    /// Kept readable with all they hold and all that holds them: the writable roots and the
    /// working directory.
    pub keep: &'a [PathBuf],
    /// Places to grant although they may lie in a hidden entry.
    pub grant: &'a [PathBuf],
    /// Paths hidden whatever the list says (the catalogue): never granted, nor what holds one.
    pub hidden: &'a [PathBuf],
    /// A container with more entries than this is granted whole by read rights (a rule per
    /// entry would cost more than it saves), so what it hides needs stand-ins.
    pub entry_limit: usize,
}

/// The plan: real paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HomeReads {
    /// Entries the list hides (and where the hidden links among them lead).
    pub hidden: Vec<PathBuf>,
    /// Places readable although a hidden entry holds them.
    pub granted: Vec<PathBuf>,
    /// The hidden entries that hold a granted place: an empty stand-in would cover the place
    /// too, so only read rights can hide them.
    pub holding_granted: Vec<PathBuf>,
    /// The hidden entries that are files directly in a home directory (what a start-up file
    /// may source).
    pub top_files: Vec<PathBuf>,
    /// The hidden entries of containers with more than the entry limit: read rights cannot
    /// hide them.
    pub crowded: Vec<PathBuf>,
}

/// Plans the list's hiding.
pub fn plan_home_reads(input: &HomeReadsInput<'_>, fs: &impl HomeFileSystem) -> HomeReads {
    let homes: Vec<PathBuf> = input.homes.iter().filter_map(|home| fs.canonical(home)).collect();
    let related = |path: &Path, to: &Path| path.starts_with(to) || to.starts_with(path);
    let kept = |path: &Path| input.keep.iter().any(|keep| related(path, keep));
    let in_home = |path: &Path| homes.iter().any(|home| path.starts_with(home));
    let mut hidden: BTreeSet<PathBuf> = BTreeSet::new();
    let mut top_files: BTreeSet<PathBuf> = BTreeSet::new();
    let mut crowded: BTreeSet<PathBuf> = BTreeSet::new();
    let mut links_allowed: Vec<PathBuf> = Vec::new();
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    for (dir, logical) in containers(&homes, input.relocations) {
        let Some(real) = fs.canonical(&dir) else { continue };
        // A container inside a writable root is the command's; one seen twice (a relocation to
        // the default place) is planned once.
        if input.keep.iter().any(|keep| real.starts_with(keep)) || !seen.insert(real.clone()) {
            continue;
        }
        let Some(entries) = fs.entries(&real) else { continue };
        let too_many = entries.len() > input.entry_limit;
        for (name, kind) in entries {
            let link = kind == HomeEntryKind::Link;
            let spelled = name.to_string_lossy();
            if logical == "~" && !spelled.starts_with('.') {
                continue;
            }
            let entry = real.join(&name);
            if home_entry_readable(&format!("{logical}/{spelled}")) {
                if link {
                    links_allowed.extend(fs.canonical(&entry));
                }
                continue;
            }
            let target = if link { fs.canonical(&entry) } else { None };
            if kept(&entry) || target.as_deref().is_some_and(kept) {
                continue;
            }
            if logical == "~" && kind == HomeEntryKind::Other {
                top_files.insert(entry.clone());
            }
            if too_many {
                crowded.insert(entry.clone());
            }
            hidden.insert(entry);
            if let Some(target) = target.filter(|target| in_home(target)) {
                hidden.insert(target);
            }
        }
    }
    let catalogue: Vec<PathBuf> = input
        .hidden
        .iter()
        .map(|path| fs.canonical(path).unwrap_or_else(|| path.clone()))
        .collect();
    let mut granted: Vec<PathBuf> = Vec::new();
    for place in links_allowed.into_iter().chain(input.grant.iter().filter_map(|p| fs.canonical(p)))
    {
        let secret = catalogue.iter().any(|secret| related(&place, secret));
        let holds_hidden = hidden.iter().any(|entry| entry.starts_with(&place) && *entry != place);
        if secret || holds_hidden || granted.contains(&place) {
            continue;
        }
        granted.push(place);
    }
    // A granted entry is readable as a whole; one inside a hidden entry is granted alone.
    hidden.retain(|entry| !granted.contains(entry));
    granted.retain(|place| hidden.iter().any(|entry| place.starts_with(entry)));
    top_files.retain(|file| hidden.contains(file));
    crowded.retain(|entry| hidden.contains(entry));
    let holding_granted: Vec<PathBuf> = hidden
        .iter()
        .filter(|entry| granted.iter().any(|place| place.starts_with(entry)))
        .cloned()
        .collect();
    granted.sort();
    HomeReads {
        hidden: hidden.into_iter().collect(),
        granted,
        holding_granted,
        top_files: top_files.into_iter().collect(),
        crowded: crowded.into_iter().collect(),
    }
}

/// Every container directory of `homes`, where the relocating variables put them too, with its
/// `~/` spelling.
fn containers(homes: &[PathBuf], relocations: &Relocations) -> Vec<(PathBuf, &'static str)> {
    let mut out = Vec::new();
    for home in homes {
        for logical in HOME_CONTAINERS {
            let rest = logical.strip_prefix("~").unwrap_or(logical).trim_start_matches('/');
            out.push((home.join(rest), *logical));
        }
    }
    for (logical, variable) in RELOCATED_CONTAINERS {
        for base in relocations.get(*variable).into_iter().flatten() {
            out.push((base.clone(), *logical));
        }
    }
    out
}

#[cfg(test)]
#[path = "home_reads_tests.rs"]
mod tests;
