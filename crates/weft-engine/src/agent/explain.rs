//! `weft routing explain`'s data: for every model call a run of the document would make
//! (each model node of the root scope, and each `llm_judge` criterion of any root node),
//! the tier request, and the route of each attempt by [`route`] over a profile's models —
//! or the RT011 message — with why. Pure: no IO, no provider is contacted.
//!
//! Only the root scope is explained: it is the scope this engine runs (`docs/engine.md`).

use serde::Serialize;
use serde_json::{Map, Value};
use weft_ags::model::{Node, scopes};
use weft_criteria::{Kind, SuccessBlock};

use super::route::{Model, Route, Tier, TierRequest, route, target};
use super::tiers::{calls_model, judge_tier_request, max_attempts, tier_request};

/// Attempts past this one route like it: escalation is clamped at `frontier`, which any
/// request reaches by the fourth attempt (`minimal` + 3).
pub const DISTINCT_ATTEMPTS: u32 = 4;

/// The routing of one model call site.
#[derive(Clone, Debug, Serialize)]
pub struct CallRouting {
    /// The node id, or `<node>/judge/<criterion>` for a judge.
    pub key: String,
    /// `node` or `judge`.
    pub kind: &'static str,
    pub requested_tier: &'static str,
    pub allow_downgrade: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_context_tokens: Option<u64>,
    /// `failure.retry.escalate_intelligence` (always false for a judge).
    pub escalate_intelligence: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalate_to: Option<&'static str>,
    /// `failure.retry.max_attempts` (1 for a judge: each judgement is one call).
    pub max_attempts: u32,
    /// Attempts `1..=min(max_attempts, DISTINCT_ATTEMPTS)`; later ones route like the last.
    pub attempts: Vec<AttemptRouting>,
    /// Where the request came from (`intelligence` / `judge_intelligence` / the node's tier).
    pub source: &'static str,
}

impl CallRouting {
    /// Some attempt cannot be routed (RT011: the run would be refused).
    pub fn refused(&self) -> bool {
        self.attempts.iter().any(|a| a.route.is_none())
    }
}

/// The route of one attempt, or why there is none.
#[derive(Clone, Debug, Serialize)]
pub struct AttemptRouting {
    pub attempt: u32,
    /// `None`: not routable (`why` is the RT011 message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<Route>,
    pub why: String,
}

/// Explains every model call of `root`'s root scope over `models`.
pub fn explain(root: &Map<String, Value>, models: &[Model]) -> Vec<CallRouting> {
    let defaults = root.get("defaults").and_then(Value::as_object);
    let Some(scope) = scopes(root).into_iter().next() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for node in scope.nodes() {
        let request = tier_request(&node, defaults);
        if calls_model(&node) {
            out.push(call(
                node.id.to_string(),
                "node",
                "intelligence after defaults",
                &request,
                max_attempts(&node, defaults),
                models,
            ));
        }
        out.extend(judges(&node, &request, models));
    }
    out
}

/// The `llm_judge` criteria of a node, each routed at its `judge_intelligence`, else at the
/// node's tier without escalation (as `run/judge.rs` does).
fn judges(node: &Node<'_>, request: &TierRequest, models: &[Model]) -> Vec<CallRouting> {
    let Some(block) = node
        .obj
        .get("success")
        .and_then(|v| SuccessBlock::from_value(v).ok())
    else {
        return Vec::new();
    };
    block
        .criteria
        .iter()
        .filter(|c| c.kind == Kind::LlmJudge)
        .map(|c| {
            let key = format!("{}/judge/{}", node.id, c.id);
            let (tier, source) = match &c.judge_intelligence {
                Some(b) => (judge_tier_request(b), "judge_intelligence"),
                None => (
                    Ok(TierRequest {
                        escalate_on_retry: false,
                        ..request.clone()
                    }),
                    "the node's intelligence",
                ),
            };
            match tier {
                Ok(t) => call(key, "judge", source, &t, 1, models),
                Err(e) => CallRouting {
                    key,
                    kind: "judge",
                    requested_tier: "unknown",
                    allow_downgrade: false,
                    min_context_tokens: None,
                    escalate_intelligence: false,
                    escalate_to: None,
                    max_attempts: 1,
                    attempts: vec![AttemptRouting {
                        attempt: 1,
                        route: None,
                        why: e,
                    }],
                    source,
                },
            }
        })
        .collect()
}

fn call(
    key: String,
    kind: &'static str,
    source: &'static str,
    request: &TierRequest,
    max_attempts: u32,
    models: &[Model],
) -> CallRouting {
    let attempts = (1..=max_attempts.min(DISTINCT_ATTEMPTS))
        .map(|attempt| match route(models, request, attempt) {
            Ok(r) => AttemptRouting {
                attempt,
                why: why(request, attempt, &r),
                route: Some(r),
            },
            Err(e) => AttemptRouting {
                attempt,
                route: None,
                why: e,
            },
        })
        .collect();
    CallRouting {
        key,
        kind,
        requested_tier: request.tier.as_str(),
        allow_downgrade: request.allow_downgrade,
        min_context_tokens: request.min_context_tokens,
        escalate_intelligence: request.escalate_on_retry,
        escalate_to: request.escalate_to.map(Tier::as_str),
        max_attempts,
        attempts,
        source,
    }
}

/// Why a routed attempt went where it did: the router's own reason when it gave one
/// (escalation, downgrade), else exact match or routing up.
fn why(request: &TierRequest, attempt: u32, r: &Route) -> String {
    let context = request
        .min_context_tokens
        .map(|c| format!(" (among models with a context of at least {c} tokens)"))
        .unwrap_or_default();
    if let Some(reason) = &r.reason {
        // An escalation target that is not served is routed up like any request.
        let up = if Tier::parse(&r.effective_tier) > Some(target(request, attempt)) {
            format!(", not served; routed up to `{}`", r.effective_tier)
        } else {
            String::new()
        };
        return format!("{reason}{up}{context}");
    }
    if r.effective_tier == r.requested_tier {
        format!(
            "tier `{}` is served; the first model declared for it{context}",
            r.requested_tier
        )
    } else {
        format!(
            "tier `{}` is not served; routed up to `{}`, the lowest served tier above it{context}",
            r.requested_tier, r.effective_tier
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn model(tier: Tier, name: &str) -> Model {
        Model {
            tier,
            model: name.into(),
            provider: "p".into(),
            context_tokens: Some(8000),
        }
    }

    fn doc(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn model_nodes_and_judges_are_explained_exec_nodes_are_not() {
        let root = doc(json!({
            "ags": "1.0", "id": "g",
            "defaults": {"intelligence": {"tier": "advanced"}},
            "nodes": {
                "write": {"success": {"criteria": [
                    {"id": "good", "kind": "llm_judge", "description": "d", "rubric": "r",
                     "judge_intelligence": {"tier": "minimal"}}]}},
                "build": {"x-weft-exec": {"run": "true"}}
            }
        }));
        let p = [model(Tier::Minimal, "small"), model(Tier::Advanced, "mid")];
        let calls = explain(&root, &p);
        let keys: Vec<&str> = calls.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["write", "write/judge/good"]);
        assert_eq!(calls[0].requested_tier, "advanced");
        assert_eq!(
            calls[0].attempts[0]
                .route
                .as_ref()
                .map(|r| r.model.as_str()),
            Some("mid")
        );
        assert_eq!(
            calls[1].attempts[0]
                .route
                .as_ref()
                .map(|r| r.model.as_str()),
            Some("small")
        );
    }

    #[test]
    fn each_attempt_escalates_and_later_ones_are_folded() {
        let root = doc(json!({
            "ags": "1.0", "id": "g",
            "nodes": {"n": {
                "intelligence": {"tier": "minimal"},
                "failure": {"retry": {"max_attempts": 9, "escalate_intelligence": true}}}}
        }));
        let p = [model(Tier::Minimal, "a"), model(Tier::Standard, "b")];
        let calls = explain(&root, &p);
        let models: Vec<&str> = calls[0]
            .attempts
            .iter()
            .filter_map(|a| a.route.as_ref().map(|r| r.model.as_str()))
            .collect();
        assert_eq!(models, ["a", "b", "b", "b"]);
        assert_eq!(calls[0].max_attempts, 9);
        assert!(calls[0].attempts[2].why.contains("not served"));
    }

    #[test]
    fn an_unservable_tier_is_refused_with_rt011() {
        let root = doc(json!({"ags": "1.0", "id": "g",
            "nodes": {"n": {"intelligence": {"tier": "frontier"}}}}));
        let calls = explain(&root, &[model(Tier::Standard, "b")]);
        assert!(calls[0].refused());
        assert!(calls[0].attempts[0].why.starts_with("RT011"));
    }
}
