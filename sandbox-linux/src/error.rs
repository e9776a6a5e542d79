//! The helper's errors and their exit codes: 125 when the sandbox could not be set up, 126 and
//! 127 for a command that cannot be executed or found (the convention of GNU `env` and
//! `timeout`, which Codex's helper follows too).

use std::ffi::OsString;

/// Exit status when the sandbox could not be set up (GNU `env`/`timeout` convention).
pub const EXIT_SETUP_FAILED: i32 = 125;
/// Exit status when the command exists but cannot be executed.
pub const EXIT_NOT_EXECUTABLE: i32 = 126;
/// Exit status when the command was not found.
pub const EXIT_NOT_FOUND: i32 = 127;

/// Why the helper did not exec the command. Each variant is printed as one stderr line,
/// `codex-linux-sandbox: <what failed>: <why>`.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    #[error("usage: {0}")]
    Usage(String),
    #[error("bad sandbox policy: {0}")]
    Policy(#[source] cordon_policies::PolicyError),
    #[error("{0}")]
    Profile(#[source] cordon_policies::ProfileError),
    #[cfg(target_os = "linux")]
    #[error("landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[cfg(target_os = "linux")]
    #[error("seccomp: {0}")]
    SeccompBuild(#[from] crate::seccomp::EmitError),
    #[cfg(target_os = "linux")]
    #[error("seccomp: {0}")]
    Seccomp(#[from] seccompiler::Error),
    #[error("only Linux has this sandbox helper")]
    UnsupportedPlatform,
    /// Landlock and seccomp confine the calling thread only, and a forked child of a threaded
    /// process may not allocate: the helper needs a process with one thread.
    #[error(
        "started in a process with more than one thread (or /proc/self/task is unreadable): \
         the sandbox would confine only one of them"
    )]
    Threaded,
    #[error("capabilities: {what}: {source}")]
    Capabilities { what: &'static str, source: std::io::Error },
    #[error("no_new_privs: {0}")]
    NoNewPrivs(std::io::Error),
    #[error("parent-death signal: {0}")]
    ParentDeathSignal(std::io::Error),
    #[error("process containment: {what}: {source}")]
    Containment { what: &'static str, source: std::io::Error },
    #[error("mount view: {what}: {source}")]
    MountView { what: String, source: std::io::Error },
    #[error("write layer: {what}: {source}")]
    WriteLayer { what: String, source: std::io::Error },
    /// The reason the mount view is not there, in words.
    #[error(
        "write layer: it needs the mount view, which is not here ({0}); run with --writes direct"
    )]
    WriteLayerWithoutMountView(String),
    /// Why no transaction of the helper's own can be made here, in words.
    #[error("transactional writes: {0}; run with --writes direct or --writes auto")]
    NoTransaction(String),
    #[cfg(target_os = "linux")]
    #[error("transactional writes: {0}")]
    OwnTransaction(#[source] crate::own_transaction::BeginError),
    /// The applier ended without saying it was done; the run's directory.
    #[error(
        "the process applying the command's changes ended before it was done: they are not in \
         place, and the run is kept in {} (the next transactional run finishes or keeps it)",
        .0.display()
    )]
    ApplyStopped(std::path::PathBuf),
    #[error("network namespace: {what}: {source}")]
    NetworkNamespace { what: &'static str, source: std::io::Error },
    #[error("network allow-list: {0}")]
    DomainList(#[source] cordon_policies::DomainPatternError),
    #[error("network namespace: listening on {address} to forward the host's port: {source}")]
    LoopbackForward { address: std::net::SocketAddr, source: std::io::Error },
    #[error("cannot create CORDON_HOME {} to keep it read-only: {source}", .path.display())]
    CordonHome { path: std::path::PathBuf, source: std::io::Error },
    #[error("sandbox not enforced: {0}; pass --best-effort to run without it")]
    NotEnforced(String),
    #[error(
        "the writable root {} holds /dev: the command would read and write the machine's \
         devices (its disks, its consoles); work outside /dev, or name a device directory \
         itself (--add-dir /dev/dri)",
        .0.display()
    )]
    RootHoldsDevices(std::path::PathBuf),
    #[error(
        "the writable root {} lies in /dev, where it would grant its devices: name it as a root \
         (--add-dir) to grant them, or work elsewhere",
        .0.display()
    )]
    RootInDevUnnamed(std::path::PathBuf),
    #[error(
        "the writable root {} is or holds the host's /dev/shm (every process's shared memory), \
         which only the mount view replaces with a private one: name it as a root (--add-dir) \
         to grant it, or work elsewhere",
        .0.display()
    )]
    RootInHostShmUnnamed(std::path::PathBuf),
    #[error("the writable root {} {what}; work elsewhere", .root.display())]
    RootOnKernelInterface { root: std::path::PathBuf, what: String },
    #[error("cannot enter command cwd {path:?}: {source}")]
    CommandCwd { path: std::path::PathBuf, source: std::io::Error },
    #[error(
        "the command cwd {path:?} is no longer the directory that was shown for approval \
         (replaced or swapped for a link since): nothing was run"
    )]
    CommandCwdChanged { path: std::path::PathBuf },
    #[error("cannot run {command:?}: {source}")]
    Exec { command: OsString, source: std::io::Error },
    #[error("{0}")]
    Limit(#[from] cordon_policies::UnenforceableLimit),
    #[error("cannot set the {what} limit: {source}")]
    SetLimit { what: &'static str, source: std::io::Error },
}

impl HelperError {
    /// The documented exit status for this failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            HelperError::Exec { source, .. } => exec_exit_code(source),
            HelperError::Usage(_)
            | HelperError::Policy(_)
            | HelperError::Profile(_)
            | HelperError::UnsupportedPlatform
            | HelperError::Threaded
            | HelperError::NotEnforced(_)
            | HelperError::Capabilities { .. }
            | HelperError::NoNewPrivs(_)
            | HelperError::ParentDeathSignal(_)
            | HelperError::MountView { .. }
            | HelperError::WriteLayer { .. }
            | HelperError::WriteLayerWithoutMountView(_)
            | HelperError::NoTransaction(_)
            | HelperError::ApplyStopped(_)
            | HelperError::NetworkNamespace { .. }
            | HelperError::DomainList(_)
            | HelperError::LoopbackForward { .. }
            | HelperError::Containment { .. }
            | HelperError::CordonHome { .. }
            | HelperError::RootHoldsDevices(_)
            | HelperError::RootInDevUnnamed(_)
            | HelperError::RootInHostShmUnnamed(_)
            | HelperError::RootOnKernelInterface { .. }
            | HelperError::CommandCwd { .. }
            | HelperError::CommandCwdChanged { .. }
            | HelperError::Limit(_)
            | HelperError::SetLimit { .. } => EXIT_SETUP_FAILED,
            #[cfg(target_os = "linux")]
            HelperError::Landlock(_)
            | HelperError::SeccompBuild(_)
            | HelperError::Seccomp(_)
            | HelperError::OwnTransaction(_) => EXIT_SETUP_FAILED,
        }
    }
}

/// The status of a command that could not be exec'd: 127 when it was not found, 126 for any
/// other reason (as a shell reports them).
pub fn exec_exit_code(source: &std::io::Error) -> i32 {
    match source.kind() {
        std::io::ErrorKind::NotFound => EXIT_NOT_FOUND,
        _ => EXIT_NOT_EXECUTABLE,
    }
}

/// Why a probe could not run in a child process.
#[cfg(target_os = "linux")]
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    /// The child of a threaded process may only make async-signal-safe calls, and a probe's
    /// child allocates.
    #[error("this process has more than one thread, so nothing could be forked to probe in")]
    Threaded,
    #[error("fork: {0}")]
    Fork(#[source] std::io::Error),
    #[error("waiting for the probe: {0}")]
    Wait(#[source] std::io::Error),
}
