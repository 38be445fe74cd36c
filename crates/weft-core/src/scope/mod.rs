//! Scope addresses ([`ScopePath`], [`NodeAddr`]: `fix_loop[2].run_tests`): the root scope,
//! and each loop iteration, map item and subgraph instance opened under a container node.
//!
//! There is one model of scope instances, the engine's: one driver with its own
//! [`crate::Scheduler`] per instance, writing to the run's one log (`weft-engine`,
//! `run/scope.rs`), which keeps a container running until its instances finish by
//! construction. (A second model, a `ScopeTree` of schedulers here, was never used and is
//! gone.)

mod path;

pub use path::{NodeAddr, PathError, ScopePath, Step};
