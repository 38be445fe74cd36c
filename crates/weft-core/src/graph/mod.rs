//! The work graph of one scope instance: nodes in declaration order, typed edges, and the
//! rank of every node.
//!
//! Indices are stable for the life of a graph: nodes and edges are only ever appended.
//! Mutations that replace nodes (split, merge) *retire* the old node and its edges instead of
//! removing them, so an index the shell recorded in its event log keeps its meaning.
//! Every query below skips retired nodes and edges unless it says otherwise.
//!
//! A mutation changes the graph in place and costs in proportion to the region it touches:
//! it validates everything first (writing nothing), then applies. The topological order is
//! kept as sparse labels (`order.rs`), repaired after an edge insertion by reordering only
//! the nodes between the edge's ends (Pearce–Kelly), never by re-sorting the graph.

mod build;
mod check;
mod mutate;
mod order;
mod plan;

pub use build::GraphBuilder;
pub use mutate::{Change, NewEdge, SplitShape};
pub use plan::{Plan, PlanEdge, PlanError, PlanNode, Unresolved};

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// How a node combines its incoming edges (AGS `join`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Join {
    /// Every incoming edge resolved and active.
    All,
    /// At least one incoming edge active; fires on the first, does not wait for the rest.
    Any,
    /// At least `n` incoming edges active (`1 ≤ n ≤ incoming`).
    NOf(u32),
}

/// Edge kinds (AGS §8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EdgeKind {
    /// Active iff the source succeeded. Never guarded.
    Sequence,
    /// Active iff the source succeeded and its guard is true. Always guarded.
    Conditional,
    /// Active iff the source failed or was blocked and its guard (if any) is true.
    OnFailure,
}

/// One node as declared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSpec {
    /// Unique among every node the graph ever held (retired ones included).
    pub id: String,
    pub join: Join,
    /// The node has a `when` condition, evaluated by the shell once its join is met.
    pub has_when: bool,
    /// At most one node of a group runs at a time.
    pub concurrency_group: Option<String>,
    /// Made ready by `Begin`; has no incoming edges.
    pub entry: bool,
}

impl NodeSpec {
    /// A non-entry node with `join: all`, no `when` and no group.
    pub fn new(id: impl Into<String>) -> Self {
        NodeSpec {
            id: id.into(),
            join: Join::All,
            has_when: false,
            concurrency_group: None,
            entry: false,
        }
    }

    /// The same node, made an entry node.
    pub fn entry(mut self) -> Self {
        self.entry = true;
        self
    }

    /// The same node with another join.
    pub fn join(mut self, join: Join) -> Self {
        self.join = join;
        self
    }

    /// The same node with a `when` condition.
    pub fn with_when(mut self) -> Self {
        self.has_when = true;
        self
    }

    /// The same node in a concurrency group.
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.concurrency_group = Some(group.into());
        self
    }
}

/// One edge between two node indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EdgeSpec {
    pub from: usize,
    pub to: usize,
    pub kind: EdgeKind,
    /// The edge has a guard (`when`) whose value the shell reports when `from` settles.
    pub guarded: bool,
}

impl EdgeSpec {
    /// An edge with the guard its kind usually has: conditional edges are guarded, the
    /// others are not.
    pub fn new(from: usize, to: usize, kind: EdgeKind) -> Self {
        EdgeSpec {
            from,
            to,
            kind,
            guarded: kind == EdgeKind::Conditional,
        }
    }
}

/// Why a graph or a mutation was rejected. A rejected mutation leaves the graph unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    #[error("node id `{id}` is used by nodes {first} and {second}")]
    DuplicateId {
        id: String,
        first: usize,
        second: usize,
    },
    #[error("edge {edge} names node {node}, which does not exist")]
    UnknownEndpoint { edge: usize, node: usize },
    #[error("edge {edge} touches retired node {node}")]
    RetiredEndpoint { edge: usize, node: usize },
    #[error("the edges form a cycle through nodes {nodes:?}")]
    Cycle { nodes: Vec<usize> },
    #[error("node {node} joins on {n} edges but has {incoming} incoming edges")]
    JoinTooLarge {
        node: usize,
        n: u32,
        incoming: usize,
    },
    #[error("node {node} has join n_of(0); n must be at least 1")]
    JoinZero { node: usize },
    #[error("entry node {node} has incoming edge {edge}")]
    EntryHasIncoming { node: usize, edge: usize },
    #[error("edge {edge}: a {kind:?} edge must {}be guarded", if *guarded { "not " } else { "" })]
    Guard {
        edge: usize,
        kind: EdgeKind,
        guarded: bool,
    },
    #[error("node {0} does not exist")]
    UnknownNode(usize),
    #[error("node {0} is retired")]
    RetiredNode(usize),
    #[error("a split needs at least one part")]
    EmptySplit,
    #[error("nodes {a} and {b} cannot merge: {} depends on the other (path {path:?})", path[0])]
    MergeDependent {
        a: usize,
        b: usize,
        /// The path from one to the other.
        path: Vec<usize>,
    },
    #[error("a node cannot be merged with itself ({0})")]
    MergeSelf(usize),
    #[error(
        "node `{id}` could never run: its join needs {needed} active incoming edges, but its edges \
         from node {from} need both its success and its failure"
    )]
    JoinNeverMet {
        id: String,
        needed: usize,
        /// A source whose success edges and on_failure edges both lead into the node.
        from: usize,
    },
    #[error("{0}")]
    Plan(Box<PlanError>),
}

/// A validated, acyclic work graph. See the module docs for index stability.
#[derive(Clone, Debug)]
pub struct WorkGraph {
    pub(crate) nodes: Vec<NodeSpec>,
    pub(crate) edges: Vec<EdgeSpec>,
    pub(crate) node_live: Vec<bool>,
    pub(crate) edge_live: Vec<bool>,
    /// Live outgoing / incoming edge indices per node, in edge order.
    pub(crate) outgoing: Vec<Vec<usize>>,
    pub(crate) incoming: Vec<Vec<usize>>,
    /// The node's topological label (sparse: gaps leave room for split parts); `u64::MAX`
    /// for retired nodes. Every live edge goes from a lower label to a higher one.
    pub(crate) rank: Vec<u64>,
    /// Live nodes by label: the scheduling order.
    pub(crate) order: BTreeMap<u64, usize>,
    /// Interned concurrency group per node (by first appearance, so ids survive appends).
    pub(crate) group: Vec<Option<u32>>,
    pub(crate) group_ids: HashMap<String, u32>,
    /// Node id → index (retired nodes too), so the shell maps a logged event to its node in
    /// O(1) rather than by a scan per event. Lookups only: its order never leaks out.
    pub(crate) by_id: HashMap<String, usize>,
}

impl WorkGraph {
    /// Number of nodes ever declared (retired ones included): the bound of node indices.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Number of edges ever declared (retired ones included).
    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }

    /// A node's declaration (retired nodes too). Panics on an out-of-range index, like slices.
    pub fn node(&self, node: usize) -> &NodeSpec {
        &self.nodes[node]
    }

    /// An edge's declaration (retired edges too).
    pub fn edge(&self, edge: usize) -> &EdgeSpec {
        &self.edges[edge]
    }

    /// Is the node part of the graph (not retired by a split or merge)?
    pub fn is_live(&self, node: usize) -> bool {
        self.node_live.get(node).copied().unwrap_or(false)
    }

    /// Is the edge part of the graph?
    pub fn is_edge_live(&self, edge: usize) -> bool {
        self.edge_live.get(edge).copied().unwrap_or(false)
    }

    /// Live outgoing edges of a node, in edge order.
    pub fn outgoing(&self, node: usize) -> &[usize] {
        &self.outgoing[node]
    }

    /// Live incoming edges of a node, in edge order.
    pub fn incoming(&self, node: usize) -> &[usize] {
        &self.incoming[node]
    }

    /// The node's label in the scheduling order; `u64::MAX` for a retired node. Labels are
    /// sparse: only their comparison means something. A built graph is labelled in Kahn's
    /// order (ties by declaration index); mutations keep the labels topological and change
    /// as few as they can (see `docs/scheduler.md`).
    pub fn rank(&self, node: usize) -> u64 {
        self.rank[node]
    }

    /// Live nodes in rank order.
    pub fn order(&self) -> impl DoubleEndedIterator<Item = usize> + '_ {
        self.order.values().copied()
    }

    /// Number of live nodes.
    pub fn live_count(&self) -> usize {
        self.order.len()
    }

    /// Number of distinct concurrency groups ever declared.
    pub fn group_count(&self) -> usize {
        self.group_ids.len()
    }

    /// The index of the node with this id (retired nodes too); a hash lookup (the engine
    /// maps every logged event's node id through it).
    pub fn find(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// The interned concurrency group of a node.
    pub(crate) fn group_of(&self, node: usize) -> Option<u32> {
        self.group[node]
    }
}
