//! Graph mutations during a run: the run-state preconditions, then the graph primitive
//! (`graph::mutate`), then the state of the new nodes and edges.
//!
//! Preconditions (checked before anything changes):
//! - the scope is neither finished, halted nor cancelled (`Closed`): a scope that is
//!   winding down takes no new work (an idle scope that should take more is held open by
//!   `Event::Hold`);
//! - a node that is split, merged or cancelled has not started: Pending, or Ready (for split
//!   and merge only without an outstanding `when`, whose answer would have no node to go to);
//! - an edge is only added into a Pending node (a Ready node's join is already met);
//! - a guarded new edge needs a source that has not settled, because guards are evaluated
//!   when the source settles.

use super::{Action, Mutation, ProtocolError, Scheduler};
use crate::graph::{Change, EdgeSpec, GraphError, WorkGraph};
use crate::state::{NodeState, Resolution};
use std::collections::BTreeSet;

impl Scheduler {
    pub(super) fn mutate(
        &mut self,
        m: &Mutation,
        out: &mut Vec<Action>,
    ) -> Result<(), ProtocolError> {
        if self.halted || self.cancelled {
            return Err(ProtocolError::Closed);
        }
        // Run-state preconditions first, then the graph primitive, which validates
        // everything before it writes: a refusal at either step changes nothing.
        let change = match m {
            Mutation::CancelNode { node } => {
                let node = self.live(*node)?;
                let ok = matches!(self.states[node], NodeState::Pending | NodeState::Ready);
                self.expect_state(node, ok, "pending or ready")?;
                self.cancel_node(node, out);
                return Ok(());
            }
            Mutation::AddNode { spec, incoming } => {
                for e in incoming {
                    self.check_guard_source(e.from, e.guarded)?;
                }
                self.edit(|g| g.add_node(spec.clone(), incoming))?
            }
            Mutation::AddEdge {
                from,
                to,
                kind,
                guarded,
            } => {
                let to = self.live(*to)?;
                self.expect_state(to, self.states[to] == NodeState::Pending, "pending")?;
                self.check_guard_source(*from, *guarded)?;
                let spec = EdgeSpec {
                    from: *from,
                    to,
                    kind: *kind,
                    guarded: *guarded,
                };
                self.edit(|g| g.add_edge(spec))?
            }
            Mutation::Split { node, parts, shape } => {
                self.check_replaceable(*node)?;
                self.edit(|g| g.split(*node, parts.clone(), *shape))?
            }
            Mutation::Merge { a, b, spec } => {
                self.check_replaceable(*a)?;
                self.check_replaceable(*b)?;
                self.edit(|g| g.merge(*a, *b, spec.clone()))?
            }
            Mutation::Plan(plan) => {
                for edge in plan.nodes.iter().flat_map(|n| &n.after) {
                    if let Some(from) = self.graph.find(&edge.from) {
                        self.check_guard_source(from, edge.guarded)?;
                    }
                }
                self.edit(|g| g.add_plan(plan.clone()))?
            }
        };
        self.install(&change, out);
        Ok(())
    }

    /// Runs a graph primitive in place (it changes nothing when it fails).
    fn edit(
        &mut self,
        f: impl FnOnce(&mut WorkGraph) -> Result<Change, GraphError>,
    ) -> Result<Change, ProtocolError> {
        Ok(f(&mut self.graph)?)
    }

    fn check_guard_source(&self, from: usize, guarded: bool) -> Result<(), ProtocolError> {
        // An unknown or retired source is left to the graph's own validation.
        if guarded && self.graph.is_live(from) && self.states[from].is_terminal() {
            return Err(ProtocolError::GuardUnavailable { from });
        }
        Ok(())
    }

    fn check_replaceable(&self, node: usize) -> Result<(), ProtocolError> {
        let node = self.live(node)?;
        let ok = self.states[node] == NodeState::Pending
            || (self.states[node] == NodeState::Ready && !self.when_pending[node]);
        self.expect_state(node, ok, "pending, or ready with no `when` outstanding")
    }

    /// Brings the run state up to date with a mutated graph: O(size of the change).
    fn install(&mut self, change: &Change, out: &mut Vec<Action>) {
        let (n, e) = (self.graph.node_count(), self.graph.edge_count());
        self.states.resize(n, NodeState::Pending);
        self.when_pending.resize(n, false);
        self.active_in.resize(n, 0);
        self.inactive_in.resize(n, 0);
        self.resolution.resize(e, Resolution::Unresolved);
        self.guard.resize(e, None);
        self.group_busy.resize(self.graph.group_count(), false);
        // Re-key the ready set where ranks changed (retired nodes leave it).
        if change.relabeled_all {
            let startable = std::mem::take(&mut self.startable);
            self.startable = startable
                .into_iter()
                .filter(|&(_, n)| self.graph.is_live(n))
                .map(|(_, n)| (self.graph.rank(n), n))
                .collect();
        } else {
            for &(node, old) in &change.reranked {
                if self.startable.remove(&(old, node)) && self.graph.is_live(node) {
                    self.startable.insert((self.graph.rank(node), node));
                }
            }
        }
        for &node in &change.retired_nodes {
            if self.states[node] == NodeState::Ready {
                self.ready_count -= 1;
                self.when_pending[node] = false;
            }
            self.states[node] = NodeState::Cancelled;
            self.retired.push(node);
        }
        // Copies inherit what their originals knew (a merge may map two originals with the
        // same resolution to one copy: the first one counts).
        for &(original, copy) in &change.copied_edges {
            self.guard[copy] = self.guard[original];
            let r = self.resolution[original];
            if self.resolution[copy] == Resolution::Unresolved && r != Resolution::Unresolved {
                self.resolution[copy] = r;
                let to = self.graph.edge(copy).to;
                match r {
                    Resolution::Active => self.active_in[to] += 1,
                    _ => self.inactive_in[to] += 1,
                }
            }
        }
        // New edges from nodes that have already settled resolve now.
        for &edge in &change.added_edges {
            let r = self.edge_activation(edge);
            self.record(edge, r);
        }
        let mut touched: BTreeSet<(u64, usize)> = BTreeSet::new();
        for &node in &change.added_nodes {
            touched.insert((self.graph.rank(node), node));
            for &edge in self.graph.outgoing(node) {
                let to = self.graph.edge(edge).to;
                touched.insert((self.graph.rank(to), to));
            }
        }
        for &edge in &change.added_edges {
            let to = self.graph.edge(edge).to;
            touched.insert((self.graph.rank(to), to));
        }
        // In rank order, so the actions of one mutation come out in the tie-break order.
        for (_, node) in touched {
            if self.graph.node(node).entry {
                if self.begun && self.states[node] == NodeState::Pending {
                    self.make_ready(node, out);
                }
            } else {
                self.evaluate(node, out);
            }
        }
        self.drain(out);
    }

    /// Cancels `node` and every not-started descendant whose predecessors are all cancelled
    /// (reachable only through cancelled nodes); the rest of the graph sees their edges go
    /// inactive and follows the normal join rules.
    fn cancel_node(&mut self, node: usize, out: &mut Vec<Action>) {
        let mut frontier: BTreeSet<(u64, usize)> = BTreeSet::new();
        frontier.insert((self.graph.rank(node), node));
        // Rank order: every predecessor inside the cone is decided before its successors.
        while let Some((_, n)) = frontier.pop_first() {
            let unstarted = matches!(self.states[n], NodeState::Pending | NodeState::Ready);
            let only_through_cancelled = n == node
                || self
                    .graph
                    .incoming(n)
                    .iter()
                    .all(|&e| self.states[self.graph.edge(e).from] == NodeState::Cancelled);
            if !(unstarted && only_through_cancelled) {
                continue;
            }
            self.leave_ready(n);
            self.states[n] = NodeState::Cancelled;
            self.queue.push_back(n);
            for &e in self.graph.outgoing(n) {
                let to = self.graph.edge(e).to;
                frontier.insert((self.graph.rank(to), to));
            }
        }
        self.drain(out);
    }
}
