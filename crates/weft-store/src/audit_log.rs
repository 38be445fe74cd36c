//! Audit entries committed with the events that cause them (schema v4, `docs/store.md` §2b).
//!
//! A store handle made with [`crate::AuditWrites::audited`] writes, in the same transaction as
//! every append (SQLite) or under the same lock (ephemeral), the hash-chained audit lines
//! of the events appended, continuing the run's chain from its anchor. The store does not
//! know the line format: an [`AuditEncoder`] (the engine's, `weft_engine::audit`) turns
//! stored events into lines; the store keeps them in `audit_entries` and moves the run's
//! anchor to the last one. So the audit costs no sync of its own, and after any crash the
//! stored audit and the log agree: both or neither of a batch are kept.

use std::fmt::Debug;

use crate::error::Result;
use crate::model::{AuditAnchor, RawEventRecord};

/// The `prev` of a chain's first line and the hash of the empty chain (64 zeros), as in
/// `weft_audit::GENESIS`.
pub const AUDIT_GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One stored line of a run's audit chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditLine {
    /// Its `seq` in the chain (1-based, gap-free).
    pub audit_seq: u64,
    /// The run event it records.
    pub event_seq: u64,
    /// Its hash (64 lowercase hex digits).
    pub hash: String,
    /// The line's text, without its newline: exactly what the JSONL export holds.
    pub line: String,
}

/// Turns stored events into the audit lines that follow a chain's head.
pub trait AuditEncoder: Send + Sync + Debug {
    /// The lines for `events` (consecutive, in seq order, all after `head.event_seq`),
    /// numbered from `head.audit_seq + 1` and linked from `head.hash`. An event may have
    /// no line. An error refuses the whole write (`StoreError::Audit`): nothing of it is
    /// stored.
    fn encode(
        &self,
        run_id: &str,
        head: &AuditAnchor,
        events: &[RawEventRecord],
    ) -> Result<Vec<AuditLine>>;
}

/// The head of a run whose chain has no anchor yet: the empty chain.
pub(crate) fn genesis(run_id: &str) -> AuditAnchor {
    AuditAnchor {
        run_id: run_id.to_owned(),
        event_seq: 0,
        audit_seq: 0,
        hash: AUDIT_GENESIS.to_owned(),
        updated_at_ms: 0,
    }
}

/// The anchor after `lines` (the last of them) covering events up to `event_seq`.
pub(crate) fn advanced(
    head: &AuditAnchor,
    lines: &[AuditLine],
    event_seq: u64,
    at_ms: i64,
) -> AuditAnchor {
    let mut next = head.clone();
    if let Some(last) = lines.last() {
        next.audit_seq = last.audit_seq;
        next.hash.clone_from(&last.hash);
    }
    next.event_seq = event_seq;
    next.updated_at_ms = at_ms;
    next
}

/// Reading the audit lines a store keeps (schema v4).
pub trait AuditEntries: Send + Sync {
    /// Up to `limit` lines of `run_id` with `audit_seq > after`, in order. Empty for a run
    /// with none (or no such run).
    fn audit_lines(&self, run_id: &str, after: u64, limit: usize) -> Result<Vec<AuditLine>>;
}
