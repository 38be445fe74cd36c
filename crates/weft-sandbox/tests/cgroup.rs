//! The job's pids cgroup on this machine (its own test binary, so the directories named after
//! this process are only this test's): made with the cap, removed after the job, and the
//! doctor's trial directory removed too. Where weft cannot make cgroups (not root), the
//! doctor must name the other mechanism instead.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure"
)]

use weft_sandbox::cgroup::{Pids, hierarchy};
use weft_sandbox::{Helper, Sandbox};

fn ours(base: &std::path::Path) -> usize {
    let prefix = format!("job-{}-", std::process::id());
    std::fs::read_dir(base)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_cgroup_holds_the_cap_and_is_removed_afterwards() {
    let sandbox = Sandbox::probe(Helper::binary(env!("CARGO_BIN_EXE_weft-sandbox-exec"))).await;
    let cap = sandbox
        .report()
        .checks
        .iter()
        .find(|c| c.name == "process_cap")
        .cloned()
        .unwrap();
    let Some(h) = hierarchy() else {
        assert!(cap.detail.contains("RLIMIT_NPROC"), "{cap:?}");
        return;
    };
    assert!(cap.detail.contains("pids.max"), "{cap:?}");
    assert_eq!(
        ours(&h.base),
        0,
        "the doctor's trial cgroup was left behind"
    );
    let pids = Pids::create(h, 7).unwrap();
    let dir = pids.dir().unwrap().to_path_buf();
    assert_eq!(
        std::fs::read_to_string(dir.join("pids.max"))
            .unwrap()
            .trim(),
        "7"
    );
    assert!(!pids.cap_reached());
    assert!(!pids.finish().await);
    assert!(!dir.exists());
    // Dropped without finishing (a caller dropping the run): removed as well.
    let pids = Pids::create(h, 7).unwrap();
    let dir = pids.dir().unwrap().to_path_buf();
    drop(pids);
    assert!(!dir.exists());
    assert_eq!(ours(&h.base), 0);
}

/// A weft killed mid-job leaves its job directory, with whatever still runs in it: the next
/// weft process sweeps it (the processes killed, the directory removed), and leaves alone
/// the directories of weft processes that are alive.
#[test]
fn job_cgroups_left_by_a_dead_weft_are_swept() {
    let Some(h) = hierarchy() else {
        // Not root: no job cgroups to leave behind (the cap is RLIMIT_NPROC).
        assert_ne!(rustix::process::geteuid().as_raw(), 0);
        return;
    };
    // A pid that is certainly gone: a child that has exited and been reaped.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let orphaned = h.base.join(format!("job-{dead}-0"));
    std::fs::create_dir(&orphaned).unwrap();
    // A job process that outlived its weft, moved into the orphaned directory.
    let mut job = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    std::fs::write(orphaned.join("cgroup.procs"), job.id().to_string()).unwrap();
    let reaper = std::thread::spawn(move || job.wait().unwrap());
    // The directory of a live owner (pid 1 never dies).
    let live = h.base.join(format!("job-1-{}", std::process::id()));
    std::fs::create_dir(&live).unwrap();

    weft_sandbox::cgroup::sweep(h);

    let status = reaper.join().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "the orphaned job was not killed: {status:?}"
    );
    assert!(
        !orphaned.exists(),
        "the orphaned job directory is still there"
    );
    assert!(live.exists(), "a live weft's job directory was swept");
    std::fs::remove_dir(&live).unwrap();
}
