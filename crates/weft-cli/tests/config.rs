//! `weft config check`: the routing profile of weft.toml shown tier by tier, mistakes
//! refused with their key (exit 1), unset key variables warned about, keys never printed.
//! `weft run --config`: model nodes routed by the profile and run by the model agent.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use weft_test_support::scripted as provider;

use assert_cmd::Command;
use provider::{scripted_provider, tool_call};

const PROFILE: &str = r#"
[policy]
rules = []   # read by the sandbox, not by the routing profile

[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:8090"

[providers.claude]
kind = "anthropic"
base_url = "https://api.anthropic.com"
api_key_env = "WEFT_CONFIG_TEST_KEY"

[tiers.minimal]
provider = "local"
model = "smollm2"
context_tokens = 4096

[tiers.advanced]
provider = "claude"
model = "claude-sonnet"
input_price_per_million = 3.0
output_price_per_million = 15.0
"#;

fn check(text: &str, key: Option<&str>) -> assert_cmd::assert::Assert {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("weft.toml"), text).unwrap();
    let mut cmd = Command::cargo_bin("weft").unwrap();
    cmd.current_dir(dir.path()).args(["config", "check"]);
    match key {
        Some(k) => cmd.env("WEFT_CONFIG_TEST_KEY", k),
        None => cmd.env_remove("WEFT_CONFIG_TEST_KEY"),
    };
    cmd.assert()
}

#[test]
fn a_valid_profile_is_shown_tier_by_tier() {
    let out = check(PROFILE, Some("sk-config-test-SECRET")).success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stdout.starts_with("weft.toml: routing profile OK\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "  claude: anthropic at https://api.anthropic.com, key from $WEFT_CONFIG_TEST_KEY (set)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("  local: openai at http://127.0.0.1:8090, no key"),
        "{stdout}"
    );
    let minimal = stdout
        .find("  minimal: local `smollm2`, context 4096")
        .expect(&stdout);
    let advanced = stdout
        .find("  advanced: claude `claude-sonnet`, context unknown, $3/M in, $15/M out")
        .expect(&stdout);
    assert!(minimal < advanced);
    assert!(
        stdout.contains("not served: standard, frontier"),
        "{stdout}"
    );
    assert!(!stdout.contains("SECRET") && !stderr.contains("SECRET"));
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn an_unset_key_variable_is_a_warning() {
    let out = check(PROFILE, None).success();
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("warning: $WEFT_CONFIG_TEST_KEY is not set: runs routed to provider `claude` will be refused"), "{stderr}");
}

/// A keyring reference is shown (never the key), found or not, with a warning naming the
/// entry when it is missing.
#[cfg(target_os = "linux")]
#[test]
fn a_keyring_reference_is_shown_and_looked_up_never_printed() {
    let service = format!("weft-cli-test-{}", std::process::id());
    let profile = |account: &str| {
        format!(
            "[providers.kr]\nkind = \"openai\"\nbase_url = \"https://x\"\n\
             api_key_keyring = \"{service}/{account}\"\n\
             [tiers.minimal]\nprovider = \"kr\"\nmodel = \"m\"\n"
        )
    };
    let user =
        linux_keyutils::KeyRing::from_special_id(linux_keyutils::KeyRingIdentifier::User, false)
            .unwrap();
    let key = user
        .add_key(
            &format!("keyring-rs:stored@{service}"),
            "sk-keyring-cli-SECRET",
        )
        .unwrap();
    let out = check(&profile("stored"), None).success();
    let _ = key.invalidate();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stdout.contains(&format!(
            "  kr: openai at https://x, key from keyring {service}/stored (found)"
        )),
        "{stdout}"
    );
    assert!(stderr.is_empty(), "{stderr}");
    assert!(!stdout.contains("SECRET"));
    let out = check(&profile("absent"), None).success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stdout.contains(&format!("key from keyring {service}/absent (NOT FOUND)")),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!("no entry `keyring-rs:absent@{service}`"))
            && stderr.contains("provider `kr` will be refused"),
        "{stderr}"
    );
}

#[test]
fn a_mistake_is_refused_with_its_key() {
    let out = check(
        "[tiers.minimal]\nprovider = \"nowhere\"\nmodel = \"m\"\n",
        None,
    )
    .code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("`tiers.minimal.provider`: no `[providers.nowhere]` table"),
        "{stderr}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .args(["config", "check"])
        .assert()
        .code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("cannot read weft.toml"), "{stderr}");
}

const MODEL_DOC: &str = r#"ags_version: "1.0"
kind: AgenticGraph
id: t/live
title: One model node
objective: Summarise a changelog with a live model.
entrypoints: [summarise]
nodes:
  summarise:
    title: Summarise
    description: Summarise the changelog into release notes, one bullet per merged change.
    intelligence:
      tier: standard
    outputs:
      notes:
        type: markdown
        description: The release notes.
"#;

fn run_with(profile: &str, extra: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("weft.toml"), profile).unwrap();
    std::fs::write(dir.path().join("live.agraph.yaml"), MODEL_DOC).unwrap();
    Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .args(["run", "live.agraph.yaml", "--config", "weft.toml"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn run_config_routes_model_nodes_by_the_profile() {
    // Only `minimal` is served: the `standard` node is refused before anything runs.
    let out = run_with(
        "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\n[tiers.minimal]\nprovider = \"p\"\nmodel = \"small\"\n",
        &[],
    );
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("RT011"), "{all}");

    // Served, at an address where nothing listens: the model agent calls it, and the
    // attempt fails `transient` with the provider's URL.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = run_with(
        &format!(
            "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}\"\nmax_attempts = 1\n[tiers.standard]\nprovider = \"p\"\nmodel = \"mid\"\n"
        ),
        &["--json"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["nodes"][0]["state"], "failed", "{report}");
    let error = report["nodes"][0]["error"].as_str().unwrap();
    assert!(error.starts_with("transient: "), "{error}");
    let text = report.to_string();
    assert!(
        text.contains(&format!("POST http://127.0.0.1:{port}/v1/chat/completions")),
        "{text}"
    );

    // A profile that does not parse refuses the run; --config and --cassette exclude each other.
    let out = run_with("[tiers.huge]\nprovider = \"p\"\nmodel = \"m\"\n", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`tiers.huge`"));
    let out = run_with("", &["--cassette", "c.json"]);
    assert_eq!(out.status.code(), Some(2));
}

const TOOL_DOC: &str = r#"ags_version: "1.0"
kind: AgenticGraph
id: t/tools
title: A model node with a tool
objective: Write the notes file with a tool, then report.
entrypoints: [write]
nodes:
  write:
    title: Write
    description: Write notes.md with the file_write tool, then emit the outcome.
    requirements:
      tools: [file_write]
      permissions: ["fs:write:notes.md"]
      workspace: read_write
    outputs:
      outcome:
        type: string
        description: What was written.
"#;

#[test]
fn run_config_gives_model_nodes_their_tools_under_the_policy() {
    for (policy, written) in [
        (
            "[[policy.rules]]\ndecision = \"allow\"\npermission = \"fs:write:notes.md\"\n",
            true,
        ),
        // No rule: the call is refused, the model is told so, and nothing is written.
        ("", false),
    ] {
        let (port, seen) = scripted_provider(vec![
            tool_call(
                "file_write",
                serde_json::json!({"path": "notes.md", "content": "hello"}),
            ),
            tool_call(
                "emit_output",
                serde_json::json!({"outcome": "wrote notes.md"}),
            ),
        ]);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("weft.toml"),
            format!(
                "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}\"\nmax_attempts = 1\n[tiers.standard]\nprovider = \"p\"\nmodel = \"mid\"\n{policy}"
            ),
        )
        .unwrap();
        std::fs::write(dir.path().join("tools.agraph.yaml"), TOOL_DOC).unwrap();
        let out = Command::cargo_bin("weft")
            .unwrap()
            .current_dir(dir.path())
            .args([
                "run",
                "tools.agraph.yaml",
                "--config",
                "weft.toml",
                "--json",
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let notes = std::fs::read_to_string(dir.path().join("notes.md")).ok();
        assert_eq!(notes.is_some(), written, "policy {policy:?}");
        if written {
            assert_eq!(notes.as_deref(), Some("hello"));
        }
        let requests = seen.lock().unwrap().clone();
        assert_eq!(requests.len(), 2, "a tool turn, then the emit_output turn");
        // The first request offered the tool; the second carried its result back.
        assert!(requests[0].contains("\"file_write\""), "{}", requests[0]);
        assert!(requests[1].contains("call_file_write"), "{}", requests[1]);
        if !written {
            assert!(
                requests[1].contains("deny") || requests[1].contains("denied"),
                "{}",
                requests[1]
            );
        }
    }
}

#[test]
fn a_required_tool_this_build_lacks_refuses_the_run_before_any_token() {
    let (port, seen) = scripted_provider(vec![tool_call(
        "emit_output",
        serde_json::json!({"outcome": "x"}),
    )]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("weft.toml"),
        format!(
            "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}\"\n[tiers.standard]\nprovider = \"p\"\nmodel = \"mid\"\n"
        ),
    )
    .unwrap();
    let doc = TOOL_DOC.replace(
        "tools: [file_write]",
        "tools: [file_write, web_search, {name: http_fetch, optional: true}]",
    );
    std::fs::write(dir.path().join("tools.agraph.yaml"), doc).unwrap();
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .args(["run", "tools.agraph.yaml", "--config", "weft.toml"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("RT012") && stderr.contains("`web_search`"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("`http_fetch`"),
        "optional tools are not required: {stderr}"
    );
    assert!(
        seen.lock().unwrap().is_empty(),
        "no model call before the refusal"
    );
}

/// `weft run --config` where the policy asks: the run waits (exit 3) on the exact action;
/// `weft approve` then `weft resume` lets the next attempt take it, a reject fails the
/// node, and an action with another argument asks again.
#[test]
fn an_ask_waits_for_a_person_bound_to_the_exact_action() {
    let write = |content: &str| {
        tool_call(
            "file_write",
            serde_json::json!({"path": "notes.md", "content": content}),
        )
    };
    let emit = || {
        tool_call(
            "emit_output",
            serde_json::json!({"outcome": "wrote notes.md"}),
        )
    };
    for (verdict, answers, expect) in [
        (
            "approve",
            vec![write("hello"), write("hello"), emit()],
            Some("hello"),
        ),
        ("reject", vec![write("hello")], None),
        // Approved "hello", then the model writes "other": a new digest, a new wait.
        ("changed", vec![write("hello"), write("other")], None),
    ] {
        let (port, seen) = scripted_provider(answers);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("weft.toml"),
            format!(
                "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}\"\nmax_attempts = 1\n[tiers.standard]\nprovider = \"p\"\nmodel = \"mid\"\n[[policy.rules]]\ndecision = \"ask\"\npermission = \"fs:write:notes.md\"\n"
            ),
        )
        .unwrap();
        std::fs::write(dir.path().join("tools.agraph.yaml"), TOOL_DOC).unwrap();
        let weft = |args: &[&str]| {
            Command::cargo_bin("weft")
                .unwrap()
                .current_dir(dir.path())
                .args(args)
                .output()
                .unwrap()
        };
        let out = weft(&[
            "run",
            "tools.agraph.yaml",
            "--config",
            "weft.toml",
            "--json",
        ]);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{verdict}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let run_id = report["run_id"].as_str().unwrap().to_string();
        let waiting = report["waiting"][0].clone();
        assert_eq!(waiting["stage"], "tool_approval", "{report}");
        assert!(
            waiting["checkpoint"]
                .as_str()
                .unwrap()
                .starts_with("sha256:"),
            "{report}"
        );
        assert!(
            !dir.path().join("notes.md").exists(),
            "nothing written before the approval"
        );
        let decide = if verdict == "reject" {
            "reject"
        } else {
            "approve"
        };
        let out = weft(&[decide, &run_id, "write", "--as", "ana"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = weft(&["resume", &run_id, "--config", "weft.toml", "--json"]);
        let code = out.status.code();
        let notes = std::fs::read_to_string(dir.path().join("notes.md")).ok();
        assert_eq!(notes.as_deref(), expect, "{verdict}");
        match verdict {
            "approve" => assert_eq!(code, Some(0), "{}", String::from_utf8_lossy(&out.stderr)),
            "reject" => {
                let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                let text = r.to_string();
                assert!(text.contains("not approved"), "{text}");
            }
            _ => assert_eq!(code, Some(3), "another argument asks again"),
        }
        // The approval is in the run's log as a person's decision.
        let events = weft(&["events", &run_id]);
        let log = String::from_utf8_lossy(&events.stdout);
        assert!(log.contains("\"tool_approval\""), "{log}");
        assert!(log.contains("\"human_decision\""), "{log}");
        drop(seen);
    }
}

#[test]
fn mcp_servers_are_shown_without_being_started_and_a_bad_table_is_refused() {
    let text = format!(
        "{PROFILE}\n[mcp.servers.files]\ncommand = \"/nonexistent/files-mcp\"\nargs = [\"--root\", \".\"]\n\
         env = [\"HOME\"]\ncall_timeout_seconds = 5\n"
    );
    let out = check(&text, Some("k")).success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        stdout.contains(
            "  files: stdio `/nonexistent/files-mcp` --root ., environment HOME, call timeout 5 s, output cap 65536 bytes\n"
        ),
        "{stdout}"
    );
    let bad = format!("{PROFILE}\n[mcp.servers.files]\nurl = \"ftp://h/\"\n");
    let out = check(&bad, Some("k")).code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("[mcp.servers.files]: `url` must be http:// or https://"),
        "{stderr}"
    );
}

/// The MCP test server's Python (`scripts/mcp/install.sh`), installed on first use, or a
/// failure that says why it cannot be (never a skip).
fn mcp_python() -> String {
    weft_test_support::mcp_python().to_str().unwrap().to_owned()
}

const MCP_DOC: &str = r#"ags_version: "1.0"
kind: AgenticGraph
id: t/mcp
title: A model node with an MCP server
objective: Add two numbers with the demo server's tool, then report.
entrypoints: [add]
nodes:
  add:
    title: Add
    description: Add 2 and 40 with the demo server's add tool, then emit the outcome.
    requirements:
      mcp_servers: [demo]
      permissions: ["mcp:call:demo/*"]
    outputs:
      outcome:
        type: string
        description: The sum.
"#;

#[test]
fn run_config_offers_the_mcp_servers_a_node_requires() {
    let (port, seen) = scripted_provider(vec![
        tool_call("mcp__demo__add", serde_json::json!({"a": 2, "b": 40})),
        tool_call("emit_output", serde_json::json!({"outcome": "42"})),
    ]);
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/mcp/test_server.py")
        .canonicalize()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("weft.toml"),
        format!(
            "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}\"\nmax_attempts = 1\n\
             [tiers.standard]\nprovider = \"p\"\nmodel = \"mid\"\n\
             [[policy.rules]]\ndecision = \"allow\"\npermission = \"mcp:call:demo/add\"\n\
             [mcp.servers.demo]\ncommand = {:?}\nargs = [{:?}]\n",
            mcp_python(),
            script.to_str().unwrap()
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("mcp.agraph.yaml"), MCP_DOC).unwrap();
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .args(["run", "mcp.agraph.yaml", "--config", "weft.toml", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests = seen.lock().unwrap().clone();
    assert_eq!(
        requests.len(),
        2,
        "an MCP tool turn, then the emit_output turn"
    );
    assert!(
        requests[0].contains("\"mcp__demo__add\""),
        "{}",
        requests[0]
    );
    // The tool message answering the call carries the server's result, 42.
    let second: serde_json::Value = serde_json::from_str(&requests[1]).unwrap();
    let reply = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let reply: serde_json::Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["content"][0]["text"], "42", "{reply}");
}
