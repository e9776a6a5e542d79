//! Approvals over MCP: an `elicitation/create` (form mode, no fields) that shows exactly what
//! would run — the argv as `render_argv` escapes it, the cwd, the stage (sandboxed run or
//! UNSANDBOXED run) and the reason. Accept approves this one run; decline and cancel deny it.
//!
//! A client that did not declare the elicitation capability at `initialize` cannot be asked:
//! every question is answered no (as `-a never` would), and the tool result says so.

use std::sync::Mutex;

use cordon_policies::{SandboxMode, render_argv, render_text};
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::ElicitationMode;
use rmcp::{Peer, RoleServer};

use crate::orchestrator::{ApprovalAnswer, ApprovalRequest, ApprovalStage, Approver};

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
    };
    let mut text = format!(
        "cordon asks to {stage}.\n\nCommand: {}\nWorking directory: {}\nReason: {}\n",
        command.text,
        render_text(&request.cwd.display().to_string()).text,
        render_text(&request.reason).text,
    );
    if command.hidden_characters {
        text.push_str(
            "Warning: the command contains characters a terminal would hide (shown escaped).\n",
        );
    }
    for line in &request.evidence {
        text.push_str(&format!("Sandbox denial: {}\n", render_text(line).text));
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
            reason: "escalation requested: needs the network".into(),
            stage,
            sandbox_mode: mode,
            evidence: Vec::new(),
            prefix: None,
        }
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
    }
}
