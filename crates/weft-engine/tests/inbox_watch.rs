//! The driver registers its inbox watch only once it has waited 20 ms on running nodes
//! (`run/inbox.rs`, `docs/engine.md` §2c): a run on a database file whose step ends sooner
//! starts no store thread for it, a run whose step takes longer does, and a cancel another
//! writer appends while that step runs is taken. Its own test binary: the store's thread
//! is counted by name among this process's threads, which other tests would start too.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use serde_json::{Value, json};
use weft_engine::{FinalStatus, RunOptions, run_document};
use weft_store::SqliteStore;

/// This process's threads named as the store's tail thread.
fn tail_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "weft-store-tail")
        .count()
}

fn one_step(run: &str) -> Value {
    json!({"entrypoints": ["s"], "nodes": {
        "s": {"description": "a step", "x-weft-exec": {"run": run}}}})
}

#[tokio::test]
async fn only_a_run_that_waits_20_ms_on_its_nodes_watches_its_inbox() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let options = |id: &str| RunOptions {
        project_dir: dir.path().to_path_buf(),
        run_id: Some(id.into()),
        ..RunOptions::default()
    };
    let quick = SqliteStore::open(dir.path().join("quick.db")).unwrap();
    let began = std::time::Instant::now();
    let report = run_document(&one_step("true"), &quick, &options("q"))
        .await
        .unwrap();
    let took = began.elapsed();
    assert_eq!(report.status, FinalStatus::Succeeded);
    // The claim holds for a run that did end within the 20 ms (a step of `true` takes a
    // few); a machine that stalled the whole run past them proves nothing either way.
    if took < std::time::Duration::from_millis(20) {
        assert_eq!(tail_threads(), 0, "a run of a quick step watched its inbox");
    } else {
        eprintln!("the quick run took {took:?}: its watch is not checked");
    }

    // A step that runs until it is cancelled: the driver watches, and takes the cancel
    // another writer appends.
    let slow = SqliteStore::open(dir.path().join("slow.db")).unwrap();
    let writer = slow.clone();
    let cancel = async {
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            if tail_threads() > 0 {
                break;
            }
        }
        let _ = tokio::task::spawn_blocking(move || {
            weft_engine::human::request_cancel(&writer, "w", "test", None)
        })
        .await
        .unwrap()
        .unwrap();
    };
    let (doc, run_options) = (one_step("sleep 30"), options("w"));
    let run = run_document(&doc, &slow, &run_options);
    let (report, ()) = tokio::join!(run, cancel);
    assert_eq!(report.unwrap().status, FinalStatus::Cancelled);
}
