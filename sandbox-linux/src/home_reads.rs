//! The home directories' allow-list on this machine: what it hides, what it grants besides,
//! and which hidden entries get an empty stand-in.
//!
//! Read rights hide what the list leaves out (`crate::hidden_reads`: a home directory and its
//! containers are granted listing only, the allowed entries read one by one), which costs a
//! rule per entry and no mount. A stand-in is mounted only where read rights cannot do it or
//! would be noisy: every hidden entry when Landlock is missing, or when the network is on and
//! Landlock cannot refuse `connect()` to a socket file (before ABI 9: an agent nobody listed
//! keeps its socket in a dot directory); and a hidden file directly in a home directory — what
//! a start-up file sources — which then reads as empty instead of failing with a denial in
//! every login shell.

use std::path::{Path, PathBuf};

use cordon_policies::{EnvSnapshot, HomeReading, HomeReads, HomeReadsInput, ResolvedPolicy};

use crate::listings::Listings;

/// What the caller's request and view make of the allow-list.
pub struct HomeListContext<'a> {
    pub reading: &'a HomeReading,
    pub view: &'a EnvSnapshot,
    /// The home directories (`$HOME`, the account's).
    pub homes: &'a [PathBuf],
    /// The directories the command starts in (the policy's and the command's own).
    pub cwds: &'a [PathBuf],
}

/// The list's plan for `policy`, planned with `listings`; `cordon_home` (canonical) is hidden
/// by read rights too, wherever it lies, but for the writable roots inside it.
pub fn plan(
    context: &HomeListContext<'_>,
    policy: &ResolvedPolicy,
    listings: &Listings,
) -> HomeReads {
    let HomeReading::AllowList { also } = context.reading else {
        return HomeReads::default();
    };
    // A root that held a home directory was sealed into its plain entries before this: the
    // dot entries are in no root. A working directory that is or holds a home directory
    // likewise keeps none of its entries: the command works there, its secrets are not its
    // workspace.
    let homes: Vec<PathBuf> =
        context.homes.iter().filter_map(|home| std::fs::canonicalize(home).ok()).collect();
    let mut keep: Vec<PathBuf> = policy.writable_roots.clone();
    keep.extend(
        context
            .cwds
            .iter()
            .filter_map(|cwd| std::fs::canonicalize(cwd).ok())
            .filter(|cwd| !homes.iter().any(|home| home.starts_with(cwd))),
    );
    let env = context.view.view();
    let mut grant: Vec<PathBuf> = context
        .view
        .path_dirs
        .iter()
        .filter(|dir| context.homes.iter().any(|home| dir.starts_with(home)))
        .cloned()
        .collect();
    for home in context.homes {
        grant.extend(crate::apply::global_include_targets(Some(home)));
    }
    for path in also {
        grant.extend(cordon_policies::expand_hidden_path(path, &env));
    }
    let input = HomeReadsInput {
        homes: context.homes,
        relocations: &context.view.relocations,
        keep: &keep,
        grant: &grant,
        hidden: &policy.hidden_paths,
        entry_limit: crate::hidden_reads::MAX_ENTRIES,
    };
    let mut reads = cordon_policies::plan_home_reads(&input, listings);
    // cordon's own state: rules, config, journals, what runs held back, other workspaces'
    // caches. The writable roots inside it (this workspace's caches) keep their own grant.
    if let Some(home) =
        context.view.cordon_home.as_deref().and_then(|h| std::fs::canonicalize(h).ok())
    {
        // Never a stand-in: the write layers' directories lie in it.
        let in_root = policy.writable_roots.iter().any(|root| home.starts_with(root));
        if !in_root
            && !reads.hidden.iter().any(|hidden| home.starts_with(hidden) && *hidden != home)
        {
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
    cwds: &[PathBuf],
) -> HomeReads {
    let homes = homes(view);
    let context = HomeListContext { reading, view, homes: &homes, cwds };
    plan(&context, policy, &Listings::new())
}

/// The home directories: `$HOME` as given (when absolute), and the password database's for
/// this user when that is another.
pub(crate) fn homes(view: &EnvSnapshot) -> Vec<PathBuf> {
    let given = view.home.as_deref().filter(|home| home.is_absolute()).map(Path::to_path_buf);
    let passwd = nix::unistd::User::from_uid(nix::unistd::getuid()).ok().flatten().map(|u| u.dir);
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

/// The hidden entries to cover with a stand-in: the files directly in a home directory and
/// the entries of a container too large for a rule per entry, and where read rights do not
/// hide everything, every entry that holds nothing granted.
pub fn stand_ins(reads: &HomeReads, rights: ReadRights) -> Vec<PathBuf> {
    let candidates: Vec<&PathBuf> = match rights {
        ReadRights::Everything => reads.top_files.iter().chain(&reads.crowded).collect(),
        ReadRights::ReadsOnly | ReadRights::Nothing => reads.hidden.iter().collect(),
    };
    let mut out: Vec<PathBuf> = candidates
        .into_iter()
        .filter(|entry| !reads.holding_granted.contains(entry))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The hidden entries read rights keep unreadable: not the links among them (a link is read
/// where it leads, which the plan took in when that lies in a home directory).
pub fn unreadable(reads: &HomeReads) -> impl Iterator<Item = &PathBuf> {
    reads.hidden.iter().filter(|entry| !is_link(entry))
}

fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink())
}
