//! Sealing `$HOME` when a writable root contains it: the root is replaced by its existing
//! entries, granted one by one, so nothing new can be created at the top of `$HOME` (a
//! `.bash_profile`, a `.zshenv`) nor in a directory on the way to a start-up path (`.config`,
//! `.local`), and the start-up paths themselves are not granted at all. Both the mount view and
//! Landlock then enforce it by omission: a directory that is not granted cannot get a new entry,
//! and an entry of it cannot be renamed or removed.
//!
//! Pure: the caller hands in how to list a directory.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::paths::home_start_up_paths;

/// What a directory entry is, as far as sealing cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Directory,
    File,
    /// A symbolic link, socket, FIFO or device: never granted by itself (a link would grant
    /// whatever it leads to).
    Other,
}

/// What to seal: a home directory, and absolute paths that are never granted even when they
/// are entries of a sealed directory (cordon's own state, its executables).
#[derive(Debug, Clone, Copy)]
pub struct HomeSeal<'a> {
    pub home: &'a Path,
    pub omit: &'a [PathBuf],
}

impl HomeSeal<'_> {
    /// `roots` with every root that is the home directory, an ancestor of it, or a directory
    /// on the way from it to a start-up path replaced by its entries (recursively along those
    /// directories). Start-up paths and `omit` are left out; so is any entry that is not a
    /// plain file or directory. `list` gives a directory's entries (full paths) and their
    /// kinds, `None` when it cannot be read (the directory is then granted nothing).
    pub fn seal(
        &self,
        roots: &[PathBuf],
        list: impl Fn(&Path) -> Option<Vec<(PathBuf, EntryKind)>>,
    ) -> Vec<PathBuf> {
        seal_home(roots, self, list)
    }
}

fn seal_home(
    roots: &[PathBuf],
    seal: &HomeSeal<'_>,
    list: impl Fn(&Path) -> Option<Vec<(PathBuf, EntryKind)>>,
) -> Vec<PathBuf> {
    let home = seal.home;
    let start_up: BTreeSet<PathBuf> =
        home_start_up_paths(home).chain(seal.omit.iter().cloned()).collect();
    // `home` and the directories between it and each start-up path.
    let mut sealed: BTreeSet<PathBuf> = BTreeSet::from([home.to_path_buf()]);
    for path in home_start_up_paths(home) {
        sealed.extend(
            path.ancestors().skip(1).take_while(|dir| dir.starts_with(home)).map(Path::to_path_buf),
        );
    }
    let expands = |dir: &Path| sealed.contains(dir) || (home.starts_with(dir) && dir != home);
    let mut out = Vec::new();
    for root in roots {
        if expands(root) {
            expand(root, &expands, &start_up, &list, &mut out);
        } else {
            out.push(root.clone());
        }
    }
    out.sort();
    out.dedup();
    out
}

fn expand(
    dir: &Path,
    expands: &impl Fn(&Path) -> bool,
    start_up: &BTreeSet<PathBuf>,
    list: &impl Fn(&Path) -> Option<Vec<(PathBuf, EntryKind)>>,
    out: &mut Vec<PathBuf>,
) {
    let Some(entries) = list(dir) else { return };
    for (entry, kind) in entries {
        if start_up.contains(&entry) {
            continue;
        }
        match kind {
            EntryKind::Directory if expands(&entry) => expand(&entry, expands, start_up, list, out),
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
        list: impl Fn(&Path) -> Option<Vec<(PathBuf, EntryKind)>>,
    ) -> Vec<PathBuf> {
        HomeSeal { home: Path::new(home), omit: &paths(omit) }.seal(&paths(roots), list)
    }

    #[test]
    fn home_as_a_root_becomes_its_entries_without_start_up_paths_or_links() {
        use EntryKind::*;
        let fs = tree(&[
            ("/h/project", Directory),
            ("/h/notes.txt", File),
            ("/h/.bashrc", File),
            ("/h/.config", Directory),
            ("/h/.config/Code", Directory),
            ("/h/.config/git", Directory),
            ("/h/.config/systemd", Directory),
            ("/h/.config/systemd/user", Directory),
            ("/h/.config/systemd/other", Directory),
            ("/h/.local", Directory),
            ("/h/.local/bin", Directory),
            ("/h/.local/share", Directory),
            ("/h/link", Other),
            ("/h/.cordon", Directory),
        ]);
        let sealed = seal(&["/h", "/tmp"], "/h", &["/h/.cordon"], |dir| fs.get(dir).cloned());
        assert_eq!(
            sealed,
            paths(&[
                "/h/.config/Code",
                "/h/.config/systemd/other",
                "/h/.local/share",
                "/h/notes.txt",
                "/h/project",
                "/tmp",
            ])
        );
    }

    #[test]
    fn an_ancestor_of_home_is_expanded_down_to_home_and_a_root_inside_home_stays() {
        use EntryKind::*;
        let fs =
            tree(&[("/home/h", Directory), ("/home/other", Directory), ("/home/h/w", Directory)]);
        let list = |dir: &Path| fs.get(dir).cloned();
        assert_eq!(seal(&["/home"], "/home/h", &[], list), paths(&["/home/h/w", "/home/other"]));
        assert_eq!(seal(&["/home/h/w"], "/home/h", &[], list), paths(&["/home/h/w"]));
        // A sealed directory given as a root is sealed too.
        let fs = tree(&[("/h/.config/Code", Directory), ("/h/.config/autostart", Directory)]);
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
