//! What waits on a person, as the log writes it: the payloads of `gate_waiting`
//! ([`Waiting`]) and `human_decision` ([`Decision`]), what a timeout's action does
//! ([`timeout_resumes`]), and the sign-off key a graph-level `human` criterion waits under
//! ([`criterion_of`]). Vocabulary of the event format ([`crate::events`]), below every reader
//! of the log; what a log says is waiting, and the inbox writers, are [`crate::human`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A node waits on a person: the payload of `gate_waiting`. Self-contained, so a resume
/// (or `weft approve` in another process) needs nothing but the log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Waiting {
    pub node: String,
    /// `gate`, `human_takeover` (a fallback) or `on_escalation`.
    pub stage: String,
    /// `human[].id` of a checkpoint, when one waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// `approve`, `review` or `input`.
    pub mode: String,
    /// Who may decide (`gate.roles`); empty: anyone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// The prompt, rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// `gate.present`, each expression evaluated (an error is `{"error": "..."}`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub present: Vec<Value>,
    /// `input` mode: the values to collect, name → AGS param spec.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub collect: Map<String, Value>,
    /// `review` mode: the declared outputs an edit may write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub editable: Vec<String>,
    /// The effective timeout (the node's, else `policy.default_human_timeout_seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<f64>,
    /// When the wait times out, in ms since the epoch (from `timeout_seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<i64>,
    /// The effective `on_timeout`: `fail`, `hold`, `escalate` or `approve`.
    pub on_timeout: String,
    /// What a rejection does: `fail`, `skip_dependents` or `route` (gates; other stages `fail`).
    pub on_reject: String,
    /// Attempts the node made before it waited (0 for a gate).
    #[serde(default)]
    pub attempts: u32,
    /// The failure the wait is about (takeover, escalation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Outputs the node already has (escalation: the failed attempt's, loggable ones).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub outputs: Map<String, Value>,
    /// The failure-ladder rung that absorbs the failure when the person supplies outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absorbed_by: Option<String>,
    /// `on_criteria_failure`: the failed criteria verdict (`weft_criteria::Verdict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Value>,
    /// The node's outputs declared `redact: true`: never in the log, so never set by a
    /// decision (and left out of `outputs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
}

/// A person's decision: the payload of `human_decision` (an inbox kind).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub node: String,
    /// `approved`, `rejected`, `edited` (a review with edits) or `provided` (input).
    pub outcome: String,
    /// Provided values (input) or edits (review), by output name.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub values: Map<String, Value>,
    /// Who decided (`--as`, else `$USER`, else `unknown`).
    pub actor: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Decision {
    /// The decision a passed deadline stands for: `on_timeout: approve` approves, any other
    /// resuming action rejects, in the name of `on_timeout`.
    pub fn from_timeout(node: &str, action: &str) -> Decision {
        Decision {
            node: node.to_string(),
            outcome: if action == "approve" {
                "approved"
            } else {
                "rejected"
            }
            .into(),
            values: Map::new(),
            actor: "on_timeout".into(),
            role: None,
            note: Some(format!("on_timeout: {action}")),
        }
    }
}

/// Does a `human_timeout` with this action resume the node (it then settles)? `hold` and
/// `escalate` keep it waiting.
pub fn timeout_resumes(action: &str) -> bool {
    !matches!(action, "hold" | "escalate")
}

/// The prefix of a sign-off key (`success/<criterion id>`).
pub const KEY_PREFIX: &str = "success/";

/// The criterion id a sign-off key answers, if `node` is one.
pub fn criterion_of(node: &str) -> Option<&str> {
    node.strip_prefix(KEY_PREFIX)
}
