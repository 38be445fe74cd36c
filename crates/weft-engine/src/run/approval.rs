//! Tool actions a policy `ask` holds for a person (`docs/engine.md` §3m): an attempt whose
//! agent met an `ask` ends `permission_denied` with the action's [`ApprovalRequest`]; the
//! node then waits (stage `tool_approval`, the action's digest as the wait's `checkpoint`)
//! instead of going down the failure ladder. `weft approve RUN NODE` lets its next attempt
//! take exactly that action (the digest binds tool, normalised arguments, identity and policy
//! version: a changed argument asks again); `weft reject` fails the node. Approvals are
//! `human_decision` events, so they are in the log, the audit trail and a resume.

use serde_json::{Map, json};
use weft_core::Action;

use super::Driver;
use super::node::Attempt;
use crate::EngineError;
use crate::agent::ApprovalRequest;
use crate::human::{TOOL_APPROVAL, Waiting};

impl Driver<'_> {
    /// Opens the wait for a person to approve `approval`, which attempt `number` of `node`
    /// asked for.
    pub(super) async fn open_tool_approval(
        &mut self,
        node: usize,
        number: u32,
        approval: &ApprovalRequest,
        result: &Attempt,
    ) -> Result<Vec<Action>, EngineError> {
        let job = std::sync::Arc::clone(&self.jobs[node]);
        let (timeout_seconds, deadline_ms) = self.effective_timeout(None);
        let waiting = Waiting {
            node: job.id.clone(),
            stage: TOOL_APPROVAL.into(),
            checkpoint: Some(approval.digest.clone()),
            mode: "approve".into(),
            roles: Vec::new(),
            prompt: Some(format!(
                "Allow `{}` on {}? The policy asks a person: {}",
                approval.tool, approval.resource, approval.reason
            )),
            present: vec![json!({"tool": approval.tool, "resource": approval.resource,
                "digest": approval.digest})],
            collect: Map::new(),
            editable: Vec::new(),
            timeout_seconds,
            deadline_ms,
            on_timeout: self.human.policy.on_timeout.clone(),
            on_reject: "fail".into(),
            attempts: number,
            error: result.failure.as_ref().map(|(c, m)| format!("{c}: {m}")),
            outputs: Map::new(),
            absorbed_by: None,
            verdict: None,
            redacted: Vec::new(),
        };
        self.open_wait(node, waiting).await
    }
}
