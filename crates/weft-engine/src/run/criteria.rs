//! `human` success criteria answered through the log (`docs/engine.md` §3e): the engine's
//! `HumanPort` is the fold of the decisions on an attempt's `human_criterion` waits; a
//! required criterion still pending makes the node wait for a person's answer.

use serde_json::{Map, Value};
use weft_core::Action;

use super::Driver;
use super::node::{Attempt, check_success_with};
use crate::EngineError;
use crate::human::Waiting;

/// The answers to one attempt's `human` success criteria, as the log holds them: the
/// engine's [`weft_criteria::HumanPort`]. A criterion with no answer is `Pending`.
#[derive(Clone, Debug, Default)]
pub(super) struct CriteriaAnswers(
    pub(super) std::collections::BTreeMap<String, weft_criteria::HumanAnswer>,
);

impl CriteriaAnswers {
    pub(super) fn insert(&mut self, criterion: String, d: &crate::human::Decision) {
        let reviewer = Some(d.actor.clone());
        let comment = d.note.clone();
        let answer = if d.outcome == "rejected" {
            weft_criteria::HumanAnswer::Rejected { reviewer, comment }
        } else {
            weft_criteria::HumanAnswer::Approved { reviewer, comment }
        };
        self.0.insert(criterion, answer);
    }
}

impl weft_criteria::HumanPort for CriteriaAnswers {
    fn ask(&self, request: &weft_criteria::HumanRequest) -> weft_criteria::HumanAnswer {
        self.0
            .get(&request.criterion_id)
            .cloned()
            .unwrap_or(weft_criteria::HumanAnswer::Pending)
    }
}

impl Driver<'_> {
    /// `success` evaluated with the attempt's answers to `human` criteria; `spent` is
    /// what the attempt spent before (kept in the result, with what its judges spend).
    pub(super) async fn success_with_answers(
        &self,
        node: usize,
        number: u32,
        outputs: Map<String, Value>,
        spent: crate::agent::Usage,
    ) -> Attempt {
        let job = std::sync::Arc::clone(&self.jobs[node]);
        let limits = self
            .budget
            .limits_for(node, &job.limits, self.clock.now_ms());
        let judge = super::judge::ModelJudge::new(
            &job,
            std::sync::Arc::clone(&self.agents),
            std::sync::Arc::clone(&self.clock),
            number,
            limits.less(&spent),
        );
        let mut ctx = self.checkpoint_context(node, None);
        ctx.attempt = Some(number);
        let answers = self
            .human
            .answers
            .get(&(node, number))
            .cloned()
            .unwrap_or_default();
        let mut a = check_success_with(&job, outputs, ctx, &answers, &judge).await;
        a.usage = spent.plus(&judge.spent());
        a
    }

    /// The required `human` criteria of a verdict that wait for an answer.
    pub(super) fn pending_human_criteria(&self, result: &Attempt) -> Option<Vec<String>> {
        let verdict: weft_criteria::Verdict =
            serde_json::from_value(result.verdict.clone()?).ok()?;
        let pending: Vec<String> = verdict
            .results
            .into_iter()
            .filter(|r| {
                r.kind == weft_criteria::Kind::Human
                    && r.severity == weft_criteria::Severity::Required
                    && r.outcome == weft_criteria::Outcome::Pending
            })
            .map(|r| r.id)
            .collect();
        (!pending.is_empty()).then_some(pending)
    }

    /// Opens the wait for the answer to `human` criterion `id` (stage `human_criterion`).
    pub(super) async fn open_criterion_wait(
        &mut self,
        node: usize,
        number: u32,
        id: &str,
        result: &Attempt,
    ) -> Result<Vec<Action>, EngineError> {
        let job = std::sync::Arc::clone(&self.jobs[node]);
        let criterion = job
            .success
            .as_ref()
            .and_then(|b| b.criteria.iter().find(|c| c.id == id));
        let ctx = self.checkpoint_context(node, Some(&result.outputs));
        let (timeout_seconds, deadline_ms) = self.effective_timeout(None);
        let (outputs, _) = super::redact::split_redacted(&result.outputs, &job.redact_outputs);
        let waiting = Waiting {
            node: job.id.clone(),
            stage: "human_criterion".into(),
            checkpoint: Some(id.to_string()),
            mode: "approve".into(),
            roles: criterion.map(|c| c.roles.clone()).unwrap_or_default(),
            prompt: criterion
                .and_then(|c| c.prompt.as_deref())
                .map(|p| super::human::render(p, &ctx)),
            present: criterion
                .map(|c| vec![Value::String(c.description.clone())])
                .unwrap_or_default(),
            collect: Map::new(),
            editable: Vec::new(),
            timeout_seconds,
            deadline_ms,
            on_timeout: self.human.policy.on_timeout.clone(),
            on_reject: "fail".into(),
            attempts: number,
            error: None,
            outputs: outputs.as_object().cloned().unwrap_or_default(),
            absorbed_by: None,
            verdict: result.verdict.clone(),
            redacted: Vec::new(),
        };
        self.open_wait(node, waiting).await
    }
}
