//! One command to run, as the orchestrator and the sessions see it: argv, cwd, the workspace
//! its writable roots are resolved against, policies, environment, stdio. A leaf value: it
//! depends only on `launch` and `spawn`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use cordon_policies::{AskForApproval, Escalation, Requester, SandboxPolicy};

use crate::launch::{Launch, ParentDeath, PinnedDir, SandboxKind};
use crate::spawn::{OutputMode, StdinMode};

/// One command to run.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    pub command: Vec<String>,
    /// Where the command runs.
    pub cwd: PathBuf,
    /// `cwd` held open since it was resolved, before any question showed it: a local command
    /// starts in that directory or not at all. `None` for a directory on another machine.
    pub cwd_pin: Option<PinnedDir>,
    /// What the writable roots are resolved against (the workspace): fixed when a run or an
    /// executor starts. A per-call working directory changes `cwd`, never this: more write
    /// access is an escalation, which needs an approval.
    pub policy_cwd: PathBuf,
    pub sandbox_policy: SandboxPolicy,
    pub approval: AskForApproval,
    pub escalation: Escalation,
    /// A person at a terminal or a program: what `on-request` does after a denial.
    pub requester: Requester,
    pub timeout: Option<Duration>,
    /// The complete environment of the command (already filtered by the environment policy).
    pub env: Vec<(OsString, OsString)>,
    pub stdin: StdinMode,
    pub output: OutputMode,
}

impl ExecRequest {
    /// The launch of this request under `kind`. Nothing the orchestrator or a session starts
    /// may outlive cordon, so the command dies with it.
    pub fn launch(&self, kind: SandboxKind) -> Launch<'_> {
        Launch {
            kind,
            command: self.command.iter().map(OsString::from).collect(),
            cwd: &self.cwd,
            cwd_pin: self.cwd_pin.as_ref(),
            policy_cwd: &self.policy_cwd,
            policy: &self.sandbox_policy,
            env: &self.env,
            parent_death: ParentDeath::Kill,
            proxy: None,
        }
    }
}
