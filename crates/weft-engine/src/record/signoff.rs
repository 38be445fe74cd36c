//! The record's `x-weft-signoffs`: each person's answer to a graph-level `human` criterion
//! (`run/signoff.rs`), in log order. The AGS record has `human_events` only on node runs,
//! and a sign-off belongs to no node.

use serde_json::{Value, json};

use super::rfc3339_ms;
use crate::events::RunEvent;

/// `{criterion, outcome, actor, x-weft-role?, note?, at}` per `human_decision` on a
/// sign-off key, and `{criterion, outcome: "timed_out", on_timeout, at}` per
/// `human_timeout` on one, among the root scope's `events` (with their times); `None` when there is
/// none.
pub(super) fn listing(events: &[(RunEvent, i64)]) -> Option<Value> {
    let list: Vec<Value> = events
        .iter()
        .filter_map(|(event, at)| match event {
            RunEvent::HumanDecision(d) => {
                let criterion = crate::wait::criterion_of(&d.node)?;
                let mut entry = json!({
                    "criterion": criterion,
                    "outcome": d.outcome,
                    "actor": d.actor,
                    "at": rfc3339_ms(*at),
                });
                if let Some(role) = &d.role {
                    entry["x-weft-role"] = json!(role);
                }
                if let Some(note) = &d.note {
                    entry["note"] = json!(note);
                }
                Some(entry)
            }
            RunEvent::HumanTimeout { node, action } => {
                let criterion = crate::wait::criterion_of(node)?;
                Some(json!({
                    "criterion": criterion,
                    "outcome": "timed_out",
                    "on_timeout": action,
                    "at": rfc3339_ms(*at),
                }))
            }
            _ => None,
        })
        .collect();
    (!list.is_empty()).then_some(Value::Array(list))
}
