//! Scope instances: addresses ([`ScopePath`], [`NodeAddr`]: `fix_loop[2].run_tests`) and the
//! [`ScopeTree`] that holds one [`crate::Scheduler`] per instance (the root scope, and each
//! loop iteration, map item and subgraph instance opened under a running container node).

mod path;
mod tree;

pub use path::{NodeAddr, PathError, ScopePath, Step};
pub use tree::{ScopeId, ScopeTree, ScopedAction, TreeError};
