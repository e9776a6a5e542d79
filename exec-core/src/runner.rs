//! Where an attempt runs: [`Runner`] is the one step of the orchestrator's flow that differs
//! between this machine ([`LocalRunner`]: plan the launch, start the network proxy, spawn) and
//! another one ([`crate::remote`]: send the resolved form over ssh). Decisions, approvals and
//! classification stay in the orchestrator either way.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use crate::capture::HeadTail;
use crate::classify::ExitKind;
use crate::launch::{HelperSettings, LaunchPlan, SandboxKind, SandboxSetupError, plan_launch};
use crate::network_proxy::{NetworkLog, NetworkProxy, ProxyError};
use crate::request::ExecRequest;
use crate::resolved::ApprovalState;
use crate::spawn::{RunOptions, run_process};

/// Why the orchestrator could not even try.
#[derive(Debug, thiserror::Error)]
pub enum OrchestratorError {
    #[error(transparent)]
    Setup(#[from] SandboxSetupError),
    #[error(transparent)]
    Proxy(#[from] ProxyError),
    #[error("cannot start {program}: {source}")]
    Spawn { program: PathBuf, source: std::io::Error },
    /// Out of descriptors with the git dirs of the writable roots held open for the run.
    #[error(
        "cannot start {program}: too many open files: cordon holds one for each of the \
         {repositories} repositories in the writable roots while the command runs; raise the \
         hard limit of open files (ulimit -Hn) or narrow the writable roots"
    )]
    OpenFiles { program: PathBuf, repositories: usize },
    #[error(transparent)]
    Transaction(#[from] crate::transaction::TransactionError),
}

/// One attempt to run: the request, the sandbox it runs under, and whether a person approved it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AttemptRun<'a> {
    pub request: &'a ExecRequest,
    pub sandbox: SandboxKind,
    pub approval: ApprovalState,
    pub writes: AttemptWrites,
}

/// How an attempt writes its roots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttemptWrites {
    /// As the settings choose.
    AsConfigured,
    /// Directly, whatever they choose (a re-run after a transaction could not rename a
    /// directory).
    Direct,
}

/// What running one attempt gave, before classification.
#[derive(Debug)]
pub(crate) struct RawAttempt {
    pub exit: ExitKind,
    pub duration: Duration,
    pub stdout: HeadTail,
    pub stderr: HeadTail,
    pub network: Option<NetworkLog>,
    /// What the command planted where git would run code from later, moved aside.
    pub moved_aside: Vec<MovedAside>,
    /// Directories the search after the run for repositories the command created did not reach.
    pub not_searched: Vec<PathBuf>,
    /// How the command wrote its roots.
    pub writes: crate::transaction::WriteMode,
    /// Why the roots were written directly where write layers were wanted where available.
    pub writes_direct_because: Option<String>,
    /// What the write gate kept from the roots (transactional writes).
    pub held_back: Vec<crate::transaction::HeldBack>,
}

/// A file or directory a sandboxed command created where git would later read code or a
/// redirection from (a new `commondir`, `hooks/`, `config.worktree`, `exec` lines in a paused
/// rebase), and where cordon moved it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MovedAside {
    #[serde(serialize_with = "crate::lossy::lossy_path")]
    pub path: PathBuf,
    /// `None` when it could not be moved (it is still in place).
    #[serde(serialize_with = "crate::lossy::lossy_optional_path")]
    pub to: Option<PathBuf>,
}

/// One entry of the line that reports what was moved: `PATH (now ASIDE)`.
impl std::fmt::Display for MovedAside {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.to {
            Some(to) => write!(f, "{} (now {})", self.path.display(), to.display()),
            None => write!(f, "{} (could not be moved: remove it)", self.path.display()),
        }
    }
}

/// What [`watch_git_dirs`] watches.
pub(crate) struct WatchOf<'a> {
    pub request: &'a cordon_policies::SandboxRequest,
    pub sandbox: SandboxKind,
    pub helper: &'a HelperSettings,
    /// A long-lived server's index of its roots' repositories: the repositories come from it,
    /// and the check after the run looks at those that changed, instead of two searches.
    #[cfg(target_os = "linux")]
    pub index: Option<std::sync::Arc<cordon_sandbox_linux::RepositoryIndex>>,
}

/// Watches the git dirs of the policy's writable roots for the names a sandbox cannot keep
/// from being created; `None` for an attempt without a sandbox (it could write anything).
pub(crate) fn watch_git_dirs(of: WatchOf<'_>) -> Option<GitWatch> {
    #[cfg(target_os = "linux")]
    let WatchOf { request, sandbox, helper, index } = of;
    #[cfg(not(target_os = "linux"))]
    let WatchOf { request, sandbox, helper } = of;
    #[cfg(target_os = "linux")]
    if sandbox == SandboxKind::Linux {
        let roots = &request
            .policy
            .writable_roots(&request.policy_cwd, &helper.user_view.view(), |p| {
                std::fs::canonicalize(p)
            })
            .ok()?;
        // Only git dirs the command can write: one a pointer names outside the roots (the
        // main repository of a linked worktree, or wherever a planted pointer leads) is left to
        // its owner, whose own changes there during the run must never be moved.
        let indexed = index.and_then(|index| {
            let (walk, mark) = index.walk_for(roots)?;
            Some((walk, index, mark))
        });
        let (walked, search) = match indexed {
            Some((walk, index, mark)) => (walk, Some((index, mark))),
            None => (cordon_sandbox_linux::RepositoryWalk::of(roots), None),
        };
        let walked = std::sync::Arc::new(walked);
        let (git_dirs, outside): (Vec<std::path::PathBuf>, Vec<std::path::PathBuf>) =
            walked.git_dirs().into_iter().partition(|dir| {
                std::fs::canonicalize(dir)
                    .is_ok_and(|dir| roots.iter().any(|root| dir.starts_with(root)))
            });
        // What a shell, git or Python loads from $HOME, where a root contains it.
        let home =
            helper.user_view.home.as_deref().and_then(|home| std::fs::canonicalize(home).ok());
        let start_up: Vec<std::path::PathBuf> = home
            .iter()
            .flat_map(|home| cordon_policies::home_start_up_paths(home))
            .filter(|path| roots.iter().any(|root| path.starts_with(root)))
            .collect();
        // The watch holds each git dir open for the run: where that is a good part of what
        // this process may open, it may open more.
        let held = git_dirs.len() + roots.len();
        if nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .is_ok_and(|(soft, _)| u64::try_from(held.saturating_mul(4)).unwrap_or(u64::MAX) > soft)
        {
            crate::limits::raise_open_file_limit();
        }
        // cordon's own state directory, made now if it is not there yet: the helper makes it
        // before the command runs, and where it lies in a root (`.cordon` at its top) the
        // watch must not take it for the command's.
        if let Some(home) = &helper.user_view.cordon_home {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(home);
        }
        // The protected names of one component in each root (`.codex`, `.envrc`, `.vscode`,
        // …): one that does not exist cannot be bound, so what the command creates there goes
        // after the run; one that does is bound, and moved when the command made it anew after
        // another run's step renamed the bound one away.
        let mut start_up = start_up;
        let mut existing = Vec::new();
        for name in request.policy.protected_paths() {
            let name = std::path::Path::new(&name);
            if name.is_absolute() || name.components().count() != 1 {
                continue;
            }
            for root in roots {
                let path = root.join(name);
                match std::fs::symlink_metadata(&path) {
                    Ok(_) => existing.push(path),
                    Err(_) => start_up.push(path),
                }
            }
        }
        let mut watch = cordon_sandbox_linux::Watch::before(roots, &git_dirs, &start_up);
        watch.watch_replaced(&existing);
        watch.watch_code_paths_of(&outside);
        if let Some((index, mark)) = search {
            watch.search_index(index, mark);
        }
        return Some(GitWatch { watch, walked });
    }
    let _ = (request, sandbox, helper);
    None
}

/// What a sandboxed command could plant in the git dirs of its writable roots, as it was before.
#[derive(Debug)]
pub(crate) struct GitWatch {
    #[cfg(target_os = "linux")]
    watch: cordon_sandbox_linux::Watch,
    /// The walk that found the git dirs, for the helper's mount view.
    #[cfg(target_os = "linux")]
    walked: std::sync::Arc<cordon_sandbox_linux::RepositoryWalk>,
}

impl GitWatch {
    /// The repositories the watch found, for the launch of the same attempt.
    #[cfg(target_os = "linux")]
    pub(crate) fn walked(&self) -> std::sync::Arc<cordon_sandbox_linux::RepositoryWalk> {
        std::sync::Arc::clone(&self.walked)
    }

    /// How many git dirs the watch holds open.
    pub(crate) fn repositories(&self) -> usize {
        #[cfg(target_os = "linux")]
        return self.watch.repositories();
        #[cfg(not(target_os = "linux"))]
        0
    }

    /// Moves aside what was planted since [`watch_git_dirs`].
    #[cfg(target_os = "linux")]
    pub(crate) fn move_aside(&self) -> AfterRun {
        let after = self.watch.move_aside();
        AfterRun {
            moved_aside: after
                .planted
                .into_iter()
                .map(|planted| MovedAside { path: planted.path, to: planted.moved_to })
                .collect(),
            not_searched: after.unsearched,
        }
    }

    /// Nothing to move aside: only the Linux sandbox is watched.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn move_aside(&self) -> AfterRun {
        AfterRun::default()
    }
}

/// What the check after a sandboxed run did.
#[derive(Debug, Default)]
pub(crate) struct AfterRun {
    pub moved_aside: Vec<MovedAside>,
    /// Directories the search for repositories the command created did not reach.
    pub not_searched: Vec<PathBuf>,
}

/// How many characters of a path a warning shows.
const PATH_SHOWN: usize = 200;

/// How many moved-aside paths a warning names (the JSON report has them all).
const MOVED_SHOWN: usize = 20;

/// The warning for what was moved aside after a run (`entries` as [`MovedAside`] shows them;
/// the caller escapes what reaches a terminal): the first few, each cut to a line's worth,
/// and how many more — a command decides how many there are and how long their paths.
pub fn moved_aside_warning(entries: &[impl AsRef<str>]) -> String {
    let mut shown: Vec<String> = entries
        .iter()
        .take(MOVED_SHOWN)
        .map(|entry| cordon_policies::abbreviate(entry.as_ref(), 2 * PATH_SHOWN).text)
        .collect();
    if entries.len() > MOVED_SHOWN {
        shown.push(format!("and {} more", entries.len() - MOVED_SHOWN));
    }
    format!(
        "the command created what git, a shell or another tool would later run code from, \
         outside any sandbox; moved aside: {}",
        shown.join("; ")
    )
}

/// The warning for directories the search after a run did not reach (paths as given; the
/// caller escapes what reaches a terminal).
pub fn not_searched_warning(dirs: &[impl AsRef<std::ffi::OsStr>]) -> String {
    // A path is as long as the command makes it: its middle is not shown past a line's worth.
    let first = dirs.first().map(|dir| {
        let path = std::path::Path::new(dir.as_ref()).display().to_string();
        cordon_policies::abbreviate(&path, PATH_SHOWN).text
    });
    let more = match dirs.len() {
        0 | 1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    format!(
        "not searched after the run for repositories the command created (too many directories \
         or repositories, too deep, or not readable): {}{more}; git run there later may obey a config or hooks the command \
         wrote: look before using git there, or narrow the writable roots",
        first.unwrap_or_default()
    )
}

/// Runs attempts somewhere: on this machine ([`LocalRunner`]) or over a link to another
/// ([`crate::remote`]).
pub(crate) trait Runner {
    type Error: From<OrchestratorError>;
    fn run_attempt(
        &self,
        run: AttemptRun<'_>,
    ) -> impl Future<Output = Result<RawAttempt, Self::Error>>;
}

/// Attempts on this machine: the launch plan, the network proxy, [`run_process`].
pub(crate) struct LocalRunner<'a> {
    pub helper: &'a HelperSettings,
}

impl Runner for LocalRunner<'_> {
    type Error = OrchestratorError;

    async fn run_attempt(&self, run: AttemptRun<'_>) -> Result<RawAttempt, OrchestratorError> {
        let AttemptRun { request, sandbox, approval: _, writes } = run;
        // The proxy lives exactly as long as this attempt.
        let proxy = NetworkProxy::start_for(
            sandbox,
            &request.sandbox.policy,
            None,
            &self.helper.proxy_test_resolve,
        )?;
        // Transactional writes: no search before or after the run; the write gate judges the
        // exact set of changes when the command is over.
        let planned = match writes {
            AttemptWrites::AsConfigured => {
                crate::writes_plan::planned_writes(self.helper, request, sandbox)
            }
            AttemptWrites::Direct => crate::writes_plan::PlannedWrites::Direct,
        };
        #[cfg(target_os = "linux")]
        let transaction = match planned {
            crate::writes_plan::PlannedWrites::Transaction => {
                let context = cordon_sandbox_linux::apply_context(
                    &request.sandbox.policy,
                    &self.helper.user_view,
                );
                let home = self.helper.user_view.cordon_home.as_deref();
                let retention = self.helper.undo;
                let mut begun = crate::transaction::Transaction::begin(home, &context, retention)?;
                let inner = roots_in_temporary(request, self.helper);
                let cwd = &request.sandbox.policy_cwd;
                let temporary = home.map(|home| begun.temporary_dir_for(home, cwd, &inner));
                Some((begun, context, temporary))
            }
            _ => None,
        };
        // This process waits while its command runs: the trash is emptied then, and this
        // run's directory left to it.
        #[cfg(target_os = "linux")]
        let trash = transaction.as_ref().map(|(begun, _, _)| begun.trash());
        #[cfg(not(target_os = "linux"))]
        let trash: Option<std::path::PathBuf> = None;
        #[cfg(target_os = "linux")]
        let watch = match transaction {
            Some(_) => None,
            None => watch_git_dirs(WatchOf {
                request: &request.sandbox,
                sandbox,
                helper: self.helper,
                index: None,
            }),
        };
        #[cfg(not(target_os = "linux"))]
        let watch =
            watch_git_dirs(WatchOf { request: &request.sandbox, sandbox, helper: self.helper });
        let mut launch = request.launch(sandbox);
        launch.proxy = proxy.as_ref().map(NetworkProxy::endpoint);
        #[cfg(target_os = "linux")]
        {
            launch.walked = watch.as_ref().map(GitWatch::walked);
            launch.writes_to = transaction.as_ref().map(|(t, _, _)| t.layers_dir().to_path_buf());
            launch.temporary_in =
                transaction.as_ref().and_then(|(_, _, temporary)| temporary.clone());
        }
        let spec = plan_launch(&launch, self.helper)?;
        log_plan(&spec, self.helper, proxy.is_some());
        let options = RunOptions {
            stdin: request.stdin,
            output: request.output,
            timeout: request.timeout,
            empty_while_running: trash.as_deref(),
        };
        let result = run_process(&spec, &options).await;
        // The command and its overlay are gone: its changes are applied through the gate.
        #[cfg(target_os = "linux")]
        let (writes, held_back) = match transaction {
            Some((transaction, context, _)) => {
                (crate::transaction::WriteMode::Transaction, transaction.apply(context))
            }
            None => (crate::transaction::WriteMode::Direct, Vec::new()),
        };
        #[cfg(not(target_os = "linux"))]
        let (writes, held_back) = (crate::transaction::WriteMode::Direct, Vec::new());
        let AfterRun { moved_aside, not_searched } =
            watch.as_ref().map(GitWatch::move_aside).unwrap_or_default();
        if !moved_aside.is_empty() {
            tracing::debug!(count = moved_aside.len(), "moved aside what the command planted");
        }
        let watched = watch.as_ref().map_or(0, GitWatch::repositories);
        let result = result.map_err(|source| {
            let program = spec.program.clone();
            match source.raw_os_error() {
                Some(libc::EMFILE) if watched > 0 => {
                    OrchestratorError::OpenFiles { program, repositories: watched }
                }
                _ => OrchestratorError::Spawn { program, source },
            }
        })?;
        Ok(RawAttempt {
            exit: result.exit,
            duration: result.duration,
            stdout: result.stdout,
            stderr: result.stderr,
            network: proxy.map(NetworkProxy::finish),
            moved_aside,
            not_searched,
            writes,
            held_back,
            writes_direct_because: match planned {
                crate::writes_plan::PlannedWrites::DirectBecause(why) => Some(why.to_string()),
                _ => None,
            },
        })
    }
}

/// The writable roots of `request` that lie inside `/tmp` or `$TMPDIR` (those that are roots
/// too), each with the temporary root it lies in.
#[cfg(target_os = "linux")]
fn roots_in_temporary(request: &ExecRequest, helper: &HelperSettings) -> Vec<(PathBuf, PathBuf)> {
    let roots = request.writable_roots(&helper.user_view);
    let sandbox = &request.sandbox;
    let named =
        sandbox.policy.named_writable_roots(&sandbox.policy_cwd, |p| std::fs::canonicalize(p));
    cordon_sandbox_linux::roots_in_temporary(&roots, &named, &helper.user_view)
}

/// One debug event for a planned launch: which sandbox, what runs, how the helper may start.
pub(crate) fn log_plan(spec: &LaunchPlan, helper: &HelperSettings, proxy: bool) {
    tracing::debug!(
        sandbox = spec.sandbox.as_str(),
        program = %spec.program.display(),
        helper_launch = ?helper.launch,
        helper_in_child = spec.in_process.is_some(),
        proxy,
        "launch planned"
    );
}
