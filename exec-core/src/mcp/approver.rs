//! Approvals over MCP: an `elicitation/create` (form mode, no fields) that shows exactly what
//! would run — the argv as `render_argv` escapes it, the host it runs on when that is another
//! machine, the cwd, the stage (sandboxed run or UNSANDBOXED run) and the reason (which
//! carries the client's justification). Every field is escaped the same way, and a warning
//! names each one that held a character a terminal would hide or obey. Accept approves this
//! one run; decline and cancel deny it.
//!
//! A client that did not declare the elicitation capability at `initialize` cannot be asked:
//! every question is answered no (as `-a never` would), and the tool result says so.

use std::sync::Mutex;

use std::os::unix::ffi::OsStrExt;

use cordon_policies::{Rendered, SandboxMode, render_argv, render_bytes, render_text};
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::ElicitationMode;
use rmcp::{Peer, RoleServer};

use crate::orchestrator::{ApprovalAnswer, ApprovalRequest, ApprovalStage, Approver};
use crate::request::Interaction;

/// Asks the MCP client's user; remembers what the tool result should tell the model.
pub(super) struct ElicitationApprover {
    peer: Peer<RoleServer>,
    notes: Mutex<Vec<String>>,
}

impl ElicitationApprover {
    pub fn new(peer: Peer<RoleServer>) -> Self {
        ElicitationApprover { peer, notes: Mutex::new(Vec::new()) }
    }

    /// Lines for the tool result: why a question was answered no.
    pub fn notes(&self) -> Vec<String> {
        self.notes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    fn note(&self, line: String) {
        self.notes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(line);
    }

    fn can_ask(&self) -> bool {
        self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form)
    }
}

impl Approver for ElicitationApprover {
    fn ask(&self, request: &ApprovalRequest) -> impl std::future::Future<Output = ApprovalAnswer> {
        let message = question(request);
        async move {
            if !self.can_ask() {
                self.note(
                    "cordon: this command needs approval, and this MCP client cannot be asked \
                     (it did not declare the elicitation capability): denied, as with -a never"
                        .to_owned(),
                );
                return ApprovalAnswer::Denied;
            }
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema: ElicitationSchema::new(Default::default()),
            };
            match self.peer.create_elicitation(params).await {
                Ok(result) => match result.action {
                    ElicitationAction::Accept => ApprovalAnswer::Approved,
                    ElicitationAction::Decline => {
                        self.note("cordon: the user declined to run this command".to_owned());
                        ApprovalAnswer::Denied
                    }
                    // Cancel, and any answer a later protocol adds: not a yes.
                    _ => {
                        self.note("cordon: the user dismissed the approval request".to_owned());
                        ApprovalAnswer::Denied
                    }
                },
                Err(error) => {
                    self.note(format!("cordon: asking for approval failed ({error}): denied"));
                    ApprovalAnswer::Denied
                }
            }
        }
    }
}

/// The elicitation message: what would run, where, and whether inside the sandbox.
pub(super) fn question(request: &ApprovalRequest) -> String {
    let command = render_argv(&request.command);
    let unsandboxed = request.sandbox_mode == SandboxMode::DangerFullAccess;
    let stage = match (request.stage, unsandboxed) {
        (ApprovalStage::BeforeRun, false) => {
            format!("run it inside the sandbox ({})", request.sandbox_mode.as_str())
        }
        (ApprovalStage::BeforeRun, true) => "run it UNSANDBOXED (no sandbox at all)".to_owned(),
        (ApprovalStage::RetryWithoutSandbox, _) => {
            "run it again UNSANDBOXED: the sandbox blocked the first attempt".to_owned()
        }
        (ApprovalStage::RetryWithDirectWrites, _) => {
            "run it again in the sandbox, writing the workspace directly".to_owned()
        }
    };
    let cwd = render_bytes(request.cwd.as_os_str().as_bytes());
    let reason = render_text(&request.reason);
    let evidence: Vec<Rendered> = request.evidence.iter().map(|line| render_text(line)).collect();
    let mut text = format!("cordon asks to {stage}.\n\nCommand: {}\n", command.text);
    if request.interaction == Interaction::Terminal {
        text.push_str(
            "Session: an interactive terminal; the agent can type into it for as long as it \
             runs\n",
        );
    }
    if let Some(host) = &request.host {
        text.push_str(&format!("Host: {} (the command runs there)\n", render_text(host).text));
    }
    text.push_str(&format!("Working directory: {}\nReason: {}\n", cwd.text, reason.text));
    for line in &evidence {
        text.push_str(&format!("Sandbox denial: {}\n", line.text));
    }
    let flagged: Vec<&str> = [
        (command.hidden_characters, "the command"),
        (cwd.hidden_characters, "the working directory"),
        (reason.hidden_characters, "the reason"),
        (evidence.iter().any(|line| line.hidden_characters), "the sandbox denial"),
    ]
    .into_iter()
    .filter_map(|(hidden, what)| hidden.then_some(what))
    .collect();
    if !flagged.is_empty() {
        text.push_str(&format!(
            "Warning: {} contains characters a terminal would hide or obey (shown escaped).\n",
            flagged.join(", ")
        ));
    }
    text.push_str("\nAccept runs it once; decline refuses it.");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(stage: ApprovalStage, mode: SandboxMode) -> ApprovalRequest {
        ApprovalRequest {
            command: vec!["bash".into(), "-lc".into(), "rm -rf x\u{1b}[2J".into()],
            cwd: "/work/space".into(),
            interaction: crate::request::Interaction::Batch,
            reason: "escalation requested: needs the network".into(),
            stage,
            sandbox_mode: mode,
            evidence: Vec::new(),
            prefix: None,
            host: None,
            cause: crate::AskCause::Escalation,
        }
    }

    #[test]
    fn a_terminal_session_is_named_in_the_question() {
        let mut terminal = request(ApprovalStage::BeforeRun, SandboxMode::DangerFullAccess);
        terminal.interaction = crate::request::Interaction::Terminal;
        assert!(question(&terminal).contains("interactive terminal"));
        let pipe = request(ApprovalStage::BeforeRun, SandboxMode::DangerFullAccess);
        assert!(!question(&pipe).contains("interactive terminal"));
    }

    #[test]
    fn the_question_shows_the_escaped_command_cwd_stage_and_reason() {
        let text = question(&request(ApprovalStage::BeforeRun, SandboxMode::DangerFullAccess));
        assert!(text.contains("UNSANDBOXED"), "{text}");
        assert!(text.contains("/work/space"), "{text}");
        assert!(text.contains("needs the network"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.contains("hide"), "{text}");
        let text = question(&request(ApprovalStage::BeforeRun, SandboxMode::WorkspaceWrite));
        assert!(text.contains("inside the sandbox (workspace-write)"), "{text}");
        assert!(!text.contains("UNSANDBOXED"), "{text}");
        assert!(!text.contains("Host:"), "{text}");
    }

    #[test]
    fn a_justification_or_cwd_that_hides_characters_is_escaped_and_flagged() {
        let mut asked = request(ApprovalStage::BeforeRun, SandboxMode::DangerFullAccess);
        asked.command = vec!["make".into(), "test".into()];
        asked.cwd = "/work/\u{1b}[8mspace".into();
        asked.reason = "the command asks to run outside the sandbox: fine\r\u{1b}]0;x\u{7}".into();
        asked.host = Some("build\u{1b}[2K".into());
        let text = question(&asked);
        assert!(!text.contains(['\u{1b}', '\r', '\u{7}']), "{text:?}");
        assert!(
            text.contains(
                r"Reason: the command asks to run outside the sandbox: fine\r\x1b]0;x\x07"
            )
        );
        assert!(text.contains(r"Working directory: /work/\x1b[8mspace"), "{text}");
        assert!(text.contains(r"Host: build\x1b[2K (the command runs there)"), "{text}");
        assert!(
            text.contains("Warning: the working directory, the reason contains characters"),
            "{text}"
        );
    }
}
