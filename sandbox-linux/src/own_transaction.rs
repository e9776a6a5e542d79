//! A transaction of the helper's own, for a caller that runs the helper directly and asks for
//! one (`--writes transaction|auto`, or the request's `writes`) instead of making write layers
//! itself (`--writes-to`).
//!
//! The run's state — its directory in `$CORDON_HOME`, the lock, the journal, what is kept for
//! review and undo — belongs to the front end, which hands the helper its way of keeping it
//! ([`Transactions`]). The helper adds the one process that applies: the applier, forked before
//! anything is unshared or confined, so that it sees the roots as the host has them (the
//! helper itself then lives in a mount view where each root is the command's overlay), in a
//! session of its own, so that a caller killing the helper's process group (a harness's
//! timeout) does not take it down. It applies once the command is over; a helper killed while
//! the command ran leaves a run whose changes were never judged, which it keeps, unapplied,
//! for the user.

use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

use crate::apply::ApplyContext;

/// How the front end keeps a transactional run's state.
pub trait Transactions {
    /// Where runs' directories go under `cordon_home` (their write layers with them).
    fn runs_dir(&self, cordon_home: &Path) -> PathBuf;
    /// Makes a run's state (after finishing what stopped runs left), with the write layers'
    /// directory and the workspace's own for `/tmp` and `$TMPDIR`.
    fn begin(&self, start: &TransactionStart<'_>) -> Result<Box<dyn OpenTransaction>, BeginError>;
}

/// What a run's state is made for.
#[derive(Debug)]
pub struct TransactionStart<'a> {
    pub cordon_home: &'a Path,
    /// The directory the policy is resolved against: the workspace.
    pub workspace: &'a Path,
    /// What the gate needs besides the changes, for the stopped runs' applies.
    pub context: &'a ApplyContext,
    /// Writable roots inside `/tmp` or `$TMPDIR`, each with that directory.
    pub inner: &'a [(PathBuf, PathBuf)],
}

/// One run's state, from before its launch to its apply.
pub trait OpenTransaction {
    /// Where the write layers go (`--writes-to`).
    fn layers_dir(&self) -> &Path;
    /// Where `/tmp` and `$TMPDIR`'s layers go (`--temporary-in`).
    fn temporary_in(&self) -> Option<&Path>;
    /// The descriptors the state holds (its locks): kept open by the applier.
    fn descriptors(&self) -> Vec<RawFd>;
    /// Upkeep of the caller's state that can be done while the command runs, never this run's
    /// own (earlier runs' directories left to be removed): it stops as soon as `over` says
    /// the command is.
    fn tidy_while_it_runs(&self, over: &dyn Fn() -> bool);
    /// Applies the run's changes (its command is over); what to tell the user, if anything.
    fn apply(self: Box<Self>, context: ApplyContext) -> Option<String>;
    /// Keeps the run's changes unapplied (its command was stopped half-way); what to tell.
    fn keep_unapplied(self: Box<Self>) -> Option<String>;
}

/// The front end could not make a run's state.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct BeginError(pub Box<dyn std::error::Error + Send + Sync>);

/// The front end's [`Transactions`], as a field of the helper's arguments.
#[derive(Clone, Copy)]
pub struct TransactionHooks(pub &'static (dyn Transactions + Sync));

impl std::fmt::Debug for TransactionHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TransactionHooks")
    }
}

impl PartialEq for TransactionHooks {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::addr_eq(self.0, other.0)
    }
}

impl Eq for TransactionHooks {}

/// What the gate needs of a policy besides its changes: the user's home (its start-up files,
/// its git configuration's includes), the names the policy protects at the top of each root,
/// and the roots written directly (`/tmp`, `$TMPDIR`, a preset's caches), where a link or
/// pointer would lead to what the gate never saw.
pub fn apply_context(
    policy: &cordon_policies::SandboxPolicy,
    env: &cordon_policies::EnvSnapshot,
) -> ApplyContext {
    let protected_names = policy
        .protected_paths()
        .into_iter()
        .filter(|name| {
            let path = Path::new(name.as_str());
            !path.is_absolute() && path.components().count() == 1
        })
        .map(std::ffi::OsString::from)
        .collect();
    let caches = env.cordon_home.as_deref().map(|home| home.join("workspaces"));
    let mut direct_roots = temporary_dirs(env);
    direct_roots.extend(caches.and_then(|dir| std::fs::canonicalize(dir).ok()));
    ApplyContext {
        home: env.home.as_deref().and_then(|home| std::fs::canonicalize(home).ok()),
        protected_names,
        started: (0, 0),
        direct_roots,
    }
}

/// `/tmp` and `$TMPDIR` as `env` names them, canonical (those that resolve).
pub fn temporary_dirs(env: &cordon_policies::EnvSnapshot) -> Vec<PathBuf> {
    [Some(Path::new("/tmp")), env.tmpdir.as_deref()]
        .into_iter()
        .flatten()
        .filter_map(|dir| std::fs::canonicalize(dir).ok())
        .collect()
}

/// The writable roots (`roots`, canonical) that lie inside `/tmp` or `$TMPDIR` where those are
/// roots too and not named by the policy itself (`named`), each with that directory: the
/// workspace's own `/tmp` must leave the way to them clear.
pub fn roots_in_temporary(
    roots: &[PathBuf],
    named: &[PathBuf],
    env: &cordon_policies::EnvSnapshot,
) -> Vec<(PathBuf, PathBuf)> {
    let temporary: Vec<PathBuf> = temporary_dirs(env)
        .into_iter()
        .filter(|dir| roots.contains(dir) && !named.contains(dir))
        .collect();
    roots
        .iter()
        .filter_map(|root| {
            let outer = temporary.iter().find(|dir| root.starts_with(dir) && root != *dir)?;
            Some((outer.clone(), root.clone()))
        })
        .collect()
}
