//! One handler per event (except `Mutate`, in `mutation.rs`). Each validates everything
//! it needs first and writes only after, so a `ProtocolError` leaves the scheduler as it was.

use super::{Action, Outcome, ProtocolError, Scheduler, SkipReason};
use crate::graph::EdgeKind;
use crate::state::{FailurePolicy, NodeState, Resolution};

impl Scheduler {
    pub(super) fn begin(&mut self, out: &mut Vec<Action>) -> Result<(), ProtocolError> {
        if self.begun {
            return Err(ProtocolError::AlreadyBegun);
        }
        self.begun = true;
        let order: Vec<usize> = self.graph.order().collect();
        for n in order {
            if self.graph.node(n).entry && self.states[n] == NodeState::Pending {
                self.make_ready(n, out);
            }
        }
        Ok(())
    }

    pub(super) fn when_resolved(
        &mut self,
        node: usize,
        value: bool,
        out: &mut Vec<Action>,
    ) -> Result<(), ProtocolError> {
        let node = self.live(node)?;
        if !self.when_pending[node] {
            return Err(ProtocolError::NoWhenPending { node });
        }
        self.when_pending[node] = false;
        if value {
            self.startable.insert((self.graph.rank(node), node));
        } else {
            self.skip(node, SkipReason::WhenFalse, out);
            self.drain(out);
        }
        Ok(())
    }

    pub(super) fn settled(
        &mut self,
        node: usize,
        outcome: Outcome,
        guards: &[(usize, bool)],
        out: &mut Vec<Action>,
    ) -> Result<(), ProtocolError> {
        let node = self.live(node)?;
        self.expect_state(
            node,
            self.states[node].is_started(),
            "running or awaiting_human",
        )?;
        self.check_guards(node, outcome, guards)?;
        // Validated: from here on nothing fails.
        if self.states[node] == NodeState::AwaitingHuman {
            self.awaiting -= 1;
        } else {
            self.running -= 1;
        }
        self.states[node] = outcome.state();
        if let Some(g) = self.graph.group_of(node) {
            self.group_busy[g as usize] = false;
        }
        for &(e, v) in guards {
            self.guard[e] = Some(v);
        }
        let mut halt = false;
        if matches!(outcome, Outcome::Failed | Outcome::Blocked) {
            let absorbed = self.graph.outgoing(node).iter().any(|&e| {
                self.graph.edge(e).kind == EdgeKind::OnFailure
                    && self.edge_activation(e) == Resolution::Active
            });
            if !absorbed {
                self.unabsorbed.push(node);
                halt = self.options.on_node_failure == FailurePolicy::Halt && !self.halted;
            }
        }
        self.queue.push_back(node);
        self.drain(out);
        if halt {
            self.halt(out);
        }
        Ok(())
    }

    /// Every guard value names a guarded outgoing edge of `node`, once; every guarded edge
    /// the outcome needs has a value.
    fn check_guards(
        &self,
        node: usize,
        outcome: Outcome,
        guards: &[(usize, bool)],
    ) -> Result<(), ProtocolError> {
        for &(edge, _) in guards {
            let ok = self.graph.is_edge_live(edge)
                && self.graph.edge(edge).from == node
                && self.graph.edge(edge).guarded;
            if !ok {
                return Err(ProtocolError::UnexpectedGuard { node, edge });
            }
        }
        // Sorted ids keep this O((k + out-degree) log k) for nodes with many guarded edges.
        let mut ids: Vec<usize> = guards.iter().map(|&(e, _)| e).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(ProtocolError::DuplicateGuard { edge: w[0] });
        }
        for &edge in self.graph.outgoing(node) {
            let spec = self.graph.edge(edge);
            let needed = spec.guarded
                && match spec.kind {
                    EdgeKind::Conditional => outcome == Outcome::Succeeded,
                    EdgeKind::OnFailure => matches!(outcome, Outcome::Failed | Outcome::Blocked),
                    EdgeKind::Sequence => false,
                };
            if needed && ids.binary_search(&edge).is_err() {
                return Err(ProtocolError::MissingGuard { node, edge });
            }
        }
        Ok(())
    }

    pub(super) fn human(
        &mut self,
        node: usize,
        from: NodeState,
        to: NodeState,
    ) -> Result<(), ProtocolError> {
        let node = self.live(node)?;
        let expected = if from == NodeState::Running {
            "running"
        } else {
            "awaiting_human"
        };
        self.expect_state(node, self.states[node] == from, expected)?;
        self.states[node] = to;
        // A wait on a person frees the node's slot; the answer takes one again (the
        // node resumes at once, even when that briefly exceeds `max_parallel`).
        if to == NodeState::AwaitingHuman {
            self.running -= 1;
            self.awaiting += 1;
        } else {
            self.awaiting -= 1;
            self.running += 1;
        }
        Ok(())
    }

    pub(super) fn cancel(&mut self, out: &mut Vec<Action>) {
        if self.cancelled {
            return; // idempotent: a second operator stop changes nothing
        }
        self.cancelled = true;
        let order: Vec<usize> = self.graph.order().collect();
        for n in order {
            if matches!(self.states[n], NodeState::Pending | NodeState::Ready) {
                self.leave_ready(n);
                self.states[n] = NodeState::Cancelled;
                self.queue.push_back(n);
            }
        }
        self.drain(out);
    }
}
