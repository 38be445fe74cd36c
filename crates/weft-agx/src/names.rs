//! The names in scope (DIGEST §2.5): the one list of fields each root exposes, read by the
//! validator (what an expression may name) and by the engine (what a run resolves), so a
//! document the validator accepts never meets an "unknown name" at run time.

/// `graph.<field>`: the spec's four, plus `description`, which the reference validator and
/// the docs also allow.
pub const GRAPH_FIELDS: &[&str] = &["id", "title", "objective", "version", "description"];

/// `self.<field>` (and `nodes.self.<field>`) inside a node: `attempt` is 1-based;
/// `inputs.<name>` and `outputs.<name>` are the node's own.
pub const SELF_FIELDS: &[&str] = &["id", "attempt", "inputs", "outputs"];

/// `nodes.<id>.<field>` for a node of the same scope.
pub const NODE_FIELDS: &[&str] = &[
    "status",
    "outputs",
    "attempts",
    "duration_seconds",
    "decision",
];

/// `loop.<field>` inside a loop body (`previous.<collected name>`).
pub const LOOP_FIELDS: &[&str] = &["index", "iteration", "previous"];

/// Roots an expression resolves first; a binding with one of these names could never be
/// read (Appendix B). `secrets` is readable nowhere (AG205), `item` is reserved.
pub const RESERVED_ROOTS: &[&str] = &[
    "graph",
    "params",
    "context",
    "attachments",
    "nodes",
    "self",
    "loop",
    "outputs",
    "env",
    "secrets",
    "item",
];
