//! `json_schema`: inline and file schemas, violations with instance paths, format
//! assertions, and refusal of every non-local reference.

mod common;

use common::Fixture;
use serde_json::json;
use weft_criteria::Outcome;

fn person_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "required": ["name", "age"],
        "properties": {
            "name": {"type": "string"},
            "age": {"$ref": "#/$defs/age"}
        },
        "$defs": {"age": {"type": "integer", "minimum": 0}}
    })
}

#[test]
fn inline_schema_pass_and_fail() {
    let mut f = Fixture::new();
    f.outputs = json!({"good": {"name": "a", "age": 3}, "bad": {"name": 1, "age": -1}});
    let r = f.one(json!({"kind": "json_schema", "output": "good", "schema": person_schema()}));
    assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.evidence);
    let r = f.one(json!({"kind": "json_schema", "output": "bad", "schema": person_schema()}));
    assert_eq!(r.outcome, Outcome::Failed);
    let mut paths: Vec<&str> = r
        .evidence
        .schema_errors
        .iter()
        .map(|v| v.instance_path.as_str())
        .collect();
    paths.sort();
    assert_eq!(paths, ["/age", "/name"]);
    assert!(
        r.evidence
            .schema_errors
            .iter()
            .all(|v| !v.schema_path.is_empty())
    );
    let r = f.one(json!({"kind": "json_schema", "output": "missing", "schema": person_schema()}));
    assert_eq!(r.outcome, Outcome::Failed);
    assert!(r.evidence.summary.contains("not produced"));
}

#[test]
fn formats_are_asserted() {
    let mut f = Fixture::new();
    f.outputs = json!({"d": "2024-13-45", "ok": "2024-02-29"});
    let schema = json!({"type": "string", "format": "date"});
    let r = f.one(json!({"kind": "json_schema", "output": "d", "schema": schema}));
    assert_eq!(r.outcome, Outcome::Failed);
    let r = f.one(json!({"kind": "json_schema", "output": "ok", "schema": schema}));
    assert_eq!(r.outcome, Outcome::Passed);
}

#[test]
fn remote_references_are_refused() {
    let mut f = Fixture::new();
    f.outputs = json!({"o": 1});
    for schema in [
        json!({"$ref": "https://example.com/schema.json"}),
        json!({"properties": {"a": {"$ref": "other.json#/x"}}}),
        json!({"$dynamicRef": "file:///etc/passwd"}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#"}),
    ] {
        let r = f.one(json!({"kind": "json_schema", "output": "o", "schema": schema}));
        assert_eq!(r.outcome, Outcome::Error, "{schema}");
        assert!(
            r.evidence.summary.contains("not a local reference")
                || r.evidence.summary.contains("not draft 2020-12"),
            "{}",
            r.evidence.summary
        );
    }
    let r = f.one(json!({"kind": "json_schema", "output": "o", "schema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "integer"}}));
    assert_eq!(r.outcome, Outcome::Passed);
}

#[test]
fn schema_files_in_the_workspace() {
    let mut f = Fixture::new();
    f.outputs = json!({"p": {"name": "a", "age": 1}});
    f.write("schemas/person.json", &person_schema().to_string());
    f.write("schemas/broken.json", "{not json");
    let r =
        f.one(json!({"kind": "json_schema", "output": "p", "schema_ref": "schemas/person.json"}));
    assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.evidence);
    for bad in [
        "schemas/broken.json",
        "../person.json",
        "/etc/passwd",
        "https://example.com/s.json",
        "schemas/absent.json",
    ] {
        let r = f.one(json!({"kind": "json_schema", "output": "p", "schema_ref": bad}));
        assert_eq!(r.outcome, Outcome::Error, "{bad}");
    }
    f.limits.max_schema_bytes = 10;
    let r =
        f.one(json!({"kind": "json_schema", "output": "p", "schema_ref": "schemas/person.json"}));
    assert_eq!(r.outcome, Outcome::Error);
    assert!(r.evidence.summary.contains("over the cap"));
}

#[test]
fn uncompilable_schema_is_an_error() {
    let mut f = Fixture::new();
    f.outputs = json!({"o": 1});
    let r = f.one(json!({"kind": "json_schema", "output": "o", "schema": {"type": 12}}));
    assert_eq!(r.outcome, Outcome::Error);
    assert!(
        r.evidence.summary.contains("does not compile"),
        "{}",
        r.evidence.summary
    );
}
