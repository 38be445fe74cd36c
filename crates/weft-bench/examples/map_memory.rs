//! What a pending `map` item holds (W3m, issue 4: "memory per pending item under 1 KB"),
//! counted in live heap bytes rather than read from the resident set, which moves in
//! allocator-sized steps and keeps what earlier work freed.
//!
//! For each item count `N`, one run of [`weft_bench::workloads::map_fanout`]`(N, P)` on the
//! ephemeral store: the heap in use just before `run_document`, and again when the map's
//! first item body starts — the moment every item but the first `P` is pending, the
//! document, its copy in `run_started`, the bound params and the map's own state all held.
//! The difference between two item counts, divided by the difference in items, is what one
//! more pending item costs; finished items' log entries are not in it (none has finished).
//!
//! Usage: `map_memory N1 N2 [P]` (default `1000 10000 10`); prints one JSON object.
//! The allocator is mimalloc, as in the `weft` binary, wrapped by `cap::Cap` to count.

use std::sync::{Arc, OnceLock};

use serde_json::json;
use weft_engine::{FinalStatus, ObserveError, Observed, RunObserver, RunOptions, run_document};
use weft_store::EphemeralStore;

#[path = "shared/counting_heap.rs"]
mod counting_heap;
use counting_heap::HEAP;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Records the heap in use when the first event of a fragment instance's node start is seen.
#[derive(Debug, Default)]
struct FirstItem(OnceLock<usize>);

impl RunObserver for FirstItem {
    fn on_event(&self, event: &Observed<'_>) -> Result<(), ObserveError> {
        if event.scope.is_some() && event.event.kind() == "node_started" {
            self.0.get_or_init(|| HEAP.allocated());
        }
        Ok(())
    }
}

/// Heap bytes held when the first item starts, above the heap before the run.
fn held_while_pending(items: usize, parallel: usize) -> Res<usize> {
    let doc = weft_bench::workloads::map_fanout(items, parallel);
    let project = tempfile::tempdir()?;
    let first = Arc::new(FirstItem::default());
    let options = RunOptions {
        project_dir: project.path().to_path_buf(),
        observers: vec![first.clone()],
        ..RunOptions::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let store = EphemeralStore::new();
    let before = HEAP.allocated();
    let report = rt.block_on(run_document(&doc, &store, &options))?;
    if report.status != FinalStatus::Succeeded {
        return Err(format!("the map run ended {:?}", report.status).into());
    }
    let at = first.0.get().ok_or("no item of the map started")?;
    Ok(at.saturating_sub(before))
}

fn main() -> Res<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let (n1, n2, parallel) = match args[..] {
        [] => (1000, 10_000, 10),
        [a, b] => (a, b, 10),
        [a, b, p] => (a, b, p),
        _ => return Err("usage: map_memory N1 N2 [P]".into()),
    };
    if n2 <= n1 {
        return Err("N2 must be larger than N1".into());
    }
    let (h1, h2) = (
        held_while_pending(n1, parallel)?,
        held_while_pending(n2, parallel)?,
    );
    let per_item = (h2.saturating_sub(h1)) as f64 / (n2 - n1) as f64;
    println!(
        "{}",
        json!({
            "case": format!("map pending ({n1} → {n2} items, max_parallel {parallel})"),
            "held_bytes": {n1.to_string(): h1, n2.to_string(): h2},
            "bytes_per_pending_item": per_item,
        })
    );
    Ok(())
}
