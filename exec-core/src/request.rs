//! One command to run, as the orchestrator and the sessions see it: argv, cwd, the workspace
//! its writable roots are resolved against, policies, environment, stdio. A leaf value: it
//! depends only on `launch` and `spawn`.

use std::borrow::Cow;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use cordon_policies::{AskForApproval, Escalation, Requester, SandboxRequest};

use crate::launch::{Launch, ParentDeath, PinnedDir, SandboxKind, Sandboxed, read_only_request};
use crate::spawn::{OutputMode, StdinMode};

/// One command to run.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// The argv, any bytes: it reaches `execve` as it is.
    pub command: Vec<OsString>,
    /// Where the command runs.
    pub cwd: PathBuf,
    /// `cwd` held open since it was resolved, before any question showed it: a local command
    /// starts in that directory or not at all. `None` for a directory on another machine.
    pub cwd_pin: Option<PinnedDir>,
    /// What the sandbox enforces. Its `policy_cwd`, what the writable roots are resolved
    /// against (the workspace), is fixed when a run or an executor starts: a per-call working
    /// directory changes `cwd`, never the roots: more write access is an escalation, which
    /// needs an approval.
    pub sandbox: SandboxRequest,
    pub approval: AskForApproval,
    pub escalation: Escalation,
    /// A person at a terminal or a program: what `on-request` does after a denial.
    pub requester: Requester,
    pub timeout: Option<Duration>,
    /// The complete environment of the command (already filtered by the environment policy).
    pub env: Vec<(OsString, OsString)>,
    pub stdin: StdinMode,
    pub output: OutputMode,
    /// Whether the caller can type into the command while it runs.
    pub interaction: Interaction,
}

/// Whether the caller can write to the command after it started: what an approval covers
/// depends on it, since a terminal session is driven by whoever holds it for as long as it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Interaction {
    /// The command gets its input when it starts and runs to its end (`cordon exec`, a pipe
    /// session).
    #[default]
    Batch,
    /// A terminal session the caller types into (`write_stdin`) for as long as it runs.
    Terminal,
}

impl ExecRequest {
    /// What a "yes for this session" answer covers: every field of the request as it runs,
    /// the descriptor that pins its cwd aside (a new one per call, for the same directory).
    /// Written out field by field, so a field added later is a compile error here until it is
    /// placed.
    pub(crate) fn session_identity(&self) -> String {
        let ExecRequest {
            command,
            cwd,
            cwd_pin: _,
            sandbox,
            approval,
            escalation,
            requester,
            timeout,
            env,
            stdin,
            output,
            interaction,
        } = self;
        format!(
            "{command:?}\u{0}{cwd:?}\u{0}{}\u{0}{approval:?}\u{0}{escalation:?}\u{0}{requester:?}\u{0}\
             {timeout:?}\u{0}{env:?}\u{0}{stdin:?}\u{0}{output:?}\u{0}{interaction:?}",
            sandbox.to_json()
        )
    }
}

impl ExecRequest {
    /// The argv as text for decisions (rules, the known-safe list, prefixes): a byte that is
    /// not UTF-8 becomes U+FFFD, which no rule, safe command or program name contains, so such
    /// a word matches only what matches any word.
    pub fn words(&self) -> Vec<String> {
        self.command.iter().map(|word| word.to_string_lossy().into_owned()).collect()
    }

    /// This request as it runs when approved as `sandboxed`: a known-safe command's sandbox
    /// becomes the read-only one; otherwise it is unchanged.
    pub fn under(&self, sandboxed: Sandboxed) -> Cow<'_, ExecRequest> {
        match sandboxed {
            Sandboxed::ReadOnly => Cow::Owned(ExecRequest {
                sandbox: read_only_request(&self.sandbox),
                ..self.clone()
            }),
            Sandboxed::Yes | Sandboxed::No => Cow::Borrowed(self),
        }
    }

    /// What the request's sandbox lets the command write, alone (no hidden-path catalogue);
    /// none when the policy cannot be resolved.
    pub(crate) fn writable_roots(&self, user_view: &cordon_policies::EnvSnapshot) -> Vec<PathBuf> {
        let sandbox = &self.sandbox;
        sandbox
            .policy
            .writable_roots(&sandbox.policy_cwd, &user_view.view(), |p| std::fs::canonicalize(p))
            .unwrap_or_default()
    }

    /// The launch of this request under `kind`. Nothing the orchestrator or a session starts
    /// may outlive cordon, so the command dies with it.
    pub fn launch(&self, kind: SandboxKind) -> Launch<'_> {
        Launch {
            kind,
            command: self.command.clone(),
            cwd: &self.cwd,
            cwd_pin: self.cwd_pin.as_ref(),
            sandbox: &self.sandbox,
            env: &self.env,
            parent_death: ParentDeath::Kill,
            proxy: None,
            #[cfg(target_os = "linux")]
            walked: None,
            #[cfg(target_os = "linux")]
            writes_to: None,
            #[cfg(target_os = "linux")]
            temporary_in: None,
        }
    }
}
