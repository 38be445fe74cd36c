//! A misspelling is reported once, as its cause (with a did-you-mean), not again through
//! its consequences: a node of a misspelled type is not also "not a decision or gate", and
//! a misspelled node name in an expression does not also make the meant node's output
//! "never read".
#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

use weft_ags::load::{Format, Limits, load_str};
use weft_ags::{Code, Finding, validate};

const DOC: &str = "ags_version: \"1.0\"
kind: AgenticGraph
id: t
title: T
objective: Publish a release once a person approved it.
constraints: {max_cost_usd: 1}
entrypoints: [check]
nodes:
  check:
    title: Check
    description: Check the release candidate against the checklist and report back.
    outputs:
      ok: {type: boolean, description: Whether it passed.}
  approve:
    type: gaet
    title: Approve
    description: A person approves the release candidate before it is published.
    depends_on: [check]
    gate: {mode: approve, roles: [owner]}
  publish:
    title: Publish
    description: Publish the approved release candidate to the package registry now.
    depends_on: [approve]
    when: nodes.approve.decision == \"approve\"
    inputs:
      ok: {type: boolean, description: Passed., from: nodes.chek.outputs.ok}
";

fn findings(text: &str) -> Vec<Finding> {
    let loaded = load_str("t", text, Format::Yaml, &Limits::default());
    let mut out = loaded.findings;
    out.extend(validate::validate_document(&loaded.document.unwrap()));
    out
}

#[test]
fn each_misspelling_is_reported_once_as_its_cause() {
    let found = findings(DOC);
    let codes: Vec<Code> = found.iter().map(|f| f.code).collect();
    assert_eq!(codes, [Code::AG004, Code::AG203], "{found:#?}");

    let ty = &found[0];
    assert_eq!(ty.message, "unknown value 'gaet' for 'type'");
    assert!(
        ty.help
            .as_deref()
            .unwrap()
            .starts_with("did you mean 'gate'?")
    );
    // On the misspelled value, not its key.
    assert_eq!((ty.line, ty.column), (Some(15), Some(11)));

    let name = &found[1];
    assert_eq!(name.message, "unknown node 'chek'");
    assert_eq!(name.help.as_deref(), Some("did you mean 'check'?"));
    // On the misspelled word, not at the start of the expression.
    let line = DOC.lines().nth(25).unwrap();
    let column = line[..line.find("chek").unwrap()].chars().count() + 1;
    assert_eq!((name.line, name.column), (Some(26), Some(column as u32)));
}

#[test]
fn a_node_of_a_known_type_without_a_decision_is_still_reported() {
    // The consequence is suppressed only when the type is unknown: a task has no decision.
    let doc = DOC
        .replace("type: gaet", "type: task")
        .replace("    gate: {mode: approve, roles: [owner]}\n", "");
    let found = findings(&doc);
    assert!(
        found.iter().any(|f| f.code == Code::AG206
            && f.message == "node 'approve' is not a decision or gate and has no decision"),
        "{found:#?}"
    );
    // A name that resembles no node still leaves the outputs unread.
    let doc = DOC.replace("nodes.chek.outputs.ok", "nodes.zzzzzz.outputs.ok");
    let found = findings(&doc);
    assert!(found.iter().any(|f| f.code == Code::AG904), "{found:#?}");
}
