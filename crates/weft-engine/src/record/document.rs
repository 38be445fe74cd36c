//! What the record reads of the run's document, taken from it before the node runs are
//! built, so that the document itself (as values, ~22 MB for a 10,000-node chain) is not
//! held while they are: it was the largest part of `weft run`'s peak memory, the record
//! being built at the end of the run (`docs/BENCHMARKS.md`, "Issue 12's targets").

use serde_json::{Map, Value};
use weft_ags::model::{obj_of, str_of};
use weft_core::WorkGraph;

use crate::EngineError;
use crate::adapter::adapt_root;
use weft_store::EventRecord;

/// The parts of a run's document its record reads.
pub(super) struct DocumentParts {
    /// The document's own members, its `nodes` and `edges` left out (`id`, `version`,
    /// `outputs`, `context`, `policy`…).
    pub(super) members: Map<String, Value>,
    /// The work graph of the root scope, as the run was planned.
    pub(super) graph: WorkGraph,
    /// Per node of [`DocumentParts::graph`] (same index), what its node run shows of its
    /// declaration.
    pub(super) nodes: Vec<Declared>,
    /// The node runs of fragment instances (`scope.rs`), built from the document's bodies.
    pub(super) scoped: Vec<Value>,
}

/// What a node run shows of its node's declaration.
pub(super) struct Declared {
    /// The node's `type`.
    pub(super) ty: Box<str>,
    /// Its `outputs` declarations, when it has any (a redacted output is left out of the
    /// record).
    pub(super) outputs: Option<Map<String, Value>>,
}

impl DocumentParts {
    /// The parts of `root`, the document of a run whose log holds `scoped_records` (its
    /// fragment instances' records).
    pub(super) fn of(
        root: &Map<String, Value>,
        scoped_records: &[EventRecord],
    ) -> Result<Self, EngineError> {
        let graph = adapt_root(root)?.graph;
        let specs = obj_of(root, "nodes");
        let nodes = (0..graph.node_count())
            .map(|i| {
                let spec = specs.and_then(|n| obj_of(n, &graph.node(i).id));
                Declared {
                    ty: spec
                        .and_then(|s| str_of(s, "type"))
                        .unwrap_or("task")
                        .into(),
                    outputs: spec.and_then(|s| obj_of(s, "outputs")).cloned(),
                }
            })
            .collect();
        Ok(DocumentParts {
            members: crate::run_log::kept_document_of(root),
            graph,
            nodes,
            scoped: super::scope::scoped_nodes(root, scoped_records)?,
        })
    }
}
