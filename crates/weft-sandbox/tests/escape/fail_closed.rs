//! Fail-closed: a machine or helper that cannot enforce the sandbox runs nothing; the doctor
//! reports what is in force.

use std::time::Duration;

use weft_sandbox::{Confinement, Helper, Job, Sandbox, SandboxError};

use crate::common::*;

#[tokio::test(flavor = "multi_thread")]
async fn the_machine_enforces_everything_weft_requires() {
    let sandbox = Sandbox::probe(helper()).await;
    let report = sandbox.report();
    assert!(report.fully_enforced(), "missing: {:?}", report.missing());
    assert!(report.landlock_abi >= 6, "{report:?}");
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
        program: helper_path().into(),
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
