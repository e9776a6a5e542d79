//! Runs that kept something (`$CORDON_HOME/kept/ID`): what the write gate held back, listed
//! for the user, taken into the workspace when the user says so, or dropped.
//!
//! A kept run holds `held.json` (what was held: each path, why, where it is kept), written
//! when the run was kept. Taking a held entry in copies it from where it is kept to its path,
//! as the user who asks: the parent directory is found without following a link (a link
//! planted on the way since is refused), a file is written beside its place and renamed over
//! it, set-user-ID and set-group-ID bits and write for group and others are dropped, a
//! directory that exists keeps its mode, a link is made again as a link, a directory is taken
//! in entry by entry; FIFOs, sockets, devices and trees deeper than 128 levels are refused
//! before anything is copied.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};

/// One change a run held back.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KeptChange {
    #[serde(serialize_with = "crate::lossy::lossy_path")]
    pub path: PathBuf,
    /// Why, in words.
    pub why: String,
    /// Where it is kept.
    #[serde(serialize_with = "crate::lossy::lossy_path")]
    pub kept_at: PathBuf,
    /// What is kept there, entry by entry (filled when one run is looked at).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub contents: Vec<KeptEntry>,
}

/// One entry of a held change as it is kept: its path below the change (empty for the change
/// itself) and what it is — kind, mode, size, where a link leads.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KeptEntry {
    #[serde(serialize_with = "crate::lossy::lossy_path")]
    pub path: PathBuf,
    pub what: String,
}

/// How many entries of a held tree are described, and how deep.
const DESCRIBED_ENTRIES: usize = 200;
const DESCRIBED_DEPTH: usize = 8;

/// What is kept at `kept_at`, entry by entry, nothing followed: at most
/// [`DESCRIBED_ENTRIES`] entries, [`DESCRIBED_DEPTH`] levels deep (a last line says how many
/// more there are, when there are).
fn describe_kept(kept_at: &Path) -> Vec<KeptEntry> {
    let mut out = Vec::new();
    let mut more = 0usize;
    let mut pending = vec![(PathBuf::new(), 0usize)];
    while let Some((rel, depth)) = pending.pop() {
        // Joined with an empty path, a file's name would gain a `/` and name nothing.
        let path =
            if rel.as_os_str().is_empty() { kept_at.to_path_buf() } else { kept_at.join(&rel) };
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if out.len() >= DESCRIBED_ENTRIES {
            more += 1;
            continue;
        }
        out.push(KeptEntry { path: rel.clone(), what: what_it_is(&path, &meta) });
        if meta.is_dir() && depth < DESCRIBED_DEPTH {
            let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(&path)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .map(|entry| entry.file_name())
                .collect();
            names.sort();
            pending.extend(names.into_iter().rev().map(|name| (rel.join(name), depth + 1)));
        }
    }
    if more > 0 {
        out.push(KeptEntry { path: PathBuf::from("…"), what: format!("{more} more entries") });
    }
    out
}

fn what_it_is(path: &Path, meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let mode = meta.permissions().mode() & 0o7777;
    let kind = meta.file_type();
    if kind.is_symlink() {
        let target = std::fs::read_link(path).unwrap_or_default();
        format!("link to {}", target.to_string_lossy())
    } else if kind.is_dir() {
        format!("directory, mode {mode:04o}")
    } else if kind.is_file() {
        format!("file, mode {mode:04o}, {} bytes", meta.len())
    } else if kind.is_fifo() {
        format!("FIFO, mode {mode:04o}")
    } else if kind.is_socket() {
        format!("socket, mode {mode:04o}")
    } else {
        format!("device, mode {mode:04o}")
    }
}

/// One run that kept something.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KeptRun {
    pub id: String,
    /// `held` (the gate held something back) or `interrupted` (stopped while its command ran).
    pub state: String,
    #[serde(serialize_with = "crate::lossy::lossy_path")]
    pub dir: PathBuf,
    /// What was held, when the run recorded it.
    pub held: Vec<KeptChange>,
}

/// Why a kept run could not be read or taken in.
#[derive(Debug, thiserror::Error)]
pub enum KeptError {
    #[error("no kept run {0} (cordon held lists them)")]
    NoSuchRun(String),
    #[error("run {run} held nothing at {}", .path.display())]
    NotHeld { run: String, path: PathBuf },
    #[error("{}: {what}", .path.display())]
    Refused { path: PathBuf, what: &'static str },
    #[error("{}: {error}", .path.display())]
    Io { path: PathBuf, error: io::Error },
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> KeptError + '_ {
    move |error| KeptError::Io { path: path.to_path_buf(), error }
}

/// The file a kept run records what it held in.
pub(crate) const HELD_RECORD: &str = "held.json";

/// Every kept run under `cordon_home` that holds something back or was stopped while its
/// command ran, newest first (runs kept only to be undone are `cordon diff`'s).
pub fn kept_runs(cordon_home: &Path) -> Vec<KeptRun> {
    let mut runs = all_kept_runs(cordon_home);
    runs.retain(|run| !run.held.is_empty() || run.state == "interrupted");
    runs
}

/// Every kept run under `cordon_home`, newest first.
pub(crate) fn all_kept_runs(cordon_home: &Path) -> Vec<KeptRun> {
    let dir = cordon_home.join("kept");
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut runs: Vec<KeptRun> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter_map(|entry| read_run(&entry.path()))
        .collect();
    runs.sort_by(|a, b| b.id.cmp(&a.id));
    runs
}

/// The kept run `id`.
pub fn kept_run(cordon_home: &Path, id: &str) -> Result<KeptRun, KeptError> {
    let plain = !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let found = plain.then(|| read_run(&cordon_home.join("kept").join(id))).flatten();
    let mut run = found.ok_or_else(|| KeptError::NoSuchRun(id.to_owned()))?;
    for change in &mut run.held {
        change.contents = describe_kept(&change.kept_at);
    }
    Ok(run)
}

fn read_run(dir: &Path) -> Option<KeptRun> {
    let id = dir.file_name()?.to_str()?.to_owned();
    let state = std::fs::read_to_string(dir.join("state")).ok()?;
    let held = std::fs::read(dir.join(HELD_RECORD))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Vec<HeldRecord>>(&bytes).ok())
        .unwrap_or_default()
        .into_iter()
        .map(|record| KeptChange {
            path: record.path,
            why: record.why,
            kept_at: record.kept_at,
            contents: Vec::new(),
        })
        .collect();
    Some(KeptRun { id, state: state.trim().to_owned(), dir: dir.to_path_buf(), held })
}

/// A held change as recorded (paths as bytes, so that any name round-trips).
#[derive(serde::Serialize, serde::Deserialize)]
struct HeldRecord {
    #[serde(with = "cordon_policies::path_bytes")]
    path: PathBuf,
    why: String,
    #[serde(with = "cordon_policies::path_bytes")]
    kept_at: PathBuf,
}

/// Records `held` in the run directory `dir` (best effort: a run without it lists nothing).
pub(crate) fn record(dir: &Path, held: &[KeptChange]) {
    let records: Vec<HeldRecord> = held
        .iter()
        .map(|change| HeldRecord {
            path: change.path.clone(),
            why: change.why.clone(),
            kept_at: change.kept_at.clone(),
        })
        .collect();
    if let Ok(text) = serde_json::to_vec(&records)
        && let Err(error) = std::fs::write(dir.join(HELD_RECORD), text)
    {
        tracing::warn!(dir = %dir.display(), %error, "cannot record what the run held");
    }
}

/// Takes the held entries at `paths` of run `id` into the workspace; returns what was taken.
pub fn take(cordon_home: &Path, id: &str, paths: &[PathBuf]) -> Result<Vec<PathBuf>, KeptError> {
    let run = kept_run(cordon_home, id)?;
    let mut taken = Vec::new();
    for path in paths {
        let change = run
            .held
            .iter()
            .find(|change| change.path == *path)
            .ok_or_else(|| KeptError::NotHeld { run: id.to_owned(), path: path.clone() })?;
        if !change.kept_at.starts_with(run.dir.join("held")) {
            return Err(KeptError::Refused {
                path: path.clone(),
                what: "not kept in its run's held directory (a change that could not be applied)",
            });
        }
        let (parent, name) = split(path)?;
        // Everything is looked at before anything is copied: a refusal leaves nothing half done.
        check(&change.kept_at, path, 0)?;
        let parent_fd = open_dir_no_links(parent)?;
        copy_into(&change.kept_at, &parent_fd, Target { name, shown: path, depth: 0 })?;
        taken.push(path.clone());
    }
    Ok(taken)
}

/// Removes the kept run `id`.
pub fn drop_run(cordon_home: &Path, id: &str) -> Result<(), KeptError> {
    let run = kept_run(cordon_home, id)?;
    crate::upkeep::remove_tree(&run.dir).map_err(io_at(&run.dir))
}

fn split(path: &Path) -> Result<(&Path, &std::ffi::OsStr), KeptError> {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if path.is_absolute() => Ok((parent, name)),
        _ => Err(KeptError::Refused { path: path.to_path_buf(), what: "not an absolute path" }),
    }
}

fn open_dir_no_links(path: &Path) -> Result<OwnedFd, KeptError> {
    rustix::fs::openat2(
        rustix::fs::CWD,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
    .map_err(|errno| KeptError::Io { path: path.to_path_buf(), error: errno.into() })
}

/// Levels below a held directory that taking it in descends: a command made the tree, and the
/// copy recurses once per level.
const MAX_DEPTH: usize = 128;

/// Where a held entry goes: `name` in the directory the caller opened, shown as `shown`, at
/// `depth` levels below the held path.
struct Target<'a> {
    name: &'a std::ffi::OsStr,
    shown: &'a Path,
    depth: usize,
}

/// Whether the tree kept at `source` can be taken in whole: no FIFO, socket or device, no
/// deeper than [`MAX_DEPTH`].
fn check(source: &Path, shown: &Path, depth: usize) -> Result<(), KeptError> {
    if depth > MAX_DEPTH {
        return Err(KeptError::Refused {
            path: shown.to_path_buf(),
            what: "deeper than 128 levels below the held path: copy it yourself",
        });
    }
    let kind = std::fs::symlink_metadata(source).map_err(io_at(source))?.file_type();
    if kind.is_dir() {
        for entry in std::fs::read_dir(source).map_err(io_at(source))? {
            let entry = entry.map_err(io_at(source))?;
            check(&entry.path(), &shown.join(entry.file_name()), depth + 1)?;
        }
    } else if !kind.is_file() && !kind.is_symlink() {
        return Err(KeptError::Refused {
            path: shown.to_path_buf(),
            what: "a FIFO, socket or device is never taken in",
        });
    }
    Ok(())
}

/// The mode a taken-in file or new directory gets: the held one without set-id bits and
/// without write for group and others (the command chose it).
fn taken_mode(meta: &std::fs::Metadata) -> Mode {
    use std::os::unix::fs::PermissionsExt;
    Mode::from_raw_mode(meta.permissions().mode() & 0o755)
}

/// Copies what is kept at `source` to its target in `parent`.
fn copy_into(source: &Path, parent: &OwnedFd, target: Target<'_>) -> Result<(), KeptError> {
    let Target { name, shown, depth } = target;
    if depth > MAX_DEPTH {
        return Err(KeptError::Refused {
            path: shown.to_path_buf(),
            what: "deeper than 128 levels below the held path: copy it yourself",
        });
    }
    let meta = std::fs::symlink_metadata(source).map_err(io_at(source))?;
    let kind = meta.file_type();
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let count = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temporary = format!(".cordon-take-{}-{count}", std::process::id());
    if kind.is_dir() {
        // A directory that exists keeps its mode; a new one gets the held one's.
        let made = match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(0o700)) {
            Ok(()) => true,
            Err(rustix::io::Errno::EXIST) => false,
            Err(errno) => return Err(KeptError::Io { path: shown.into(), error: errno.into() }),
        };
        let dir = rustix::fs::openat(
            parent,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| KeptError::Io { path: shown.into(), error: errno.into() })?;
        for entry in std::fs::read_dir(source).map_err(io_at(source))? {
            let entry = entry.map_err(io_at(source))?;
            let child = entry.file_name();
            let shown = shown.join(&child);
            copy_into(
                &entry.path(),
                &dir,
                Target { name: &child, shown: &shown, depth: depth + 1 },
            )?;
        }
        if made {
            rustix::fs::fchmod(&dir, taken_mode(&meta))
                .map_err(|e| KeptError::Io { path: shown.into(), error: e.into() })?;
        }
        return Ok(());
    }
    if kind.is_symlink() {
        let target = std::fs::read_link(source).map_err(io_at(source))?;
        rustix::fs::symlinkat(target.as_os_str().as_bytes(), parent, temporary.as_str())
            .map_err(|errno| KeptError::Io { path: shown.into(), error: errno.into() })?;
    } else if kind.is_file() {
        let mut from = std::fs::File::open(source).map_err(io_at(source))?;
        let mode = taken_mode(&meta);
        let to = rustix::fs::openat(
            parent,
            temporary.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            mode,
        )
        .map_err(|errno| KeptError::Io { path: shown.into(), error: errno.into() })?;
        let mut to = std::fs::File::from(to);
        io::copy(&mut from, &mut to).map_err(io_at(shown))?;
        rustix::fs::fchmod(to.as_fd(), mode)
            .map_err(|errno| KeptError::Io { path: shown.into(), error: errno.into() })?;
    } else {
        return Err(KeptError::Refused {
            path: shown.to_path_buf(),
            what: "a FIFO, socket or device is never taken in",
        });
    }
    rustix::fs::renameat(parent, temporary.as_str(), parent, name).map_err(|errno| {
        let _ = rustix::fs::unlinkat(parent, temporary.as_str(), rustix::fs::AtFlags::empty());
        KeptError::Io { path: shown.into(), error: errno.into() }
    })
}
