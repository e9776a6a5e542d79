//! The file system as directory listings, each read once per launch.
//!
//! The hidden paths are a catalogue of a few hundred places, almost all of which do not exist
//! on a given machine, and most of which share a handful of directories (`~`, `~/.config`,
//! `~/.local/share`). Asking the file system about each place costs a path walk per place, and
//! the mount view and the read rights ask again. Reading each directory on the way once
//! answers every question about its entries: what is there and what kind it is (the directory
//! says, without an `lstat` per entry), and a place under a missing directory costs nothing.
//!
//! Only where a directory cannot be listed (search permission without read permission, or
//! one larger than the listing keeps) is the entry looked up on its own.

use foldhash::{HashMap, HashSet};
use std::cell::RefCell;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::hidden_reads::{Entry, FileSystem, MAX_ENTRIES, PathKind};

/// An entry's kind as its directory reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    Link,
    Other,
}

/// One directory's entries, in the order they were read.
#[derive(Debug)]
struct Listing {
    entries: Vec<(OsString, Kind)>,
    by_name: HashMap<OsString, Kind>,
    /// The names in ASCII lower case: on a case-insensitive directory (ext4 or tmpfs with
    /// casefold, vfat) `~/.SSH` is found under the catalogue's `~/.ssh`, which the listing
    /// spells otherwise.
    folded: HashSet<Vec<u8>>,
    /// A name holds a byte past ASCII: Unicode case folding could make it another spelling of
    /// an ASCII name (`.ſsh` folds to `.ssh`), so no name is called missing from the listing.
    non_ascii: bool,
    /// Every entry was read (not cut off at the limit).
    complete: bool,
}

/// Directory listings, read on first use and kept for the launch. Single-threaded: the helper
/// plans on its one thread.
#[derive(Debug, Default)]
pub(crate) struct Listings {
    /// Keyed by the path's bytes, not its components: `Path`'s own hash splits the path into
    /// components on every lookup. Another spelling of a path is only looked at again.
    dirs: RefCell<HashMap<OsString, Option<std::rc::Rc<Listing>>>>,
    /// What was found at each path asked about, and whether a link lies on its way: hidden
    /// paths share their directories, so each is worked out once. Keyed as `dirs`.
    paths: RefCell<HashMap<OsString, Found>>,
}

/// What is at a path, and whether it or a directory on its way is a symbolic link.
#[derive(Debug, Clone, Copy)]
struct Found {
    kind: PathKind,
    link_on_the_way: bool,
}

impl Listings {
    pub(crate) fn new() -> Self {
        Listings::default()
    }

    /// The listing of `dir`, read at most once; `None` when it cannot be read.
    fn listing(&self, dir: &Path) -> Option<std::rc::Rc<Listing>> {
        if let Some(known) = self.dirs.borrow().get(dir.as_os_str()) {
            return known.clone();
        }
        let listing = read_listing(dir).map(std::rc::Rc::new);
        self.dirs.borrow_mut().insert(dir.as_os_str().to_owned(), listing.clone());
        listing
    }

    /// What is at `path` itself, a final symbolic link not followed, as `lstat` would say.
    fn entry_kind(&self, path: &Path) -> PathKind {
        self.found(path).kind
    }

    fn found(&self, path: &Path) -> Found {
        if let Some(found) = self.paths.borrow().get(path.as_os_str()) {
            return *found;
        }
        let found = self.look(path);
        self.paths.borrow_mut().insert(path.as_os_str().to_owned(), found);
        found
    }

    fn look(&self, path: &Path) -> Found {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            // `/` itself.
            return Found { kind: PathKind::Other, link_on_the_way: false };
        };
        let up = self.found(parent);
        if up.kind == PathKind::Missing {
            return Found { kind: PathKind::Missing, link_on_the_way: up.link_on_the_way };
        }
        let kind = match self.listing(parent) {
            Some(listing) => match listing.by_name.get(name) {
                Some(Kind::Link) => PathKind::Link,
                Some(Kind::Dir | Kind::Other) => PathKind::Other,
                None if listing.complete && !listing.has_folded(name) => PathKind::Missing,
                // Another spelling of the name, or a listing cut short: asked by name.
                None => lstat_kind(path),
            },
            // Searchable but not readable, or not a directory (then nothing is below it).
            None => lstat_kind(path),
        };
        let link_on_the_way =
            up.kind == PathKind::Link || up.link_on_the_way || kind == PathKind::Link;
        Found { kind, link_on_the_way }
    }

    /// Whether `path` exists (a final link is followed) — without a lookup of its own when its
    /// directory says it is not there.
    pub(crate) fn exists(&self, path: &Path) -> bool {
        match self.entry_kind(path) {
            PathKind::Missing => false,
            PathKind::Link => std::fs::metadata(path).is_ok(),
            PathKind::Other => true,
        }
    }
}

impl FileSystem for Listings {
    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        if !path.is_absolute() {
            return None;
        }
        let found = self.found(path);
        if found.kind == PathKind::Missing {
            return None;
        }
        let plain = path.components().all(|c| {
            matches!(c, std::path::Component::Normal(_)) || c == std::path::Component::RootDir
        });
        if plain && !found.link_on_the_way {
            return Some(path.to_path_buf());
        }
        std::fs::canonicalize(path).ok()
    }

    fn kind(&self, path: &Path) -> PathKind {
        self.entry_kind(path)
    }

    fn list(&self, dir: &Path, limit: usize) -> Option<Vec<Entry>> {
        let listing = self.listing(dir)?;
        let mut entries: Vec<Entry> = listing
            .entries
            .iter()
            .take(limit.saturating_add(1))
            .map(|(name, kind)| (dir.join(name), *kind == Kind::Link))
            .collect();
        if !listing.complete && entries.len() <= limit {
            // Cut off below what the caller asked for: read again, whole up to its limit.
            entries = read_listing_up_to(dir, limit)?
                .into_iter()
                .map(|(name, kind)| (dir.join(name), kind == Kind::Link))
                .collect();
        }
        Some(entries)
    }

    fn read_link(&self, path: &Path) -> Option<PathBuf> {
        std::fs::read_link(path).ok()
    }
}

impl cordon_policies::HomeFileSystem for Listings {
    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        FileSystem::canonical(self, path)
    }

    fn link_target(&self, path: &Path) -> Option<PathBuf> {
        std::fs::read_link(path).ok()
    }

    fn entries(&self, dir: &Path) -> Option<Vec<(OsString, cordon_policies::HomeEntryKind)>> {
        use cordon_policies::HomeEntryKind;
        let listing = self.listing(dir)?;
        // A container past the limit is listed whole here: every entry the list hides must be
        // named, each gets a stand-in.
        let entries = if listing.complete {
            listing.entries.clone()
        } else {
            read_listing_up_to(dir, usize::MAX)?
        };
        Some(
            entries
                .iter()
                .map(|(name, kind)| {
                    let kind = match kind {
                        Kind::Dir => HomeEntryKind::Directory,
                        Kind::Link => HomeEntryKind::Link,
                        Kind::Other => HomeEntryKind::Other,
                    };
                    (name.clone(), kind)
                })
                .collect(),
        )
    }
}

fn read_listing(dir: &Path) -> Option<Listing> {
    let entries = read_listing_up_to(dir, MAX_ENTRIES)?;
    let complete = entries.len() <= MAX_ENTRIES;
    let by_name = entries.iter().cloned().collect();
    let folded =
        entries.iter().map(|(name, _)| name.as_encoded_bytes().to_ascii_lowercase()).collect();
    let non_ascii = entries.iter().any(|(name, _)| !name.as_encoded_bytes().is_ascii());
    Some(Listing { entries, by_name, complete, folded, non_ascii })
}

impl Listing {
    /// Whether a name that a case-insensitive directory could take for `name` is listed.
    fn has_folded(&self, name: &std::ffi::OsStr) -> bool {
        self.non_ascii || self.folded.contains(&name.as_encoded_bytes().to_ascii_lowercase())
    }
}

/// The entries of `dir`, stopping after `limit` + 1.
fn read_listing_up_to(dir: &Path, limit: usize) -> Option<Vec<(OsString, Kind)>> {
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        // The kind comes from the directory itself; when the file system does not say, std
        // asks with an `lstat`. A kind that cannot be had is taken as a link: never granted,
        // never walked through.
        let kind = match entry.file_type() {
            Ok(kind) if kind.is_dir() => Kind::Dir,
            Ok(kind) if !kind.is_symlink() => Kind::Other,
            _ => Kind::Link,
        };
        entries.push((entry.file_name(), kind));
        if entries.len() > limit {
            break;
        }
    }
    Some(entries)
}

fn lstat_kind(path: &Path) -> PathKind {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => PathKind::Link,
        Ok(_) => PathKind::Other,
        // Cannot be looked at (a directory on the way not searchable): as good as missing.
        Err(_) => PathKind::Missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn listings_answer_as_lstat_and_realpath_would() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/file"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling")).unwrap();
        let listings = Listings::new();
        let cases = [
            root.join("a"),
            root.join("a/b"),
            root.join("a/file"),
            root.join("a/missing"),
            root.join("a/missing/deeper"),
            root.join("a/file/below"),
            root.join("link"),
            root.join("link/b"),
            root.join("link/missing"),
            root.join("dangling"),
            root.join("dangling/x"),
        ];
        for path in &cases {
            assert_eq!(listings.kind(path), lstat_kind(path), "kind of {path:?}");
            assert_eq!(
                listings.canonical(path),
                std::fs::canonicalize(path).ok(),
                "canonical {path:?}"
            );
            assert_eq!(listings.exists(path), path.exists(), "exists {path:?}");
        }
        let mut listed = listings.list(&root.join("a"), 10).unwrap();
        listed.sort();
        assert_eq!(listed, vec![(root.join("a/b"), false), (root.join("a/file"), false)]);
        assert!(listings.list(&root.join("a/missing"), 10).is_none());
    }

    #[test]
    fn a_name_listed_in_another_case_is_asked_for_by_name() {
        // On a case-insensitive directory `.SSH` is what `.ssh` opens: the listing must not
        // call `.ssh` missing there. (On this case-sensitive one, the lookup says so itself.)
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join(".SSH")).unwrap();
        let listing = read_listing(tmp.path()).unwrap();
        assert!(listing.has_folded(std::ffi::OsStr::new(".ssh")));
        assert!(!listing.has_folded(std::ffi::OsStr::new(".aws")));
        let listings = Listings::new();
        assert_eq!(listings.kind(&tmp.path().join(".ssh")), lstat_kind(&tmp.path().join(".ssh")));
    }
}
