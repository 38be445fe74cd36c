//! Limits and lifetime: CPU time, output, wall clock, the process cap (pids cgroup as root,
//! `RLIMIT_NPROC` in a user namespace otherwise), and no process of a job outliving it.

use std::time::Duration;

use weft_sandbox::{Confinement, Job};

use crate::common::*;

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
    // A pids cgroup records the refusal; under RLIMIT_NPROC (a non-root weft) the refused
    // fork above is all there is to see.
    let recorded = weft_sandbox::cgroup::hierarchy().is_some();
    assert_eq!(o.process_capped, recorded, "{o:?}");
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
    if weft_sandbox::cgroup::hierarchy().is_some() {
        assert!(o.process_capped, "the cap was not reached: {o:?}");
    } else {
        // RLIMIT_NPROC: the bomb's forks fail.
        assert!(text(&o.stderr).contains("fork"), "{o:?}");
    }
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
    let helper = helper_path();
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    let mut cmd = if root {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", &helper]);
        c
    } else {
        std::process::Command::new(&helper)
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
