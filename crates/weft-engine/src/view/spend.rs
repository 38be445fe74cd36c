//! What a run's agents spent, folded from its log: the one sum behind the budget's totals
//! (`run/budget.rs`), the run view ([`super::RunView`]: `weft status`, the live progress
//! display) and the run record's `usage`.
//!
//! A node's spend reaches the log in up to three ways: `attempt_spent` when an attempt
//! waits on a person before it ends (logged again, whole, at each later wait),
//! `node_finished.usage` (the node's whole spend, the waits' part included) and
//! `compensation_finished.usage`. The ledger counts each unit once: a later
//! `attempt_spent` of the same attempt adds only what it adds, a `node_finished` only what
//! its `attempt_spent`s did not already count, and a `node_reset` (`weft resume
//! --retry-node`) takes back what the superseded `node_finished` counted, as a resume's
//! replay skips it.

use std::collections::{BTreeMap, HashMap};

use crate::agent::Usage;
use crate::events::RunEvent;

/// A node of one scope instance: `(scope path, node id)` (`None`: the root scope).
type NodeKey = (Option<String>, String);

/// The running sum of a log's spend, with what it needs to count each unit once.
#[derive(Clone, Debug, Default)]
pub struct SpendLedger {
    /// Everything counted so far.
    total: Usage,
    /// Per node not finished yet: the last `attempt_spent` of each attempt.
    logged: HashMap<NodeKey, BTreeMap<u32, Usage>>,
    /// Per finished node: what its `node_finished` added (taken back by a `node_reset`).
    finished: HashMap<NodeKey, Usage>,
}

impl SpendLedger {
    /// Everything the log spent so far.
    pub fn total(&self) -> Usage {
        self.total
    }

    /// Folds one event of `scope`'s log in (events that spend nothing are passed over).
    pub fn apply(&mut self, scope: Option<&str>, event: &RunEvent) {
        match event {
            RunEvent::AttemptSpent {
                node,
                attempt,
                usage,
            } => {
                self.attempt_spent(scope, node, *attempt, usage);
            }
            RunEvent::NodeFinished { node, usage, .. } => {
                self.node_finished(scope, node, usage.as_ref());
            }
            RunEvent::NodeReset { node } => self.node_reset(scope, node),
            RunEvent::CompensationFinished {
                usage: Some(usage), ..
            } => self.other(usage),
            _ => {}
        }
    }

    /// An `attempt_spent` of `node` in `scope`: returns what it adds to the total.
    pub fn attempt_spent(
        &mut self,
        scope: Option<&str>,
        node: &str,
        attempt: u32,
        usage: &Usage,
    ) -> Usage {
        let before = self
            .logged
            .entry(key(scope, node))
            .or_default()
            .insert(attempt, *usage)
            .unwrap_or_default();
        let added = usage.saturating_sub(&before);
        self.total.add(&added);
        added
    }

    /// A `node_finished` of `node` in `scope` carrying the node's whole spend `usage`:
    /// returns what it adds beyond its `attempt_spent`s.
    pub fn node_finished(
        &mut self,
        scope: Option<&str>,
        node: &str,
        usage: Option<&Usage>,
    ) -> Usage {
        let k = key(scope, node);
        let already = self
            .logged
            .remove(&k)
            .map(|attempts| {
                attempts.values().fold(Usage::default(), |mut sum, u| {
                    sum.add(u);
                    sum
                })
            })
            .unwrap_or_default();
        let added = usage.copied().unwrap_or_default().saturating_sub(&already);
        self.total.add(&added);
        self.finished
            .entry(k)
            .or_default()
            .add(&already.plus(&added));
        added
    }

    /// A `node_reset` of `node` in `scope`: what its superseded `node_finished` counted is
    /// taken back (the node runs again and logs its spend anew).
    pub fn node_reset(&mut self, scope: Option<&str>, node: &str) {
        if let Some(counted) = self.finished.remove(&key(scope, node)) {
            self.total = self.total.saturating_sub(&counted);
        }
    }

    /// Spend outside any node's attempts (a compensation): added as it is.
    pub fn other(&mut self, usage: &Usage) {
        self.total.add(usage);
    }
}

fn key(scope: Option<&str>, node: &str) -> NodeKey {
    (scope.map(str::to_string), node.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(n: u64) -> Usage {
        Usage {
            input_tokens: n,
            ..Usage::default()
        }
    }

    #[test]
    fn each_unit_counts_once_across_waits_finishes_and_resets() {
        let mut l = SpendLedger::default();
        assert_eq!(l.attempt_spent(None, "a", 1, &tokens(100)), tokens(100));
        // Logged again, whole, at a second wait: nothing new.
        assert_eq!(l.attempt_spent(None, "a", 1, &tokens(100)), tokens(0));
        l.attempt_spent(None, "a", 2, &tokens(50));
        assert_eq!(l.total().input_tokens, 150);
        // The same node id in another scope instance is another node.
        l.attempt_spent(Some("m[1]"), "a", 1, &tokens(7));
        assert_eq!(l.total().input_tokens, 157);
        assert_eq!(
            l.node_finished(None, "a", Some(&tokens(170))),
            tokens(20),
            "only what the waits did not count"
        );
        assert_eq!(l.total().input_tokens, 177);
        l.node_finished(Some("m[1]"), "a", Some(&tokens(7)));
        assert_eq!(l.total().input_tokens, 177);
        // A reset takes back the root node's whole spend, not the instance's.
        l.node_reset(None, "a");
        assert_eq!(l.total().input_tokens, 7);
        l.node_finished(None, "a", Some(&tokens(30)));
        l.other(&tokens(3));
        assert_eq!(l.total().input_tokens, 40);
    }
}
