//! `weft routing explain` through the real binary: each model call's tier request and the
//! model of each attempt (escalation per retry, judges, routing up, downgrade), RT011 with
//! exit 1, bad input with exit 2, and the JSON form.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use assert_cmd::Command;
use serde_json::Value;

const PROFILE: &str = r#"
[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:1"

[tiers.minimal]
provider = "local"
model = "small"
context_tokens = 4096

[tiers.advanced]
provider = "local"
model = "big"
context_tokens = 128000
"#;

const GRAPH: &str = r#"
ags_version: "1.0"
kind: AgenticGraph
id: routing-test
title: Routing test
objective: Draft notes, check them, review them.
constraints: {max_cost_usd: 1.0}
entrypoints: [draft]
defaults:
  intelligence:
    tier: standard
nodes:
  draft:
    title: Draft
    description: Draft the notes.
    intelligence:
      tier: minimal
    failure:
      retry:
        max_attempts: 6
        escalate_intelligence: true
    outputs:
      notes: {type: string, description: The notes.}
    success:
      criteria:
        - id: clear
          kind: llm_judge
          description: The notes are clear.
          rubric: Are the notes clear?
          inputs: [self.outputs.notes]
          judge_intelligence: {tier: advanced}
  check:
    title: Check
    depends_on: [draft]
    description: Check the notes mechanically.
    x-weft-exec: {run: "true"}
  review:
    title: Review
    depends_on: [check]
    description: Review the notes.
    outputs:
      verdict: {type: string, description: The verdict.}
outputs:
  verdict: {type: string, description: The verdict., from: nodes.review.outputs.verdict}
"#;

fn explain(graph: &str, profile: &str, extra: &[&str]) -> assert_cmd::assert::Assert {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("g.agraph.yaml"), graph).unwrap();
    std::fs::write(dir.path().join("weft.toml"), profile).unwrap();
    Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .args(["routing", "explain", "g.agraph.yaml"])
        .args(extra)
        .assert()
}

fn stdout(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(a.get_output().stdout.clone()).unwrap()
}

#[test]
fn every_model_call_and_each_attempt_is_explained() {
    let out = explain(GRAPH, PROFILE, &[]).success();
    let text = stdout(&out);
    assert!(
        text.contains("draft (node): tier minimal (from intelligence after defaults), allow_downgrade no, escalate_intelligence one tier per retry, max_attempts 6"),
        "{text}"
    );
    assert!(
        text.contains("  attempt 1: local `small` at minimal"),
        "{text}"
    );
    // standard is not served: attempt 2 escalates to standard and routes up to advanced.
    assert!(
        text.contains("  attempt 2: local `big` at advanced — attempt 2: escalate_intelligence targets `standard`, not served; routed up to `advanced`"),
        "{text}"
    );
    assert!(text.contains("  attempts 5..6: as attempt 4"), "{text}");
    assert!(
        text.contains("draft/judge/clear (judge): tier advanced (from judge_intelligence)"),
        "{text}"
    );
    // `review` inherits `standard` from defaults and is routed up; `check` calls no model.
    assert!(
        text.contains("tier `standard` is not served; routed up to `advanced`"),
        "{text}"
    );
    assert!(!text.contains("check ("), "{text}");
}

#[test]
fn json_lists_the_routes_of_each_call() {
    let out = explain(GRAPH, PROFILE, &["--json"]).success();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["routable"], true);
    let keys: Vec<&str> = v["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["draft", "draft/judge/clear", "review"]);
    let draft = &v["calls"][0];
    let models: Vec<&str> = draft["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["route"]["model"].as_str().unwrap())
        .collect();
    assert_eq!(models, ["small", "big", "big", "big"]);
    assert_eq!(draft["max_attempts"], 6);
    assert_eq!(draft["attempts"][0]["route"]["requested_tier"], "minimal");
}

#[test]
fn an_unroutable_tier_is_rt011_and_exit_1() {
    let graph = GRAPH.replace("tier: advanced}", "tier: frontier}");
    let out = explain(&graph, PROFILE, &[]).code(1);
    let text = stdout(&out);
    assert!(
        text.contains("draft/judge/clear (judge): tier frontier"),
        "{text}"
    );
    assert!(
        text.contains("attempt 1: refused — RT011: tier `frontier` cannot be met"),
        "{text}"
    );
}

#[test]
fn a_downgrade_is_shown_when_the_node_allows_it() {
    let graph = GRAPH.replace("tier: advanced}", "tier: frontier, allow_downgrade: true}");
    let out = explain(&graph, PROFILE, &["--json"]).success();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let judge = &v["calls"][1]["attempts"][0];
    assert_eq!(judge["route"]["downgraded"], true);
    assert_eq!(judge["route"]["model"], "big");
}

#[test]
fn bad_input_is_exit_2() {
    explain(GRAPH, "[tiers.minimal]\nprovider = \"nowhere\"\n", &[]).code(2);
    explain("nodes: [", PROFILE, &[]).code(2);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("g.agraph.yaml"), GRAPH).unwrap();
    Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .args([
            "routing",
            "explain",
            "g.agraph.yaml",
            "--config",
            "missing.toml",
        ])
        .assert()
        .code(2);
}
