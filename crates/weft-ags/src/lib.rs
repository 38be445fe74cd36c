//! weft-ags: everything weft knows about an AGS 1.0 document before it runs.
//!
//! The pipeline is `load` → `validate` → `levels` → `plan`, each a pure function over
//! in-memory data that returns findings as data (it never fails and never panics):
//!
//! - [`load`]: JSON (RFC 8259) and YAML 1.2 core text into an order-preserving
//!   [`serde_json::Value`], with limits against hostile input and source positions.
//! - [`digest`]: RFC 8785 canonical form and `graph_digest`.
//! - [`model`]: typed, lenient views over the parsed value (graph, scopes, nodes).
//! - [`edges`]: the effective edge set and topological order of one scope.
//! - [`validate`]: the three validation layers and every advisory.
//! - [`levels`]: which conformance level each construct needs.
//! - [`plan`]: the execution preview (order, parallel groups, critical path, worst case).
//!
//! Architecture invariant: this crate does no IO except [`load::read_file`], takes no time
//! from the clock and knows nothing of runs, stores or the network.
#![warn(clippy::disallowed_methods)]

pub mod diagnostic;
pub mod digest;
pub mod edges;
pub mod levels;
pub mod load;
pub mod model;
pub mod plan;
pub mod validate;

pub use diagnostic::{Code, Finding, Severity};
