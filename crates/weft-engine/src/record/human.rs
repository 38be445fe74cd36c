//! The run record's `human_events[]` (per node), from the log's `gate_notified`,
//! `gate_waiting`, `human_decision` and `human_timeout` events.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::events::RunEvent;
use crate::timefmt::rfc3339_ms;

/// Collects the human events of a log, per node id, in log order.
#[derive(Default)]
pub(super) struct HumanEvents {
    /// The last wait of each node: (stage, mode, checkpoint id).
    waiting: BTreeMap<String, (String, String, Option<String>)>,
    pub(super) by_node: BTreeMap<String, Vec<Value>>,
}

impl HumanEvents {
    /// Takes one event (recorded at `at`, ms); others are ignored.
    pub(super) fn take(&mut self, event: &RunEvent, at: i64) {
        let (node, mut entry) = match event {
            RunEvent::GateNotified {
                node,
                stage,
                checkpoint,
                ..
            } => {
                let mut e = json!({
                    "at_stage": stage.as_deref().unwrap_or("gate"),
                    "mode": "notify",
                    "outcome": "notified",
                });
                if let Some(id) = checkpoint {
                    e["checkpoint_id"] = json!(id);
                }
                (node, e)
            }
            RunEvent::GateWaiting(w) => {
                self.waiting.insert(
                    w.node.clone(),
                    (w.stage.clone(), w.mode.clone(), w.checkpoint.clone()),
                );
                return;
            }
            RunEvent::HumanDecision(d) => {
                let mut e = self.base(&d.node, &d.outcome);
                e["actor"] = json!(d.actor);
                if let Some(note) = &d.note {
                    e["note"] = json!(note);
                }
                if let Some(role) = &d.role {
                    e["x-weft-role"] = json!(role);
                }
                (&d.node, e)
            }
            RunEvent::HumanTimeout { node, action } => {
                let mut e = self.base(node, "timed_out");
                e["note"] = json!(format!("on_timeout: {action}"));
                (node, e)
            }
            _ => return,
        };
        entry["at"] = json!(rfc3339_ms(at));
        self.by_node.entry(node.clone()).or_default().push(entry);
    }

    fn base(&self, node: &str, outcome: &str) -> Value {
        let (stage, mode, checkpoint) = self
            .waiting
            .get(node)
            .cloned()
            .unwrap_or_else(|| ("gate".into(), "approve".into(), None));
        let mut e = json!({"at_stage": stage, "mode": mode, "outcome": outcome});
        if let Some(id) = checkpoint {
            e["checkpoint_id"] = json!(id);
        }
        e
    }
}
