//! The logged form of a change to a live run's graph: the `graph_mutated` payload
//! (`docs/engine.md` §2e), vocabulary the event log and the mutation module share
//! (`mutation.rs` submits one; `events.rs` replays it; `run/grow.rs` gives the driver's
//! new nodes their tasks).
//!
//! Format 2 adds nodes: `add_node`, `plan`, `split` and `merge` carry each new node as an
//! AGS node object ([`NewNode`]), the source of its scheduling facts ([`NewNode::spec`])
//! and of its task, and `hold`/`release` keep the root scope open while it is idle. A
//! format-1 payload (`cancel_node`, `add_edge`) reads the same as before.

mod wire;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use weft_core::{
    EdgeKind, Event, Mutation, NewEdge, NodeSpec, Plan, PlanEdge, PlanNode, WorkGraph,
};

/// Version of the `graph_mutated` payload (`graph_mutated.v`) written now; 1 is still read.
pub const MUTATION_FORMAT: u32 = 2;

/// One graph change, as logged: nodes by id (the root scope's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", try_from = "wire::MutationWire")]
pub enum GraphMutation {
    /// Cancel a node that has not started, and every node reachable only through it
    /// (`weft_core::Mutation::CancelNode`).
    CancelNode { node: String },
    /// Add an edge into a pending node (`weft_core::Mutation::AddEdge`); an edge that
    /// would close a cycle is refused.
    AddEdge {
        from: String,
        to: String,
        edge: LoggedEdge,
    },
    /// Add one node after existing ones (`weft_core::Mutation::AddNode`; format 2). With
    /// no `after` it is an entry node: it is ready at once.
    AddNode {
        #[serde(flatten)]
        node: NewNode,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        after: Vec<After>,
    },
    /// Many nodes and their incoming edges, all or nothing; an `after` names a node of the
    /// plan (in any order) or of the graph (`weft_core::Mutation::Plan`; format 2).
    Plan { nodes: Vec<PlannedNode> },
    /// Replace a node that has not started by `parts` (`weft_core::Mutation::Split`;
    /// format 2).
    Split {
        node: String,
        parts: Vec<NewNode>,
        shape: LoggedShape,
    },
    /// Replace two independent nodes that have not started by one (`weft_core::Mutation::
    /// Merge`; format 2).
    Merge {
        a: String,
        b: String,
        #[serde(flatten)]
        into: NewNode,
    },
    /// Keep the root scope open while it is idle: work may still be added (format 2).
    Hold,
    /// End a `hold`: the run finishes once it is idle (format 2).
    Release,
}

/// A node a mutation brings: its id and its AGS node object (`type`, `inputs`,
/// `x-weft-exec`, … as in a document's `nodes.<id>`; its edges are the mutation's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewNode {
    pub id: String,
    pub node: Map<String, Value>,
}

/// A plan's node: the node and its incoming edges.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "wire::PlannedWire")]
pub struct PlannedNode {
    #[serde(flatten)]
    pub node: NewNode,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<After>,
}

/// An incoming edge of a new node: its source by id, unguarded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct After {
    pub from: String,
    #[serde(default = "sequence")]
    pub edge: LoggedEdge,
}

fn sequence() -> LoggedEdge {
    LoggedEdge::Sequence
}

/// The kinds of edge a mutation may add: unguarded ones (a guard needs an expression the
/// document does not have).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoggedEdge {
    Sequence,
    OnFailure,
}

impl LoggedEdge {
    fn core(self) -> EdgeKind {
        match self {
            LoggedEdge::Sequence => EdgeKind::Sequence,
            LoggedEdge::OnFailure => EdgeKind::OnFailure,
        }
    }
}

/// How a split's parts are wired (`weft_core::SplitShape`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoggedShape {
    /// `p1 → … → pk`: `p1` takes the incoming edges, `pk` the outgoing ones.
    Chain,
    /// Every part takes a copy of every incoming and outgoing edge.
    Fan,
}

impl NewNode {
    /// The scheduler's view of the node: its join (`join`, `join_count`), whether it has a
    /// `when`, and its own `constraints.concurrency_group` (graph `defaults` do not give
    /// an added node a group). `entry`: it has no incoming edge.
    pub fn spec(&self, entry: bool) -> Result<NodeSpec, String> {
        let join = crate::adapter::join_of(&self.id, &self.node).map_err(|e| e.to_string())?;
        let mut spec = NodeSpec::new(self.id.clone()).join(join);
        spec.has_when = self.node.contains_key("when");
        spec.entry = entry;
        spec.concurrency_group = self
            .node
            .get("constraints")
            .and_then(|c| c.get("concurrency_group"))
            .and_then(Value::as_str)
            .map(str::to_string);
        Ok(spec)
    }
}

impl GraphMutation {
    /// The nodes this mutation brings, in order.
    pub fn new_nodes(&self) -> Vec<&NewNode> {
        match self {
            GraphMutation::AddNode { node, .. } => vec![node],
            GraphMutation::Plan { nodes } => nodes.iter().map(|p| &p.node).collect(),
            GraphMutation::Split { parts, .. } => parts.iter().collect(),
            GraphMutation::Merge { into, .. } => vec![into],
            _ => Vec::new(),
        }
    }

    /// The nodes this mutation brings, in order, to be lent (`crate::mutation` moves their
    /// objects into the validator's document and back).
    pub(crate) fn new_nodes_mut(&mut self) -> Vec<&mut NewNode> {
        match self {
            GraphMutation::AddNode { node, .. } => vec![node],
            GraphMutation::Plan { nodes } => nodes.iter_mut().map(|p| &mut p.node).collect(),
            GraphMutation::Split { parts, .. } => parts.iter_mut().collect(),
            GraphMutation::Merge { into, .. } => vec![into],
            _ => Vec::new(),
        }
    }

    /// The mutation's name in the log (`op`).
    pub fn op(&self) -> &'static str {
        match self {
            GraphMutation::CancelNode { .. } => "cancel_node",
            GraphMutation::AddEdge { .. } => "add_edge",
            GraphMutation::AddNode { .. } => "add_node",
            GraphMutation::Plan { .. } => "plan",
            GraphMutation::Split { .. } => "split",
            GraphMutation::Merge { .. } => "merge",
            GraphMutation::Hold => "hold",
            GraphMutation::Release => "release",
        }
    }

    /// The scheduler's mutation, or the id that names no node of `graph` (or why a new
    /// node has no scheduling form).
    pub fn to_core(&self, graph: &WorkGraph) -> Result<Mutation, String> {
        match self.to_event(graph)? {
            Event::Mutate(m) => Ok(m),
            _ => Err(format!("`{}` is not a graph change", self.op())),
        }
    }

    /// The scheduler event: a mutation, or `Hold`/`Release`. The error is the id that
    /// names no node of `graph`, or why a new node has no scheduling form.
    pub fn to_event(&self, graph: &WorkGraph) -> Result<Event, String> {
        let find = |id: &str| graph.find(id).ok_or_else(|| id.to_string());
        let mutation = match self {
            GraphMutation::Hold => return Ok(Event::Hold),
            GraphMutation::Release => return Ok(Event::Release),
            GraphMutation::CancelNode { node } => Mutation::CancelNode { node: find(node)? },
            GraphMutation::AddEdge { from, to, edge } => Mutation::AddEdge {
                from: find(from)?,
                to: find(to)?,
                kind: edge.core(),
                guarded: false,
            },
            GraphMutation::AddNode { node, after } => Mutation::AddNode {
                spec: node.spec(after.is_empty())?,
                incoming: after
                    .iter()
                    .map(|a| {
                        Ok(NewEdge {
                            from: find(&a.from)?,
                            kind: a.edge.core(),
                            guarded: false,
                        })
                    })
                    .collect::<Result<_, String>>()?,
            },
            GraphMutation::Plan { nodes } => Mutation::Plan(Plan {
                nodes: nodes
                    .iter()
                    .map(|p| {
                        Ok(PlanNode {
                            spec: p.node.spec(p.after.is_empty())?,
                            after: p
                                .after
                                .iter()
                                .map(|a| PlanEdge {
                                    from: a.from.clone(),
                                    kind: a.edge.core(),
                                    guarded: false,
                                })
                                .collect(),
                        })
                    })
                    .collect::<Result<_, String>>()?,
            }),
            GraphMutation::Split { node, parts, shape } => {
                let node = find(node)?;
                // A part stands where the node stood: an entry node's parts are entries
                // (a chain's first one only).
                let entry = graph.node(node).entry;
                Mutation::Split {
                    node,
                    parts: parts
                        .iter()
                        .enumerate()
                        .map(|(k, p)| p.spec(entry && (k == 0 || *shape == LoggedShape::Fan)))
                        .collect::<Result<_, String>>()?,
                    shape: match shape {
                        LoggedShape::Chain => weft_core::SplitShape::Chain,
                        LoggedShape::Fan => weft_core::SplitShape::Fan,
                    },
                }
            }
            GraphMutation::Merge { a, b, into } => {
                let (a, b) = (find(a)?, find(b)?);
                let entry = graph.node(a).entry && graph.node(b).entry;
                Mutation::Merge {
                    a,
                    b,
                    spec: into.spec(entry)?,
                }
            }
        };
        Ok(Event::Mutate(mutation))
    }
}

/// The AGS objects of the nodes `mutations` (a log's, in order) added to `graph` (the
/// replayed one), by id, borrowed from the log: the first mutation that brought an id the
/// graph holds. (Ids are never reused once held; only a mutation refused where the log has
/// it, a race, could have brought the same id earlier.)
pub fn added_objects<'m>(
    graph: &WorkGraph,
    mutations: impl IntoIterator<Item = &'m GraphMutation>,
) -> std::collections::HashMap<&'m str, &'m Map<String, Value>> {
    let mut out = std::collections::HashMap::new();
    for m in mutations {
        for n in m.new_nodes() {
            if graph.find(&n.id).is_some() {
                out.entry(n.id.as_str()).or_insert(&n.node);
            }
        }
    }
    out
}
