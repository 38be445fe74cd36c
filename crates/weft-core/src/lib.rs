//! weft-core: the work graph and the pure scheduler of one scope instance.
//!
//! - [`graph`]: [`WorkGraph`], a validated DAG of nodes and typed edges with a precomputed
//!   rank (Kahn's order, ties by declaration index: the normative tie-break), built through
//!   [`GraphBuilder`] and changed only through mutation primitives that keep every invariant
//!   or fail without change.
//! - [`state`]: node states, edge resolutions, the edge-activation table and join evaluation,
//!   as small pure functions.
//! - [`scheduler`]: [`Scheduler`], a transducer: `apply(&mut self, &Event) -> Vec<Action>`.
//!   The async shell (weft-engine, the org runtime) carries the actions out and feeds their
//!   results back as events; replaying the recorded events rebuilds the same state.
//!
//! The crate is general: it knows nothing of AGS documents (an adapter in the engine
//! translates an AGS scope into a [`WorkGraph`]), so the org runtime can drive it too.
//! Semantics and decided gaps: `docs/scheduler.md`.
//!
//! Architecture invariant: no IO, no clock, no randomness, no async runtime; every output is
//! a function of the graph, the options and the events alone (no hash-map iteration order
//! leaks out). Enforced by clippy `disallowed-methods`, opted in here.
#![warn(clippy::disallowed_methods)]

pub mod graph;
pub mod scheduler;
pub mod state;

pub use graph::{Change, EdgeKind, EdgeSpec, GraphBuilder, GraphError, Join, NewEdge, NodeSpec, SplitShape, WorkGraph};
pub use scheduler::{
    Action, EdgeTaken, Event, Mutation, Options, Outcome, ProtocolError, Scheduler, ScopeSummary,
    SkipReason, StateCounts,
};
pub use state::{FailurePolicy, JoinStatus, NodeState, Resolution};
