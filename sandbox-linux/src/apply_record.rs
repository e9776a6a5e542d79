//! What an apply did, change by change, and what it replaced: the record `cordon diff` shows
//! and `cordon undo` reverses.
//!
//! Each change reaches the run's `applied.jsonl` (one JSON object per line, appended as it is
//! made, so an apply stopped halfway and finished by the next cordon leaves one record whole).
//! What a change replaces or deletes is kept first in the run's `replaced/I/…` (I: the layer):
//! a file or link by a second name (a hard link, made before the new one is renamed over it, so
//! there is no moment without a file there), a directory by renaming it. Where that cannot be —
//! another file system — a file is copied while the run's allowance lasts ([`KEEP_BUDGET`]);
//! past it, or for a directory there, the change says it kept nothing and cannot be undone.

use std::ffi::OsStr;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType};

/// How many bytes of replaced files one run may copy to keep them (when a second name cannot
/// be given). Renamed and linked originals cost nothing and are not counted.
pub const KEEP_BUDGET: u64 = 64 * 1024 * 1024;

/// The file an apply records its changes in.
pub const APPLIED_RECORD: &str = "applied.jsonl";

/// What a path held before the change.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Before {
    /// Nothing: the change created it.
    Absent,
    /// Something, kept at this path relative to the run's directory (which moves once the run
    /// is over).
    Kept(#[serde(with = "cordon_policies::path_bytes")] PathBuf),
    /// Something, not kept (why, in words).
    NotKept(String),
}

/// What is at a path: enough to tell whether it is still what the apply put there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stamp {
    pub inode: u64,
    pub mtime: (i64, i64),
    pub size: u64,
    pub directory: bool,
}

impl Stamp {
    /// The stamp of `name` in `dir`, not following a link.
    pub fn of_at(dir: impl AsFd, name: &OsStr) -> Option<Stamp> {
        let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        Some(Stamp::from_stat(&st))
    }

    fn from_stat(st: &rustix::fs::Stat) -> Stamp {
        #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
        Stamp {
            inode: u64::from(st.st_ino),
            mtime: (i64::from(st.st_mtime), i64::try_from(st.st_mtime_nsec).unwrap_or(0)),
            size: u64::try_from(st.st_size).unwrap_or(0),
            directory: FileType::from_raw_mode(st.st_mode).is_dir(),
        }
    }
}

/// One change an apply made.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AppliedChange {
    #[serde(with = "cordon_policies::path_bytes")]
    pub path: PathBuf,
    pub before: Before,
    /// What the change put there (`None`: it deleted what was there).
    pub after: Option<Stamp>,
    /// When the change was made (seconds, nanoseconds): anything in a directory it put there
    /// that changed later was not the run's.
    #[serde(default)]
    pub at: (i64, i64),
}

/// The record of one layer's apply.
pub(crate) struct Record {
    file: Option<std::fs::File>,
    /// The run's directory.
    dir: PathBuf,
    /// `replaced/I`, in the run's directory.
    replaced: PathBuf,
    budget: u64,
    /// The layer's root.
    root: PathBuf,
    /// Whether each directory asked about lies in a build's cache.
    caches: std::collections::HashMap<PathBuf, bool>,
}

impl Record {
    /// The record of layer `index` of the run in `dir`.
    pub(crate) fn open(dir: &Path, index: u32, root: &Path) -> Record {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(APPLIED_RECORD))
            .ok();
        Record {
            file,
            dir: dir.to_path_buf(),
            replaced: Path::new("replaced").join(index.to_string()),
            budget: KEEP_BUDGET,
            root: root.to_path_buf(),
            caches: std::collections::HashMap::new(),
        }
    }

    /// Whether the root's `dir` (relative) lies in a directory marked as a cache
    /// (`CACHEDIR.TAG`: cargo's `target/`), whose files a build makes again.
    fn in_cache(&mut self, dir: &Path) -> bool {
        if let Some(known) = self.caches.get(dir) {
            return *known;
        }
        let marked = std::fs::symlink_metadata(self.root.join(dir).join("CACHEDIR.TAG")).is_ok();
        let cache = marked || dir.parent().is_some_and(|parent| self.in_cache(parent));
        self.caches.insert(dir.to_path_buf(), cache);
        cache
    }

    /// Keeps what the root has at `rel` (`name` in `parent`) before the change replaces or
    /// deletes it. `second_name`: a file or link that stays in place until the new one is
    /// renamed over it (it gets a second name); otherwise it is moved out of the way.
    pub(crate) fn keep(
        &mut self,
        parent: &OwnedFd,
        name: &OsStr,
        rel: &Path,
        second_name: bool,
    ) -> Before {
        if rel.parent().is_some_and(|dir| self.in_cache(dir)) {
            return Before::NotKept("a build's cache (CACHEDIR.TAG): built again, not kept".into());
        }
        let kept_rel = self.replaced.join(rel);
        let kept = self.dir.join(&kept_rel);
        // Kept already by an apply that was stopped after keeping it.
        if std::fs::symlink_metadata(&kept).is_ok() {
            return Before::Kept(kept_rel);
        }
        let Some(kept_parent) = kept.parent() else {
            return Before::NotKept("no place to keep it".into());
        };
        if let Err(error) = std::fs::create_dir_all(kept_parent) {
            return Before::NotKept(format!("cannot keep it: {error}"));
        }
        let Some(kept_dir) = crate::aside::open_dir(None, kept_parent.as_os_str()) else {
            return Before::NotKept("cannot keep it: its place cannot be opened".into());
        };
        let kept_name = kept.file_name().unwrap_or(name);
        let done = if second_name {
            rustix::fs::linkat(parent, name, &kept_dir, kept_name, AtFlags::empty())
        } else {
            rustix::fs::renameat(parent, name, &kept_dir, kept_name)
        };
        match done {
            Ok(()) => Before::Kept(kept_rel),
            Err(rustix::io::Errno::XDEV | rustix::io::Errno::PERM | rustix::io::Errno::MLINK) => {
                self.copy(parent, name, &kept_dir, kept_name, &kept_rel)
            }
            Err(error) => Before::NotKept(format!("cannot keep it: {error}")),
        }
    }

    /// [`Record::keep`] by copying a regular file or a link, within the budget.
    fn copy(
        &mut self,
        parent: &OwnedFd,
        name: &OsStr,
        kept_dir: &OwnedFd,
        kept_name: &OsStr,
        kept: &Path,
    ) -> Before {
        let Ok(st) = rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) else {
            return Before::NotKept("gone".into());
        };
        let kind = FileType::from_raw_mode(st.st_mode);
        if kind == FileType::Symlink {
            let target = rustix::fs::readlinkat(parent, name, Vec::new());
            return match target.and_then(|t| rustix::fs::symlinkat(&t, kept_dir, kept_name)) {
                Ok(()) => Before::Kept(kept.to_path_buf()),
                Err(error) => Before::NotKept(format!("cannot keep it: {error}")),
            };
        }
        let size = u64::try_from(st.st_size).unwrap_or(u64::MAX);
        if kind != FileType::RegularFile {
            return Before::NotKept("a directory on another file system than cordon's".into());
        }
        if size > self.budget {
            return Before::NotKept(format!(
                "on another file system than cordon's, and past the {} MiB this run may copy",
                KEEP_BUDGET / (1024 * 1024)
            ));
        }
        let copied = (|| -> std::io::Result<()> {
            let flags = rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::NOFOLLOW
                | rustix::fs::OFlags::CLOEXEC
                | rustix::fs::OFlags::NONBLOCK;
            let from = rustix::fs::openat(parent, name, flags, rustix::fs::Mode::empty())?;
            let create = rustix::fs::OFlags::WRONLY
                | rustix::fs::OFlags::CREATE
                | rustix::fs::OFlags::EXCL
                | rustix::fs::OFlags::NOFOLLOW
                | rustix::fs::OFlags::CLOEXEC;
            let mode = rustix::fs::Mode::from_raw_mode(st.st_mode & 0o777);
            let to = rustix::fs::openat(kept_dir, kept_name, create, mode)?;
            std::io::copy(&mut std::fs::File::from(from), &mut std::fs::File::from(to))?;
            Ok(())
        })();
        match copied {
            Ok(()) => {
                self.budget -= size;
                Before::Kept(kept.to_path_buf())
            }
            Err(error) => Before::NotKept(format!("cannot keep it: {error}")),
        }
    }

    /// Puts `kept` (moved out by [`Record::keep`]) back as `name` in `parent`, when the change
    /// that was to replace it could not be made.
    pub(crate) fn put_back(
        &self,
        kept: &Path,
        parent: &OwnedFd,
        name: &OsStr,
    ) -> std::io::Result<()> {
        let kept = self.dir.join(kept);
        let (Some(kept_parent), Some(kept_name)) = (kept.parent(), kept.file_name()) else {
            return Err(std::io::Error::other("no such kept path"));
        };
        let dir = crate::aside::open_dir(None, kept_parent.as_os_str())
            .ok_or_else(|| std::io::Error::other("the kept path cannot be opened"))?;
        Ok(rustix::fs::renameat(&dir, kept_name, parent, name)?)
    }

    /// Records one change (best effort: a record that cannot be written leaves that change
    /// out of `cordon diff` and `cordon undo`, never the apply undone).
    pub(crate) fn note(&mut self, path: PathBuf, before: Before, after: Option<Stamp>) {
        let Some(file) = &mut self.file else { return };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or((0, 0), |d| {
                (i64::try_from(d.as_secs()).unwrap_or(0), i64::from(d.subsec_nanos()))
            });
        let change = AppliedChange { path, before, after, at: now };
        if let Ok(mut line) = serde_json::to_vec(&change) {
            line.push(b'\n');
            let _ = file.write_all(&line);
        }
    }
}

/// The changes recorded in the run directory `dir`, in the order they were made (a line that
/// does not parse — the last one of an apply stopped while writing it — is left out).
pub fn read_applied(dir: &Path) -> Vec<AppliedChange> {
    let Ok(text) = std::fs::read(dir.join(APPLIED_RECORD)) else { return Vec::new() };
    text.split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect()
}
