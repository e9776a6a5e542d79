//! Read rights by omission: Landlock's side of hiding.
//!
//! The mount view hides a path with a stand-in mounted on its directory entry. A mount does not
//! survive that entry being replaced — a program outside the sandbox that renames a new file
//! over a hidden one (`docker login`, `npm login`, a shell saving its history) detaches the
//! stand-in in every namespace — nor does it cover a secret created after the view was built.
//! Landlock's read rights hold in both cases: they are granted to directory hierarchies, and
//! an inode that no granted hierarchy contains cannot be opened for reading, whatever name it
//! arrives under.
//!
//! So instead of read on `/` as a whole, every directory on the way to a hidden place (its
//! *ancestors*) is granted listing only, and each of its other entries (its *siblings*) is
//! granted read as a whole. The hidden place itself, and anything renamed or created next to
//! it later, gets nothing. Without the mount view this is what hides; with it, it keeps hidden
//! what the view loses during a run.
//!
//! Decided by place, symbolic links resolved: a hidden path's directory is taken where it
//! really is, a hidden path that is itself a link is hidden both as the name and where it
//! leads, and a symbolic link among the siblings is never granted (it would grant its
//! target). A hidden path that does not exist yet makes its nearest existing ancestor one of
//! the ancestors, so that what appears there during the run is not readable either.
//!
//! What this cannot do without breaking the command:
//! - inside a writable root, read stays granted with write, as a whole: files the command
//!   creates there must stay readable to it. A hidden place inside a writable root is hidden
//!   by the mount view alone ([`ReadPlan::mount_view_only`]). A root holding `$HOME` is sealed
//!   (its entries granted one by one, none of the dot entries), so the usual secrets are not
//!   inside one;
//! - a directory with more than [`MAX_ENTRIES`] entries is granted as a whole, rather than
//!   with a rule per entry, and what is hidden inside it is left to the mount view too — but
//!   for the directories the caller names (the home directories and their containers, where
//!   what is hidden is most of what is there), which are granted entry by entry whatever
//!   their size;
//! - names stay visible: listing is granted beneath every ancestor, so a hidden directory the
//!   view does not cover (created during the run, or without the view) can be listed, not read.
//!
//! Pure: the caller hands in how to resolve a path and how to list a directory
//! ([`crate::listings::Listings`] on the real file system).

// Hashed with foldhash: its maps are built afresh on every launch, from a few hundred short
// paths, where SipHash's cost showed.
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::path::{Path, PathBuf};

/// More entries than this in one ancestor: the directory is granted read as a whole.
pub(crate) const MAX_ENTRIES: usize = 10_000;

/// What a path is, as far as the plan cares (`lstat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathKind {
    Missing,
    Link,
    Other,
}

/// One entry of a directory: its full path, and whether it is a symbolic link.
pub(crate) type Entry = (PathBuf, bool);

/// How the plan looks at the file system.
pub(crate) trait FileSystem {
    /// The path with every symbolic link resolved, when it exists.
    fn canonical(&self, path: &Path) -> Option<PathBuf>;
    /// What is at `path` itself (a final symbolic link not followed).
    fn kind(&self, path: &Path) -> PathKind;
    /// The entries of `dir`, `None` when it cannot be read; stops after `limit` + 1 entries.
    fn list(&self, dir: &Path, limit: usize) -> Option<Vec<Entry>>;
    /// What the symbolic link at `path` says (as written: relative to its directory, or
    /// absolute), when `path` is one.
    fn read_link(&self, path: &Path) -> Option<PathBuf>;
}

/// How many links in a row a hidden path is followed through while its target does not exist
/// (the kernel's own limit for a path walk is 40).
const MAX_DANGLING_HOPS: usize = 40;

/// Read rights by omission, as a value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ReadPlan {
    /// Directories on the way to a hidden place: granted listing only.
    pub ancestors: Vec<PathBuf>,
    /// Their other entries (never a symbolic link): granted read as a whole.
    pub siblings: Vec<PathBuf>,
    /// Hidden places Landlock keeps unreadable.
    pub unreadable: Vec<PathBuf>,
    /// Hidden places inside a writable root or a directory too large to go through: the mount
    /// view alone hides them.
    pub mount_view_only: Vec<PathBuf>,
    /// Places granted read although a hidden place holds them (set by the caller).
    pub granted: Vec<PathBuf>,
}

impl ReadPlan {
    /// Whether anything is granted by omission (otherwise read is granted on `/` as a whole).
    pub fn is_empty(&self) -> bool {
        self.ancestors.is_empty()
    }
}

/// Plans read rights for `hidden` (absolute paths), given the canonical `writable_roots`;
/// the directories in `one_by_one` are granted entry by entry however many entries they hold.
pub(crate) fn plan(
    hidden: &[PathBuf],
    writable_roots: &[PathBuf],
    one_by_one: &[PathBuf],
    fs: &impl FileSystem,
) -> ReadPlan {
    let in_root = |path: &Path| writable_roots.iter().any(|root| path.starts_with(root));
    // Sets are hashed and lists put in byte order: a few hundred paths are looked up and
    // sorted on every launch, and comparing paths component by component is the dearer way.
    let mut places: HashSet<PathBuf> = HashSet::new();
    let mut resolved = Resolved { fs, known: HashMap::new() };
    for path in hidden {
        places.extend(hidden_places(path, &mut resolved, MAX_DANGLING_HOPS));
    }
    let (mut mount_view_only, mut kept): (Vec<PathBuf>, Vec<PathBuf>) =
        in_byte_order(places.iter().cloned()).into_iter().partition(|place| in_root(place));
    // Hidden itself or inside a hidden place: nothing there is granted.
    let hidden_at = |dir: &Path| dir.ancestors().any(|up| places.contains(up));
    // Every directory between `/` and a hidden place, unless it is hidden, inside a hidden
    // place or inside a writable root.
    let mut ancestors: HashSet<PathBuf> = HashSet::new();
    for place in &kept {
        for dir in place.ancestors().skip(1) {
            // Its own ancestors were added with it.
            if ancestors.contains(dir) {
                break;
            }
            if !hidden_at(dir) && !in_root(dir) {
                ancestors.insert(dir.to_path_buf());
            }
        }
    }
    let mut by_depth: Vec<PathBuf> = in_byte_order(ancestors.iter().cloned());
    by_depth.sort_by_key(|dir| dir.components().count());
    let mut whole: Vec<PathBuf> = Vec::new();
    let mut listed: Vec<(PathBuf, Option<Vec<Entry>>)> = Vec::new();
    for dir in by_depth {
        if whole.iter().any(|big| dir.starts_with(big)) {
            continue;
        }
        let unbounded = one_by_one.contains(&dir);
        let entries = fs.list(&dir, if unbounded { usize::MAX } else { MAX_ENTRIES });
        if !unbounded && entries.as_ref().is_some_and(|entries| entries.len() > MAX_ENTRIES) {
            whole.push(dir);
            continue;
        }
        listed.push((dir, entries));
    }
    let is_whole = |path: &Path| whole.iter().any(|big| path.starts_with(big));
    let mut plan = ReadPlan::default();
    for (dir, entries) in listed {
        for (entry, link) in entries.into_iter().flatten() {
            let granted_alone = ancestors.contains(&entry) && !is_whole(&entry);
            if link || places.contains(&entry) || granted_alone {
                continue;
            }
            plan.siblings.push(entry);
        }
        plan.ancestors.push(dir);
    }
    kept.retain(|place| {
        let covered = is_whole(place);
        if covered {
            mount_view_only.push(place.clone());
        }
        !covered
    });
    plan.unreadable = kept;
    plan.mount_view_only = mount_view_only;
    plan
}

/// `paths` sorted by their bytes (a stable order for the plan, cheaper than by components).
fn in_byte_order(paths: impl Iterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = paths.collect();
    paths.sort_unstable_by(|a, b| {
        a.as_os_str().as_encoded_bytes().cmp(b.as_os_str().as_encoded_bytes())
    });
    paths
}

/// Directories resolved once: hidden paths share most of theirs (`~`, `~/.config`), and a
/// missing one is looked up again for every hidden path below it.
struct Resolved<'a, F> {
    fs: &'a F,
    known: HashMap<PathBuf, Option<PathBuf>>,
}

impl<F: FileSystem> Resolved<'_, F> {
    fn canonical(&mut self, path: &Path) -> Option<PathBuf> {
        if let Some(known) = self.known.get(path) {
            return known.clone();
        }
        let real = self.fs.canonical(path);
        self.known.insert(path.to_path_buf(), real.clone());
        real
    }
}

/// Where `path` puts something hidden: its name in its real directory; where it leads, when it
/// is a link; for a path that does not exist, the first missing name under its nearest existing
/// ancestor (so that the ancestor is planned as one). A link on the way that leads nowhere yet
/// (a dotfile manager's link to a secret not written yet, one left after a logout) is followed
/// as written, up to `hops` links: a program outside that writes through it creates the secret
/// where the link points, and that place must be as unreadable as the name.
fn hidden_places<F: FileSystem>(
    path: &Path,
    resolved: &mut Resolved<'_, F>,
    hops: usize,
) -> Vec<PathBuf> {
    let fs = resolved.fs;
    let mut places = Vec::new();
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return places;
    };
    let kind = fs.kind(path);
    match kind {
        PathKind::Other | PathKind::Link => {
            if let Some(dir) = resolved.canonical(parent) {
                places.push(dir.join(name));
            }
            if kind == PathKind::Link {
                match fs.canonical(path) {
                    Some(target) => places.push(target),
                    None => places.extend(dangling(path, Path::new(""), resolved, hops)),
                }
            }
        }
        PathKind::Missing => {
            let mut child = path;
            // The directories between the path and its nearest existing ancestor: none of
            // them resolves, so a link that leads nowhere can only be among them.
            let mut unresolved = Vec::new();
            for dir in path.ancestors().skip(1) {
                if let Some(real) = resolved.canonical(dir) {
                    if let Some(name) = child.file_name() {
                        places.push(real.join(name));
                    }
                    break;
                }
                unresolved.push(dir);
                child = dir;
            }
            // A link on the way that leads nowhere: where the rest would be created.
            for dir in unresolved {
                // The file system answers each directory once (the listings remember).
                if fs.kind(dir) == PathKind::Link {
                    let rest = path.strip_prefix(dir).unwrap_or(Path::new(""));
                    places.extend(dangling(dir, rest, resolved, hops));
                    break;
                }
            }
        }
    }
    places.retain(|place| place.parent().is_some());
    places
}

/// The hidden places of `rest` under where the dangling link `link` points.
fn dangling<F: FileSystem>(
    link: &Path,
    rest: &Path,
    resolved: &mut Resolved<'_, F>,
    hops: usize,
) -> Vec<PathBuf> {
    let Some(hops) = hops.checked_sub(1) else { return Vec::new() };
    let Some(target) = resolved.fs.read_link(link) else { return Vec::new() };
    let Some(dir) = link.parent() else { return Vec::new() };
    // A relative target is taken from the link's real directory, as the kernel takes it.
    let dir = resolved.canonical(dir).unwrap_or_else(|| dir.to_path_buf());
    let lead = if target.is_absolute() { target } else { dir.join(target) };
    let lead = cordon_policies::lexically_normal(&lead.join(rest));
    hidden_places(&lead, resolved, hops)
}

#[cfg(test)]
#[path = "hidden_reads_tests.rs"]
mod tests;
