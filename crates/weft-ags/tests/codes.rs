//! One small document per diagnostic code: each must produce its code with the catalogue
//! severity, a source position and a help, and nothing else that the document does not
//! also deliberately contain (no cascade of unrelated findings). A second test makes sure
//! the table covers every code of [`Code::ALL`], so a new code cannot go untested.
//!
//! Not covered here, on purpose:
//! - AG301 and AG302 are run-time checks of the params a run is started with (a harness
//!   concern), never emitted by the static validator;
//! - AG303 (conformance level too high) is covered by `tests/levels.rs`;
//! - WF101–WF105, weft's refusals of a subgraph `ref`, come from loading the referenced
//!   files (`weft_engine::refs`), which this crate never does; they are covered by
//!   `weft-engine/tests/refs.rs` and `weft-cli/tests/validate_refs.rs`.
//!
//! Documents are written with two placeholders: `$H` expands to a valid graph header
//! (with a cost ceiling, so AG908 stays quiet) and `$D` to a brief long enough for WF901.

use weft_ags::load::{Format, Limits, load_str};
use weft_ags::{Code, Finding, validate};

const HEADER: &str = "ags_version: \"1.0\"
kind: AgenticGraph
id: t
title: T
objective: Exercise one diagnostic code.
constraints: {max_cost_usd: 1}
";
const DESC: &str = "Write the release notes from the changelog, citing each merged pull request.";

/// Codes the static validator never emits (see the module docs).
const NOT_STATIC: &[Code] = &[
    Code::AG301,
    Code::AG302,
    Code::AG303,
    Code::WF101,
    Code::WF102,
    Code::WF103,
    Code::WF104,
    Code::WF105,
];

struct Case {
    code: Code,
    name: &'static str,
    format: Format,
    text: &'static str,
    /// Other codes the document deliberately also triggers (normally none).
    also: &'static [Code],
}

const fn yaml(code: Code, name: &'static str, text: &'static str) -> Case {
    Case {
        code,
        name,
        format: Format::Yaml,
        text,
        also: &[],
    }
}

fn expand(text: &str) -> String {
    text.replace("$H\n", HEADER).replace("$D", DESC)
}

/// Loader findings plus validator findings, as `weft validate` reports them.
pub fn findings(format: Format, text: &str) -> Vec<Finding> {
    let loaded = load_str("case", text, format, &Limits::default());
    let mut out = loaded.findings;
    if let Some(doc) = loaded.document {
        out.extend(validate::validate_document(&doc));
    }
    out
}

fn render(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            format!(
                "    {} {} {} at {:?} ({:?}:{:?}) help={:?}",
                f.severity, f.code, f.message, f.pointer, f.line, f.column, f.help
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

const CASES: &[Case] = &[
    // ---- loader and layer 1 ----
    yaml(Code::AG001, "schema-type-error", "$H
entrypoints: [a]
nodes:
  a:
    title: [not, a, string]
    description: $D
"),
    yaml(Code::AG001, "empty-document", ""),
    yaml(Code::AG001, "comment-only-document", "# nothing here\n"),
    yaml(Code::AG001, "root-not-an-object", "- a\n- b\n"),
    yaml(Code::AG001, "custom-tag", "$H
entrypoints: [a]
nodes:
  a:
    title: !shout A
    description: $D
"),
    yaml(Code::AG001, "non-finite-number", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    constraints: {max_cost_usd: .inf}
"),
    yaml(Code::AG001, "unquoted-version", "ags_version: 1.0
kind: AgenticGraph
id: t
title: T
objective: Exercise one diagnostic code.
constraints: {max_cost_usd: 1}
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
"),
    yaml(Code::AG001, "missing-required-field", "$H
entrypoints: [a]
nodes:
  a:
    description: $D
"),
    Case {
        code: Code::AG001,
        name: "json-syntax-error",
        format: Format::Json,
        text: "{\"ags_version\": \"1.0\",\n \"kind\": }\n",
        also: &[],
    },
    yaml(Code::AG002, "unsupported-major", "ags_version: \"2.0\"
kind: AgenticGraph
id: t
title: T
objective: Exercise one diagnostic code.
constraints: {max_cost_usd: 1}
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
"),
    yaml(Code::AG002, "unsupported-minor", "ags_version: \"1.1\"
kind: AgenticGraph
id: t
title: T
objective: Exercise one diagnostic code.
constraints: {max_cost_usd: 1}
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
"),
    yaml(Code::AG003, "unknown-field", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    retries: 3
"),
    yaml(Code::AG004, "unknown-enum-value", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    intelligence: {tier: huge}
"),
    yaml(Code::AG005, "duplicate-yaml-key", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    title: B
    description: $D
"),
    Case {
        code: Code::AG005,
        name: "duplicate-json-key",
        format: Format::Json,
        text: r#"{"ags_version": "1.0", "kind": "AgenticGraph", "id": "t", "title": "T",
 "objective": "Exercise one diagnostic code.", "constraints": {"max_cost_usd": 1},
 "entrypoints": ["a"],
 "nodes": {
   "a": {"title": "A", "description": "Write the release notes from the changelog, citing each merged pull request."},
   "a": {"title": "B", "description": "Write the release notes from the changelog, citing each merged pull request."}
 }}
"#,
        also: &[],
    },
    // ---- layer 2 ----
    yaml(Code::AG101, "foreign-type-block", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    gate: {mode: approve}
"),
    yaml(Code::AG101, "missing-type-block", "$H
entrypoints: [a]
nodes:
  a:
    type: decision
    title: A
    description: $D
"),
    yaml(Code::AG102, "gate-with-intelligence", "$H
entrypoints: [a]
nodes:
  a:
    type: gate
    title: A
    description: $D
    gate: {mode: approve}
    intelligence: {tier: standard}
"),
    yaml(Code::AG103, "sequence-edge-with-when", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
  b:
    title: B
    description: $D
edges:
  - {from: a, to: b, when: \"succeeded('a')\"}
"),
    yaml(Code::AG104, "input-from-and-value", "$H
params:
  topic: {type: string, description: The topic.}
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    inputs:
      topic: {type: string, description: The topic., from: params.topic, value: x}
"),
    yaml(Code::AG111, "cycle", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
  b:
    title: B
    description: $D
    depends_on: [a, c]
  c:
    title: C
    description: $D
    depends_on: [b]
"),
    yaml(Code::AG112, "entrypoint-with-incoming-edge", "$H
entrypoints: [a, b]
nodes:
  a:
    title: A
    description: $D
  b:
    title: B
    description: $D
    depends_on: [a]
"),
    yaml(Code::AG113, "edge-to-unknown-node", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
edges:
  - {from: a, to: nowhere}
"),
    yaml(Code::AG113, "unknown-fallback-node", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    failure:
      fallback:
        - {strategy: alternate_node, node: plan_b}
"),
    yaml(Code::AG114, "unknown-dependency", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
  b:
    title: B
    description: $D
    depends_on: [a, ghost]
"),
    yaml(Code::AG115, "unknown-entrypoint", "$H
entrypoints: [a, ghost]
nodes:
  a:
    title: A
    description: $D
"),
    yaml(Code::AG116, "impossible-join", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
  b:
    title: B
    description: $D
    depends_on: [a]
    join: n_of
    join_count: 2
"),
    yaml(Code::AG117, "node-id-self", "$H
entrypoints: [self]
nodes:
  self:
    title: A
    description: $D
"),
    yaml(Code::AG117, "reserved-output-name", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    outputs:
      params: {type: text, description: A reserved name.}
outputs:
  notes: {type: text, description: Notes., from: nodes.a.outputs.params}
"),
    yaml(Code::AG121, "expression-branch-without-when", "$H
params:
  big: {type: boolean, description: Is it big.}
entrypoints: [a]
nodes:
  a:
    type: decision
    title: A
    description: $D
    decision:
      evaluator: expression
      branches:
        - {label: large, description: Large., when: params.big}
        - {label: small, description: Small.}
"),
    yaml(Code::AG122, "decision-output-declared", "$H
entrypoints: [a]
nodes:
  a:
    type: decision
    title: A
    description: $D
    outputs:
      decision: {type: string, description: The choice.}
    decision:
      branches:
        - {label: large, description: Large.}
        - {label: small, description: Small.}
outputs:
  size: {type: string, description: The size., from: nodes.a.outputs.decision}
"),
    yaml(Code::AG123, "unknown-default-branch", "$H
entrypoints: [a]
nodes:
  a:
    type: decision
    title: A
    description: $D
    decision:
      branches:
        - {label: large, description: Large.}
        - {label: small, description: Small.}
      default_branch: medium
"),
    yaml(Code::AG124, "duplicate-branch-labels", "$H
entrypoints: [a]
nodes:
  a:
    type: decision
    title: A
    description: $D
    decision:
      branches:
        - {label: large, description: Large.}
        - {label: large, description: Also large.}
"),
    yaml(Code::AG131, "recursive-fragment", "$H
entrypoints: [a]
nodes:
  a:
    type: subgraph
    title: A
    description: $D
    subgraph: {use: again}
subgraphs:
  again:
    entrypoints: [inner]
    nodes:
      inner:
        type: subgraph
        title: Inner
        description: $D
        subgraph: {use: again}
"),
    yaml(Code::AG132, "unknown-fragment", "$H
entrypoints: [a]
nodes:
  a:
    type: subgraph
    title: A
    description: $D
    subgraph: {use: missing}
"),
    yaml(Code::AG133, "fragment-entrypoint-outside", "$H
entrypoints: [a]
nodes:
  a:
    type: subgraph
    title: A
    description: $D
    subgraph:
      inline:
        entrypoints: [inner, a]
        nodes:
          inner:
            title: Inner
            description: $D
"),
    yaml(Code::AG141, "tier-level-disagree", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    intelligence: {tier: standard, level: 4}
"),
    yaml(Code::AG142, "downward-escalation", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    intelligence: {tier: advanced, escalate_to: standard}
"),
    yaml(Code::AG151, "alternate-lacks-outputs", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    outputs:
      notes: {type: text, description: The notes.}
    failure:
      fallback:
        - {strategy: alternate_node, node: b}
  b:
    title: B
    description: $D
outputs:
  notes: {type: text, description: Notes., from: nodes.a.outputs.notes}
"),
    yaml(Code::AG152, "compensation-chain", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    failure: {compensation: b}
  b:
    title: B
    description: $D
    failure: {compensation: c}
  c:
    title: C
    description: $D
"),
    yaml(Code::AG153, "relax-unknown-criterion", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    success:
      criteria:
        - {id: notes_exist, kind: file_exists, description: Notes exist., path: NOTES.md}
    failure:
      fallback:
        - {strategy: relax_criteria, criteria: [notes_lint]}
"),
    // ---- layer 3 ----
    yaml(Code::AG201, "forward-read", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    inputs:
      notes: {type: text, description: The notes., from: nodes.b.outputs.notes}
  b:
    title: B
    description: $D
    depends_on: [a]
    outputs:
      notes: {type: text, description: The notes.}
"),
    yaml(Code::AG202, "fragment-reads-outside", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
  b:
    type: subgraph
    title: B
    description: $D
    depends_on: [a]
    subgraph:
      inline:
        entrypoints: [inner]
        nodes:
          inner:
            title: Inner
            description: $D
            when: \"nodes.a.status == 'succeeded'\"
"),
    yaml(Code::AG203, "undeclared-param", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    inputs:
      topic: {type: string, description: The topic., from: params.topic}
"),
    yaml(Code::AG204, "syntax-error", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    when: \"succeeded('a') &&\"
"),
    yaml(Code::AG204, "unknown-function", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    instructions: \"Started at ${{ now() }}.\"
"),
    yaml(Code::AG205, "secret-reference", "$H
secrets:
  - {name: token, description: The API token.}
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    instructions: \"Use ${{ secrets.token }}.\"
"),
    yaml(Code::AG206, "undeclared-output", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
  b:
    title: B
    description: $D
    depends_on: [a]
    inputs:
      notes: {type: text, description: The notes., from: nodes.a.outputs.notes}
"),
    yaml(Code::AG211, "interpolation-in-expression", "$H
params:
  go: {type: boolean, description: Whether to run.}
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    when: \"${{ params.go }}\"
"),
    // ---- AGS advisories ----
    yaml(Code::AG901, "depends-on-and-edge", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
  b:
    title: B
    description: $D
    depends_on: [a]
edges:
  - {from: a, to: b}
"),
    yaml(Code::AG902, "side-effects-without-success", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    requirements: {workspace: read_write}
"),
    yaml(Code::AG903, "unreachable-node", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
  b:
    title: B
    description: $D
"),
    yaml(Code::AG904, "output-never-read", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    outputs:
      notes: {type: text, description: The notes.}
"),
    yaml(Code::AG905, "frontier-without-rationale", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    intelligence: {tier: frontier}
"),
    yaml(Code::AG906, "judge-only-success", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    success:
      criteria:
        - {id: good, kind: llm_judge, description: The notes are good., rubric: Are the notes accurate?, samples: 3}
"),
    yaml(Code::AG907, "strict-without-seed", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    constraints: {determinism: strict}
"),
    yaml(Code::AG908, "no-cost-preview", "ags_version: \"1.0\"
kind: AgenticGraph
id: t
title: T
objective: Exercise one diagnostic code.
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
"),
    yaml(Code::AG909, "remote-ref-without-integrity", "$H
entrypoints: [a]
nodes:
  a:
    type: subgraph
    title: A
    description: $D
    subgraph:
      ref: {uri: \"https://example.org/child.agraph.yaml\"}
"),
    // ---- weft's authoring advice ----
    yaml(Code::WF901, "short-brief", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: Do the thing.
"),
    yaml(Code::WF902, "presence-only-criteria", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    intelligence: {tier: standard}
    outputs:
      notes: {type: text, description: The notes.}
    success:
      criteria:
        - {id: has_notes, kind: artifact_present, description: Notes exist., output: notes}
"),
    yaml(Code::WF903, "single-judge-before-fan-out", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    success:
      criteria:
        - {id: ok, kind: expression, description: Always., expr: \"true\"}
        - {id: good, kind: llm_judge, description: The plan is good., rubric: Is the plan sound?}
  b:
    title: B
    description: $D
    depends_on: [a]
  c:
    title: C
    description: $D
    depends_on: [a]
"),
    yaml(Code::WF904, "tier-inflation", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    intelligence: {tier: standard}
  b:
    title: B
    description: $D
    depends_on: [a]
  c:
    title: C
    description: $D
    depends_on: [b]
  d:
    title: D
    description: $D
    depends_on: [c]
"),
    yaml(Code::WF905, "minimal-asked-to-decide", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: Read the three proposals and decide which one the team should adopt first.
    intelligence: {tier: minimal}
"),
    yaml(Code::WF906, "depends-on-without-data", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    outputs:
      notes: {type: text, description: The notes.}
  b:
    title: B
    description: $D
    depends_on: [a]
    inputs:
      topic: {type: string, description: The topic., value: release}
outputs:
  notes: {type: text, description: Notes., from: nodes.a.outputs.notes}
"),
    yaml(Code::WF907, "external-criterion", "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    success:
      criteria:
        - {id: audit, kind: external, description: The auditor agrees., check: acme-audit}
"),
    yaml(Code::WF909, "ill-typed-expression", "$H
params:
  word: {type: string, description: A word., default: abc}
entrypoints: [a]
nodes:
  a:
    title: A
    description: $D
    when: \"params.word < 3\"
"),
    yaml(Code::WF908, "permissive-container", "$H
entrypoints: [a]
nodes:
  a:
    type: subgraph
    title: A
    description: $D
    requirements: {permissions: [\"shell:exec\"]}
    subgraph:
      inline:
        entrypoints: [inner]
        nodes:
          inner:
            title: Inner
            description: $D
"),
];

#[test]
fn every_case_produces_its_code_and_nothing_unrelated() {
    let mut failures = Vec::new();
    for case in CASES {
        let text = expand(case.text);
        let found = findings(case.format, &text);
        let mut problems = Vec::new();
        let hits: Vec<&Finding> = found.iter().filter(|f| f.code == case.code).collect();
        if hits.is_empty() {
            problems.push(format!("no {}", case.code));
        }
        for f in &hits {
            if f.severity != case.code.severity() {
                problems.push(format!(
                    "severity {} (catalogue: {})",
                    f.severity,
                    case.code.severity()
                ));
            }
            if f.line.is_none() || f.column.is_none() {
                problems.push("no line/column".to_string());
            }
            if f.help.as_deref().is_none_or(|h| h.trim().is_empty()) {
                problems.push("no help".to_string());
            }
        }
        for f in &found {
            if f.code != case.code && !case.also.contains(&f.code) {
                problems.push(format!("unrelated {}", f.code));
            }
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{} {}: {}\n{}",
                case.code,
                case.name,
                problems.join("; "),
                render(&found)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `validate_layers` (what a live run's new nodes are checked with) leaves out only the
/// advisory passes: on every case of the table, its errors are `validate`'s, and every
/// finding it has, `validate` has too.
#[test]
fn validation_without_advice_finds_the_same_errors_on_every_case() {
    for case in CASES {
        let text = expand(case.text);
        let loaded = load_str("case", &text, case.format, &Limits::default());
        let Some(doc) = loaded.document else {
            continue;
        };
        let keys = |found: &[Finding], errors_only: bool| -> Vec<(Code, String)> {
            found
                .iter()
                .filter(|f| !errors_only || f.severity == weft_ags::diagnostic::Severity::Error)
                .map(|f| (f.code, f.pointer.clone()))
                .collect()
        };
        let layers = validate::validate_layers(&doc.value);
        let all = validate::validate(&doc.value);
        let (name, code) = (case.name, case.code);
        assert_eq!(keys(&layers, true), keys(&all, true), "{code} {name}");
        let everything = keys(&all, false);
        for f in keys(&layers, false) {
            assert!(everything.contains(&f), "{code} {name}: {f:?}");
        }
    }
}

#[test]
fn the_table_covers_every_static_code() {
    let missing: Vec<Code> = Code::ALL
        .iter()
        .copied()
        .filter(|c| !NOT_STATIC.contains(c))
        .filter(|c| !CASES.iter().any(|case| case.code == *c))
        .collect();
    assert!(
        missing.is_empty(),
        "codes without a case in tests/codes.rs: {missing:?}"
    );
    // The exceptions are real codes, and none of them is also in the table by mistake.
    for c in NOT_STATIC {
        assert!(Code::ALL.contains(c));
        assert!(
            !CASES.iter().any(|case| case.code == *c),
            "{c} is documented as not static"
        );
    }
}

#[test]
fn case_names_are_unique() {
    let mut seen = std::collections::HashSet::new();
    for case in CASES {
        assert!(
            seen.insert((case.code, case.name)),
            "duplicate case {} {}",
            case.code,
            case.name
        );
    }
}

#[test]
fn briefs_and_tiers_are_not_advice_for_steps_that_call_no_model() {
    // A command step and an expression decision with two-word briefs, four nodes, none at
    // the minimal tier: neither WF901 nor WF904 applies, since no model reads the brief.
    let text = expand(
        "$H
entrypoints: [a]
nodes:
  a:
    title: A
    description: Run it.
    x-weft-exec: {run: \"true\"}
  b:
    title: B
    description: Run it.
    depends_on: [a]
    x-weft-exec: {run: \"true\"}
  c:
    title: C
    description: Run it.
    depends_on: [b]
    x-weft-exec: {run: \"true\"}
  d:
    type: decision
    title: D
    description: Pick one.
    depends_on: [c]
    decision:
      evaluator: expression
      branches:
        - {label: yes, description: Always., when: \"true\"}
",
    );
    let found = findings(Format::Yaml, &text);
    assert!(
        !found
            .iter()
            .any(|f| f.code == Code::WF901 || f.code == Code::WF904),
        "{}",
        render(&found)
    );
}
