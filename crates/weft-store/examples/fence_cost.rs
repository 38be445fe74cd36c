//! The per-append cost of the lease's fence check (`docs/store.md` §2a): one event
//! appended with `append_expecting` through a plain handle and through a handle fenced by
//! the run's lease, alternating plain and fenced rounds so that both see the same machine
//! load, on SQLite in memory and the ephemeral store (no fsync: where the check's share is
//! largest) and on a SQLite file (WAL, `synchronous=FULL`). Prints the median ns per
//! append of each over the rounds: CPU time of the appending thread
//! (`CLOCK_THREAD_CPUTIME_ID`, steady on a shared machine; the in-memory and ephemeral
//! stores write on the caller's thread) and, for the file store, whose writer thread
//! commits, wall time. Usage:
//! `cargo run --release -p weft-store --example fence_cost [rounds]`

use std::time::Instant;

use serde_json::json;
use weft_store::{
    Backend, LeaseHolder, NewEvent, NewRun, RunStore, SharedStore, Takeover, open_store,
};

/// Run `r` of `store` under a lease: the plain handle and the fenced one.
fn leased(store: SharedStore) -> Result<(SharedStore, SharedStore), Box<dyn std::error::Error>> {
    store.create_run(&NewRun {
        id: "r".into(),
        graph_digest: "sha256:00".into(),
        created_at_ms: 0,
    })?;
    let holder = LeaseHolder {
        owner: "bench/1/0".into(),
        host: "bench".into(),
        pid: 1,
    };
    let lease = store.acquire_lease("r", &holder, 0, i64::MAX / 2, Takeover::IfExpired)?;
    let fenced = store.fenced(lease);
    Ok((store, fenced))
}

/// This thread's CPU time so far, in ns.
fn thread_cpu_ns() -> Option<u64> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    u64::try_from(t.tv_sec)
        .ok()
        .and_then(|s| s.checked_mul(1_000_000_000))
        .and_then(|ns| ns.checked_add(u64::try_from(t.tv_nsec).ok()?))
}

/// ns per append of `n` single-event appends through `handle`: CPU time of this thread
/// when `cpu`, else wall time.
fn round(
    handle: &dyn RunStore,
    n: u32,
    event: &NewEvent,
    cpu: bool,
) -> Result<f64, Box<dyn std::error::Error>> {
    let mut last = handle.last_seq("r")?;
    let (wall, on_cpu) = (Instant::now(), thread_cpu_ns().filter(|_| cpu));
    for _ in 0..n {
        last = handle.append_expecting("r", last, std::slice::from_ref(event))?[0];
    }
    let ns = match (on_cpu, thread_cpu_ns()) {
        (Some(before), Some(after)) => (after - before) as f64,
        _ => wall.elapsed().as_nanos() as f64,
    };
    Ok(ns / f64::from(n))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = match std::env::args().nth(1) {
        Some(arg) => arg.parse()?,
        None => 41,
    };
    // A node_finished-sized payload (~90 bytes of JSON).
    let event = NewEvent::new(
        "node_finished",
        json!({"node": "step_0042", "outcome": "succeeded", "outputs": {"label": "done"}, "attempts": 1}),
        1,
    );
    let dir = tempfile::tempdir()?;
    println!(
        "{:>10} {:>6} {:>8} {:>10} {:>10} {:>9}",
        "backend", "time", "appends", "plain ns", "fenced ns", "fence ns"
    );
    for backend in ["memory", "ephemeral", "file"] {
        let (store, n, cpu) = match backend {
            "memory" => (open_store(&Backend::SqliteInMemory)?, 2_000, true),
            "ephemeral" => (open_store(&Backend::Ephemeral)?, 2_000, true),
            _ => (
                open_store(&Backend::File(dir.path().join("fence.db")))?,
                50,
                false,
            ),
        };
        let (plain, fenced) = leased(store)?;
        round(&*plain, n, &event, cpu)?; // warm-up
        round(&*fenced, n, &event, cpu)?;
        let (mut p, mut f) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            p.push(round(&*plain, n, &event, cpu)?);
            f.push(round(&*fenced, n, &event, cpu)?);
        }
        let (p, f) = (median(p), median(f));
        let time = if cpu && thread_cpu_ns().is_some() {
            "cpu"
        } else {
            "wall"
        };
        println!(
            "{backend:>10} {time:>6} {n:>8} {p:>10.0} {f:>10.0} {:>9.0}",
            f - p
        );
    }
    Ok(())
}
