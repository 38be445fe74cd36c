//! Routing: a node's requested tier → one model of the model agent's profile, by the
//! normative rules of SPEC §11.4 (DIGEST §1.13). Pure: the profile is the agent's
//! [`super::Agent::models`], the request the node's `intelligence` block.
//!
//! The rules as weft applies them:
//! 1. never below the requested tier unless `allow_downgrade: true`;
//! 2. a tier that cannot be met without a downgrade is `RT011` (the run is refused up
//!    front, before any token is spent);
//! 3. a downgrade is recorded (`downgraded: true` and a `reason`);
//! 4. routing up is always allowed: the lowest served tier at or above the target wins;
//! 5. `min_context_tokens` is a hard floor (models without a known window never satisfy it);
//! 6. with `retry.escalate_intelligence`, attempt `n ≥ 2` targets `escalate_to` when set,
//!    else `n − 1` tiers up, clamped at `frontier`; when nothing serves the escalated
//!    target, the attempt stays on the highest served tier between the requested one and
//!    the target (never below the request), with a `reason`.
//!
//! Among models of the chosen tier, the first declared wins (`hints` are advisory and not
//! used yet).

use serde::{Deserialize, Serialize};

/// An intelligence tier (`minimal` < `standard` < `advanced` < `frontier`): the reader's.
pub use weft_ags::model::Tier;

/// One model of a routing profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model {
    pub tier: Tier,
    pub model: String,
    pub provider: String,
    /// The usable context window, when known.
    pub context_tokens: Option<u64>,
}

/// A node's `intelligence` block, after `defaults` (no block: `standard`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TierRequest {
    pub tier: Tier,
    pub allow_downgrade: bool,
    pub escalate_to: Option<Tier>,
    pub min_context_tokens: Option<u64>,
    /// `failure.retry.escalate_intelligence`.
    pub escalate_on_retry: bool,
}

impl Default for TierRequest {
    fn default() -> TierRequest {
        TierRequest {
            tier: Tier::Standard,
            allow_downgrade: false,
            escalate_to: None,
            min_context_tokens: None,
            escalate_on_retry: false,
        }
    }
}

/// The routing decision of one attempt: the run record's `attempt.routed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub requested_tier: String,
    pub effective_tier: String,
    pub provider: String,
    pub model: String,
    pub downgraded: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The tier attempt `attempt` (1-based) aims at: the requested one, or with
/// `escalate_intelligence` from the second attempt on `escalate_to` when set, else `n − 1`
/// tiers up (clamped at `frontier`), never below the request.
pub fn target(request: &TierRequest, attempt: u32) -> Tier {
    let requested = request.tier;
    if request.escalate_on_retry && attempt > 1 {
        request
            .escalate_to
            .unwrap_or_else(|| requested.up(attempt - 1))
            .max(requested)
    } else {
        requested
    }
}

/// Routes attempt `attempt` (1-based) of a node; `Err` is the RT011 message.
pub fn route(models: &[Model], request: &TierRequest, attempt: u32) -> Result<Route, String> {
    let requested = request.tier;
    let target = target(request, attempt);
    let fits = |m: &&Model| {
        request
            .min_context_tokens
            .is_none_or(|min| m.context_tokens.is_some_and(|c| c >= min))
    };
    let usable: Vec<&Model> = models.iter().filter(fits).collect();
    let lowest_at_or_above = |t: Tier| {
        usable
            .iter()
            .filter(|m| m.tier >= t)
            .min_by_key(|m| m.tier)
            .copied()
    };
    let highest_in = |lo: Tier, hi: Tier| {
        // max_by_key keeps the last maximum; first declared should win, so reverse.
        usable
            .iter()
            .rev()
            .filter(|m| m.tier >= lo && m.tier < hi)
            .max_by_key(|m| m.tier)
            .copied()
    };
    let first_of = |m: &Model| {
        usable
            .iter()
            .find(|x| x.tier == m.tier)
            .copied()
            .unwrap_or(m)
            .clone()
    };
    let make = |m: Model, downgraded: bool, reason: Option<String>| Route {
        requested_tier: requested.as_str().to_string(),
        effective_tier: m.tier.as_str().to_string(),
        provider: m.provider,
        model: m.model,
        downgraded,
        reason,
    };
    if let Some(m) = lowest_at_or_above(target) {
        let reason = (target != requested).then(|| {
            format!(
                "attempt {attempt}: escalate_intelligence targets `{}`",
                target.as_str()
            )
        });
        return Ok(make(first_of(m), false, reason));
    }
    if target > requested
        && let Some(m) = highest_in(requested, target)
    {
        return Ok(make(
            first_of(m),
            false,
            Some(format!(
                "attempt {attempt}: escalation to `{}` is not served; staying at `{}`",
                target.as_str(),
                m.tier.as_str()
            )),
        ));
    }
    let served: Vec<String> = usable
        .iter()
        .map(|m| format!("{} (`{}`)", m.tier.as_str(), m.model))
        .collect();
    let served = if served.is_empty() {
        "no model".to_string()
    } else {
        served.join(", ")
    };
    let context = request
        .min_context_tokens
        .map(|c| format!(" with a context of at least {c} tokens"))
        .unwrap_or_default();
    if request.allow_downgrade
        && let Some(m) = highest_in(Tier::Minimal, requested)
    {
        return Ok(make(
            first_of(m),
            true,
            Some(format!(
                "tier `{}`{context} is not served (the profile has {served}); allow_downgrade: true",
                requested.as_str()
            )),
        ));
    }
    Err(format!(
        "RT011: tier `{}`{context} cannot be met: the routing profile serves {served}, and the node does not allow a downgrade (intelligence.allow_downgrade)",
        requested.as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(tier: Tier, name: &str) -> Model {
        Model {
            tier,
            model: name.into(),
            provider: "p".into(),
            context_tokens: Some(1000),
        }
    }

    fn req(tier: Tier) -> TierRequest {
        TierRequest {
            tier,
            ..TierRequest::default()
        }
    }

    #[test]
    fn never_below_the_request_unless_allowed() {
        let small = [m(Tier::Minimal, "small")];
        let e = route(&small, &req(Tier::Standard), 1).unwrap_err();
        assert!(e.starts_with("RT011"), "{e}");
        let mut r = req(Tier::Standard);
        r.allow_downgrade = true;
        let routed = route(&small, &r, 1).unwrap();
        assert!(routed.downgraded);
        assert_eq!(routed.effective_tier, "minimal");
        assert!(routed.reason.is_some());
    }

    #[test]
    fn up_is_allowed_and_the_lowest_sufficient_tier_wins() {
        let p = [
            m(Tier::Frontier, "big"),
            m(Tier::Advanced, "mid"),
            m(Tier::Advanced, "mid2"),
        ];
        let r = route(&p, &req(Tier::Standard), 1).unwrap();
        assert_eq!((r.model.as_str(), r.downgraded), ("mid", false));
    }

    #[test]
    fn escalation_goes_one_tier_up_per_retry_and_clamps() {
        let p = [
            m(Tier::Minimal, "a"),
            m(Tier::Standard, "b"),
            m(Tier::Advanced, "c"),
        ];
        let mut r = req(Tier::Minimal);
        r.escalate_on_retry = true;
        assert_eq!(route(&p, &r, 1).unwrap().model, "a");
        assert_eq!(route(&p, &r, 2).unwrap().model, "b");
        assert_eq!(route(&p, &r, 3).unwrap().model, "c");
        let top = route(&p, &r, 9).unwrap();
        assert_eq!(top.model, "c");
        assert!(top.reason.unwrap().contains("not served"));
        r.escalate_to = Some(Tier::Advanced);
        assert_eq!(route(&p, &r, 2).unwrap().model, "c");
    }

    #[test]
    fn min_context_is_a_hard_floor() {
        let p = [m(Tier::Frontier, "big")];
        let mut r = req(Tier::Standard);
        r.min_context_tokens = Some(5000);
        assert!(route(&p, &r, 1).unwrap_err().contains("5000"));
    }
}
