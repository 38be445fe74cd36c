//! `attachments.<name>`: the graph's `attachments` as a root of the run's AGX names (DIGEST
//! §1.3 "read as `attachments.<name>`", §6.1 INITIALIZE "freeze context and attachments").
//!
//! The value of `attachments.<name>` is the attachment's reference, fixed by the document
//! (so every replay of the log sees the same value): its `inline` text when it has one,
//! else its workspace-relative `path`, else its `uri`. weft never reads the file or fetches
//! the URI for an expression; an agent that needs the content reads it with its tools.
//! Bound in the root scope; a fragment instance (loop iteration, map item, `use`/`inline`
//! subgraph) sees the enclosing scope's, as `docs/semantics.md` decides for the validator.
//! A `ref` child binds its own: a child that declares none cannot name any (AG203 when it
//! is loaded), so what it inherits is never read.

use serde_json::{Map, Value};

/// The name expressions read attachments under.
pub(super) const ROOT: &str = "attachments";

/// The `attachments` object of `root`: each attachment's name → its reference. `None` when
/// the document declares none.
pub(super) fn values(root: &Map<String, Value>) -> Option<Value> {
    let list = root.get(ROOT)?.as_array()?;
    let mut values = Map::new();
    for attachment in list {
        let Some(name) = attachment.get("name").and_then(Value::as_str) else {
            continue;
        };
        let reference = ["inline", "path", "uri"]
            .iter()
            .find_map(|k| attachment.get(*k).filter(|v| v.is_string()));
        if let Some(reference) = reference {
            values.insert(name.to_string(), reference.clone());
        }
    }
    Some(Value::Object(values))
}

/// Adds `attachments` to a root scope's bindings when the document declares any.
pub(super) fn bind(bindings: &mut Map<String, Value>, root: &Map<String, Value>) {
    if let Some(values) = values(root) {
        bindings.insert(ROOT.to_string(), values);
    }
}

/// The bindings of a fragment instance running `doc`: its own attachments when `doc`
/// declares some (a `ref` child), else the enclosing scope's.
pub(super) fn for_instance(
    bindings: &mut Map<String, Value>,
    enclosing: &Map<String, Value>,
    doc: &Map<String, Value>,
) {
    match values(doc) {
        Some(own) => {
            bindings.insert(ROOT.to_string(), own);
        }
        None => {
            if let Some(inherited) = enclosing.get(ROOT) {
                bindings.insert(ROOT.to_string(), inherited.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn root(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn each_attachment_reads_as_its_reference() {
        let doc = root(json!({"attachments": [
            {"name": "readme", "path": "README.md", "media_type": "text/markdown"},
            {"name": "note", "inline": "Ship it.", "path": "ignored.md"},
            {"name": "spec", "uri": "https://example.com/spec"},
        ]}));
        assert_eq!(
            values(&doc),
            Some(json!({"readme": "README.md", "note": "Ship it.",
                        "spec": "https://example.com/spec"}))
        );
    }

    #[test]
    fn an_instance_inherits_unless_its_document_declares_its_own() {
        let enclosing = root(json!({"attachments": {"readme": "README.md"}}));
        let mut item = Map::new();
        for_instance(&mut item, &enclosing, &root(json!({"nodes": {}})));
        assert_eq!(item.get(ROOT), Some(&json!({"readme": "README.md"})));
        let mut child = Map::new();
        let child_doc = root(json!({"attachments": [{"name": "spec", "path": "SPEC.md"}]}));
        for_instance(&mut child, &enclosing, &child_doc);
        assert_eq!(child.get(ROOT), Some(&json!({"spec": "SPEC.md"})));
    }

    #[test]
    fn a_document_without_attachments_binds_nothing() {
        let mut bindings = Map::new();
        bind(&mut bindings, &root(json!({"id": "g"})));
        assert!(bindings.is_empty());
    }
}
