//! Human-in-the-loop, the log side (`docs/engine.md` §2c, §3c): the payloads of
//! `gate_waiting` and `human_decision` (defined in [`crate::wait`]), what a run's log says is waiting on a person
//! ([`open_waits`]) and what it answered ([`criteria_answers`]); the checks a decision must
//! pass (`check.rs`); and the inbox writers other processes use (`inbox.rs`: [`decide`],
//! [`request_cancel`]), which append only inbox kinds with `append_expecting` from the
//! last seq they read, so they never interleave with the driver or with each other.

use std::collections::BTreeMap;

use crate::events::RunEvent;

mod address;
mod check;
mod inbox;

pub use address::split_address;
pub use check::{DecisionRequest, Verb, check_decision, check_values};
pub(crate) use inbox::append_root_inbox;
pub use inbox::{InboxReceipt, decide, request_cancel, waits_of};
// The payloads themselves are vocabulary, below the log's readers (`crate::wait`).
pub use crate::wait::{Decision, Waiting, timeout_resumes};

/// One wait as the log tells it.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenWait {
    pub waiting: Waiting,
    /// A decision is in the log and the node has not settled yet.
    pub decided: Option<Decision>,
    /// A `human_timeout` is in the log: its action.
    pub timed_out: Option<String>,
}

impl OpenWait {
    /// Still waiting for a person: no decision, no timeout that resumed it.
    pub fn is_open(&self) -> bool {
        self.decided.is_none() && !self.timed_out.as_deref().is_some_and(timeout_resumes)
    }
}

/// The waits of a log that have no `node_finished` yet, in the order they began.
pub fn open_waits<'a>(events: impl IntoIterator<Item = &'a RunEvent>) -> Vec<OpenWait> {
    let mut order: Vec<String> = Vec::new();
    let mut waits: BTreeMap<String, OpenWait> = BTreeMap::new();
    for e in events {
        match e {
            RunEvent::GateWaiting(w) => {
                order.retain(|n| n != &w.node);
                order.push(w.node.clone());
                waits.insert(
                    w.node.clone(),
                    OpenWait {
                        waiting: (**w).clone(),
                        decided: None,
                        timed_out: None,
                    },
                );
            }
            RunEvent::HumanDecision(d) => {
                if let Some(w) = waits.get_mut(&d.node) {
                    w.decided = Some(d.clone());
                }
            }
            RunEvent::HumanTimeout { node, action } => {
                if let Some(w) = waits.get_mut(node) {
                    w.timed_out = Some(action.clone());
                }
            }
            // The node settled, or (after a `before_*` checkpoint) its attempt began.
            RunEvent::NodeFinished { node, .. } | RunEvent::NodeStarted { node, .. } => {
                waits.remove(node);
            }
            _ => {}
        }
    }
    order.into_iter().filter_map(|n| waits.remove(&n)).collect()
}

/// A wait's deadline as RFC 3339 (UTC, ms), when it has one.
pub fn deadline_text(w: &Waiting) -> Option<String> {
    w.deadline_ms.map(crate::timefmt::rfc3339_ms)
}

/// The answers to `human` success criteria in a log: (node, attempt, criterion id, the
/// decision), from each `gate_waiting` of stage `human_criterion` followed by its decision.
pub fn criteria_answers(events: &[RunEvent]) -> Vec<(String, u32, String, Decision)> {
    let mut asked: BTreeMap<String, (u32, String)> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        match e {
            RunEvent::GateWaiting(w) if w.stage == "human_criterion" => {
                if let Some(c) = &w.checkpoint {
                    asked.insert(w.node.clone(), (w.attempts, c.clone()));
                }
            }
            RunEvent::GateWaiting(w) => {
                asked.remove(&w.node);
            }
            RunEvent::HumanDecision(d) => {
                if let Some((attempt, criterion)) = asked.remove(&d.node) {
                    out.push((d.node.clone(), attempt, criterion, d.clone()));
                }
            }
            RunEvent::HumanTimeout { node, action } if timeout_resumes(action) => {
                if let Some((attempt, criterion)) = asked.remove(node) {
                    let decision = Decision::from_timeout(node, action);
                    out.push((node.clone(), attempt, criterion, decision));
                }
            }
            _ => {}
        }
    }
    out
}

/// The tool actions people approved in a log: (node, digest), from each `gate_waiting` of
/// stage `tool_approval` followed by an approving decision (`docs/engine.md` §3m).
pub fn tool_approvals(events: &[RunEvent]) -> Vec<(String, String)> {
    let mut asked: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        match e {
            RunEvent::GateWaiting(w) if w.stage == TOOL_APPROVAL => {
                if let Some(digest) = &w.checkpoint {
                    asked.insert(w.node.clone(), digest.clone());
                }
            }
            RunEvent::GateWaiting(w) => {
                asked.remove(&w.node);
            }
            RunEvent::HumanDecision(d) => {
                if let Some(digest) = asked.remove(&d.node)
                    && d.outcome != "rejected"
                {
                    out.push((d.node.clone(), digest));
                }
            }
            RunEvent::HumanTimeout { node, action } if action == "approve" => {
                if let Some(digest) = asked.remove(node) {
                    out.push((node.clone(), digest));
                }
            }
            _ => {}
        }
    }
    out
}

/// The stage of a wait for a person to approve one tool action.
pub const TOOL_APPROVAL: &str = "tool_approval";

/// The actor of the log's `cancel_requested`, if there is one.
pub fn cancel_requested(events: &[RunEvent]) -> Option<String> {
    events.iter().find_map(|e| match e {
        RunEvent::CancelRequested { actor, .. } => Some(actor.clone()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value, json};

    fn wait(mode: &str) -> Waiting {
        Waiting {
            node: "g".into(),
            stage: "gate".into(),
            checkpoint: None,
            mode: mode.into(),
            roles: vec!["lead".into()],
            prompt: None,
            present: Vec::new(),
            collect: json!({
                "size": {"type": "integer", "description": "n"},
                "colour": {"type": "string", "description": "c", "enum": ["red", "blue"]},
                "note": {"type": "string", "description": "c", "required": false},
            })
            .as_object()
            .cloned()
            .unwrap_or_default(),
            editable: vec!["summary".into()],
            timeout_seconds: None,
            deadline_ms: None,
            on_timeout: "hold".into(),
            on_reject: "fail".into(),
            attempts: 0,
            error: None,
            outputs: Map::new(),
            absorbed_by: None,
            verdict: None,
            redacted: vec!["secret".into()],
        }
    }

    fn request(verb: Verb, values: Value) -> DecisionRequest {
        DecisionRequest {
            node: "g".into(),
            verb,
            values: values.as_object().cloned().unwrap_or_default(),
            actor: "ann".into(),
            role: None,
            note: None,
        }
    }

    #[test]
    fn provided_values_are_checked_against_collect() {
        let w = wait("input");
        let ok = check_decision(
            &w,
            &request(Verb::Provide, json!({"size": 3, "colour": "red"})),
        );
        assert_eq!(ok.map(|d| d.outcome), Ok("provided".to_string()));
        let bad_type = check_decision(
            &w,
            &request(Verb::Provide, json!({"size": "3", "colour": "red"})),
        );
        assert!(
            bad_type
                .unwrap_err()
                .contains("`size` must be of type integer")
        );
        let bad_enum = check_decision(
            &w,
            &request(Verb::Provide, json!({"size": 3, "colour": "green"})),
        );
        assert!(bad_enum.unwrap_err().contains("`colour` must be one of"));
        let missing = check_decision(&w, &request(Verb::Provide, json!({"colour": "red"})));
        assert!(missing.unwrap_err().contains("`size` is required"));
        let unknown = check_decision(
            &w,
            &request(Verb::Provide, json!({"size": 1, "colour": "red", "x": 1})),
        );
        assert!(unknown.unwrap_err().contains("`x` is not collected"));
        assert!(check_decision(&w, &request(Verb::Approve, json!({}))).is_err());
    }

    #[test]
    fn roles_and_review_edits_are_checked() {
        let w = wait("review");
        let mut r = request(Verb::Approve, json!({"summary": "new"}));
        assert_eq!(
            check_decision(&w, &r).map(|d| d.outcome),
            Ok("edited".to_string())
        );
        r.role = Some("intern".into());
        assert!(
            check_decision(&w, &r)
                .unwrap_err()
                .contains("role `intern`")
        );
        r.role = Some("lead".into());
        r.values.insert("other".into(), json!(1));
        assert!(
            check_decision(&w, &r)
                .unwrap_err()
                .contains("`other` is not one")
        );
        let plain = check_decision(&wait("approve"), &request(Verb::Approve, json!({})));
        assert_eq!(plain.map(|d| d.outcome), Ok("approved".to_string()));
        let rejected = check_decision(&wait("input"), &request(Verb::Reject, json!({})));
        assert_eq!(rejected.map(|d| d.outcome), Ok("rejected".to_string()));
    }

    #[test]
    fn the_human_kinds_round_trip_through_the_store_form() {
        let w = wait("input");
        let decision = check_decision(
            &w,
            &request(Verb::Provide, json!({"size": 2, "colour": "blue"})),
        )
        .unwrap();
        let events = [
            RunEvent::GateWaiting(Box::new(w)),
            RunEvent::HumanDecision(decision),
            RunEvent::HumanTimeout {
                node: "g".into(),
                action: "hold".into(),
            },
            RunEvent::CancelRequested {
                actor: "bob".into(),
                note: Some("stop".into()),
            },
        ];
        let kinds: Vec<&str> = events.iter().map(RunEvent::kind).collect();
        assert_eq!(
            kinds,
            [
                "gate_waiting",
                "human_decision",
                "human_timeout",
                "cancel_requested"
            ]
        );
        let inbox: Vec<bool> = events.iter().map(RunEvent::is_inbox).collect();
        assert_eq!(inbox, [false, true, false, true]);
        for (i, e) in events.iter().enumerate() {
            let stored = e.to_new_event(7).unwrap();
            let payload = stored.payload.to_value().unwrap();
            assert!(payload.get("kind").is_none());
            let record = weft_store::EventRecord {
                run_id: "r".into(),
                seq: i as u64 + 1,
                kind: stored.kind,
                payload,
                recorded_at_ms: 7,
            };
            assert_eq!(&RunEvent::from_record(&record).unwrap(), e);
        }
    }

    #[test]
    fn open_waits_follow_the_log() {
        let w = wait("approve");
        let decision = check_decision(&w, &request(Verb::Approve, json!({}))).unwrap();
        let mut events = vec![RunEvent::GateWaiting(Box::new(w.clone()))];
        assert!(open_waits(&events)[0].is_open());
        events.push(RunEvent::HumanTimeout {
            node: "g".into(),
            action: "hold".into(),
        });
        assert!(open_waits(&events)[0].is_open());
        events.push(RunEvent::HumanDecision(decision.clone()));
        let waits = open_waits(&events);
        assert!(!waits[0].is_open());
        assert_eq!(waits[0].decided.as_ref(), Some(&decision));
        events.push(RunEvent::NodeFinished {
            node: "g".into(),
            outcome: crate::NodeOutcome::Succeeded,
            outputs: json!({}),
            redacted: Vec::new(),
            verdict: None,
            guards: Vec::new(),
            attempts: 0,
            error: None,
            absorbed_by: None,
            absorbed_failure: None,
            usage: None,
            attempt_usage: Vec::new(),
            warnings: Vec::new(),
        });
        assert!(open_waits(&events).is_empty());
    }
}
