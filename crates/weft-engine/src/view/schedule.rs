//! The scheduler's part of the run view: per scope instance, a `weft_core::Scheduler` fed
//! the log's events as `replay` feeds one (`events::replay_scope`), so the view knows what
//! the scheduler decided without logging it — the nodes of a scope in declaration order
//! (those the log never names included, and those a `graph_mutated` added), a node skipped
//! because its join can no longer be met or the scope halted, one cancelled by a cancel or
//! retired by a mutation. The view's own fold stays the log's facts; this only fills in
//! nodes the log leaves `pending`.
//!
//! A scope whose events do not fit its scheduler (a log this build cannot replay) loses
//! its scheduler and is shown from the log's facts alone: the view never refuses a log.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};
use weft_core::{Action, Scheduler};

use crate::adapter::adapt_root;
use crate::events::{NodeOutcome, RunEvent, apply_logged, recorded_options};
use crate::run_log::fragment_at;

/// Schedulers of the scopes the log opened.
#[derive(Clone, Debug, Default)]
pub(super) struct Schedules {
    /// The root document (`run_started.graph`), which instances' fragments are found in.
    root: Option<Map<String, Value>>,
    /// The documents instances logged (subgraph children), by path.
    logged: BTreeMap<String, Value>,
    /// By scope instance (`None`: the root).
    scopes: HashMap<Option<String>, Scheduler>,
}

/// What one event made the scheduler of its scope decide.
#[derive(Debug, Default)]
pub(super) struct Decided {
    /// Nodes of the scope the scheduler added (its opening, a mutation), in order.
    pub added: Vec<String>,
    /// Nodes it ended without an event naming them.
    pub ended: Vec<(String, NodeOutcome)>,
}

impl Schedules {
    /// Feeds one event of `scope`: a `run_started` opens the scope's scheduler, any other
    /// event is applied to it.
    pub(super) fn feed(&mut self, scope: Option<&str>, event: &RunEvent) -> Decided {
        let key = scope.map(str::to_string);
        if let RunEvent::RunStarted { graph, .. } = event {
            self.scopes.remove(&key);
            match (scope, graph) {
                (None, Value::Object(g)) => self.root = Some(g.clone()),
                (Some(path), g @ Value::Object(_)) => {
                    self.logged.insert(path.to_string(), g.clone());
                }
                _ => {}
            }
            let Some(scheduler) = self.open(scope, event) else {
                return Decided::default();
            };
            let g = scheduler.graph();
            let added = (0..g.node_count()).map(|i| g.node(i).id.clone()).collect();
            self.scopes.insert(key.clone(), scheduler);
            let mut decided = self.apply(&key, event);
            decided.added = added;
            return decided;
        }
        self.apply(&key, event)
    }

    /// Whether `scope` has a scheduler (its document adapted and every event so far taken).
    pub(super) fn follows(&self, scope: Option<&str>) -> bool {
        self.scopes.contains_key(&scope.map(str::to_string))
    }

    /// Forgets the scheduler of `scope` (its log took back what it was fed: a reset).
    pub(super) fn forget(&mut self, scope: Option<&str>) {
        self.scopes.remove(&scope.map(str::to_string));
    }

    /// A scheduler over the scope's document, nothing applied yet.
    fn open(&self, scope: Option<&str>, started: &RunEvent) -> Option<Scheduler> {
        let root = self.root.as_ref()?;
        let doc = match scope {
            None => root,
            Some(path) => fragment_at(root, path, &self.logged)?,
        };
        let adapted = adapt_root(doc).ok()?;
        Some(Scheduler::new(adapted.graph, recorded_options(started)?))
    }

    fn apply(&mut self, key: &Option<String>, event: &RunEvent) -> Decided {
        let mut decided = Decided::default();
        let Some(scheduler) = self.scopes.get_mut(key) else {
            return decided;
        };
        // An inbox event that landed after the scope finished changes nothing (as in
        // `replay_scope`).
        if event.is_inbox() && scheduler.is_finished() {
            return decided;
        }
        let mapped = match event.to_scheduler(scheduler.graph()) {
            Ok(Some(mapped)) => mapped,
            Ok(None) => return decided,
            Err(_) => {
                self.scopes.remove(key);
                return decided;
            }
        };
        let before = scheduler.graph().node_count();
        let Ok(actions) = apply_logged(scheduler, event, &mapped) else {
            self.scopes.remove(key);
            return decided;
        };
        let g = scheduler.graph();
        for action in actions {
            if let Action::Skipped { node, .. } = action {
                decided
                    .ended
                    .push((g.node(node).id.clone(), NodeOutcome::Skipped));
            }
        }
        decided.added = (before..g.node_count())
            .map(|i| g.node(i).id.clone())
            .collect();
        // A cancel, or a mutation retiring nodes, ends nodes without an action.
        if matches!(
            event,
            RunEvent::CancelRequested { .. } | RunEvent::GraphMutated { .. }
        ) {
            for i in 0..g.node_count() {
                if scheduler.state(i) == weft_core::NodeState::Cancelled {
                    decided
                        .ended
                        .push((g.node(i).id.clone(), NodeOutcome::Cancelled));
                }
            }
        }
        decided
    }
}
