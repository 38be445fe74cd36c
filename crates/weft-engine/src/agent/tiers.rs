//! What a node asks of the router, read from the document: its [`TierRequest`] (the
//! `intelligence` block after `defaults`, and `failure.retry.escalate_intelligence`), the
//! tier request of an `llm_judge` criterion's `judge_intelligence` block, and whether a node
//! calls a model at all. Pure reads, shared by the run's preparation (`run/job.rs`) and
//! `weft routing explain` (`explain.rs`), so the two cannot disagree.

use serde_json::{Map, Value};
use weft_ags::model::{Fields, Node, NodeType, effective_block, obj_of, str_of};

use super::route::{Tier, TierRequest};

/// A node's tier request: `intelligence` after `defaults` (no block: `standard`, no
/// downgrade), and `failure.retry.escalate_intelligence` (after `defaults`).
pub fn tier_request(node: &Node<'_>, defaults: Option<&Map<String, Value>>) -> TierRequest {
    let intelligence = effective_block(node, defaults, "intelligence");
    let failure = effective_block(node, defaults, "failure");
    let retry = failure.as_ref().and_then(|f| obj_of(f, "retry"));
    let tier_of = |key: &str| {
        intelligence
            .as_ref()
            .and_then(|i| str_of(i, key))
            .and_then(Tier::parse)
    };
    TierRequest {
        tier: tier_of("tier").unwrap_or(Tier::Standard),
        allow_downgrade: intelligence
            .as_ref()
            .and_then(|i| i.field("allow_downgrade"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        escalate_to: tier_of("escalate_to"),
        min_context_tokens: intelligence
            .as_ref()
            .and_then(|i| i.field("min_context_tokens"))
            .and_then(Value::as_u64),
        escalate_on_retry: retry
            .and_then(|r| r.field("escalate_intelligence"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
    }
}

/// `failure.retry.max_attempts` after `defaults` (at least 1; absent: 1).
pub fn max_attempts(node: &Node<'_>, defaults: Option<&Map<String, Value>>) -> u32 {
    max_attempts_of(
        effective_block(node, defaults, "failure")
            .as_ref()
            .and_then(|f| obj_of(f, "retry")),
    )
}

/// [`max_attempts`] from the node's effective `failure.retry` block, when the caller has it.
pub fn max_attempts_of(retry: Option<&Map<String, Value>>) -> u32 {
    retry
        .and_then(|r| r.field("max_attempts"))
        .and_then(Value::as_u64)
        .map_or(1, |n| u32::try_from(n).unwrap_or(u32::MAX).max(1))
}

/// A `judge_intelligence` block as a tier request (no escalation: a judge is not retried).
/// `Err` names an unknown tier.
pub fn judge_tier_request(block: &Value) -> Result<TierRequest, String> {
    let tier = match block.get("tier").and_then(Value::as_str) {
        None => Tier::Standard,
        Some(name) => {
            Tier::parse(name).ok_or_else(|| format!("judge_intelligence: unknown tier `{name}`"))?
        }
    };
    Ok(TierRequest {
        tier,
        allow_downgrade: block
            .get("allow_downgrade")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        escalate_to: None,
        min_context_tokens: block.get("min_context_tokens").and_then(Value::as_u64),
        escalate_on_retry: false,
    })
}

/// Whether the node's own work is a model call, as the run prepares it: a task with no
/// `x-weft-exec` and no executor extension (`x-…-executor`, `x-weft-…`), or a decision whose
/// `evaluator` is not `expression`. Gates and the other types never call a model themselves
/// (their `llm_judge` criteria still may).
pub fn calls_model(node: &Node<'_>) -> bool {
    match node.node_type() {
        Some(NodeType::Task) => {
            node.obj("x-weft-exec").is_none() && !node.obj.keys().any(|k| is_executor_key(k))
        }
        Some(NodeType::Decision) => {
            obj_of(node.obj, "decision")
                .and_then(|d| str_of(d, "evaluator"))
                .unwrap_or("agent")
                != "expression"
        }
        _ => false,
    }
}

/// An extension key naming an executor other than `x-weft-exec` (the node is `blocked`
/// in a build without it, and so calls no model).
pub fn is_executor_key(k: &str) -> bool {
    (k.starts_with("x-") && k.ends_with("-executor"))
        || (k.starts_with("x-weft-") && k != "x-weft-exec")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use weft_ags::model::scopes;

    fn nodes(doc: &Value) -> Vec<(String, bool, TierRequest, u32)> {
        let root = doc.as_object().cloned().unwrap_or_default();
        let defaults = root.get("defaults").and_then(Value::as_object);
        let scope = scopes(&root).into_iter().next();
        scope
            .map(|s| s.nodes())
            .unwrap_or_default()
            .iter()
            .map(|n| {
                (
                    n.id.to_string(),
                    calls_model(n),
                    tier_request(n, defaults),
                    max_attempts(n, defaults),
                )
            })
            .collect()
    }

    #[test]
    fn model_nodes_and_their_requests_after_defaults() {
        let doc = json!({"id": "g",
        "defaults": {"intelligence": {"tier": "advanced", "allow_downgrade": true},
                     "failure": {"retry": {"max_attempts": 3, "escalate_intelligence": true}}},
        "nodes": {
            "agent": {"intelligence": {"tier": "minimal", "min_context_tokens": 9000}},
            "cmd": {"x-weft-exec": {"run": "true"}},
            "ext": {"x-acme-executor": {}},
            "pick": {"type": "decision", "decision": {"evaluator": "expression"}},
            "choose": {"type": "decision"},
            "ok": {"type": "gate", "gate": {"mode": "approve"}}
        }});
        let found = nodes(&doc);
        let calls: Vec<(&str, bool)> = found
            .iter()
            .map(|(id, c, _, _)| (id.as_str(), *c))
            .collect();
        assert_eq!(
            calls,
            [
                ("agent", true),
                ("cmd", false),
                ("ext", false),
                ("pick", false),
                ("choose", true),
                ("ok", false)
            ]
        );
        let (_, _, agent, attempts) = &found[0];
        assert_eq!(agent.tier, Tier::Minimal);
        assert!(agent.allow_downgrade && agent.escalate_on_retry);
        assert_eq!((agent.min_context_tokens, *attempts), (Some(9000), 3));
        // A gate inherits neither `intelligence` nor `failure` from defaults.
        let (_, _, gate, attempts) = &found[5];
        assert_eq!(
            (gate.tier, gate.allow_downgrade, *attempts),
            (Tier::Standard, false, 1)
        );
    }
}
