//! Sealing `$HOME` when a writable root contains it. By convention everything a shell, git, an
//! editor or a language runtime loads from a home directory is a dot entry (`.bashrc`,
//! `.config`, `.cargo/env`, `.vim`, `.ssh`) or one of a few directories put on `PATH` or a
//! module path (`bin`, `go`, `node_modules`, `perl5`). So a root that holds `$HOME` is replaced
//! by `$HOME`'s other entries, granted one by one: nothing new can be created at the top of
//! `$HOME`, and no dot entry, code directory or start-up path is granted at all — nor what one
//! of them links to (a dotfiles repository), which the caller names in `omit`. Directories on
//! the way to an omitted path are granted the same way, entry by entry.
//!
//! Both the mount view and Landlock then enforce it by omission: a directory that is not
//! granted cannot get a new entry, and an entry of it cannot be renamed or removed.
//!
//! Pure: the caller hands in how to list a directory.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::paths::{HOME_CODE_DIRS, home_start_up_paths};

/// What a directory entry is, as far as sealing cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Directory,
    File,
    /// A symbolic link, socket, FIFO or device: never granted by itself (a link would grant
    /// whatever it leads to).
    Other,
}

/// A directory's entries (full paths) and their kinds, `None` when it cannot be read (it is
/// then granted nothing).
pub type Listing = Option<Vec<(PathBuf, EntryKind)>>;

/// What to seal: a home directory, and absolute paths that are never granted even when they
/// lie in a root (cordon's own state, hidden paths, what a dot entry links to).
#[derive(Debug, Clone, Copy)]
pub struct HomeSeal<'a> {
    pub home: &'a Path,
    pub omit: &'a [PathBuf],
}

impl HomeSeal<'_> {
    /// Whether `entry` of the home directory is never granted: a dot entry or a code
    /// directory.
    pub fn loads_code(entry: &Path) -> bool {
        entry.file_name().is_some_and(|name| {
            name.as_encoded_bytes().starts_with(b".")
                || HOME_CODE_DIRS.iter().any(|dir| name == *dir)
        })
    }

    /// `roots` with every root that holds or lies in the home directory and holds an omitted
    /// path (the home directory's dot entries and code directories, its start-up paths,
    /// `omit`) replaced by its entries, recursively
    /// along the way to each omitted path, the omitted ones left out; so is any entry that is
    /// not a plain file or directory.
    pub fn seal(&self, roots: &[PathBuf], list: impl Fn(&Path) -> Listing) -> Vec<PathBuf> {
        let mut omitted: BTreeSet<PathBuf> = home_start_up_paths(self.home).collect();
        omitted.extend(self.omit.iter().cloned());
        // The dot entries matter only to a root holding the home directory (a root inside it
        // holds none of them): listed only then.
        if roots.iter().any(|root| self.home.starts_with(root)) {
            if let Some(entries) = list(self.home) {
                omitted.extend(
                    entries.into_iter().map(|(path, _)| path).filter(|p| Self::loads_code(p)),
                );
            }
        }
        // A root the user named that is itself omitted (`--add-dir ~/.config`) stays theirs,
        // but what is omitted inside it is still left out.
        let named: BTreeSet<&PathBuf> = roots.iter().collect();
        omitted.retain(|path| !named.contains(path));
        let expands = |dir: &Path| omitted.iter().any(|path| path.starts_with(dir) && path != dir);
        // Only a root that holds the home directory or lies inside it is sealed. Another root
        // (`/tmp`, which holds hidden sockets and ticket caches) stays whole, so that the
        // command can still create files at its top; what is hidden inside it is the mount
        // view's to hide.
        let sealed = |root: &Path| self.home.starts_with(root) || root.starts_with(self.home);
        let mut out = Vec::new();
        for root in roots {
            if sealed(root) && expands(root) {
                expand(root, &expands, &omitted, &list, &mut out);
            } else {
                out.push(root.clone());
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

fn expand(
    dir: &Path,
    expands: &impl Fn(&Path) -> bool,
    omitted: &BTreeSet<PathBuf>,
    list: &impl Fn(&Path) -> Listing,
    out: &mut Vec<PathBuf>,
) {
    let Some(entries) = list(dir) else { return };
    for (entry, kind) in entries {
        if omitted.contains(&entry) {
            continue;
        }
        match kind {
            EntryKind::Directory if expands(&entry) => expand(&entry, expands, omitted, list, out),
            EntryKind::Directory | EntryKind::File => out.push(entry),
            EntryKind::Other => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::collections::BTreeMap;

    /// A file system as a map from directory to entries.
    fn tree(entries: &[(&str, EntryKind)]) -> BTreeMap<PathBuf, Vec<(PathBuf, EntryKind)>> {
        let mut dirs: BTreeMap<PathBuf, Vec<(PathBuf, EntryKind)>> = BTreeMap::new();
        for (path, kind) in entries {
            let path = PathBuf::from(path);
            let parent = path.parent().unwrap().to_path_buf();
            dirs.entry(parent).or_default().push((path.clone(), *kind));
            if *kind == EntryKind::Directory {
                dirs.entry(path).or_default();
            }
        }
        dirs
    }

    fn paths(list: &[&str]) -> Vec<PathBuf> {
        list.iter().map(PathBuf::from).collect()
    }

    fn seal(
        roots: &[&str],
        home: &str,
        omit: &[&str],
        list: impl Fn(&Path) -> Listing,
    ) -> Vec<PathBuf> {
        HomeSeal { home: Path::new(home), omit: &paths(omit) }.seal(&paths(roots), list)
    }

    #[test]
    fn home_as_a_root_becomes_its_plain_entries_without_dot_entries_code_dirs_or_links() {
        use EntryKind::*;
        let fs = tree(&[
            ("/h/project", Directory),
            ("/h/notes.txt", File),
            ("/h/.bashrc", File),
            ("/h/.cargo", Directory),
            ("/h/.config", Directory),
            ("/h/.vim", Directory),
            ("/h/bin", Directory),
            ("/h/node_modules", Directory),
            ("/h/link", Other),
        ]);
        let sealed = seal(&["/h", "/tmp"], "/h", &[], |dir| fs.get(dir).cloned());
        assert_eq!(sealed, paths(&["/h/notes.txt", "/h/project", "/tmp"]));
    }

    /// A hidden socket or ticket cache in `/tmp` never turns `/tmp` into its entries when the
    /// workspace lies in the home directory: the command must still create files there.
    #[test]
    fn a_root_beside_the_home_directory_stays_whole_whatever_is_hidden_in_it() {
        use EntryKind::*;
        let fs = tree(&[("/tmp/.X11-unix", Other), ("/tmp/build", Directory), ("/h/p", Directory)]);
        let omit = ["/tmp/krb5cc_0", "/tmp/.X11-unix"];
        let sealed = seal(&["/h/p", "/tmp"], "/h", &omit, |dir| fs.get(dir).cloned());
        assert_eq!(sealed, paths(&["/h/p", "/tmp"]));
    }

    #[test]
    fn what_a_dot_entry_links_to_is_left_out_along_with_the_way_to_it() {
        use EntryKind::*;
        // ~/.config -> ~/dotfiles/config: the caller omits the target.
        let fs = tree(&[
            ("/h/dotfiles", Directory),
            ("/h/dotfiles/config", Directory),
            ("/h/dotfiles/README", File),
            ("/h/.config", Other),
            ("/h/work", Directory),
        ]);
        let sealed = seal(&["/h"], "/h", &["/h/dotfiles/config"], |dir| fs.get(dir).cloned());
        assert_eq!(sealed, paths(&["/h/dotfiles/README", "/h/work"]));
    }

    #[test]
    fn an_ancestor_of_home_is_expanded_down_to_home_and_a_named_dot_root_stays_named() {
        use EntryKind::*;
        let fs = tree(&[
            ("/home/h", Directory),
            ("/home/other", Directory),
            ("/home/h/w", Directory),
            ("/home/h/.profile", File),
        ]);
        let list = |dir: &Path| fs.get(dir).cloned();
        assert_eq!(seal(&["/home"], "/home/h", &[], list), paths(&["/home/h/w", "/home/other"]));
        assert_eq!(seal(&["/home/h/w"], "/home/h", &[], list), paths(&["/home/h/w"]));
        // `--add-dir ~/.config`: the user's own choice, but its start-up paths stay out.
        let fs = tree(&[
            ("/h/.config", Directory),
            ("/h/.config/Code", Directory),
            ("/h/.config/autostart", Directory),
        ]);
        assert_eq!(
            seal(&["/h/.config"], "/h", &[], |dir| fs.get(dir).cloned()),
            paths(&["/h/.config/Code"])
        );
    }

    #[test]
    fn an_unreadable_directory_grants_nothing() {
        assert_eq!(seal(&["/h"], "/h", &[], |_| None), Vec::<PathBuf>::new());
    }
}
