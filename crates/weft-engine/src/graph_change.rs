//! The logged form of a change to a live run's graph: the `graph_mutated` payload
//! (`docs/engine.md` §2e), vocabulary the event log and the mutation module share
//! (`mutation.rs` submits one; `events.rs` replays it).

use serde::{Deserialize, Serialize};
use weft_core::{EdgeKind, Mutation, WorkGraph};

/// Version of the `graph_mutated` payload (`graph_mutated.v`).
pub const MUTATION_FORMAT: u32 = 1;

/// One graph change, as logged: nodes by id (the root scope's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
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
}

/// The kinds of edge a mutation may add: unguarded ones (a guard needs an expression the
/// document does not have).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoggedEdge {
    Sequence,
    OnFailure,
}

impl GraphMutation {
    /// The scheduler's mutation, or the id that names no node of `graph`.
    pub fn to_core(&self, graph: &WorkGraph) -> Result<Mutation, String> {
        let find = |id: &str| graph.find(id).ok_or_else(|| id.to_string());
        Ok(match self {
            GraphMutation::CancelNode { node } => Mutation::CancelNode { node: find(node)? },
            GraphMutation::AddEdge { from, to, edge } => Mutation::AddEdge {
                from: find(from)?,
                to: find(to)?,
                kind: match edge {
                    LoggedEdge::Sequence => EdgeKind::Sequence,
                    LoggedEdge::OnFailure => EdgeKind::OnFailure,
                },
                guarded: false,
            },
        })
    }
}
