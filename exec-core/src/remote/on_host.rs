//! Questions about a command that runs on another machine name that machine: the person (or
//! the MCP client's user) approves a command *there*, which the question must say.

use crate::orchestrator::{ApprovalAnswer, ApprovalRequest, Approver};

/// Asks `inner`, with the host the command would run on in the question.
pub(super) struct OnHost<'a, A> {
    pub host: &'a str,
    pub inner: &'a A,
}

impl<A: Approver> Approver for OnHost<'_, A> {
    fn ask(&self, request: &ApprovalRequest) -> impl std::future::Future<Output = ApprovalAnswer> {
        let request = ApprovalRequest { host: Some(self.host.to_owned()), ..request.clone() };
        async move { self.inner.ask(&request).await }
    }
}
