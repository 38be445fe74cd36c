//! Node states, edge resolutions, and the two tables that connect them: edge activation
//! (AGS §17.4, DIGEST §6.3) and join readiness (§6.4). Pure functions, tested row by row.

use crate::graph::{EdgeKind, Join};
use serde::{Deserialize, Serialize};

/// The state of one node in one scope instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NodeState {
    Pending,
    /// Join met. If the node has a `when`, it waits for `WhenResolved` before it can start.
    Ready,
    Running,
    /// Running, paused on a human; keeps its group, not its capacity slot.
    AwaitingHuman,
    Succeeded,
    Failed,
    Skipped,
    Cancelled,
    /// A requirement was unavailable; counts as failed for edge resolution.
    Blocked,
}

impl NodeState {
    /// Succeeded, failed, skipped, cancelled or blocked.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            NodeState::Succeeded
                | NodeState::Failed
                | NodeState::Skipped
                | NodeState::Cancelled
                | NodeState::Blocked
        )
    }

    /// Running or awaiting a human: the node has started and not ended.
    pub fn is_started(self) -> bool {
        matches!(self, NodeState::Running | NodeState::AwaitingHuman)
    }
}

/// What happens to a node whose upstream failed (`policy.on_node_failure`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FailurePolicy {
    /// After an unabsorbed failure, start nothing new and skip what has not started.
    Halt,
    /// Normal skip propagation: only what depends on the failure is skipped.
    Isolate,
    /// A sequence edge from a failed or blocked node counts as active (weft's reading of
    /// "its join could otherwise be met").
    Continue,
}

/// The resolution of one edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Resolution {
    /// The source is not terminal yet.
    Unresolved,
    Active,
    Inactive,
}

/// Resolves an edge from its kind, its source's state and its guard value (`None` when the
/// edge is unguarded or its guard was not needed). The activation table:
///
/// | source              | sequence | conditional      | on_failure               |
/// |---------------------|----------|------------------|--------------------------|
/// | succeeded           | active   | active iff guard | inactive                 |
/// | failed / blocked    | inactive (active under `Continue`) | inactive | active iff no guard or guard |
/// | skipped / cancelled | inactive | inactive         | inactive                 |
pub fn activation(
    kind: EdgeKind,
    source: NodeState,
    guard: Option<bool>,
    policy: FailurePolicy,
) -> Resolution {
    use NodeState as S;
    if !source.is_terminal() {
        return Resolution::Unresolved;
    }
    let failed = matches!(source, S::Failed | S::Blocked);
    let active = match kind {
        EdgeKind::Sequence => {
            source == S::Succeeded || (failed && policy == FailurePolicy::Continue)
        }
        EdgeKind::Conditional => source == S::Succeeded && guard == Some(true),
        EdgeKind::OnFailure => failed && guard != Some(false),
    };
    if active {
        Resolution::Active
    } else {
        Resolution::Inactive
    }
}

/// Where a node's join stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum JoinStatus {
    /// More edges must resolve before anything is decided.
    Waiting,
    /// The node can become ready.
    Met,
    /// The join can no longer be met: the node is skipped.
    Unsatisfiable,
}

/// The readiness table, from counts of incoming edges (`total` ≥ 1): `all` needs every edge
/// active; `any` fires on the first active edge; `n_of(n)` needs n active and gives up once
/// active + unresolved < n.
pub fn join_status(join: Join, total: usize, active: usize, inactive: usize) -> JoinStatus {
    let unresolved = total.saturating_sub(active + inactive);
    let (met, dead) = match join {
        Join::All => (active == total, inactive > 0),
        Join::Any => (active >= 1, inactive == total),
        Join::NOf(n) => (active >= n as usize, active + unresolved < n as usize),
    };
    // `met` and `dead` exclude each other for every join (total ≥ 1).
    if met {
        JoinStatus::Met
    } else if dead {
        JoinStatus::Unsatisfiable
    } else {
        JoinStatus::Waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EdgeKind::*;
    use FailurePolicy::*;
    use NodeState::*;
    use Resolution::*;

    #[test]
    fn activation_table_row_by_row() {
        // (kind, source, guard, policy, expected)
        let rows = [
            (Sequence, Succeeded, None, Isolate, Active),
            (Conditional, Succeeded, Some(true), Isolate, Active),
            (Conditional, Succeeded, Some(false), Isolate, Inactive),
            (OnFailure, Succeeded, None, Isolate, Inactive),
            (OnFailure, Succeeded, Some(true), Isolate, Inactive),
            (Sequence, Failed, None, Isolate, Inactive),
            (Sequence, Blocked, None, Halt, Inactive),
            (Sequence, Failed, None, Continue, Active),
            (Sequence, Blocked, None, Continue, Active),
            (Conditional, Failed, Some(true), Continue, Inactive),
            (OnFailure, Failed, None, Isolate, Active),
            (OnFailure, Blocked, None, Isolate, Active),
            (OnFailure, Failed, Some(true), Isolate, Active),
            (OnFailure, Failed, Some(false), Isolate, Inactive),
            (Sequence, Skipped, None, Continue, Inactive),
            (Conditional, Skipped, Some(true), Isolate, Inactive),
            (OnFailure, Skipped, None, Isolate, Inactive),
            (Sequence, Cancelled, None, Continue, Inactive),
            (OnFailure, Cancelled, None, Isolate, Inactive),
            (Sequence, Pending, None, Isolate, Unresolved),
            (Sequence, Running, None, Isolate, Unresolved),
            (OnFailure, AwaitingHuman, None, Isolate, Unresolved),
            (Conditional, Ready, Some(true), Isolate, Unresolved),
        ];
        for (kind, source, guard, policy, expected) in rows {
            assert_eq!(
                activation(kind, source, guard, policy),
                expected,
                "{kind:?} from {source:?} guard {guard:?} under {policy:?}"
            );
        }
    }

    #[test]
    fn join_table_row_by_row() {
        use JoinStatus::*;
        // (join, total, active, inactive, expected)
        let rows = [
            (Join::All, 2, 0, 0, Waiting),
            (Join::All, 2, 1, 0, Waiting),
            (Join::All, 2, 2, 0, Met),
            (Join::All, 2, 1, 1, Unsatisfiable),
            (Join::All, 2, 0, 1, Unsatisfiable),
            (Join::Any, 3, 0, 0, Waiting),
            (Join::Any, 3, 1, 0, Met),
            (Join::Any, 3, 0, 2, Waiting),
            (Join::Any, 3, 1, 2, Met),
            (Join::Any, 3, 0, 3, Unsatisfiable),
            (Join::NOf(2), 3, 1, 0, Waiting),
            (Join::NOf(2), 3, 2, 0, Met),
            (Join::NOf(2), 3, 1, 1, Waiting),
            (Join::NOf(2), 3, 0, 2, Unsatisfiable),
            (Join::NOf(2), 3, 2, 1, Met),
            (Join::NOf(3), 3, 2, 1, Unsatisfiable),
        ];
        for (join, total, active, inactive, expected) in rows {
            assert_eq!(
                join_status(join, total, active, inactive),
                expected,
                "{join:?} total {total} active {active} inactive {inactive}"
            );
        }
    }

    #[test]
    fn terminal_states() {
        let terminal = [Succeeded, Failed, Skipped, Cancelled, Blocked];
        for s in [Pending, Ready, Running, AwaitingHuman] {
            assert!(!s.is_terminal());
        }
        for s in terminal {
            assert!(s.is_terminal());
        }
    }
}
