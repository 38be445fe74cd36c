//! `weft policy explain` and `weft sandbox` through the real binary: decisions with their
//! rule, normalised resource and exit code (0 allow, 3 ask, 1 deny), a node's requirements
//! and containers intersected with the operator rules, nothing executed; `weft sandbox
//! doctor`; and the hidden `weft sandbox-exec` helper confining a real command.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use assert_cmd::Command;
use serde_json::{Value, json};
use std::path::Path;

const CONFIG: &str = r#"
[tiers.standard]
model = "ignored-by-policy"

[policy]
version = "t"

[[policy.rules]]
decision = "deny"
permission = "fs:*:.git/**"
reason = "repository metadata is off limits"

[[policy.rules]]
decision = "allow"
permission = "fs:*"

[[policy.rules]]
decision = "ask"
permission = "shell:exec:*"
"#;

fn weft(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("weft.toml"), CONFIG).unwrap();
    let graph = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t/perm", "title": "Permissions",
        "objective": "Exercise permissions.", "entrypoints": ["writer"],
        "nodes": {
            "writer": {"type": "task", "title": "Writer", "description": "Writes docs.",
                "requirements": {"permissions": ["fs:read:**", "fs:write:docs/**", "shell:exec:pytest*"],
                                 "workspace": "read_write"}}
        }
    });
    std::fs::write(dir.path().join("g.agraph.json"), graph.to_string()).unwrap();
    dir
}

fn explain(dir: &Path, action: Value, extra: &[&str]) -> (i32, Value) {
    let action = action.to_string();
    let mut args = vec![
        "policy",
        "explain",
        action.as_str(),
        "--json",
        "--as",
        "ana",
    ];
    args.extend_from_slice(extra);
    let (code, out) = weft(dir, &args);
    (code, serde_json::from_str(&out).unwrap())
}

#[test]
fn explain_prints_the_rule_and_the_normalised_resource_and_exits_by_decision() {
    let dir = setup();
    let (code, d) = explain(
        dir.path(),
        json!({"scope": "fs", "action": "write", "target": "src/../.git/HEAD"}),
        &[],
    );
    assert_eq!(code, 1);
    assert_eq!(d["decision"], "deny");
    assert_eq!(
        d["source"],
        json!({"layer": "rule", "index": 0, "permission": "fs:*:.git/**"})
    );
    assert_eq!(d["resource"]["target"], ".git/HEAD");
    let (code, d) = explain(
        dir.path(),
        json!({"scope": "fs", "action": "read", "target": "./README.md"}),
        &[],
    );
    assert_eq!((code, d["decision"].clone()), (0, json!("allow")));
    let (code, d) = explain(
        dir.path(),
        json!({"scope": "shell", "action": "exec", "target": "touch pwned"}),
        &[],
    );
    assert_eq!((code, d["decision"].clone()), (3, json!("ask")));
    assert!(
        d["approval"]["digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(d["resource"]["argv"], json!(["touch", "pwned"]));
    assert!(
        !dir.path().join("pwned").exists(),
        "explain executed the command"
    );
    let (code, d) = explain(
        dir.path(),
        json!({"scope": "net", "action": "fetch", "target": "https://x.org"}),
        &[],
    );
    assert_eq!((code, d["source"]["layer"].clone()), (1, json!("default")));
}

#[test]
fn explain_intersects_the_node_with_the_policy() {
    let dir = setup();
    let node = ["--graph", "g.agraph.json", "--node", "writer"];
    let (code, d) = explain(
        dir.path(),
        json!({"scope": "fs", "action": "write", "target": "docs/a.md"}),
        &node,
    );
    assert_eq!(code, 0);
    assert_eq!(d["covered_by"], json!(["fs:write:docs/**"]));
    let (code, d) = explain(
        dir.path(),
        json!({"scope": "fs", "action": "write", "target": "src/a.rs"}),
        &node,
    );
    assert_eq!((code, d["source"]["layer"].clone()), (1, json!("node")));
    // The node grants pytest*, the policy asks.
    let (code, _) = explain(
        dir.path(),
        json!({"scope": "shell", "action": "exec", "target": "pytest -q"}),
        &node,
    );
    assert_eq!(code, 3);
    let (code, d) = explain(
        dir.path(),
        json!({"scope": "shell", "action": "exec", "target": "rm -rf /"}),
        &node,
    );
    assert_eq!((code, d["source"]["layer"].clone()), (1, json!("node")));
}

#[test]
fn explain_finds_a_body_node_by_its_scope_address_as_the_sandbox_does() {
    let dir = setup();
    let body = |perms: Value| {
        json!({"type": "loop", "title": "t", "description": "d",
            "requirements": {"permissions": perms.clone(), "workspace": "read_write"},
            "loop": {"mode": "repeat", "max_iterations": 1, "body": {"entrypoints": ["step"],
                "nodes": {"step": {"title": "t", "description": "d",
                    "requirements": {"permissions": perms, "workspace": "read_write"}}}}}})
    };
    let graph = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t/two", "title": "Two bodies",
        "objective": "Two nodes named step.", "entrypoints": ["first", "second"],
        "nodes": {"first": body(json!(["fs:read:**"])), "second": body(json!(["fs:write:**"]))}
    });
    std::fs::write(dir.path().join("two.agraph.json"), graph.to_string()).unwrap();
    let write = json!({"scope": "fs", "action": "write", "target": "a.txt"});
    let at = |node: &str| {
        explain(
            dir.path(),
            write.clone(),
            &["--graph", "two.agraph.json", "--node", node],
        )
        .0
    };
    assert_eq!(at("second[0].step"), 0);
    assert_eq!(at("second.step"), 0);
    assert_eq!(at("first[0].step"), 1);
    // A bare id is the first body node of that id.
    assert_eq!(at("step"), 1);
}

#[test]
fn without_a_policy_table_everything_is_denied_and_bad_input_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let (code, d) = explain(
        dir.path(),
        json!({"scope": "fs", "action": "read", "target": "a"}),
        &[],
    );
    assert_eq!((code, d["decision"].clone()), (1, json!("deny")));
    let (code, _) = weft(dir.path(), &["policy", "explain", "{not json"]);
    assert_eq!(code, 2);
    std::fs::write(
        dir.path().join("bad.toml"),
        "[[policy.rules]]\ndecision = \"allow\"\npermission = \"disk:x\"\n",
    )
    .unwrap();
    let (code, _) = weft(
        dir.path(),
        &[
            "policy",
            "explain",
            r#"{"scope":"fs","action":"read","target":"a"}"#,
            "--config",
            "bad.toml",
        ],
    );
    assert_eq!(code, 2);
}

#[test]
fn sandbox_doctor_reports_full_enforcement_here() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = weft(dir.path(), &["sandbox", "doctor", "--json"]);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["fully_enforced"], true);
    let names: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "landlock_fs",
            "landlock_net",
            "landlock_scope",
            "seccomp",
            "capabilities",
            "namespaces",
            "descriptors",
            "device_nodes",
            "keyring",
            "network_filter",
            "step_identity",
            "rlimits",
            "pid_namespace",
            "process_cap",
            "bubblewrap"
        ]
    );
    // Each protection of the threat model is reported as the probe found it in force.
    for check in report["checks"].as_array().unwrap() {
        if check["required"] == true {
            assert_eq!(check["enforced"], true, "{check}");
        }
    }
}

#[test]
fn the_hidden_helper_confines_a_real_command() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let policy = json!({"read_roots": [ws], "write_roots": [ws], "net": {"mode": "none"},
                        "cpu_seconds": 10, "max_file_bytes": null})
    .to_string();
    let outside = dir.path().join("outside.txt");
    let script = format!("echo in > inside.txt; echo out > '{}'", outside.display());
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(&ws)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args([
            "sandbox-exec",
            "--policy",
            &policy,
            "--",
            "/bin/sh",
            "-c",
            &script,
        ])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(ws.join("inside.txt").exists());
    assert!(!outside.exists());
    // A malformed policy blocks: the command is not run.
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(&ws)
        .args([
            "sandbox-exec",
            "--policy",
            "{",
            "--",
            "/bin/sh",
            "-c",
            "touch ran",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("weft-sandbox-exec: blocked: "));
    assert!(!ws.join("ran").exists());
}

fn sandbox_graph() -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t/sandbox", "title": "Sandbox",
        "objective": "Confine exec nodes by their permissions.",
        "policy": {"on_node_failure": "continue"},
        "entrypoints": ["writer", "intruder", "plain"],
        "nodes": {
            "writer": {"title": "Writer", "description": "Writes where it may.",
                "requirements": {"permissions": ["fs:read:**", "fs:write:out/**"], "workspace": "read_write"},
                "x-weft-exec": {"run": "echo hi > out/a.txt && cat out/a.txt"}},
            "intruder": {"title": "Intruder", "description": "Reads only, tries to write.",
                "requirements": {"permissions": ["fs:read:**"]},
                "x-weft-exec": {"run": "echo x > stolen.txt"}},
            "plain": {"title": "Plain", "description": "Declares nothing.",
                "x-weft-exec": {"run": "echo free > plain.txt"}}
        }
    })
}

fn node(report: &Value, id: &str) -> Value {
    let nodes = report["nodes"].as_array().unwrap();
    nodes.iter().find(|n| n["id"] == id).cloned().unwrap()
}

#[test]
fn run_sandbox_confines_every_exec_node_by_its_permissions() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("out")).unwrap();
    std::fs::write(
        dir.path().join("g.agraph.json"),
        sandbox_graph().to_string(),
    )
    .unwrap();
    let (code, out) = weft(dir.path(), &["run", "--sandbox", "--json", "g.agraph.json"]);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(code, 1, "{report}");
    assert_eq!(node(&report, "writer")["state"], "succeeded", "{report}");
    let intruder = node(&report, "intruder");
    assert_eq!(intruder["state"], "failed", "{report}");
    // Landlock refuses it (`EACCES`); for a root weft the read root is also a read-only
    // idmapped mount, which refuses first (`EROFS`).
    let error = intruder["error"].as_str().unwrap();
    assert!(
        error.contains("Permission denied") || error.contains("Read-only file system"),
        "{report}"
    );
    // Declaring nothing is no way out: the defaults grant no write.
    assert_eq!(node(&report, "plain")["state"], "failed", "{report}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/a.txt")).unwrap(),
        "hi\n"
    );
    assert!(
        !dir.path().join("stolen.txt").exists(),
        "a read-only node wrote a file"
    );
    assert!(!dir.path().join("plain.txt").exists());
    // Control: without --sandbox the same node writes.
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(other.path().join("out")).unwrap();
    std::fs::write(
        other.path().join("g.agraph.json"),
        sandbox_graph().to_string(),
    )
    .unwrap();
    let (code, _) = weft(other.path(), &["run", "--json", "g.agraph.json"]);
    assert_eq!(code, 0);
    assert!(other.path().join("stolen.txt").exists());
}

#[test]
fn the_sandboxed_steps_example_runs_confined() {
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sandboxed-steps.agraph.yaml");
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = weft(
        dir.path(),
        &["run", "--sandbox", "--json", example.to_str().unwrap()],
    );
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(code, 0, "{report}");
    // `out/` did not exist: the write root of `fs:write:out/**` was created for the writer.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/report.txt")).unwrap(),
        "all good\n"
    );
    let auditor = node(&report, "audit_report");
    assert_eq!(auditor["state"], "failed", "{report}");
    assert!(
        !dir.path().join("audit-note.txt").exists(),
        "a read-only step wrote a file"
    );
}

#[test]
fn resume_sandbox_confines_the_nodes_still_to_run() {
    // A gate first, so the run stops (exit 3) before the exec node; the resume runs it.
    let graph = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t/resume-sandbox",
        "title": "Resume sandboxed", "objective": "Confine what a resume runs.",
        "entrypoints": ["go"],
        "nodes": {
            "go": {"type": "gate", "title": "Go", "description": "A person lets it run.",
                "gate": {"mode": "approve", "prompt": "Run it?"}},
            "intruder": {"title": "Intruder", "description": "Reads only, tries to write.",
                "depends_on": ["go"],
                "requirements": {"permissions": ["fs:read:**"]},
                "x-weft-exec": {"run": "echo x > stolen.txt"}}
        }
    });
    for sandboxed in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("g.agraph.json"), graph.to_string()).unwrap();
        let (code, out) = weft(dir.path(), &["run", "--json", "g.agraph.json"]);
        assert_eq!(code, 3, "{out}");
        let run: Value = serde_json::from_str(&out).unwrap();
        let run_id = run["run_id"].as_str().unwrap().to_string();
        let (code, out) = weft(dir.path(), &["approve", &run_id, "go", "--as", "ana"]);
        assert_eq!(code, 0, "{out}");
        let mut args = vec!["resume", run_id.as_str(), "--json"];
        if sandboxed {
            args.push("--sandbox");
        }
        let (_, out) = weft(dir.path(), &args);
        let report: Value = serde_json::from_str(&out).unwrap();
        let report = report.get("report").cloned().unwrap_or(report);
        let intruder = node(&report, "intruder");
        assert_eq!(
            dir.path().join("stolen.txt").exists(),
            !sandboxed,
            "sandboxed {sandboxed}: {report}"
        );
        if sandboxed {
            assert_eq!(intruder["state"], "failed", "{report}");
        }
    }
}
