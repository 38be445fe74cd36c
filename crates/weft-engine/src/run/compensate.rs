//! Compensation (DIGEST §1.16, SPEC §14): when a run ends `failed` or `cancelled`, the
//! `failure.compensation` node of every succeeded node runs, in reverse order of the
//! succeeded nodes' completion, before `run_finished` (FINALIZE step 3).
//!
//! The order and what already ran are read from the log, so a run resumed in the middle of
//! its compensations runs exactly those that did not end: a `compensation_started` without
//! its `compensation_finished` (the process stopped while it ran) runs again, so a
//! compensation should be idempotent like any effect that may be retried.
//!
//! A compensation is one attempt of the compensation node through the agent port, with its
//! own inputs resolved against the run's final state: no retries, no failure ladder, no
//! graph budget admission (undoing effects must not be refused because the run spent its
//! budget; what it spends is logged and counted). A failed compensation adds a reason to
//! `run_finished` and the next one still runs.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;
use weft_core::FailureClass;

use super::Driver;
use super::node::{attempt, resolve_inputs_noting};
use crate::EngineError;
use crate::events::{NodeOutcome, RunEvent};

impl Driver<'_> {
    /// Runs the pending compensations; each failure is a reason for `run_finished`.
    pub(super) async fn compensate(&mut self) -> Result<Vec<String>, EngineError> {
        // The run's compensations are the root scope's (fragment nodes may not declare
        // any: `container.rs`); an instance that fails is its container's failure.
        if self.scope.path.is_some() || self.jobs.iter().all(|j| j.compensation.is_none()) {
            return Ok(Vec::new());
        }
        let (completed, done) = self.completion_log().await?;
        let mut reasons = Vec::new();
        for node in completed.iter().rev() {
            let Some(index) = self.jobs.iter().position(|j| &j.id == node) else {
                continue;
            };
            let Some(target) = self.jobs[index].compensation.clone() else {
                continue;
            };
            if done.contains(&(target.clone(), node.clone())) {
                continue;
            }
            if let Some(reason) = self.compensate_one(node, &target).await? {
                reasons.push(reason);
            }
        }
        Ok(reasons)
    }

    /// The succeeded nodes in completion order, and the (compensation, node) pairs that
    /// already ended, from the log.
    #[allow(clippy::type_complexity)]
    async fn completion_log(
        &self,
    ) -> Result<(Vec<String>, BTreeSet<(String, String)>), EngineError> {
        let mut completed = Vec::new();
        let mut done = BTreeSet::new();
        let mut from = 1;
        loop {
            let batch = self.store.read_async(&self.run_id, from, 1000).await?;
            let Some(last) = batch.last() else { break };
            from = last.seq + 1;
            for record in batch.iter().filter(|r| super::scope_of(r).is_none()) {
                if !matches!(
                    record.kind.as_str(),
                    "node_finished" | "node_reset" | "compensation_finished"
                ) {
                    continue;
                }
                match RunEvent::from_record(record)
                    .map_err(|e| EngineError::Internal(e.to_string()))?
                {
                    RunEvent::NodeFinished {
                        node,
                        outcome: NodeOutcome::Succeeded,
                        ..
                    } => completed.push(node),
                    // A reopened node's earlier end no longer counts.
                    RunEvent::NodeReset { node } => completed.retain(|n| n != &node),
                    RunEvent::CompensationFinished {
                        node, compensates, ..
                    } => {
                        done.insert((node, compensates));
                    }
                    _ => {}
                }
            }
        }
        Ok((completed, done))
    }

    /// Runs `target` to undo `node`; `Some(reason)` when it did not succeed.
    async fn compensate_one(
        &mut self,
        node: &str,
        target: &str,
    ) -> Result<Option<String>, EngineError> {
        let Some(index) = self.jobs.iter().position(|j| j.id == target) else {
            // The validator refuses an unknown compensation node (AG113); say so anyway.
            return Ok(Some(format!(
                "compensation of `{node}`: no node `{target}`"
            )));
        };
        let job = Arc::clone(&self.jobs[index]);
        self.append(&RunEvent::CompensationStarted {
            node: target.to_string(),
            compensates: node.to_string(),
        })
        .await?;
        let mut ctx = self.context();
        // An input that `on_expression_error: false` turns into `false` is noted as RT062,
        // as on a node's own start.
        let mut notes = Vec::new();
        let result = match resolve_inputs_noting(&job, &ctx, &mut notes) {
            Ok(inputs) => {
                ctx.inputs = Some(inputs);
                let env = self.compensation_env(index);
                attempt(Arc::clone(&job), None, ctx, env).await
            }
            Err(e) => super::node::Attempt {
                failure: Some((FailureClass::OutputMissing, e)),
                ..Default::default()
            },
        };
        self.budget.spent(index, 1, result.usage);
        let (outputs, _) = super::redact::split_redacted(&result.outputs, &job.redact_outputs);
        let error = result
            .failure
            .as_ref()
            .map(|(class, message)| format!("{class}: {message}"));
        self.append(&RunEvent::CompensationFinished {
            node: target.to_string(),
            compensates: node.to_string(),
            outcome: if error.is_none() {
                NodeOutcome::Succeeded
            } else {
                NodeOutcome::Failed
            },
            outputs: match outputs {
                Value::Object(m) if m.is_empty() => Value::Null,
                other => other,
            },
            error: error.clone(),
            usage: (!result.usage.is_zero()).then_some(result.usage),
            warnings: notes.into_iter().chain(result.warnings).collect(),
        })
        .await?;
        Ok(error.map(|e| format!("compensation `{target}` of `{node}` failed: {e}")))
    }
}
