//! cordon's orchestrator (DESIGN §7): decide with the policies, ask an [`Approver`] when
//! needed, run the command sandboxed first (the Linux helper through the arg0 trick, or
//! Seatbelt), classify the result, and on a likely sandbox denial retry once without the
//! sandbox when the approval policy allows.
//!
//! Processes: each attempt runs in its own process group with `PR_SET_PDEATHSIG` (so killing
//! cordon kills the command), stdin from `/dev/null` unless asked otherwise, a timeout that
//! kills the whole group (exit 124), and stdout/stderr streamed to the caller while a head+tail
//! copy (1 MiB per stream) is kept for classification and `--json`. When the command exits,
//! whatever it left in its process group gets a short grace period for output and is killed.
//!
//! Threading: the parent-death signal fires when the *thread* that spawned the child exits, so
//! callers drive this crate from a current-thread tokio runtime.
//!
//! Logging: the crate prints nothing; it emits `tracing` events about its decisions (the
//! planned launch, approvals, verdicts and retries, sessions, the proxy's verdicts) for the
//! caller's subscriber, never from a forked child.
//!
//! Tests: unit tests for the pure parts (capture, classification); the end-to-end suite in
//! `tests/` drives `cordon exec` against the real kernel.

mod capture;
mod classify;
pub mod executor;
#[cfg(target_os = "linux")]
mod init_process;
mod interrupts;
mod launch;
pub mod mcp;
mod network_proxy;
mod orchestrator;
pub mod platform;
pub mod remote;
mod request;
mod resolved;
mod runner;
pub mod session;
mod spawn;
pub mod stdio;
mod sys;
mod terminal_filter;
pub mod test_hooks;

pub use capture::Captured;
pub use classify::{Blocked, ExitKind, Verdict, setup_failure_line};
pub use launch::{
    HelperLaunch, HelperSettings, Launch, LaunchPlan, MountViewRequirement, ParentDeath, PinnedDir,
    PinnedExe, ProxyEndpoint, SandboxKind, SandboxSetupError, Sandboxed, Strictness, plan_launch,
};
pub use network_proxy::{
    ConnectionRecord, NetworkLog, NetworkProxy, ProxyError, ProxySettings, denied_hosts,
};
pub use orchestrator::{
    ApprovalAnswer, ApprovalRecord, ApprovalRequest, ApprovalStage, Approver, Attempt,
    Authorization, ExecRequest, Orchestrator, OrchestratorError, Outcome, OutcomeResult,
};
pub use runner::MovedAside;
pub use spawn::{OutputMode, StdinMode};
