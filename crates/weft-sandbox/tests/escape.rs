//! Escape tests on real processes, through the real helper binary: writes outside the write
//! roots, reading a (fake) `~/.ssh` directly and through a symlink, TCP and UDP without a
//! net grant, environment leakage, the CPU-time cap, the output cap, the wall-clock kill of
//! the whole process group, the process cap (pids cgroup as root, `RLIMIT_NPROC` in a user
//! namespace otherwise) against a fork bomb, the PID-namespace kill of a `setsid` child, and
//! fail-closed refusals. No process of a job may survive it: the tests scan `/proc` for a
//! marker in the job's environment. Each escape has a control that shows
//! the same command succeeds when the grant is there, so the refusal is the sandbox's doing.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure"
)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use weft_sandbox::{Confinement, Helper, Job, NetAccess, Outcome, Sandbox, SandboxError};

fn helper() -> Helper {
    Helper::binary(env!("CARGO_BIN_EXE_weft-sandbox-exec"))
}

fn env() -> Vec<(String, String)> {
    vec![
        ("PATH".into(), "/usr/bin:/bin".into()),
        ("LANG".into(), "C.UTF-8".into()),
    ]
}

fn sh(script: &str) -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), script.into()]
}

async fn run_in(
    cwd: &Path,
    argv: &[String],
    c: &Confinement,
    env: &[(String, String)],
) -> Result<Outcome, SandboxError> {
    let job = Job {
        argv,
        cwd,
        env,
        stdin: None,
        confinement: c,
        timeout: Duration::from_secs(60),
        max_output: 1 << 20,
    };
    weft_sandbox::run::run(&helper(), &job).await
}

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("out")).unwrap();
    (dir, ws)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_machine_enforces_everything_weft_requires() {
    let sandbox = Sandbox::probe(helper()).await;
    let report = sandbox.report();
    assert!(report.fully_enforced(), "missing: {:?}", report.missing());
    assert!(report.landlock_abi >= 6, "{report:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_outside_the_write_roots_are_refused() {
    let (dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        write_roots: vec![ws.join("out")],
        ..Confinement::minimal()
    };
    let outside = dir.path().join("escaped.txt");
    let script = format!(
        "echo ok > out/inside.txt; echo no > ws-root.txt; echo no > '{}'; echo done",
        outside.display()
    );
    let o = run_in(&ws, &sh(&script), &c, &env()).await.unwrap();
    assert_eq!(text(&o.stdout), "done\n");
    assert_eq!(
        std::fs::read_to_string(ws.join("out/inside.txt")).unwrap(),
        "ok\n"
    );
    assert!(
        !ws.join("ws-root.txt").exists(),
        "the read-only part of the workspace was written"
    );
    assert!(
        !outside.exists(),
        "a file outside the workspace was written"
    );
    assert!(
        text(&o.stderr).contains("Permission denied"),
        "{}",
        text(&o.stderr)
    );
    // A symlink inside the write root that points outside does not carry the write out.
    let target = dir.path().join("via-link.txt");
    std::os::unix::fs::symlink(&target, ws.join("out/link")).unwrap();
    let o = run_in(&ws, &sh("echo no > out/link; echo done"), &c, &env())
        .await
        .unwrap();
    assert_eq!(text(&o.stdout), "done\n");
    assert!(
        !target.exists(),
        "a write followed a symlink out of the write root"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fake_home_ssh_key_cannot_be_read_directly_or_through_a_symlink() {
    let (dir, ws) = workspace();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "SECRET-KEY-MATERIAL\n").unwrap();
    std::os::unix::fs::symlink(home.join(".ssh/id_ed25519"), ws.join("innocent.txt")).unwrap();
    let mut env = env();
    env.push(("HOME".into(), home.display().to_string()));
    let c = Confinement {
        read_roots: vec![ws.clone()],
        ..Confinement::minimal()
    };
    let script = "cat \"$HOME/.ssh/id_ed25519\"; cat innocent.txt; ls \"$HOME/.ssh\"; echo end";
    let o = run_in(&ws, &sh(script), &c, &env).await.unwrap();
    assert!(!text(&o.stdout).contains("SECRET"), "{}", text(&o.stdout));
    assert!(
        !text(&o.stdout).contains("id_ed25519"),
        "the directory was listed"
    );
    assert_eq!(text(&o.stdout), "end\n");
    // Control: with the home as a read root, the same script reads the key.
    let c = Confinement {
        read_roots: vec![ws.clone(), home.clone()],
        ..Confinement::minimal()
    };
    let o = run_in(&ws, &sh(script), &c, &env).await.unwrap();
    assert!(text(&o.stdout).contains("SECRET-KEY-MATERIAL"));
}

const CONNECT: &str = "import socket,sys\ns=socket.create_connection(('127.0.0.1',int(sys.argv[1])),timeout=5)\nprint('connected')";

fn python(code: &str, arg: &str) -> Vec<String> {
    vec![
        "/usr/bin/python3".into(),
        "-c".into(),
        code.into(),
        arg.into(),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn the_network_is_unreachable_without_a_grant() {
    let (_dir, ws) = workspace();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        ..Confinement::minimal()
    };
    let o = run_in(&ws, &python(CONNECT, &port.to_string()), &c, &env())
        .await
        .unwrap();
    assert_ne!(o.exit_code, Some(0));
    assert!(
        text(&o.stderr).contains("PermissionError"),
        "{}",
        text(&o.stderr)
    );
    assert!(listener.accept().is_err(), "the listener was reached");
    // UDP (which Landlock does not cover) is refused by the seccomp filter.
    let udp = "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 9))";
    let o = run_in(&ws, &python(udp, ""), &c, &env()).await.unwrap();
    assert!(
        text(&o.stderr).contains("PermissionError"),
        "{}",
        text(&o.stderr)
    );
    // A granted port is reachable; another port is not.
    let granted = Confinement {
        net: NetAccess::Ports { ports: vec![port] },
        ..c.clone()
    };
    let o = run_in(&ws, &python(CONNECT, &port.to_string()), &granted, &env())
        .await
        .unwrap();
    assert_eq!(text(&o.stdout), "connected\n", "{}", text(&o.stderr));
    assert!(listener.accept().is_ok());
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    other.set_nonblocking(true).unwrap();
    let other_port = other.local_addr().unwrap().port();
    let o = run_in(
        &ws,
        &python(CONNECT, &other_port.to_string()),
        &granted,
        &env(),
    )
    .await
    .unwrap();
    assert!(
        text(&o.stderr).contains("PermissionError"),
        "{}",
        text(&o.stderr)
    );
    assert!(other.accept().is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_allowlisted_environment_is_visible() {
    let (_dir, ws) = workspace();
    // cargo sets this in the test's own environment; it must not reach the command.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let c = Confinement {
        read_roots: vec![ws.clone()],
        ..Confinement::minimal()
    };
    let mut env = env();
    env.push(("VISIBLE".into(), "yes".into()));
    let o = run_in(&ws, &["/usr/bin/env".to_owned()], &c, &env)
        .await
        .unwrap();
    let mut names: Vec<String> = text(&o.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, _)| k.to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["LANG", "PATH", "VISIBLE"]);
    // Loader variables are refused outright.
    env.push(("LD_PRELOAD".into(), "/tmp/evil.so".into()));
    let e = run_in(&ws, &["/usr/bin/env".to_owned()], &c, &env)
        .await
        .unwrap_err();
    assert!(
        matches!(e, SandboxError::Env(ref n) if n == "LD_PRELOAD"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cpu_time_cap_stops_a_busy_loop() {
    let (_dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        cpu_seconds: Some(1),
        ..Confinement::minimal()
    };
    let o = run_in(&ws, &sh("while :; do :; done"), &c, &env())
        .await
        .unwrap();
    assert!(!o.timed_out, "the wall clock, not the CPU cap, stopped it");
    // SIGXCPU (24) at the soft limit, SIGKILL (9) at the hard one.
    assert!(matches!(o.signal, Some(24 | 9)), "{o:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn runaway_output_is_capped_and_the_group_killed() {
    let (_dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        ..Confinement::minimal()
    };
    let job = Job {
        argv: &sh("yes flood"),
        cwd: &ws,
        env: &env(),
        stdin: None,
        confinement: &c,
        timeout: Duration::from_secs(60),
        max_output: 64 * 1024,
    };
    let o = weft_sandbox::run::run(&helper(), &job).await.unwrap();
    assert!(o.output_capped);
    assert!(!o.timed_out);
    assert_eq!(o.stdout.len(), 64 * 1024);
    assert_eq!(o.signal, Some(9));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_wall_clock_limit_kills_the_whole_group() {
    let (_dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        write_roots: vec![ws.join("out")],
        ..Confinement::minimal()
    };
    let mark = marker("wall-clock");
    let env = marked_env(&mark);
    let job = Job {
        argv: &sh("sleep 300 & echo started > out/child; wait"),
        cwd: &ws,
        env: &env,
        stdin: None,
        confinement: &c,
        timeout: Duration::from_millis(500),
        max_output: 1024,
    };
    let o = weft_sandbox::run::run(&helper(), &job).await.unwrap();
    assert!(o.timed_out);
    assert!(
        ws.join("out/child").exists(),
        "the background sleep never started"
    );
    // The child's pid is the job's PID namespace's, so it is found by its marker. Every
    // process of the job has been sent SIGKILL when `run` returns, so none may be left.
    assert_none_survive(&mark, "the background sleep survived");
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_enforcement_blocks_instead_of_running_unconfined() {
    let (_dir, ws) = workspace();
    let marker = ws.join("out/ran");
    let c = Confinement {
        read_roots: vec![ws.clone()],
        write_roots: vec![ws.join("out")],
        ..Confinement::minimal()
    };
    let script = format!("touch '{}'", marker.display());
    let argv = sh(&script);
    let env = env();
    let job = Job {
        argv: &argv,
        cwd: &ws,
        env: &env,
        stdin: Some(b"ignored"),
        confinement: &c,
        timeout: Duration::from_secs(60),
        max_output: 1024,
    };
    // A helper that cannot be probed: nothing is known to be enforced, so nothing runs.
    let broken = Sandbox::probe(Helper::binary("/nonexistent/weft-sandbox-exec")).await;
    assert!(!broken.report().fully_enforced());
    let e = broken.run(&job).await.unwrap_err();
    assert!(matches!(e, SandboxError::Blocked(_)), "{e}");
    assert!(!marker.exists());
    // The helper itself refuses a policy it cannot apply, and says so.
    let bad = Helper {
        program: env!("CARGO_BIN_EXE_weft-sandbox-exec").into(),
        prefix: vec![
            "--policy".into(),
            "{not json".into(),
            "--".into(),
            "/bin/sh".into(),
            "-c".into(),
            script.clone().into(),
            "--policy".into(),
        ],
    };
    let e = weft_sandbox::run::run(&bad, &job).await.unwrap_err();
    assert!(matches!(e, SandboxError::Blocked(_)), "{e}");
    assert!(!marker.exists());
    // Control: the real sandbox runs it.
    let good = Sandbox::probe(helper()).await;
    let o = good.run(&job).await.unwrap();
    assert_eq!(o.exit_code, Some(0), "{}", text(&o.stderr));
    assert!(marker.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn stdin_reaches_the_confined_command() {
    let (_dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        ..Confinement::minimal()
    };
    let argv = ["/bin/cat".to_owned()];
    let env = env();
    let job = Job {
        argv: &argv,
        cwd: &ws,
        env: &env,
        stdin: Some(b"{\"in\":1}"),
        confinement: &c,
        timeout: Duration::from_secs(60),
        max_output: 1024,
    };
    let o = weft_sandbox::run::run(&helper(), &job).await.unwrap();
    assert_eq!(text(&o.stdout), "{\"in\":1}");
    assert_eq!(o.exit_code, Some(0));
}

/// A marker no other process on the machine carries, passed in the job's environment (which
/// every process of the job inherits, across `exec` too).
fn marker(what: &str) -> String {
    format!(
        "weft-escape-{what}-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    )
}

/// The processes (pid, cmdline) whose environment or command line holds `marker`.
/// Fails unless no process carrying `marker` is left. When `run` returns every process of
/// the job has been sent SIGKILL and can run no further instruction, but one the kernel has
/// not scheduled yet still shows in `/proc` for a moment on a loaded machine: so the check
/// allows the kernel a bounded time to finish them.
fn assert_none_survive(marker: &str, why: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let left = survivors(marker);
        if left.is_empty() {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{why}: {left:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn survivors(marker: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let read = |f: &str| std::fs::read(entry.path().join(f)).unwrap_or_default();
        let (environ, cmdline) = (read("environ"), read("cmdline"));
        let holds = |b: &[u8]| b.windows(marker.len()).any(|w| w == marker.as_bytes());
        if holds(&environ) || holds(&cmdline) {
            found.push((name, text(&cmdline).replace('\0', " ")));
        }
    }
    found
}

fn marked_env(marker: &str) -> Vec<(String, String)> {
    let mut env = env();
    env.push(("WEFT_TEST_MARKER".into(), marker.into()));
    env
}

#[tokio::test(flavor = "multi_thread")]
async fn forking_past_the_process_cap_fails_and_no_process_survives() {
    let (_dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        max_processes: Some(16),
        ..Confinement::minimal()
    };
    let mark = marker("forks");
    // A thousand sleepers, far past the cap: the shell's fork fails and it gives up.
    let script = "i=0; while [ $i -lt 1000 ]; do sleep 600 & i=$((i+1)); done; echo all-forked";
    let o = run_in(&ws, &sh(script), &c, &marked_env(&mark))
        .await
        .unwrap();
    assert!(!text(&o.stdout).contains("all-forked"), "{o:?}");
    assert!(text(&o.stderr).contains("fork"), "{}", text(&o.stderr));
    assert_ne!(o.exit_code, Some(0));
    assert!(!o.timed_out);
    assert!(o.process_capped, "the cap was not recorded: {o:?}");
    assert_none_survive(&mark, "a marked process outlived the job");
    // Control: under the cap the same loop completes.
    let script = "i=0; while [ $i -lt 5 ]; do sleep 600 & i=$((i+1)); done; echo all-forked";
    let o = run_in(&ws, &sh(script), &c, &marked_env(&mark))
        .await
        .unwrap();
    assert_eq!(text(&o.stdout), "all-forked\n", "{}", text(&o.stderr));
    assert!(!o.process_capped);
    assert_none_survive(&mark, "the sleepers outlived the job");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_bomb_is_held_at_the_cap_until_the_job_is_killed() {
    let (_dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        max_processes: Some(32),
        ..Confinement::minimal()
    };
    let mark = marker("bomb");
    let argv = sh("bomb() { bomb | bomb & }; bomb; wait; sleep 600");
    let env = marked_env(&mark);
    let job = Job {
        argv: &argv,
        cwd: &ws,
        env: &env,
        stdin: None,
        confinement: &c,
        timeout: Duration::from_secs(3),
        max_output: 1 << 20,
    };
    let o = weft_sandbox::run::run(&helper(), &job).await.unwrap();
    assert!(o.process_capped, "the cap was not reached: {o:?}");
    assert!(o.timed_out || o.exit_code.is_some(), "{o:?}");
    assert_none_survive(&mark, "part of the bomb outlived the job");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_setsid_child_does_not_outlive_its_job() {
    let (_dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        write_roots: vec![ws.join("out")],
        max_processes: Some(64),
        ..Confinement::minimal()
    };
    let mark = marker("setsid");
    // The child leaves the job's session and process group, says it runs, and sleeps on;
    // the command ends normally once it has started.
    let script = "setsid sh -c 'echo $$ > out/escaped.pid; exec sleep 600' & \
                  while [ ! -s out/escaped.pid ]; do sleep 0.05; done; echo started";
    let o = run_in(&ws, &sh(script), &c, &marked_env(&mark))
        .await
        .unwrap();
    assert_eq!(text(&o.stdout), "started\n", "{}", text(&o.stderr));
    assert_eq!(o.exit_code, Some(0));
    assert!(!o.timed_out);
    assert_none_survive(&mark, "the setsid child survived");
}

#[test]
fn the_process_cap_binds_a_non_root_user_through_its_user_namespace() {
    // As root, drop to `nobody` first: RLIMIT_NPROC is the non-root mechanism.
    let helper = env!("CARGO_BIN_EXE_weft-sandbox-exec");
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    let mut cmd = if root {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", helper]);
        c
    } else {
        std::process::Command::new(helper)
    };
    let mark = marker("nproc");
    let policy = serde_json::json!({"read_roots": [], "write_roots": [], "net": {"mode": "none"},
                                    "cpu_seconds": 30, "max_file_bytes": null,
                                    "max_processes": 12})
    .to_string();
    let script = "i=0; while [ $i -lt 1000 ]; do sleep 600 & i=$((i+1)); done; echo all-forked";
    let out = cmd
        .args(["--policy", &policy, "--", "/bin/sh", "-c", script])
        .current_dir("/")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("WEFT_TEST_MARKER", &mark)
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(!stderr.contains("blocked"), "{stderr}");
    assert!(!stdout.contains("all-forked"), "{stdout}");
    assert!(stderr.contains("fork"), "{stderr}");
    assert_none_survive(&mark, "the sleepers outlived the job");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_doctor_names_the_mechanisms_of_the_kill_and_the_cap() {
    let sandbox = Sandbox::probe(helper()).await;
    let check = |name: &str| {
        sandbox
            .report()
            .checks
            .iter()
            .find(|c| c.name == name)
            .cloned()
            .unwrap()
    };
    let (pidns, cap) = (check("pid_namespace"), check("process_cap"));
    assert!(pidns.required && pidns.enforced, "{pidns:?}");
    assert!(pidns.detail.contains("PID namespace"), "{pidns:?}");
    assert!(cap.required && cap.enforced, "{cap:?}");
    // Root (CI) makes a pids cgroup; anyone else caps through RLIMIT_NPROC.
    assert!(
        cap.detail.contains("pids.max") || cap.detail.contains("RLIMIT_NPROC"),
        "{cap:?}"
    );
}
