//! Findings inside an expression point at the offending text inside the value (not at the
//! key), in both formats, through quoting and block scalars: on a misspelled name, at the
//! word itself (`nope` in `params.nope`), not at the start of the path or expression.

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
    assert_eq!(find(&plain, Format::Yaml, Code::AG203), (11, 43));
    let quoted = format!("{HEAD}    when: \"params.nope == 1\"\n");
    assert_eq!(find(&quoted, Format::Yaml, Code::AG203), (11, 19));
    let block = format!("{HEAD}    when: >\n      true &&\n      params.nope\n");
    assert_eq!(find(&block, Format::Yaml, Code::AG203), (13, 14));
    let template = format!("{HEAD}    instructions: \"Use ${{{{ params.nope }}}} now\"\n");
    assert_eq!(find(&template, Format::Yaml, Code::AG203), (11, 35));
}

#[test]
fn json_values() {
    let text = r#"{"ags_version": "1.0", "kind": "AgenticGraph", "id": "t", "title": "t", "objective": "o",
 "entrypoints": ["a"],
 "nodes": {"a": {"title": "A", "description": "d", "when": "true && params.nope"}}}"#;
    assert_eq!(find(text, Format::Json, Code::AG203), (3, 76));
}

/// The column of `word` in the line `line` (1-based) of `text`, the first at or after
/// `after` on that line.
fn column_of(text: &str, line: u32, after: &str, word: &str) -> (u32, u32) {
    let l = text.lines().nth(line as usize - 1).unwrap();
    let from = l.find(after).unwrap();
    let at = from + l[from..].find(word).unwrap();
    (line, l[..at].chars().count() as u32 + 1)
}

#[test]
fn the_caret_of_a_misspelled_name_is_on_the_word() {
    let b = "  b:\n    title: B\n    description: d\n    depends_on: [a]\n";
    // An unknown node in a path, after a first path that names the same output.
    let path = format!(
        "{HEAD}    outputs: {{x: {{type: string, description: X.}}}}\n{b}    when: nodes.a.outputs.x == nodes.chek.outputs.x\n"
    );
    assert_eq!(
        find(&path, Format::Yaml, Code::AG203),
        column_of(&path, 16, "when", "chek")
    );
    // An output the node does not declare: the caret on the output's name.
    let output = format!(
        "{HEAD}    outputs: {{x: {{type: string, description: X.}}}}\n{b}    when: nodes.a.outputs.y == 'é'\n"
    );
    assert_eq!(
        find(&output, Format::Yaml, Code::AG206),
        column_of(&output, 16, "when", "y ==")
    );
    // Through output(): inside the string literal.
    let call = format!("{HEAD}{b}    when: output(\"chek\", \"x\") == 1\n");
    assert_eq!(
        find(&call, Format::Yaml, Code::AG203),
        column_of(&call, 15, "when", "chek")
    );
    // A node field: the field, not the node.
    let field = format!("{HEAD}{b}    when: nodes.a.stauts == 'ok'\n");
    assert_eq!(
        find(&field, Format::Yaml, Code::AG203),
        column_of(&field, 15, "when", "stauts")
    );
    // On one minified line, multibyte text before it.
    let json = r#"{"ags_version":"1.0","kind":"AgenticGraph","id":"t","title":"日本語 ü","objective":"o","entrypoints":["a"],"nodes":{"a":{"title":"A","description":"d"},"b":{"title":"B","description":"d","depends_on":["a"],"when":"nodes.a.status == 'x' && nodes.chek.status == 'y'"}}}"#;
    assert_eq!(
        find(json, Format::Json, Code::AG203),
        column_of(json, 1, "\"when\"", "chek")
    );
}

#[test]
fn text_that_is_not_in_the_source_falls_back_to_the_key() {
    // An escape changes the text, so the snippet cannot be found: the key is used.
    let escaped = format!("{HEAD}    when: \"\\x70arams.nope\"\n");
    assert_eq!(find(&escaped, Format::Yaml, Code::AG203), (11, 5));
}
