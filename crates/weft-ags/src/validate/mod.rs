//! The validator: all three layers of SPEC §18 plus every advisory, in one pass.
//!
//! Layer 1 ([`schema`]) checks the shape, [`shape`] and [`refs`] the references between
//! parts (layer 2), [`dataflow`] every expression and template (layer 3), then
//! [`advisories`] (AG9xx) and [`authoring`] (weft's WF9xx). Unlike the reference validator,
//! later layers run even when layer 1 failed: the model is lenient, so every problem of a
//! document is reported at once. Validation never fails and never panics; its result is
//! data.

mod advisories;
mod authoring;
mod dataflow;
mod refs;
pub mod schema;
mod shape;
mod suggest;

use crate::diagnostic::Finding;
use crate::edges::EdgeSet;
use crate::load::{Document, locate};
use crate::model::{self, Fields, NodeType, Object, Scope, ScopeKind, entries_of, obj_of, str_of};
use serde_json::Value;
use std::collections::HashMap;

pub use schema::GRAPH_SCHEMA;

/// Validates a parsed document. Findings carry pointers but no positions.
///
/// A large document's layer 1 (the schema) is checked on a second thread while this one
/// runs the other layers: they read the same value and share nothing else, and their
/// findings are joined in the same order as one after the other, so the result does not
/// depend on it (`docs/BENCHMARKS.md`, "Hostile shapes").
pub fn validate(root: &Value) -> Vec<Finding> {
    validate_with(root, Advice::Given)
}

/// [`validate`] without the advisories (AG9xx, warnings) and the authoring advice (WF9xx,
/// info), which are never errors: the three layers of SPEC §18 and what they find. For a
/// caller that acts on errors only (a live run's new nodes, `weft_engine::mutation`);
/// its errors are [`validate`]'s (tested on every case of the code table).
pub fn validate_layers(root: &Value) -> Vec<Finding> {
    validate_with(root, Advice::Left)
}

/// Whether a validation runs the advisory passes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Advice {
    Given,
    Left,
}

fn validate_with(root: &Value, advice: Advice) -> Vec<Finding> {
    let large = root
        .get("nodes")
        .and_then(Value::as_object)
        .is_some_and(|nodes| nodes.len() >= PARALLEL_FROM_NODES);
    if !large {
        let mut out = layer_one(root);
        semantic(root, advice, &mut out);
        return out;
    }
    std::thread::scope(|scope| {
        let schema = std::thread::Builder::new()
            .name("weft-schema".into())
            .spawn_scoped(scope, || layer_one(root));
        let mut rest = Vec::new();
        semantic(root, advice, &mut rest);
        let mut out = match schema {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // No thread to be had: the schema on this one.
            Err(_) => layer_one(root),
        };
        out.append(&mut rest);
        out
    })
}

/// From how many nodes [`validate`] checks the schema on a thread of its own: below, the
/// thread would cost more than it saves.
const PARALLEL_FROM_NODES: usize = 500;

/// Layer 1: the schema, the unknown members the document's policy refuses, the version.
fn layer_one(root: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    schema::check(root, &mut out);
    schema::unknown_fields_per_policy(root, &mut out);
    schema::check_version(root, &mut out);
    out
}

/// Layers 2 and 3 and the advisories, appended to `out`.
fn semantic(root: &Value, advice: Advice, out: &mut Vec<Finding>) {
    let Some(obj) = root.as_object() else {
        return;
    };
    let ctx = Ctx::new(obj);
    shape::check(&ctx, out);
    refs::check(&ctx, out);
    let reads = dataflow::check(&ctx, out);
    if advice == Advice::Given {
        advisories::check(&ctx, &reads, out);
        authoring::check(&ctx, &reads, out);
    }
}

/// Validates a loaded document and resolves every finding's line and column, ordered by
/// position in the source (findings without a position first).
pub fn validate_document(doc: &Document) -> Vec<Finding> {
    let mut findings = validate(&doc.value);
    locate(&doc.source, &mut findings);
    sort_findings(&mut findings);
    findings
}

/// Orders findings by source position, then code; stable for equal keys.
pub fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by_key(|f| (f.line.unwrap_or(0), f.column.unwrap_or(0), f.code));
}

/// How a named fragment is used, which decides the extra names its body may read.
#[derive(Clone, Debug, Default)]
pub(crate) struct FragmentUse<'a> {
    /// Used as a loop body: `loop.*` is in scope; these are the loop's `collect` names.
    pub loop_collects: Option<Vec<&'a str>>,
    /// Used as a map body: these item and index names are in scope.
    pub map_bindings: Vec<(&'a str, &'a str)>,
}

/// Everything the passes share: the scopes, their edge sets, and the named fragments.
pub(crate) struct Ctx<'a> {
    pub root: &'a Object,
    pub scopes: Vec<Scope<'a>>,
    pub sets: Vec<EdgeSet<'a>>,
    /// Named fragment → index of its scope in `scopes`.
    pub fragments: HashMap<&'a str, usize>,
    /// Named fragment → how containers use it.
    pub fragment_uses: HashMap<&'a str, FragmentUse<'a>>,
}

impl<'a> Ctx<'a> {
    fn new(root: &'a Object) -> Ctx<'a> {
        let scopes = model::scopes(root);
        let sets: Vec<EdgeSet<'a>> = scopes.iter().map(EdgeSet::build).collect();
        let mut fragments = HashMap::new();
        for (i, s) in scopes.iter().enumerate() {
            if let ScopeKind::Named(name) = s.kind {
                fragments.insert(name, i);
            }
        }
        let mut fragment_uses: HashMap<&'a str, FragmentUse<'a>> = HashMap::new();
        for set in &sets {
            for node in &set.nodes {
                let Some(ty) = node.node_type() else { continue };
                let Some(block) = node.block() else { continue };
                let Some(name) = str_of(block, "use") else {
                    continue;
                };
                let entry = fragment_uses.entry(name).or_default();
                match ty {
                    NodeType::Loop => entry
                        .loop_collects
                        .get_or_insert_with(Vec::new)
                        .extend(entries_of(block, "collect").map(|(k, _)| k)),
                    NodeType::Map => entry.map_bindings.push((
                        str_of(block, "as").unwrap_or("item"),
                        str_of(block, "index_as").unwrap_or("index"),
                    )),
                    _ => {}
                }
            }
        }
        Ctx {
            root,
            scopes,
            sets,
            fragments,
            fragment_uses,
        }
    }

    /// The `defaults` that apply inside scope `i`: the graph's for the root, the
    /// fragment's own elsewhere (parent defaults never cross into fragments, §6.3).
    pub fn defaults(&self, i: usize) -> Option<&'a Object> {
        obj_of(self.scopes[i].obj, "defaults")
    }

    /// Every output name a reader of `node` (in scope `scope`) may use: the node's
    /// [`model::Node::readable_outputs`], plus, for a subgraph node without `outputs_from`
    /// whose child is local (`use` or `inline`), the child's declared `outputs`, which the
    /// node passes through verbatim. (weft fix: reading such an output was a false AG206.)
    pub fn readable_outputs(&self, scope: usize, node: &model::Node<'a>) -> Vec<&'a str> {
        let mut out = node.readable_outputs();
        if node.node_type() == Some(NodeType::Subgraph)
            && node.block().is_some_and(|b| !b.has("outputs_from"))
            && let Some(child) = self.child_scope(scope, node)
        {
            out.extend(model::entries_of(self.scopes[child].obj, "outputs").map(|(k, _)| k));
        }
        out
    }

    /// The fragment a container node runs, when it is local (`use` or inline): its scope index.
    pub fn child_scope(&self, scope: usize, node: &model::Node<'a>) -> Option<usize> {
        let block = node.block()?;
        if let Some(name) = str_of(block, "use") {
            return self.fragments.get(name).copied();
        }
        let (_, _, pointer) = model::inline_body(node)?;
        let _ = scope;
        self.scopes.iter().position(|s| s.pointer == pointer)
    }
}

#[cfg(test)]
mod tests;
