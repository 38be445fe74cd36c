//! The pure scheduler of one scope instance: a transducer `apply(&mut self, &Event) ->
//! Vec<Action>` over a [`WorkGraph`].
//!
//! It never performs IO, reads no clock, draws no random numbers and spawns nothing: the
//! shell carries out the actions and reports what happened as events, and the same events
//! applied to a fresh scheduler yield the same actions (replay). An event that does not fit
//! the state is a [`ProtocolError`] and changes nothing: every handler validates first and
//! only then writes.
//!
//! Dataflow, no superstep barrier: a node becomes ready the moment its join is met, and
//! ready nodes start in rank order (Kahn's order, ties by declaration index) as soon as
//! capacity and their concurrency group allow.
//!
//! Complexity. Per node, the scheduler keeps counters of active and inactive incoming edges,
//! so a node that settles costs O(out-degree) (plus O(log V) per node that becomes ready, for
//! the ordered ready set), and skip propagation costs O(edges reached) in total. Starting
//! walks the ready set in rank order and stops when capacity is full; only ready nodes whose
//! group is busy are stepped over. Two things are O(V), each once per scope: the halt or
//! cancel sweep, and the final pass that skips unreachable nodes and counts states.
//! A mutation costs in proportion to the region it touches (`graph::mutate`), plus
//! O(log V) per node whose rank it changes (the ready set is re-keyed for those only).

mod events;
mod flow;
mod mutation;
mod types;

pub use types::{
    Action, EdgeTaken, Event, Mutation, Outcome, ProtocolError, ScopeSummary, SkipReason,
    StateCounts,
};

use crate::graph::WorkGraph;
use crate::state::{FailurePolicy, NodeState, Resolution};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, VecDeque};

/// Scheduling options of one scope instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// At most this many nodes running at once; 0 is treated as 1. A node awaiting a human
    /// holds no slot (a person's wait must not stop independent work).
    pub max_parallel: usize,
    pub on_node_failure: FailurePolicy,
}

impl Default for Options {
    /// One node at a time; `isolate`, the AGS default.
    fn default() -> Self {
        Options {
            max_parallel: 1,
            on_node_failure: FailurePolicy::Isolate,
        }
    }
}

/// The scheduler: the graph plus the run state of every node and edge.
#[derive(Clone, Debug)]
pub struct Scheduler {
    graph: WorkGraph,
    options: Options,
    states: Vec<NodeState>,
    /// Ready, `EvaluateWhen` emitted, no answer yet.
    when_pending: Vec<bool>,
    resolution: Vec<Resolution>,
    /// Guard values reported with `Settled`.
    guard: Vec<Option<bool>>,
    active_in: Vec<u32>,
    inactive_in: Vec<u32>,
    /// Ready nodes that may start, keyed by (rank, node) so iteration is the tie-break order.
    startable: BTreeSet<(u64, usize)>,
    /// Nodes in state Ready (startable or waiting for their `when`).
    ready_count: usize,
    /// Nodes Running or AwaitingHuman.
    running: usize,
    /// Nodes awaiting a human: they hold no slot, but the scope has not finished.
    awaiting: usize,
    group_busy: Vec<bool>,
    begun: bool,
    /// Held open by `Event::Hold` until `Event::Release`: idle does not finish the scope.
    held: bool,
    finished: bool,
    halted: bool,
    cancelled: bool,
    started: Vec<usize>,
    edges_taken: Vec<EdgeTaken>,
    unabsorbed: Vec<usize>,
    retired: Vec<usize>,
    /// Newly terminal nodes whose outgoing edges are still to be resolved.
    queue: VecDeque<usize>,
}

impl Scheduler {
    /// A scheduler with every node pending; nothing happens before `Event::Begin`.
    pub fn new(graph: WorkGraph, options: Options) -> Self {
        let (n, e) = (graph.node_count(), graph.edge_count());
        let mut states = vec![NodeState::Pending; n];
        let mut retired = Vec::new();
        for (i, s) in states.iter_mut().enumerate() {
            if !graph.is_live(i) {
                *s = NodeState::Cancelled;
                retired.push(i);
            }
        }
        Scheduler {
            options: Options {
                max_parallel: options.max_parallel.max(1),
                ..options
            },
            states,
            when_pending: vec![false; n],
            resolution: vec![Resolution::Unresolved; e],
            guard: vec![None; e],
            active_in: vec![0; n],
            inactive_in: vec![0; n],
            startable: BTreeSet::new(),
            ready_count: 0,
            running: 0,
            awaiting: 0,
            group_busy: vec![false; graph.group_count()],
            begun: false,
            held: false,
            finished: false,
            halted: false,
            cancelled: false,
            started: Vec::new(),
            edges_taken: Vec::new(),
            unabsorbed: Vec::new(),
            retired,
            queue: VecDeque::new(),
            graph,
        }
    }

    /// Applies one event; returns the actions for the shell, in order. On error nothing
    /// changed.
    pub fn apply(&mut self, event: &Event) -> Result<Vec<Action>, ProtocolError> {
        if self.finished {
            return Err(ProtocolError::Finished);
        }
        let needs_begin = !matches!(
            event,
            Event::Begin | Event::Cancel | Event::Mutate(_) | Event::Hold | Event::Release
        );
        if needs_begin && !self.begun {
            return Err(ProtocolError::NotBegun);
        }
        let mut out = Vec::new();
        match event {
            Event::Begin => self.begin(&mut out)?,
            Event::WhenResolved { node, value } => self.when_resolved(*node, *value, &mut out)?,
            Event::Settled {
                node,
                outcome,
                guards,
            } => self.settled(*node, *outcome, guards, &mut out)?,
            Event::AwaitingHuman { node } => {
                self.human(*node, NodeState::Running, NodeState::AwaitingHuman)?
            }
            Event::HumanResumed { node } => {
                self.human(*node, NodeState::AwaitingHuman, NodeState::Running)?
            }
            Event::Cancel => self.cancel(&mut out),
            Event::Mutate(m) => self.mutate(m, &mut out)?,
            Event::Hold => self.held = true,
            Event::Release => self.held = false,
        }
        self.pump(&mut out);
        self.check_finished(&mut out);
        Ok(out)
    }

    /// The state of a node (retired nodes read `Cancelled`). Panics if out of range.
    pub fn state(&self, node: usize) -> NodeState {
        self.states[node]
    }

    /// The resolution of an edge. Panics if out of range.
    pub fn resolution(&self, edge: usize) -> Resolution {
        self.resolution[edge]
    }

    /// Is the node ready and waiting for its `when` answer?
    pub fn when_pending(&self, node: usize) -> bool {
        self.when_pending[node]
    }

    /// The graph as it stands (mutations change it).
    pub fn graph(&self) -> &WorkGraph {
        &self.graph
    }

    /// The options, with `max_parallel` already raised to at least 1.
    pub fn options(&self) -> Options {
        self.options
    }

    /// Nodes running or awaiting a human.
    pub fn running_count(&self) -> usize {
        self.running + self.awaiting
    }

    /// Nodes in the order they started.
    pub fn started(&self) -> &[usize] {
        &self.started
    }

    /// Has `Finished` been emitted?
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Is the scope held open (`Event::Hold` without a `Release` since)?
    pub fn is_held(&self) -> bool {
        self.held
    }

    /// Nothing ready, running or awaiting a human: a held scope waits here for work.
    pub fn is_idle(&self) -> bool {
        self.ready_count == 0 && self.running == 0 && self.awaiting == 0
    }

    /// The summary so far (the one in `Finished` when the scope has finished).
    pub fn summary(&self) -> ScopeSummary {
        let mut counts = StateCounts::default();
        for n in self.graph.order() {
            match self.states[n] {
                NodeState::Succeeded => counts.succeeded += 1,
                NodeState::Failed => counts.failed += 1,
                NodeState::Blocked => counts.blocked += 1,
                NodeState::Skipped => counts.skipped += 1,
                NodeState::Cancelled => counts.cancelled += 1,
                _ => {}
            }
        }
        ScopeSummary {
            counts,
            started: self.started.clone(),
            edges_taken: self.edges_taken.clone(),
            unabsorbed: self.unabsorbed.clone(),
            retired: self.retired.clone(),
            halted: self.halted,
            cancelled: self.cancelled,
        }
    }

    /// A live node index, or `UnknownNode`.
    fn live(&self, node: usize) -> Result<usize, ProtocolError> {
        if self.graph.is_live(node) {
            Ok(node)
        } else {
            Err(ProtocolError::UnknownNode(node))
        }
    }

    fn expect_state(
        &self,
        node: usize,
        ok: bool,
        expected: &'static str,
    ) -> Result<(), ProtocolError> {
        if ok {
            Ok(())
        } else {
            Err(ProtocolError::WrongState {
                node,
                state: self.states[node],
                expected,
            })
        }
    }
}
