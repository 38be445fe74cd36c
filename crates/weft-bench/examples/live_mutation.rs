//! What a mutation of a live run costs through the engine (`docs/BENCHMARKS.md`, "A dynamic
//! graph in the engine"): `weft_engine::mutation::submit` of a plan of N tasks to a run
//! suspended on a gate (the log replayed, the scheduler's all-or-nothing check, the
//! validator on the new nodes, each prepared into a task, the append), the same plan with
//! one unresolved name (refused), one `add_node` once the N are in the graph, and the resume
//! that runs them (the driver grows by N nodes where the log has the plan). SQLite file
//! store. Prints one JSON object: medians of REPS runs, process CPU time (user + system),
//! and the submits' wall time.
//!
//! ```text
//! live_mutation N DIR [REPS]
//! ```
//!
//! With `LIVE_MUTATION_NO_RESUME` set, the resume is left out (`resume_cpu_ms` 0): a
//! profile of the submits alone.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a benchmark failure with a message"
)]

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};
use weft_engine::human::{DecisionRequest, Verb, decide};
use weft_engine::mutation::{After, GraphMutation, LoggedEdge, NewNode, PlannedNode, submit};
use weft_engine::{FinalStatus, ResumeOptions, RunOptions, resume_run, run_document};
use weft_store::Store;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn cpu_now() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

fn cpu_ms<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = cpu_now();
    let out = f();
    (out, (cpu_now() - start).as_secs_f64() * 1000.0)
}

/// [`cpu_ms`] and the wall time (ms) it took: a submit's validator checks a large
/// document's schema on a second thread.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let start = std::time::Instant::now();
    let (out, cpu) = cpu_ms(f);
    (out, cpu, start.elapsed().as_secs_f64() * 1000.0)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

fn doc() -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "live", "version": "1.0.0",
        "description": "a run planned while it runs", "entrypoints": ["g"],
        "nodes": {
            "g": {"type": "gate", "title": "Gate", "description": "a person decides",
                "gate": {"mode": "approve"}},
        },
        "edges": []
    })
}

/// A notify gate: decided in place by the driver, no process.
fn notify(id: &str) -> NewNode {
    let node: Map<String, Value> = json!({"type": "gate", "title": "Tell",
        "description": "tells", "gate": {"mode": "notify"}})
    .as_object()
    .cloned()
    .unwrap();
    NewNode {
        id: id.into(),
        node,
    }
}

/// A chain `t0 → … → t{n-1}` after `g`.
fn plan(n: usize) -> Vec<PlannedNode> {
    (0..n)
        .map(|i| PlannedNode {
            node: notify(&format!("t{i}")),
            after: vec![After {
                from: if i == 0 {
                    "g".into()
                } else {
                    format!("t{}", i - 1)
                },
                edge: LoggedEdge::Sequence,
            }],
        })
        .collect()
}

fn one(n: usize, dir: &Path, rt: &tokio::runtime::Runtime) -> [f64; 7] {
    let _ = std::fs::remove_file(dir.join("live.db"));
    let store = Store::open(dir.join("live.db")).unwrap();
    let options = RunOptions {
        project_dir: dir.to_path_buf(),
        ..RunOptions::default()
    };
    let run = rt
        .block_on(run_document(&doc(), &store, &options))
        .unwrap()
        .run_id;
    let nodes = plan(n);
    let mut bad = nodes.clone();
    bad[n / 2].after.push(After {
        from: "ghost".into(),
        edge: LoggedEdge::Sequence,
    });
    let (refused, refused_ms, refused_wall) =
        timed(|| submit(&store, &run, "bench", GraphMutation::Plan { nodes: bad }));
    assert!(refused.is_err());
    let (accepted, plan_ms, plan_wall) =
        timed(|| submit(&store, &run, "bench", GraphMutation::Plan { nodes }));
    accepted.unwrap();
    let add = GraphMutation::AddNode {
        node: notify("late"),
        after: vec![After {
            from: format!("t{}", n - 1),
            edge: LoggedEdge::Sequence,
        }],
    };
    let (added, add_ms, add_wall) = timed(|| submit(&store, &run, "bench", add));
    added.unwrap();
    let request = DecisionRequest {
        node: "g".into(),
        verb: Verb::Approve,
        values: Map::new(),
        actor: "bench".into(),
        role: None,
        note: None,
    };
    decide(&store, &run, &request).unwrap();
    if std::env::var_os("LIVE_MUTATION_NO_RESUME").is_some() {
        return [
            plan_ms,
            refused_ms,
            add_ms,
            0.0,
            plan_wall,
            refused_wall,
            add_wall,
        ];
    }
    let resume = ResumeOptions {
        run: options,
        ..ResumeOptions::default()
    };
    let (done, resume_ms) = cpu_ms(|| rt.block_on(resume_run(&store, &run, None, &resume)));
    let report = done.unwrap().report.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded);
    assert_eq!(report.nodes.len(), n + 2);
    [
        plan_ms,
        refused_ms,
        add_ms,
        resume_ms,
        plan_wall,
        refused_wall,
        add_wall,
    ]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let dir = Path::new(
        args.get(1)
            .map_or("/tmp/weft-live-mutation", String::as_str),
    );
    std::fs::create_dir_all(dir).unwrap();
    let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    one(n, dir, &rt); // warm-up
    let runs: Vec<[f64; 7]> = (0..reps).map(|_| one(n, dir, &rt)).collect();
    let col = |k: usize| median(runs.iter().map(|r| r[k]).collect());
    println!(
        "{}",
        json!({
            "case": format!("live_mutation:{n}"), "reps": reps,
            "submit_plan_cpu_ms": col(0), "submit_refused_plan_cpu_ms": col(1),
            "submit_add_node_cpu_ms": col(2), "resume_cpu_ms": col(3),
            "submit_plan_wall_ms": col(4), "submit_refused_plan_wall_ms": col(5),
            "submit_add_node_wall_ms": col(6),
            "resume_cpu_us_per_node": col(3) * 1000.0 / (n as f64 + 2.0),
        })
    );
}
