//! The permission layers of one node of an AGS document: the node's own requirements (its
//! block merged shallowly over its scope's `defaults.requirements`, arrays replaced, §6.3) and,
//! for a node inside an inline loop, map or subgraph body, the requirements of every container
//! around it, outermost first. The graph's side of "graph ∩ node" is that chain of containers:
//! AGS has no graph-wide permission list, and `defaults` are inherited (and replaceable), not
//! a ceiling (docs/permissions.md).

use serde_json::{Map, Value};

use crate::grants::{GrantError, Grants};

/// A node's own grants and the grants of the containers around it.
#[derive(Clone, Debug)]
pub struct NodeGrants {
    /// The node's own (defaults-merged) requirements.
    pub node: Grants,
    /// The containers around the node, outermost first.
    pub containers: Vec<Grants>,
}

/// Why a node's grants cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// No node with that id in the root scope or any inline body.
    #[error("no node '{0}' in the graph (root scope and inline loop, map and subgraph bodies)")]
    NoNode(String),
    /// The document is not an object with `nodes`.
    #[error("the document has no 'nodes' map")]
    NotAGraph,
    /// A malformed requirements block.
    #[error(transparent)]
    Grants(#[from] GrantError),
}

type Object = Map<String, Value>;

/// The grants of the node at scope address `address` in `doc`: `step` in the root scope,
/// `fix[2].step` (or `fix.step`) in the body of the loop, map or inline subgraph `fix`, and so
/// on down (`l[0].m[1].d`); an instance index is dropped, since every instance of a body has
/// the same requirements. Each container on the way is one layer of the result, outermost
/// first. Unlike [`node_grants`], two nodes with the same id in different bodies are never
/// confused: the address names exactly one node, or none (an error).
pub fn node_grants_at(doc: &Value, address: &str) -> Result<NodeGrants, DocumentError> {
    let mut scope = doc
        .as_object()
        .filter(|o| o.get("nodes").is_some_and(Value::is_object))
        .ok_or(DocumentError::NotAGraph)?;
    let segments: Vec<&str> = address
        .split('.')
        .map(|s| s.split('[').next().unwrap_or(s))
        .collect();
    let missing = || DocumentError::NoNode(address.into());
    let (last, containers) = segments.split_last().ok_or_else(missing)?;
    let mut chain = Vec::new();
    for cid in containers {
        let defaults = scope_defaults(scope);
        let node = scope
            .get("nodes")
            .and_then(Value::as_object)
            .and_then(|n| n.get(*cid))
            .and_then(Value::as_object)
            .ok_or_else(missing)?;
        let body = inline_body(node).ok_or_else(missing)?;
        let req = merged(node, defaults);
        chain.push(Grants::from_requirements(
            format!("container '{cid}'"),
            req.as_ref(),
        )?);
        scope = body;
    }
    let node = scope
        .get("nodes")
        .and_then(Value::as_object)
        .and_then(|n| n.get(*last))
        .and_then(Value::as_object)
        .ok_or_else(missing)?;
    let req = merged(node, scope_defaults(scope));
    Ok(NodeGrants {
        node: Grants::from_requirements(format!("node '{last}'"), req.as_ref())?,
        containers: chain,
    })
}

/// A scope's `defaults.requirements`.
fn scope_defaults(scope: &Object) -> Option<&Object> {
    scope
        .get("defaults")
        .and_then(Value::as_object)
        .and_then(|d| d.get("requirements"))
        .and_then(Value::as_object)
}

/// The grants of node `id` in `doc` (the first match, root scope first, then bodies in
/// declaration order). Where the caller knows the node's scope address, use
/// [`node_grants_at`]: an id can name nodes in several bodies.
pub fn node_grants(doc: &Value, id: &str) -> Result<NodeGrants, DocumentError> {
    let root = doc
        .as_object()
        .filter(|o| o.get("nodes").is_some_and(Value::is_object));
    let root = root.ok_or(DocumentError::NotAGraph)?;
    let mut chain = Vec::new();
    match find(root, id, &mut chain)? {
        Some(node) => Ok(NodeGrants {
            node,
            containers: chain,
        }),
        None => Err(DocumentError::NoNode(id.into())),
    }
}

/// The node's requirements block merged over its scope's `defaults.requirements` (shallow,
/// arrays replaced), found like [`node_grants`] (root scope, then inline bodies); `None` when
/// the document has no such node or neither block exists. Other parts of weft read members
/// the grants do not model from it (`tools`).
pub fn node_requirements(doc: &Value, id: &str) -> Option<Object> {
    fn walk(scope: &Object, id: &str) -> Option<Option<Object>> {
        let defaults = scope
            .get("defaults")
            .and_then(Value::as_object)
            .and_then(|d| d.get("requirements"))
            .and_then(Value::as_object);
        let nodes = scope.get("nodes").and_then(Value::as_object)?;
        if let Some(node) = nodes.get(id).and_then(Value::as_object) {
            return Some(merged(node, defaults));
        }
        nodes
            .values()
            .filter_map(Value::as_object)
            .filter_map(inline_body)
            .find_map(|body| walk(body, id))
    }
    walk(doc.as_object()?, id).flatten()
}

/// Searches `scope` (an object with `nodes` and maybe `defaults`) for `id`; `chain` collects
/// the containers on the way down.
fn find(
    scope: &Object,
    id: &str,
    chain: &mut Vec<Grants>,
) -> Result<Option<Grants>, DocumentError> {
    let defaults = scope
        .get("defaults")
        .and_then(Value::as_object)
        .and_then(|d| d.get("requirements"))
        .and_then(Value::as_object);
    let Some(nodes) = scope.get("nodes").and_then(Value::as_object) else {
        return Ok(None);
    };
    if let Some(node) = nodes.get(id).and_then(Value::as_object) {
        let req = merged(node, defaults);
        return Ok(Some(Grants::from_requirements(
            format!("node '{id}'"),
            req.as_ref(),
        )?));
    }
    for (cid, node) in nodes {
        let Some(node) = node.as_object() else {
            continue;
        };
        let Some(body) = inline_body(node) else {
            continue;
        };
        let req = merged(node, defaults);
        chain.push(Grants::from_requirements(
            format!("container '{cid}'"),
            req.as_ref(),
        )?);
        if let Some(found) = find(body, id, chain)? {
            return Ok(Some(found));
        }
        chain.pop();
    }
    Ok(None)
}

/// The node's requirements merged over the scope defaults (shallow, arrays replaced).
fn merged(node: &Object, defaults: Option<&Object>) -> Option<Object> {
    let own = node.get("requirements").and_then(Value::as_object);
    match (own, defaults) {
        (None, None) => None,
        (Some(o), None) => Some(o.clone()),
        (None, Some(d)) => Some(d.clone()),
        (Some(o), Some(d)) => {
            let mut m = d.clone();
            for (k, v) in o {
                m.insert(k.clone(), v.clone());
            }
            Some(m)
        }
    }
}

/// The inline fragment of a loop (`loop.body`), map (`map.body`) or subgraph
/// (`subgraph.inline`) node.
fn inline_body(node: &Object) -> Option<&Object> {
    let (block, key) = match node.get("type").and_then(Value::as_str)? {
        "loop" => ("loop", "body"),
        "map" => ("map", "body"),
        "subgraph" => ("subgraph", "inline"),
        _ => return None,
    };
    node.get(block)?.get(key)?.as_object()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn node_requirements_merge_defaults_and_reach_into_bodies() {
        let doc = json!({
            "defaults": {"requirements": {"tools": ["file_read"], "workspace": "read_only"}},
            "nodes": {
                "a": {"type": "task"},
                "b": {"type": "task", "requirements": {"tools": ["shell_exec"]}},
                "l": {"type": "loop", "loop": {"body": {"nodes": {
                    "inner": {"type": "task", "requirements": {"tools": ["file_write"]}}}}}}
            }
        });
        let tools = |id: &str| node_requirements(&doc, id).map(|r| r["tools"].clone());
        assert_eq!(tools("a"), Some(json!(["file_read"])));
        assert_eq!(tools("b"), Some(json!(["shell_exec"])));
        assert_eq!(tools("inner"), Some(json!(["file_write"])));
        assert_eq!(node_requirements(&doc, "missing"), None);
        assert_eq!(
            node_requirements(&doc, "b").unwrap()["workspace"],
            "read_only"
        );
    }

    fn doc() -> Value {
        json!({
            "defaults": {"requirements": {"permissions": ["fs:read:**"], "workspace": "read_only"}},
            "nodes": {
                "plain": {"type": "task"},
                "writer": {"type": "task", "requirements": {"permissions": ["fs:write:docs/**"], "workspace": "read_write"}},
                "fix": {"type": "loop", "requirements": {"permissions": ["fs:read:src/**"]}, "loop": {"body": {
                    "nodes": {"inner": {"type": "task", "requirements": {"permissions": ["fs:read:**"]}}}
                }}}
            }
        })
    }

    #[test]
    fn root_nodes_inherit_defaults_and_replace_arrays() {
        let g = node_grants(&doc(), "plain").unwrap();
        assert_eq!(g.node.permissions[0].permission().to_string(), "fs:read:**");
        assert!(g.containers.is_empty());
        let w = node_grants(&doc(), "writer").unwrap();
        let texts: Vec<String> = w
            .node
            .permissions
            .iter()
            .map(|m| m.permission().to_string())
            .collect();
        assert_eq!(texts, ["fs:write:docs/**"]);
    }

    #[test]
    fn body_nodes_carry_their_containers_and_not_the_parent_defaults() {
        let g = node_grants(&doc(), "inner").unwrap();
        assert_eq!(g.containers.len(), 1);
        assert_eq!(g.containers[0].holder, "container 'fix'");
        assert_eq!(
            g.containers[0].permissions[0].permission().to_string(),
            "fs:read:src/**"
        );
    }

    #[test]
    fn an_address_names_one_node_whatever_other_bodies_hold() {
        let doc = json!({"nodes": {
            "readonly": {"type": "loop", "requirements": {"permissions": ["fs:read:**"]},
                "loop": {"body": {"nodes": {"step": {"type": "task",
                    "requirements": {"permissions": ["fs:read:**"]}}}}}},
            "writer": {"type": "loop",
                "requirements": {"permissions": ["fs:write:**"], "workspace": "read_write"},
                "loop": {"body": {"nodes": {"step": {"type": "task",
                    "requirements": {"permissions": ["fs:write:**"], "workspace": "read_write"}},
                    "bare": {"type": "task"}}}}}
        }});
        let perms = |g: &Grants| -> Vec<String> {
            g.permissions
                .iter()
                .map(|m| m.permission().to_string())
                .collect()
        };
        let ro = node_grants_at(&doc, "readonly[3].step").unwrap();
        assert_eq!(perms(&ro.node), ["fs:read:**"]);
        assert_eq!(ro.containers[0].holder, "container 'readonly'");
        let rw = node_grants_at(&doc, "writer[0].step").unwrap();
        assert_eq!(perms(&rw.node), ["fs:write:**"]);
        assert_eq!(rw.containers[0].holder, "container 'writer'");
        // The id alone finds the first `step`, whichever that is: not how grants are found.
        assert_eq!(
            node_grants(&doc, "step").unwrap().containers[0].holder,
            "container 'readonly'"
        );
        let bare = node_grants_at(&doc, "writer[1].bare").unwrap();
        assert!(!bare.node.declared);
        for wrong in ["step", "writer[0].nope", "nope[0].step", "readonly.step.x"] {
            assert!(
                matches!(node_grants_at(&doc, wrong), Err(DocumentError::NoNode(_))),
                "{wrong}"
            );
        }
    }

    #[test]
    fn unknown_nodes_are_errors() {
        assert!(matches!(
            node_grants(&doc(), "nope"),
            Err(DocumentError::NoNode(_))
        ));
        assert!(matches!(
            node_grants(&json!([]), "x"),
            Err(DocumentError::NotAGraph)
        ));
    }
}
