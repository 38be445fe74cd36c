//! Every place a person is asked for something: gate nodes, `human` checkpoints and
//! `human` criteria (SPEC §7.3, §15, §10), across all scopes.
//!
//! Timeouts are reported as they will apply: a gate or checkpoint without its own
//! `timeout_seconds` / `on_timeout` falls back to `policy.default_human_timeout_seconds` /
//! `policy.on_human_timeout` (default `hold`). A node without its own `human` array
//! inherits its scope's `defaults.human` (arrays are replaced, never merged: §6.3).

use super::{
    Analysed, HumanCheckpoint, HumanCriterion, HumanEscalation, HumanGate, HumanInteractions,
};
use crate::diagnostic::pointer_push;
use crate::model::{Fields, NodeType, Object, arr_of, obj_of, str_of, strs_of};
use serde_json::Value;

struct PolicyFallback<'a> {
    timeout: Option<f64>,
    on_timeout: &'a str,
}

fn roles(obj: &Object) -> Vec<String> {
    strs_of(obj, "roles").map(str::to_string).collect()
}

pub(super) fn collect(root: &Object, a: &Analysed<'_>) -> HumanInteractions {
    let policy = obj_of(root, "policy");
    let fallback = PolicyFallback {
        timeout: policy
            .and_then(|p| p.field("default_human_timeout_seconds"))
            .and_then(Value::as_f64),
        on_timeout: policy
            .and_then(|p| str_of(p, "on_human_timeout"))
            .unwrap_or("hold"),
    };
    let mut out = HumanInteractions::default();
    for (si, scope) in a.scopes.iter().enumerate() {
        let defaults = obj_of(scope.obj, "defaults");
        let defaults_human = defaults
            .and_then(|d| d.field("human"))
            .and_then(Value::as_array);
        for node in &a.sets[si].nodes {
            if node.node_type() == Some(NodeType::Gate)
                && let Some(g) = node.obj("gate")
            {
                out.nodes.push(HumanGate {
                    pointer: node.pointer.clone(),
                    node: node.id.to_string(),
                    mode: str_of(g, "mode").map(str::to_string),
                    roles: roles(g),
                    on_timeout: str_of(g, "on_timeout")
                        .unwrap_or(fallback.on_timeout)
                        .to_string(),
                    timeout_seconds: g
                        .field("timeout_seconds")
                        .and_then(Value::as_f64)
                        .or(fallback.timeout),
                    on_reject: str_of(g, "on_reject").unwrap_or("fail").to_string(),
                });
            }
            if let Some(failure) = crate::model::effective_block(node, defaults, "failure")
                && let Some(esc) = obj_of(&failure, "escalation")
                && str_of(esc, "to") == Some("human")
            {
                out.escalations.push(HumanEscalation {
                    pointer: pointer_push(&node.ptr("failure"), "escalation"),
                    node: node.id.to_string(),
                    roles: roles(esc),
                    channel: str_of(esc, "channel").map(str::to_string),
                });
            }
            let (human, base) = match node.field("human").and_then(Value::as_array) {
                Some(h) => (Some(h), node.ptr("human")),
                None => (
                    defaults_human,
                    pointer_push(&scope.ptr("defaults"), "human"),
                ),
            };
            for (i, h) in human.into_iter().flatten().enumerate() {
                let Some(h) = h.as_object() else { continue };
                out.checkpoints.push(HumanCheckpoint {
                    pointer: pointer_push(&base, &i.to_string()),
                    node: node.id.to_string(),
                    id: str_of(h, "id").map(str::to_string),
                    at: str_of(h, "at").map(str::to_string),
                    mode: str_of(h, "mode").map(str::to_string),
                    required: h.field("required").and_then(Value::as_bool).unwrap_or(true),
                    roles: roles(h),
                    on_timeout: str_of(h, "on_timeout")
                        .unwrap_or(fallback.on_timeout)
                        .to_string(),
                    timeout_seconds: h
                        .field("timeout_seconds")
                        .and_then(Value::as_f64)
                        .or(fallback.timeout),
                });
            }
            if let Some(success) = node.obj("success") {
                human_criteria(success, &node.ptr("success"), Some(node.id), &mut out);
            }
        }
        if let Some(success) = obj_of(scope.obj, "success") {
            human_criteria(success, &scope.ptr("success"), None, &mut out);
        }
    }
    out
}

fn human_criteria(success: &Object, base: &str, node: Option<&str>, out: &mut HumanInteractions) {
    for (i, c) in arr_of(success, "criteria").iter().enumerate() {
        let Some(c) = c.as_object() else { continue };
        if str_of(c, "kind") != Some("human") {
            continue;
        }
        out.criteria.push(HumanCriterion {
            pointer: pointer_push(&pointer_push(base, "criteria"), &i.to_string()),
            node: node.map(str::to_string),
            id: str_of(c, "id").map(str::to_string),
            required: str_of(c, "severity") != Some("advisory"),
            roles: roles(c),
        });
    }
}
