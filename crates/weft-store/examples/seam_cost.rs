//! The per-append cost of the store seam (`docs/store.md` §5): one event appended with the
//! awaited `append_async`, called on the concrete store (the call static; SQLite's future
//! unboxed, the ephemeral store's the trait's, resolved at the call) and through
//! `&dyn RunStore` (the engine's way: a virtual call and a boxed future), alternating the two in rounds so that both see the same machine load, on the
//! ephemeral store and SQLite in memory (no fsync: where the seam's share is largest).
//! Prints the median ns per append over the rounds, CPU time of the appending thread
//! (`CLOCK_THREAD_CPUTIME_ID`: both stores write on the caller's thread). Usage:
//! `cargo run --release -p weft-store --example seam_cost [rounds]`

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use serde_json::json;
use weft_store::{AwaitedWrites, EphemeralStore, NewEvent, NewRun, RunStore, SqliteStore};

/// This thread's CPU time so far, in ns.
fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// Polls a future these stores resolve at the call (they write inline).
fn ready<T>(future: impl Future<Output = T>) -> T {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(future).poll(&mut cx) {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("an inline store left a write pending"),
    }
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A store's own append, called statically.
trait Concrete: RunStore {
    fn append_now(&self, last: u64, event: &NewEvent) -> weft_store::Result<Vec<u64>>;
}

impl Concrete for SqliteStore {
    fn append_now(&self, last: u64, event: &NewEvent) -> weft_store::Result<Vec<u64>> {
        ready(SqliteStore::append_async(
            self,
            "r",
            last,
            vec![event.clone()],
        ))
    }
}

impl Concrete for EphemeralStore {
    fn append_now(&self, last: u64, event: &NewEvent) -> weft_store::Result<Vec<u64>> {
        ready(AwaitedWrites::append_async(
            self,
            "r",
            last,
            vec![event.clone()],
        ))
    }
}

/// ns per append of `n` appends on the concrete store.
fn concrete<S: Concrete>(store: &S, n: u32, event: &NewEvent) -> Res<f64> {
    let mut last = store.last_seq("r")?;
    let before = thread_cpu_ns();
    for _ in 0..n {
        last = store.append_now(last, event)?[0];
    }
    Ok((thread_cpu_ns() - before) as f64 / f64::from(n))
}

/// ns per append of `n` appends through the trait object.
fn seam(store: &dyn RunStore, n: u32, event: &NewEvent) -> Res<f64> {
    let mut last = store.last_seq("r")?;
    let before = thread_cpu_ns();
    for _ in 0..n {
        last = ready(AwaitedWrites::append_async(
            store,
            "r",
            last,
            vec![event.clone()],
        ))?[0];
    }
    Ok((thread_cpu_ns() - before) as f64 / f64::from(n))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Res<()> {
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
    println!(
        "{:>10} {:>8} {:>12} {:>10} {:>10}",
        "backend", "appends", "concrete ns", "seam ns", "difference"
    );
    measure("ephemeral", &EphemeralStore::new(), rounds, &event)?;
    measure("memory", &SqliteStore::open_in_memory()?, rounds, &event)?;
    Ok(())
}

fn measure<S: Concrete>(backend: &str, store: &S, rounds: usize, event: &NewEvent) -> Res<()> {
    store.create_run(&NewRun {
        id: "r".into(),
        graph_digest: "sha256:00".into(),
        created_at_ms: 0,
    })?;
    let n = 2_000;
    concrete(store, n, event)?; // warm-up
    seam(store, n, event)?;
    let (mut c, mut s) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        c.push(concrete(store, n, event)?);
        s.push(seam(store, n, event)?);
    }
    let (c, s) = (median(c), median(s));
    println!("{backend:>10} {n:>8} {c:>12.0} {s:>10.0} {:>+10.0}", s - c);
    Ok(())
}
