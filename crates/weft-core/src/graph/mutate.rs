//! The mutation primitives the org runtime needs: add a node, add an edge, split a node,
//! merge two independent nodes (and, in `plan.rs`, add many nodes at once).
//!
//! Each one validates everything first, writing nothing, and then applies its change in
//! place, so a refused mutation costs only its checks and leaves the graph as it was. The
//! cost is proportional to the region touched: the nodes and edges named, their
//! neighbours' adjacency lists, and (for an edge that goes against the current order, or a
//! merge) the nodes between its ends that the order repair moves (`order.rs`). They know
//! nothing of run state: whether a node may still be changed (it has not started) is checked
//! by the scheduler (`scheduler::mutation`), which owns that state.

use super::check;
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
    /// `(node, old rank)` of every existing node whose rank changed (retired nodes too,
    /// now `u64::MAX`), so a holder of ranks re-keys just these.
    pub reranked: Vec<(usize, u64)>,
    /// Every live node was relabelled (their order is unchanged): ranks held elsewhere are
    /// all stale, and `reranked` may be incomplete.
    pub relabeled_all: bool,
}

impl WorkGraph {
    /// Appends a node with its incoming edges (given together so that an `n_of` join can be
    /// satisfiable from the start).
    pub fn add_node(&mut self, spec: NodeSpec, incoming: &[NewEdge]) -> Result<Change, GraphError> {
        let (node, first_edge) = (self.nodes.len(), self.edges.len());
        self.check_fresh_id(&spec.id, node)?;
        for (i, e) in incoming.iter().enumerate() {
            if e.from == node {
                return Err(GraphError::Cycle { nodes: vec![node] });
            }
            self.check_endpoint(first_edge + i, e.from)?;
            check::guard(first_edge + i, &self.new_edge(e, node))?;
        }
        let first = (!incoming.is_empty()).then_some(first_edge);
        check::node(node, &spec, incoming.len(), first)?;
        check::runnable(&spec, incoming.iter().map(|e| (e.from, e.kind)))?;
        // Validated: apply.
        let mut change = Change::default();
        let node = self.push_node(spec);
        change.added_nodes.push(node);
        self.append_label(node, &mut change);
        for e in incoming {
            let edge = self.push_edge(self.new_edge(e, node));
            change.added_edges.push(edge);
        }
        Ok(change)
    }

    fn new_edge(&self, e: &NewEdge, to: usize) -> EdgeSpec {
        EdgeSpec {
            from: e.from,
            to,
            kind: e.kind,
            guarded: e.guarded,
        }
    }

    /// Appends an edge. An edge against the current order moves the nodes between its ends
    /// (and only those); one that closes a cycle is refused with the cycle.
    pub fn add_edge(&mut self, spec: EdgeSpec) -> Result<Change, GraphError> {
        let edge = self.edges.len();
        self.check_endpoint(edge, spec.from)?;
        self.check_endpoint(edge, spec.to)?;
        check::guard(edge, &spec)?;
        if spec.from == spec.to {
            return Err(GraphError::Cycle {
                nodes: vec![spec.from],
            });
        }
        let target = &self.nodes[spec.to];
        check::node(
            spec.to,
            target,
            self.incoming[spec.to].len() + 1,
            Some(edge),
        )?;
        let existing = self.incoming[spec.to]
            .iter()
            .map(|&e| (self.edges[e].from, self.edges[e].kind));
        check::runnable(target, existing.chain([(spec.from, spec.kind)]))?;
        let (x, y) = (spec.from, spec.to);
        let repair = if self.rank[x] > self.rank[y] {
            let fwd = self
                .forward_region(&[y], self.rank[x], x)
                .map_err(|mut path| {
                    path.insert(0, x);
                    path.pop(); // the path ends where it starts: x
                    GraphError::Cycle { nodes: path }
                })?;
            let back = self.backward_region(&[x], self.rank[y]);
            Some((back, fwd))
        } else {
            None
        };
        // Validated: apply.
        let mut change = Change::default();
        if let Some((back, fwd)) = repair {
            self.reorder(back, None, fwd, None, &mut change);
        }
        change.added_edges.push(self.push_edge(spec));
        Ok(change)
    }

    /// Replaces `node` by `parts` wired as `shape`; the node and its edges are retired. The
    /// parts take the node's place in the order, so nothing else moves.
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
        let (inc, out) = (self.incoming[node].clone(), self.outgoing[node].clone());
        let first_node = self.nodes.len();
        let mut next_edge = self.edges.len();
        for (i, part) in parts.iter().enumerate() {
            let index = first_node + i;
            self.check_fresh_id(&part.id, index)?;
            if let Some(j) = parts[..i].iter().position(|p| p.id == part.id) {
                return Err(GraphError::DuplicateId {
                    id: part.id.clone(),
                    first: first_node + j,
                    second: index,
                });
            }
            // The part's incoming edges and the index of its first one (edges are appended
            // part by part, incoming copies first).
            let incoming = match shape {
                SplitShape::Chain if i > 0 => 1,
                _ => inc.len(),
            };
            let first = match shape {
                SplitShape::Chain if i > 0 => {
                    Some(self.edges.len() + inc.len() + out.len() + (i - 1))
                }
                _ => (incoming > 0).then_some(next_edge),
            };
            if shape == SplitShape::Fan {
                next_edge += inc.len() + out.len();
            }
            check::node(index, part, incoming, first)?;
        }
        let labels = self.labels_in_place_of(node, parts.len());
        // Validated: apply.
        let mut change = Change::default();
        let labels = match labels {
            Some(labels) => labels,
            None => {
                self.relabel_all(&mut change);
                // After a relabel the gap is GAP wide; a split of more parts than that is
                // beyond any graph this holds in memory.
                self.labels_in_place_of(node, parts.len())
                    .unwrap_or_else(|| vec![self.rank[node]; parts.len()])
            }
        };
        let parts: Vec<usize> = parts.into_iter().map(|p| self.push_node(p)).collect();
        change.added_nodes.extend(&parts);
        self.retire(node, &mut change);
        for (&p, label) in parts.iter().zip(labels) {
            self.set_label(p, label);
        }
        let wire = |g: &mut WorkGraph, change: &mut Change, head: usize, tail: usize| {
            for &e in &inc {
                g.copy_edge(e, g.edges[e].from, head, change);
            }
            for &e in &out {
                g.copy_edge(e, tail, g.edges[e].to, change);
            }
        };
        match shape {
            SplitShape::Chain => {
                let (head, tail) = (parts[0], parts[parts.len() - 1]);
                wire(self, &mut change, head, tail);
                for pair in parts.windows(2) {
                    let e = self.push_edge(EdgeSpec::new(pair[0], pair[1], EdgeKind::Sequence));
                    change.added_edges.push(e);
                }
            }
            SplitShape::Fan => {
                for &p in &parts {
                    wire(self, &mut change, p, p);
                }
            }
        }
        Ok(change)
    }

    /// Replaces `a` and `b` by one node `spec` that carries the union of their edges.
    /// The rule: `a` and `b` are distinct live nodes and **independent** (neither reaches
    /// the other, which is exactly when the merged node closes no cycle), and the merged node
    /// can run (`JoinNeverMet`: e.g. a `sequence` child and an `on_failure` child of one
    /// parent cannot merge under `join: all`). Unguarded edges that would duplicate one
    /// another (same other end, same kind) are kept once; guarded edges are all kept
    /// because their guards may differ.
    pub fn merge(&mut self, a: usize, b: usize, spec: NodeSpec) -> Result<Change, GraphError> {
        self.check_live(a)?;
        self.check_live(b)?;
        if a == b {
            return Err(GraphError::MergeSelf(a));
        }
        let m = self.nodes.len();
        self.check_fresh_id(&spec.id, m)?;
        let wiring = self.merged_wiring(a, b);
        let first_edge = self.edges.len();
        let incoming = wiring
            .iter()
            .filter(|w| w.incoming && w.copy.is_none())
            .count();
        let first = (incoming > 0).then_some(first_edge);
        check::node(m, &spec, incoming, first)?;
        let in_edges = wiring
            .iter()
            .filter(|w| w.incoming && w.copy.is_none())
            .map(|w| (w.other, self.edges[w.original].kind));
        check::runnable(&spec, in_edges)?;
        // Successors that lose a duplicate edge must still satisfy their n_of.
        let mut lost: Vec<usize> = wiring
            .iter()
            .filter(|w| !w.incoming && w.copy.is_some())
            .map(|w| w.other)
            .collect();
        lost.sort_unstable();
        for group in lost.chunk_by(|x, y| x == y) {
            let to = group[0];
            let left = self.incoming[to].len() - group.len();
            check::node(to, &self.nodes[to], left, None)?;
        }
        // Order: the merged node takes the later one's place; successors of the earlier one
        // ranked before that move after it (reaching the later one is a dependence).
        let (x, y) = if self.rank[a] < self.rank[b] {
            (a, b)
        } else {
            (b, a)
        };
        let bound = self.rank[y];
        let starts: Vec<usize> = self.outgoing[x]
            .iter()
            .map(|&e| self.edges[e].to)
            .filter(|&to| self.rank[to] <= bound)
            .collect();
        let fwd = self.forward_region(&starts, bound, y).map_err(|mut path| {
            path.insert(0, x);
            GraphError::MergeDependent { a, b, path }
        })?;
        let lower = starts.iter().map(|&n| self.rank[n]).min();
        let back = match lower {
            Some(lower) => {
                let preds: Vec<usize> = self.incoming[x]
                    .iter()
                    .chain(&self.incoming[y])
                    .map(|&e| self.edges[e].from)
                    .collect();
                self.backward_region(&preds, lower)
            }
            None => Vec::new(),
        };
        // Validated: apply.
        let mut change = Change::default();
        let slot = self.rank[y];
        let m = self.push_node(spec);
        change.added_nodes.push(m);
        let mut copies = Vec::with_capacity(wiring.len());
        for w in &wiring {
            let copy = match w.copy {
                Some(of) => copies[of],
                None if w.incoming => self.copy_edge(w.original, w.other, m, &mut change),
                None => self.copy_edge(w.original, m, w.other, &mut change),
            };
            if w.copy.is_some() {
                change.copied_edges.push((w.original, copy));
            }
            copies.push(copy);
        }
        self.retire(a, &mut change);
        self.retire(b, &mut change);
        self.reorder(back, Some(m), fwd, Some(slot), &mut change);
        Ok(change)
    }

    /// The merged node's edges: every edge of `a` then of `b`, incoming first, with an
    /// unguarded duplicate (same other end, same kind, same direction) pointing at the
    /// entry it repeats.
    fn merged_wiring(&self, a: usize, b: usize) -> Vec<Wire> {
        let mut wiring: Vec<Wire> = Vec::new();
        let mut push = |g: &WorkGraph, original: usize, incoming: bool| {
            let spec = g.edges[original];
            let other = if incoming { spec.from } else { spec.to };
            let copy = if spec.guarded {
                None
            } else {
                wiring.iter().position(|w| {
                    w.copy.is_none()
                        && w.incoming == incoming
                        && w.other == other
                        && !g.edges[w.original].guarded
                        && g.edges[w.original].kind == spec.kind
                })
            };
            wiring.push(Wire {
                original,
                other,
                incoming,
                copy,
            });
        };
        for &e in self.incoming[a].iter().chain(&self.incoming[b]) {
            push(self, e, true);
        }
        for &e in self.outgoing[a].iter().chain(&self.outgoing[b]) {
            push(self, e, false);
        }
        wiring
    }

    /// Adds a copy of `original` with new endpoints.
    fn copy_edge(&mut self, original: usize, from: usize, to: usize, change: &mut Change) -> usize {
        let EdgeSpec { kind, guarded, .. } = self.edges[original];
        let copy = self.push_edge(EdgeSpec {
            from,
            to,
            kind,
            guarded,
        });
        change.added_edges.push(copy);
        change.copied_edges.push((original, copy));
        copy
    }

    /// Retires a node and its edges: out of the order and out of its neighbours' lists.
    fn retire(&mut self, node: usize, change: &mut Change) {
        self.node_live[node] = false;
        change.retired_nodes.push(node);
        self.drop_label(node, change);
        for e in std::mem::take(&mut self.incoming[node]) {
            let from = self.edges[e].from;
            self.outgoing[from].retain(|&x| x != e);
            self.edge_live[e] = false;
            change.retired_edges.push(e);
        }
        for e in std::mem::take(&mut self.outgoing[node]) {
            let to = self.edges[e].to;
            self.incoming[to].retain(|&x| x != e);
            self.edge_live[e] = false;
            change.retired_edges.push(e);
        }
    }
}

/// One edge of a merged node: a copy of `original`, or (`copy`) a duplicate of the entry at
/// that position, which maps onto that entry's copy.
struct Wire {
    original: usize,
    other: usize,
    incoming: bool,
    copy: Option<usize>,
}
