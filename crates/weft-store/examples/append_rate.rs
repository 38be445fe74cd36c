//! Append throughput of the SQLite store on a real file (WAL, `synchronous=FULL`).
//!
//! For 1 and 8 concurrent appenders (one run each) and batches of 1 and 10 events, appends
//! for a fixed time and prints appends/s, events/s and transactions (= WAL fsyncs), which
//! shows what group commit buys, and the file size per event (payloads are ~90 bytes). Usage:
//! `cargo run --release -p weft-store --example append_rate [seconds-per-case]`

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use weft_store::{EventLog, NewEvent, NewRun, RunTable, Store};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: f64 = match std::env::args().nth(1) {
        Some(arg) => arg.parse()?,
        None => 2.0,
    };
    let dir = tempfile::tempdir()?;
    println!("store: {} (WAL, synchronous=FULL)", dir.path().display());
    println!(
        "{:>9} {:>6} {:>10} {:>11} {:>10} {:>12} {:>10} {:>11}",
        "appenders",
        "batch",
        "appends/s",
        "events/s",
        "fsyncs/s",
        "fsyncs",
        "appends/tx",
        "bytes/event"
    );
    for appenders in [1usize, 8] {
        for batch in [1usize, 10] {
            let path = dir.path().join(format!("rate-{appenders}-{batch}.db"));
            let store = Store::open(&path)?;
            let runs: Vec<String> = (0..appenders).map(|a| format!("run-{a}")).collect();
            for run in &runs {
                store.create_run(&NewRun {
                    id: run.clone(),
                    graph_digest: "sha256:bench".to_owned(),
                    created_at_ms: 0,
                })?;
            }
            let before = store.stats();
            let stop = AtomicBool::new(false);
            let started = Instant::now();
            std::thread::scope(|scope| {
                for run in &runs {
                    let (store, stop) = (&store, &stop);
                    scope.spawn(move || {
                        let mut n = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            // A typical small transition event: ~100 bytes of JSON.
                            let events: Vec<_> = (0..batch)
                                .map(|_| {
                                    n += 1;
                                    NewEvent::new(
                                        "node_completed",
                                        json!({"node": "fetch", "attempt": 1, "n": n, "output": {"ok": true}}),
                                        0,
                                    )
                                })
                                .collect();
                            if let Err(e) = store.append(run, &events) {
                                eprintln!("append failed: {e}");
                                return;
                            }
                        }
                    });
                }
                std::thread::sleep(Duration::from_secs_f64(seconds));
                stop.store(true, Ordering::Relaxed);
            });
            let elapsed = started.elapsed().as_secs_f64();
            let after = store.stats();
            let appends = (after.appends - before.appends) as f64;
            let events = (after.events - before.events) as f64;
            let transactions = (after.transactions - before.transactions) as f64;
            // Closing the last connection checkpoints the WAL into the main file, so the
            // file size is then the whole store: bytes per event including indexes.
            drop(store);
            let bytes = std::fs::metadata(&path)?.len() as f64;
            println!(
                "{:>9} {:>6} {:>10.0} {:>11.0} {:>10.0} {:>12.0} {:>10.1} {:>11.0}",
                appenders,
                batch,
                appends / elapsed,
                events / elapsed,
                transactions / elapsed,
                transactions,
                appends / transactions.max(1.0),
                bytes / events.max(1.0),
            );
        }
    }
    Ok(())
}
