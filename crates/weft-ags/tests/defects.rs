//! Every defect of the reference validator that DIGEST.md lists (§4.1, §4.2, §4.3, §9 item 13),
//! each asserting the behaviour the spec asks for. One test per defect, named after it.

use serde_json::{Value, json};
use weft_ags::edges::EdgeSet;
use weft_ags::load::{Format, Limits, Loaded, load_str};
use weft_ags::{Code, Finding, Severity, model, validate};

const HEADER: &str = "ags_version: \"1.0\"
kind: AgenticGraph
id: t
title: T
objective: Reproduce one defect of the reference validator.
constraints: {max_cost_usd: 1}
";
const DESC: &str = "Write the release notes from the changelog, citing each merged pull request.";

fn expand(text: &str) -> String {
    text.replace("$H\n", HEADER).replace("$D", DESC)
}

fn load(format: Format, text: &str) -> Loaded {
    load_str("defect", text, format, &Limits::default())
}

/// Loader findings plus validator findings.
fn findings_of(format: Format, text: &str) -> Vec<Finding> {
    let loaded = load(format, text);
    let mut out = loaded.findings;
    if let Some(doc) = loaded.document {
        out.extend(validate::validate_document(&doc));
    }
    out
}

fn yaml(text: &str) -> Vec<Finding> {
    findings_of(Format::Yaml, &expand(text))
}

fn codes(findings: &[Finding]) -> Vec<Code> {
    findings.iter().map(|f| f.code).collect()
}

fn has(findings: &[Finding], code: Code) -> bool {
    findings.iter().any(|f| f.code == code)
}

/// The value a YAML scalar loads as, read back from `metadata.v`.
fn scalar(text: &str) -> Value {
    let loaded = load(Format::Yaml, &format!("metadata:\n  v: {text}\n"));
    assert!(
        loaded.findings.is_empty(),
        "{text}: {:?}",
        codes(&loaded.findings)
    );
    let Some(doc) = loaded.document else {
        panic!("{text} did not load")
    };
    doc.value["metadata"]["v"].clone()
}

#[test]
fn ag101_is_emitted_not_ag001() {
    let f = yaml("$H
entrypoints: [a, b]
nodes:
  a:
    title: A
    description: $D
    loop: {mode: repeat, max_iterations: 2, body: {entrypoints: [x], nodes: {x: {title: X, description: Loop body step.}}}}
  b:
    type: loop
    title: B
    description: $D
");
    assert_eq!(
        f.iter().filter(|f| f.code == Code::AG101).count(),
        2,
        "{:?}",
        codes(&f)
    );
    assert!(!has(&f, Code::AG001), "{:?}", codes(&f));
}

#[test]
fn ag102_is_emitted_not_ag001() {
    let f = yaml(
        "$H
entrypoints: [a]
nodes:
  a:
    type: gate
    title: A
    description: $D
    gate: {mode: approve}
    intelligence: {tier: minimal}
",
    );
    assert!(has(&f, Code::AG102), "{:?}", codes(&f));
    assert!(!has(&f, Code::AG001), "{:?}", codes(&f));
}

#[test]
fn ag104_is_emitted_not_ag001() {
    let f = yaml(
        "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    inputs:
      topic: {type: string, description: The topic., template: \"x\", value: y}
",
    );
    assert!(has(&f, Code::AG104), "{:?}", codes(&f));
    assert!(!has(&f, Code::AG001), "{:?}", codes(&f));
}

#[test]
fn empty_yaml_is_ag001_not_ok() {
    for text in ["", "\n", "# only a comment\n", "---\n", "~\n"] {
        let f = findings_of(Format::Yaml, text);
        assert!(
            f.iter()
                .any(|f| f.code == Code::AG001 && f.severity == Severity::Error),
            "{text:?}: {:?}",
            codes(&f)
        );
    }
}

#[test]
fn json_duplicate_keys_are_ag005_and_the_first_value_is_kept() {
    let text = r#"{"ags_version": "1.0", "kind": "AgenticGraph", "id": "t", "title": "T",
 "objective": "o", "constraints": {"max_cost_usd": 1}, "entrypoints": ["a"],
 "nodes": {
   "a": {"title": "First", "description": "d"},
   "a": {"title": "Second", "description": "d"}
 }}"#;
    let loaded = load(Format::Json, text);
    let dup: Vec<&Finding> = loaded
        .findings
        .iter()
        .filter(|f| f.code == Code::AG005)
        .collect();
    assert_eq!(dup.len(), 1, "{:?}", codes(&loaded.findings));
    assert_eq!(dup[0].line, Some(5), "reported at the second key");
    let doc = loaded.document.expect("a duplicate key is recoverable");
    assert_eq!(doc.value["nodes"]["a"]["title"], "First");
}

#[test]
fn recursion_through_a_nested_inline_body_is_ag131() {
    let f = yaml(
        "$H
entrypoints: [a]
nodes:
  a:
    type: subgraph
    title: A
    description: $D
    subgraph: {use: outer}
subgraphs:
  outer:
    entrypoints: [wrap]
    nodes:
      wrap:
        type: loop
        title: Wrap
        description: $D
        loop:
          mode: repeat
          max_iterations: 2
          body:
            entrypoints: [again]
            nodes:
              again:
                type: subgraph
                title: Again
                description: $D
                subgraph: {use: outer}
",
    );
    assert!(has(&f, Code::AG131), "{:?}", codes(&f));
}

#[test]
fn output_call_forward_read_is_ag201() {
    let f = yaml(
        "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    inputs:
      notes: {type: text, description: The notes., from: \"output('b', 'notes')\"}
  b:
    title: B
    description: $D
    depends_on: [a]
    outputs:
      notes: {type: text, description: The notes.}
",
    );
    assert!(has(&f, Code::AG201), "{:?}", codes(&f));
}

#[test]
fn ag904_not_reported_for_an_output_read_by_a_criterion_output_field() {
    let f = yaml("$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    outputs:
      notes: {type: text, description: The notes.}
    success:
      criteria:
        - {id: shaped, kind: json_schema, description: The notes are a string., output: notes, schema: {type: string}}
");
    assert!(!has(&f, Code::AG904), "{:?}", codes(&f));
}

#[test]
fn yaml_null_is_null_not_the_string_null() {
    assert_eq!(scalar("null"), Value::Null);
    assert_eq!(scalar("Null"), Value::Null);
    assert_eq!(scalar("~"), Value::Null);
}

#[test]
fn yaml_017_is_decimal_17() {
    assert_eq!(scalar("017"), json!(17));
    assert_eq!(scalar("0o17"), json!(15));
}

#[test]
fn yaml_underscores_and_sexagesimal_are_strings() {
    assert_eq!(scalar("1_000"), json!("1_000"));
    assert_eq!(scalar("1:20"), json!("1:20"));
}

#[test]
fn unquoted_timestamps_are_strings_and_created_at_validates() {
    assert_eq!(
        scalar("2026-08-28T00:00:00Z"),
        json!("2026-08-28T00:00:00Z")
    );
    let f = yaml(
        "$H
created_at: 2026-08-28T00:00:00Z
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
",
    );
    assert!(f.is_empty(), "{:?}", codes(&f));
}

#[test]
fn yaml_inf_is_rejected() {
    for v in [".inf", "-.inf", ".nan", ".Inf"] {
        let loaded = load(Format::Yaml, &format!("metadata:\n  v: {v}\n"));
        assert!(
            loaded.findings.iter().any(|f| f.code == Code::AG001),
            "{v}: {:?}",
            codes(&loaded.findings)
        );
    }
}

#[test]
fn a_named_fragment_used_as_a_map_body_can_read_the_item() {
    let f = yaml(
        "$H
params:
  files: {type: array, description: The files.}
entrypoints: [each]
nodes:
  each:
    type: map
    title: Each
    description: $D
    map: {over: params.files, as: file, max_items: 10, use: per_file}
subgraphs:
  per_file:
    entrypoints: [one]
    nodes:
      one:
        title: One
        description: $D
        instructions: \"Summarise ${{ file }} (item ${{ index }}).\"
",
    );
    assert!(f.is_empty(), "{:?}", codes(&f));
}

#[test]
fn defaults_intelligence_is_validated_ag141() {
    let f = yaml(
        "$H
defaults:
  intelligence: {tier: standard, level: 4}
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
",
    );
    let hit = f
        .iter()
        .find(|f| f.code == Code::AG141)
        .expect("AG141 on defaults");
    assert_eq!(hit.pointer, "/defaults/intelligence/level");
}

#[test]
fn judge_intelligence_is_validated_ag141_and_ag142() {
    let f = yaml(
        "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    success:
      criteria:
        - {id: ok, kind: expression, description: Always., expr: \"true\"}
        - id: good
          kind: llm_judge
          description: The notes are good.
          rubric: Are the notes accurate?
          samples: 3
          judge_intelligence: {tier: advanced, level: 2, escalate_to: minimal}
",
    );
    assert!(has(&f, Code::AG141), "{:?}", codes(&f));
    assert!(has(&f, Code::AG142), "{:?}", codes(&f));
}

#[test]
fn edge_dedupe_keeps_conditional_edges_with_different_when() {
    let doc = json!({
        "nodes": {"a": {}, "b": {}},
        "edges": [
            {"from": "a", "to": "b", "kind": "conditional", "when": "succeeded('a')"},
            {"from": "a", "to": "b", "kind": "conditional", "when": "failed('a')"},
            {"from": "a", "to": "b", "kind": "conditional", "when": "failed('a')"}
        ]
    });
    let scopes = model::scopes(doc.as_object().unwrap());
    let set = EdgeSet::build(&scopes[0]);
    let whens: Vec<Option<&str>> = set.edges.iter().map(|e| e.when).collect();
    assert_eq!(whens, vec![Some("succeeded('a')"), Some("failed('a')")]);
}

#[test]
fn layer_2_and_3_findings_are_reported_when_layer_1_fails() {
    let f = yaml(
        "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    bogus: true
    depends_on: [ghost]
    inputs:
      topic: {type: string, description: The topic., from: params.nope}
",
    );
    for code in [Code::AG003, Code::AG114, Code::AG203] {
        assert!(has(&f, code), "{code}: {:?}", codes(&f));
    }
}

#[test]
fn requirements_secrets_naming_an_undeclared_secret_is_ag203() {
    let f = yaml(
        "$H
secrets:
  - {name: token, description: The API token.}
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    requirements: {secrets: [token, tokn]}
",
    );
    let hits: Vec<&Finding> = f.iter().filter(|f| f.code == Code::AG203).collect();
    assert_eq!(hits.len(), 1, "{:?}", codes(&f));
    assert_eq!(hits[0].pointer, "/nodes/a/requirements/secrets/1");
    assert!(
        hits[0].message.contains("undeclared secret 'tokn'"),
        "{}",
        hits[0].message
    );
    assert!(
        hits[0]
            .help
            .as_deref()
            .unwrap_or_default()
            .contains("token")
    );
    assert_eq!(f.len(), 1, "{:?}", codes(&f));
}

#[test]
fn requirements_secrets_in_defaults_are_checked_too() {
    let f = yaml(
        "$H
defaults:
  requirements: {secrets: [token]}
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
",
    );
    assert!(has(&f, Code::AG203), "{:?}", codes(&f));
}

#[test]
fn undeclared_self_input_is_ag203() {
    let f = yaml(
        "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    inputs:
      topic: {type: string, description: The topic., value: release}
    instructions: \"Write about ${{ self.inputs.topic }} and ${{ self.inputs.tpoic }}.\"
",
    );
    let hits: Vec<&Finding> = f.iter().filter(|f| f.code == Code::AG203).collect();
    assert_eq!(hits.len(), 1, "{:?}", codes(&f));
    assert!(hits[0].message.contains("self.inputs.tpoic"));
}

#[test]
fn self_outputs_in_a_node_when_is_refused() {
    let f = yaml("$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    when: \"self.outputs.notes != ''\"
    outputs:
      notes: {type: text, description: The notes.}
    success:
      criteria:
        - {id: long, kind: expression, description: Long enough., expr: \"len(self.outputs.notes) > 10\"}
");
    let hits: Vec<&Finding> = f.iter().filter(|f| f.code == Code::AG203).collect();
    assert_eq!(hits.len(), 1, "{:?}", codes(&f));
    assert_eq!(hits[0].pointer, "/nodes/a/when");
}

#[test]
fn subgraph_params_not_declared_by_a_local_child_are_ag203() {
    let f = yaml(
        "$H
entrypoints: [a, b]
nodes:
  a:
    type: subgraph
    title: A
    description: $D
    subgraph:
      use: child
      params: {topic: \"'release'\", tpoic: \"'oops'\"}
  b:
    type: subgraph
    title: B
    description: $D
    subgraph:
      params: {extra: \"1\"}
      inline:
        params:
          n: {type: integer, description: A count., required: false}
        entrypoints: [x]
        nodes:
          x:
            title: X
            description: $D
subgraphs:
  child:
    params:
      topic: {type: string, description: The topic.}
    entrypoints: [inner]
    nodes:
      inner:
        title: Inner
        description: $D
        instructions: \"Write about ${{ params.topic }}.\"
",
    );
    let hits: Vec<&Finding> = f.iter().filter(|f| f.code == Code::AG203).collect();
    let pointers: Vec<&str> = hits.iter().map(|f| f.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        vec![
            "/nodes/a/subgraph/params/tpoic",
            "/nodes/b/subgraph/params/extra"
        ],
        "{:?}",
        codes(&f)
    );
    assert!(
        hits[0]
            .help
            .as_deref()
            .unwrap_or_default()
            .contains("topic")
    );
}

#[test]
fn outputs_from_naming_a_missing_child_output_is_reported() {
    let f = yaml(
        "$H
entrypoints: [a]
nodes:
  a:
    type: subgraph
    title: A
    description: $D
    subgraph:
      use: child
      outputs_from:
        good: outputs.notes
        bad: outputs.nope
        worse: nodes.inner.outputs.nope
subgraphs:
  child:
    entrypoints: [inner]
    nodes:
      inner:
        title: Inner
        description: $D
        outputs:
          notes: {type: text, description: The notes.}
    outputs:
      notes: {type: text, description: The notes., from: nodes.inner.outputs.notes}
outputs:
  g: {type: text, description: G., from: nodes.a.outputs.good}
  b: {type: text, description: B., from: nodes.a.outputs.bad}
  w: {type: text, description: W., from: nodes.a.outputs.worse}
",
    );
    let at = |p: &str| {
        f.iter()
            .filter(|x| x.pointer == p)
            .map(|x| x.code)
            .collect::<Vec<_>>()
    };
    assert_eq!(at("/nodes/a/subgraph/outputs_from/good"), vec![]);
    // `outputs.X` names a declared output of the child graph: AG203, as for graph-level
    // `outputs.X` (the reference's "undeclared graph output"); a node output is AG206.
    assert_eq!(at("/nodes/a/subgraph/outputs_from/bad"), vec![Code::AG203]);
    assert_eq!(
        at("/nodes/a/subgraph/outputs_from/worse"),
        vec![Code::AG206]
    );
}

// ---- defects of the validator found while writing tests/codes.rs ----

#[test]
fn nodes_run_only_by_failure_handling_are_not_unreachable_ag903() {
    let f = yaml(
        "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    failure:
      fallback:
        - {strategy: alternate_node, node: plan_b}
      escalation: {to: node, node: triage}
      compensation: undo
  plan_b:
    title: Plan B
    description: $D
  triage:
    title: Triage
    description: $D
  undo:
    title: Undo
    description: $D
  orphan:
    title: Orphan
    description: $D
",
    );
    let unreachable: Vec<&str> = f
        .iter()
        .filter(|f| f.code == Code::AG903)
        .map(|f| f.pointer.as_str())
        .collect();
    assert_eq!(unreachable, vec!["/nodes/orphan"], "{:?}", codes(&f));
}

#[test]
fn a_local_subgraph_without_outputs_from_passes_its_child_outputs_through() {
    let f = yaml(
        "$H
entrypoints: [a]
nodes:
  a:
    type: subgraph
    title: A
    description: $D
    subgraph: {use: child}
  b:
    title: B
    description: $D
    depends_on: [a]
    inputs:
      notes: {type: text, description: The notes., from: nodes.a.outputs.notes}
      other: {type: text, description: Not produced., from: nodes.a.outputs.nope}
subgraphs:
  child:
    entrypoints: [inner]
    nodes:
      inner:
        title: Inner
        description: $D
        outputs:
          notes: {type: text, description: The notes.}
    outputs:
      notes: {type: text, description: The notes., from: nodes.inner.outputs.notes}
",
    );
    let hits: Vec<&str> = f
        .iter()
        .filter(|f| f.code == Code::AG206)
        .map(|f| f.pointer.as_str())
        .collect();
    assert_eq!(hits, vec!["/nodes/b/inputs/other/from"], "{:?}", codes(&f));
}

/// The reference never looks inside `defaults`; weft checks what is wrong for every node
/// that would inherit the block (syntax, secrets), and accepts what only makes sense per
/// node (`self.outputs` in an escalation message).
#[test]
fn expressions_in_defaults_are_checked() {
    let f = yaml(
        "$H
defaults:
  failure:
    escalation:
      to: human
      message: \"Failed with ${{ self.outputs.summary }} using ${{ secrets.token }}\"
  human:
    - at: after_outputs
      mode: notify
      when: \"self.attempt >\"
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    outputs:
      summary: {type: text, description: The summary.}
",
    );
    let found = codes(&f);
    assert!(found.contains(&Code::AG205), "{found:?}");
    assert!(found.contains(&Code::AG204), "{found:?}");
    let secrets = f.iter().find(|x| x.code == Code::AG205).unwrap();
    assert_eq!(secrets.pointer, "/defaults/failure/escalation/message");
    // `self.outputs.summary` is not an error here: it is checked where it is inherited.
    assert!(!found.contains(&Code::AG203), "{found:?}");
}

/// The second half of AG211, which the reference never implemented: a bare expression where
/// a template is expected is shown to the agent or person literally.
#[test]
fn bare_expression_in_template_position_is_ag211() {
    let f = yaml(
        "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    instructions: nodes.a.outputs.notes
    outputs:
      notes: {type: text, description: The notes.}
",
    );
    let hit = f.iter().find(|x| x.code == Code::AG211).expect("AG211");
    assert_eq!(hit.pointer, "/nodes/a/instructions");
    // Ordinary prose that happens to contain a dotted word is not an expression.
    let prose = yaml(
        "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    instructions: See docs.md for the release steps.
",
    );
    assert!(!has(&prose, Code::AG211), "{:?}", codes(&prose));
}
