//! How deep a document nests its container scopes: one measure for the run's preflight and
//! for the loader of `ref` children, so `constraints.max_subgraph_depth` caps subgraph, loop
//! and map scopes together, inline bodies, `use` fragments and `ref` chains included
//! (DIGEST §1.5, §1.8).
//!
//! A container node's body is one level below the node's own scope: a top-level loop's body
//! is at depth 1, a map inside it at 2. A `ref` child's scopes continue from the depth of the
//! `subgraph` node that names it, so a loop inside a child referenced from a top-level
//! subgraph is at depth 2 — the same as if the child were written inline.

use std::collections::HashMap;

use serde_json::Value;
use weft_ags::diagnostic::pointer_push;
use weft_ags::model::{Fields, NodeType, Object, Scope, ScopeKind, inline_body, obj_of, str_of};

/// The nesting of one document's container scopes.
#[derive(Debug, Default)]
pub(crate) struct Nesting {
    /// The deepest container scope, counted from the document's own top level (0 when it
    /// has no container).
    pub deepest: u64,
    /// The container node ids on the way to the deepest scope, outermost first.
    pub path: Vec<String>,
    /// For each `subgraph` node that names a `ref` child (by its JSON pointer), the depth
    /// of the child's top-level scope: where the child's own nesting starts.
    pub ref_sites: HashMap<String, u64>,
}

/// Measures `root`, looking no deeper than `stop` (a `use` cycle is AG131, reported by the
/// validator; `stop` bounds the walk through one).
pub(crate) fn measure(root: &Object, stop: u64) -> Nesting {
    let mut nesting = Nesting::default();
    let (deepest, path) = walk(root, &Scope::root(root), 0, stop, &mut nesting.ref_sites);
    nesting.deepest = deepest;
    nesting.path = path;
    nesting
}

/// The deepest scope under `scope` (itself at `depth`) and the nodes on the way there.
fn walk(
    root: &Object,
    scope: &Scope<'_>,
    depth: u64,
    stop: u64,
    ref_sites: &mut HashMap<String, u64>,
) -> (u64, Vec<String>) {
    let mut best = (depth, Vec::new());
    if depth >= stop {
        return best;
    }
    for node in scope.nodes() {
        let Some(ty) = node.node_type().filter(|t| t.is_container()) else {
            continue;
        };
        let body = match inline_body(&node) {
            Some((kind, obj, pointer)) => Some(Scope {
                kind,
                obj,
                pointer,
                owner: None,
                depth: 0,
            }),
            None if ty == NodeType::Subgraph => used_fragment(root, node.obj),
            None => None,
        };
        let (d, mut path) = match body {
            Some(body) => walk(root, &body, depth + 1, stop, ref_sites),
            None => {
                if ty == NodeType::Subgraph
                    && obj_of(node.obj, "subgraph").is_some_and(|b| b.has("ref"))
                {
                    let at = ref_sites.entry(node.pointer.clone()).or_default();
                    *at = (*at).max(depth + 1);
                }
                (depth + 1, Vec::new())
            }
        };
        if d > best.0 {
            path.insert(0, node.id.to_string());
            best = (d, path);
        }
    }
    best
}

/// The named fragment a `subgraph` node's `use` names, as a scope with the fragment's own
/// pointer (so `ref` sites inside it are found by the pointers the loader uses).
fn used_fragment<'a>(root: &'a Object, node: &'a Object) -> Option<Scope<'a>> {
    let name = str_of(obj_of(node, "subgraph")?, "use")?;
    let fragment = obj_of(root, "subgraphs").and_then(|s| s.get(name))?;
    Some(Scope {
        kind: ScopeKind::Named(name),
        obj: fragment.as_object()?,
        pointer: pointer_push("/subgraphs", name),
        owner: None,
        depth: 0,
    })
}

/// `constraints.max_subgraph_depth` of a document, 5 when absent (DIGEST §1.5).
pub(crate) fn max_depth(root: &Object) -> u64 {
    obj_of(root, "constraints")
        .and_then(|c| c.field("max_subgraph_depth"))
        .and_then(Value::as_u64)
        .unwrap_or(5)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn measure_json(doc: Value) -> Nesting {
        let root = doc.as_object().cloned().unwrap_or_default();
        measure(&root, 100)
    }

    #[test]
    fn inline_loop_map_and_use_add_up() {
        let n = measure_json(json!({
            "nodes": {
                "outer": {"type": "loop", "loop": {"body": {"nodes": {
                    "each": {"type": "map", "map": {"body": {"nodes": {
                        "frag": {"type": "subgraph", "subgraph": {"use": "leaf"}}
                    }}}}
                }}}}
            },
            "subgraphs": {"leaf": {"nodes": {"x": {"type": "task"}}}}
        }));
        assert_eq!(n.deepest, 3);
        assert_eq!(n.path, ["outer", "each", "frag"]);
    }

    #[test]
    fn a_ref_site_records_where_its_child_starts() {
        let n = measure_json(json!({
            "nodes": {
                "top": {"type": "subgraph", "subgraph": {"ref": {"uri": "./a.yaml"}}},
                "outer": {"type": "loop", "loop": {"body": {"nodes": {
                    "deep": {"type": "subgraph", "subgraph": {"ref": {"uri": "./b.yaml"}}}
                }}}},
                "frag": {"type": "subgraph", "subgraph": {"use": "f"}}
            },
            "subgraphs": {"f": {"nodes": {
                "inner": {"type": "subgraph", "subgraph": {"ref": {"uri": "./c.yaml"}}}
            }}}
        }));
        assert_eq!(n.ref_sites.get("/nodes/top"), Some(&1));
        assert_eq!(
            n.ref_sites.get("/nodes/outer/loop/body/nodes/deep"),
            Some(&2)
        );
        assert_eq!(n.ref_sites.get("/subgraphs/f/nodes/inner"), Some(&2));
        assert_eq!(n.deepest, 2);
    }

    #[test]
    fn a_use_cycle_stops_at_the_bound() {
        let doc = json!({
            "nodes": {"a": {"type": "subgraph", "subgraph": {"use": "f"}}},
            "subgraphs": {"f": {"nodes": {"again": {"type": "subgraph", "subgraph": {"use": "f"}}}}}
        });
        let root = doc.as_object().cloned().unwrap_or_default();
        assert_eq!(measure(&root, 7).deepest, 7);
    }
}
