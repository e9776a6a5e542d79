//! The one launch path: `policy + command line + options → LaunchPlan`, a
//! plain value (printable, testable), and one way to turn a plan into a process per spawner
//! (pipes in [`crate::spawn`], PTYs in [`crate::session`], `exec` for `cordon sandbox`).
//! Nothing else in cordon builds the helper's or `sandbox-exec`'s argv.
//!
//! A leaf module: it depends on no other module of this crate.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::Arc;

use cordon_policies::{
    EnvSnapshot, MountViewRequirement, RunSandbox, SandboxPolicy, SandboxRequest, Strictness,
};
use cordon_sandbox_linux::{HelperArgs, UserView};
use serde::Serialize;

pub use cordon_sandbox_linux::ParentDeath;

/// Which sandbox an attempt ran under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxKind {
    None,
    /// The Linux helper (`codex-linux-sandbox`).
    Linux,
    /// Seatbelt (`/usr/bin/sandbox-exec`).
    Seatbelt,
}

impl SandboxKind {
    /// This platform's sandbox for a policy, or none for `danger-full-access`.
    pub fn for_policy(policy: &SandboxPolicy) -> SandboxKind {
        match policy {
            SandboxPolicy::DangerFullAccess {} => SandboxKind::None,
            SandboxPolicy::ReadOnly { .. } | SandboxPolicy::WorkspaceWrite(_) => {
                if cfg!(target_os = "macos") { SandboxKind::Seatbelt } else { SandboxKind::Linux }
            }
        }
    }

    /// The policy's sandbox when the run is sandboxed, none otherwise.
    pub fn for_run(policy: &SandboxPolicy, sandboxed: Sandboxed) -> SandboxKind {
        match sandboxed {
            Sandboxed::Yes => SandboxKind::for_policy(policy),
            Sandboxed::ReadOnly => SandboxKind::for_policy(&read_only_policy(policy)),
            Sandboxed::No => SandboxKind::None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxKind::None => "none",
            SandboxKind::Linux => "linux",
            SandboxKind::Seatbelt => "seatbelt",
        }
    }
}

/// Whether an approved run happens inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sandboxed {
    /// In the sandbox of the request's policy.
    Yes,
    /// Read-only with no network and the mount view required, whatever the policy: a
    /// known-safe command that runs without a question.
    ReadOnly,
    No,
}

impl From<RunSandbox> for Sandboxed {
    fn from(sandbox: RunSandbox) -> Sandboxed {
        match sandbox {
            RunSandbox::Policy => Sandboxed::Yes,
            RunSandbox::ReadOnly => Sandboxed::ReadOnly,
            RunSandbox::None => Sandboxed::No,
        }
    }
}

/// The read-only policy with `policy`'s hidden paths.
pub(crate) fn read_only_policy(policy: &SandboxPolicy) -> SandboxPolicy {
    SandboxPolicy::ReadOnly { hidden_paths: policy.hidden_paths_setting().cloned() }
}

/// The sandbox a known-safe command gets: read-only, no network, `policy`'s hidden paths, the
/// mount view required (it is what hides them) and no best effort.
pub(crate) fn read_only_request(request: &SandboxRequest) -> SandboxRequest {
    SandboxRequest {
        policy: read_only_policy(&request.policy),
        policy_cwd: request.policy_cwd.clone(),
        strictness: Strictness::FailClosed,
        mount_view: MountViewRequirement::Required,
        limits: request.limits,
        home_reads: request.home_reads.clone(),
        writes: cordon_policies::WriteChoice::Direct,
    }
}

/// An executable cordon starts by a descriptor it opened when it started, never by a path:
/// whatever a sandboxed command does to the file system later (replace the file, rename a
/// directory above it, plant a symlink), the next launch runs the same file. The descriptor is
/// close-on-exec, so it never reaches a command; a child reaches the file through its own
/// inherited copy (`/proc/self/fd/N`), which stays valid until the child's `execve` completes.
/// A script cannot be started so (the kernel hands its interpreter the descriptor's path to
/// read the script from after the `execve`, when the descriptor is gone, and keeping it open
/// would hand the command a way to reopen the file for writing), so [`PinnedExe::open`]
/// refuses one.
#[derive(Debug, Clone)]
pub struct PinnedExe {
    /// What the user named (or cordon's own path when it started), for messages.
    shown: PathBuf,
    /// Where the descriptor pointed when it was opened, symlinks resolved.
    canonical: PathBuf,
    fd: Arc<OwnedFd>,
}

impl PinnedExe {
    /// cordon's own executable: the file this process was started from, even if its path has
    /// been replaced or removed since.
    #[cfg(target_os = "linux")]
    pub fn own() -> std::io::Result<PinnedExe> {
        let fd = OwnedFd::from(open_path("/proc/self/exe".as_ref(), 0)?);
        let canonical = std::fs::read_link(fd_path(&fd))?;
        Ok(PinnedExe { shown: canonical.clone(), canonical, fd: Arc::new(fd) })
    }

    /// cordon's own executable (elsewhere there is no helper to start by it).
    #[cfg(not(target_os = "linux"))]
    pub fn own() -> std::io::Result<PinnedExe> {
        PinnedExe::open(&std::env::current_exe()?)
    }

    /// The executable at `path` (symlinks followed), as it is now.
    pub fn open(path: &std::path::Path) -> std::io::Result<PinnedExe> {
        let file = open_path(path, 0)?;
        if !file.metadata()?.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        let fd = OwnedFd::from(file);
        #[cfg(target_os = "linux")]
        let canonical = std::fs::read_link(fd_path(&fd))?;
        #[cfg(not(target_os = "linux"))]
        let canonical = std::fs::canonicalize(path)?;
        if is_script(&fd) {
            return Err(std::io::Error::other(
                "it is a script (#!): the helper must be an executable file (cordon itself, or a \
                 link to it), which cordon starts through a descriptor",
            ));
        }
        Ok(PinnedExe { shown: path.to_path_buf(), canonical, fd: Arc::new(fd) })
    }

    /// The path to show in messages.
    pub fn shown(&self) -> &std::path::Path {
        &self.shown
    }

    /// Where the file was when it was opened (for keeping that path read-only in a sandbox).
    pub fn canonical(&self) -> &std::path::Path {
        &self.canonical
    }

    /// The path a child process of this one executes: its own copy of the descriptor.
    #[cfg(target_os = "linux")]
    pub fn exec_path(&self) -> PathBuf {
        fd_path(&self.fd)
    }

    /// The path a child process of this one executes (only Linux starts its helper by a
    /// descriptor).
    #[cfg(not(target_os = "linux"))]
    pub fn exec_path(&self) -> PathBuf {
        self.canonical.clone()
    }
}

impl PartialEq for PinnedExe {
    fn eq(&self, other: &Self) -> bool {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd() == other.fd.as_raw_fd()
    }
}

impl Eq for PinnedExe {}

/// `open(path, O_PATH | O_CLOEXEC | extra)`: a handle on the file itself, which needs no read
/// permission and runs nothing (elsewhere than Linux, a plain read-only open).
fn open_path(path: &std::path::Path, extra: libc::c_int) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    #[cfg(target_os = "linux")]
    let flags = libc::O_PATH | extra;
    #[cfg(not(target_os = "linux"))]
    let flags = extra;
    std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path)
}

/// Whether the file behind `fd` starts with `#!` (read through the descriptor, so it is the
/// same file; one that cannot be read is taken as a binary).
fn is_script(fd: &std::os::fd::OwnedFd) -> bool {
    use std::io::Read;
    #[cfg(target_os = "linux")]
    let file = std::fs::File::open(fd_path(fd));
    #[cfg(not(target_os = "linux"))]
    let file = fd.try_clone().map(std::fs::File::from);
    let mut magic = [0u8; 2];
    file.and_then(|mut f| f.read_exact(&mut magic)).is_ok() && magic == *b"#!"
}

#[cfg(target_os = "linux")]
fn fd_path(fd: &impl std::os::fd::AsRawFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// A working directory held open from the moment it is resolved (before any question shows
/// it): a command started without a sandbox enters it through the descriptor (`fchdir`), and
/// the Linux helper, which enters it by path inside its mount view, refuses to run anywhere
/// whose device and inode differ. A directory swapped for a symlink between the question and
/// the run is never where an approved command runs. The descriptor is close-on-exec.
#[derive(Debug, Clone)]
pub struct PinnedDir {
    /// Where the opened directory is, symlinks resolved (what is shown and passed on).
    path: PathBuf,
    fd: Arc<OwnedFd>,
    identity: (u64, u64),
}

impl PinnedDir {
    /// Opens `path` (symlinks followed); fails unless it is a directory.
    pub fn open(path: &std::path::Path) -> std::io::Result<PinnedDir> {
        use std::os::unix::fs::MetadataExt;
        let file = open_path(path, libc::O_DIRECTORY)?;
        let meta = file.metadata()?;
        let fd = OwnedFd::from(file);
        // The path of what was opened, not of what `path` leads to by now.
        #[cfg(target_os = "linux")]
        let path = std::fs::read_link(fd_path(&fd))?;
        #[cfg(not(target_os = "linux"))]
        let path = std::fs::canonicalize(path)?;
        Ok(PinnedDir { path, fd: Arc::new(fd), identity: (meta.dev(), meta.ino()) })
    }

    /// The directory's path when it was opened.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The directory's descriptor, for a child that enters it with `fchdir`.
    pub(crate) fn descriptor(&self) -> Arc<OwnedFd> {
        Arc::clone(&self.fd)
    }
}

impl PartialEq for PinnedDir {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.identity == other.identity
    }
}

impl Eq for PinnedDir {}

/// How to reach and configure the Linux helper, and what both sandboxes compute hidden paths
/// and writable roots from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperSettings {
    /// The cordon binary, or a configured helper executable.
    pub exe: PinnedExe,
    /// The user view, read from cordon's own environment when it started. Never the command's
    /// environment: that one follows `shell_environment_policy`, and what the command is told
    /// (no HOME, another TMPDIR) must not change what is hidden or writable.
    pub user_view: EnvSnapshot,
    /// How a spawner may start the helper.
    pub launch: HelperLaunch,
    /// TEST ONLY (`CORDON_TEST_RESOLVE`): names the network proxy resolves to these
    /// addresses instead of asking DNS (see `network_proxy`).
    pub proxy_test_resolve: Vec<(String, std::net::SocketAddr)>,
    /// Variables a *sandboxed* command gets on top of its environment: a package-manager
    /// preset's cache and registry settings. A run without the sandbox never gets them: the
    /// caches they point at are written by sandboxed runs, and what a sandbox wrote must not
    /// become code that runs outside one.
    pub sandboxed_env: Vec<(OsString, OsString)>,
    /// How a sandboxed command writes its roots (one-shot runs; sessions always write directly).
    pub writes: crate::transaction::WriteChoice,
    /// How long transactional runs stay undoable.
    pub undo: crate::transaction::UndoRetention,
}

/// How the Linux helper is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelperLaunch {
    /// A spawner that forks from a single-threaded process runs the helper in the forked child
    /// ([`cordon_sandbox_linux::run_in_process`]): one `execve` of cordon fewer. Only when the
    /// helper is this very binary.
    InProcessWhenPossible,
    /// Always exec the helper executable (a configured `linux_sandbox_exe`).
    Exec,
}

/// What to launch.
#[derive(Debug, Clone)]
pub struct Launch<'a> {
    pub kind: SandboxKind,
    /// The command and its arguments (any bytes: they go to `execve` as they are).
    pub command: Vec<OsString>,
    /// Where the command runs.
    pub cwd: &'a std::path::Path,
    /// `cwd` held open since it was resolved (absent for a directory on another machine).
    pub cwd_pin: Option<&'a PinnedDir>,
    /// What the sandbox enforces (for [`SandboxKind::None`], nothing of it is used).
    pub sandbox: &'a SandboxRequest,
    /// The command's complete environment.
    pub env: &'a [(OsString, OsString)],
    /// Whether the command dies with cordon (always, except when cordon `exec`s it).
    pub parent_death: ParentDeath,
    /// cordon's network proxy, for a policy with a domain allow-list. Without it such a
    /// command has no network.
    pub proxy: Option<ProxyEndpoint<'a>>,
    /// The writable roots' repositories, found for the watch a moment before: a helper run in
    /// cordon's forked child takes them instead of walking the roots again.
    #[cfg(target_os = "linux")]
    pub walked: Option<std::sync::Arc<cordon_sandbox_linux::RepositoryWalk>>,
    /// The run's directory for write layers (`--writes-to`): its writes to the roots land
    /// there until they are applied.
    #[cfg(target_os = "linux")]
    pub writes_to: Option<PathBuf>,
    /// Where `/tmp` and `$TMPDIR` keep what the command writes there (`--temporary-in`), with
    /// write layers.
    #[cfg(target_os = "linux")]
    pub temporary_in: Option<PathBuf>,
}

/// How a sandboxed command reaches cordon's network proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyEndpoint<'a> {
    /// The Linux helper binds a port in the command's network namespace and hands the
    /// listening socket to the proxy over this end of the proxy's socketpair, which it
    /// inherits (`--proxy-fd`).
    HandOver(&'a HandOverSocket),
    /// The proxy listens on `127.0.0.1:PORT` of the host; Seatbelt lets the command reach that
    /// port and nothing else of the network.
    Loopback(u16),
}

/// The helper's end of a network proxy's hand-over socketpair, shared by the proxy and the
/// plans made for it. It has no name anywhere, so only the helper a plan starts can hand the
/// proxy a listener. Close-on-exec in this process at all times: a server runs concurrent
/// sessions, and no other session's child may inherit it; [`LaunchPlan::prepare_spawn`]
/// opens it to the one child that runs the helper, between its fork and its exec.
#[derive(Debug, Clone)]
pub struct HandOverSocket(Arc<OwnedFd>);

impl HandOverSocket {
    /// The descriptor, shared with the proxy (for the spawner that opens it to the helper).
    #[cfg(target_os = "linux")]
    pub(crate) fn descriptor(&self) -> Arc<OwnedFd> {
        Arc::clone(&self.0)
    }

    /// Takes `fd`, which must be close-on-exec and numbered above the descriptors a spawner
    /// sets up in the child (stdio, and the status report on 3 of
    /// `cordon_sandbox_linux::STATUS_REPORT_FD`), so that none of those replaces it.
    pub fn new(fd: OwnedFd) -> HandOverSocket {
        HandOverSocket(Arc::new(fd))
    }

    /// The number the helper is told (`--proxy-fd`), the same in the child as here.
    pub fn number(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// The same socket (a plan's copy of the proxy's).
impl PartialEq for HandOverSocket {
    fn eq(&self, other: &HandOverSocket) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for HandOverSocket {}

/// A command line as a value: what every spawner turns into a process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaunchPlan {
    pub sandbox: SandboxKind,
    pub program: PathBuf,
    /// `argv[0]` when it differs from `program` (the helper's arg0 trick).
    pub arg0: Option<OsString>,
    pub args: Vec<OsString>,
    /// The complete environment (nothing else is inherited).
    #[serde(skip)]
    pub env: Vec<(OsString, OsString)>,
    pub cwd: PathBuf,
    /// `cwd` held open since it was resolved: the command starts there or not at all.
    #[serde(skip)]
    pub cwd_pin: Option<PinnedDir>,
    /// The helper's arguments, when a spawner that forks from a single-threaded process may
    /// run the helper in the child instead of exec'ing `program` ([`HelperLaunch`]). The
    /// result is the same process tree, minus one `execve`.
    #[serde(skip)]
    pub in_process: Option<HelperArgs>,
    /// The descriptor the helper's `--proxy-fd` names, which the child must inherit
    /// ([`LaunchPlan::prepare_spawn`]). Holding it here keeps the number valid for as long
    /// as the plan can be spawned.
    #[serde(skip)]
    pub proxy_channel: Option<HandOverSocket>,
    /// Every resource limit asked for (what the verdict names).
    #[serde(skip_serializing_if = "cordon_policies::Limits::is_empty")]
    pub limits: cordon_policies::Limits,
    /// The limits of the whole tree that a cgroup, made by the spawner for this one child,
    /// holds; none when no cgroup is needed.
    pub cgroup_limits: Option<cordon_policies::Limits>,
    /// The rlimits the spawner sets in the child when no helper does (an unsandboxed command).
    #[serde(skip)]
    pub process_limits: Vec<cordon_policies::ProcessLimit>,
}

/// Errors building a sandboxed command line.
#[derive(Debug, thiserror::Error)]
pub enum SandboxSetupError {
    #[error("the sandbox policy cannot be applied: {0}")]
    Policy(#[from] cordon_policies::PolicyError),
    #[error("the command is empty")]
    EmptyCommand,
    #[error(transparent)]
    Limit(#[from] cordon_policies::UnenforceableLimit),
    #[error("resource limits (--limit) are not supported with Seatbelt yet")]
    LimitsUnsupported,
}

/// `env` with the helper settings' sandbox-only variables set on top (replacing any of the
/// same name).
fn with_sandboxed_env(
    env: &[(OsString, OsString)],
    helper: &HelperSettings,
) -> Vec<(OsString, OsString)> {
    let mut full = env.to_vec();
    full.retain(|(name, _)| !helper.sandboxed_env.iter().any(|(set, _)| set == name));
    full.extend(helper.sandboxed_env.iter().cloned());
    full
}

/// Plans `launch` under its sandbox kind: the command itself, the Linux helper through the
/// arg0 trick, or `/usr/bin/sandbox-exec` with a profile generated from the policy.
pub fn plan_launch(
    launch: &Launch<'_>,
    helper: &HelperSettings,
) -> Result<LaunchPlan, SandboxSetupError> {
    let Launch {
        kind,
        ref command,
        cwd,
        cwd_pin,
        sandbox,
        env,
        parent_death,
        proxy,
        #[cfg(target_os = "linux")]
        ref walked,
        #[cfg(target_os = "linux")]
        ref writes_to,
        #[cfg(target_os = "linux")]
        ref temporary_in,
    } = *launch;
    let (program, rest) = command.split_first().ok_or(SandboxSetupError::EmptyCommand)?;
    let argv = command.clone();
    let limits = crate::limits::plan_limits(sandbox)?;
    let cgroup_limits =
        (limits.tree == cordon_policies::TreeLimits::Cgroup).then_some(sandbox.limits);
    let plan = match kind {
        SandboxKind::None => LaunchPlan {
            sandbox: kind,
            program: PathBuf::from(program),
            arg0: None,
            args: rest.to_vec(),
            env: env.to_vec(),
            cwd: cwd.to_path_buf(),
            cwd_pin: cwd_pin.cloned(),
            in_process: None,
            proxy_channel: None,
            limits: sandbox.limits,
            cgroup_limits,
            process_limits: limits.process,
        },
        SandboxKind::Linux => {
            let proxy_channel = match proxy {
                Some(ProxyEndpoint::HandOver(channel)) => Some(channel.clone()),
                Some(ProxyEndpoint::Loopback(_)) | None => None,
            };
            let args = HelperArgs {
                request: sandbox.clone(),
                command_cwd: Some(cwd.to_path_buf()),
                command_cwd_identity: cwd_pin.map(|pin| cordon_sandbox_linux::DirIdentity {
                    dev: pin.identity.0,
                    ino: pin.identity.1,
                }),
                parent_death,
                user_view: UserView::Given(Box::new(helper.user_view.clone())),
                proxy_fd: proxy_channel.as_ref().map(HandOverSocket::number),
                caller: cordon_sandbox_linux::Caller::Cordon,
                tree_limits: limits.tree,
                #[cfg(target_os = "linux")]
                writes_to: writes_to.clone(),
                #[cfg(not(target_os = "linux"))]
                writes_to: None,
                #[cfg(target_os = "linux")]
                temporary_in: temporary_in.clone(),
                #[cfg(not(target_os = "linux"))]
                temporary_in: None,
                command: argv,
                #[cfg(target_os = "linux")]
                walked: walked.clone(),
                // For a request that asks the helper for a transaction of its own (`cordon
                // sandbox`'s, which the helper applies); cordon's runs give `writes_to`.
                #[cfg(target_os = "linux")]
                transactions: Some(crate::transaction::helper_transactions()),
            };
            LaunchPlan {
                sandbox: kind,
                program: helper.exe.exec_path(),
                arg0: Some(cordon_sandbox_linux::HELPER_ARG0.into()),
                args: cordon_sandbox_linux::helper_argv(&args),
                env: with_sandboxed_env(env, helper),
                cwd: cwd.to_path_buf(),
                cwd_pin: cwd_pin.cloned(),
                in_process: match helper.launch {
                    HelperLaunch::InProcessWhenPossible => Some(args),
                    HelperLaunch::Exec => None,
                },
                proxy_channel,
                limits: sandbox.limits,
                cgroup_limits,
                // The helper sets them, after its own set-up.
                process_limits: Vec::new(),
            }
        }
        SandboxKind::Seatbelt => {
            if !sandbox.limits.is_empty() {
                return Err(SandboxSetupError::LimitsUnsupported);
            }
            let mut resolved =
                sandbox.policy.resolve(&sandbox.policy_cwd, &helper.user_view.view(), |p| {
                    std::fs::canonicalize(p)
                })?;
            // cordon's own state is never writable from inside: its config and rules decide the
            // next command's sandbox. Seatbelt denies by path, so this holds whether or not the
            // directory exists yet.
            if let Some(home) = &helper.user_view.cordon_home {
                resolved.protected_paths.push(home.display().to_string());
            }
            // A domain allow-list: no network but the proxy's port on the host's loopback
            // (without a proxy, no network at all: fail closed).
            let proxy_port = match proxy {
                Some(ProxyEndpoint::Loopback(port)) if resolved.network_domains.is_some() => {
                    Some(port)
                }
                Some(ProxyEndpoint::Loopback(_) | ProxyEndpoint::HandOver(_)) | None => None,
            };
            if resolved.network_domains.is_some() {
                resolved.network_access = false;
            }
            let resolved = cordon_sandbox_macos::with_real_paths(&resolved);
            let mut profile = cordon_sandbox_macos::seatbelt_profile(&resolved);
            let mut full_env = with_sandboxed_env(env, helper);
            if let Some(port) = proxy_port {
                cordon_sandbox_macos::allow_proxy_port(&mut profile, port);
                let proxy_env = cordon_policies::proxy_env(port);
                full_env.retain(|(k, _)| !proxy_env.iter().any(|(name, _)| k == name));
                full_env.extend(
                    proxy_env.into_iter().map(|(k, v)| (OsString::from(k), OsString::from(v))),
                );
            }
            full_env
                .extend(profile.env.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))));
            let mut args = cordon_sandbox_macos::sandbox_exec_argv(&profile, &argv);
            let program = PathBuf::from(args.remove(0));
            LaunchPlan {
                sandbox: kind,
                program,
                arg0: None,
                args,
                env: full_env,
                cwd: cwd.to_path_buf(),
                cwd_pin: cwd_pin.cloned(),
                in_process: None,
                proxy_channel: None,
                limits: sandbox.limits,
                cgroup_limits: None,
                process_limits: Vec::new(),
            }
        }
    };
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cordon_policies::{DomainRules, WorkspaceWrite};

    fn helper() -> HelperSettings {
        HelperSettings {
            exe: PinnedExe::own().unwrap(),
            launch: HelperLaunch::Exec,
            user_view: EnvSnapshot::default(),
            proxy_test_resolve: Vec::new(),
            sandboxed_env: Vec::new(),
            writes: crate::transaction::WriteChoice::Direct,
            undo: crate::transaction::UndoRetention::default(),
        }
    }

    /// A preset's cache variables reach a sandboxed command only: an unsandboxed run (a
    /// retry, an escalation, `danger-full-access`) keeps the user's own caches.
    #[test]
    fn sandbox_only_variables_reach_sandboxed_plans_only() {
        let helper = HelperSettings {
            sandboxed_env: vec![("npm_config_cache".into(), "/c/npm".into())],
            ..helper()
        };
        let cwd = std::env::temp_dir();
        let env = [("npm_config_cache".into(), "/home/u/.npm".into()), ("A".into(), "1".into())];
        let sandbox =
            SandboxRequest::new(SandboxPolicy::ReadOnly { hidden_paths: None }, cwd.clone());
        let plan_for = |kind| {
            let launch = Launch {
                kind,
                command: vec!["npm".into()],
                cwd: &cwd,
                cwd_pin: None,
                sandbox: &sandbox,
                env: &env,
                parent_death: ParentDeath::Ignore,
                proxy: None,
                #[cfg(target_os = "linux")]
                walked: None,
                #[cfg(target_os = "linux")]
                writes_to: None,
                #[cfg(target_os = "linux")]
                temporary_in: None,
            };
            plan_launch(&launch, &helper).unwrap().env
        };
        let sandboxed = plan_for(SandboxKind::Linux);
        assert!(sandboxed.contains(&("npm_config_cache".into(), "/c/npm".into())), "{sandboxed:?}");
        assert_eq!(sandboxed.iter().filter(|(k, _)| k == "npm_config_cache").count(), 1);
        assert_eq!(plan_for(SandboxKind::None), env.to_vec());
    }

    /// The Seatbelt plan for a domain allow-list, with or without a proxy on the loopback.
    fn seatbelt_plan(proxy: Option<ProxyEndpoint<'_>>) -> (String, Vec<(String, String)>) {
        let policy = SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
            network_domains: Some(DomainRules {
                allow: vec!["example.test".parse().unwrap()],
                deny: Vec::new(),
            }),
            ..WorkspaceWrite::default()
        });
        let cwd = std::env::temp_dir();
        let launch = Launch {
            kind: SandboxKind::Seatbelt,
            command: vec!["curl".into()],
            cwd: &cwd,
            cwd_pin: None,
            sandbox: &SandboxRequest::new(policy, cwd.clone()),
            env: &[],
            parent_death: ParentDeath::Kill,
            proxy,
            #[cfg(target_os = "linux")]
            walked: None,
            #[cfg(target_os = "linux")]
            writes_to: None,
            #[cfg(target_os = "linux")]
            temporary_in: None,
        };
        let plan = plan_launch(&launch, &helper()).unwrap();
        assert_eq!(plan.program, PathBuf::from("/usr/bin/sandbox-exec"));
        let profile = plan.args[1].to_string_lossy().into_owned();
        let env = plan
            .env
            .iter()
            .map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))
            .collect();
        (profile, env)
    }

    #[test]
    fn a_domain_list_under_seatbelt_reaches_only_the_proxys_port_or_nothing() {
        let (profile, env) = seatbelt_plan(Some(ProxyEndpoint::Loopback(8123)));
        assert!(profile.contains("(allow network-outbound (remote ip \"localhost:8123\"))"));
        assert!(!profile.contains("(allow network-outbound)\n"), "{profile}");
        assert!(env.contains(&("HTTPS_PROXY".into(), "http://127.0.0.1:8123".into())), "{env:?}");
        assert!(env.contains(&("ALL_PROXY".into(), "socks5h://127.0.0.1:8123".into())));
        assert!(!env.iter().any(|(k, _)| k == "CORDON_SANDBOX_NETWORK_DISABLED"), "{env:?}");

        // No proxy: no network at all.
        let (profile, env) = seatbelt_plan(None);
        assert!(!profile.contains("remote ip"), "{profile}");
        assert!(!env.iter().any(|(k, _)| k == "HTTPS_PROXY"), "{env:?}");
        assert!(env.contains(&("CORDON_SANDBOX_NETWORK_DISABLED".into(), "1".into())));
    }
}
