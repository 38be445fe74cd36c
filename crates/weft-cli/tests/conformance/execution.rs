//! Levels 1 and 2 (execution), through the real `weft` binary on real SQLite stores: the
//! integration guide's tests (DIGEST §6.11: the shipped `minimal` example end to end,
//! determinism twice, `max_node_executions: 3` ends `partial`, RT011 before any token) and
//! scenarios that use every construct of the level table (§3), people included. Each check
//! returns `Err(why)` instead of panicking, so the result file lists what failed.

use std::path::Path;

use assert_cmd::Command;
use serde_json::{Value, json};

use super::shared;

pub(super) type Check = Result<(), String>;

/// Fails the check with a message unless `cond`.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

pub(super) struct Out {
    pub(super) code: i32,
    pub(super) stdout: String,
    pub(super) stderr: String,
}

impl Out {
    pub(super) fn json(&self) -> Result<Value, String> {
        serde_json::from_str(&self.stdout)
            .map_err(|e| format!("not JSON ({e}): {}{}", self.stdout, self.stderr))
    }
}

pub(super) fn weft(dir: &Path, args: &[&str]) -> Result<Out, String> {
    let out = Command::cargo_bin("weft")
        .map_err(|e| e.to_string())?
        .current_dir(dir)
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    Ok(Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// `weft ARGS --json`, expecting exit `code`; the report.
pub(super) fn run_json(dir: &Path, args: &[&str], code: i32) -> Result<Value, String> {
    let mut all = args.to_vec();
    all.push("--json");
    let out = weft(dir, &all)?;
    ensure!(
        out.code == code,
        "`weft {}` exited {} (expected {code}): {}{}",
        all.join(" "),
        out.code,
        out.stdout,
        out.stderr
    );
    out.json()
}

/// The run record of `run`, checked against the AGS run-record schema.
pub(super) fn record(dir: &Path, run: &str) -> Result<Value, String> {
    let out = weft(dir, &["record", run])?;
    ensure!(out.code == 0, "weft record {run}: {}", out.stderr);
    let record = out.json()?;
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(shared().join("schema/agentic-graph-run-1.0.schema.json"))
            .map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&schema)
        .map_err(|e| e.to_string())?;
    let errors: Vec<String> = validator
        .iter_errors(&record)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    ensure!(errors.is_empty(), "record of {run} is invalid: {errors:?}");
    Ok(record)
}

pub(super) fn node<'a>(record: &'a Value, id: &str) -> Result<&'a Value, String> {
    record["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["node_id"] == id))
        .ok_or_else(|| format!("no node {id} in the record"))
}

pub(super) fn project(files: &[(&str, &str)]) -> Result<tempfile::TempDir, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).map_err(|e| e.to_string())?;
    }
    Ok(dir)
}

fn example(name: &str) -> Result<String, String> {
    let ours = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    let path = if ours.is_file() {
        ours
    } else {
        shared().join("examples").join(name)
    };
    std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
}

pub(super) fn run_id(report: &Value) -> Result<String, String> {
    report["run_id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("no run_id in {report}"))
}

// ---- level 1 ---------------------------------------------------------------------------

/// The model turns of `minimal`'s one model node, as recorded. Replay plays turns, it does
/// not redo their effects: the workspace holds the guide the recorded session wrote.
fn minimal_cassette(tiers: &[&str]) -> String {
    let models: Vec<Value> = tiers
        .iter()
        .map(|t| json!({"tier": t, "model": format!("recorded-{t}"), "provider": "cassette"}))
        .collect();
    json!({
        "format": "weft-cassette/1",
        "models": models,
        "nodes": {"draft_contributing": {"attempts": [{"turns": [
            {"content": "Reading the layout.", "tool_calls": [{"name": "file_search",
                "arguments": {"pattern": "**/*.md"}, "result": "README.md"}],
             "usage": {"input_tokens": 900, "output_tokens": 40, "cost_usd": 0.002}},
            {"content": "Writing the guide.", "tool_calls": [{"name": "file_write",
                "arguments": {"path": "CONTRIBUTING.md", "content": "…"}, "result": "ok"}],
             "usage": {"input_tokens": 1400, "output_tokens": 700, "cost_usd": 0.009}},
            {"content": "Done.", "tool_calls": [{"name": "emit_output",
                "arguments": {"contributing": "CONTRIBUTING.md"}}],
             "usage": {"input_tokens": 1500, "output_tokens": 20, "cost_usd": 0.003}}
        ]}]}}
    })
    .to_string()
}

const GUIDE: &str = "# Contributing\n\nThis guide covers setting the project up, running the tests, the branch and commit conventions, and opening a pull request.\n\nSet the project up with `cargo build`. Run `cargo test` before you open a pull request. Branches are named after their issue; commit messages say what changed and why. Open the pull request against main and ask for one review.\n\nKeep changes small. Every change comes with its test. Formatting is `cargo fmt`; lints are `cargo clippy -- -D warnings`. Documentation lives in docs/ and is updated with the code it describes. Releases are cut from main by the maintainers, who also triage issues weekly and label them.\n";

/// The shipped `minimal` example end to end: the model node replayed at its tier, the gate
/// waits (exit 3), a maintainer approves with identity and role, the resume finishes it.
fn minimal_end_to_end() -> Check {
    let doc = std::fs::read_to_string(shared().join("examples/minimal.agraph.yaml"))
        .map_err(|e| e.to_string())?;
    let cassette = minimal_cassette(&["minimal", "standard"]);
    let dir = project(&[
        ("minimal.agraph.yaml", &doc),
        ("c.json", &cassette),
        ("CONTRIBUTING.md", GUIDE),
    ])?;
    let d = dir.path();
    let waiting = run_json(
        d,
        &["run", "minimal.agraph.yaml", "--cassette", "c.json"],
        3,
    )?;
    ensure!(waiting["status"] == "awaiting_human", "{waiting}");
    let run = run_id(&waiting)?;
    let approve = weft(
        d,
        &[
            "approve",
            &run,
            "maintainer_approval",
            "--as",
            "alice",
            "--role",
            "maintainer",
        ],
    )?;
    ensure!(approve.code == 0, "approve: {}", approve.stderr);
    let done = run_json(d, &["resume", &run], 0)?;
    ensure!(done["status"] == "succeeded", "{done}");
    let rec = record(d, &run)?;
    ensure!(rec["status"] == "succeeded", "{rec}");
    let draft = node(&rec, "draft_contributing")?;
    ensure!(
        draft["attempts"][0]["routed"]["effective_tier"] == "standard",
        "routed: {draft}"
    );
    let gate = node(&rec, "maintainer_approval")?;
    ensure!(
        gate["human_events"][0]["actor"] == "alice"
            && gate["human_events"][0]["outcome"] == "approved",
        "human events: {gate}"
    );
    ensure!(
        rec["outputs"]["contributing_guide"] == "CONTRIBUTING.md",
        "{}",
        rec["outputs"]
    );
    Ok(())
}

/// RT011 before any token: only a small model exists, the node asks for `standard`.
fn rt011_before_any_token() -> Check {
    let doc = std::fs::read_to_string(shared().join("examples/minimal.agraph.yaml"))
        .map_err(|e| e.to_string())?;
    let dir = project(&[
        ("minimal.agraph.yaml", &doc),
        ("c.json", &minimal_cassette(&["minimal"])),
    ])?;
    let d = dir.path();
    let refused = run_json(
        d,
        &["run", "minimal.agraph.yaml", "--cassette", "c.json"],
        1,
    )?;
    ensure!(refused["status"] == "refused", "{refused}");
    ensure!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("RT011")),
        "{refused}"
    );
    let runs = weft(d, &["runs", "--json"])?;
    ensure!(
        runs.code != 0 || runs.json()?["runs"].as_array().is_none_or(Vec::is_empty),
        "a refused run was created: {}",
        runs.stdout
    );
    Ok(())
}

/// Node ids in `node_started` order from a `--jsonl` stream.
fn start_order(jsonl: &str) -> Vec<String> {
    jsonl
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["kind"] == "node_started")
        .map(|e| {
            e["payload"]["node"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// Sequential determinism: two runs with `max_parallel_nodes` 1 start nodes in the same,
/// normative order.
fn deterministic_twice() -> Check {
    let doc = example("incident-triage.agraph.yaml")?;
    let dir = project(&[("g.agraph.yaml", &doc)])?;
    let d = dir.path();
    let mut orders = Vec::new();
    for _ in 0..2 {
        let out = weft(
            d,
            &["run", "g.agraph.yaml", "--max-parallel", "1", "--jsonl"],
        )?;
        ensure!(out.code == 0, "run: {}", out.stderr);
        orders.push(start_order(&out.stdout));
    }
    ensure!(orders[0].len() > 10, "{:?}", orders[0]);
    ensure!(orders[0] == orders[1], "{:?} vs {:?}", orders[0], orders[1]);
    Ok(())
}

/// Level 1's surface on command steps: inputs by `from`, `value`, `default` and implicit
/// binding; criteria `command`, `file_exists`, `artifact_present` and `human`; retry and
/// `on_exhausted`; checkpoints at `before_start` and `after_outputs`.
const LEVEL1: &str = r#"
ags_version: "1.0"
kind: AgenticGraph
id: conformance/level-1
title: Level 1 surface
objective: Exercise every level-1 construct with command steps and a person.
params:
  channel: {type: string, description: Where to post., default: releases}
entrypoints: [prepare]
nodes:
  prepare:
    title: Prepare
    description: Compose the message from its inputs and write it to out/message.txt.
    inputs:
      greeting: {type: string, description: Fixed., value: hello}
      name: {type: string, description: Defaulted., required: false, default: world}
      channel: {type: string, description: Implicit from params.}
    human:
      - {id: go, at: before_start, mode: approve, prompt: "Prepare the message?"}
    x-weft-exec:
      run: "mkdir -p out && python3 -c 'import json,sys; i=json.load(sys.stdin); m=i[\"greeting\"]+\" \"+i[\"name\"]+\" on \"+i[\"channel\"]; open(\"out/message.txt\",\"w\").write(m); print(json.dumps({\"message\": m}))'"
    outputs:
      message: {type: string, description: The message.}
    success:
      criteria:
        - {id: written, kind: file_exists, description: The file exists., path: out/message.txt}
        - {id: produced, kind: artifact_present, description: The message exists., output: message}
        - {id: readable, kind: command, description: The file reads back., run: "grep -q hello out/message.txt"}
  post:
    title: Post
    description: Post the message; the first attempt fails, the retry succeeds.
    depends_on: [prepare]
    inputs:
      message: {type: string, description: What to post., from: nodes.prepare.outputs.message}
    failure:
      retry: {max_attempts: 2, retry_on: [tool_error], backoff: none}
    human:
      - {id: check, at: after_outputs, mode: approve, prompt: "Posted ${{ self.outputs.receipt }}; accept?"}
    x-weft-exec:
      run: "if grep -q feedback; then echo '{\"receipt\": \"r-1\"}'; else exit 1; fi"
    outputs:
      receipt: {type: string, description: The receipt.}
    success:
      criteria:
        - {id: seen, kind: human, description: A person saw the post., prompt: "Saw ${{ self.outputs.receipt }}?"}
  optional_step:
    title: Optional
    description: Always fails; skipped when its retries are exhausted.
    depends_on: [prepare]
    failure:
      retry: {max_attempts: 2, retry_on: [tool_error], backoff: none}
      on_exhausted: skip
    x-weft-exec: {run: "exit 1"}
outputs:
  receipt: {type: string, description: The receipt., from: nodes.post.outputs.receipt}
"#;

/// Approves whatever `node` waits for, then resumes; returns the resume's report.
fn approve_and_resume(d: &Path, run: &str, node: &str, expect: i32) -> Result<Value, String> {
    let a = weft(d, &["approve", run, node, "--as", "carol"])?;
    ensure!(a.code == 0, "approve {node}: {}{}", a.stdout, a.stderr);
    run_json(d, &["resume", run], expect)
}

fn level1_surface() -> Check {
    let dir = project(&[("g.agraph.yaml", LEVEL1)])?;
    let d = dir.path();
    let first = run_json(d, &["run", "g.agraph.yaml", "--max-parallel", "1"], 3)?;
    let run = run_id(&first)?;
    ensure!(
        !d.join("out/message.txt").exists(),
        "before_start must hold the command"
    );
    // before_start of prepare, after_outputs of post, then post's human criterion.
    let r = approve_and_resume(d, &run, "prepare", 3)?;
    let r = match r["status"].as_str() {
        Some("awaiting_human") => approve_and_resume(d, &run, "post", 3)?,
        _ => r,
    };
    let r = match r["status"].as_str() {
        Some("awaiting_human") => approve_and_resume(d, &run, "post", 0)?,
        _ => r,
    };
    ensure!(r["status"] == "succeeded", "{r}");
    let rec = record(d, &run)?;
    let prepare = node(&rec, "prepare")?;
    ensure!(
        prepare["inputs"] == json!({"greeting": "hello", "name": "world", "channel": "releases"}),
        "inputs: {}",
        prepare["inputs"]
    );
    let post = node(&rec, "post")?;
    ensure!(
        post["attempts"].as_array().map(Vec::len) == Some(2),
        "{post}"
    );
    ensure!(
        post["human_events"].as_array().map(Vec::len) == Some(2),
        "after_outputs and the human criterion: {post}"
    );
    ensure!(
        node(&rec, "optional_step")?["status"] == "skipped",
        "on_exhausted: skip"
    );
    ensure!(rec["outputs"]["receipt"] == "r-1", "{}", rec["outputs"]);
    Ok(())
}

/// The level-1 token: every check above.
pub fn level1() -> Vec<(&'static str, Check)> {
    vec![
        ("minimal end to end", minimal_end_to_end()),
        ("RT011 before any token", rt011_before_any_token()),
        ("determinism, run twice", deterministic_twice()),
        ("level-1 surface", level1_surface()),
    ]
}

// ---- level 2 ---------------------------------------------------------------------------

/// Decisions by expression, conditional and on_failure edges, `when`, `join: any` and
/// `n_of`, criteria `expression`/`regex`/`json_schema`, real parallelism, fallbacks.
fn incident_triage() -> Check {
    let dir = project(&[("g.agraph.yaml", &example("incident-triage.agraph.yaml")?)])?;
    let d = dir.path();
    let report = run_json(d, &["run", "g.agraph.yaml"], 0)?;
    let rec = record(d, &run_id(&report)?)?;
    ensure!(rec["outputs"]["routed_to"] == "page", "{}", rec["outputs"]);
    ensure!(
        node(&rec, "queue_ticket")?["status"] == "skipped",
        "conditional edge"
    );
    ensure!(
        node(&rec, "note_missing_deploys")?["status"] == "succeeded",
        "on_failure"
    );
    ensure!(
        node(&rec, "diagnose")?["status"] == "succeeded",
        "join n_of"
    );
    ensure!(node(&rec, "routed")?["status"] == "succeeded", "join any");
    Ok(())
}

/// A decision made by a (replayed) model, routed at its tier.
fn decision_by_agent() -> Check {
    let dir = project(&[
        (
            "g.agraph.yaml",
            &example("replay-release-notes.agraph.yaml")?,
        ),
        ("c.json", &example("replay-release-notes.cassette.json")?),
    ])?;
    let d = dir.path();
    let report = run_json(d, &["run", "g.agraph.yaml", "--cassette", "c.json"], 0)?;
    let rec = record(d, &run_id(&report)?)?;
    let review = node(&rec, "review")?;
    ensure!(review["outputs"]["decision"] == "publish", "{review}");
    Ok(())
}

/// The integration guide's budget test: `max_node_executions: 3` on a five-step chain ends
/// `partial`, with RT061, not an error.
fn max_node_executions_partial() -> Check {
    let mut nodes = serde_json::Map::new();
    for i in 0..5 {
        let mut n = json!({"title": format!("S{i}"), "description": "A step.",
            "x-weft-exec": {"run": "true"}});
        if i > 0 {
            n["depends_on"] = json!([format!("s{}", i - 1)]);
        }
        nodes.insert(format!("s{i}"), n);
    }
    let doc = json!({"ags_version": "1.0", "kind": "AgenticGraph", "id": "conformance/budget",
        "title": "Budget", "objective": "Stop at three executions.",
        "constraints": {"max_node_executions": 3}, "entrypoints": ["s0"], "nodes": nodes});
    let dir = project(&[("g.agraph.json", &doc.to_string())])?;
    let d = dir.path();
    let report = run_json(d, &["run", "g.agraph.json"], 1)?;
    ensure!(report["status"] == "partial", "{report}");
    let rec = record(d, &run_id(&report)?)?;
    ensure!(rec["usage"]["node_executions"] == 3, "{}", rec["usage"]);
    ensure!(
        rec["diagnostics"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x["code"] == "RT061")),
        "RT061: {}",
        rec["diagnostics"]
    );
    Ok(())
}

/// People at level 2: `before_side_effects`, a gate's `on_reject: route`, and an
/// escalation to a person that approves (succeeded degraded, run `partial`).
const PEOPLE: &str = r#"
ags_version: "1.0"
kind: AgenticGraph
id: conformance/people
title: People at level 2
objective: Exercise the level-2 human stages.
entrypoints: [deploy]
nodes:
  deploy:
    title: Deploy
    description: Write the deployment marker; a person confirms before the side effect.
    requirements:
      permissions: ["fs:write:out/**"]
    human:
      - {id: confirm, at: before_side_effects, mode: approve, prompt: "Deploy now?"}
    x-weft-exec: {run: "mkdir -p out && touch out/deployed"}
  review:
    type: gate
    title: Review
    description: A person reviews the deployment.
    depends_on: [deploy]
    gate: {mode: approve, prompt: "Keep the deployment?", on_reject: route}
  keep:
    title: Keep
    description: Keep it.
    x-weft-exec: {run: "true"}
  roll_back:
    title: Roll back
    description: Roll back; this step fails and escalates to a person.
    failure:
      retry: {max_attempts: 1}
      on_exhausted: escalate
      escalation: {to: human, roles: [operator]}
    x-weft-exec: {run: "exit 1"}
edges:
  - {from: review, to: keep, kind: conditional, when: 'nodes.review.decision == "approved"'}
  - {from: review, to: roll_back, kind: conditional, when: 'nodes.review.decision == "rejected"'}
"#;

fn people() -> Check {
    let dir = project(&[("g.agraph.yaml", PEOPLE)])?;
    let d = dir.path();
    let first = run_json(d, &["run", "g.agraph.yaml"], 3)?;
    let run = run_id(&first)?;
    ensure!(
        !d.join("out/deployed").exists(),
        "before_side_effects must hold"
    );
    let r = approve_and_resume(d, &run, "deploy", 3)?;
    ensure!(d.join("out/deployed").exists(), "approved: deployed");
    let reject = weft(
        d,
        &[
            "reject",
            &run,
            "review",
            "--as",
            "dana",
            "--note",
            "roll back",
        ],
    )?;
    ensure!(
        reject.code == 0,
        "reject: {}{}",
        reject.stdout,
        reject.stderr
    );
    let r2 = run_json(d, &["resume", &run], 3)?;
    ensure!(r["status"] == "awaiting_human", "{r}");
    let done = approve_and_resume(d, &run, "roll_back", 1)?;
    ensure!(done["status"] == "partial", "{r2} then {done}");
    let rec = record(d, &run)?;
    ensure!(
        node(&rec, "keep")?["status"] == "skipped",
        "on_reject: route"
    );
    ensure!(
        node(&rec, "review")?["outputs"]["decision"] == "rejected",
        "the rejection routes"
    );
    ensure!(
        node(&rec, "roll_back")?["status"] == "succeeded",
        "escalation approved"
    );
    ensure!(
        rec["diagnostics"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x["code"] == "RT042")),
        "succeeded degraded: {}",
        rec["diagnostics"]
    );
    Ok(())
}

/// Graph policy switches: `on_expression_error: false` (RT062, the run goes on),
/// `on_node_failure: halt`, `on_unknown_field: warn`, the human-timeout fallbacks.
fn policies() -> Check {
    let base = |policy: Value, nodes: Value| {
        json!({"ags_version": "1.0", "kind": "AgenticGraph", "id": "conformance/policy",
            "title": "Policy", "objective": "Exercise a policy switch.", "policy": policy,
            "entrypoints": ["a"], "nodes": nodes})
        .to_string()
    };
    // on_expression_error: false — a `when` that errors is false, recorded as RT062.
    let doc = base(
        json!({"on_expression_error": "false"}),
        json!({"a": {"title": "A", "description": "A step.",
                     "x-weft-exec": {"run": "echo '{\"n\": \"text\"}'"},
                     "outputs": {"n": {"type": "any", "description": "Not a number."}}},
               "b": {"title": "B", "description": "Guarded.", "depends_on": ["a"],
                     "when": "nodes.a.outputs.n > 1", "x-weft-exec": {"run": "true"}}}),
    );
    let dir = project(&[("g.agraph.json", &doc)])?;
    let report = run_json(dir.path(), &["run", "g.agraph.json"], 0)?;
    let rec = record(dir.path(), &run_id(&report)?)?;
    ensure!(
        rec["diagnostics"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x["code"] == "RT062")),
        "RT062: {}",
        rec["diagnostics"]
    );
    // on_node_failure: halt — the first unabsorbed failure fails the run.
    let doc = base(
        json!({"on_node_failure": "halt"}),
        json!({"a": {"title": "A", "description": "Fails.", "x-weft-exec": {"run": "exit 1"}},
               "b": {"title": "B", "description": "Never runs.", "depends_on": ["a"],
                     "x-weft-exec": {"run": "true"}}}),
    );
    let dir = project(&[("g.agraph.json", &doc)])?;
    let report = run_json(dir.path(), &["run", "g.agraph.json"], 1)?;
    ensure!(report["status"] == "failed", "halt: {report}");
    // on_unknown_field: warn — an unknown field is a warning and the run goes on.
    let doc = base(
        json!({"on_unknown_field": "warn"}),
        json!({"a": {"title": "A", "description": "A step.", "retires": 3,
                     "x-weft-exec": {"run": "true"}}}),
    );
    let dir = project(&[("g.agraph.json", &doc)])?;
    let report = run_json(dir.path(), &["run", "g.agraph.json"], 0)?;
    ensure!(report["status"] == "succeeded", "warn: {report}");
    // default_human_timeout_seconds + on_human_timeout: fail — a gate nobody answers fails.
    let doc = base(
        json!({"default_human_timeout_seconds": 1, "on_human_timeout": "fail"}),
        json!({"a": {"type": "gate", "title": "A", "description": "Nobody answers.",
                     "gate": {"mode": "approve", "prompt": "Anyone?"}}}),
    );
    let dir = project(&[("g.agraph.json", &doc)])?;
    let waiting = run_json(dir.path(), &["run", "g.agraph.json"], 3)?;
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let done = run_json(dir.path(), &["resume", &run_id(&waiting)?], 1)?;
    let rec = record(dir.path(), &run_id(&waiting)?)?;
    ensure!(node(&rec, "a")?["status"] == "failed", "timeout: {done}");
    Ok(())
}

/// The level-2 token: every check above.
pub fn level2() -> Vec<(&'static str, Check)> {
    vec![
        ("incident triage", incident_triage()),
        ("decision by agent", decision_by_agent()),
        (
            "max_node_executions 3 ends partial",
            max_node_executions_partial(),
        ),
        ("people at level 2", people()),
        ("policy switches", policies()),
    ]
}
