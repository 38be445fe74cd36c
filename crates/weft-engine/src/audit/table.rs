//! Which run events are authority-relevant, and what of each goes into the audit log: one
//! table ([`RULES`]) for every event kind, including kinds other parts of the engine add
//! (`gate_waiting`, `human_decision`, `human_timeout`, `cancel_requested`,
//! `policy_decision`) and members they add to node events (`routed`, `usage`). A kind in
//! neither [`RULES`] nor [`NOT_AUDITED`] is still audited, by kind and digest only
//! ([`Kind::Event`]), so an event kind added without updating this table is never silent.
//!
//! The mapping works on the store form (`kind` + JSON payload), not on [`crate::RunEvent`],
//! so it reads any stored log, however new its kinds.

use serde_json::{Map, Value};
use weft_audit::{Entry, Kind};

/// How one event kind becomes an audit entry.
#[derive(Debug)]
pub struct Rule {
    /// The run event kind (`node_started`, …).
    pub event: &'static str,
    /// The audit entry kind.
    pub kind: Kind,
    /// `(payload member, entry data member)`: copied when present.
    pub members: &'static [(&'static str, &'static str)],
    /// Payload members naming who acted, tried in order; the first present is `actor`.
    pub actor: &'static [&'static str],
}

const WHO: &[&str] = &["actor", "by", "decided_by", "requested_by"];

/// The table. Members absent from a payload are skipped, so a member another branch adds
/// later (`routed`, `usage`) is recorded as soon as it exists.
pub const RULES: &[Rule] = &[
    Rule {
        event: "run_started",
        kind: Kind::RunStarted,
        members: &[
            ("graph_digest", "graph_digest"),
            ("params", "params"),
            ("max_parallel", "max_parallel"),
            ("on_node_failure", "on_node_failure"),
        ],
        actor: &["started_by"],
    },
    Rule {
        event: "node_started",
        kind: Kind::NodeStarted,
        members: &[
            ("node", "node_id"),
            ("attempt", "attempt"),
            ("routed", "route"),
            ("route", "route"),
            ("delay_ms", "delay_ms"),
        ],
        actor: &[],
    },
    Rule {
        event: "node_finished",
        kind: Kind::NodeFinished,
        members: &[
            ("node", "node_id"),
            ("outcome", "outcome"),
            ("attempts", "attempts"),
            ("error", "error"),
            ("absorbed_by", "absorbed_by"),
            ("routed", "route"),
            ("usage", "usage"),
        ],
        actor: &[],
    },
    Rule {
        event: "node_abandoned",
        kind: Kind::NodeAbandoned,
        members: &[
            ("node", "node_id"),
            ("attempt", "attempt"),
            ("reason", "reason"),
        ],
        actor: &[],
    },
    Rule {
        event: "node_reset",
        kind: Kind::NodeReset,
        members: &[("node", "node_id")],
        actor: WHO,
    },
    Rule {
        event: "gate_notified",
        kind: Kind::GateNotified,
        members: &[("node", "node_id"), ("roles", "roles")],
        actor: &[],
    },
    Rule {
        event: "gate_waiting",
        kind: Kind::GateWaiting,
        members: &[
            ("node", "node_id"),
            ("mode", "mode"),
            ("roles", "roles"),
            ("timeout_at_ms", "timeout_at_ms"),
        ],
        actor: &[],
    },
    Rule {
        event: "human_decision",
        kind: Kind::HumanDecision,
        members: &[
            ("node", "node_id"),
            ("decision", "decision"),
            ("role", "role"),
            ("comment", "comment"),
        ],
        actor: WHO,
    },
    Rule {
        event: "human_timeout",
        kind: Kind::HumanTimeout,
        members: &[("node", "node_id"), ("action", "action")],
        actor: &[],
    },
    Rule {
        event: "cancel_requested",
        kind: Kind::CancelRequested,
        members: &[("reason", "reason")],
        actor: WHO,
    },
    Rule {
        event: "policy_decision",
        kind: Kind::PolicyDecision,
        members: &[
            ("node", "node_id"),
            ("action", "action"),
            ("decision", "decision"),
            ("rule", "rule"),
        ],
        actor: WHO,
    },
    Rule {
        event: "run_finished",
        kind: Kind::RunFinished,
        members: &[("status", "status"), ("reasons", "reasons")],
        actor: &[],
    },
];

/// Event kinds deliberately left out: they carry no decision of authority (a `when` is a
/// pure function of data the audit already covers).
pub const NOT_AUDITED: &[&str] = &["node_when"];

/// The audit entry of one stored event, `None` for [`NOT_AUDITED`] kinds. Every entry's
/// `data` has `event_seq` (the event's position in the run's log) and `event_digest` (the
/// `sha256-` digest of the payload's RFC 8785 form), which tie it to the stored event.
pub fn entry_for(run_id: &str, seq: u64, at_ms: i64, kind: &str, payload: &Value) -> Option<Entry> {
    if NOT_AUDITED.contains(&kind) {
        return None;
    }
    let digest = weft_ags::digest::graph_digest(payload);
    entry_with_digest(run_id, seq, at_ms, kind, payload, digest)
}

/// The payload members [`entry_for`] reads of a `kind`'s payload; the others reach the
/// entry only through its `event_digest`.
pub fn members_read(kind: &str) -> impl Iterator<Item = &'static str> {
    let rule = RULES.iter().find(|r| r.event == kind);
    let members = rule.into_iter().flat_map(|r| r.members.iter().map(|m| m.0));
    let actor = rule.into_iter().flat_map(|r| r.actor.iter().copied());
    let verdict = (kind == "node_finished").then_some("verdict");
    members.chain(actor).chain(verdict)
}

/// [`entry_for`] with the payload's `event_digest` already taken (from its text, by
/// `weft_ags::digest::text_digest`); `payload` needs only the [`members_read`] of its kind.
pub fn entry_with_digest(
    run_id: &str,
    seq: u64,
    at_ms: i64,
    kind: &str,
    payload: &Value,
    event_digest: String,
) -> Option<Entry> {
    if NOT_AUDITED.contains(&kind) {
        return None;
    }
    let at = u64::try_from(at_ms).unwrap_or(0);
    let empty = Map::new();
    let fields = payload.as_object().unwrap_or(&empty);
    let mut entry = match RULES.iter().find(|r| r.event == kind) {
        Some(rule) => {
            let mut e = Entry::new(rule.kind, run_id, at);
            for (from, to) in rule.members {
                if let Some(v) = fields.get(*from).filter(|v| !v.is_null()) {
                    e.data.insert((*to).to_string(), v.clone());
                }
            }
            e.actor = rule
                .actor
                .iter()
                .find_map(|a| fields.get(*a).and_then(Value::as_str))
                .map(str::to_string);
            if kind == "node_finished"
                && let Some(summary) = fields.get("verdict").and_then(verdict_summary)
            {
                e.data.insert("verdict".into(), summary);
            }
            e
        }
        None => Entry::new(Kind::Event, run_id, at).with("event_kind", kind),
    };
    entry.data.insert("event_seq".into(), seq.into());
    entry
        .data
        .insert("event_digest".into(), event_digest.into());
    Some(entry)
}

/// A criteria verdict without its evidence (which may quote outputs): whether it passed,
/// and each criterion's id, kind, severity and outcome.
fn verdict_summary(verdict: &Value) -> Option<Value> {
    let v = verdict.as_object()?;
    let criteria: Vec<Value> = v
        .get("results")
        .and_then(Value::as_array)
        .map(|rs| {
            rs.iter()
                .map(|r| {
                    let mut c = Map::new();
                    for k in ["id", "kind", "severity", "outcome"] {
                        if let Some(x) = r.get(k) {
                            c.insert(k.into(), x.clone());
                        }
                    }
                    Value::Object(c)
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out = Map::new();
    out.insert(
        "passed".into(),
        v.get("passed").cloned().unwrap_or(Value::Null),
    );
    if v.get("pending_human").and_then(Value::as_bool) == Some(true) {
        out.insert("pending_human".into(), true.into());
    }
    out.insert("criteria".into(), Value::Array(criteria));
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{NodeOutcome, RunEvent};
    use serde_json::json;

    fn entry(e: &RunEvent) -> Option<Value> {
        entry_for("r", 4, 9, e.kind(), &e.payload().unwrap_or_default())
            .map(|x| serde_json::to_value(x).unwrap_or_default())
    }

    #[test]
    fn every_kind_of_this_build_is_in_the_table_or_excluded() {
        let known = [
            "run_started",
            "node_when",
            "node_started",
            "node_finished",
            "node_abandoned",
            "node_reset",
            "gate_notified",
            "run_finished",
        ];
        for k in known {
            assert!(
                RULES.iter().any(|r| r.event == k) || NOT_AUDITED.contains(&k),
                "{k}"
            );
        }
    }

    #[test]
    fn node_events_map_with_route_usage_and_a_verdict_summary() {
        let started = RunEvent::NodeStarted {
            node: "build".into(),
            attempt: 2,
            inputs: Some(json!({"secret_input": "x"})),
            delay_ms: Some(10),
            previous_failure: None,
            routed: None,
        };
        let e = entry(&started).unwrap_or_default();
        assert_eq!(e["kind"], "node_started");
        assert_eq!(e["data"]["node_id"], "build");
        assert_eq!(e["data"]["attempt"], 2);
        assert_eq!(e["data"]["event_seq"], 4);
        // Inputs are data, not authority: they stay in the run's log only.
        assert!(e["data"].get("inputs").is_none());
        let finished = RunEvent::NodeFinished {
            node: "build".into(),
            outcome: NodeOutcome::Failed,
            outputs: json!({"report": "long text"}),
            redacted: vec![],
            verdict: Some(json!({"format": 1, "passed": false, "pending_human": false,
                "results": [{"id": "tests", "kind": "command", "severity": "required",
                    "outcome": "failed", "evidence": {"summary": "exit 1"}, "duration_ms": 3}]})),
            guards: vec![],
            attempts: 2,
            error: Some("criteria".into()),
            absorbed_by: None,
            absorbed_failure: None,
            usage: None,
            attempt_usage: vec![],
            warnings: vec![],
        };
        let e = entry(&finished).unwrap_or_default();
        assert_eq!(e["kind"], "node_finished");
        assert_eq!(
            e["data"]["verdict"],
            json!({"passed": false, "criteria": [
                {"id": "tests", "kind": "command", "severity": "required", "outcome": "failed"}]})
        );
        assert!(e["data"].get("outputs").is_none());
        // A member another branch adds (`routed`, `usage`) is picked up from the payload.
        let routed = json!({"node": "n", "attempt": 1, "routed": {"model": "m"}});
        let e = entry_for("r", 1, 0, "node_started", &routed).unwrap();
        assert_eq!(e.data["route"], json!({"model": "m"}));
    }

    #[test]
    fn decisions_carry_their_actor_and_unknown_kinds_are_kept_by_digest() {
        let decision = json!({"node": "approve", "decision": "approved", "actor": "alice"});
        let e = entry_for("r", 7, 0, "human_decision", &decision).unwrap();
        assert_eq!(e.kind, Kind::HumanDecision);
        assert_eq!(e.actor.as_deref(), Some("alice"));
        assert_eq!(e.data["decision"], "approved");
        let e = entry_for("r", 8, 0, "something_new", &json!({"x": 1})).unwrap();
        assert_eq!(e.kind, Kind::Event);
        assert_eq!(e.data["event_kind"], "something_new");
        assert!(
            e.data["event_digest"]
                .as_str()
                .unwrap_or("")
                .starts_with("sha256-")
        );
        assert!(entry_for("r", 9, 0, "node_when", &json!({})).is_none());
        let started = json!({"v": 1, "graph_digest": "d", "params": {}, "started_by": "bob"});
        let e = entry_for("r", 1, 0, "run_started", &started).unwrap();
        assert_eq!(e.actor.as_deref(), Some("bob"));
    }
}
