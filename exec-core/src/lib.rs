//! Everything cordon does between a validated request and a finished command, and the servers
//! that take requests from programs. Two parts:
//!
//! **The engine** — one request, decided and run:
//! - launch planning ([`plan_launch`], `launch.rs`): policy + command line + options become a
//!   [`LaunchPlan`], a plain value — the command itself, the Linux helper through the arg0 trick
//!   (or in cordon's own forked child), or `/usr/bin/sandbox-exec` with a generated profile.
//!   Nothing else in cordon builds the helper's or `sandbox-exec`'s argv.
//! - spawning (`spawn.rs`, `spawner.rs`): own process group (own session when stdin is not a
//!   terminal), parent-death signal, a timeout that kills the whole group (exit 124), output
//!   streamed through an escape filter when it goes to a terminal and kept as a 1 MiB head+tail
//!   copy per stream; whatever the command leaves behind is killed. Without a terminal to hand
//!   over, the sandbox's supervisor is cloned straight in as pid 1 of the command's namespaces.
//! - deciding ([`Orchestrator`], `classify.rs`): rules → known-safe list → approval policy, an
//!   [`Approver`] asked when needed, the attempt run sandboxed, its result classified as a
//!   [`Verdict`] (a likely denial needs evidence that fits the policy; a sandbox that could not
//!   be set up is never a denial), and on a likely denial one unsandboxed retry when the policy
//!   allows. The retry decision matches on the verdict, never on output text.
//! - sessions (`session/`, [`Sessions`]): `exec_command`/`write_stdin` over PTYs or pipes, bounded in number
//!   and buffered output, each command decided and launched like any other.
//! - the network proxy (`network_proxy/`): with a domain allow-list, the HTTP/SOCKS5 proxy that
//!   is a sandboxed command's only way out, deciding each destination.
//!
//! **The servers** — the engine behind a protocol:
//! - `executor/` ([`serve_executor`], [`serve_remote`]): the JSON-lines executor protocol
//!   (`docs/executor-protocol.md`) over any reader/writer, for a harness on any [`Sessions`] or,
//!   with a [`RemoteServer`], for an orchestrator on another machine.
//! - `mcp/` ([`serve_mcp`]): the same sessions over the Model Context Protocol (`rmcp`) on stdio.
//! - `remote/` ([`RemoteLink`], [`RemoteSessions`], [`run_remote`]): the link over the system `ssh` to `cordon executor --serve-remote` on another
//!   machine: decided here, run and sandboxed there.
//!
//! `platform.rs` ([`DoctorReport`], [`helper_main`]) is the typed `cordon doctor` report and the helper's entry point, so the CLI
//! reaches the platform crates only through this crate. This crate returns values; it never
//! prints (it only relays a command's own output).
//!
//! Threading: the parent-death signal fires when the *thread* that spawned the child exits, and
//! the helper can run in a forked child only while the process is single-threaded, so callers
//! drive this crate from a current-thread tokio runtime and the servers read their stdin and
//! stdout without threads ([`protocol_stdin`], [`protocol_stdout`]).
//!
//! The public names are the `pub use` list below; every module is private.
//!
//! Kernel compatibility: the cloned pid 1 needs pidfds that `waitid` accepts and namespaces the
//! kernel grants; where either is missing the spawner forks a child that runs the helper, which
//! finds out and reports what the kernel enforces. Off Linux (macOS) there is no parent-death
//! signal or subreaper: the process group is still killed on exit and timeout.
//!
//! Logging: `tracing` events about its decisions (the planned launch, approvals, verdicts and
//! retries, sessions, the proxy's verdicts) for the caller's subscriber, never from a forked
//! child.
//!
//! Tests: unit tests for the pure parts (capture, classification, the launch plan, the terminal
//! filter, the protocols, the proxy's decisions); the end-to-end suite in `tests/` drives
//! `cordon exec`, the executor, the MCP server and the remote link against the real kernel.

mod capture;
mod classify;
mod executor;
#[cfg(target_os = "linux")]
mod init_process;
mod interrupts;
#[cfg(target_os = "linux")]
mod kept;
mod launch;
mod limits;
mod lossy;
mod mcp;
mod network_proxy;
mod orchestrator;
mod platform;
mod program_trust;
mod remote;
mod remote_error;
mod request;
mod resolved;
mod runner;
mod session;
mod spawn;
mod spawner;
mod stdio;
mod sys;
mod terminal_filter;
mod test_hooks;
mod transaction;
#[cfg(target_os = "linux")]
mod undo;
mod upkeep;
mod workspace;
mod writes_plan;

pub use capture::Captured;
pub use classify::{Blocked, ExitKind, Verdict, setup_failure_line};
pub use executor::{HostFacts, RemoteServer, ServeEnd, serve as serve_executor, serve_remote};
#[cfg(target_os = "linux")]
pub use kept::{KeptChange, KeptError, KeptRun, drop_run, kept_run, kept_runs, take};
pub use launch::{
    HelperLaunch, HelperSettings, Launch, LaunchPlan, ParentDeath, PinnedDir, PinnedExe,
    ProxyEndpoint, SandboxKind, SandboxSetupError, Sandboxed, plan_launch,
};
pub use limits::{LimitSupport, LimitsReport, limits_report};
pub use mcp::serve_stdio as serve_mcp;
pub use network_proxy::{
    ConnectionRecord, NetworkLog, NetworkProxy, ProxyError, ProxySettings, denied_hosts,
    refusal_advice,
};
pub use orchestrator::{
    ApprovalAnswer, ApprovalRecord, ApprovalRequest, ApprovalStage, Approver, AskCause, Attempt,
    Authorization, ExecRequest, Interaction, Orchestrator, OrchestratorError, Outcome,
    OutcomeResult, home_list_plan,
};
pub use platform::{
    DoctorReport, Gap, MountViewStatus, helper_main, is_helper_arg0, predicted_gaps,
};
pub use program_trust::ProgramLookup;
pub use remote::{
    HELLO_TIMEOUT, LinkEvent, LinkEvents, RemoteError, RemoteExec, RemoteLink, RemoteSessions,
    RemoteTarget, run_remote,
};
pub use runner::{MovedAside, moved_aside_warning, not_searched_warning};
pub use session::{SessionDefaults, SessionManager, Sessions};
pub use spawn::{OutputMode, StdinMode};
pub use stdio::{stdin as protocol_stdin, stdout as protocol_stdout};
pub use terminal_filter::Charset as TerminalCharset;
pub use test_hooks::proxy_resolve as test_hook_proxy_resolve;
pub use transaction::{
    HeldBack, TransactionError, UndoRetention, WriteChoice, WriteMode, held_back_warning,
};
#[cfg(target_os = "linux")]
pub use undo::{ChangeKind, Left, Moved, RunChange, RunReview, Undone, review, reviews, undo};
pub use upkeep::{empty_trash, move_aside, remove_or_move_aside, remove_tree};
pub use workspace::Workspace;
pub use writes_plan::{NoWriteLayerHere, PlannedWrites, planned_writes};
