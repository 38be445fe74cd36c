//! Unit tests of the validator on small inline documents; the conformance corpus and one
//! document per code live in `tests/conformance.rs` and `tests/codes.rs`.

use super::validate;
use crate::diagnostic::Code;
use serde_json::json;

fn codes(doc: serde_json::Value) -> Vec<Code> {
    validate(&doc).into_iter().map(|f| f.code).collect()
}

fn base(nodes: serde_json::Value) -> serde_json::Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t", "title": "t", "objective": "o",
        "constraints": {"max_cost_usd": 1.0},
        "entrypoints": ["a"], "nodes": nodes
    })
}

#[test]
fn a_clean_document_has_no_findings() {
    let doc = base(
        json!({"a": {"title": "A", "description": "Write the release notes from the changelog, citing each merged pull request."}}),
    );
    assert_eq!(codes(doc), vec![]);
}

#[test]
fn later_layers_run_even_when_the_schema_fails() {
    let doc = base(json!({
        "a": {"title": "A", "description": "Write the release notes from the changelog, citing each merged pull request.", "bogus": 1},
        "b": {"title": "B", "description": "Write the release notes from the changelog, citing each merged pull request.", "depends_on": ["missing"]}
    }));
    let found = codes(doc);
    assert!(found.contains(&Code::AG003), "{found:?}");
    assert!(found.contains(&Code::AG114), "{found:?}");
}
