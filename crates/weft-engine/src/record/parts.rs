//! The pieces of a run record that map one logged value onto one schema object: attempts,
//! criteria results, usage. Kept apart from the assembly in `record` so each stays small.

use serde_json::{Map, Value, json};
use weft_core::FailureClass;

use crate::agent::{Route, Usage};
use crate::events::NodeOutcome;
use crate::timefmt::rfc3339_ms;

/// What `node_finished` says an attempt spent, and how it was routed.
pub(super) struct Spent<'a> {
    pub(super) routes: &'a [Option<Route>],
    pub(super) usage: &'a [Usage],
}

/// The `attempt` objects: every attempt before the last failed (it was retried); the last
/// one carries the node's outcome, error and criteria results. `routed` and `usage` come
/// from `node_started.routed` and `node_finished.attempt_usage`.
pub(super) fn attempts(
    starts: &[(u32, i64)],
    outcome: NodeOutcome,
    error: Option<&str>,
    verdict: &Option<Value>,
    finished_ms: i64,
    spent: &Spent<'_>,
) -> Value {
    let last = starts.len();
    let mut out = Vec::new();
    for (k, &(number, at)) in starts.iter().enumerate() {
        let mut a = Map::new();
        a.insert("attempt".into(), json!(number.max(1)));
        if k + 1 < last {
            a.insert("status".into(), json!("failed"));
        } else {
            a.insert("status".into(), json!(attempt_status(outcome, error)));
            a.insert("finished_at".into(), json!(rfc3339_ms(finished_ms)));
            if let Some(e) = error {
                a.insert("error".into(), json!(e));
            }
            if let Some(v) = verdict {
                a.insert("success".into(), criteria_results(v));
            }
        }
        a.insert("started_at".into(), json!(rfc3339_ms(at)));
        if let Some(Some(r)) = spent.routes.get(k) {
            a.insert("routed".into(), json!(r));
        }
        // `attempt_usage` is indexed by attempt number (an abandoned attempt keeps its slot).
        let u = spent
            .usage
            .get(number.max(1) as usize - 1)
            .copied()
            .unwrap_or_default();
        a.insert("usage".into(), usage(&u, 1, None));
        out.push(Value::Object(a));
    }
    Value::Array(out)
}

/// The schema's attempt status: the failure class when the schema has it, else `failed`
/// (the error keeps the class). The engine writes errors as `class: message`.
pub(super) fn attempt_status(outcome: NodeOutcome, error: Option<&str>) -> &'static str {
    // `Some(None)`: an error without a class (a blocked node's reason).
    let class = error.map(|e| FailureClass::split_logged(e).map(|(class, _)| class));
    match (outcome, class) {
        (NodeOutcome::Succeeded, None) => "succeeded",
        (NodeOutcome::Cancelled, _) => "cancelled",
        (
            _,
            Some(Some(
                class @ (FailureClass::Timeout
                | FailureClass::BudgetExceeded
                | FailureClass::CriteriaFailed),
            )),
        ) => class.as_str(),
        _ => "failed",
    }
}

/// A weft-criteria `Verdict` (format 1, as logged) as the schema's `criteria_results`.
pub(super) fn criteria_results(verdict: &Value) -> Value {
    let results: Vec<Value> = verdict
        .get("results")
        .and_then(Value::as_array)
        .map(|rs| {
            rs.iter()
                .map(|r| {
                    let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
                    let outcome = text("outcome");
                    let mut c = Map::new();
                    c.insert("id".into(), json!(text("id")));
                    c.insert("kind".into(), json!(text("kind")));
                    let severity = if text("severity") == "advisory" {
                        "advisory"
                    } else {
                        "required"
                    };
                    c.insert("severity".into(), json!(severity));
                    c.insert("passed".into(), json!(outcome == "passed"));
                    if let Some(s) = r.pointer("/evidence/summary").and_then(Value::as_str) {
                        c.insert("evidence".into(), json!(s));
                    }
                    if let Some(ms) = r.get("duration_ms").and_then(Value::as_u64) {
                        c.insert("duration_seconds".into(), json!(ms as f64 / 1000.0));
                    }
                    if outcome != "passed" && outcome != "failed" {
                        c.insert("error".into(), json!(outcome));
                    }
                    Value::Object(c)
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "passed": verdict.get("passed").and_then(Value::as_bool).unwrap_or(false),
        "results": results,
    })
}

/// The schema's `usage` object (`exec` work spends nothing: zeros).
pub(super) fn usage(spent: &Usage, executions: usize, wall_ms: Option<i64>) -> Value {
    let mut u = json!({
        "input_tokens": spent.input_tokens, "output_tokens": spent.output_tokens,
        // Sums of recorded costs carry float noise (0.0042 + 0.0081 = 0.012299…98).
        "total_tokens": spent.total_tokens(), "cost_usd": (spent.cost_usd * 1e9).round() / 1e9,
        "tool_calls": spent.tool_calls, "node_executions": executions,
    });
    if let Value::Object(m) = &mut u {
        if let Some(ms) = wall_ms {
            m.insert("wall_clock_seconds".into(), json!(ms as f64 / 1000.0));
        }
        // Tokens of these turns are weft's estimate: the provider reported none.
        if spent.estimated_turns > 0 {
            m.insert(
                "x-weft-estimated_turns".into(),
                json!(spent.estimated_turns),
            );
        }
    }
    u
}
