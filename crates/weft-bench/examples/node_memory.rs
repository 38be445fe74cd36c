//! What one W1–W3 node costs the engine in heap (issue 3, "per-node overhead"): live heap
//! bytes per node when the run has started (the document, its prepared jobs, the
//! scheduler's graph and the logged `run_started` held) and when it has finished (every
//! event of the log held too), and how many bytes the run's allocations asked for in all,
//! per node. Counted by a wrapper around the allocator, not read from the resident set.
//!
//! Usage: `node_memory SHAPE...` (default `chain:1000 chain:3000 layered:10x100 tree:1000
//! fanout:1000`); prints one JSON object per shape, for one run on the ephemeral store
//! after a warm-up run. The allocator is mimalloc, as in the `weft` binary, wrapped by
//! `cap::Cap` (with its `stats`) to count.

use std::sync::{Arc, Mutex};

use serde_json::json;
use weft_bench::workloads::Shape;
use weft_engine::{FinalStatus, ObserveError, Observed, RunObserver, RunOptions, run_owned};
use weft_store::EphemeralStore;

#[path = "shared/counting_heap.rs"]
mod counting_heap;
use counting_heap::HEAP;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The heap in use when `run_started` and `run_finished` were observed.
#[derive(Debug, Default)]
struct Marks(Mutex<(Option<usize>, Option<usize>)>);

impl RunObserver for Marks {
    fn on_event(&self, event: &Observed<'_>) -> Result<(), ObserveError> {
        let now = HEAP.allocated();
        if let Ok(mut marks) = self.0.lock() {
            match event.event.kind() {
                "run_started" => marks.0 = Some(now),
                "run_finished" => marks.1 = Some(now),
                _ => {}
            }
        }
        Ok(())
    }
}

fn measure(shape: Shape, rt: &tokio::runtime::Runtime) -> Res<serde_json::Value> {
    let project = tempfile::tempdir()?;
    let doc = shape.document();
    let mut out = json!(null);
    for _ in 0..2 {
        let marks = Arc::new(Marks::default());
        let options = RunOptions {
            project_dir: project.path().to_path_buf(),
            observers: vec![marks.clone()],
            ..RunOptions::default()
        };
        let store = EphemeralStore::new();
        // The document the run is handed counts: the run keeps it.
        let before = HEAP.allocated();
        let total = HEAP.total_allocated();
        let owned = doc.clone();
        let report = rt.block_on(run_owned(owned, &store, &options))?;
        let bytes = HEAP.total_allocated() - total;
        if report.status != FinalStatus::Succeeded {
            return Err(format!("{shape:?} ended {:?}", report.status).into());
        }
        let (started, finished) = marks.0.lock().map_err(|_| "poisoned")?.to_owned();
        let n = shape.nodes() as f64;
        let per = |at: Option<usize>| at.map(|b| (b.saturating_sub(before) as f64 / n).round());
        out = json!({
            "shape": format!("{shape:?}"),
            "nodes": shape.nodes(),
            "held_bytes_per_node_at_run_started": per(started),
            "held_bytes_per_node_at_run_finished": per(finished),
            "allocated_bytes_per_node": (bytes as f64 / n).round(),
        });
    }
    Ok(out)
}

fn main() -> Res<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        args = [
            "chain:1000",
            "chain:3000",
            "layered:10x100",
            "tree:1000",
            "fanout:1000",
        ]
        .map(String::from)
        .to_vec();
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    for arg in &args {
        let shape = Shape::parse(arg).ok_or_else(|| format!("bad SHAPE `{arg}`"))?;
        println!("{}", measure(shape, &rt)?);
    }
    Ok(())
}
