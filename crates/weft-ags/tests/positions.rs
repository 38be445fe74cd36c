//! Findings inside an expression point at the offending text inside the value (not at the
//! key), in both formats, through quoting and block scalars.

#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

use weft_ags::Code;
use weft_ags::load::{Format, Limits, load_str};

fn find(text: &str, format: Format, code: Code) -> (u32, u32) {
    let doc = load_str("t", text, format, &Limits::default())
        .document
        .unwrap();
    let f = weft_ags::validate::validate_document(&doc)
        .into_iter()
        .find(|f| f.code == code)
        .unwrap_or_else(|| panic!("no {code}"));
    (f.line.unwrap(), f.column.unwrap())
}

const HEAD: &str = "ags_version: \"1.0\"\nkind: AgenticGraph\nid: t\ntitle: t\nobjective: o\nentrypoints: [a]\nnodes:\n  a:\n    title: A\n    description: d\n";

#[test]
fn yaml_plain_quoted_and_block_values() {
    let plain = format!("{HEAD}    when: nodes.a.status == 'x' && params.nope\n");
    assert_eq!(find(&plain, Format::Yaml, Code::AG203), (11, 36));
    let quoted = format!("{HEAD}    when: \"params.nope == 1\"\n");
    assert_eq!(find(&quoted, Format::Yaml, Code::AG203), (11, 12));
    let block = format!("{HEAD}    when: >\n      true &&\n      params.nope\n");
    assert_eq!(find(&block, Format::Yaml, Code::AG203), (13, 7));
    let template = format!("{HEAD}    instructions: \"Use ${{{{ params.nope }}}} now\"\n");
    assert_eq!(find(&template, Format::Yaml, Code::AG203), (11, 28));
}

#[test]
fn json_values() {
    let text = r#"{"ags_version": "1.0", "kind": "AgenticGraph", "id": "t", "title": "t", "objective": "o",
 "entrypoints": ["a"],
 "nodes": {"a": {"title": "A", "description": "d", "when": "true && params.nope"}}}"#;
    assert_eq!(find(text, Format::Json, Code::AG203), (3, 69));
}

#[test]
fn text_that_is_not_in_the_source_falls_back_to_the_key() {
    // An escape changes the text, so the snippet cannot be found: the key is used.
    let escaped = format!("{HEAD}    when: \"\\x70arams.nope\"\n");
    assert_eq!(find(&escaped, Format::Yaml, Code::AG203), (11, 5));
}
