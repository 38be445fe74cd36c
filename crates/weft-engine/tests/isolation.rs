//! `constraints.isolation: worktree|sandbox` on real processes: the attempt works in its own
//! copy of the project (its criteria checked there), its edits are logged as a patch and
//! merged when it succeeds, recorded but not applied when it fails; `container` is refused
//! (RT014: fail rather than downgrade).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{assert_valid, events, record_node};

use serde_json::{Value, json};
use weft_engine::record::record_of;
use weft_engine::{EngineError, FinalStatus, RunEvent, RunOptions, run_document};
use weft_store::Store;

fn doc(run: &str, isolation: &str) -> Value {
    json!({"id": "iso", "entrypoints": ["edit"], "nodes": {"edit": {
        "description": "edit the project",
        "constraints": {"isolation": isolation},
        "success": {"criteria": [{"id": "made", "kind": "file_exists", "path": "new.txt",
            "description": "new.txt exists"}]},
        "x-weft-exec": {"run": run}
    }}})
}

fn project() -> (tempfile::TempDir, RunOptions) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("existing.txt"), "old\n").unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..RunOptions::default()
    };
    (dir, options)
}

fn patches(log: &[RunEvent]) -> Vec<(bool, Vec<String>, String)> {
    log.iter()
        .filter_map(|e| match e {
            RunEvent::NodePatch {
                applied,
                files,
                diff,
                ..
            } => Some((*applied, files.clone(), diff.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_successful_isolated_attempt_is_merged_as_a_recorded_patch() {
    let (dir, options) = project();
    let store = Store::open_in_memory().unwrap();
    let d = doc(
        "echo new > new.txt && echo changed > existing.txt",
        "worktree",
    );
    let report = run_document(&d, &store, &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("existing.txt")).unwrap(),
        "changed\n"
    );
    let p = patches(&events(&store, &report.run_id));
    assert_eq!(p.len(), 1);
    assert!(p[0].0, "applied");
    assert_eq!(p[0].1, ["existing.txt", "new.txt"]);
    assert!(
        p[0].2.contains("-old") && p[0].2.contains("+changed"),
        "{}",
        p[0].2
    );
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert_eq!(
        record_node(&record, "edit")["x-weft-patches"][0]["applied"],
        true
    );
}

#[tokio::test]
async fn a_failed_isolated_attempt_is_recorded_and_not_applied() {
    let (dir, options) = project();
    let store = Store::open_in_memory().unwrap();
    let d = doc(
        "echo new > new.txt && echo changed > existing.txt && exit 4",
        "sandbox",
    );
    let report = run_document(&d, &store, &options).await.unwrap();
    assert_ne!(report.status, FinalStatus::Succeeded);
    assert!(!dir.path().join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("existing.txt")).unwrap(),
        "old\n"
    );
    let p = patches(&events(&store, &report.run_id));
    assert_eq!(p.len(), 1);
    assert!(!p[0].0, "not applied");
    assert!(
        p[0].2.contains("+changed"),
        "the edits are in the log: {}",
        p[0].2
    );
}

#[tokio::test]
async fn criteria_see_the_copy_and_shared_nodes_work_in_place() {
    // The criterion looks for new.txt in the attempt's copy: it passes before the merge.
    let (dir, options) = project();
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&doc("echo new > new.txt", "worktree"), &store, &options)
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded);
    assert!(dir.path().join("new.txt").exists());
    // `shared` (the default) runs in the project itself and logs no patch.
    let (dir, options) = project();
    let report = run_document(&doc("echo new > new.txt", "shared"), &store, &options)
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded);
    assert!(dir.path().join("new.txt").exists());
    assert!(patches(&events(&store, &report.run_id)).is_empty());
}

#[tokio::test]
async fn container_isolation_is_refused_rather_than_downgraded() {
    let (_dir, options) = project();
    let store = Store::open_in_memory().unwrap();
    let err = run_document(&doc("true", "container"), &store, &options)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EngineError::Refused(r) if r.iter().any(|m| m.contains("RT014"))),
        "{err}"
    );
}

/// By default an agent node gets its own copy of the project only when it may write it
/// (`requirements.workspace: read_write`); one that leaves the workspace read-only (the
/// AGS default) works in the project itself, which it cannot change.
#[tokio::test]
async fn only_agent_nodes_that_may_write_the_project_get_a_copy() {
    let (dir, mut options) = project();
    // The model agent reports the directory each attempt is given to work in.
    options.agents = Some(common::with_model_agent(|request| {
        let mut r = weft_engine::agent::AgentResult::default();
        let dir = request.workspace.to_string_lossy().to_string();
        r.outputs.insert("dir".into(), json!(dir));
        r
    }));
    let node = |workspace: Option<&str>| {
        let mut n = json!({"description": "say where you work",
            "outputs": {"dir": {"type": "string", "description": "the directory"}}});
        if let Some(w) = workspace {
            n["requirements"] = json!({"workspace": w});
        }
        n
    };
    let doc = json!({"id": "where", "entrypoints": ["reader", "writer"], "nodes": {
        "reader": node(None), "writer": node(Some("read_write"))}});
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&doc, &store, &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:?}");
    let dir_of = |id: &str| {
        events(&store, &report.run_id)
            .into_iter()
            .find_map(|e| match e {
                RunEvent::NodeFinished { node, outputs, .. } if node == id => {
                    outputs["dir"].as_str().map(std::path::PathBuf::from)
                }
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(dir_of("reader"), dir.path());
    let writer = dir_of("writer");
    assert_ne!(writer, dir.path());
    assert!(
        writer.starts_with(dir.path().join(".weft/scratch")),
        "{writer:?}"
    );
}
