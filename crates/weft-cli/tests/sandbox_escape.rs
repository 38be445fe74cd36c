//! Escapes of `weft run --sandbox` through the real binary, each attack an AGS graph: grants
//! found by a node's full scope address (two loop bodies each with a `step`; a body node that
//! declares nothing inside a read-only loop), the operator's `[policy]` narrowing a step's
//! roots (`deny fs:*:.git/**` under `fs:write:**`), and the store under `.weft` out of a
//! step's reach. Each test checks that nothing outside the allowed set changed, with a
//! control that the allowed part did.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure"
)]

use std::path::Path;

use assert_cmd::Command;
use serde_json::{Value, json};

fn weft(dir: &Path, args: &[&str]) -> (i32, Value) {
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let report = serde_json::from_str(&stdout).unwrap_or_else(|_| {
        panic!(
            "not a report: {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), report)
}

fn graph(id: &str, nodes: Value, entrypoints: &[&str]) -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": id, "title": "Escape",
        "objective": "Try to escape the sandbox.",
        "policy": {"on_node_failure": "continue"},
        "entrypoints": entrypoints,
        "nodes": nodes
    })
}

fn exec(run: &str, requirements: Option<Value>) -> Value {
    let mut node = json!({"title": "t", "description": "d", "x-weft-exec": {"run": run}});
    if let Some(r) = requirements {
        node["requirements"] = r;
    }
    node
}

fn looped(requirements: Value, nodes: Value) -> Value {
    let entrypoints: Vec<String> = nodes.as_object().unwrap().keys().cloned().collect();
    json!({"type": "loop", "title": "t", "description": "d", "requirements": requirements,
        "loop": {"mode": "repeat", "max_iterations": 1,
            "body": {"entrypoints": entrypoints, "nodes": nodes}}})
}

fn run_sandboxed(dir: &Path, g: &Value, extra: &[&str]) -> (i32, Value) {
    std::fs::write(dir.join("g.agraph.json"), g.to_string()).unwrap();
    let mut args = vec!["run", "--sandbox", "--json"];
    args.extend_from_slice(extra);
    args.push("g.agraph.json");
    weft(dir, &args)
}

#[test]
fn grants_follow_the_full_address_and_an_undeclared_body_node_is_confined() {
    let read_only = json!({"permissions": ["fs:read:**"]});
    let read_write =
        json!({"permissions": ["fs:read:**", "fs:write:**"], "workspace": "read_write"});
    let g = graph(
        "t/address",
        json!({
            // Declared first, so a lookup by the last id finds this `step` for both bodies.
            "writer": looped(read_write.clone(), json!({
                "step": exec("echo rw > rw.txt", Some(read_write.clone()))})),
            "reader": looped(read_only.clone(), json!({
                "step": exec("echo ro > ro.txt", Some(read_only.clone())),
                "bare": exec("echo bare > bare.txt", None)}))
        }),
        &["writer", "reader"],
    );
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = run_sandboxed(dir.path(), &g, &[]);
    assert!(
        dir.path().join("rw.txt").exists(),
        "the writer's step: {report}"
    );
    assert!(
        !dir.path().join("ro.txt").exists(),
        "the read-only body's step ran with the other body's grants: {report}"
    );
    assert!(
        !dir.path().join("bare.txt").exists(),
        "a body node that declares nothing ran unconfined: {report}"
    );
    // Control: without --sandbox both write.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("g.agraph.json"), g.to_string()).unwrap();
    weft(other.path(), &["run", "--json", "g.agraph.json"]);
    assert!(other.path().join("ro.txt").exists() && other.path().join("bare.txt").exists());
}

const GIT_DENIED: &str = "[policy]\n\
    [[policy.rules]]\ndecision = \"deny\"\npermission = \"fs:*:.git/**\"\n\
    [[policy.rules]]\ndecision = \"allow\"\npermission = \"fs:*\"\n";

#[test]
fn the_operator_policy_keeps_git_unwritable_under_a_full_write_grant() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
    std::fs::write(dir.path().join(".git/config"), "[core]\n").unwrap();
    std::fs::write(dir.path().join("weft.toml"), GIT_DENIED).unwrap();
    let everything =
        json!({"permissions": ["fs:read:**", "fs:write:**"], "workspace": "read_write"});
    let g = graph(
        "t/policy",
        json!({"step": exec(
            "printf '[core]\\n\\tfsmonitor = touch /tmp/owned\\n' >> .git/config; \
             echo x > .git/hooks/pre-commit; echo ok > allowed.txt",
            Some(everything))}),
        &["step"],
    );
    let (_, report) = run_sandboxed(dir.path(), &g, &["--config", "weft.toml"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".git/config")).unwrap(),
        "[core]\n",
        "{report}"
    );
    assert!(!dir.path().join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("allowed.txt")).unwrap(),
        "ok\n",
        "{report}"
    );
    // Control: without the policy the same grant reaches `.git`.
    std::fs::remove_file(dir.path().join("weft.toml")).unwrap();
    run_sandboxed(dir.path(), &g, &[]);
    assert!(dir.path().join(".git/hooks/pre-commit").exists());
}

#[test]
fn a_step_cannot_rewrite_the_store_or_the_audit_trail() {
    let dir = tempfile::tempdir().unwrap();
    let everything =
        json!({"permissions": ["fs:read:**", "fs:write:**"], "workspace": "read_write"});
    let g = graph(
        "t/state",
        json!({"step": exec(
            "echo forged > .weft/weft.db && echo wrote-db; echo x >> .weft/audit/x; \
             mkdir -p .weft/bin && echo planted > .weft/bin/grep; echo ok > allowed.txt",
            Some(everything))}),
        &["step"],
    );
    let (_, report) = run_sandboxed(dir.path(), &g, &[]);
    let db = std::fs::read(dir.path().join(".weft/weft.db")).unwrap();
    assert!(
        db.starts_with(b"SQLite format 3"),
        "the store was overwritten"
    );
    assert!(!dir.path().join(".weft/bin/grep").exists());
    assert!(!dir.path().join(".weft/audit/x").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("allowed.txt")).unwrap(),
        "ok\n",
        "{report}"
    );
}

#[test]
fn criteria_after_a_step_do_not_run_what_the_step_planted_unconfined() {
    let outside = tempfile::tempdir().unwrap();
    let (planted_tool, planted_hook) = (outside.path().join("tool"), outside.path().join("hook"));
    let everything =
        json!({"permissions": ["fs:read:**", "fs:write:**"], "workspace": "read_write"});
    let plant = format!(
        "mkdir -p .weft/bin; printf '#!/bin/sh\\ntouch {}\\n' > .weft/bin/grep; \
         chmod +x .weft/bin/grep; git config core.fsmonitor 'touch {}'; true",
        planted_tool.display(),
        planted_hook.display()
    );
    let mut step = exec(&plant, Some(everything));
    step["success"] = json!({"criteria": [{"id": "clean", "kind": "command",
        "description": "The tree is readable.", "run": "git status --short; grep -q x /dev/null; true"}]});
    let g = graph("t/criteria", json!({"step": step}), &["step"]);
    for sandboxed in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let init = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(init.success());
        let (_, report) = if sandboxed {
            run_sandboxed(dir.path(), &g, &[])
        } else {
            std::fs::write(dir.path().join("g.agraph.json"), g.to_string()).unwrap();
            weft(dir.path(), &["run", "--json", "g.agraph.json"])
        };
        // The plant itself worked where the step may write (`.git/config`).
        let config = std::fs::read_to_string(dir.path().join(".git/config")).unwrap();
        assert!(config.contains("fsmonitor"), "{report}");
        assert_eq!(
            planted_hook.exists(),
            !sandboxed,
            "sandboxed {sandboxed}: the planted fsmonitor hook ran unconfined: {report}"
        );
        assert_eq!(
            planted_tool.exists(),
            !sandboxed,
            "sandboxed {sandboxed}: the planted .weft/bin/grep ran unconfined: {report}"
        );
        let _ = std::fs::remove_file(&planted_tool);
        let _ = std::fs::remove_file(&planted_hook);
    }
}

#[test]
fn resume_refuses_a_log_whose_document_was_rewritten() {
    let g = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t/forged", "title": "Forged",
        "objective": "Stop at a gate, then resume.", "entrypoints": ["go"],
        "nodes": {
            "go": {"type": "gate", "title": "Go", "description": "A person lets it run.",
                "gate": {"mode": "approve", "prompt": "Run it?"}},
            "after": exec("echo safe > ok.txt", None)
        }
    });
    let mut g = g;
    g["nodes"]["after"]["depends_on"] = json!(["go"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("g.agraph.json"), g.to_string()).unwrap();
    let (code, report) = weft(dir.path(), &["run", "--json", "g.agraph.json"]);
    assert_eq!(code, 3, "{report}");
    let run_id = report["run_id"].as_str().unwrap().to_owned();
    let approve = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .args(["approve", &run_id, "go", "--as", "ana"])
        .output()
        .unwrap();
    assert!(approve.status.success());
    // What a step with write access to the store would do: rewrite the stored command.
    let forge = std::process::Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\n\
             n=c.execute(\"update events set payload=replace(payload,'echo safe > ok.txt',\
             'echo forged > forged.txt')\").rowcount\nc.commit()\nprint(n)",
            dir.path().join(".weft/weft.db").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let rewritten: u32 = String::from_utf8_lossy(&forge.stdout)
        .trim()
        .parse()
        .unwrap();
    assert!(rewritten >= 1, "{forge:?}");
    let resume = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .args(["resume", &run_id, "--json"])
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&resume.stdout),
        String::from_utf8_lossy(&resume.stderr)
    );
    assert!(!resume.status.success(), "{all}");
    assert!(all.contains("altered"), "{all}");
    assert!(
        !dir.path().join("forged.txt").exists(),
        "the forged command ran"
    );
    assert!(!dir.path().join("ok.txt").exists());
}

#[test]
fn a_grant_root_that_is_a_planted_link_blocks_the_step_and_names_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
    let writes_out =
        json!({"permissions": ["fs:read:**", "fs:write:out/**"], "workspace": "read_write"});
    let g = graph(
        "t/link",
        json!({"step": exec("echo x > out/escaped", Some(writes_out))}),
        &["step"],
    );
    let (_, report) = run_sandboxed(dir.path(), &g, &[]);
    let step = &report["nodes"][0];
    assert_eq!(step["state"], "blocked", "{report}");
    let error = step["error"].as_str().unwrap();
    assert!(
        error.contains("symbolic link") && error.contains("/out"),
        "{error}"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

/// Runs `g` in `dir` through `weft run` started by a caller that leaves descriptor 7 open on
/// `log` (an outside file), as a careless parent would.
fn run_with_a_leaked_descriptor(dir: &Path, g: &Value, log: &Path, sandboxed: bool) {
    std::fs::write(dir.join("g.agraph.json"), g.to_string()).unwrap();
    let weft = assert_cmd::cargo::cargo_bin("weft");
    let mut args = vec![
        log.to_str().unwrap(),
        weft.to_str().unwrap(),
        "run",
        "--json",
    ];
    if sandboxed {
        args.push("--sandbox");
    }
    args.push("g.agraph.json");
    let launch = std::process::Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(
            "import os,subprocess,sys\nfd=os.open(sys.argv[1], os.O_WRONLY|os.O_APPEND)\n\
             os.dup2(fd, 7)\n\
             subprocess.run(sys.argv[2:], pass_fds=[7], stdout=subprocess.DEVNULL)",
        )
        .args(&args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(launch.status.success(), "{launch:?}");
}

#[test]
fn a_step_gets_no_device_nodes_and_no_descriptor_its_caller_left_open() {
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("caller.log");
    std::fs::write(&log, "").unwrap();
    let writes_out =
        json!({"permissions": ["fs:read:**", "fs:write:out/**"], "workspace": "read_write"});
    let leak = "(echo ESCAPED >&7) 2>/dev/null; mkdir -p out; true";
    let attack = format!("mknod out/kmsg c 1 11; mknod out/sda b 8 0; {leak}");
    let dir = tempfile::tempdir().unwrap();
    let g = graph(
        "t/root",
        json!({"step": exec(&attack, Some(writes_out.clone()))}),
        &["step"],
    );
    run_with_a_leaked_descriptor(dir.path(), &g, &log, true);
    assert!(dir.path().join("out").is_dir(), "the step did not run");
    assert!(
        !dir.path().join("out/kmsg").exists(),
        "a device node was made"
    );
    assert!(
        !dir.path().join("out/sda").exists(),
        "a device node was made"
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "",
        "the step wrote through a descriptor weft's caller left open"
    );
    // Control: unconfined, the same leak reaches the outside file.
    let dir = tempfile::tempdir().unwrap();
    let g = graph(
        "t/root",
        json!({"step": exec(leak, Some(writes_out))}),
        &["step"],
    );
    run_with_a_leaked_descriptor(dir.path(), &g, &log, false);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "ESCAPED\n");
}

#[test]
fn a_non_root_weft_caps_processes_by_rlimit_where_a_root_weft_made_the_cgroup() {
    // A root weft makes the `weft` pids cgroup on first use (the doctor's trial job)…
    let weft = assert_cmd::cargo::cargo_bin("weft");
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    if root {
        let made = std::process::Command::new(&weft)
            .args(["sandbox", "doctor"])
            .output()
            .unwrap();
        assert!(made.status.success(), "{made:?}");
    }
    // …and `nobody`, from a copy (cargo's target directory may be closed to it), must still
    // have every protection, the process cap through RLIMIT_NPROC instead of the cgroup.
    let copy = tempfile::tempdir().unwrap();
    let mut permissions = std::fs::metadata(copy.path()).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(copy.path(), permissions).unwrap();
    let binary = copy.path().join("weft");
    std::fs::copy(&weft, &binary).unwrap();
    let mut doctor = if root {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&binary);
        c
    } else {
        std::process::Command::new(&binary)
    };
    let out = doctor
        .args(["sandbox", "doctor", "--json"])
        .current_dir(copy.path())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{out:?}"));
    assert_eq!(report["fully_enforced"], true, "{report}");
    let cap = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "process_cap")
        .unwrap();
    assert!(
        cap["detail"].as_str().unwrap().contains("RLIMIT_NPROC"),
        "{cap}"
    );
}

#[test]
fn a_root_wefts_step_runs_unprivileged_and_its_writes_land_as_the_workspace_owner() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let root = effective_uid() == 0;
    // Where the test is root, a workspace of another owner: the step's writes must land as
    // that owner, not as root nor as the step's uid.
    let owner = if root {
        std::os::unix::fs::chown(dir.path(), Some(4321), Some(4322)).unwrap();
        (4321, 4322)
    } else {
        let m = std::fs::metadata(dir.path()).unwrap();
        (m.uid(), m.gid())
    };
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("root-only.txt");
    std::fs::write(&secret, "ROOT-ONLY\n").unwrap();
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let writes_out =
        json!({"permissions": ["fs:read:**", "fs:write:out/**"], "workspace": "read_write"});
    let g = graph(
        "t/identity",
        json!({"step": exec(
            &format!("id -u > out/ids; id -g >> out/ids; cat '{}' >> out/ids; true", secret.display()),
            Some(writes_out))}),
        &["step"],
    );
    let (_, report) = run_sandboxed(dir.path(), &g, &[]);
    let ids = std::fs::read_to_string(dir.path().join("out/ids"))
        .unwrap_or_else(|e| panic!("the step wrote nothing ({e}): {report}"));
    let expected = if root {
        "65534\n65534\n".to_owned()
    } else {
        format!("{}\n{}\n", owner.0, owner.1)
    };
    assert_eq!(ids, expected, "{report}");
    let m = std::fs::metadata(dir.path().join("out/ids")).unwrap();
    assert_eq!((m.uid(), m.gid()), owner);
    let made = std::fs::metadata(dir.path().join("out")).unwrap();
    assert_eq!(
        (made.uid(), made.gid()),
        owner,
        "weft made `out` as another owner"
    );
}

/// The effective uid of the test process.
fn effective_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|u| u.parse().ok())
        .unwrap()
}
