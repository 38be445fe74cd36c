//! What the live view shows, as a fold over the run's events (store form: kind + payload,
//! so kinds this build does not know are passed over, not refused): each node's state and
//! attempt, usage summed from `usage` members, what waits on a person, and the run's times.

use serde_json::Value;

/// One node as the view shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeLine {
    pub id: String,
    /// `pending`, `running`, `awaiting_human`, or an outcome (`succeeded`, `failed`, …).
    pub state: String,
    pub attempt: u32,
    /// Tool calls of its attempts the policy refused or held (`policy_decision` other
    /// than `allow`): a node that succeeded after refusals says so.
    pub refused: u32,
}

/// The fold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub run_id: String,
    pub nodes: Vec<NodeLine>,
    /// `recorded_at_ms` of `run_started` (or of the first event seen).
    pub started_ms: Option<i64>,
    /// `run_finished.status`, once the run ended.
    pub status: Option<String>,
    pub finished_ms: Option<i64>,
    pub tokens: u64,
    pub cost_usd: f64,
    /// Whether any event carried `usage` (the view shows usage only then).
    pub has_usage: bool,
    pub events: u64,
    /// Per node, the tokens and cost its `attempt_spent` events already added: its
    /// `node_finished` carries the node's whole spend, of which only the rest is new.
    prelogged: std::collections::HashMap<String, std::collections::HashMap<u64, (u64, f64)>>,
}

impl Snapshot {
    pub fn new(run_id: &str) -> Self {
        Snapshot {
            run_id: run_id.to_string(),
            ..Snapshot::default()
        }
    }

    fn node(&mut self, id: &str) -> &mut NodeLine {
        let i = match self.nodes.iter().position(|n| n.id == id) {
            Some(i) => i,
            None => {
                self.nodes.push(NodeLine {
                    id: id.to_string(),
                    state: "pending".into(),
                    attempt: 0,
                    refused: 0,
                });
                self.nodes.len() - 1
            }
        };
        &mut self.nodes[i]
    }

    /// Folds one event in.
    pub fn apply(&mut self, kind: &str, payload: &Value, at_ms: i64) {
        self.events += 1;
        self.started_ms.get_or_insert(at_ms);
        let node = payload.get("node").and_then(Value::as_str);
        if let Some(usage) = payload.get("usage").filter(|u| u.is_object()) {
            self.has_usage = true;
            let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
            let mut tokens = match n("total_tokens") {
                0 => n("input_tokens").saturating_add(n("output_tokens")),
                t => t,
            };
            let mut cost = usage.get("cost_usd").and_then(Value::as_f64).unwrap_or(0.0);
            let key = format!(
                "{}/{}",
                payload
                    .get("scope")
                    .map(Value::to_string)
                    .unwrap_or_default(),
                node.unwrap_or_default()
            );
            match kind {
                // What a waiting node spent so far: the last one per attempt counts, and
                // the node's end counts only what it adds.
                "attempt_spent" => {
                    let attempt = payload.get("attempt").and_then(Value::as_u64).unwrap_or(1);
                    let slot = self
                        .prelogged
                        .entry(key)
                        .or_default()
                        .entry(attempt)
                        .or_default();
                    let (before_tokens, before_cost) = *slot;
                    *slot = (tokens, cost);
                    tokens = tokens.saturating_sub(before_tokens);
                    cost = (cost - before_cost).max(0.0);
                }
                "node_finished" => {
                    if let Some(attempts) = self.prelogged.remove(&key) {
                        let (t, c) = attempts.values().fold((0u64, 0.0), |(t, c), (at, ac)| {
                            (t.saturating_add(*at), c + ac)
                        });
                        tokens = tokens.saturating_sub(t);
                        cost = (cost - c).max(0.0);
                    }
                }
                _ => {}
            }
            self.tokens = self.tokens.saturating_add(tokens);
            self.cost_usd += cost;
        }
        // A fragment instance's event (`scope`): its usage counts, its nodes are not the
        // root's (the container shows `running` until its instances end).
        if payload.get("scope").is_some() {
            return;
        }
        match (kind, node) {
            ("run_started", _) => {
                self.started_ms = Some(at_ms);
                if let Some(nodes) = payload.pointer("/graph/nodes").and_then(Value::as_object) {
                    for id in nodes.keys() {
                        self.node(id);
                    }
                }
            }
            ("node_when", Some(id)) if payload.get("value") == Some(&Value::Bool(false)) => {
                self.node(id).state = "skipped".into();
            }
            ("node_started", Some(id)) => {
                let attempt = payload.get("attempt").and_then(Value::as_u64).unwrap_or(1);
                let n = self.node(id);
                n.state = "running".into();
                n.attempt = u32::try_from(attempt).unwrap_or(u32::MAX);
            }
            ("node_finished", Some(id)) => {
                let outcome = payload.get("outcome").and_then(Value::as_str);
                self.node(id).state = outcome.unwrap_or("finished").to_string();
            }
            ("node_abandoned" | "node_reset", Some(id)) => self.node(id).state = "pending".into(),
            ("policy_decision", Some(id))
                if payload.get("decision").and_then(Value::as_str) != Some("allow") =>
            {
                let n = self.node(id);
                n.refused = n.refused.saturating_add(1);
            }
            ("gate_waiting", Some(id)) => self.node(id).state = "awaiting_human".into(),
            ("human_decision" | "human_timeout", Some(id)) => {
                let n = self.node(id);
                if n.state == "awaiting_human" {
                    n.state = "running".into();
                }
            }
            ("run_finished", _) => {
                self.status = payload
                    .get("status")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                self.finished_ms = Some(at_ms);
                // Nodes the run never reached were skipped (no event names them).
                for n in &mut self.nodes {
                    if n.state == "pending" {
                        n.state = "skipped".into();
                    }
                }
            }
            _ => {}
        }
    }

    /// `(state, count)` in a fixed order, states with no node left out.
    pub fn counts(&self) -> Vec<(&'static str, usize)> {
        const ORDER: [&str; 9] = [
            "running",
            "awaiting_human",
            "pending",
            "succeeded",
            "failed",
            "blocked",
            "skipped",
            "cancelled",
            "finished",
        ];
        ORDER
            .iter()
            .map(|s| (*s, self.nodes.iter().filter(|n| n.state == *s).count()))
            .filter(|(_, c)| *c > 0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_fold_follows_nodes_usage_and_waits() {
        let mut s = Snapshot::new("r");
        s.apply(
            "run_started",
            &json!({"graph": {"nodes": {"a": {}, "b": {}, "c": {}, "d": {}}}}),
            1000,
        );
        s.apply("node_started", &json!({"node": "a", "attempt": 1}), 1100);
        s.apply(
            "node_finished",
            &json!({"node": "a", "outcome": "succeeded",
                    "usage": {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.25}}),
            1200,
        );
        s.apply("node_when", &json!({"node": "b", "value": false}), 1300);
        s.apply("gate_waiting", &json!({"node": "c"}), 1300);
        s.apply("node_started", &json!({"node": "d", "attempt": 2}), 1400);
        s.apply("something_new", &json!({"node": "zz"}), 1500);
        let states: Vec<(&str, &str, u32)> = s
            .nodes
            .iter()
            .map(|n| (n.id.as_str(), n.state.as_str(), n.attempt))
            .collect();
        assert_eq!(
            states,
            [
                ("a", "succeeded", 1),
                ("b", "skipped", 0),
                ("c", "awaiting_human", 0),
                ("d", "running", 2)
            ]
        );
        assert_eq!((s.tokens, s.has_usage), (15, true));
        assert!((s.cost_usd - 0.25).abs() < 1e-9);
        assert_eq!(
            s.counts(),
            [
                ("running", 1),
                ("awaiting_human", 1),
                ("succeeded", 1),
                ("skipped", 1)
            ]
        );
        s.apply("run_finished", &json!({"status": "partial"}), 2000);
        assert_eq!(s.status.as_deref(), Some("partial"));
    }

    #[test]
    fn spend_logged_before_a_wait_counts_once_and_refusals_show_per_node() {
        let mut s = Snapshot::new("r");
        s.apply("run_started", &json!({"graph": {"nodes": {"a": {}}}}), 0);
        let spent = |attempt: u64, tokens: u64| {
            json!({"node": "a", "attempt": attempt,
                "usage": {"input_tokens": tokens, "output_tokens": 0, "cost_usd": 0.0}})
        };
        s.apply("attempt_spent", &spent(1, 100), 1);
        // Logged again at a second wait, beside attempt 2's.
        s.apply("attempt_spent", &spent(1, 100), 2);
        s.apply("attempt_spent", &spent(2, 50), 2);
        assert_eq!(s.tokens, 150);
        s.apply(
            "node_finished",
            &json!({"node": "a", "outcome": "succeeded",
                "usage": {"input_tokens": 170, "output_tokens": 0}}),
            3,
        );
        assert_eq!(s.tokens, 170, "the node's whole spend, counted once");
        s.apply(
            "policy_decision",
            &json!({"node": "a", "decision": "deny"}),
            4,
        );
        s.apply(
            "policy_decision",
            &json!({"node": "a", "decision": "allow"}),
            4,
        );
        s.apply(
            "policy_decision",
            &json!({"node": "a", "decision": "ask"}),
            4,
        );
        assert_eq!(s.nodes[0].refused, 2);
    }
}
