//! How state flows through the graph: edge resolution, join evaluation, readiness, skip
//! propagation, starting nodes, the halt sweep and the end of the scope.
//!
//! Propagation uses an explicit queue of newly terminal nodes rather than recursion, so a
//! 10k-node chain of skips cannot overflow the stack.

use super::{Action, EdgeTaken, Scheduler, SkipReason};
use crate::state::{JoinStatus, NodeState, Resolution, activation, join_status};

impl Scheduler {
    /// The resolution an edge gets from its source's current state and recorded guard.
    pub(super) fn edge_activation(&self, e: usize) -> Resolution {
        let spec = self.graph.edge(e);
        let guard = if spec.guarded { self.guard[e] } else { None };
        activation(
            spec.kind,
            self.states[spec.from],
            guard,
            self.options.on_node_failure,
        )
    }

    /// Resolves the outgoing edges of every queued terminal node, which may skip (and so
    /// queue) more nodes.
    pub(super) fn drain(&mut self, out: &mut Vec<Action>) {
        while let Some(n) = self.queue.pop_front() {
            for i in 0..self.graph.outgoing(n).len() {
                let e = self.graph.outgoing(n)[i];
                let r = self.edge_activation(e);
                if self.record(e, r) {
                    self.evaluate(self.graph.edge(e).to, out);
                }
            }
        }
    }

    /// Records an edge's resolution and updates its target's counters; true if it changed.
    /// Does not evaluate the target, so a mutation can record several edges first.
    pub(super) fn record(&mut self, e: usize, r: Resolution) -> bool {
        if self.resolution[e] != Resolution::Unresolved || r == Resolution::Unresolved {
            return false;
        }
        self.resolution[e] = r;
        let spec = *self.graph.edge(e);
        if r == Resolution::Active {
            self.active_in[spec.to] += 1;
            let guard = if spec.guarded { self.guard[e] } else { None };
            self.edges_taken.push(EdgeTaken {
                edge: e,
                from: spec.from,
                to: spec.to,
                kind: spec.kind,
                guard,
            });
        } else {
            self.inactive_in[spec.to] += 1;
        }
        true
    }

    /// Re-examines a pending node's join. A node that has started (or finished) is never
    /// re-triggered: edges that resolve later are only recorded.
    pub(super) fn evaluate(&mut self, n: usize, out: &mut Vec<Action>) {
        if self.states[n] != NodeState::Pending {
            return;
        }
        let total = self.graph.incoming(n).len();
        if total == 0 {
            return; // entry nodes start through Begin; others are unreachable (end of scope)
        }
        let (active, inactive) = (self.active_in[n] as usize, self.inactive_in[n] as usize);
        match join_status(self.graph.node(n).join, total, active, inactive) {
            JoinStatus::Met => self.make_ready(n, out),
            JoinStatus::Unsatisfiable => self.skip(n, SkipReason::JoinUnsatisfiable, out),
            JoinStatus::Waiting => {}
        }
    }

    /// Pending → Ready; a node with a `when` first asks the shell for its value.
    pub(super) fn make_ready(&mut self, n: usize, out: &mut Vec<Action>) {
        self.states[n] = NodeState::Ready;
        self.ready_count += 1;
        if self.graph.node(n).has_when {
            self.when_pending[n] = true;
            out.push(Action::EvaluateWhen { node: n });
        } else {
            self.startable.insert((self.graph.rank(n), n));
        }
    }

    /// Takes a Ready node out of the ready bookkeeping (no-op for other states).
    pub(super) fn leave_ready(&mut self, n: usize) {
        if self.states[n] == NodeState::Ready {
            self.ready_count -= 1;
            self.when_pending[n] = false;
            self.startable.remove(&(self.graph.rank(n), n));
        }
    }

    /// A node that never started becomes Skipped; its outgoing edges resolve in `drain`.
    pub(super) fn skip(&mut self, n: usize, reason: SkipReason, out: &mut Vec<Action>) {
        self.leave_ready(n);
        self.states[n] = NodeState::Skipped;
        out.push(Action::Skipped { node: n, reason });
        self.queue.push_back(n);
    }

    /// Starts ready nodes in rank order while capacity allows and their group is free.
    pub(super) fn pump(&mut self, out: &mut Vec<Action>) {
        let max = self.options.max_parallel;
        if self.halted || self.cancelled || self.running >= max || self.startable.is_empty() {
            return;
        }
        let mut starts = Vec::new();
        for &(_, n) in &self.startable {
            if self.running + starts.len() >= max {
                break;
            }
            if let Some(g) = self.graph.group_of(n) {
                if self.group_busy[g as usize] {
                    continue;
                }
                self.group_busy[g as usize] = true;
            }
            starts.push(n);
        }
        for n in starts {
            self.leave_ready(n);
            self.states[n] = NodeState::Running;
            self.running += 1;
            self.started.push(n);
            out.push(Action::Start { node: n });
        }
    }

    /// `on_node_failure: halt`: skip everything that has not started; running nodes finish.
    pub(super) fn halt(&mut self, out: &mut Vec<Action>) {
        self.halted = true;
        let order: Vec<usize> = self.graph.order().collect();
        for n in order {
            if matches!(self.states[n], NodeState::Pending | NodeState::Ready) {
                self.skip(n, SkipReason::Halted, out);
            }
        }
        self.drain(out);
    }

    /// Emits `Finished` once nothing is ready or running. Nodes still pending then can never
    /// become ready: each one's unresolved edges lead back to a node with no incoming edges
    /// that is not an entry node, so they are skipped as unreachable first.
    pub(super) fn check_finished(&mut self, out: &mut Vec<Action>) {
        if self.finished || !(self.begun || self.cancelled) {
            return;
        }
        if self.ready_count > 0 || self.running > 0 || self.awaiting > 0 {
            return;
        }
        // Held open (`Event::Hold`): idle is not the end while work may still be added,
        // unless the scope is winding down (halted or cancelled takes no new work).
        if self.held && !(self.halted || self.cancelled) {
            return;
        }
        let order: Vec<usize> = self.graph.order().collect();
        for n in order {
            if self.states[n] == NodeState::Pending {
                self.skip(n, SkipReason::Unreachable, out);
                // Skipped sources only deactivate edges, so this readies nothing.
                self.drain(out);
            }
        }
        self.finished = true;
        out.push(Action::Finished {
            summary: self.summary(),
        });
    }
}
