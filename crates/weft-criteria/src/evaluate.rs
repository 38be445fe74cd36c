//! The evaluator: walks a block through its [`Plan`] and records a [`Verdict`].

use std::time::Instant;

use crate::combine::{Plan, cost_class};
use crate::env::CriteriaEnv;
use crate::kinds;
use crate::model::{Criterion, SuccessBlock};
use crate::verdict::{CriterionResult, Evidence, Outcome, VERDICT_FORMAT, Verdict};

/// Evaluates `block` against `env`.
///
/// Never fails: every problem is recorded in the criterion's result. With
/// `evaluation_order: declared` every criterion runs in order; with `cheapest_first` they
/// run by cost class and required criteria left once the outcome is fixed are
/// `not_evaluated` (advisory ones still run). Both orders give the same `passed` and
/// `pending_human`. A block built by hand without `check()` still evaluates: a missing
/// kind field is an `Error` result, and `n_of` without `count` can never pass.
pub async fn evaluate(block: &SuccessBlock, env: &CriteriaEnv<'_>) -> Verdict {
    let costs: Vec<_> = block
        .criteria
        .iter()
        .map(|c| (cost_class(c.kind), c.severity))
        .collect();
    let count = block.count.or(Some(u64::MAX));
    let mut plan = Plan::new(block.mode, count, block.evaluation_order, &costs);
    let mut results: Vec<Option<CriterionResult>> = vec![None; block.criteria.len()];
    while let Some(index) = plan.next_index() {
        let Some(criterion) = block.criteria.get(index) else {
            break;
        };
        let started = Instant::now();
        let (outcome, evidence) = kinds::check(criterion, env).await;
        let evidence = if criterion.record_evidence {
            evidence
        } else {
            evidence.summary_only()
        };
        plan.record(index, outcome);
        if let Some(slot) = results.get_mut(index) {
            *slot = Some(result(
                criterion,
                outcome,
                evidence,
                u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            ));
        }
    }
    let (passed, pending_human) = plan.finish();
    let results = block
        .criteria
        .iter()
        .zip(results)
        .map(|(criterion, done)| {
            done.unwrap_or_else(|| {
                result(
                    criterion,
                    Outcome::NotEvaluated,
                    Evidence::summary(
                        "not evaluated: the block's outcome was already fixed (cheapest_first)",
                    ),
                    0,
                )
            })
        })
        .collect();
    Verdict {
        format: VERDICT_FORMAT,
        passed,
        pending_human,
        results,
    }
}

fn result(
    c: &Criterion,
    outcome: Outcome,
    evidence: Evidence,
    duration_ms: u64,
) -> CriterionResult {
    CriterionResult {
        id: c.id.clone(),
        kind: c.kind,
        severity: c.severity,
        outcome,
        evidence,
        duration_ms,
    }
}
