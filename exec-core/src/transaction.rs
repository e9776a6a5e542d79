//! Transactional runs: a sandboxed command writes its writable roots through write layers, and
//! its changes reach them when it is over, through the write gate
//! (`cordon_sandbox_linux::apply_layers`), which holds back what would run code later. Its
//! `/tmp` and `$TMPDIR` are layers of the workspace's own that are never applied.
//!
//! Each run has a directory `$CORDON_HOME/runs/ID` (cordon's own state, never writable from a
//! sandbox) with:
//!
//! ```text
//! lock      held (flock) by the cordon that owns the run, for as long as it does
//! state     `running` while the command runs, `applying` from the moment the apply starts
//! I/…       the helper's write layers (`I/root`, `I/upper`, `I/work`)
//! held/I/…  what the gate held back, at the path it would have had in root I
//! ```
//!
//! An apply that was stopped (cordon killed in the middle) is finished by the next
//! transactional run that finds the directory unlocked in state `applying`: the upper
//! directories hold exactly what was not applied yet. A run stopped while its command ran is
//! named and kept: its changes were never judged, and nothing of a half-run command is applied
//! without the user.
//!
//! A run that kept anything (held changes, or a stopped command's layers) moves to
//! `$CORDON_HOME/kept/ID`, so that `runs/` holds only runs in flight and what each launch looks
//! at there does not grow with the history; kept runs are removed after
//! [`KEPT_FOR`] (time-bounded, at a run's start).

#[cfg(target_os = "linux")]
use std::io::Write;
#[cfg(target_os = "linux")]
use std::os::unix::fs::DirBuilderExt;
#[cfg(target_os = "linux")]
use std::path::Path;
use std::path::PathBuf;

/// How a sandboxed command writes its writable roots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteMode {
    /// Into the roots, as it runs.
    #[default]
    Direct,
    /// Into a write layer, applied through the write gate when the command is over.
    Transaction,
}

/// A change the gate kept from the roots, as reported.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HeldBack {
    #[serde(serialize_with = "crate::lossy::lossy_path")]
    pub path: PathBuf,
    /// Why, in words.
    pub why: String,
    /// Where it is kept.
    #[serde(serialize_with = "crate::lossy::lossy_path")]
    pub kept_at: PathBuf,
}

pub use cordon_policies::WriteChoice;

impl WriteMode {
    /// Whether writes go straight to the roots.
    pub fn is_direct(&self) -> bool {
        *self == WriteMode::Direct
    }
}

impl std::fmt::Display for HeldBack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.path.display(), self.why)
    }
}

/// How many held-back changes a warning names (the JSON report has them all).
const HELD_SHOWN: usize = 20;

/// The warning for what the write gate held back (paths as given; the caller escapes what
/// reaches a terminal): the first few, each cut to a line's worth, how many more, and where
/// they are kept.
pub fn held_back_warning(held: &[HeldBack]) -> String {
    let mut shown: Vec<String> = held
        .iter()
        .take(HELD_SHOWN)
        .map(|change| cordon_policies::abbreviate(&change.to_string(), 400).text)
        .collect();
    if held.len() > HELD_SHOWN {
        shown.push(format!("and {} more", held.len() - HELD_SHOWN));
    }
    // `…/kept/ID/held/I/PATH`: the run's `held` directory.
    let kept = held.first().and_then(|change| {
        change.kept_at.ancestors().find(|dir| dir.file_name().is_some_and(|name| name == "held"))
    });
    let kept = kept.map_or(String::new(), |dir| format!(" (kept in {})", dir.display()));
    format!(
        "held back what would run code outside the sandbox later, or changed outside it during \
         the run; the rest of the command's changes were applied{kept}: {}",
        shown.join("; ")
    )
}

/// Why a transaction could not start.
#[derive(Debug, thiserror::Error)]
pub enum TransactionError {
    #[error("transactional writes keep their state in CORDON_HOME, and none is set")]
    NoCordonHome,
    #[error("cannot make the run's directory {}: {error}", .path.display())]
    RunDirectory { path: PathBuf, error: std::io::Error },
}

/// One transactional run, from before its launch to its apply.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub(crate) struct Transaction {
    dir: PathBuf,
    /// Held for the life of the run: another cordon finishing interrupted applies leaves
    /// this one alone.
    _lock: nix::fcntl::Flock<std::fs::File>,
    started: (i64, i64),
    /// What finishing stopped runs' applies held back, said with this run's.
    earlier: Vec<HeldBack>,
    /// The workspace's temporary directories' state, held for the life of the run.
    temporary: Option<nix::fcntl::Flock<std::fs::File>>,
}

/// What becomes of a run's directory that keeps nothing once its changes are applied.
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leftover {
    /// Removed before the apply returns.
    Removed,
    /// Renamed into the trash, for a later run to empty while its command runs: on a file
    /// system that discards freed blocks as it goes, each of the dozen directory removals a
    /// run leaves costs a synchronous discard.
    Trashed,
}

/// The directory that holds every run's directory.
#[cfg(target_os = "linux")]
pub(crate) fn runs_dir(cordon_home: &Path) -> PathBuf {
    cordon_home.join("runs")
}

/// How long a run that kept something is kept for the user to look at.
#[cfg(target_os = "linux")]
pub const KEPT_FOR: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// Where runs that kept something go: beside `runs/`, on the same file system.
#[cfg(target_os = "linux")]
fn kept_dir(runs: &Path) -> PathBuf {
    runs.with_file_name("kept")
}

#[cfg(target_os = "linux")]
impl Transaction {
    /// Makes the run's directory under `cordon_home`, after finishing any apply another
    /// cordon left half-done there (judged with `context`).
    pub(crate) fn begin(
        cordon_home: Option<&Path>,
        context: &cordon_sandbox_linux::ApplyContext,
        retention: UndoRetention,
    ) -> Result<Transaction, TransactionError> {
        let home = cordon_home.ok_or(TransactionError::NoCordonHome)?;
        let runs = runs_dir(home);
        fn fail(path: &Path) -> impl FnOnce(std::io::Error) -> TransactionError + '_ {
            move |error| TransactionError::RunDirectory { path: path.into(), error }
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&runs)
            .map_err(fail(&runs))?;
        // The rest of the run state, made now so that the sandbox's view hides each (one made
        // later, while a command runs, would show as a name).
        for state in ["kept", "temporary", "trash"] {
            let dir = home.join(state);
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&dir)
                .or_else(|error| match error.kind() {
                    std::io::ErrorKind::AlreadyExists => Ok(()),
                    _ => Err(error),
                })
                .map_err(fail(&dir))?;
        }
        let earlier = finish_interrupted(&runs, context);
        prune_kept(&kept_dir(&runs), retention);
        let id = format!(
            "{}-{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
            std::process::id()
        );
        let dir = runs.join(id);
        std::fs::DirBuilder::new().mode(0o700).create(&dir).map_err(fail(&dir))?;
        let lock = std::fs::File::create(dir.join("lock")).map_err(fail(&dir))?;
        let lock = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusiveNonblock)
            .map_err(|(_, errno)| TransactionError::RunDirectory {
                path: dir.clone(),
                error: errno.into(),
            })?;
        // Not synced: a run that ends (or is stopped) while this machine is up finds it in the
        // page cache, and one whose state a crash lost is recognised after the reboot
        // (`finish_interrupted`).
        write_state(&dir, "running").map_err(fail(&dir))?;
        // The file system's own clock, as file change times use it.
        let started = std::fs::metadata(dir.join("state")).map_err(fail(&dir))?;
        use std::os::unix::fs::MetadataExt;
        Ok(Transaction {
            dir,
            _lock: lock,
            started: (started.ctime(), started.ctime_nsec()),
            earlier,
            temporary: None,
        })
    }

    /// The trash the run's directory goes to when it keeps nothing ([`Transaction::apply`]):
    /// the caller empties it while its command runs.
    pub(crate) fn trash(&self) -> PathBuf {
        trash_dir(&self.dir)
    }

    /// Where the command's writes to `/tmp` and `$TMPDIR` are kept (`--temporary-in`): the
    /// workspace's own directory for them, kept across its runs, when no other run of the
    /// workspace holds it; else this run's own, gone with the run. Never the host's.
    ///
    /// `inner` are the paths of writable roots that lie in a temporary root, each with that
    /// root: what an earlier run left in the workspace's `/tmp` on the way to one of them is
    /// removed first, so that the root's own layer is found where it belongs.
    pub(crate) fn temporary_dir(
        &mut self,
        workspace: &crate::workspace::Workspace,
        inner: &[(PathBuf, PathBuf)],
    ) -> PathBuf {
        let shared = workspace.temporary();
        let locked = workspace
            .prepare()
            .and_then(|()| {
                std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&shared)?;
                std::fs::File::create(workspace.temporary_lock())
            })
            .ok()
            .and_then(|file| {
                nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).ok()
            });
        match locked {
            Some(lock) => {
                self.temporary = Some(lock);
                prune_temporary(&shared, &workspace.trash());
                clear_ways_in(&shared, inner, &workspace.trash());
                shared
            }
            None => {
                tracing::warn!(
                    workspace = %workspace.path().display(),
                    "another run of this workspace holds its /tmp: this run's writes there are \
                     its own, and go when it ends"
                );
                self.own_temporary_dir()
            }
        }
    }

    /// Where `/tmp` and `$TMPDIR`'s layers go for a run in the directory `workspace`: the
    /// workspace's own ([`Transaction::temporary_dir`]), or, when it cannot be named (the
    /// directory does not resolve), this run's own.
    pub(crate) fn temporary_dir_for(
        &mut self,
        cordon_home: &Path,
        workspace: &Path,
        inner: &[(PathBuf, PathBuf)],
    ) -> PathBuf {
        match crate::workspace::Workspace::of(workspace, cordon_home) {
            Ok(workspace) => self.temporary_dir(&workspace, inner),
            Err(_) => self.own_temporary_dir(),
        }
    }

    /// This run's own directory for `/tmp` and `$TMPDIR`'s layers, gone with the run: for a
    /// run whose workspace cannot be named (its directory does not resolve), or whose
    /// workspace's directory another run holds.
    fn own_temporary_dir(&self) -> PathBuf {
        let own = self.dir.join("temporary");
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&own);
        own
    }

    /// The descriptors of the run's locks.
    fn descriptors(&self) -> Vec<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        std::iter::once(self._lock.as_raw_fd())
            .chain(self.temporary.as_ref().map(|lock| lock.as_raw_fd()))
            .collect()
    }

    /// Keeps the run's changes unapplied, for a command stopped half-way (its helper was
    /// killed): where they are kept.
    fn keep_unapplied(self) -> PathBuf {
        let _ = set_state(&self.dir, "interrupted");
        let dir = self.dir.clone();
        drop(self);
        keep(&dir)
    }

    /// The directory the helper makes its write layers in (`--writes-to`).
    pub(crate) fn layers_dir(&self) -> &Path {
        &self.dir
    }

    /// Applies the run's changes (its command is over), and says what was held back. A run
    /// that keeps nothing leaves its directory to [`Transaction::trash`].
    pub(crate) fn apply(self, context: cordon_sandbox_linux::ApplyContext) -> Vec<HeldBack> {
        // Nothing written: no journal step, no sync; the run's directory goes to the trash.
        if !cordon_sandbox_linux::layers_hold_changes(&self.dir) {
            let mut held = self.earlier;
            let report = cordon_sandbox_linux::ApplyReport::default();
            held.extend(finish(&self.dir, report, Leftover::Trashed));
            return held;
        }
        let context = cordon_sandbox_linux::ApplyContext { started: self.started, ..context };
        if set_state(&self.dir, "applying").is_err() {
            tracing::warn!(dir = %self.dir.display(), "cannot record the apply's start");
        }
        let report = cordon_sandbox_linux::apply_layers(&self.dir, &context);
        tracing::debug!(
            applied = report.applied,
            held = report.held.len(),
            "applied the write layers"
        );
        let mut held = self.earlier;
        held.extend(finish(&self.dir, report, Leftover::Trashed));
        held
    }
}

/// The helper personality's run state for a transaction of its own: runs like `cordon
/// exec`'s, kept for `cordon diff`, `undo` and `held` alike (undo retention at its default: the
/// helper reads no configuration).
#[cfg(target_os = "linux")]
struct HelperTransactions;

/// How the helper keeps a transaction of its own, wherever it runs (exec'd, or in this
/// process).
#[cfg(target_os = "linux")]
pub(crate) fn helper_transactions() -> cordon_sandbox_linux::TransactionHooks {
    static TRANSACTIONS: HelperTransactions = HelperTransactions;
    cordon_sandbox_linux::TransactionHooks(&TRANSACTIONS)
}

#[cfg(target_os = "linux")]
impl cordon_sandbox_linux::Transactions for HelperTransactions {
    fn runs_dir(&self, cordon_home: &Path) -> PathBuf {
        runs_dir(cordon_home)
    }

    fn begin(
        &self,
        start: &cordon_sandbox_linux::TransactionStart<'_>,
    ) -> Result<Box<dyn cordon_sandbox_linux::OpenTransaction>, cordon_sandbox_linux::BeginError>
    {
        let home = start.cordon_home;
        let mut run = Transaction::begin(Some(home), start.context, UndoRetention::default())
            .map_err(|error| cordon_sandbox_linux::BeginError(Box::new(error)))?;
        let temporary = run.temporary_dir_for(home, start.workspace, start.inner);
        // The applier waits while the command runs: the trash is emptied then.
        let trash = run.trash();
        Ok(Box::new(HelperRun { run, temporary, trash }))
    }
}

/// A run the helper personality began.
#[cfg(target_os = "linux")]
struct HelperRun {
    run: Transaction,
    temporary: PathBuf,
    trash: PathBuf,
}

#[cfg(target_os = "linux")]
impl cordon_sandbox_linux::OpenTransaction for HelperRun {
    fn layers_dir(&self) -> &Path {
        self.run.layers_dir()
    }

    fn temporary_in(&self) -> Option<&Path> {
        Some(&self.temporary)
    }

    fn descriptors(&self) -> Vec<std::os::fd::RawFd> {
        self.run.descriptors()
    }

    fn tidy_while_it_runs(&self, over: &dyn Fn() -> bool) {
        crate::upkeep::empty_trash_until(&self.trash, over);
    }

    fn apply(self: Box<Self>, context: cordon_sandbox_linux::ApplyContext) -> Option<String> {
        let held = self.run.apply(context);
        (!held.is_empty()).then(|| held_back_warning(&held))
    }

    fn keep_unapplied(self: Box<Self>) -> Option<String> {
        let kept = self.run.keep_unapplied();
        Some(format!(
            "the sandboxed command was stopped before it finished (its helper was killed): none \
             of its changes were applied; what it wrote is kept, never judged, in {}/I/upper \
             (I/root names the root each belongs to; `cordon held` lists the run as \
             interrupted, `cordon held {} --drop` removes it)",
            kept.display(),
            kept.file_name().unwrap_or_default().to_string_lossy()
        ))
    }
}

#[cfg(target_os = "linux")]
/// What an apply left: its held changes (and failures, which stay where they are) as reported;
/// the run's directory goes when nothing of it is left to look at.
fn finish(
    dir: &Path,
    report: cordon_sandbox_linux::ApplyReport,
    leftover: Leftover,
) -> Vec<HeldBack> {
    let mut held: Vec<HeldBack> = report
        .held
        .into_iter()
        .map(|change| HeldBack {
            path: change.path,
            why: change.why.to_string(),
            kept_at: change.kept_at,
        })
        .collect();
    held.extend(report.failed.into_iter().map(|(path, error)| HeldBack {
        why: format!("could not be applied: {error}"),
        kept_at: dir.to_path_buf(),
        path,
    }));
    // What an earlier, stopped apply of the same run held is kept too.
    let applied = std::fs::metadata(dir.join(cordon_sandbox_linux::APPLIED_RECORD))
        .is_ok_and(|meta| meta.len() > 0);
    if held.is_empty() && !dir.join("held").exists() && applied {
        // Nothing held, something applied: kept for `cordon diff` and `cordon undo`.
        let _ = set_state(dir, UNDOABLE);
        keep(dir);
        held
    } else if held.is_empty() && !dir.join("held").exists() {
        // Through descriptors, with each directory's rights given back first: the overlay's
        // work directory is left mode 0, and the command may have closed directories it made.
        let trashed = match leftover {
            Leftover::Trashed => crate::upkeep::move_aside(dir, &trash_dir(dir)).is_ok(),
            Leftover::Removed => false,
        };
        if !trashed && let Err(error) = crate::upkeep::remove_tree(dir) {
            tracing::warn!(dir = %dir.display(), %error, "cannot remove the run's directory");
        }
        held
    } else {
        let _ = set_state(dir, "held");
        let kept = keep(dir);
        let held: Vec<HeldBack> = held
            .into_iter()
            .map(|change| HeldBack {
                kept_at: match change.kept_at.strip_prefix(dir) {
                    Ok(rest) => kept.join(rest),
                    Err(_) => change.kept_at,
                },
                ..change
            })
            .collect();
        let changes: Vec<crate::kept::KeptChange> = held
            .iter()
            .map(|change| crate::kept::KeptChange {
                path: change.path.clone(),
                why: change.why.clone(),
                kept_at: change.kept_at.clone(),
                contents: Vec::new(),
            })
            .collect();
        crate::kept::record(&kept, &changes);
        held
    }
}

/// The trash beside `runs/` that holds the run directory `dir`.
#[cfg(target_os = "linux")]
fn trash_dir(dir: &Path) -> PathBuf {
    dir.parent().unwrap_or(dir).with_file_name("trash")
}

/// Moves a run that kept something out of `runs/` (see the module docs); where it is now.
#[cfg(target_os = "linux")]
fn keep(dir: &Path) -> PathBuf {
    let (Some(runs), Some(name)) = (dir.parent(), dir.file_name()) else { return dir.into() };
    let kept = kept_dir(runs);
    let made = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&kept);
    let target = kept.join(name);
    match made.and_then(|()| std::fs::rename(dir, &target)) {
        Ok(()) => target,
        Err(error) => {
            tracing::warn!(dir = %dir.display(), %error, "cannot move the kept run aside");
            dir.into()
        }
    }
}

/// How often pruning looks: what it lists grows with what was kept, and a launch should not.
#[cfg(target_os = "linux")]
const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

/// Whether `dir` was last pruned longer than [`PRUNE_EVERY`] ago (by the modification time of its
/// `.pruned` stamp); if so, stamps it now.
#[cfg(target_os = "linux")]
fn prune_due(dir: &Path) -> bool {
    let stamp = dir.join(".pruned");
    let recent = std::fs::metadata(&stamp)
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|modified| modified.elapsed().ok())
        .is_some_and(|age| age < PRUNE_EVERY);
    if recent {
        return false;
    }
    let _ = std::fs::remove_file(&stamp);
    std::fs::File::create(&stamp).is_ok()
}

/// The state of a kept run that held nothing back and applied something: kept so that it can
/// be looked at (`cordon diff`) and undone (`cordon undo`), as long as [`UndoRetention`] says.
#[cfg(target_os = "linux")]
pub const UNDOABLE: &str = "applied";

/// How long, and how many, runs that only applied changes stay undoable (config `[undo]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UndoRetention {
    /// Days a run stays undoable.
    #[serde(default = "UndoRetention::default_days")]
    pub days: u32,
    /// How many runs stay undoable (the newest).
    #[serde(default = "UndoRetention::default_runs")]
    pub runs: u32,
}

impl UndoRetention {
    fn default_days() -> u32 {
        7
    }

    fn default_runs() -> u32 {
        50
    }
}

impl Default for UndoRetention {
    fn default() -> Self {
        UndoRetention { days: Self::default_days(), runs: Self::default_runs() }
    }
}

/// How much the runs kept only to be undone may hold together (what they replaced): past it,
/// the oldest go.
#[cfg(target_os = "linux")]
const UNDO_SIZE: u64 = 2 * 1024 * 1024 * 1024;

/// Removes kept runs older than [`KEPT_FOR`], and runs that only applied changes past what
/// `retention` keeps or past [`UNDO_SIZE`], spending at most a second, at most hourly.
#[cfg(target_os = "linux")]
fn prune_kept(kept: &Path, retention: UndoRetention) {
    let undo_for = std::time::Duration::from_secs(u64::from(retention.days) * 24 * 3600);
    if !kept.is_dir() || !prune_due(kept) {
        return;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    let trash = kept.with_file_name("trash");
    let mut undoable: Vec<(std::ffi::OsString, bool)> = std::fs::read_dir(kept)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|entry| {
            std::fs::read_to_string(entry.path().join("state"))
                .is_ok_and(|state| state.trim() == UNDOABLE)
        })
        .map(|entry| {
            let old = entry
                .metadata()
                .and_then(|meta| meta.modified())
                .ok()
                .and_then(|modified| modified.elapsed().ok())
                .is_some_and(|age| age > undo_for);
            (entry.file_name(), old)
        })
        .collect();
    // Run ids begin with their start time: the newest sort last.
    undoable.sort();
    let keep = usize::try_from(retention.runs).unwrap_or(usize::MAX);
    let surplus = undoable.len().saturating_sub(keep);
    // Newest first, while what they keep fits: the older ones go.
    let mut kept_bytes: u64 = 0;
    for (i, (name, old)) in undoable.iter().enumerate().rev() {
        let dir = kept.join(name);
        // A run too large to measure in the time left counts as past the size: what older runs
        // keep for undo is given up rather than the disk (past the deadline a run is only moved
        // into the trash, which later runs empty).
        let over = (i < surplus || *old) || {
            let size = crate::upkeep::disk_usage(&dir, deadline).unwrap_or(u64::MAX);
            kept_bytes = kept_bytes.saturating_add(size);
            kept_bytes > UNDO_SIZE
        };
        if over {
            let _ = crate::upkeep::remove_or_move_aside(&dir, &trash, deadline);
        }
    }
    let removed = crate::upkeep::remove_older_than(kept, KEPT_FOR, &trash, deadline);
    if removed > 0 {
        tracing::debug!(removed, "removed runs kept longer than their time");
    }
    // One pass: this is on the launch's path, and the run empties the trash beside its command.
    let _ = crate::upkeep::empty_trash_once(&trash, deadline);
}

/// How long what a command left in its workspace's `/tmp` is kept unchanged.
#[cfg(target_os = "linux")]
const TEMPORARY_AGE: std::time::Duration = std::time::Duration::from_secs(10 * 24 * 3600);

/// Removes from each upper directory of `temporary` what has not changed for
/// [`TEMPORARY_AGE`], then the least recently changed entries while they hold more than
/// [`TEMPORARY_SIZE`], spending at most a second (the rest waits for the next run), at most
/// hourly.
#[cfg(target_os = "linux")]
fn prune_temporary(temporary: &Path, trash: &Path) {
    if !prune_due(temporary) {
        return;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    let Ok(entries) = std::fs::read_dir(temporary) else { return };
    let uppers: Vec<PathBuf> =
        entries.filter_map(Result::ok).map(|entry| entry.path().join("upper")).collect();
    for upper in &uppers {
        let removed = crate::upkeep::remove_older_than(upper, TEMPORARY_AGE, trash, deadline);
        if removed > 0 {
            tracing::debug!(upper = %upper.display(), removed, "pruned the workspace's /tmp");
        }
    }
    prune_by_size(&uppers, TEMPORARY_SIZE, trash, deadline);
}

/// Removes the least recently changed top entries of `uppers` while they take more than `cap`
/// together (nothing when they cannot all be measured by `deadline`).
#[cfg(target_os = "linux")]
fn prune_by_size(uppers: &[PathBuf], cap: u64, trash: &Path, deadline: std::time::Instant) {
    let mut sized: Vec<(std::time::SystemTime, u64, PathBuf)> = Vec::new();
    for upper in uppers {
        for entry in std::fs::read_dir(upper).into_iter().flatten().filter_map(Result::ok) {
            let changed = entry.metadata().and_then(|meta| meta.modified());
            let Some(size) = crate::upkeep::disk_usage(&entry.path(), deadline) else {
                // Out of time: the size is looked at again at the next pruning.
                return;
            };
            sized.push((changed.unwrap_or(std::time::UNIX_EPOCH), size, entry.path()));
        }
    }
    let mut total: u64 = sized.iter().map(|(_, size, _)| size).sum();
    sized.sort();
    for (_, size, path) in sized {
        if total <= cap {
            break;
        }
        if crate::upkeep::remove_or_move_aside(&path, trash, deadline).is_ok() {
            total = total.saturating_sub(size);
            tracing::debug!(path = %path.display(), "pruned the workspace's /tmp for size");
        }
    }
}

/// How much a workspace's `/tmp` and `$TMPDIR` may hold together before the least recently
/// changed entries go.
#[cfg(target_os = "linux")]
const TEMPORARY_SIZE: u64 = 2 * 1024 * 1024 * 1024;

/// Removes from the workspace's `/tmp` layers what lies on the way to a root inside them: the
/// first name below the temporary root on the way to each (its subtree is the command's own
/// scratch; the root itself is mounted over it).
#[cfg(target_os = "linux")]
fn clear_ways_in(temporary: &Path, inner: &[(PathBuf, PathBuf)], trash: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    for (root, path) in inner {
        let Some(first) = path.strip_prefix(root).ok().and_then(|rest| rest.iter().next()) else {
            continue;
        };
        let entry = cordon_sandbox_linux::write_layer::kept_upper(temporary, root).join(first);
        if std::fs::symlink_metadata(&entry).is_ok()
            && let Err(error) = crate::upkeep::remove_or_move_aside(&entry, trash, deadline)
        {
            tracing::warn!(path = %entry.display(), %error, "cannot clear the way to a root");
        }
    }
}

/// Writes the run's state, replacing it whole, and waits until it is on disk.
#[cfg(target_os = "linux")]
fn set_state(dir: &Path, state: &str) -> std::io::Result<()> {
    let temporary = dir.join("state.new");
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(state.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&temporary, dir.join("state"))
}

/// Writes the run's state without waiting for the disk: after a crash it may be missing.
#[cfg(target_os = "linux")]
fn write_state(dir: &Path, state: &str) -> std::io::Result<()> {
    std::fs::write(dir.join("state"), state)
}

/// Whether the run in `dir` began before this machine last booted (its lock file is older):
/// its cordon cannot be running any more. Unknown counts as no.
#[cfg(target_os = "linux")]
fn began_before_boot(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(stat) = std::fs::read_to_string("/proc/stat") else { return false };
    let boot = stat
        .lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|secs| secs.trim().parse::<i64>().ok());
    let began = std::fs::metadata(dir.join("lock")).map(|meta| meta.mtime());
    matches!((boot, began), (Some(boot), Ok(began)) if began < boot)
}

#[cfg(target_os = "linux")]
/// Finishes the applies other cordons left half-done in `runs` (their lock is free and their
/// state `applying`), and names runs stopped while their command ran.
fn finish_interrupted(runs: &Path, context: &cordon_sandbox_linux::ApplyContext) -> Vec<HeldBack> {
    let mut earlier = Vec::new();
    let Ok(entries) = std::fs::read_dir(runs) else { return earlier };
    for entry in entries.filter_map(Result::ok) {
        let dir = entry.path();
        let state = match std::fs::read_to_string(dir.join("state")) {
            Ok(state) if !state.is_empty() => state,
            // "running" is not synced when it is written: a crash may have lost it (or left it
            // empty). A run from before the boot was stopped while its command ran; one from
            // this boot without a state is still being begun by its cordon.
            _ if began_before_boot(&dir) => "running".to_owned(),
            _ => continue,
        };
        if state != "applying" && state != "running" {
            continue;
        }
        let Ok(lock) = std::fs::File::open(dir.join("lock")) else { continue };
        let Ok(held) = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusiveNonblock)
        else {
            // Its cordon is still at work.
            continue;
        };
        if state == "running" {
            let _ = set_state(&dir, "interrupted");
            drop(held);
            let kept = keep(&dir);
            tracing::warn!(
                dir = %kept.display(),
                "a transactional run was stopped while its command ran; its changes were never \
                 applied and are kept there"
            );
            continue;
        }
        tracing::warn!(dir = %dir.display(), "finishing the apply of a stopped transactional run");
        use std::os::unix::fs::MetadataExt;
        let started = std::fs::metadata(dir.join("lock"))
            .map_or((0, 0), |meta| (meta.ctime(), meta.ctime_nsec()));
        let context = cordon_sandbox_linux::ApplyContext { started, ..context.clone() };
        let report = cordon_sandbox_linux::apply_layers(&dir, &context);
        earlier.extend(finish(&dir, report, Leftover::Removed).into_iter().map(|change| {
            HeldBack {
                why: format!(
                    "{}, in a stopped earlier run whose apply this one finished",
                    change.why
                ),
                ..change
            }
        }));
        drop(held);
    }
    earlier
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_run_whose_unsynced_state_a_crash_lost_is_kept_as_interrupted_and_a_new_one_is_left() {
        let home = tempfile::tempdir().unwrap();
        let runs = home.path().join("runs");
        let (crashed, beginning) = (runs.join("1-1"), runs.join("2-2"));
        for dir in [&crashed, &beginning] {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("lock"), "").unwrap();
        }
        // Before any boot: 1970. The other is being begun right now, its state not written yet.
        let lock = std::fs::File::options().write(true).open(crashed.join("lock")).unwrap();
        lock.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(60)).unwrap();
        std::fs::write(crashed.join("state"), "").unwrap();
        assert!(began_before_boot(&crashed));
        assert!(!began_before_boot(&beginning));
        let earlier = finish_interrupted(&runs, &cordon_sandbox_linux::ApplyContext::default());
        assert!(earlier.is_empty());
        let kept = kept_dir(&runs).join("1-1");
        assert_eq!(std::fs::read_to_string(kept.join("state")).unwrap(), "interrupted");
        assert!(beginning.is_dir(), "a run being begun is left to its cordon");
    }

    #[test]
    fn a_workspaces_tmp_past_its_size_loses_its_least_recently_changed_entries_first() {
        let dir = tempfile::tempdir().unwrap();
        let upper = dir.path().join("t/upper");
        std::fs::create_dir_all(upper.join("old-tree/sub")).unwrap();
        std::fs::write(upper.join("old-tree/sub/big"), vec![1u8; 64 * 1024]).unwrap();
        std::fs::write(upper.join("middle"), vec![1u8; 64 * 1024]).unwrap();
        std::fs::write(upper.join("newest"), vec![1u8; 64 * 1024]).unwrap();
        let at = |name: &str, secs: u64| {
            let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
            let file = std::fs::File::open(upper.join(name)).unwrap();
            file.set_modified(time).unwrap();
        };
        at("old-tree", 1_000);
        at("middle", 2_000);
        at("newest", 3_000);
        let trash = dir.path().join("trash");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        // Room for about two of the three.
        prune_by_size(std::slice::from_ref(&upper), 150 * 1024, &trash, deadline);
        let mut left: Vec<String> = std::fs::read_dir(&upper)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, vec!["middle", "newest"]);
        // Under the cap, nothing goes.
        prune_by_size(std::slice::from_ref(&upper), 1024 * 1024, &trash, deadline);
        assert_eq!(std::fs::read_dir(&upper).unwrap().count(), 2);
    }
}
