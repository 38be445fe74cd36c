//! The durable event store of weft: runs and their append-only event logs.
//!
//! A run's state is never stored, only the events that produced it; the engine rebuilds
//! state by replaying the log, and every IO result becomes an event appended here *before*
//! it changes state. Access goes through small capability traits, one per table
//! ([`RunTable`], [`EventLog`], [`AuditAnchors`], [`RunLeases`], and the awaited ones),
//! gathered in [`RunStore`] and implemented by [`SqliteStore`] (a file, or in memory) and
//! [`EphemeralStore`] (no SQL), and by a PostgreSQL backend later; [`open_store`] picks one
//! at run time. Timestamps are fields supplied by the caller; the store never reads the
//! clock.
//!
//! ```
//! use weft_store::{EventLog, NewEvent, NewRun, RunTable, SqliteStore};
//! use serde_json::json;
//!
//! let store = SqliteStore::open_in_memory()?;
//! store.create_run(&NewRun { id: "r1".into(), graph_digest: "sha256:00".into(), created_at_ms: 0 })?;
//! let seqs = store.append("r1", &[NewEvent::new("run_started", json!({}), 1)])?;
//! assert_eq!(seqs, [1]);
//! // Optimistic concurrency: this writer last saw seq 0, so it loses.
//! assert!(store.append_expecting("r1", 0, &[NewEvent::new("x", json!(1), 2)]).unwrap_err().is_conflict());
//! # Ok::<(), weft_store::StoreError>(())
//! ```
//!
//! Format, durability guarantees and group commit: `docs/store.md` (store schema v4).

mod audit_log;
mod counters;
mod error;
mod lease;
mod memory;
mod model;
mod open;
mod sqlite;
mod tail;
mod traits;

pub use audit_log::{AUDIT_GENESIS, AuditEncoder, AuditEntries, AuditLine};
pub use error::{Result, StoreError};
pub use lease::{Lease, LeaseHolder, RELEASED, Takeover};
pub use memory::EphemeralStore;
pub use model::{
    AuditAnchor, EventRecord, NewEvent, NewRun, Payload, RawEventRecord, RunRecord, RunStatus,
    StoreStats,
};
pub use open::{Backend, open_store};
pub use sqlite::{SCHEMA_VERSION, SqliteStore};
pub use tail::{AppendWait, POLL as TAIL_POLL, RunWatch, Tail, TailFrom, TailedEvent};
pub use traits::{
    AuditAnchors, AuditWrites, AwaitedReads, AwaitedWrites, EventLog, FollowLog, LeaseFence,
    RunLeases, RunStore, RunTable, SharedStore, StoreFuture,
};

/// The SQLite store under its former name, kept because tests, examples and the CLI
/// open it as `Store::open…` in hundreds of places: the same type as [`SqliteStore`].
pub type Store = SqliteStore;
