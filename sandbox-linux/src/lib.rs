//! cordon's Linux sandbox helper, the `codex-linux-sandbox` personality: a drop-in for the
//! helper OpenAI Codex ships (the same flags and policy JSON), with cordon's own additions.
//!
//! The helper forks a supervisor that confines itself and runs the command, and makes sure
//! nothing the command started outlives it. Order of work, all on the one thread of a process that
//! has started nothing else (Landlock and seccomp apply to the calling thread; a second thread
//! would stay unconfined):
//!
//! 1. parse the Codex-compatible flags and the policy ([`parse_helper_args`]); hidden paths and
//!    the `$TMPDIR` root come from `--user-view` (cordon's own environment) when given, else
//!    from the helper's environment ([`UserView`]);
//! 2. the mount view ([`mount_view`]): a private mount namespace, read-only everywhere except
//!    the writable roots, protected paths read-only (with what git runs code from in every
//!    repository of the roots, [`find_repositories`], and `$CORDON_HOME` when it lies inside a
//!    root), hidden paths covered, and a `/dev` of the sandbox's own when no terminal is handed
//!    over (`dev_view`); skipped (and reported) where the kernel refuses namespaces;
//! 3. containment (`containment/`): PID + IPC namespaces inside the mount view (else a child
//!    subreaper); the helper forks a supervisor and stays outside to forward signals and pass
//!    on the command's status (or, for a spawner that cloned this process straight into the
//!    namespaces with [`clone_namespace_init`], this process is the supervisor); everything
//!    below runs in the supervisor;
//!    with a domain allow-list the namespaces include a network namespace with only loopback,
//!    and the supervisor binds the proxy's port in it and hands the listening socket to
//!    cordon's proxy over the socketpair end it inherited (`--proxy-fd`, [`proxy_listener`]),
//!    then closes that end, before confining itself;
//! 4. Landlock ([`landlock_rules`]), negotiated down to the kernel's ABI;
//! 5. every capability dropped and the securebits locked ([`caps`]);
//! 6. `no_new_privs`, then the seccomp program ([`seccomp`]);
//! 7. the result is checked against what the policy needs ([`report::gaps`]): a required
//!    protection that is missing is exit 125 unless `--best-effort`;
//! 8. the supervisor starts the command (`clone(CLONE_VM | CLONE_VFORK)`, [`command`]), which
//!    `execvp`s in the command cwd with
//!    `CORDON_SANDBOX=linux`; the supervisor reaps, forwards signals, and when the command exits
//!    makes sure nothing it started is left.
//!
//! Kernel compatibility: every mechanism is probed by using it; what took effect is reported
//! (`cordon doctor` predicts it with [`probe::probe`]). Tests: unit tests build the plans and
//! programs as values; the end-to-end suite in `tests/` runs the real binary on the running
//! kernel and checks effects from outside. Irreversible restrictions are only ever applied in
//! the helper process, never in a test runner.
//!
//! All `unsafe` lives in `sys.rs`.

#[cfg(target_os = "linux")]
mod apply;
#[cfg(target_os = "linux")]
mod apply_record;
mod args;
mod error;

#[cfg(target_os = "linux")]
mod binds;
#[cfg(target_os = "linux")]
mod caps;
#[cfg(target_os = "linux")]
mod command;
#[cfg(target_os = "linux")]
mod containment;
#[cfg(target_os = "linux")]
mod cordon_home;
#[cfg(target_os = "linux")]
mod dev_view;
#[cfg(target_os = "linux")]
mod git_dirs;
#[cfg(target_os = "linux")]
mod git_tracked;
#[cfg(target_os = "linux")]
mod hidden;
#[cfg(target_os = "linux")]
mod hidden_reads;
#[cfg(target_os = "linux")]
mod home_reads;
#[cfg(target_os = "linux")]
mod kernel_interface;
#[cfg(target_os = "linux")]
mod landlock_rules;
#[cfg(target_os = "linux")]
mod listings;
// The helper's user interface: every line it prints (on other systems, the one that says
// there is no helper there).
#[cfg(target_os = "linux")]
mod aside;
#[cfg(target_os = "linux")]
pub mod layer_availability;
#[cfg_attr(
    not(target_os = "linux"),
    expect(dead_code, reason = "only the refusal is said off Linux")
)]
mod messages;
#[cfg(target_os = "linux")]
mod mount_table;
#[cfg(target_os = "linux")]
mod mount_view;
#[cfg(target_os = "linux")]
mod new_modules;
#[cfg(target_os = "linux")]
mod new_repositories;
#[cfg(target_os = "linux")]
mod own_transaction;
#[cfg(target_os = "linux")]
mod owner_read;
#[cfg(target_os = "linux")]
mod planted;
#[cfg(target_os = "linux")]
pub mod probe;
#[cfg(target_os = "linux")]
mod proc_view;
#[cfg(target_os = "linux")]
mod proxy_listener;
#[cfg(target_os = "linux")]
mod refusal_watch;
pub mod report;
#[cfg(target_os = "linux")]
mod repositories;
#[cfg(target_os = "linux")]
mod repository_index;
#[cfg(target_os = "linux")]
mod run;
#[cfg(target_os = "linux")]
mod sealing;
#[cfg(target_os = "linux")]
pub mod seccomp;
#[cfg(target_os = "linux")]
mod sys;
mod unix_sockets;
#[cfg(target_os = "linux")]
pub mod write_layer;

pub use args::{
    CORDON_MESSAGE_PREFIX, Caller, DirIdentity, HELPER_ARG0, HELPER_USAGE, HelperArgs, Invocation,
    ParentDeath, UserView, helper_argv, is_helper_arg0, parse_helper_args, parse_invocation,
};
pub use error::{EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_SETUP_FAILED, HelperError};

/// Whether this process has one thread, which [`run_in_process`] needs of its caller.
#[cfg(target_os = "linux")]
pub use home_reads::planned_home_reads;
/// The helper's entry point (see the crate docs). Never returns.
#[cfg(target_os = "linux")]
pub use run::{InProcessStart, InheritedDescriptors, run_in_process, run_main};
#[cfg(target_os = "linux")]
pub use sys::single_threaded;

/// The spawner's side of `--proxy-fd`.
#[cfg(target_os = "linux")]
pub use sys::keep_open_in_child;

/// Per-process limits (rlimits), for a spawner that starts a command without the helper.
#[cfg(target_os = "linux")]
pub use sys::set_process_limits;

#[cfg(target_os = "linux")]
pub use apply::{ApplyContext, ApplyReport, HeldChange, apply_layers, layers_hold_changes};
#[cfg(target_os = "linux")]
pub use apply_record::{APPLIED_RECORD, AppliedChange, Before, Stamp, read_applied};
/// A transaction of the helper's own: the front end keeps its state.
#[cfg(target_os = "linux")]
pub use own_transaction::{
    BeginError, OpenTransaction, TransactionHooks, TransactionStart, Transactions, apply_context,
    roots_in_temporary, temporary_dirs,
};
/// The repositories of the writable roots, and what a command planted in them.
#[cfg(target_os = "linux")]
pub use planted::{AfterRun, Planted, Watch};
#[cfg(target_os = "linux")]
pub use repositories::{RepositoryWalk, WalkBudget, find_repositories, git_dirs_in};
#[cfg(target_os = "linux")]
pub use repository_index::{Changes, IndexUnusable, Mark, RepositoryIndex};

/// The spawner's shortcut to a supervisor that is pid 1 from the start (`containment/init.rs`).
#[cfg(target_os = "linux")]
pub use containment::{
    ClonedInit, NamespaceInit, STATUS_REPORT_FD, clone_namespace_init, command_started,
    read_status_report,
};

/// On other systems the helper personality only explains itself.
#[cfg(not(target_os = "linux"))]
pub fn run_main() -> ! {
    messages::error(HelperError::UnsupportedPlatform);
    std::process::exit(EXIT_SETUP_FAILED)
}
