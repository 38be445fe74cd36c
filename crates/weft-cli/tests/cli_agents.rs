//! Coding-agent CLIs as providers (`weft_agents::cli`), run through the real sandbox (the
//! helper is this build's `weft sandbox-exec`). The CLIs are named TEST DOUBLES: small
//! `/bin/sh` scripts called `claude` and `codex` in a temp dir that check the flags weft
//! gave them (no approval bypass), read the brief from stdin, and print a recorded event
//! stream from `tests/fixtures/cli-agents/` (written to the CLIs' documented formats),
//! including error, truncation and malformed cases. Also: `weft run --config --sandbox` end
//! to end on the `claude` double.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use weft_agents::cli::{CliConfig, CliKind, CliSandbox};
use weft_agents::{LoopSettings, ModelAgent, Price};
use weft_engine::agent::{Agent, AgentRequest, AgentResult, Limits, Model, OutputDecl, Route};
use weft_engine::agent::{Tier, Usage};
use weft_sandbox::{Helper, Sandbox};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cli-agents");

/// A test double named `name` (`claude` or `codex`) in `dir` that prints `fixture` and exits
/// with `exit`, after checking its flags and its brief, writing its state under `HOME`, and
/// trying to write to `outside` (which the sandbox must refuse) and into the workspace's
/// `out/` (which the node grants).
fn double(dir: &Path, name: &str, fixture: &str, exit: i32, outside: &Path) -> PathBuf {
    let stream = std::fs::read_to_string(Path::new(FIXTURES).join(fixture)).unwrap();
    let required = match name {
        "claude" => {
            "*\" -p --output-format stream-json --verbose \"*\" --permission-mode default \"*"
        }
        _ => "*\" exec --json \"*\" --sandbox \"*\" - \"",
    };
    let script = format!(
        r#"#!/bin/sh
# TEST DOUBLE for `{name}`: not the real CLI.
for a in "$@"; do
  case "$a" in
    --dangerously-skip-permissions|bypassPermissions|--full-auto|--dangerously-bypass-approvals-and-sandbox)
      echo "approvals bypassed: $a" >&2; exit 90;;
  esac
done
case " $* " in
  {required}) ;;
  *) echo "unexpected flags: $*" >&2; exit 91;;
esac
brief=$(cat)
case "$brief" in
  *"Delivering the result"*) ;;
  *) echo "the brief has no delivery instructions" >&2; exit 92;;
esac
echo '{{}}' > "$HOME/.{name}.json" || {{ echo "HOME is not writable" >&2; exit 93; }}
echo pwned > '{outside}/pwned' 2>/dev/null
mkdir -p out && echo "$brief" > out/brief.txt
# The key weft passed (if any), where the test can compare it with what it stored.
[ -n "$ANTHROPIC_API_KEY$CODEX_API_KEY" ] && printf %s "$ANTHROPIC_API_KEY$CODEX_API_KEY" > out/key.txt
echo "env: $(env | sort | tr '\n' ' ')" >&2
cat <<'WEFT_RECORDED_STREAM'
{stream}WEFT_RECORDED_STREAM
exit {exit}
"#,
        outside = outside.display()
    );
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The document whose node grants confine the CLI: read the workspace, write `out/`.
fn document() -> Value {
    json!({"id": "g", "nodes": {"triage": {
        "requirements": {"permissions": ["fs:read:**", "fs:write:out/**"], "workspace": "read_write"}
    }}})
}

fn request(workspace: &Path, provider: &str) -> AgentRequest {
    AgentRequest {
        node: "triage".into(),
        attempt: 1,
        inputs: json!({"ticket": "The printer is on fire"}),
        brief: Some("Classify the ticket by severity.".into()),
        guidance: Default::default(),
        outputs: vec![
            OutputDecl {
                name: "severity".into(),
                required: true,
                type_name: Some("string".into()),
            },
            OutputDecl {
                name: "score".into(),
                required: false,
                type_name: Some("integer".into()),
            },
        ],
        decision_labels: vec![],
        decision_default: None,
        feedback: None,
        route: Some(Route {
            requested_tier: "advanced".into(),
            effective_tier: "advanced".into(),
            provider: provider.into(),
            model: "cli-model".into(),
            downgraded: false,
            reason: None,
        }),
        limits: Limits::wall_clock(Duration::from_secs(60)),
        workspace: workspace.to_path_buf(),
        config: Value::Null,
        approvals: Vec::new(),
        journal: Default::default(),
    }
}

struct Case {
    _dirs: [tempfile::TempDir; 3],
    workspace: PathBuf,
    outside: PathBuf,
    result: AgentResult,
}

/// Runs one attempt of `triage` on the `name` double printing `fixture`, in the sandbox when
/// `confined`.
fn run(name: &str, fixture: &str, exit: i32, confined: bool) -> Case {
    run_as("triage", name, fixture, exit, confined)
}

/// [`run`] for the model call `node` (a node id or a judge key).
fn run_as(node: &str, name: &str, fixture: &str, exit: i32, confined: bool) -> Case {
    run_keyed(node, name, fixture, exit, confined, None)
}

/// [`run_as`] with the CLI's key read from the keyring reference `keyring`.
fn run_keyed(
    node: &str,
    name: &str,
    fixture: &str,
    exit: i32,
    confined: bool,
    keyring: Option<weft_agents::KeyringRef>,
) -> Case {
    let bin = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let command = double(bin.path(), name, fixture, exit, outside.path());
    let kind = if name == "claude" {
        CliKind::ClaudeCode
    } else {
        CliKind::Codex
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = runtime.block_on(async {
        let mut agent = ModelAgent::new(LoopSettings::default())
            .with_cli(CliConfig {
                name: name.into(),
                kind,
                command,
                api_key_env: None,
                api_key_keyring: keyring,
                read_paths: vec![],
            })
            .with_model(
                Model {
                    tier: Tier::Advanced,
                    model: "cli-model".into(),
                    provider: name.into(),
                    context_tokens: None,
                },
                Some(Price {
                    input_per_million: 3.0,
                    output_per_million: 15.0,
                }),
            );
        if confined {
            let sandbox = Sandbox::probe(Helper::weft(env!("CARGO_BIN_EXE_weft"))).await;
            assert!(sandbox.report().fully_enforced(), "{:?}", sandbox.report());
            agent = agent.with_cli_sandbox(CliSandbox {
                sandbox: Arc::new(sandbox),
                document: Arc::new(document()),
            });
        }
        let mut request = request(workspace.path(), name);
        request.node = node.into();
        agent.run(&request).await
    });
    Case {
        workspace: workspace.path().to_path_buf(),
        outside: outside.path().to_path_buf(),
        _dirs: [bin, workspace, outside],
        result,
    }
}

fn failure(c: &Case) -> (String, String) {
    let f = c.result.failure.clone().expect("the attempt should fail");
    (f.class.to_string(), f.message)
}

#[test]
fn claude_code_delivers_outputs_usage_and_cost_confined_to_the_node_grants() {
    let c = run("claude", "claude_ok.jsonl", 0, true);
    assert!(c.result.failure.is_none(), "{:?}", c.result.failure);
    assert_eq!(c.result.outputs["severity"], "critical");
    assert_eq!(c.result.outputs["score"], 9);
    assert_eq!(
        c.result.usage,
        Usage {
            agent_steps: 2,
            tool_calls: 1,
            input_tokens: 1042,
            output_tokens: 35,
            cost_usd: 0.0042,
            estimated_turns: 0,
        }
    );
    let transcript = c.result.transcript.unwrap();
    assert_eq!(
        transcript[0]["permission_denials"][0]["tool_name"], "Bash",
        "{transcript}"
    );
    // The granted write root took the write; the path outside every root did not.
    let brief = std::fs::read_to_string(c.workspace.join("out/brief.txt")).unwrap();
    assert!(
        brief.contains("Classify the ticket by severity."),
        "{brief}"
    );
    assert!(
        brief.contains("\"severity\""),
        "the outputs schema: {brief}"
    );
    assert!(
        !c.outside.join("pwned").exists(),
        "the sandbox let it write outside"
    );
}

#[test]
fn a_judge_routed_to_a_cli_runs_under_its_node_grants() {
    let c = run_as("triage/judge/clear", "claude", "claude_ok.jsonl", 0, true);
    assert!(c.result.failure.is_none(), "{:?}", c.result.failure);
    assert!(c.workspace.join("out/brief.txt").exists());
    let c = run_as("nowhere/judge/clear", "claude", "claude_ok.jsonl", 0, true);
    assert_eq!(failure(&c).0, "blocked");
}

#[test]
fn codex_delivers_outputs_and_its_cost_comes_from_the_profile_prices() {
    let c = run("codex", "codex_ok.jsonl", 0, true);
    assert!(c.result.failure.is_none(), "{:?}", c.result.failure);
    assert_eq!(c.result.outputs["severity"], "high");
    let u = c.result.usage;
    assert_eq!(
        (u.input_tokens, u.output_tokens, u.tool_calls),
        (2000, 100, 1)
    );
    assert!((u.cost_usd - 0.0075).abs() < 1e-12, "{}", u.cost_usd);
    assert!(!c.outside.join("pwned").exists());
}

#[test]
fn without_a_sandbox_a_cli_provider_is_blocked_and_never_runs() {
    let c = run("claude", "claude_ok.jsonl", 0, false);
    let (class, message) = failure(&c);
    assert_eq!(class, "blocked");
    assert!(message.contains("never unconfined"), "{message}");
    assert!(!c.workspace.join("out").exists(), "the CLI ran");
}

#[test]
fn error_results_and_failed_turns_are_model_errors_with_evidence() {
    let (class, message) = failure(&run("claude", "claude_error.jsonl", 0, true));
    assert_eq!(class, "model_error");
    assert!(message.contains("error_during_execution"), "{message}");
    assert!(message.contains("529 overloaded"), "{message}");
    let (class, message) = failure(&run("codex", "codex_failed.jsonl", 0, true));
    assert_eq!(class, "model_error");
    assert!(message.contains("429 Too Many Requests"), "{message}");
}

#[test]
fn a_truncated_stream_is_transient_and_a_malformed_line_a_model_error() {
    let (class, message) = failure(&run("claude", "claude_truncated.jsonl", 0, true));
    assert_eq!(class, "transient");
    assert!(
        message.contains("without its terminal `result` event"),
        "{message}"
    );
    assert!(message.contains("Working on it"), "evidence: {message}");
    let (class, message) = failure(&run("claude", "claude_malformed.jsonl", 0, true));
    assert_eq!(class, "model_error");
    assert!(message.contains("line 2"), "{message}");
}

#[test]
fn a_non_zero_exit_is_a_model_error_with_its_stderr() {
    let (class, message) = failure(&run("claude", "claude_ok.jsonl", 3, true));
    assert_eq!(class, "model_error");
    assert!(message.contains("exited with code 3"), "{message}");
    // The environment is the allowlist: PATH, HOME (the workspace), LANG — nothing else.
    assert!(message.contains("HOME=/"), "{message}");
    assert!(!message.contains("CARGO"), "{message}");
}

/// `api_key_keyring` on a CLI provider: the key is read from the kernel keyring and handed
/// to the CLI as the variable it reads (`ANTHROPIC_API_KEY` for Claude Code, `CODEX_API_KEY`
/// for Codex), and it never shows in the failure's evidence (the double prints its
/// environment on stderr); a missing entry refuses the call before the CLI runs.
#[cfg(target_os = "linux")]
#[test]
fn a_key_from_a_keyring_reference_reaches_the_cli_and_never_its_evidence() {
    const KEY: &str = "sk-cli-keyring-SECRET-7373";
    let service = format!("weft-cli-agents-test-{}", std::process::id());
    let user =
        linux_keyutils::KeyRing::from_special_id(linux_keyutils::KeyRingIdentifier::User, false)
            .unwrap();
    let stored = user
        .add_key(&format!("keyring-rs:cli@{service}"), KEY)
        .unwrap();
    let reference = weft_agents::KeyringRef::parse(&format!("{service}/cli")).unwrap();
    let ok = run_keyed(
        "triage",
        "codex",
        "codex_ok.jsonl",
        0,
        true,
        Some(reference.clone()),
    );
    let failed = run_keyed(
        "triage",
        "claude",
        "claude_ok.jsonl",
        3,
        true,
        Some(reference),
    );
    let _ = stored.invalidate();

    assert!(ok.result.failure.is_none(), "{:?}", ok.result.failure);
    assert_eq!(
        std::fs::read_to_string(ok.workspace.join("out/key.txt")).unwrap(),
        KEY
    );
    let (class, message) = failure(&failed);
    assert_eq!(class, "model_error");
    assert_eq!(
        std::fs::read_to_string(failed.workspace.join("out/key.txt")).unwrap(),
        KEY
    );
    assert!(message.contains("ANTHROPIC_API_KEY="), "{message}");
    assert!(
        !message.contains(KEY),
        "the key leaked into the evidence: {message}"
    );

    let absent = weft_agents::KeyringRef::parse(&format!("{service}/absent")).unwrap();
    let c = run_keyed("triage", "claude", "claude_ok.jsonl", 0, true, Some(absent));
    let (class, message) = failure(&c);
    assert_eq!(class, "permission_denied");
    assert!(message.contains(&format!("{service}/absent")), "{message}");
    assert!(!c.workspace.join("out").exists(), "the CLI ran");
}

#[test]
fn outputs_that_do_not_fit_are_a_validation_error() {
    let c = run("claude", "claude_bad_outputs.jsonl", 0, true);
    let (class, message) = failure(&c);
    assert_eq!(class, "validation_error");
    assert!(message.contains("severity"), "{message}");
    assert_eq!(c.result.usage.cost_usd, 0.001, "usage is kept on failure");
}

const GRAPH: &str = r#"
ags_version: "1.0"
kind: AgenticGraph
id: cli-agent
title: A node on a coding-agent CLI
objective: Classify a ticket on Claude Code.
constraints: {max_cost_usd: 1.0}
entrypoints: [triage]
nodes:
  triage:
    title: Triage
    description: Classify the ticket by severity.
    intelligence: {tier: advanced}
    requirements:
      permissions: ["fs:read:**", "fs:write:out/**"]
      workspace: read_write
    outputs:
      severity: {type: string, description: How bad it is.}
      score: {type: integer, description: How bad it is from 0 to 10.}
outputs:
  severity: {type: string, description: How bad it is., from: nodes.triage.outputs.severity}
  score: {type: integer, description: From 0 to 10., from: nodes.triage.outputs.score}
"#;

#[test]
fn weft_run_with_a_claude_code_profile_runs_the_node_in_the_sandbox() {
    let project = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let command = double(
        project.path(),
        "claude",
        "claude_ok.jsonl",
        0,
        outside.path(),
    );
    let profile = format!(
        "[providers.cc]\nkind = \"claude-code\"\ncommand = \"{}\"\n\n[tiers.advanced]\nprovider = \"cc\"\nmodel = \"claude-sonnet-4-5\"\n",
        command.display()
    );
    std::fs::write(project.path().join("weft.toml"), profile).unwrap();
    std::fs::write(project.path().join("g.agraph.yaml"), GRAPH).unwrap();
    let weft = || {
        let mut c = assert_cmd::Command::cargo_bin("weft").unwrap();
        c.current_dir(project.path());
        c
    };
    // Without --sandbox the CLI provider is blocked, never run unconfined.
    let out = weft()
        .args(["run", "g.agraph.yaml", "--config", "weft.toml", "--jsonl"])
        .assert()
        .code(1);
    let log = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(log.contains("never unconfined"), "{log}");
    let out = weft()
        .args([
            "run",
            "g.agraph.yaml",
            "--config",
            "weft.toml",
            "--sandbox",
            "--jsonl",
        ])
        .assert()
        .success();
    let log = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(log.contains("\"severity\":\"critical\""), "{log}");
    assert!(!outside.path().join("pwned").exists());
}
