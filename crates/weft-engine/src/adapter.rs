//! AGS scope → [`weft_core::WorkGraph`]: nodes in declaration order, the effective edge set
//! (`weft_ags::edges::EdgeSet`), joins, `when`s, concurrency groups and entrypoints.
//!
//! Node and edge indices are the same on both sides (declaration order, effective-edge
//! order), so an index recorded in the event log means the same node in the document.

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use weft_ags::edges::{EdgeKind as AgsKind, EdgeSet};
use weft_ags::model::{Scope, effective_block, obj_of, str_of};
use weft_core::{EdgeKind, EdgeSpec, GraphBuilder, GraphError, Join, NodeSpec, WorkGraph};

/// A scope adapted for the scheduler, with what the shell needs to evaluate guards.
#[derive(Clone, Debug)]
pub struct Adapted {
    /// The work graph (node index = declaration index).
    pub graph: WorkGraph,
    /// Edge index → the AGS `when` text of that edge (guarded edges only).
    pub edge_when: Vec<Option<String>>,
}

/// Why a scope could not become a work graph.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AdaptError {
    #[error("node `{node}`: invalid join: {reason}")]
    Join { node: String, reason: String },
    #[error("the scope is not a valid work graph: {0}")]
    Graph(#[from] GraphError),
}

/// Adapts one scope; `defaults` is the graph's `defaults` block (for `constraints`).
pub fn adapt_scope(
    scope: &Scope<'_>,
    defaults: Option<&Map<String, Value>>,
) -> Result<Adapted, AdaptError> {
    // The adjacency lists `EdgeSet::build` adds are the graph builder's to make.
    let (nodes, edges) = EdgeSet::effective_edges(scope);
    let entries: BTreeSet<&str> = scope.entrypoints().collect();
    let mut b = GraphBuilder::with_capacity(nodes.len(), edges.len());
    for node in &nodes {
        let join = join_of(node.id, node.obj)?;
        let mut spec = NodeSpec::new(node.id).join(join);
        spec.has_when = node.get("when").is_some();
        spec.entry = entries.contains(node.id);
        if let Some(constraints) = effective_block(node, defaults, "constraints")
            && let Some(group) = str_of(&constraints, "concurrency_group")
        {
            spec.concurrency_group = Some(group.to_string());
        }
        b.node(spec);
    }
    let mut edge_when = Vec::with_capacity(edges.len());
    for e in &edges {
        let kind = match e.kind {
            AgsKind::Sequence => EdgeKind::Sequence,
            AgsKind::Conditional => EdgeKind::Conditional,
            AgsKind::OnFailure => EdgeKind::OnFailure,
        };
        b.edge(EdgeSpec {
            from: e.from,
            to: e.to,
            kind,
            guarded: e.when.is_some(),
        });
        edge_when.push(e.when.map(str::to_string));
    }
    Ok(Adapted {
        graph: b.build()?,
        edge_when,
    })
}

/// A node's join (`join`, `join_count`), as the scheduler takes it.
pub fn join_of(id: &str, obj: &Map<String, Value>) -> Result<Join, AdaptError> {
    Ok(match str_of(obj, "join") {
        None | Some("all") => Join::All,
        Some("any") => Join::Any,
        Some("n_of") => {
            let count = obj
                .get("join_count")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| AdaptError::Join {
                    node: id.to_string(),
                    reason: "n_of without a valid join_count".into(),
                })?;
            Join::NOf(count)
        }
        Some(other) => {
            return Err(AdaptError::Join {
                node: id.to_string(),
                reason: format!("unknown join `{other}`"),
            });
        }
    })
}

/// Adapts the root scope of a document.
pub fn adapt_root(root: &Map<String, Value>) -> Result<Adapted, AdaptError> {
    adapt_scope(
        &weft_ags::model::Scope::root(root),
        obj_of(root, "defaults"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::Join;

    fn example(name: &str) -> Value {
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let candidates = [
            manifest.join("../../../shared/ags/examples"),
            manifest.join("../../examples"),
        ];
        let dir = candidates
            .iter()
            .find(|d| d.join(name).is_file())
            .unwrap_or_else(|| panic!("example {name} not found in {candidates:?}"));
        weft_ags::load::read_file(&dir.join(name), &Default::default())
            .unwrap()
            .document
            .unwrap()
            .value
    }

    #[test]
    fn library_release_root_scope() {
        let doc = example("library-v1-release.agraph.yaml");
        let root = doc.as_object().unwrap();
        let a = adapt_root(root).unwrap();
        let scope = &weft_ags::model::scopes(root)[0];
        let set = EdgeSet::build(scope);
        assert_eq!(a.graph.node_count(), 12);
        assert_eq!(a.graph.edge_count(), 14);
        let any = a.graph.find("prepare_release").unwrap();
        assert_eq!(a.graph.node(any).join, Join::Any);
        assert_eq!(a.graph.incoming(any).len(), 2);
        let all = a.graph.find("release_readiness").unwrap();
        assert_eq!(a.graph.node(all).join, Join::All);
        assert_eq!(a.graph.node_count(), set.nodes.len());
        assert_eq!(a.graph.edge_count(), set.edges.len());
        assert_eq!(a.edge_when.len(), set.edges.len());
        // Declaration order is kept.
        for (i, n) in set.nodes.iter().enumerate() {
            assert_eq!(a.graph.node(i).id, n.id);
        }
        // One entry: audit_codebase.
        let entries: Vec<_> = (0..a.graph.node_count())
            .filter(|&i| a.graph.node(i).entry)
            .map(|i| a.graph.node(i).id.clone())
            .collect();
        assert_eq!(entries, ["audit_codebase"]);
        // A `join: any` node exists and conditional edges carry their `when`.
        assert!((0..a.graph.node_count()).any(|i| a.graph.node(i).join == Join::Any));
        for (i, w) in a.edge_when.iter().enumerate() {
            assert_eq!(a.graph.edge(i).guarded, w.is_some());
            if a.graph.edge(i).kind == EdgeKind::Conditional {
                assert!(w.is_some());
            }
        }
        assert!(
            a.edge_when
                .iter()
                .flatten()
                .any(|w| w.contains("release_readiness"))
        );
    }

    #[test]
    fn every_shipped_root_scope_adapts() {
        for name in [
            "minimal.agraph.yaml",
            "docs-site-refresh.agraph.yaml",
            "link-audit.agraph.yaml",
            "test-repair-loop.agraph.yaml",
            "library-v1-release.agraph.json",
        ] {
            let doc = example(name);
            let root = doc.as_object().unwrap();
            let a = adapt_root(root).unwrap_or_else(|e| panic!("{name}: {e}"));
            let scope = &weft_ags::model::scopes(root)[0];
            assert_eq!(a.graph.node_count(), scope.nodes().len(), "{name}");
        }
    }

    #[test]
    fn joins_groups_and_whens() {
        let doc = serde_json::json!({
            "entrypoints": ["a"],
            "defaults": {"constraints": {"concurrency_group": "g"}},
            "nodes": {
                "a": {},
                "b": {"depends_on": ["a"], "when": "true"},
                "c": {"depends_on": ["a", "b"], "join": "n_of", "join_count": 1,
                      "constraints": {"concurrency_group": "h"}}
            },
            "edges": [{"from": "a", "to": "c", "kind": "on_failure"}]
        });
        let a = adapt_root(doc.as_object().unwrap()).unwrap();
        assert_eq!(a.graph.edge_count(), 4);
        assert!(a.graph.node(1).has_when);
        assert_eq!(a.graph.node(2).join, Join::NOf(1));
        assert_eq!(a.graph.node(0).concurrency_group.as_deref(), Some("g"));
        assert_eq!(a.graph.node(2).concurrency_group.as_deref(), Some("h"));
        assert_eq!(a.graph.edge(3).kind, EdgeKind::OnFailure);
        assert!(!a.graph.edge(3).guarded);
    }
}
