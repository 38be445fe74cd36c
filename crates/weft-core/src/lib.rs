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
//!   results back as events; replaying the recorded events rebuilds the same state. Graph
//!   mutations during a run are events too ([`Event::Mutate`]), so they replay in place.
//! - [`scope`]: the addresses of scope instances (`fix_loop[2].run_tests`: root, loop
//!   iteration, map item, subgraph). The instances themselves are the engine's: one
//!   scheduler per instance, each driven by a driver of its own.
//! - [`failure`]: [`FailureClass`], why an attempt failed (the AGS classes, spelled as AGS
//!   spells them), and [`RetryOn`], the classes a node retries: the one classification the
//!   agents, the tools, MCP and the engine's failure ladder share.
//!
//! ```
//! use weft_core::{Action, EdgeKind, EdgeSpec, Event, GraphBuilder, NodeSpec, Options, Outcome, Scheduler};
//!
//! let mut b = GraphBuilder::new();
//! let plan = b.node(NodeSpec::new("plan").entry());
//! let build = b.node(NodeSpec::new("build"));
//! b.edge(EdgeSpec::new(plan, build, EdgeKind::Sequence));
//! let mut s = Scheduler::new(b.build()?, Options::default());
//!
//! assert_eq!(s.apply(&Event::Begin)?, [Action::Start { node: plan }]);
//! let done = Event::Settled { node: plan, outcome: Outcome::Succeeded, guards: vec![] };
//! assert_eq!(s.apply(&done)?, [Action::Start { node: build }]);
//! let done = Event::Settled { node: build, outcome: Outcome::Succeeded, guards: vec![] };
//! assert!(matches!(s.apply(&done)?.as_slice(), [Action::Finished { .. }]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The crate is general: it knows nothing of AGS documents (an adapter in the engine
//! translates an AGS scope into a [`WorkGraph`]), so the org runtime can drive it too.
//! Semantics and decided gaps: `docs/scheduler.md`.
//!
//! Architecture invariant: no IO, no clock, no randomness, no async runtime; every output is
//! a function of the graph, the options and the events alone (no hash-map iteration order
//! leaks out). Enforced by clippy `disallowed-methods`, opted in here.
#![warn(
    clippy::disallowed_methods,
    reason = "the scheduler is replayed from its event log: no clock, environment or IO"
)]

pub mod failure;
pub mod graph;
pub mod scheduler;
pub mod scope;
pub mod state;

pub use failure::{FailureClass, RetryOn, UnknownFailureClass, UnknownRetryOn};
pub use graph::{
    Change, EdgeKind, EdgeSpec, GraphBuilder, GraphError, Join, NewEdge, NodeSpec, Plan, PlanEdge,
    PlanError, PlanNode, SplitShape, Unresolved, WorkGraph,
};
pub use scheduler::{
    Action, EdgeTaken, Event, Mutation, Options, Outcome, ProtocolError, Scheduler, ScopeSummary,
    SkipReason, StateCounts,
};
pub use scope::{NodeAddr, PathError, ScopePath, Step};
pub use state::{FailurePolicy, JoinStatus, NodeState, Resolution};
