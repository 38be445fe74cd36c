//! A hostile model provider, through `weft run --config` as a user runs it: the loopback
//! OpenAI-compatible double (`provider/`, the exact wire format) answers with what a broken
//! or adversarial server sends — a `retry-after` too large for any clock, an answer larger
//! than the cap, token counts that would wrap the run's totals or are missing, a label
//! outside a decision's branches, tool calls the policy refuses — and every scenario
//! asserts the run's final status, the node's failure class and evidence, the log, the
//! audit trail and the record's usage (`docs/agents.md`, "A hostile provider").
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use weft_test_support::scripted as provider;

use std::path::Path;

use provider::{Answer, scripted, scripted_provider, text_answer, tool_call, tool_call_with_usage};
use serde_json::{Value, json};

fn weft() -> std::process::Command {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("weft"))
}

/// `weft.toml` for the double on `port`, one send per request (no transport retries), plus
/// `extra` lines in the provider's table.
fn profile(port: u16, extra: &str) -> String {
    format!(
        "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}\"\nmax_attempts = 1\n{extra}\n\
         [tiers.standard]\nprovider = \"p\"\nmodel = \"mid\"\n\
         input_price_per_million = 1.0\noutput_price_per_million = 2.0\n"
    )
}

/// One model node `answer` with a string output, and `body` appended under it.
fn doc(node_extra: &str) -> String {
    format!(
        r#"ags_version: "1.0"
kind: AgenticGraph
id: t/hostile
title: A node on a hostile provider
objective: Answer in one sentence.
entrypoints: [answer]
nodes:
  answer:
    title: Answer
    description: Say what the service does, in one sentence.
    outputs:
      text:
        type: string
        description: The sentence.
{node_extra}"#
    )
}

struct Ran {
    report: Value,
    stderr: String,
    code: Option<i32>,
}

/// Runs `document` with `config` in `dir` (store `h.db`), `--json`.
fn run(dir: &Path, document: &str, config: &str) -> Ran {
    std::fs::write(dir.join("weft.toml"), config).unwrap();
    std::fs::write(dir.join("h.agraph.yaml"), document).unwrap();
    let out = weft()
        .current_dir(dir)
        .args([
            "run",
            "h.agraph.yaml",
            "--config",
            "weft.toml",
            "--db",
            "h.db",
            "--json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {stderr}"));
    assert!(
        !stderr.contains("panicked"),
        "weft must never panic on what a provider sends: {stderr}"
    );
    Ran {
        report,
        stderr,
        code: out.status.code(),
    }
}

fn record(dir: &Path, run_id: &str) -> Value {
    let out = weft()
        .current_dir(dir)
        .args(["record", run_id, "--db", "h.db"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "{} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn events(dir: &Path, run_id: &str) -> Vec<Value> {
    let out = weft()
        .current_dir(dir)
        .args(["events", run_id, "--db", "h.db"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn audit(dir: &Path, run_id: &str) -> Vec<Value> {
    std::fs::read_to_string(dir.join(format!("audit/{run_id}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The node failed, and so did the run (its only work): a final status, never `running`.
fn assert_failed(ran: &Ran) {
    assert_eq!(
        ran.report["nodes"][0]["state"], "failed",
        "{} {}",
        ran.report, ran.stderr
    );
    assert_ne!(ran.report["status"], "succeeded", "{}", ran.report);
    assert_ne!(ran.report["status"], "running", "{}", ran.report);
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
}

fn run_id(ran: &Ran) -> String {
    ran.report["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no run id: {} {}", ran.report, ran.stderr))
        .to_string()
}

/// The error of a node's last attempt in a record.
fn last_error(rec: &Value, node: usize) -> String {
    rec["nodes"][node]["attempts"]
        .as_array()
        .and_then(|a| a.last())
        .and_then(|a| a["error"].as_str())
        .unwrap_or_else(|| panic!("no error: {}", rec["nodes"][node]))
        .to_string()
}

#[test]
fn a_retry_after_too_large_for_a_clock_fails_the_node_and_the_run_ends_with_a_record() {
    let limited = Answer::Raw {
        status: 429,
        headers: vec![("retry-after".into(), "1e300".into())],
        body: r#"{"error":{"message":"slow down, forever"}}"#.into(),
    };
    let (port, seen) = scripted(vec![limited]);
    let dir = tempfile::tempdir().unwrap();
    let ran = run(dir.path(), &doc(""), &profile(port, ""));
    assert_failed(&ran);
    assert_eq!(seen.lock().unwrap().len(), 1, "no second send");
    let rec = record(dir.path(), &run_id(&ran));
    assert_eq!(rec["nodes"][0]["status"], "failed", "{rec}");
    let error = last_error(&rec, 0);
    assert!(
        error.starts_with("transient")
            && error.contains("longer than any clock")
            && error.contains("beyond"),
        "{error}"
    );
}

#[test]
fn an_answer_over_the_configured_cap_is_a_model_error_that_names_the_limit() {
    let huge = text_answer(
        &"A".repeat(200 * 1024),
        Some(json!({"prompt_tokens": 1, "completion_tokens": 1})),
    );
    let (port, _) = scripted_provider(vec![huge]);
    let dir = tempfile::tempdir().unwrap();
    let ran = run(
        dir.path(),
        &doc(""),
        &profile(port, "max_body_bytes = 65536"),
    );
    assert_failed(&ran);
    let rec = record(dir.path(), &run_id(&ran));
    let error = last_error(&rec, 0);
    assert!(
        error.starts_with("model_error")
            && error.contains("65536 bytes")
            && error.contains("max_body_bytes"),
        "{error}"
    );
    // Nothing of the answer reached the store whole.
    let db = std::fs::metadata(dir.path().join("h.db")).unwrap().len();
    assert!(db < 200 * 1024, "the store holds {db} bytes");
}

#[test]
fn absurd_token_counts_fail_with_evidence_and_never_wrap_the_totals() {
    for usage in [
        json!({"prompt_tokens": u64::MAX, "completion_tokens": 1}),
        json!({"prompt_tokens": -5, "completion_tokens": 1}),
        json!({"prompt_tokens": "many", "completion_tokens": 1}),
    ] {
        let (port, _) = scripted_provider(vec![tool_call_with_usage(
            "emit_output",
            json!({"text": "It files tickets."}),
            Some(usage.clone()),
        )]);
        let dir = tempfile::tempdir().unwrap();
        let ran = run(dir.path(), &doc(""), &profile(port, ""));
        assert_failed(&ran);
        let rec = record(dir.path(), &run_id(&ran));
        let error = last_error(&rec, 0);
        assert!(
            error.starts_with("model_error") && error.contains("absurd token count"),
            "{usage}: {error}"
        );
        let cost = rec["usage"]["cost_usd"].as_f64().unwrap_or(0.0);
        assert!(cost < 1.0, "{usage}: cost {cost}");
    }
}

#[test]
fn missing_usage_is_estimated_and_said_to_be_not_zero() {
    let answer = tool_call_with_usage("emit_output", json!({"text": "It files tickets."}), None);
    let (port, _) = scripted_provider(vec![answer]);
    let dir = tempfile::tempdir().unwrap();
    let ran = run(dir.path(), &doc(""), &profile(port, ""));
    assert_eq!(ran.report["status"], "succeeded", "{}", ran.stderr);
    let rec = record(dir.path(), &run_id(&ran));
    let usage = &rec["nodes"][0]["usage"];
    assert!(usage["input_tokens"].as_u64().unwrap() > 0, "{usage}");
    assert!(usage["output_tokens"].as_u64().unwrap() > 0, "{usage}");
    assert_eq!(usage["x-weft-estimated_turns"], 1, "{usage}");
}

#[test]
fn a_label_outside_the_branches_takes_the_default_branch_with_rt022() {
    let document = r#"ags_version: "1.0"
kind: AgenticGraph
id: t/decide
title: A decision on a model
objective: Route the ticket.
entrypoints: [route]
nodes:
  route:
    type: decision
    title: Route
    description: Decide where the ticket goes.
    decision:
      question: Is it urgent?
      evaluator: agent
      branches:
        - { label: urgent, description: Someone must act now. }
        - { label: later, description: It can wait in the queue. }
      default_branch: later
  page:
    title: Page
    description: Page the on-call engineer.
    x-weft-exec: { run: "true" }
  queue:
    title: Queue
    description: Put the ticket in the queue.
    x-weft-exec: { run: "true" }
edges:
  - { from: route, to: page, kind: conditional, when: "nodes.route.decision == 'urgent'" }
  - { from: route, to: queue, kind: conditional, when: "nodes.route.decision == 'later'" }
"#;
    let (port, _) = scripted_provider(vec![tool_call("emit_output", json!({"decision": "maybe"}))]);
    let dir = tempfile::tempdir().unwrap();
    let ran = run(dir.path(), document, &profile(port, ""));
    let rec = record(dir.path(), &run_id(&ran));
    assert_eq!(
        ran.report["status"], "succeeded",
        "{} {}",
        ran.report, ran.stderr
    );
    let codes: Vec<&str> = rec["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(codes.contains(&"RT022"), "{}", rec["diagnostics"]);
    let states: Vec<(String, String)> = rec["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["node_id"].as_str().unwrap().into(),
                n["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        states.contains(&("queue".into(), "succeeded".into())),
        "{states:?}"
    );
    assert!(
        states.contains(&("page".into(), "skipped".into())),
        "{states:?}"
    );
}

#[test]
fn every_refused_tool_call_is_an_event_an_audit_entry_and_in_the_record() {
    let document = doc(r#"    requirements:
      tools: [shell_exec, file_write]
      workspace: read_only
"#);
    let (port, _) = scripted_provider(vec![
        // No shell grant: refused.
        tool_call("shell_exec", json!({"command": "rm -rf /"})),
        // A read-only workspace and no write grant: refused.
        tool_call("file_write", json!({"path": "x.txt", "content": "x"})),
        tool_call("emit_output", json!({"text": "It files tickets."})),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let ran = run(dir.path(), &document, &profile(port, ""));
    assert_eq!(
        ran.report["status"], "succeeded",
        "{} {}",
        ran.report, ran.stderr
    );
    assert!(!dir.path().join("x.txt").exists());
    let id = run_id(&ran);
    let decisions: Vec<Value> = events(dir.path(), &id)
        .into_iter()
        .filter(|e| e["kind"] == "policy_decision")
        .map(|e| e["payload"].clone())
        .collect();
    let refused: Vec<&Value> = decisions
        .iter()
        .filter(|d| d["decision"] == "deny")
        .collect();
    assert_eq!(refused.len(), 2, "{decisions:?}");
    assert_eq!(refused[0]["tool"], "shell_exec");
    assert_eq!(refused[1]["tool"], "file_write");
    assert!(
        refused
            .iter()
            .all(|d| d["node"] == "answer" && d["attempt"] == 1)
    );
    let entries = audit(dir.path(), &id);
    let audited = entries
        .iter()
        .filter(|e| e["entry"]["kind"] == "policy_decision")
        .count();
    assert_eq!(audited, decisions.len(), "every decision is audited");
    let rec = record(dir.path(), &id);
    let calls = rec["nodes"][0]["x-weft-refused_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0]["decision"], "deny");
    // `weft status` says the node succeeded after refusals.
    let status = weft()
        .current_dir(dir.path())
        .args(["status", &id, "--db", "h.db"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("attempts 1, 2 tool calls refused"), "{text}");
}

#[test]
fn an_output_value_over_the_configured_cap_is_refused_and_never_stored() {
    let huge = tool_call("emit_output", json!({"text": "B".repeat(100 * 1024)}));
    // Told each time, the model never shortens it: every turn of the loop is refused.
    let (port, seen) = scripted_provider(vec![huge.clone(), huge.clone(), huge.clone(), huge]);
    let dir = tempfile::tempdir().unwrap();
    let config = format!("{}\n[limits]\nmax_output_bytes = 4096\n", profile(port, ""));
    let ran = run(dir.path(), &doc(""), &config);
    assert_failed(&ran);
    let rec = record(dir.path(), &run_id(&ran));
    let error = last_error(&rec, 0);
    assert!(
        error.starts_with("validation_error")
            && error.contains("4096")
            && error.contains("max_output_bytes"),
        "{error}"
    );
    // The model was told why, with the limit, before it was given up on.
    let requests = seen.lock().unwrap().clone();
    assert!(
        requests.len() >= 2 && requests[1].contains("max_output_bytes"),
        "{}",
        requests.len()
    );
    let db = std::fs::metadata(dir.path().join("h.db")).unwrap().len();
    assert!(db < 100 * 1024, "the store holds {db} bytes");
}

/// The run's audit trail ends with its `run_finished`, and the record's usage is the sum of
/// its attempts' (every scenario's common checks).
fn assert_accounted(dir: &Path, ran: &Ran) -> Value {
    let id = run_id(ran);
    let trail = audit(dir, &id);
    assert_eq!(
        trail.last().map(|e| e["entry"]["kind"].clone()),
        Some(json!("run_finished")),
        "{trail:?}"
    );
    let rec = record(dir, &id);
    let sum: u64 = rec["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|n| n["attempts"].as_array().cloned().unwrap_or_default())
        .map(|a| a["usage"]["total_tokens"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(
        rec["usage"]["total_tokens"].as_u64().unwrap_or(0),
        sum,
        "{}",
        rec["usage"]
    );
    rec
}

#[test]
fn the_classes_handled_before_still_end_classified_with_evidence_and_accounted() {
    let usage = || Some(json!({"prompt_tokens": 7, "completion_tokens": 3}));
    let emit = |text: &str| tool_call_with_usage("emit_output", json!({"text": text}), usage());
    let raw = |status: u16, body: &str| Answer::Raw {
        status,
        headers: vec![("retry-after".into(), "0".into())],
        body: body.into(),
    };
    // (scenario, answers, transport sends, expected node state, error class, evidence)
    type Scenario = (
        &'static str,
        Vec<Answer>,
        u32,
        &'static str,
        &'static str,
        &'static str,
    );
    let scenarios: Vec<Scenario> = vec![
        (
            "a 429 then an answer",
            vec![
                raw(429, r#"{"error":{"message":"slow"}}"#),
                Answer::Body(emit("It files tickets.")),
            ],
            2,
            "succeeded",
            "",
            "",
        ),
        (
            "5xx until the sends run out",
            vec![raw(500, "boom"), raw(503, "still boom")],
            2,
            "failed",
            "transient",
            "HTTP 503",
        ),
        (
            "a body that is not JSON",
            vec![Answer::Body("{\"choices\": [".into())],
            1,
            "failed",
            "model_error",
            "not JSON",
        ),
        (
            "a model that loops on a tool and never delivers",
            (0..4)
                .map(|_| Answer::Body(tool_call("list_dir", json!({"path": "."}))))
                .collect(),
            1,
            "failed",
            "output_missing",
            "without a call of emit_output",
        ),
        (
            "outputs that miss their schema",
            (0..4)
                .map(|_| Answer::Body(tool_call("emit_output", json!({"text": 42}))))
                .collect(),
            1,
            "failed",
            "validation_error",
            "did not fit the outputs",
        ),
        (
            "unicode in the answer",
            vec![Answer::Body(emit("Elle trie les tickets \u{1F30D} — 票"))],
            1,
            "succeeded",
            "",
            "",
        ),
    ];
    for (name, answers, sends, state, class, evidence) in scenarios {
        let (port, _) = scripted(answers);
        let dir = tempfile::tempdir().unwrap();
        let config =
            profile(port, "").replace("max_attempts = 1", &format!("max_attempts = {sends}"));
        let ran = run(dir.path(), &doc(""), &config);
        assert_eq!(
            ran.report["nodes"][0]["state"], state,
            "{name}: {} {}",
            ran.report, ran.stderr
        );
        let rec = assert_accounted(dir.path(), &ran);
        if state == "failed" {
            let error = last_error(&rec, 0);
            assert!(error.starts_with(class), "{name}: {error}");
            assert!(error.contains(evidence), "{name}: {error}");
        } else {
            assert!(
                rec["nodes"][0]["usage"]["total_tokens"].as_u64().unwrap() > 0,
                "{name}"
            );
        }
        if name.starts_with("unicode") {
            assert_eq!(
                rec["nodes"][0]["outputs"]["text"],
                "Elle trie les tickets \u{1F30D} — 票"
            );
        }
    }
}

/// An allowed tool call costs no commit of its own: its `policy_decision` is written at the
/// head of the attempt's next commit (here its end), in the same batch (one `recorded_at_ms`,
/// consecutive seqs just before `node_finished`), and it is audited like a refusal.
#[test]
fn an_allowed_calls_decision_is_committed_with_the_attempts_next_write() {
    let document = doc(r#"    requirements:
      tools: [file_read]
      permissions: ["fs:read:**"]
      workspace: read_only
"#);
    let (port, _) = scripted_provider(vec![
        tool_call("file_read", json!({"path": "notes.txt"})),
        tool_call("file_read", json!({"path": "notes.txt"})),
        tool_call("emit_output", json!({"text": "It files tickets."})),
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "It files tickets.\n").unwrap();
    let policy = "[[policy.rules]]\ndecision = \"allow\"\npermission = \"fs:read:**\"\n";
    let ran = run(
        dir.path(),
        &document,
        &format!("{}{policy}", profile(port, "")),
    );
    assert_eq!(
        ran.report["status"], "succeeded",
        "{} {}",
        ran.report, ran.stderr
    );
    let id = run_id(&ran);
    let log = events(dir.path(), &id);
    let finished = log
        .iter()
        .position(|e| e["kind"] == "node_finished")
        .expect("the node finished");
    let decisions: Vec<&Value> = log
        .iter()
        .filter(|e| e["kind"] == "policy_decision")
        .collect();
    assert_eq!(decisions.len(), 2, "{log:?}");
    assert!(
        decisions
            .iter()
            .all(|d| d["payload"]["tool"] == "file_read" && d["payload"]["decision"] == "allow"),
        "{decisions:?}"
    );
    // Every decision of the attempt sits right before its end, written in the same commit.
    let n = decisions.len();
    for (k, d) in log[finished - n..finished].iter().enumerate() {
        assert_eq!(
            d["kind"], "policy_decision",
            "event {k} before the end: {log:?}"
        );
        assert_eq!(
            d["recorded_at_ms"], log[finished]["recorded_at_ms"],
            "{log:?}"
        );
        assert_eq!(
            d["seq"].as_u64().unwrap() + (n - k) as u64,
            log[finished]["seq"].as_u64().unwrap()
        );
    }
    let audited = audit(dir.path(), &id)
        .iter()
        .filter(|e| e["entry"]["kind"] == "policy_decision")
        .count();
    assert_eq!(audited, n, "every decision is audited");
}
