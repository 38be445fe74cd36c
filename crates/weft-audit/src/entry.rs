//! The typed audit entry and constructors for the events weft records. The verifier does
//! not depend on this schema (it checks any JSON object), so new kinds and new `data`
//! members need no format version.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What happened. Serialised in snake_case (`node_started`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    RunStarted,
    RunFinished,
    NodeStarted,
    PolicyDecision,
    Approval,
    CriterionVerdict,
    /// A node reached its outcome (with its criteria verdict summary).
    NodeFinished,
    /// On resume, an attempt that was running when the process stopped was given up.
    NodeAbandoned,
    /// On resume, a failed node was reset to run again.
    NodeReset,
    /// A `notify` gate told its audience.
    GateNotified,
    /// A blocking gate began waiting on a person.
    GateWaiting,
    /// A person approved, rejected or answered a gate.
    HumanDecision,
    /// A gate's wait on a person timed out.
    HumanTimeout,
    /// Someone asked for the run to be cancelled.
    CancelRequested,
    /// A run event of a kind this build's audit table does not name: recorded by kind and
    /// digest only.
    Event,
}

/// One authority-relevant event. `at_ms` is the caller's clock (Unix milliseconds); numbers
/// are IEEE doubles in the canonical form, so identifiers belong in strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub kind: Kind,
    pub run_id: String,
    pub at_ms: u64,
    /// The identity (person or role) that acted, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// Kind-specific details.
    #[serde(default)]
    pub data: Map<String, Value>,
}

impl Entry {
    pub fn new(kind: Kind, run_id: impl Into<String>, at_ms: u64) -> Self {
        Entry {
            kind,
            run_id: run_id.into(),
            at_ms,
            actor: None,
            data: Map::new(),
        }
    }

    /// Sets who acted.
    #[must_use]
    pub fn actor(mut self, actor: impl Into<String>) -> Self {
        self.actor = Some(actor.into());
        self
    }

    /// Adds one `data` member.
    #[must_use]
    pub fn with(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        self.data.insert(name.into(), value.into());
        self
    }

    /// A node began, and where it was routed (provider/model, tool, or executor).
    pub fn node_started(run_id: &str, at_ms: u64, node_id: &str, route: impl Into<Value>) -> Self {
        Entry::new(Kind::NodeStarted, run_id, at_ms)
            .with("node_id", node_id)
            .with("route", route)
    }

    /// The policy engine decided (`allow`, `deny`, `ask`) on an action, by which rule.
    pub fn policy_decision(
        run_id: &str,
        at_ms: u64,
        action: &str,
        decision: &str,
        rule: &str,
    ) -> Self {
        Entry::new(Kind::PolicyDecision, run_id, at_ms)
            .with("action", action)
            .with("decision", decision)
            .with("rule", rule)
    }

    /// A person or role granted or denied an approval for a node.
    pub fn approval(run_id: &str, at_ms: u64, actor: &str, node_id: &str, granted: bool) -> Self {
        Entry::new(Kind::Approval, run_id, at_ms)
            .actor(actor)
            .with("node_id", node_id)
            .with("granted", granted)
    }

    /// A criterion's verdict on a node's output.
    pub fn criterion_verdict(
        run_id: &str,
        at_ms: u64,
        node_id: &str,
        criterion: &str,
        passed: bool,
    ) -> Self {
        Entry::new(Kind::CriterionVerdict, run_id, at_ms)
            .with("node_id", node_id)
            .with("criterion", criterion)
            .with("passed", passed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_serialise_with_snake_case_kinds_and_no_null_actor() {
        let e = Entry::node_started("r1", 7, "build", json!({"model": "m"}));
        assert_eq!(
            serde_json::to_value(&e).ok(),
            Some(json!({"kind": "node_started", "run_id": "r1", "at_ms": 7,
                        "data": {"node_id": "build", "route": {"model": "m"}}}))
        );
    }
}
