//! `cordon diff` and `cordon undo`: what a transactional run applied, change by change, and
//! putting back what it replaced or deleted.
//!
//! The apply records each change in the run's directory (`cordon_sandbox_linux::read_applied`)
//! with what the path held before — kept in the run's `replaced/` — and what the change put
//! there. Undoing goes through the changes newest first and reverses each one only while the
//! path still holds exactly what the run put there (inode, modification time, size): anything
//! changed since is a conflict, named and left alone. Nothing is deleted: what the run made or
//! wrote is moved into the run's `undone/` (a second name for a file, before what it replaced
//! is renamed back over it), where the user can still take it. Paths are reached without
//! following a link (`openat2` with `RESOLVE_NO_SYMLINKS`).

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use cordon_sandbox_linux::{AppliedChange, Before, Stamp};
use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

use crate::kept::{KeptChange, KeptError};

/// The state of a run whose changes were undone.
const UNDONE: &str = "undone";

/// Why a change is left as it is.
#[derive(Debug, thiserror::Error)]
enum Leave {
    #[error("not a path a run changes")]
    NotAPath,
    #[error("what it replaced was not kept: {0}")]
    NotKept(String),
    #[error("changed since the run: left as it is")]
    ChangedSince,
    #[error("something is there again since the run: left as it is")]
    ThereAgain,
    #[error("recorded as neither made nor deleted")]
    Neither,
    #[error("{what}: {error}")]
    Io { what: &'static str, error: std::io::Error },
}

fn io(what: &'static str) -> impl FnOnce(rustix::io::Errno) -> Leave {
    move |errno| Leave::Io { what, error: errno.into() }
}

/// What a change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Created,
    Replaced,
    Deleted,
}

/// One change of a run, as `cordon diff` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RunChange {
    #[serde(serialize_with = "crate::lossy::lossy_path")]
    pub path: PathBuf,
    pub kind: ChangeKind,
    /// Where what it replaced or deleted is kept.
    #[serde(serialize_with = "crate::lossy::lossy_optional_path")]
    pub kept: Option<PathBuf>,
    /// Why it was not kept (the change cannot be undone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_kept: Option<String>,
    /// The path no longer holds what the run put there.
    pub changed_since: bool,
}

/// A kept run with what it applied and what it held back.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunReview {
    pub id: String,
    pub state: String,
    #[serde(serialize_with = "crate::lossy::lossy_path")]
    pub dir: PathBuf,
    pub applied: Vec<RunChange>,
    pub held: Vec<KeptChange>,
}

/// What `cordon undo` did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Undone {
    /// Paths back as they were before the run.
    #[serde(serialize_with = "lossy_paths")]
    pub restored: Vec<PathBuf>,
    /// Paths the run had made, and where they went.
    pub removed: Vec<Moved>,
    /// Paths left as they are, and why.
    pub left: Vec<Left>,
    /// Where what the run had written went (the run's `undone/`).
    #[serde(serialize_with = "crate::lossy::lossy_path")]
    pub kept_in: PathBuf,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Moved {
    #[serde(serialize_with = "crate::lossy::lossy_path")]
    pub path: PathBuf,
    #[serde(serialize_with = "crate::lossy::lossy_path")]
    pub to: PathBuf,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Left {
    #[serde(serialize_with = "crate::lossy::lossy_path")]
    pub path: PathBuf,
    pub why: String,
}

fn lossy_paths<S: serde::Serializer>(paths: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(paths.iter().map(|path| path.to_string_lossy()))
}

/// Every kept run, newest first, with what it applied and held.
pub fn reviews(cordon_home: &Path) -> Vec<RunReview> {
    crate::kept::all_kept_runs(cordon_home)
        .into_iter()
        .map(|run| review_of(run.id, run.state, run.dir, run.held))
        .collect()
}

/// The kept run `id`; without one, the newest run whose workspace (a root it wrote through the
/// gate) holds `here`.
pub fn review(cordon_home: &Path, id: Option<&str>, here: &Path) -> Result<RunReview, KeptError> {
    match id {
        Some(id) => {
            let run = crate::kept::kept_run(cordon_home, id)?;
            Ok(review_of(run.id, run.state, run.dir, run.held))
        }
        None => reviews(cordon_home)
            .into_iter()
            .find(|run| run_roots(&run.dir).iter().any(|root| here.starts_with(root)))
            .ok_or_else(|| {
                KeptError::NoSuchRun(format!("whose workspace holds {}", here.display()))
            }),
    }
}

/// The roots a run's layers were (`I/root` in its directory).
fn run_roots(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_str().is_some_and(|n| n.parse::<u32>().is_ok()))
        .filter_map(|entry| std::fs::read_link(entry.path().join("root")).ok())
        .collect()
}

fn review_of(id: String, state: String, dir: PathBuf, held: Vec<KeptChange>) -> RunReview {
    let applied =
        cordon_sandbox_linux::read_applied(&dir).into_iter().map(|c| shown(c, &dir)).collect();
    RunReview { id, state, dir, applied, held }
}

fn shown(change: AppliedChange, dir: &Path) -> RunChange {
    let now = now_at(&change.path);
    let (kind, changed_since) = match change.after {
        Some(after) => {
            let kind = match change.before {
                Before::Absent => ChangeKind::Created,
                _ => ChangeKind::Replaced,
            };
            (kind, now != Some(after) || tree_changed(&change.path, after, change.at))
        }
        None => (ChangeKind::Deleted, now.is_some()),
    };
    let (kept, not_kept) = match change.before {
        Before::Absent => (None, None),
        Before::Kept(at) => (Some(dir.join(at)), None),
        Before::NotKept(why) => (None, Some(why)),
    };
    RunChange { path: change.path, kind, kept, not_kept, changed_since }
}

/// How many entries of a directory a run put in place are looked at for later changes.
const TREE_CHECKED: usize = 100_000;

/// Whether anything in the directory at `path` (what the run put there, `after`) changed after
/// `at`: an entry whose change time is later, or more entries than [`TREE_CHECKED`] (then it
/// cannot be told). Never for what is not a directory.
fn tree_changed(path: &Path, after: Stamp, at: (i64, i64)) -> bool {
    use std::os::unix::fs::MetadataExt;
    if !after.directory {
        return false;
    }
    let mut pending = vec![path.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { return true };
        for entry in entries.filter_map(Result::ok) {
            seen += 1;
            if seen > TREE_CHECKED {
                return true;
            }
            let Ok(meta) = entry.metadata() else { return true };
            if (meta.ctime(), meta.ctime_nsec()) > at {
                return true;
            }
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    false
}

/// What is at `path` now (`None`: nothing, or its directory cannot be reached without a link).
fn now_at(path: &Path) -> Option<Stamp> {
    let (parent, name) = (path.parent()?, path.file_name()?);
    let dir = open_no_links(parent).ok()?;
    Stamp::of_at(&dir, name)
}

fn open_no_links(path: &Path) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::openat2(
        rustix::fs::CWD,
        path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )?)
}

/// Undoes run `id` (see the module docs).
pub fn undo(cordon_home: &Path, id: &str) -> Result<Undone, KeptError> {
    let run = crate::kept::kept_run(cordon_home, id)?;
    if run.state == UNDONE {
        return Err(KeptError::Refused { path: run.dir, what: "its changes were undone already" });
    }
    let undone_dir = run.dir.join("undone");
    std::fs::create_dir_all(&undone_dir)
        .map_err(|error| KeptError::Io { path: undone_dir.clone(), error })?;
    let undone_fd = open_no_links(&undone_dir)
        .map_err(|error| KeptError::Io { path: undone_dir.clone(), error })?;
    let mut done = Undone { kept_in: undone_dir, ..Undone::default() };
    let changes = cordon_sandbox_linux::read_applied(&run.dir);
    for (n, change) in changes.into_iter().enumerate().rev() {
        let path = change.path.clone();
        match undo_one(change, &run.dir, &undone_fd, n) {
            Ok(Some(to)) => done.removed.push(Moved { path, to }),
            Ok(None) => done.restored.push(path),
            Err(why) => done.left.push(Left { path, why: why.to_string() }),
        }
    }
    // Undone whole: a second undo is refused. With anything left, another try may finish it
    // (what was undone now counts as changed since, and stays).
    if done.left.is_empty() {
        let _ = std::fs::write(run.dir.join("state"), format!("{UNDONE}\n"));
    }
    Ok(done)
}

/// Reverses one change: `Ok(Some(to))` when the path the run made went to `to`, `Ok(None)`
/// when what it replaced or deleted is back, `Err(why)` when it is left as it is.
fn undo_one(
    change: AppliedChange,
    run_dir: &Path,
    undone: &OwnedFd,
    n: usize,
) -> Result<Option<PathBuf>, Leave> {
    let undone_path = run_dir.join("undone");
    let (Some(parent), Some(name)) = (change.path.parent(), change.path.file_name()) else {
        return Err(Leave::NotAPath);
    };
    let dir = open_no_links(parent).map_err(|error| Leave::Io { what: "its directory", error })?;
    let now = Stamp::of_at(&dir, name);
    // What the run put there goes into `undone/N` (N: the change's place in the record).
    let aside = std::ffi::OsString::from(n.to_string());
    let aside_path = undone_path.join(&aside);
    match (change.before, change.after) {
        (Before::NotKept(why), _) => Err(Leave::NotKept(why)),
        (_, Some(after)) if now != Some(after) || tree_changed(&change.path, after, change.at) => {
            Err(Leave::ChangedSince)
        }
        (Before::Absent, Some(_)) => {
            rustix::fs::renameat(&dir, name, undone, aside.as_os_str())
                .map_err(io("cannot move it aside"))?;
            Ok(Some(aside_path))
        }
        (Before::Kept(kept), Some(after)) => {
            let kept = run_dir.join(kept);
            let (kept_dir, kept_name) = kept_parts(&kept)?;
            let kept_is_dir = std::fs::symlink_metadata(&kept).is_ok_and(|meta| meta.is_dir());
            if after.directory || kept_is_dir {
                // A directory cannot be renamed over, nor renamed over a file: the run's goes
                // first, and comes back if the old one cannot.
                rustix::fs::renameat(&dir, name, undone, aside.as_os_str())
                    .map_err(io("cannot move it aside"))?;
                if let Err(errno) = rustix::fs::renameat(&kept_dir, kept_name, &dir, name) {
                    let _ = rustix::fs::renameat(undone, aside.as_os_str(), &dir, name);
                    return Err(io("cannot put the old one back")(errno));
                }
            } else {
                // A second name for the run's version, then the old one renamed over it: the
                // path is never empty.
                let _ = rustix::fs::linkat(&dir, name, undone, aside.as_os_str(), AtFlags::empty());
                put_back(&kept_dir, kept_name, &dir, name)
                    .map_err(|error| Leave::Io { what: "cannot put the old one back", error })?;
            }
            Ok(None)
        }
        (Before::Kept(kept), None) => {
            if now.is_some() {
                return Err(Leave::ThereAgain);
            }
            let kept = run_dir.join(kept);
            let (kept_dir, kept_name) = kept_parts(&kept)?;
            put_back(&kept_dir, kept_name, &dir, name)
                .map_err(|error| Leave::Io { what: "cannot put it back", error })?;
            Ok(None)
        }
        (Before::Absent, None) => Err(Leave::Neither),
    }
}

/// The directory (opened) and name of a path in the run's directory.
fn kept_parts(kept: &Path) -> Result<(OwnedFd, &OsStr), Leave> {
    let (Some(parent), Some(name)) = (kept.parent(), kept.file_name()) else {
        return Err(Leave::NotKept("no kept copy".into()));
    };
    let dir = open_no_links(parent).map_err(|error| Leave::Io { what: "its kept copy", error })?;
    Ok((dir, name))
}

/// Renames the kept `kept_name` to `name` in `dir`; from another file system than cordon's, a
/// file or link is copied beside its place and renamed over it.
fn put_back(
    kept_dir: &OwnedFd,
    kept_name: &OsStr,
    dir: &OwnedFd,
    name: &OsStr,
) -> std::io::Result<()> {
    match rustix::fs::renameat(kept_dir, kept_name, dir, name) {
        Err(rustix::io::Errno::XDEV) => {}
        done => return Ok(done?),
    }
    let st = rustix::fs::statat(kept_dir, kept_name, AtFlags::SYMLINK_NOFOLLOW)?;
    let mut beside = std::ffi::OsString::from(".");
    beside.push(name);
    beside.push(".cordon-undo");
    let _ = rustix::fs::unlinkat(dir, beside.as_os_str(), AtFlags::empty());
    match rustix::fs::FileType::from_raw_mode(st.st_mode) {
        rustix::fs::FileType::Symlink => {
            let target = rustix::fs::readlinkat(kept_dir, kept_name, Vec::new())?;
            rustix::fs::symlinkat(&target, dir, beside.as_os_str())?;
        }
        rustix::fs::FileType::RegularFile => {
            let read = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let from = rustix::fs::openat(kept_dir, kept_name, read, Mode::empty())?;
            let create =
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let mode = Mode::from_raw_mode(st.st_mode & 0o777);
            let to = rustix::fs::openat(dir, beside.as_os_str(), create, mode)?;
            std::io::copy(&mut std::fs::File::from(from), &mut std::fs::File::from(to))?;
        }
        _ => return Err(std::io::Error::other("a directory on another file system than cordon's")),
    }
    Ok(rustix::fs::renameat(dir, beside.as_os_str(), dir, name)?)
}
