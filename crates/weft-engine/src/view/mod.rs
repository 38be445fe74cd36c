//! The current view of a run: one typed fold of its log ([`RunView`]) — each node's state
//! and attempts (root scope and every fragment instance), what waits on a person, what was
//! spent (by attempt and in all), criteria verdicts, refused tool calls and the final
//! status. `weft status`, the live progress display and the run record's totals are this
//! fold (`docs/engine.md` §5a); the host crate (`weft-host`) hands it to its shells.
//!
//! It sits in the engine, above the event vocabulary (`events`) and below the record,
//! because the record is built here; it reads events only, never a live driver, so any
//! process that can read the store sees the same view. Kinds this build does not know
//! (a newer writer's) are counted and passed over, never refused.

mod spend;

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;
use weft_store::EventRecord;

use crate::agent::Usage;
use crate::events::{NodeOutcome, RunEvent};
use crate::human::{Waiting, timeout_resumes};
pub use spend::SpendLedger;

/// Where a node stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    /// Not started (yet).
    Pending,
    /// An attempt runs.
    Running,
    /// It waits on a person (a gate, a checkpoint, an approval, a takeover).
    AwaitingHuman,
    /// It ended with this outcome.
    Ended(NodeOutcome),
}

impl NodeState {
    /// `pending`, `running`, `awaiting_human`, or the outcome (`succeeded`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Pending => "pending",
            NodeState::Running => "running",
            NodeState::AwaitingHuman => "awaiting_human",
            NodeState::Ended(outcome) => outcome.as_str(),
        }
    }

    /// The display order of [`RunView::counts`].
    const ORDER: [NodeState; 8] = [
        NodeState::Running,
        NodeState::AwaitingHuman,
        NodeState::Pending,
        NodeState::Ended(NodeOutcome::Succeeded),
        NodeState::Ended(NodeOutcome::Failed),
        NodeState::Ended(NodeOutcome::Blocked),
        NodeState::Ended(NodeOutcome::Skipped),
        NodeState::Ended(NodeOutcome::Cancelled),
    ];
}

/// One attempt of a node.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AttemptView {
    /// Its number (1 first).
    pub number: u32,
    /// What it spent, as far as the log says yet (`attempt_spent` at a wait, then the
    /// node's `attempt_usage` when it ends).
    pub usage: Usage,
}

/// A criteria verdict as logged (`weft_criteria::Verdict`), reduced to what a view shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CriteriaView {
    pub passed: bool,
    /// The ids of the criteria that did not pass (`failed`, `error`, …), in order.
    pub not_passed: Vec<String>,
}

impl CriteriaView {
    fn of(verdict: &Value) -> CriteriaView {
        CriteriaView {
            passed: verdict
                .get("passed")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            not_passed: verdict
                .get("results")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|r| r.get("outcome").and_then(Value::as_str) != Some("passed"))
                .filter_map(|r| r.get("id").and_then(Value::as_str).map(str::to_string))
                .collect(),
        }
    }
}

/// One node of one scope instance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeView {
    /// The fragment instance (`fix[2]`, `items[0]`), `None` in the root scope.
    pub scope: Option<String>,
    /// The node's id in its scope.
    pub node: String,
    pub state: NodeState,
    /// Its attempts started, in log order (an attempt abandoned by a stopped process, and
    /// the one that replaced it, both listed).
    pub attempts: Vec<AttemptView>,
    /// Tool calls of its attempts the policy refused or held (`policy_decision` other than
    /// `allow`).
    pub refused_calls: u32,
    /// The verdict of its last attempt's `success` criteria, once it ended.
    pub verdict: Option<CriteriaView>,
    /// Why it did not succeed, once it ended.
    pub error: Option<String>,
}

impl NodeView {
    /// Its address: the id in the root scope, `scope.id` in a fragment instance.
    pub fn address(&self) -> String {
        match &self.scope {
            Some(scope) => format!("{scope}.{}", self.node),
            None => self.node.clone(),
        }
    }

    /// The number of its latest attempt (0: none started).
    pub fn attempt(&self) -> u32 {
        self.attempts.last().map_or(0, |a| a.number)
    }

    fn attempt_mut(&mut self, number: u32) -> &mut AttemptView {
        let i = match self.attempts.iter().rposition(|a| a.number == number) {
            Some(i) => i,
            None => {
                self.attempts.push(AttemptView {
                    number,
                    usage: Usage::default(),
                });
                self.attempts.len() - 1
            }
        };
        &mut self.attempts[i]
    }
}

/// A wait on a person the log holds open.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WaitView {
    /// The fragment instance it waits in (`None`: the root scope).
    pub scope: Option<String>,
    pub waiting: Waiting,
}

/// The fold.
#[derive(Clone, Debug, Default)]
pub struct RunView {
    pub run_id: String,
    /// When the run started (`run_started`, else the first event seen).
    pub started_ms: Option<i64>,
    /// `run_finished`: its status, time, reasons and graph verdict.
    pub status: Option<String>,
    pub finished_ms: Option<i64>,
    pub reasons: Vec<String>,
    pub graph_verdict: Option<CriteriaView>,
    /// Attempts started, every scope (`node_started`): the budget's `max_node_executions`
    /// count and the record's `usage.node_executions`.
    pub executions: u64,
    /// Whether any event carried usage (a view shows usage only then).
    pub has_usage: bool,
    /// Events folded in, known kinds or not.
    pub events: u64,
    /// Open waits on a person, in the order they began.
    pub waits: Vec<WaitView>,
    nodes: Vec<NodeView>,
    index: HashMap<(Option<String>, String), usize>,
    spend: SpendLedger,
}

impl RunView {
    pub fn new(run_id: &str) -> RunView {
        RunView {
            run_id: run_id.to_string(),
            ..RunView::default()
        }
    }

    /// The view of a whole stored log.
    pub fn of_records(run_id: &str, records: &[EventRecord]) -> RunView {
        let mut view = RunView::new(run_id);
        for r in records {
            view.apply_record(r);
        }
        view
    }

    /// Every node seen, root scope first in declaration order, fragment instances' nodes
    /// in the order the log first names them.
    pub fn nodes(&self) -> &[NodeView] {
        &self.nodes
    }

    /// The root scope's nodes.
    pub fn root_nodes(&self) -> impl Iterator<Item = &NodeView> {
        self.nodes.iter().filter(|n| n.scope.is_none())
    }

    /// A node by scope instance and id.
    pub fn node(&self, scope: Option<&str>, node: &str) -> Option<&NodeView> {
        self.index
            .get(&(scope.map(str::to_string), node.to_string()))
            .map(|&i| &self.nodes[i])
    }

    /// What the run's agents spent in all, every scope, each unit once.
    pub fn usage(&self) -> Usage {
        self.spend.total()
    }

    /// `(state, count)` of the root scope's nodes in a fixed order, states with no node
    /// left out.
    pub fn counts(&self) -> Vec<(&'static str, usize)> {
        NodeState::ORDER
            .iter()
            .map(|s| {
                (
                    s.as_str(),
                    self.root_nodes().filter(|n| n.state == *s).count(),
                )
            })
            .filter(|(_, c)| *c > 0)
            .collect()
    }

    /// Folds one stored event in (its `scope` member says which instance it belongs to).
    pub fn apply_record(&mut self, record: &EventRecord) {
        match RunEvent::from_record(record) {
            Ok(event) => self.apply(crate::scope_of(record), &event, record.recorded_at_ms),
            Err(_) => {
                self.events += 1;
                self.started_ms.get_or_insert(record.recorded_at_ms);
            }
        }
    }

    /// Folds one event of scope instance `scope` (`None`: the root), recorded at `at_ms`.
    pub fn apply(&mut self, scope: Option<&str>, event: &RunEvent, at_ms: i64) {
        self.events += 1;
        self.started_ms.get_or_insert(at_ms);
        self.spend.apply(scope, event);
        match event {
            RunEvent::RunStarted { graph, .. } if scope.is_none() => {
                self.started_ms = Some(at_ms);
                if let Some(nodes) = graph.get("nodes").and_then(Value::as_object) {
                    for id in nodes.keys() {
                        self.node_mut(None, id);
                    }
                }
            }
            RunEvent::NodeWhen {
                node, value: false, ..
            } => self.node_mut(scope, node).state = NodeState::Ended(NodeOutcome::Skipped),
            RunEvent::NodeStarted { node, attempt, .. } => {
                self.executions += 1;
                let n = self.node_mut(scope, node);
                n.state = NodeState::Running;
                n.attempts.push(AttemptView {
                    number: *attempt,
                    usage: Usage::default(),
                });
            }
            RunEvent::AttemptSpent {
                node,
                attempt,
                usage,
            } => {
                self.node_mut(scope, node).attempt_mut(*attempt).usage = *usage;
            }
            RunEvent::NodeFinished {
                node,
                outcome,
                verdict,
                error,
                attempt_usage,
                ..
            } => {
                let n = self.node_mut(scope, node);
                n.state = NodeState::Ended(*outcome);
                n.verdict = verdict.as_ref().map(CriteriaView::of);
                n.error.clone_from(error);
                // `attempt_usage` is indexed by attempt number.
                for (k, u) in attempt_usage.iter().enumerate() {
                    let number = u32::try_from(k + 1).unwrap_or(u32::MAX);
                    n.attempt_mut(number).usage = *u;
                }
                self.close_wait(scope, node);
            }
            RunEvent::NodeAbandoned { node, .. } | RunEvent::NodeReset { node } => {
                if matches!(event, RunEvent::NodeReset { .. }) && scope.is_none() {
                    // A reset after the end reopened the run (`events::superseded`).
                    self.status = None;
                    self.finished_ms = None;
                    self.reasons.clear();
                    self.graph_verdict = None;
                }
                let n = self.node_mut(scope, node);
                n.state = NodeState::Pending;
                n.verdict = None;
                n.error = None;
            }
            RunEvent::PolicyDecision(d) if d.decision != "allow" => {
                // The decision names the node by its address (`fix[2].step`).
                let id = scope
                    .and_then(|s| d.node.strip_prefix(s))
                    .and_then(|rest| rest.strip_prefix('.'))
                    .unwrap_or(&d.node)
                    .to_string();
                let n = self.node_mut(scope, &id);
                n.refused_calls = n.refused_calls.saturating_add(1);
            }
            RunEvent::GateWaiting(w) => {
                self.node_mut(scope, &w.node).state = NodeState::AwaitingHuman;
                self.close_wait(scope, &w.node);
                self.waits.push(WaitView {
                    scope: scope.map(str::to_string),
                    waiting: (**w).clone(),
                });
            }
            // The nodes a mutation adds are pending from here (`graph_mutated`, a fold
            // without the scheduler: one the driver refused where the log has it, a race
            // `mutation::submit` cannot rule out, still shows its nodes here).
            RunEvent::GraphMutated { mutation, .. } if scope.is_none() => {
                for n in mutation.new_nodes() {
                    self.node_mut(None, &n.id);
                }
            }
            RunEvent::HumanDecision(d) => self.resume_wait(scope, &d.node),
            RunEvent::HumanTimeout { node, action } if timeout_resumes(action) => {
                self.resume_wait(scope, node);
            }
            RunEvent::RunFinished {
                status,
                reasons,
                graph_verdict,
                ..
            } if scope.is_none() => {
                self.status = Some(status.clone());
                self.finished_ms = Some(at_ms);
                self.reasons.clone_from(reasons);
                self.graph_verdict = graph_verdict.as_ref().map(CriteriaView::of);
                self.waits.clear();
                // Nodes the run never reached were skipped (no event names them).
                for n in &mut self.nodes {
                    if n.state == NodeState::Pending {
                        n.state = NodeState::Ended(NodeOutcome::Skipped);
                    }
                }
            }
            _ => {}
        }
        if matches!(
            event,
            RunEvent::AttemptSpent { .. }
                | RunEvent::NodeFinished { usage: Some(_), .. }
                | RunEvent::CompensationFinished { usage: Some(_), .. }
        ) {
            self.has_usage = true;
        }
    }

    fn node_mut(&mut self, scope: Option<&str>, node: &str) -> &mut NodeView {
        let key = (scope.map(str::to_string), node.to_string());
        let next = self.nodes.len();
        let i = *self.index.entry(key).or_insert(next);
        if i == next {
            self.nodes.push(NodeView {
                scope: scope.map(str::to_string),
                node: node.to_string(),
                state: NodeState::Pending,
                attempts: Vec::new(),
                refused_calls: 0,
                verdict: None,
                error: None,
            });
        }
        &mut self.nodes[i]
    }

    /// A person decided (or a timeout resumed): the wait closes and the node runs on.
    fn resume_wait(&mut self, scope: Option<&str>, node: &str) {
        self.close_wait(scope, node);
        let n = self.node_mut(scope, node);
        if n.state == NodeState::AwaitingHuman {
            n.state = NodeState::Running;
        }
    }

    fn close_wait(&mut self, scope: Option<&str>, node: &str) {
        self.waits
            .retain(|w| !(w.scope.as_deref() == scope && w.waiting.node == node));
    }
}

#[cfg(test)]
mod tests;
