//! The mutation primitives the org runtime needs: add a node, add an edge, split a node,
//! merge two siblings.
//!
//! Each one works on a copy and swaps it in only after [`WorkGraph::assemble`] accepted it,
//! so a mutation keeps every invariant or fails without changing anything. They know nothing
//! of run state: whether a node may still be changed (it has not started) is checked by the
//! scheduler (`scheduler::mutation`), which owns that state. Cost: O(V + E log V) each.

use super::{EdgeKind, EdgeSpec, GraphError, NodeSpec, WorkGraph};
use serde::{Deserialize, Serialize};

/// An edge into a node that is being added: its source, kind and guard flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewEdge {
    pub from: usize,
    pub kind: EdgeKind,
    pub guarded: bool,
}

/// How the parts of a split node are wired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SplitShape {
    /// `p1 → p2 → … → pk` by sequence edges; `p1` inherits the incoming edges, `pk` the
    /// outgoing ones.
    Chain,
    /// Every part inherits a copy of every incoming and every outgoing edge, so successors
    /// see one edge per part (an `any` successor fires on the first part to succeed).
    Fan,
}

/// What a successful mutation did. New nodes and edges are appended, in the order listed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Change {
    pub added_nodes: Vec<usize>,
    pub added_edges: Vec<usize>,
    pub retired_nodes: Vec<usize>,
    pub retired_edges: Vec<usize>,
    /// `(original, copy)`: the copy replaces the retired original and inherits its
    /// resolution and guard value (the source may already have settled).
    pub copied_edges: Vec<(usize, usize)>,
}

/// A copy of the graph's raw parts to edit before re-validating.
struct Draft {
    nodes: Vec<NodeSpec>,
    edges: Vec<EdgeSpec>,
    node_live: Vec<bool>,
    edge_live: Vec<bool>,
    change: Change,
}

impl Draft {
    fn of(g: &WorkGraph) -> Draft {
        Draft {
            nodes: g.nodes.clone(),
            edges: g.edges.clone(),
            node_live: g.node_live.clone(),
            edge_live: g.edge_live.clone(),
            change: Change::default(),
        }
    }

    fn node(&mut self, spec: NodeSpec) -> usize {
        self.nodes.push(spec);
        self.node_live.push(true);
        let i = self.nodes.len() - 1;
        self.change.added_nodes.push(i);
        i
    }

    fn edge(&mut self, spec: EdgeSpec) -> usize {
        self.edges.push(spec);
        self.edge_live.push(true);
        let i = self.edges.len() - 1;
        self.change.added_edges.push(i);
        i
    }

    /// Adds a copy of `original` with new endpoints.
    fn copy(&mut self, original: usize, from: usize, to: usize) -> usize {
        let EdgeSpec { kind, guarded, .. } = self.edges[original];
        let copy = self.edge(EdgeSpec {
            from,
            to,
            kind,
            guarded,
        });
        self.change.copied_edges.push((original, copy));
        copy
    }

    fn retire(&mut self, node: usize, g: &WorkGraph) {
        self.node_live[node] = false;
        self.change.retired_nodes.push(node);
        for &e in g.incoming(node).iter().chain(g.outgoing(node)) {
            self.edge_live[e] = false;
            self.change.retired_edges.push(e);
        }
    }

    fn commit(self, g: &mut WorkGraph) -> Result<Change, GraphError> {
        *g = WorkGraph::assemble(self.nodes, self.edges, self.node_live, self.edge_live)?;
        Ok(self.change)
    }
}

impl WorkGraph {
    fn check_live(&self, node: usize) -> Result<(), GraphError> {
        if node >= self.nodes.len() {
            Err(GraphError::UnknownNode(node))
        } else if !self.node_live[node] {
            Err(GraphError::RetiredNode(node))
        } else {
            Ok(())
        }
    }

    /// Appends a node with its incoming edges (given together so that an `n_of` join can be
    /// satisfiable from the start).
    pub fn add_node(&mut self, spec: NodeSpec, incoming: &[NewEdge]) -> Result<Change, GraphError> {
        let mut d = Draft::of(self);
        let node = d.node(spec);
        for e in incoming {
            d.edge(EdgeSpec {
                from: e.from,
                to: node,
                kind: e.kind,
                guarded: e.guarded,
            });
        }
        d.commit(self)
    }

    /// Appends an edge.
    pub fn add_edge(&mut self, spec: EdgeSpec) -> Result<Change, GraphError> {
        let mut d = Draft::of(self);
        d.edge(spec);
        d.commit(self)
    }

    /// Replaces `node` by `parts` wired as `shape`; the node and its edges are retired.
    pub fn split(
        &mut self,
        node: usize,
        parts: Vec<NodeSpec>,
        shape: SplitShape,
    ) -> Result<Change, GraphError> {
        self.check_live(node)?;
        if parts.is_empty() {
            return Err(GraphError::EmptySplit);
        }
        let mut d = Draft::of(self);
        let parts: Vec<usize> = parts.into_iter().map(|p| d.node(p)).collect();
        let (inc, out) = (self.incoming(node).to_vec(), self.outgoing(node).to_vec());
        let wire = |d: &mut Draft, head: usize, tail: usize| {
            for &e in &inc {
                d.copy(e, d.edges[e].from, head);
            }
            for &e in &out {
                d.copy(e, tail, d.edges[e].to);
            }
        };
        match shape {
            SplitShape::Chain => {
                let (head, tail) = (parts[0], parts[parts.len() - 1]);
                wire(&mut d, head, tail);
                for pair in parts.windows(2) {
                    d.edge(EdgeSpec::new(pair[0], pair[1], EdgeKind::Sequence));
                }
            }
            SplitShape::Fan => {
                for &p in &parts {
                    wire(&mut d, p, p);
                }
            }
        }
        d.retire(node, self);
        d.commit(self)
    }

    /// Replaces siblings `a` and `b` (distinct live nodes with the same set of predecessors)
    /// by one node `spec` that carries the union of their edges. Unguarded edges that would
    /// duplicate one another (same other end, same kind) are kept once; guarded edges are all
    /// kept because their guards may differ.
    pub fn merge(&mut self, a: usize, b: usize, spec: NodeSpec) -> Result<Change, GraphError> {
        self.check_live(a)?;
        self.check_live(b)?;
        let parents = |n: usize| {
            let mut p: Vec<usize> = self
                .incoming(n)
                .iter()
                .map(|&e| self.edges[e].from)
                .collect();
            p.sort_unstable();
            p.dedup();
            p
        };
        if a == b || parents(a) != parents(b) {
            return Err(GraphError::NotSiblings { a, b });
        }
        let mut d = Draft::of(self);
        let m = d.node(spec);
        // (other end, kind) of unguarded copies already made, per direction.
        let mut seen_in: Vec<(usize, EdgeKind, usize)> = Vec::new();
        let mut seen_out: Vec<(usize, EdgeKind, usize)> = Vec::new();
        for &e in self.incoming(a).iter().chain(self.incoming(b)) {
            let EdgeSpec {
                from,
                kind,
                guarded,
                ..
            } = self.edges[e];
            if !guarded
                && let Some(&(_, _, c)) = seen_in.iter().find(|s| s.0 == from && s.1 == kind)
            {
                d.change.copied_edges.push((e, c));
                continue;
            }
            let c = d.copy(e, from, m);
            if !guarded {
                seen_in.push((from, kind, c));
            }
        }
        for &e in self.outgoing(a).iter().chain(self.outgoing(b)) {
            let EdgeSpec {
                to, kind, guarded, ..
            } = self.edges[e];
            if !guarded && let Some(&(_, _, c)) = seen_out.iter().find(|s| s.0 == to && s.1 == kind)
            {
                d.change.copied_edges.push((e, c));
                continue;
            }
            let c = d.copy(e, m, to);
            if !guarded {
                seen_out.push((to, kind, c));
            }
        }
        d.retire(a, self);
        d.retire(b, self);
        d.commit(self)
    }
}
