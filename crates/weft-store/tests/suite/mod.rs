//! The backend-independent test suite: generic functions over the capability traits.
//!
//! Every function takes a fresh, empty store as the trait object the engine holds.
//! `store.rs` runs every one on each backend (SQLite on a file and in memory, and the
//! ephemeral store); the PostgreSQL backend will run the same list.

pub mod awaited;
pub mod events;
pub mod leases;
pub mod runs;

use weft_store::{NewEvent, NewRun, RunTable};

/// A run with a recognisable digest, created at `t`.
pub fn new_run(id: &str, t: i64) -> NewRun {
    NewRun {
        id: id.to_owned(),
        graph_digest: format!("sha256:{id}"),
        created_at_ms: t,
    }
}

/// Creates runs `ids` in order, at times 1, 2, 3, …
pub fn create_runs<S: RunTable + ?Sized>(store: &S, ids: &[&str]) {
    for (t, id) in (1..).zip(ids) {
        store.create_run(&new_run(id, t)).unwrap();
    }
}

/// `n` events with payload `{"n": first + i}`.
pub fn numbered(first: u64, n: u64) -> Vec<NewEvent> {
    (first..first + n)
        .map(|i| NewEvent::new("step", serde_json::json!({ "n": i }), i as i64))
        .collect()
}
