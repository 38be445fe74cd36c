//! Unit tests of the validator on small inline documents; the conformance corpus and one
//! document per code live in `weft-cli/tests/conformance/` and `tests/codes.rs`.

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

#[test]
fn on_unknown_field_warn_turns_ag003_into_a_warning_and_nothing_else() {
    use crate::diagnostic::Severity;
    let node = json!({"a": {"title": "A", "description": "Write the release notes from the changelog, citing each merged pull request.", "bogus": 1, "retry": 2}});
    let strict = validate(&base(node.clone()));
    assert!(
        strict
            .iter()
            .any(|f| f.code == Code::AG003 && f.severity == Severity::Error),
        "{strict:?}"
    );

    let mut doc = base(node);
    doc["policy"] = json!({"on_unknown_field": "warn"});
    doc["ags_version"] = json!("1.1");
    let lenient = validate(&doc);
    let ag003: Vec<_> = lenient.iter().filter(|f| f.code == Code::AG003).collect();
    assert_eq!(ag003.len(), 2, "{lenient:?}");
    assert!(ag003.iter().all(|f| f.severity == Severity::Warning));
    assert!(ag003[0].message.contains("on_unknown_field: warn"));
    // A newer version is still refused: the policy does not reach AG002.
    assert!(
        lenient
            .iter()
            .any(|f| f.code == Code::AG002 && f.severity == Severity::Error),
        "{lenient:?}"
    );
}

#[test]
fn a_large_document_gets_the_same_findings_in_the_same_order_as_one_pass_after_the_other() {
    // Above the threshold the schema runs on its own thread: same findings, same order.
    let n = super::PARALLEL_FROM_NODES + 100;
    let mut nodes = serde_json::Map::new();
    for i in 0..n {
        let mut node = json!({"title": format!("Step {i}"), "description": "Do it."});
        if i > 0 {
            node["depends_on"] = json!([format!("n{}", i - 1)]);
        }
        if i % 97 == 0 {
            // Schema errors (a number where a string goes, an unknown member) and a
            // reference the later layers refuse.
            node["title"] = json!(7);
            node["x_unknown"] = json!(true);
            node["depends_on"] = json!(["nowhere"]);
        }
        nodes.insert(format!("n{i}"), node);
    }
    let mut doc = base(serde_json::Value::Object(nodes));
    doc["entrypoints"] = json!(["n0"]);
    let parallel = validate(&doc);
    let mut sequential = super::layer_one(&doc);
    super::semantic(&doc, super::Advice::Given, &mut sequential);
    let key = |f: &crate::diagnostic::Finding| (f.code, f.pointer.clone(), f.message.clone());
    assert!(
        parallel.iter().any(|f| f.code.as_str().starts_with("AG0")),
        "{parallel:?}"
    );
    assert!(parallel.len() > n, "{} findings", parallel.len());
    assert_eq!(
        parallel.iter().map(key).collect::<Vec<_>>(),
        sequential.iter().map(key).collect::<Vec<_>>()
    );
    // Without the advisory passes, on the same large document: the same errors.
    let errors = |found: &[crate::diagnostic::Finding]| -> Vec<_> {
        found
            .iter()
            .filter(|f| f.severity == crate::diagnostic::Severity::Error)
            .map(key)
            .collect()
    };
    let layers = super::validate_layers(&doc);
    assert!(layers.len() < parallel.len(), "the advice is left out");
    assert_eq!(errors(&layers), errors(&parallel));
}
