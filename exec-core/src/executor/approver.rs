//! Approvals over the protocol: an `approval_request` to the harness, answered by its
//! `approval_response` with the same id.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::protocol::{ApprovalDecision, Outgoing};
use crate::orchestrator::{ApprovalAnswer, ApprovalRequest, Approver};

/// The questions waiting for an answer, by approval request id.
pub(super) type Pending = Rc<RefCell<HashMap<String, oneshot::Sender<ApprovalDecision>>>>;

/// Asks the harness over the protocol, on behalf of one call.
pub(super) struct ProtocolApprover {
    pub call_request_id: Value,
    pub out: mpsc::UnboundedSender<Outgoing>,
    pub pending: Pending,
    pub next: Rc<RefCell<u64>>,
}

impl Approver for ProtocolApprover {
    fn ask(&self, request: &ApprovalRequest) -> impl std::future::Future<Output = ApprovalAnswer> {
        let id = {
            let mut next = self.next.borrow_mut();
            *next += 1;
            format!("a{next}")
        };
        let (tx, rx) = oneshot::channel();
        self.pending.borrow_mut().insert(id.clone(), tx);
        let display = cordon_policies::render_argv(&request.command);
        let sent = self.out.send(Outgoing::ApprovalRequest {
            request_id: id,
            call_request_id: self.call_request_id.clone(),
            // Protocol 1 is UTF-8: a byte that is not becomes U+FFFD here, and `display`
            // shows the exact bytes (`$'\xHH'`) with `hiddenCharacters` set.
            command: request.command.iter().map(|w| w.to_string_lossy().into_owned()).collect(),
            display: display.text,
            hidden_characters: display.hidden_characters,
            cwd: request.cwd.display().to_string(),
            interactive: request.interaction == crate::request::Interaction::Terminal,
            reason: request.reason.clone(),
            stage: request.stage,
            sandbox_mode: request.sandbox_mode,
            evidence: request.evidence.clone(),
            host: request.host.clone(),
        });
        async move {
            if sent.is_err() {
                return ApprovalAnswer::Denied;
            }
            match rx.await {
                Ok(ApprovalDecision::Approved) => ApprovalAnswer::Approved,
                Ok(ApprovalDecision::ApprovedForSession) => ApprovalAnswer::ApprovedForSession,
                // A harness that went away answered no.
                Ok(ApprovalDecision::Denied) | Err(_) => ApprovalAnswer::Denied,
            }
        }
    }
}
