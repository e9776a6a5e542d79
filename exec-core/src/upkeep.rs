//! Removing what sandboxed commands made, whatever they made of it.
//!
//! A preset's cache or a transactional run's directory is a tree a sandboxed command wrote: it
//! may hold a directory of mode 0500 with files in it (which `rm -rf` cannot empty), a link
//! where cordon expects a directory, a tree thousands of levels deep, or change while cordon
//! works on it (another sandboxed run of the same workspace). So removal works through
//! descriptors only — every directory opened with `O_NOFOLLOW` relative to its parent's
//! descriptor, its mode given back to the owner before it is listed, every entry unlinked
//! relative to it — and a tree it still cannot remove (deeper than it goes, or an entry of
//! another owner) or not within the time the caller gives it is moved aside whole, so that the
//! name is free again and the run goes on; what is in the trash goes at later runs, each one
//! removing what its time allows.

use std::ffi::OsString;
use std::io;
#[cfg(target_os = "linux")]
use std::os::fd::AsRawFd;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use nix::dir::Dir;
use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::{Mode, SFlag, fchmod, fstatat};
use nix::unistd::{UnlinkatFlags, unlinkat};

/// How many names of a directory removal reads before it removes them (and reads again).
const LISTED_AT_ONCE: usize = 256;

/// Levels below the top that removal descends (the bound keeps the recursion's stack, and the
/// descriptors it holds open, small). A deeper tree is moved aside whole; in the trash, what
/// lies below this depth goes into one new entry of the trash per pass, so that each pass
/// removes up to this many levels more of it.
const MAX_DEPTH: usize = 128;

/// Removes `path` — a file, a link (never followed) or a directory with everything in it —
/// giving each directory back its owner's permissions first. Nothing at `path` is success.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    remove_tree_until(path, &Until::Done)
}

/// [`remove_tree`], giving up (`TimedOut`) once `until` stops it; what is removed by then
/// stays removed.
fn remove_tree_until(path: &Path, until: &Until<'_>) -> io::Result<()> {
    let (parent, name) = split(path)?;
    let parent = open_dir(nix::fcntl::AT_FDCWD, parent)?;
    remove_at(&parent, &name, 0, &Removal { until, deep_into: None })
}

/// Removes `path` as [`remove_tree`] does until `deadline`, and when that fails or time is
/// up moves what is left into `trash` (see [`move_aside`]), so that `path` is free either
/// way. Returns where it went, if it was moved.
pub fn remove_or_move_aside(
    path: &Path,
    trash: &Path,
    deadline: Instant,
) -> io::Result<Option<PathBuf>> {
    let Err(error) = remove_tree_until(path, &Until::Deadline(deadline)) else {
        return Ok(None);
    };
    tracing::debug!(path = %path.display(), %error, "not removed; moving it aside");
    move_aside(path, trash).map(Some)
}

/// Moves `path` whole into `trash` (a directory of cordon's own on the same file system,
/// created private when missing) under a new name that keeps its own; returns the new place.
pub fn move_aside(path: &Path, trash: &Path) -> io::Result<PathBuf> {
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(trash)?;
    let name = path.file_name().map_or_else(|| OsString::from("entry"), ToOwned::to_owned);
    let target = trash.join(aside_name(&name));
    std::fs::rename(path, &target)?;
    Ok(target)
}

/// A new name in the trash that begins with the time it was made (the trash is emptied the
/// newest first) and keeps as much of `name` as a name may hold.
fn aside_name(name: impl AsRef<std::ffi::OsStr>) -> OsString {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let prefix = format!("{stamp}-{}-", std::process::id());
    let kept = name.as_ref().as_bytes();
    let kept = &kept[..kept.len().min(NAME_MAX.saturating_sub(prefix.len()))];
    let mut aside = OsString::from(prefix);
    aside.push(std::ffi::OsStr::from_bytes(kept));
    aside
}

/// The longest name a directory entry may have, in bytes.
const NAME_MAX: usize = 255;

/// Removes (or, past `deadline`, moves into `trash`) each entry of `dir` neither modified nor
/// changed for `age`, as a system's cleaner of `/tmp` does; returns how many went.
#[cfg(target_os = "linux")]
pub fn remove_older_than(
    dir: &Path,
    age: std::time::Duration,
    trash: &Path,
    deadline: Instant,
) -> usize {
    use std::os::unix::fs::MetadataExt;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let Some(cutoff) = SystemTime::now().checked_sub(age) else { return 0 };
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let Ok(meta) = entry.metadata() else { continue };
        let changed = UNIX_EPOCH + Duration::from_secs(u64::try_from(meta.ctime()).unwrap_or(0));
        let old = meta.modified().is_ok_and(|modified| modified < cutoff) && changed < cutoff;
        if old && remove_or_move_aside(&entry.path(), trash, deadline).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The space `path` takes on disk, its tree included (no link followed, no other file system
/// entered); `None` when `deadline` passed first.
#[cfg(target_os = "linux")]
pub fn disk_usage(path: &Path, deadline: Instant) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let top = std::fs::symlink_metadata(path).ok()?;
    let device = top.dev();
    let mut total = top.blocks() * 512;
    let mut pending = if top.is_dir() { vec![path.to_path_buf()] } else { Vec::new() };
    while let Some(dir) = pending.pop() {
        if Instant::now() >= deadline {
            return None;
        }
        for entry in std::fs::read_dir(&dir).into_iter().flatten().filter_map(Result::ok) {
            let Ok(meta) = entry.metadata() else { continue };
            total += meta.blocks() * 512;
            if meta.is_dir() && meta.dev() == device {
                pending.push(entry.path());
            }
        }
    }
    Some(total)
}

/// Empties `trash` as far as it can by `deadline`; returns how many of its entries are left
/// for a later try.
pub fn empty_trash(trash: &Path, deadline: Instant) -> usize {
    empty_trash_while(trash, &Until::Deadline(deadline))
}

/// One pass of [`empty_trash`] over the trash's entries, by `deadline`: what lies deeper than
/// removal descends waits in its new entry for a later emptying. For work on a launch's path,
/// which must not go on with a deep tree.
#[cfg_attr(
    all(not(target_os = "linux"), not(test)),
    expect(dead_code, reason = "only the Linux transactions prune their kept runs")
)]
pub fn empty_trash_once(trash: &Path, deadline: Instant) -> usize {
    one_pass(trash, &newest_first(trash), &Until::Deadline(deadline)).0
}

/// Empties `trash`, the newest entries first, until `until` stops it; returns how many of its
/// entries are left. What a pass moved too deep into a new entry, the next pass goes on with,
/// while there is time — that entry alone: it lies shallower than where it came from, and an
/// entry that already failed is not walked again.
fn empty_trash_while(trash: &Path, until: &Until<'_>) -> usize {
    let (mut left, mut made) = one_pass(trash, &newest_first(trash), until);
    while let Some(entry) = made {
        if until.stops() {
            return left + 1;
        }
        let (failed, next) = one_pass(trash, std::slice::from_ref(&entry), until);
        left += failed;
        made = next;
    }
    left
}

/// Removes `entries` of `trash` in turn until `until` stops it; returns how many are left and
/// the entry it made for what lay too deep, if it made one.
fn one_pass(trash: &Path, entries: &[OsString], until: &Until<'_>) -> (usize, Option<OsString>) {
    let Ok(top) = open_dir(nix::fcntl::AT_FDCWD, trash) else { return (entries.len(), None) };
    let deep =
        Spill { trash: &top, into: std::cell::OnceCell::new(), moved: std::cell::Cell::new(0) };
    let removal = Removal { until, deep_into: Some(&deep) };
    let mut left = 0;
    for (done, name) in entries.iter().enumerate() {
        if until.stops() {
            left += entries.len() - done;
            break;
        }
        if let Err(error) = remove_at(&top, name, 0, &removal) {
            tracing::debug!(path = %trash.join(name).display(), %error, "left in the trash");
            left += 1;
        }
    }
    (left, deep.into.into_inner().map(|(name, _)| name))
}

/// The names of the trash's entries, the newest first (they begin with when they were moved
/// there): a run's own small directory goes before an old, large one that may take many runs.
fn newest_first(trash: &Path) -> Vec<OsString> {
    let Ok(entries) = std::fs::read_dir(trash) else { return Vec::new() };
    let mut names: Vec<OsString> = entries.filter_map(Result::ok).map(|e| e.file_name()).collect();
    names.sort_unstable_by(|a, b| b.cmp(a));
    names
}

/// Empties `trash` until `over()` says to stop (asked before each file or directory is
/// removed), for at most [`TIDY_TIME`]: what is left stays for a later run.
#[cfg_attr(
    all(not(target_os = "linux"), not(test)),
    expect(dead_code, reason = "only the Linux helper's applier empties the trash this way")
)]
pub(crate) fn empty_trash_until(trash: &Path, over: &dyn Fn() -> bool) {
    let deadline = Instant::now() + TIDY_TIME;
    let stop = || over() || Instant::now() >= deadline;
    empty_trash_while(trash, &Until::Told(&stop));
}

/// Empties `trash` on a thread of its own, without a deadline, and leaves it running: what it
/// has not removed when this process ends stays for a later run.
pub(crate) fn empty_trash_in_the_background(trash: &Path) {
    let trash = trash.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("cordon-trash".into())
        .spawn(move || empty_trash(&trash, Instant::now() + TRASH_TIME));
    if let Err(error) = spawned {
        tracing::debug!(%error, "cannot empty the trash in the background");
    }
}

/// How long [`empty_trash_until`] goes on at most while one command runs: a large trash is
/// emptied over several runs rather than competing with one command's disk work for long.
const TIDY_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a background emptying of the trash goes on (a long-lived server's thread ends).
const TRASH_TIME: std::time::Duration = std::time::Duration::from_secs(600);

fn split(path: &Path) -> io::Result<(&Path, OsString)> {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => {
            let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
            Ok((parent, name.to_owned()))
        }
        _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "no entry to remove")),
    }
}

fn open_dir<Fd: AsFd>(at: Fd, name: &Path) -> io::Result<OwnedFd> {
    Ok(openat(
        at,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?)
}

/// When a removal stops before it is done (what is removed by then stays removed).
enum Until<'a> {
    Done,
    Deadline(Instant),
    /// Asked before each entry is removed.
    Told(&'a dyn Fn() -> bool),
}

impl Until<'_> {
    fn stops(&self) -> bool {
        match self {
            Until::Done => false,
            Until::Deadline(deadline) => Instant::now() >= *deadline,
            Until::Told(stop) => stop(),
        }
    }
}

/// How one removal goes: when it stops, and where what lies too deep goes.
struct Removal<'a> {
    until: &'a Until<'a>,
    /// When removing the trash's entries: where a directory deeper than [`MAX_DEPTH`] goes
    /// (renamed, never listed), to be removed by a later pass.
    deep_into: Option<&'a Spill<'a>>,
}

/// One new entry at the trash's top that takes, under names of their own, the directories one
/// pass found too deep: however many there are, the trash grows by one entry a pass. `moved`
/// counts the moves, and names them within the entry.
struct Spill<'a> {
    trash: &'a OwnedFd,
    into: std::cell::OnceCell<(OsString, OwnedFd)>,
    moved: std::cell::Cell<u64>,
}

impl Spill<'_> {
    /// Moves the directory `name` in `parent` into this pass's entry (made on first use).
    fn take(&self, parent: &OwnedFd, name: &OsString) -> io::Result<()> {
        let (_, into) = match self.into.get() {
            Some(into) => into,
            None => {
                let entry = aside_name("deep");
                nix::sys::stat::mkdirat(self.trash, entry.as_os_str(), Mode::S_IRWXU)?;
                let made = open_dir(self.trash, Path::new(&entry))?;
                self.into.get_or_init(|| (entry, made))
            }
        };
        // Moving a directory to another parent rewrites its `..`, which needs write permission
        // on it: a directory its owner made read-only or closed gets its owner's rights first.
        give_owner_rights(parent, name)?;
        let moved = self.moved.get();
        self.moved.set(moved + 1);
        gone_is_fine(nix::fcntl::renameat(
            parent,
            name.as_os_str(),
            into,
            moved.to_string().as_str(),
        ))
    }
}

/// Removes `name` in the directory `parent`, unless `removal` stops it first.
fn remove_at(
    parent: &OwnedFd,
    name: &OsString,
    depth: usize,
    removal: &Removal<'_>,
) -> io::Result<()> {
    if removal.until.stops() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "stopped before done"));
    }
    let stat = match fstatat(parent, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(nix::errno::Errno::ENOENT) => return Ok(()),
        Err(errno) => return Err(errno.into()),
    };
    if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT != SFlag::S_IFDIR {
        return gone_is_fine(unlinkat(parent, name.as_os_str(), UnlinkatFlags::NoRemoveDir));
    }
    if depth > MAX_DEPTH {
        return match removal.deep_into {
            Some(spill) => spill.take(parent, name),
            None => Err(io::Error::other(format!("deeper than {MAX_DEPTH} levels"))),
        };
    }
    let dir = match open_dir(parent, Path::new(name)) {
        Ok(dir) => dir,
        Err(error) if error.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
        // Mode 0: not even readable to open. Its owner may still change its mode, through a
        // descriptor that needs no rights (never the name, which could become a link).
        Err(error) if error.raw_os_error() == Some(libc::EACCES) => open_closed_dir(parent, name)?,
        Err(error) => return Err(error),
    };
    // A directory the command made unwritable or unreadable: its owner may give itself the
    // rights back (the descriptor needs none of them to change the mode).
    fchmod(&dir, Mode::S_IRWXU)?;
    // A batch at a time: a directory of a million entries is not read whole before a removal
    // that is told to stop can stop.
    loop {
        let names = names_in(&dir, LISTED_AT_ONCE)?;
        for entry in &names {
            remove_at(&dir, entry, depth + 1, removal)?;
        }
        if names.len() < LISTED_AT_ONCE {
            break;
        }
    }
    drop(dir);
    gone_is_fine(unlinkat(parent, name.as_os_str(), UnlinkatFlags::RemoveDir))
}

/// Opens the directory `name` in `parent` that its mode closes to its owner, after giving the
/// owner its rights back: through an `O_PATH` descriptor (Linux), so that a link swapped in is
/// never followed.
#[cfg(target_os = "linux")]
fn open_closed_dir(parent: &OwnedFd, name: &OsString) -> io::Result<OwnedFd> {
    let place = give_owner_rights(parent, name)?;
    open_dir(&place, Path::new("."))
}

/// Gives the directory `name` in `parent` its owner's rights (read, write, search) through an
/// `O_PATH` descriptor, which needs none of them, so that a link swapped in is never followed;
/// returns that descriptor.
#[cfg(target_os = "linux")]
fn give_owner_rights(parent: &OwnedFd, name: &OsString) -> io::Result<OwnedFd> {
    let place = openat(
        parent,
        Path::new(name),
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let own = format!("/proc/self/fd/{}", place.as_raw_fd());
    nix::sys::stat::fchmodat(
        nix::fcntl::AT_FDCWD,
        Path::new(&own),
        Mode::S_IRWXU,
        nix::sys::stat::FchmodatFlags::FollowSymlink,
    )?;
    Ok(place)
}

/// Elsewhere, by name without following a link (`lchmod`: a link swapped in gets the mode,
/// never what it leads to).
#[cfg(not(target_os = "linux"))]
fn open_closed_dir(parent: &OwnedFd, name: &OsString) -> io::Result<OwnedFd> {
    give_owner_rights(parent, name)?;
    open_dir(parent, Path::new(name))
}

/// Elsewhere, by name without following a link (`lchmod`).
#[cfg(not(target_os = "linux"))]
fn give_owner_rights(parent: &OwnedFd, name: &OsString) -> io::Result<()> {
    Ok(nix::sys::stat::fchmodat(
        parent,
        Path::new(name),
        Mode::S_IRWXU,
        nix::sys::stat::FchmodatFlags::NoFollowSymlink,
    )?)
}

/// Up to `most` names in the directory `dir` (`.` and `..` left out), read from its start
/// (what was removed is no longer there) through a second descriptor, so that `dir` stays
/// usable for the unlinks.
fn names_in(dir: &OwnedFd, most: usize) -> io::Result<Vec<OsString>> {
    let listing = nix::unistd::dup(dir)?;
    let mut listing = Dir::from_fd(listing)?;
    let mut names = Vec::new();
    for entry in listing.iter() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        names.push(std::ffi::OsStr::from_bytes(name).to_owned());
        if names.len() == most {
            break;
        }
    }
    Ok(names)
}

fn gone_is_fine(result: nix::Result<()>) -> io::Result<()> {
    match result {
        Ok(()) | Err(nix::errno::Errno::ENOENT) => Ok(()),
        Err(errno) => Err(errno.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_tree_with_closed_directories_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("CACHEDIR.TAG");
        std::fs::create_dir_all(top.join("a/b")).unwrap();
        std::fs::write(top.join("a/b/file"), "x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", top.join("a/link")).unwrap();
        std::fs::set_permissions(top.join("a/b"), PermissionsExt::from_mode(0o500)).unwrap();
        std::fs::set_permissions(top.join("a"), PermissionsExt::from_mode(0o000)).unwrap();
        remove_tree(&top).unwrap();
        assert!(!top.exists());
        assert!(Path::new("/etc/passwd").exists());
    }

    /// A directory of mode 0 cannot be opened to be listed by its owner (root can): as the
    /// owner, its mode is given back through a descriptor first. Run as root, the test still
    /// checks the path that opens it; uid 65534 is covered end to end.
    #[test]
    fn a_directory_of_mode_zero_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("config");
        std::fs::create_dir_all(top.join("inner")).unwrap();
        std::fs::write(top.join("inner/file"), "x").unwrap();
        std::fs::set_permissions(top.join("inner"), PermissionsExt::from_mode(0o000)).unwrap();
        std::fs::set_permissions(&top, PermissionsExt::from_mode(0o000)).unwrap();
        remove_tree(&top).unwrap();
        assert!(!top.exists());
    }

    #[test]
    fn a_link_is_removed_and_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("kept");
        std::fs::create_dir(&kept).unwrap();
        std::fs::write(kept.join("file"), "x").unwrap();
        std::fs::set_permissions(&kept, PermissionsExt::from_mode(0o500)).unwrap();
        std::os::unix::fs::symlink(&kept, dir.path().join("link")).unwrap();
        remove_tree(&dir.path().join("link")).unwrap();
        assert!(kept.join("file").exists());
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o500, "the link's target was changed");
        std::fs::set_permissions(&kept, PermissionsExt::from_mode(0o700)).unwrap();
    }

    #[test]
    fn a_tree_too_deep_to_remove_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("cache");
        let mut deep = top.clone();
        for _ in 0..MAX_DEPTH + 3 {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        let trash = dir.path().join("trash");
        let later = Instant::now() + std::time::Duration::from_secs(60);
        let moved = remove_or_move_aside(&top, &trash, later).unwrap().unwrap();
        assert!(!top.exists());
        assert!(moved.starts_with(&trash));
        assert_eq!(remove_or_move_aside(&top, &trash, later).unwrap(), None, "nothing there");
        // What lies below the depth removal descends goes into a new entry of the trash: each
        // emptying makes progress, and a few empty it.
        assert_eq!(empty_trash_once(&trash, later), 0, "what was above the bound is removed");
        assert!(!moved.exists());
        let spilled = std::fs::read_dir(&trash).unwrap().count();
        assert_eq!(spilled, 1, "what was below it is one entry of its own");
        assert_eq!(empty_trash_once(&trash, later), 0);
        assert_eq!(std::fs::read_dir(&trash).unwrap().count(), 0, "the trash is empty");
    }

    /// Many branches past the depth removal descends: one pass moves them all into one new
    /// entry, so the trash's top does not grow by one entry per branch.
    #[test]
    fn the_deep_branches_of_one_pass_go_into_one_entry() {
        let dir = tempfile::tempdir().unwrap();
        let trash = dir.path().join("trash");
        let mut shallow = trash.join("1-1-run");
        for _ in 0..MAX_DEPTH {
            shallow.push("d");
        }
        for branch in 0..50 {
            std::fs::create_dir_all(shallow.join(format!("{branch}/a/b"))).unwrap();
        }
        let later = Instant::now() + std::time::Duration::from_secs(60);
        assert_eq!(empty_trash_once(&trash, later), 0);
        let top: Vec<_> = std::fs::read_dir(&trash).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(top.len(), 1, "{top:?}");
        assert_eq!(std::fs::read_dir(&top[0]).unwrap().count(), 50, "every branch, moved whole");
        assert_eq!(empty_trash_once(&trash, later), 0);
        assert_eq!(std::fs::read_dir(&trash).unwrap().count(), 0);
    }

    /// A name as long as a name may be still leaves room for the trash's own prefix.
    #[test]
    fn an_entry_with_the_longest_name_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("x".repeat(NAME_MAX));
        std::fs::create_dir_all(top.join("d")).unwrap();
        let trash = dir.path().join("trash");
        let moved = move_aside(&top, &trash).unwrap();
        assert!(!top.exists() && moved.join("d").is_dir());
        assert_eq!(moved.file_name().unwrap().len(), NAME_MAX);
    }

    /// A tree many times deeper than removal descends leaves the trash after as many passes,
    /// each removing part of it — never the same part twice, never nothing — and one emptying
    /// with time enough makes them all.
    #[test]
    fn a_tree_far_deeper_than_removal_descends_leaves_the_trash_over_several_passes() {
        let dir = tempfile::tempdir().unwrap();
        let trash = dir.path().join("trash");
        let deep_tree = || {
            let mut deep = trash.join("1-1-run");
            for _ in 0..MAX_DEPTH * 4 {
                deep.push("d");
            }
            std::fs::create_dir_all(&deep).unwrap();
            std::fs::write(deep.join("f"), "x").unwrap();
        };
        deep_tree();
        let later = Instant::now() + std::time::Duration::from_secs(60);
        let mut passes = 0;
        while std::fs::read_dir(&trash).unwrap().count() > 0 {
            passes += 1;
            assert!(passes <= 8, "the trash is not emptied");
            empty_trash_once(&trash, later);
        }
        assert!(passes >= 2, "removed in one pass: the bound was not reached");
        deep_tree();
        assert_eq!(empty_trash(&trash, later), 0);
        assert_eq!(std::fs::read_dir(&trash).unwrap().count(), 0, "one emptying left some");
    }

    /// Out of time, what is left is moved aside whole, the name is free at once, and a later
    /// run's time empties the trash.
    #[test]
    fn a_tree_not_removed_in_time_is_moved_aside_and_emptied_later() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("CACHEDIR.TAG");
        std::fs::create_dir_all(top.join("d")).unwrap();
        std::fs::write(top.join("d/f"), "x").unwrap();
        let trash = dir.path().join("trash");
        let moved = remove_or_move_aside(&top, &trash, Instant::now()).unwrap().unwrap();
        assert!(!top.exists() && moved.join("d/f").exists());
        assert_eq!(empty_trash(&trash, Instant::now()), 1);
        let later = Instant::now() + std::time::Duration::from_secs(60);
        assert_eq!(empty_trash(&trash, later), 0);
        assert!(!moved.exists());
    }

    /// More entries than are listed at once: removed whole, in batches.
    #[test]
    fn a_directory_larger_than_one_listing_is_removed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("flat");
        std::fs::create_dir(&top).unwrap();
        for i in 0..LISTED_AT_ONCE * 2 + 7 {
            std::fs::write(top.join(format!("f{i}")), "").unwrap();
        }
        remove_tree(&top).unwrap();
        assert!(!top.exists());
    }

    /// Told to stop, the emptying stops within a batch of a large flat directory instead of
    /// after reading it whole, and the newest entry of the trash goes first.
    #[test]
    fn the_trash_is_emptied_newest_first_and_stops_when_told() {
        let dir = tempfile::tempdir().unwrap();
        let trash = dir.path().join("trash");
        let old = trash.join("1000-1-old");
        std::fs::create_dir_all(&old).unwrap();
        for i in 0..LISTED_AT_ONCE * 4 {
            std::fs::write(old.join(format!("f{i}")), "").unwrap();
        }
        let new = trash.join("2000-1-new");
        std::fs::create_dir_all(new.join("upper")).unwrap();
        let asked = std::cell::Cell::new(0);
        let over = || {
            asked.set(asked.get() + 1);
            asked.get() > 10
        };
        empty_trash_until(&trash, &over);
        assert!(!new.exists(), "the newest entry goes first");
        let left = std::fs::read_dir(&old).unwrap().count();
        assert!(left > LISTED_AT_ONCE * 3, "it went on after it was told to stop: {left} left");
        assert!(asked.get() <= 12, "asked {} times", asked.get());
    }
}
