//! The current view of a run: one typed fold of its log ([`RunView`]) — each node's state
//! and attempts (root scope and every fragment instance), what waits on a person, what was
//! spent (by attempt and in all), criteria verdicts, refused tool calls and the final
//! status. `weft status`, the live progress display and the run record's totals are this
//! fold (`docs/engine.md` §5a); the host crate (`weft-host`) hands it to its shells.
//!
//! Node states are the log's facts (`node_started`, `gate_waiting`, `node_finished`, …),
//! filled in by each scope's scheduler fed the same events (`schedule.rs`) where the log
//! names nothing: the nodes of a scope the log never named, those skipped by a join that
//! can no longer be met or a halt, those cancelled — the states the run record replays.
//!
//! It sits in the engine, above the event vocabulary (`events`) and below the record,
//! because the record is built here; it reads events only, never a live driver, so any
//! process that can read the store sees the same view. Kinds this build does not know
//! (a newer writer's) are counted and passed over, never refused.

mod schedule;
mod spend;

use std::collections::{BTreeSet, HashMap, HashSet};

use serde::Serialize;
use serde_json::Value;
use weft_store::EventRecord;

use crate::agent::Usage;
use crate::events::{NodeOutcome, RunEvent, superseded};
use crate::human::{Waiting, timeout_resumes};
use crate::wait::criterion_of;
use schedule::Schedules;
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
    /// When its first attempt started (`node_started`).
    pub started_ms: Option<i64>,
    /// When it ended (`node_finished`).
    pub finished_ms: Option<i64>,
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
    /// Open waits on a person, in the order they began (a graph's sign-off included: its
    /// `node` is `wait::criterion_of`'s key, no node of the graph).
    pub waits: Vec<WaitView>,
    nodes: Vec<NodeView>,
    index: HashMap<(Option<String>, String), usize>,
    /// Fragment instances in the order the log opened them.
    instances: Vec<String>,
    spend: SpendLedger,
    schedules: Schedules,
    /// Nodes whose state their scheduler gave (the log names no end of theirs).
    decided: HashSet<usize>,
}

impl RunView {
    pub fn new(run_id: &str) -> RunView {
        RunView {
            run_id: run_id.to_string(),
            ..RunView::default()
        }
    }

    /// The view of a whole stored log. Knowing the whole log, it feeds the schedulers
    /// no `node_finished` a later `node_reset` supersedes (as `replay` does).
    pub fn of_records(run_id: &str, records: &[EventRecord]) -> RunView {
        let mut view = RunView::new(run_id);
        let stale = superseded_records(records);
        for (i, r) in records.iter().enumerate() {
            match RunEvent::from_record(r) {
                Ok(event) => view.fold(
                    crate::scope_of(r),
                    &event,
                    r.recorded_at_ms,
                    Feed::Whole {
                        superseded: stale.contains(&i),
                    },
                ),
                Err(_) => view.pass_over(r),
            }
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
            Err(_) => self.pass_over(record),
        }
    }

    /// Folds one event of scope instance `scope` (`None`: the root), recorded at `at_ms`,
    /// as it comes (a live view: what a later event supersedes is not known yet).
    pub fn apply(&mut self, scope: Option<&str>, event: &RunEvent, at_ms: i64) {
        self.fold(scope, event, at_ms, Feed::Live);
    }

    /// The run's status now, as the run record states it (`docs/engine.md` §5): the
    /// `run_finished` status; without one `awaiting_human` when a root node waits on a
    /// person and none runs, when the run is suspended on a person inside an instance, or
    /// when the graph's sign-off is awaited; else the store row's, `pending`, `running`
    /// and `suspended` read as `running`.
    pub fn status_given(&self, row: weft_store::RunStatus) -> String {
        use weft_store::RunStatus;
        if let Some(status) = &self.status {
            return status.clone();
        }
        let root_in = |s: NodeState| self.root_nodes().any(|n| n.state == s);
        let awaiting = (root_in(NodeState::AwaitingHuman) && !root_in(NodeState::Running))
            || (row == RunStatus::Suspended && self.waits.iter().any(|w| w.scope.is_some()))
            || self
                .waits
                .iter()
                .any(|w| w.scope.is_none() && criterion_of(&w.waiting.node).is_some());
        let status = match row {
            _ if awaiting => "awaiting_human",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Pending | RunStatus::Running | RunStatus::Suspended => "running",
        };
        status.to_string()
    }

    /// The open waits on a person as `weft status` and `weft run`'s report list them: the
    /// root scope's, then each instance's (in the order the instances opened) with `node`
    /// its address (`work[3].review`).
    pub fn open_waits(&self) -> Vec<Waiting> {
        let root = self.waits.iter().filter(|w| w.scope.is_none());
        let instances = self.instances.iter().flat_map(|path| {
            self.waits
                .iter()
                .filter(move |w| w.scope.as_deref() == Some(path.as_str()))
        });
        root.chain(instances)
            .map(|w| {
                let mut waiting = w.waiting.clone();
                if let Some(path) = &w.scope {
                    waiting.node = format!("{path}.{}", waiting.node);
                }
                waiting
            })
            .collect()
    }

    /// An event this build cannot read: counted, passed over.
    fn pass_over(&mut self, record: &EventRecord) {
        self.events += 1;
        self.started_ms.get_or_insert(record.recorded_at_ms);
    }

    fn fold(&mut self, scope: Option<&str>, event: &RunEvent, at_ms: i64, feed: Feed) {
        self.events += 1;
        self.started_ms.get_or_insert(at_ms);
        self.spend.apply(scope, event);
        if let Some(path) = scope
            && !self.instances.iter().any(|p| p == path)
        {
            self.instances.push(path.to_string());
        }
        if !matches!(feed, Feed::Whole { superseded: true }) {
            let decided = self.schedules.feed(scope, event);
            for id in &decided.added {
                self.node_mut(scope, id);
            }
            for (id, outcome) in &decided.ended {
                let i = self.index_of(scope, id);
                if self.nodes[i].state == NodeState::Pending {
                    self.nodes[i].state = NodeState::Ended(*outcome);
                    self.decided.insert(i);
                }
            }
        }
        match event {
            RunEvent::RunStarted { graph, .. } if scope.is_none() => {
                self.started_ms = Some(at_ms);
                // Without a scheduler (a document this build cannot adapt), the document's
                // node ids.
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
                // A wait before the attempt (a checkpoint) ends when it begins.
                self.close_wait(scope, node);
                let n = self.node_mut(scope, node);
                n.state = NodeState::Running;
                n.started_ms.get_or_insert(at_ms);
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
                n.finished_ms = Some(at_ms);
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
                if matches!(feed, Feed::Live) && matches!(event, RunEvent::NodeReset { .. }) {
                    // The scheduler was fed the finish this takes back: what it decided
                    // from it no longer holds, and the scope is shown from its facts.
                    self.schedules.forget(scope);
                    let undone: Vec<usize> = self
                        .decided
                        .iter()
                        .copied()
                        .filter(|&i| self.nodes[i].scope.as_deref() == scope)
                        .collect();
                    for i in undone {
                        self.decided.remove(&i);
                        self.nodes[i].state = NodeState::Pending;
                    }
                }
                let n = self.node_mut(scope, node);
                n.state = NodeState::Pending;
                n.finished_ms = None;
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
                // A graph's sign-off waits on no node.
                if criterion_of(&w.node).is_none() {
                    self.node_mut(scope, &w.node).state = NodeState::AwaitingHuman;
                }
                self.close_wait(scope, &w.node);
                self.waits.push(WaitView {
                    scope: scope.map(str::to_string),
                    waiting: (**w).clone(),
                });
            }
            // The nodes a mutation adds are pending from here. With the root's scheduler
            // they came above, as it took the mutation (one the driver refused where the
            // log has it, a race `mutation::submit` cannot rule out, adds nothing, as in the
            // record); without one (a document this build cannot adapt), from the payload.
            RunEvent::GraphMutated { mutation, .. }
                if scope.is_none() && !self.schedules.follows(None) =>
            {
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
        let i = self.index_of(scope, node);
        // A fact of the log overrides what the scheduler decided.
        self.decided.remove(&i);
        &mut self.nodes[i]
    }

    /// The node's position, a new pending node when the log names it first.
    fn index_of(&mut self, scope: Option<&str>, node: &str) -> usize {
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
                started_ms: None,
                finished_ms: None,
            });
        }
        i
    }

    /// A person decided (or a timeout resumed): the wait closes and the node runs on.
    fn resume_wait(&mut self, scope: Option<&str>, node: &str) {
        self.close_wait(scope, node);
        if criterion_of(node).is_some() {
            return;
        }
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

/// How an event reaches the fold.
#[derive(Clone, Copy)]
enum Feed {
    /// As it is appended: whether a later `node_reset` supersedes it is not known.
    Live,
    /// From a whole log, knowing whether a later `node_reset` supersedes it.
    Whole { superseded: bool },
}

/// The positions in `records` of the events a later `node_reset` of their scope
/// supersedes (`events::superseded`, scope by scope).
fn superseded_records(records: &[EventRecord]) -> BTreeSet<usize> {
    if !records.iter().any(|r| r.kind == "node_reset") {
        return BTreeSet::new();
    }
    let mut by_scope: HashMap<Option<&str>, (Vec<usize>, Vec<RunEvent>)> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        if let Ok(event) = RunEvent::from_record(r) {
            let (positions, events) = by_scope.entry(crate::scope_of(r)).or_default();
            positions.push(i);
            events.push(event);
        }
    }
    by_scope
        .values()
        .flat_map(|(positions, events)| {
            superseded(events)
                .into_iter()
                .map(|k| positions[k])
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests;
