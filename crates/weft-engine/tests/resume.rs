//! Resuming a stopped run (`resume_run`): a run stopped after every possible number of
//! events and resumed ends like an uninterrupted run (states, outputs, start order), with no
//! node finished twice and a gap-free log; uncertain nodes need `retry_uncertain` or
//! `idempotent`; RT053 on a changed document unless forced; a finished run is left alone.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use serde_json::{Value, json};
use weft_engine::{
    EngineError, ResumeOptions, RunEvent, RunOptions, RunReport, resume_run, run_document,
};
use weft_store::{EventLog, Store};

fn doc(idempotent: bool) -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "r", "version": "1.0.0",
        "description": "resume", "entrypoints": ["a"],
        "nodes": {
            "a": {"description": "first", "outputs": {"x": {"type": "string"}},
                "x-weft-exec": {"run": "echo one", "idempotent": idempotent}},
            "b": {"description": "second", "depends_on": ["a"],
                "inputs": {"v": {"from": "nodes.a.outputs.x"}},
                "outputs": {"y": {"type": "string"}},
                "x-weft-exec": {"run": "cat"}},
            "c": {"description": "fails", "depends_on": ["a"], "x-weft-exec": {"run": "exit 3"}},
            "d": {"description": "after b", "depends_on": ["b"], "x-weft-exec": {"run": "echo d"}}
        }
    })
}

fn options(dir: &std::path::Path, stop: Option<usize>) -> RunOptions {
    RunOptions {
        project_dir: dir.to_path_buf(),
        stop_after_events: stop,
        ..RunOptions::default()
    }
}

fn events(store: &Store, run_id: &str) -> Vec<(u64, RunEvent)> {
    store
        .read(run_id, 1, 10_000)
        .unwrap()
        .iter()
        .map(|r| (r.seq, RunEvent::from_record(r).unwrap()))
        .collect()
}

fn finished_outputs(evs: &[(u64, RunEvent)]) -> Vec<(String, String, Value)> {
    let mut v: Vec<_> = evs
        .iter()
        .filter_map(|(_, e)| match e {
            RunEvent::NodeFinished {
                node,
                outcome,
                outputs,
                ..
            } => Some((node.clone(), outcome.as_str().to_string(), outputs.clone())),
            _ => None,
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn summary(r: &RunReport) -> Vec<(String, String)> {
    r.nodes
        .iter()
        .map(|n| (n.id.clone(), n.state.clone()))
        .collect()
}

#[tokio::test]
async fn a_run_stopped_anywhere_resumes_to_the_uninterrupted_end() {
    stop_anywhere_and_resume(&doc(false)).await;
}

/// Three nodes start together and finish together: their `node_started` and their
/// `node_finished` are each written in one batch, and a stop inside a batch cuts it there.
#[tokio::test]
async fn a_fan_out_stopped_anywhere_resumes_to_the_uninterrupted_end() {
    let step = |deps: &[&str]| {
        json!({"type": "decision", "description": "step", "depends_on": deps,
            "decision": {"evaluator": "expression",
                "branches": [{"label": "done", "description": "always", "when": "true"}]}})
    };
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "f", "version": "1.0.0",
        "description": "fan-out", "entrypoints": ["s"],
        "constraints": {"max_parallel_nodes": 4},
        "nodes": {"s": step(&[]), "w1": step(&["s"]), "w2": step(&["s"]), "w3": step(&["s"]),
            "j": step(&["w1", "w2", "w3"])}
    });
    stop_anywhere_and_resume(&doc).await;
}

async fn stop_anywhere_and_resume(doc: &Value) {
    let doc = doc.clone();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let full = run_document(&doc, &store, &options(dir.path(), None))
        .await
        .unwrap();
    let full_events = events(&store, &full.run_id);
    let total = full_events.len();
    for n in 1..total {
        let run_id = format!("stop-{n}");
        let mut o = options(dir.path(), Some(n));
        o.run_id = Some(run_id.clone());
        let err = run_document(&doc, &store, &o).await.unwrap_err();
        assert!(matches!(err, EngineError::Stopped(k) if k == n), "{err}");
        let resumed = resume_run(
            &store,
            &run_id,
            Some(&doc),
            &ResumeOptions {
                run: options(dir.path(), None),
                retry_uncertain: true,
                ..ResumeOptions::default()
            },
        )
        .await
        .unwrap();
        assert!(resumed.resumed);
        let report = resumed.report.unwrap();
        assert_eq!(report.status, full.status, "stop after {n}");
        assert_eq!(summary(&report), summary(&full), "stop after {n}");
        assert_eq!(report.started, full.started, "stop after {n}");
        assert_eq!(report.outputs, full.outputs, "stop after {n}");
        let evs = events(&store, &run_id);
        let seqs: Vec<u64> = evs.iter().map(|(s, _)| *s).collect();
        assert_eq!(seqs, (1..=evs.len() as u64).collect::<Vec<_>>(), "gap-free");
        // No node finished twice; the same outcomes and outputs as the uninterrupted run.
        assert_eq!(finished_outputs(&evs), finished_outputs(&full_events));
        let kinds = |es: &[(u64, RunEvent)]| {
            es.iter()
                .filter(|(_, e)| !matches!(e, RunEvent::NodeAbandoned { .. }))
                .filter(|(_, e)| !matches!(e, RunEvent::NodeStarted { .. }))
                .count()
        };
        assert_eq!(kinds(&evs), kinds(&full_events), "stop after {n}");
        // A finished run is left alone.
        let again = resume_run(&store, &run_id, None, &ResumeOptions::default())
            .await
            .unwrap();
        assert!(!again.resumed);
        assert_eq!(again.status, full.status.as_str());
    }
}

/// Stops a run of `doc` just after `a`'s `node_started` (event 3: run_started, node_when? —
/// found by looking for it).
async fn stopped_while_a_runs(doc: &Value, store: &Store, dir: &std::path::Path) -> String {
    let probe = run_document(doc, store, &options(dir, None)).await.unwrap();
    let at = events(store, &probe.run_id)
        .iter()
        .position(|(_, e)| matches!(e, RunEvent::NodeStarted { node, .. } if node == "a"))
        .unwrap()
        + 1;
    let mut o = options(dir, Some(at));
    let run_id = format!("uncertain-{at}-{}", probe.run_id);
    o.run_id = Some(run_id.clone());
    run_document(doc, store, &o).await.unwrap_err();
    run_id
}

#[tokio::test]
async fn an_uncertain_node_needs_the_flag_or_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let d = doc(false);
    let run_id = stopped_while_a_runs(&d, &store, dir.path()).await;
    let plain = ResumeOptions {
        run: options(dir.path(), None),
        ..ResumeOptions::default()
    };
    let err = resume_run(&store, &run_id, None, &plain).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("`a`") && msg.contains("--retry-uncertain"),
        "{msg}"
    );
    let before = events(&store, &run_id).len();
    assert_eq!(
        before,
        events(&store, &run_id).len(),
        "a refusal writes nothing"
    );
    let ok = resume_run(
        &store,
        &run_id,
        None,
        &ResumeOptions {
            retry_uncertain: true,
            ..plain.clone()
        },
    )
    .await
    .unwrap();
    assert_eq!(ok.status, "partial");
    let evs = events(&store, &run_id);
    assert!(evs.iter().any(|(_, e)| matches!(e,
        RunEvent::NodeAbandoned { node, attempt: 1, reason } if node == "a" && reason == "retry_uncertain")));
    assert!(evs.iter().any(|(_, e)| matches!(e,
        RunEvent::NodeStarted { node, attempt: 2, .. } if node == "a")));

    // Declared idempotent: no flag needed.
    let d = doc(true);
    let run_id = stopped_while_a_runs(&d, &store, dir.path()).await;
    let ok = resume_run(&store, &run_id, None, &plain).await.unwrap();
    assert!(ok.resumed);
    assert!(events(&store, &run_id).iter().any(|(_, e)| matches!(e,
        RunEvent::NodeAbandoned { reason, .. } if reason == "idempotent")));
}

#[tokio::test]
async fn a_changed_document_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let d = doc(false);
    let mut o = options(dir.path(), Some(1));
    o.run_id = Some("rt053".into());
    run_document(&d, &store, &o).await.unwrap_err();
    let mut changed = d.clone();
    changed["nodes"]["d"]["x-weft-exec"]["run"] = json!("echo changed");
    let plain = ResumeOptions {
        run: options(dir.path(), None),
        ..ResumeOptions::default()
    };
    let err = resume_run(&store, "rt053", Some(&changed), &plain)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("RT053"), "{err}");
    let forced = ResumeOptions {
        force: true,
        ..plain
    };
    let ok = resume_run(&store, "rt053", Some(&changed), &forced)
        .await
        .unwrap();
    assert!(ok.resumed);
    assert_eq!(ok.status, "partial");
}

#[tokio::test]
async fn retry_nodes_runs_a_failed_node_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let mut d = doc(false);
    d["nodes"]["b"]["x-weft-exec"]["run"] = json!("echo yy");
    d["nodes"]["c"]["x-weft-exec"]["run"] = json!("test -f ok || exit 3");
    let probe = run_document(&d, &store, &options(dir.path(), None))
        .await
        .unwrap();
    let at = events(&store, &probe.run_id)
        .iter()
        .position(|(_, e)| matches!(e, RunEvent::NodeFinished { node, .. } if node == "c"))
        .unwrap()
        + 1;
    let mut o = options(dir.path(), Some(at));
    o.run_id = Some("retry".into());
    run_document(&d, &store, &o).await.unwrap_err();
    let with = |nodes: &[&str]| ResumeOptions {
        run: options(dir.path(), None),
        retry_nodes: nodes.iter().map(|s| (*s).to_string()).collect(),
        ..ResumeOptions::default()
    };
    for bad in [&["a"][..], &["nope"][..]] {
        let err = resume_run(&store, "retry", None, &with(bad))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("--retry-nodes"), "{err}");
    }
    std::fs::write(dir.path().join("ok"), "").unwrap();
    let ok = resume_run(&store, "retry", None, &with(&["c"]))
        .await
        .unwrap();
    assert_eq!(ok.status, "succeeded", "{ok:#?}");
    let evs = events(&store, "retry");
    assert!(
        evs.iter()
            .any(|(_, e)| matches!(e, RunEvent::NodeReset { node } if node == "c"))
    );
    let seqs: Vec<u64> = evs.iter().map(|(s, _)| *s).collect();
    assert_eq!(seqs, (1..=evs.len() as u64).collect::<Vec<_>>());
    // The replay (and so the record) sees the second outcome.
    let replayed = weft_engine::replay_run(&d, &store, "retry").unwrap();
    let c = replayed.graph().find("c").unwrap();
    assert_eq!(format!("{:?}", replayed.state(c)), "Succeeded");
}
