//! Cost preview from `estimate` (non-binding, "for plan preview", SPEC §7 common fields).
//!
//! One rule for containers throughout: a container's own estimate stands for one whole run
//! of it; its body is consulted only when the container has no estimate (otherwise the
//! body's estimates would be counted twice). With that:
//!
//! - expected = Σ over reachable nodes of their estimate, once each; a container without an
//!   estimate contributes `iters × expected(body)`.
//! - worst case = Σ over nodes of `count × attempts × unit`, where `unit` is the estimate,
//!   or `iters × worst(body)` for a container without one (the same multipliers as
//!   [`super::worst_case`]).
//! - nodes without an estimate: the non-gate nodes that the worst case consulted and found
//!   nothing for, each counted once even when its fragment is used several times.

use super::worst_case::{Child, WorstCase};
use super::{Analysed, Cost, TokenCost};
use crate::model::{Fields, NodeType, Object, obj_of};
use serde_json::Value;

#[derive(Clone, Copy)]
enum Metric {
    Usd,
    Tokens,
}

impl Metric {
    fn key(self) -> &'static str {
        match self {
            Metric::Usd => "cost_usd",
            Metric::Tokens => "tokens",
        }
    }
}

struct Totals {
    expected: f64,
    worst: f64,
    missing: usize,
    any_estimate: bool,
}

fn estimate(obj: &Object, metric: Metric) -> Option<f64> {
    obj_of(obj, "estimate")
        .and_then(|e| e.get(metric.key()))
        .and_then(Value::as_f64)
        .map(|v| v.max(0.0))
}

fn totals(a: &Analysed<'_>, wc: &WorstCase, metric: Metric) -> Totals {
    let n = a.scopes.len();
    // One lookup per node, shared by both passes below.
    let estimates: Vec<Vec<Option<f64>>> = a
        .sets
        .iter()
        .map(|set| {
            set.nodes
                .iter()
                .map(|nd| estimate(nd.obj, metric))
                .collect()
        })
        .collect();
    let mut expected = vec![0f64; n];
    let mut worst = vec![0f64; n];
    let mut any_estimate = false;
    for &s in &wc.post {
        let (mut e_sum, mut w_sum) = (0f64, 0f64);
        for (i, f) in wc.facts[s].iter().enumerate() {
            let own = estimates[s][i];
            any_estimate |= own.is_some();
            let (e_unit, w_unit) = match (own, f.child) {
                (Some(v), _) => (v, v),
                (None, Child::Scope(c)) => {
                    let k = f.iters as f64;
                    (k * expected[c], k * worst[c])
                }
                (None, _) => (0.0, 0.0),
            };
            if f.reachable {
                e_sum += e_unit;
            }
            w_sum += (f.count as f64) * (f.attempts as f64) * w_unit;
        }
        expected[s] = e_sum;
        worst[s] = w_sum;
    }

    // Count missing estimates over the scopes the worst case consults, each scope once.
    let mut visited = vec![false; n];
    let mut stack = vec![0usize];
    let mut missing = 0usize;
    if let Some(v) = visited.first_mut() {
        *v = true;
    }
    while let Some(s) = stack.pop() {
        for (i, f) in wc.facts[s].iter().enumerate() {
            if f.count == 0 || f.ty == Some(NodeType::Gate) {
                continue;
            }
            if estimates[s][i].is_some() {
                continue;
            }
            match f.child {
                Child::Scope(c) => {
                    if !visited[c] {
                        visited[c] = true;
                        stack.push(c);
                    }
                }
                _ => missing += 1,
            }
        }
    }

    Totals {
        expected: expected.first().copied().unwrap_or(0.0),
        worst: worst.first().copied().unwrap_or(0.0),
        missing,
        any_estimate,
    }
}

/// Rounds to micro-units so that sums like 1.2 + 4.0 + … print as 27.0, and keeps the
/// value finite (JSON has no infinity).
fn tidy(v: f64) -> f64 {
    let r = (v * 1e6).round() / 1e6;
    if r.is_finite() { r } else { f64::MAX }
}

pub(super) fn cost(root: &Object, a: &Analysed<'_>, wc: &WorstCase) -> Cost {
    let constraints = obj_of(root, "constraints");
    let usd = totals(a, wc, Metric::Usd);
    let ceiling_usd = constraints
        .and_then(|c| c.field("max_cost_usd"))
        .and_then(Value::as_f64);
    let worst_case_usd = tidy(usd.worst);

    let tok = totals(a, wc, Metric::Tokens);
    let ceiling_tokens =
        constraints.and_then(|c| super::worst_case::count_value(c.field("max_total_tokens")));
    let tokens = (tok.any_estimate || ceiling_tokens.is_some()).then(|| {
        // `as` saturates: a worst case beyond u64 reads as u64::MAX.
        let worst_case = tok.worst.round() as u64;
        TokenCost {
            expected: tok.expected.round() as u64,
            worst_case,
            ceiling: ceiling_tokens,
            nodes_without_estimate: tok.missing,
            exceeds_ceiling: ceiling_tokens.map(|c| worst_case > c),
        }
    });

    Cost {
        expected_usd: tidy(usd.expected),
        worst_case_usd,
        ceiling_usd,
        nodes_without_estimate: usd.missing,
        exceeds_ceiling: ceiling_usd.map(|c| worst_case_usd > c),
        tokens,
    }
}
