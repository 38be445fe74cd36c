//! The scheduler's vocabulary: events in, actions out, the final summary, protocol errors.
//! All serializable: events are what the store logs, and replaying them rebuilds the state.

use crate::graph::{EdgeKind, GraphError, NewEdge, NodeSpec, Plan, SplitShape};
use crate::state::NodeState;
use serde::{Deserialize, Serialize};

/// Something that happened to the scope. Node and edge fields are indices into the graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    /// Start the scope: entry nodes become ready.
    Begin,
    /// The answer to `Action::EvaluateWhen`.
    WhenResolved { node: usize, value: bool },
    /// A running node reached a terminal outcome. `guards` holds the values of its guarded
    /// outgoing edges that the outcome needs (conditional edges on success, guarded
    /// on_failure edges on failure or block); values for its other guarded edges are allowed
    /// and ignored.
    Settled {
        node: usize,
        outcome: Outcome,
        guards: Vec<(usize, bool)>,
    },
    /// A running node paused on a human.
    AwaitingHuman { node: usize },
    /// The human answered; the node runs again.
    HumanResumed { node: usize },
    /// Stop the scope: start nothing, cancel what has not started.
    Cancel,
    /// Change the graph while it runs (the org runtime). Logged like any other event so a
    /// replay applies it at the same point.
    Mutate(Mutation),
    /// Keep the scope open while it is idle: work may still be added (an org run whose
    /// agents may plan more). Until `Release`, having nothing ready or running does not
    /// finish the scope; `Cancel` and a halt still do. Accepted before `Begin`.
    Hold,
    /// End a `Hold`: the scope finishes as soon as it is idle (at once if it is now).
    Release,
}

/// A graph change, with its run-state preconditions checked by the scheduler.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mutation {
    /// Append a node and its incoming edges. Guarded edges need a source that has not
    /// settled yet (its guard value comes with its `Settled`).
    AddNode {
        spec: NodeSpec,
        incoming: Vec<NewEdge>,
    },
    /// Append an edge into a pending node.
    AddEdge {
        from: usize,
        to: usize,
        kind: EdgeKind,
        guarded: bool,
    },
    /// Cancel a node that has not started, and everything reachable only through it.
    CancelNode { node: usize },
    /// Replace a node that has not started by `parts` (appended in order).
    Split {
        node: usize,
        parts: Vec<NodeSpec>,
        shape: SplitShape,
    },
    /// Replace two independent nodes that have not started by one (`WorkGraph::merge`).
    Merge { a: usize, b: usize, spec: NodeSpec },
    /// Add many nodes and their incoming edges, all or nothing (`WorkGraph::add_plan`).
    Plan(Plan),
}

/// How a running node ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Outcome {
    Succeeded,
    Failed,
    Blocked,
    Skipped,
    Cancelled,
}

impl Outcome {
    /// The terminal state the outcome puts the node in.
    pub fn state(self) -> NodeState {
        match self {
            Outcome::Succeeded => NodeState::Succeeded,
            Outcome::Failed => NodeState::Failed,
            Outcome::Blocked => NodeState::Blocked,
            Outcome::Skipped => NodeState::Skipped,
            Outcome::Cancelled => NodeState::Cancelled,
        }
    }
}

/// What the shell must do (or learn), in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    /// Evaluate the node's `when` and answer with `Event::WhenResolved`.
    EvaluateWhen { node: usize },
    /// Run the node; answer with `Event::Settled`.
    Start { node: usize },
    /// The scheduler skipped a node that never started.
    Skipped { node: usize, reason: SkipReason },
    /// Nothing can change any more; emitted once, last.
    Finished { summary: ScopeSummary },
}

/// Why the scheduler skipped a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SkipReason {
    /// Its `when` evaluated to false.
    WhenFalse,
    /// Its join can no longer be met (skip propagation).
    JoinUnsatisfiable,
    /// `on_node_failure: halt` stopped the scope after an unabsorbed failure.
    Halted,
    /// Not an entry node and no path from one reaches it (AG903).
    Unreachable,
}

/// An edge that resolved active, with the guard value it was resolved with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeTaken {
    pub edge: usize,
    pub from: usize,
    pub to: usize,
    pub kind: EdgeKind,
    /// `None` for an unguarded edge.
    pub guard: Option<bool>,
}

/// Final node counts of live nodes (all are terminal when the scope finishes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateCounts {
    pub succeeded: usize,
    pub failed: usize,
    pub blocked: usize,
    pub skipped: usize,
    pub cancelled: usize,
}

/// The record of a finished scope instance.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeSummary {
    pub counts: StateCounts,
    /// Nodes in the order they were started.
    pub started: Vec<usize>,
    /// Active edges in the order they resolved.
    pub edges_taken: Vec<EdgeTaken>,
    /// Failed or blocked nodes with no active on_failure edge.
    pub unabsorbed: Vec<usize>,
    /// Nodes replaced by a split or merge (not counted in `counts`).
    pub retired: Vec<usize>,
    /// The scope stopped early: halt policy after an unabsorbed failure.
    pub halted: bool,
    /// The scope was cancelled.
    pub cancelled: bool,
}

/// An event that does not fit the current state. The scheduler is unchanged after one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("the scope has not begun")]
    NotBegun,
    #[error("the scope has already begun")]
    AlreadyBegun,
    #[error("the scope has finished")]
    Finished,
    #[error("the scope is halted or cancelled: the graph can no longer change")]
    Closed,
    #[error("node {0} does not exist or is retired")]
    UnknownNode(usize),
    #[error("node {node} is {state:?}, expected {expected}")]
    WrongState {
        node: usize,
        state: NodeState,
        expected: &'static str,
    },
    #[error("node {node} has no `when` evaluation outstanding")]
    NoWhenPending { node: usize },
    #[error("node {node} settled without a value for guarded edge {edge}")]
    MissingGuard { node: usize, edge: usize },
    #[error("guard value for edge {edge}, which is not a guarded outgoing edge of node {node}")]
    UnexpectedGuard { node: usize, edge: usize },
    #[error("two guard values for edge {edge}")]
    DuplicateGuard { edge: usize },
    #[error(
        "guarded edge from node {from}, which has already settled: its guard was never evaluated"
    )]
    GuardUnavailable { from: usize },
    #[error(transparent)]
    Graph(#[from] GraphError),
}
