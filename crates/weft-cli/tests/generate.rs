//! `weft generate` through the real binary against the loopback model server (the named
//! test double `weft_test_support::loopback`), scripted to
//! draft a graph whose second node reads an output that does not exist, then to fix it once
//! the finding is fed back: the feedback carried the finding (code, pointer, help) and the
//! file written validates under `--strict`. When the rounds run out, the draft is written as
//! `*.draft.yaml` and the command exits 1; bad input exits 2.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use std::path::Path;

use serde_json::{Value, json};
use weft_test_support::loopback::{Loopback, Reply};

/// An OpenAI answer calling `name` with `arguments`.
fn call(name: &str, arguments: Value) -> Reply {
    Reply::json(
        200,
        json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": name, "arguments": arguments.to_string()}}]}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20},
        })
        .to_string(),
    )
}

fn skeleton() -> Reply {
    call(
        "draft_skeleton",
        json!({"id": "release-notes", "title": "Release notes",
        "description": "Collect the merged changes, then write the notes.", "max_cost_usd": 1.0,
        "nodes": [
            {"id": "collect", "type": "task", "title": "Collect changes"},
            {"id": "write", "type": "task", "title": "Write notes", "depends_on": ["collect"]}
        ]}),
    )
}

fn collect() -> Reply {
    call(
        "draft_node",
        json!({"title": "Collect changes",
            "description": "List the changes merged since the last release tag, one line each.",
            "intelligence": {"tier": "minimal"},
            "outputs": {"changes": {"type": "string", "description": "The changes one per line."}}}),
    )
}

/// The `write` node reading `from`.
fn write(from: &str) -> Reply {
    call(
        "draft_node",
        json!({"title": "Write notes",
            "description": "Write release notes from the list of changes, grouped by kind.",
            "inputs": {"changes": {"type": "string", "description": "The changes.", "from": from}},
            "outputs": {"notes": {"type": "markdown", "description": "The release notes."}}}),
    )
}

const PROFILE: &str = "[providers.loop]\nkind = \"openai\"\nbase_url = \"BASE\"\nmax_attempts = 1\n\n[tiers.standard]\nprovider = \"loop\"\nmodel = \"drafter\"\n";

struct Outcome {
    code: i32,
    stderr: String,
    requests: Vec<Value>,
    dir: tempfile::TempDir,
}

/// Runs `weft generate` in a fresh directory against a loopback server answering `replies`.
fn generate(replies: Vec<Reply>, extra: &[&str]) -> Outcome {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(Loopback::start(replies));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("weft.toml"),
        PROFILE.replace("BASE", &server.base_url),
    )
    .unwrap();
    let out = assert_cmd::Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .args([
            "generate",
            "Write release notes for the next version.",
            "--out",
            "plan.agraph.yaml",
        ])
        .args(extra)
        .output()
        .unwrap();
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        requests: server.requests().iter().map(|r| r.json()).collect(),
        dir,
    }
}

/// The user message of a recorded chat request.
fn prompt(request: &Value) -> String {
    request["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn validate_strict(file: &Path) -> assert_cmd::assert::Assert {
    assert_cmd::Command::cargo_bin("weft")
        .unwrap()
        .args(["validate", "--strict"])
        .arg(file)
        .assert()
}

#[test]
fn findings_are_fed_back_until_the_graph_is_clean_then_it_is_written() {
    let o = generate(
        vec![
            skeleton(),
            collect(),
            write("nodes.collect.outputs.change"),
            write("nodes.collect.outputs.changes"),
        ],
        &[],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.requests.len(), 4);
    // Every call is a forced tool call.
    for r in &o.requests {
        assert_eq!(r["tool_choice"]["type"], "function", "{r}");
    }
    assert_eq!(
        o.requests[0]["tool_choice"]["function"]["name"],
        "draft_skeleton"
    );
    // The repair call carried the finding: code, pointer, message and help.
    let feedback = prompt(&o.requests[3]);
    assert!(
        feedback.contains("- AG206 at /nodes/write/inputs/changes/from: node 'collect' does not declare output 'change' (help: did you mean 'changes'?)"),
        "{feedback}"
    );
    assert!(
        feedback.contains("nodes.collect.outputs.change\""),
        "{feedback}"
    );
    // The node draft saw the upstream outputs.
    assert!(
        prompt(&o.requests[2]).contains("- nodes.collect.outputs.changes (string)"),
        "{}",
        prompt(&o.requests[2])
    );
    let file = o.dir.path().join("plan.agraph.yaml");
    validate_strict(&file).success();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("objective: Write release notes for the next version."),
        "{text}"
    );
    assert!(!o.dir.path().join("plan.draft.yaml").exists());
}

#[test]
fn when_the_rounds_are_spent_the_draft_is_written_and_the_findings_printed() {
    let bad = "nodes.collect.outputs.change";
    let o = generate(
        vec![skeleton(), collect(), write(bad), write(bad)],
        &["--max-rounds", "1"],
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("not clean after 1 repair round(s): 1 finding(s) remain"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("AG206"), "{}", o.stderr);
    assert!(!o.dir.path().join("plan.agraph.yaml").exists());
    let draft = o.dir.path().join("plan.draft.yaml");
    validate_strict(&draft).code(1);
}

#[test]
fn bad_input_exits_2_before_any_model_call() {
    let o = generate(vec![], &["--tier", "galactic"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.requests.is_empty());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plan.agraph.yaml"), "x: 1\n").unwrap();
    std::fs::write(dir.path().join("weft.toml"), PROFILE).unwrap();
    let out = assert_cmd::Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .args(["generate", "anything", "--out", "plan.agraph.yaml"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("--force"), "{stderr}");
}
