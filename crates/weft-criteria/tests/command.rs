//! `command` criteria against real processes: exit codes, stdout patterns, the environment,
//! timeouts that kill a whole process group, output caps and cwd confinement.

#![allow(
    clippy::unwrap_used,
    reason = "a panic in a test helper is a test failure with a message"
)]

mod common;

use std::time::{Duration, Instant};

use common::Fixture;
use serde_json::json;
use weft_criteria::Outcome;

#[test]
fn exit_code_and_stdout_pattern() {
    let f = Fixture::new();
    let r =
        f.one(json!({"kind": "command", "run": "echo hello", "expect_stdout_matches": "hel+o"}));
    assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.evidence);
    assert_eq!(r.evidence.exit_code, Some(0));
    let stdout = r.evidence.stdout.unwrap();
    assert_eq!(stdout.text, "hello\n");
    assert!(!stdout.truncated);
    assert_eq!(r.evidence.matched_text.as_deref(), Some("hello"));

    let r = f.one(json!({"kind": "command", "run": "echo oops >&2; exit 3"}));
    assert_eq!(r.outcome, Outcome::Failed);
    assert_eq!(r.evidence.exit_code, Some(3));
    assert_eq!(r.evidence.stderr.unwrap().text, "oops\n");
    assert!(
        r.evidence.summary.contains("expected 0"),
        "{}",
        r.evidence.summary
    );

    let r = f.one(json!({"kind": "command", "run": "exit 3", "expect_exit_code": 3}));
    assert_eq!(r.outcome, Outcome::Passed);

    let r = f.one(json!({"kind": "command", "run": "echo bye", "expect_stdout_matches": "^hello"}));
    assert_eq!(r.outcome, Outcome::Failed);
    assert!(
        r.evidence.summary.contains("does not match"),
        "{}",
        r.evidence.summary
    );

    let r = f.one(json!({"kind": "command", "run": "true", "expect_stdout_matches": "("}));
    assert_eq!(r.outcome, Outcome::Error);
}

#[test]
fn environment_is_an_allowlist() {
    let f = Fixture::new();
    let r = f.one(json!({"kind": "command", "run": "env"}));
    assert_eq!(r.outcome, Outcome::Passed);
    let text = r.evidence.stdout.unwrap().text;
    let root = f.root().canonicalize().unwrap();
    assert!(text.contains(&format!("HOME={}", root.display())), "{text}");
    assert!(text.contains("LANG=C.UTF-8"), "{text}");
    assert!(text.contains("PATH=/usr/local/bin:/usr/bin:/bin"), "{text}");
    // cargo runs tests with CARGO_* variables set: none may reach the command.
    assert!(!text.contains("CARGO"), "{text}");
    let names: Vec<&str> = text.lines().filter_map(|l| l.split('=').next()).collect();
    for name in names {
        // The shell itself adds PWD (and SHLVL on some shells).
        assert!(
            ["PATH", "HOME", "LANG", "PWD", "SHLVL", "_", "OLDPWD"].contains(&name),
            "unexpected variable {name}"
        );
    }
}

/// A process is gone when `kill -0` fails, or it is a zombie waiting for init to reap it
/// (it no longer runs).
fn gone(pid: u32) -> bool {
    let alive = std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success();
    if !alive {
        return true;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(')')
        .next()
        .is_some_and(|rest| rest.trim_start().starts_with('Z'))
}

fn wait_gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn timeout_kills_the_process_group() {
    let f = Fixture::new();
    let started = Instant::now();
    let r = f.one(json!({
        "kind": "command",
        "run": "sleep 30 & echo $! > grandchild.pid; echo started; wait",
        "timeout_seconds": 1
    }));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(r.outcome, Outcome::Failed);
    assert!(r.evidence.timed_out);
    assert_eq!(r.evidence.exit_code, None);
    // What was printed before the timeout is kept.
    assert_eq!(r.evidence.stdout.unwrap().text, "started\n");
    let pid: u32 = std::fs::read_to_string(f.root().join("grandchild.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_gone(pid), "grandchild {pid} survived the timeout");
}

#[test]
fn timeout_applies_when_a_grandchild_holds_the_pipe() {
    // The shell exits at once, but its background child keeps stdout open.
    let f = Fixture::new();
    let started = Instant::now();
    let r = f.one(json!({
        "kind": "command",
        "run": "sleep 30 & echo $! > grandchild.pid",
        "timeout_seconds": 0.5
    }));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(r.evidence.timed_out);
    let pid: u32 = std::fs::read_to_string(f.root().join("grandchild.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_gone(pid), "grandchild {pid} survived the timeout");
}

#[test]
fn dropping_the_evaluation_kills_the_process_group() {
    let f = Fixture::new();
    let block = weft_criteria::SuccessBlock::from_value(&json!({"criteria": [{
        "id": "c", "kind": "command", "description": "d",
        "run": "sleep 30 & echo $! > grandchild.pid; wait"
    }]}))
    .unwrap();
    let env = f.env();
    let pid_file = f.root().join("grandchild.pid");
    common::runtime().block_on(async {
        let evaluation = weft_criteria::evaluate(&block, &env);
        // The caller gives up (the engine cancelling a node) while the command runs.
        let gave_up = tokio::time::timeout(Duration::from_millis(500), evaluation).await;
        assert!(gave_up.is_err());
    });
    let pid: u32 = std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_gone(pid), "grandchild {pid} survived the cancellation");
}

#[test]
fn default_timeout_comes_from_limits() {
    let mut f = Fixture::new();
    f.limits.default_command_timeout = Duration::from_millis(300);
    let r = f.one(json!({"kind": "command", "run": "sleep 5"}));
    assert!(r.evidence.timed_out);
}

#[test]
fn huge_timeouts_saturate() {
    let f = Fixture::new();
    let r = f.one(json!({"kind": "command", "run": "true", "timeout_seconds": 1e300}));
    assert_eq!(r.outcome, Outcome::Passed);
}

#[test]
fn output_is_capped_and_drained() {
    let f = Fixture::new();
    let r = f.one(json!({
        "kind": "command",
        "run": "head -c 10000000 /dev/zero | tr '\\0' a; echo done >&2"
    }));
    assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.evidence.summary);
    let stdout = r.evidence.stdout.unwrap();
    assert!(stdout.truncated);
    assert_eq!(stdout.total_bytes, 10_000_000);
    assert_eq!(stdout.text.len(), 64 * 1024);
    assert!(stdout.text.bytes().all(|b| b == b'a'));
    let stderr = r.evidence.stderr.unwrap();
    assert_eq!(stderr.text, "done\n");
    assert!(!stderr.truncated);
}

/// Peak resident memory of this test process, in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn memory_stays_bounded_on_huge_output() {
    let f = Fixture::new();
    let before = peak_rss_kib();
    let r = f.one(json!({"kind": "command", "run": "head -c 200000000 /dev/zero"}));
    let grown = peak_rss_kib().saturating_sub(before);
    assert_eq!(r.evidence.stdout.unwrap().total_bytes, 200_000_000);
    // 200 MB went through the pipe; the process kept 64 KiB of it.
    assert!(grown < 48 * 1024, "peak memory grew by {grown} KiB");
}

#[test]
fn cwd_is_confined_to_the_workspace() {
    let f = Fixture::new();
    f.write("sub/keep", "");
    let r = f.one(json!({"kind": "command", "run": "pwd", "cwd": "sub"}));
    assert_eq!(r.outcome, Outcome::Passed);
    assert!(r.evidence.stdout.unwrap().text.trim_end().ends_with("/sub"));

    for cwd in ["..", "sub/../..", "/tmp", "missing"] {
        let r = f.one(json!({"kind": "command", "run": "touch escaped", "cwd": cwd}));
        assert_eq!(r.outcome, Outcome::Error, "cwd {cwd}");
        assert!(r.evidence.summary.contains("cwd"), "{}", r.evidence.summary);
    }
    let outside = tempfile::TempDir::new().unwrap();
    std::os::unix::fs::symlink(outside.path(), f.root().join("link")).unwrap();
    let r = f.one(json!({"kind": "command", "run": "touch escaped", "cwd": "link"}));
    assert_eq!(r.outcome, Outcome::Error);
    assert!(
        r.evidence.summary.contains("outside the workspace"),
        "{}",
        r.evidence.summary
    );
    assert!(!outside.path().join("escaped").exists());
    // A file is not a working directory.
    let r = f.one(json!({"kind": "command", "run": "true", "cwd": "sub/keep"}));
    assert_eq!(r.outcome, Outcome::Error);
}

#[test]
fn record_evidence_false_keeps_only_the_summary() {
    let f = Fixture::new();
    let r = f.one(
        json!({"kind": "command", "run": "echo secret-ish; exit 1", "record_evidence": false}),
    );
    assert_eq!(r.outcome, Outcome::Failed);
    assert!(r.evidence.stdout.is_none());
    assert!(r.evidence.exit_code.is_none());
    assert!(!r.evidence.summary.is_empty());
}
