//! The file-system side of sealing `$HOME` (`cordon_policies::HomeSeal`): listing a directory,
//! and finding what a home directory's dot entries link to, so that a dotfiles repository in
//! `$HOME` is as out of reach as the `.bashrc` that links into it.

use std::path::{Path, PathBuf};

use cordon_policies::{EntryKind, HomeSeal, Listing};

/// More entries than this in one directory to grant one by one: the directory is granted
/// nothing (a sandbox less writable, never more), rather than thousands of rules and mounts.
const MAX_ENTRIES: usize = 10_000;

/// How much of the dot directories is searched for links, in entries and in depth.
const LINK_SEARCH_ENTRIES: usize = 20_000;
const LINK_SEARCH_DEPTH: usize = 4;

/// Dot directories that hold caches and downloads, not configuration: not searched for links.
const UNSEARCHED: &[&str] = &[
    ".cache",
    ".npm",
    ".cargo/registry",
    ".cargo/git",
    ".rustup",
    ".m2/repository",
    ".gradle/caches",
    ".local/share/Trash",
];

/// A directory's entries and their kinds, without following links; `None` when it cannot be
/// read or holds more than [`MAX_ENTRIES`].
pub(crate) fn list_entries(dir: &Path) -> Listing {
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        let kind = match entry.file_type() {
            Ok(kind) if kind.is_dir() => EntryKind::Directory,
            Ok(kind) if kind.is_file() => EntryKind::File,
            _ => EntryKind::Other,
        };
        entries.push((entry.path(), kind));
        if entries.len() > MAX_ENTRIES {
            crate::messages::warning(format_args!(
                "{} has more than {MAX_ENTRIES} entries: none of them is writable",
                dir.display()
            ));
            return None;
        }
    }
    Some(entries)
}

/// How far [`linked_from_dot_entries`] looks for links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkSearch {
    /// The dot entries and code directories of `$HOME` themselves, and the start-up paths.
    TopLevel,
    /// Also the links inside the dot directories (bounded).
    Deep,
}

/// What must not be granted under `home` besides its dot entries and code directories: where
/// a link among them (or a start-up path) leads inside `home`. When the dot directories are
/// too large to search, every entry of `home` (nothing of it is then writable).
pub(crate) fn linked_from_dot_entries(
    home: &Path,
    search: LinkSearch,
    cordons: &[PathBuf],
) -> Vec<PathBuf> {
    let mut omit = Vec::new();
    let mut budget = LINK_SEARCH_ENTRIES;
    let mut pending: Vec<(PathBuf, usize)> = Vec::new();
    let entries = list_entries(home).unwrap_or_default();
    for (entry, kind) in &entries {
        if !HomeSeal::loads_code(entry) {
            continue;
        }
        match kind {
            EntryKind::Other => omit.extend(target_inside(entry, home)),
            EntryKind::Directory if search == LinkSearch::Deep => pending.push((entry.clone(), 1)),
            EntryKind::Directory => {}
            EntryKind::File => {}
        }
    }
    for path in cordon_policies::home_start_up_paths(home) {
        omit.extend(target_inside(&path, home));
    }
    while let Some((dir, depth)) = pending.pop() {
        // cordon's own state (no sandbox writes it) links into the workspace: a kept run's
        // layers name their root.
        if UNSEARCHED.iter().any(|name| dir == home.join(name)) || cordons.contains(&dir) {
            continue;
        }
        let Ok(read) = std::fs::read_dir(&dir) else { continue };
        for entry in read.flatten() {
            if budget == 0 {
                crate::messages::warning(format_args!(
                    "{} holds more than {LINK_SEARCH_ENTRIES} entries in its dot directories, \
                     too many to find what they link to: nothing in it is writable",
                    home.display()
                ));
                return entries.into_iter().map(|(path, _)| path).collect();
            }
            budget -= 1;
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_symlink() {
                omit.extend(target_inside(&entry.path(), home));
            } else if kind.is_dir() && depth < LINK_SEARCH_DEPTH {
                pending.push((entry.path(), depth + 1));
            }
        }
    }
    omit.sort();
    omit.dedup();
    omit
}

/// Where the link `path` leads when that is inside `home` (and not `home` itself).
fn target_inside(path: &Path, home: &Path) -> Option<PathBuf> {
    let target = std::fs::canonicalize(path).ok()?;
    (target.starts_with(home) && target != home).then_some(target)
}
