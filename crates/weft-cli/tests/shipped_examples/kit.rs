//! What the example tests share: the temporary project (the example copied in, the tools
//! linked into `.weft/bin`), running `weft`, and the schema-checked run record.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{Value, json};

/// `../shared/ags`, the spec corpus the examples come from.
pub fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/ags")
}

/// The text of a shipped example (the shared original is only read).
pub fn example(name: &str) -> String {
    let path = shared().join("examples").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The virtual environment holding the real tools the examples' criteria call, installed on
/// first use (`scripts/examples-venv.sh`).
fn venv() -> PathBuf {
    weft_test_support::examples_venv()
}

/// The tools' `python`, for the tests' own setup (building a wheel).
pub fn venv_python() -> PathBuf {
    venv().join("bin/python")
}

/// A temporary project: `files` written (directories created), and each of `tools` linked
/// from the tools' virtual environment into `.weft/bin`, where commands and criteria find
/// them.
pub fn project(files: &[(&str, &str)], tools: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    let bin = dir.path().join(".weft/bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in tools {
        let real = venv().join("bin").join(tool);
        assert!(
            real.is_file(),
            "{} is missing after scripts/examples-venv.sh: point WEFT_EXAMPLES_VENV at a \
             virtual environment with {tool}",
            real.display()
        );
        std::os::unix::fs::symlink(&real, bin.join(tool)).unwrap();
    }
    dir
}

/// What one `weft` command did.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// `weft ARGS` in `dir`.
pub fn weft(dir: &Path, args: &[&str]) -> Out {
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `weft ARGS --json`, which must exit `code`; its report.
pub fn run_json(dir: &Path, args: &[&str], code: i32) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = weft(dir, &all);
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", out.stdout, out.stderr));
    if out.code != code {
        // What went wrong, attempt by attempt, from the record when there is one.
        let errors = report["run_id"]
            .as_str()
            .map(|run| weft(dir, &["record", run]).stdout)
            .and_then(|r| serde_json::from_str::<Value>(&r).ok())
            .map(|r| attempt_errors(&r))
            .unwrap_or_default();
        let events = report["run_id"]
            .as_str()
            .map(|run| weft(dir, &["events", run]).stdout)
            .unwrap_or_default();
        let errors = format!(
            "{errors}\n{}",
            events
                .lines()
                .filter(|l| !l.contains("run_started"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        panic!(
            "`weft {}` exited {} (expected {code}): {}{}\n{errors}",
            all.join(" "),
            out.code,
            out.stdout,
            out.stderr
        );
    }
    report
}

/// Each failed attempt of a record with its error and failed criteria, one per line.
fn attempt_errors(record: &Value) -> String {
    let mut lines = Vec::new();
    for n in record["nodes"].as_array().into_iter().flatten() {
        for a in n["attempts"].as_array().into_iter().flatten() {
            if a["status"] != "succeeded" {
                lines.push(format!(
                    "{} attempt {}: {} {}",
                    n["node_id"], a["attempt"], a["error"], a["success"]
                ));
            }
        }
    }
    lines.join("\n")
}

/// `weft ARGS`, which must exit 0 (a person's decision).
pub fn act(dir: &Path, args: &[&str]) {
    let out = weft(dir, args);
    assert_eq!(out.code, 0, "`weft {}`: {}", args.join(" "), out.stderr);
}

/// The run id of a report.
pub fn run_id(report: &Value) -> String {
    report["run_id"].as_str().expect("a run id").to_string()
}

/// The run record of `run` (or of a child, `RUN/PATH`), validated against the AGS
/// run-record schema.
pub fn record(dir: &Path, run: &str) -> Value {
    let out = weft(dir, &["record", run]);
    assert_eq!(out.code, 0, "weft record {run}: {}", out.stderr);
    let record: Value = serde_json::from_str(&out.stdout).unwrap();
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(shared().join("schema/agentic-graph-run-1.0.schema.json"))
            .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&record)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "record of {run} is invalid: {errors:?}");
    record
}

/// The record's entry for the root node `id`.
pub fn node<'a>(record: &'a Value, id: &str) -> &'a Value {
    record["nodes"]
        .as_array()
        .and_then(|n| {
            n.iter()
                .find(|n| n["node_id"] == id && n.get("scope_path").is_none())
        })
        .unwrap_or_else(|| panic!("no root node {id} in {record}"))
}

/// The record's entry for the node at `address` inside an instance (`loop[0].task`).
pub fn scoped<'a>(record: &'a Value, address: &str) -> &'a Value {
    record["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["scope_path"] == address))
        .unwrap_or_else(|| panic!("no node at {address} in {record}"))
}

/// The result of criterion `id` in a record's `criteria_results` (`{passed, results}`).
pub fn criterion<'a>(results: &'a Value, id: &str) -> &'a Value {
    results["results"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["id"] == id))
        .unwrap_or_else(|| panic!("no criterion {id} in {results}"))
}

/// One recorded model attempt: a reading turn, then `emit_output` of `outputs`.
pub fn attempt(reading: &str, outputs: Value) -> Value {
    json!({"turns": [
        {"content": reading,
         "tool_calls": [{"name": "file_read", "arguments": {"path": "."}, "result": "…"}],
         "usage": {"input_tokens": 800, "output_tokens": 60, "cost_usd": 0.003}},
        {"tool_calls": [{"name": "emit_output", "arguments": outputs}],
         "usage": {"input_tokens": 900, "output_tokens": 120, "cost_usd": 0.004}}
    ]})
}

/// One recorded judgement (`llm_judge` sample).
pub fn judgement(score: f64) -> Value {
    json!({"turns": [{"tool_calls": [{"name": "emit_output",
        "arguments": {"score": score, "reasoning": "Meets the rubric."}}],
        "usage": {"input_tokens": 500, "output_tokens": 40, "cost_usd": 0.002}}]})
}

/// A cassette serving every tier (a large window, so `min_context_tokens` is met).
pub fn cassette(nodes: Value) -> String {
    let models: Vec<Value> = ["minimal", "standard", "advanced", "frontier"]
        .iter()
        .map(|t| {
            json!({"tier": t, "model": format!("recorded-{t}"), "provider": "cassette",
                   "context_tokens": 400_000})
        })
        .collect();
    json!({"format": "weft-cassette/1", "models": models, "nodes": nodes}).to_string()
}

/// Runs `git ARGS` in `dir` (a fixed identity, no user configuration).
pub fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=weft",
            "-c",
            "user.email=weft@example.invalid",
        ])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}
