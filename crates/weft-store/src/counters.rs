//! Write counters ([`crate::RunStore::stats`]) and the registry of who waits for a run's
//! log to grow, kept together because every commit path of every backend holds both.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::model::StoreStats;
use crate::tail::Watchers;

/// Counters shared by a store's handles and its commit paths.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    transactions: AtomicU64,
    writes: AtomicU64,
    appends: AtomicU64,
    events: AtomicU64,
    /// Not a counter: who waits for a run's log to grow (`tail/`), here because every
    /// commit path already holds the counters.
    pub(crate) watchers: Watchers,
}

impl Counters {
    /// One write committed on its own (the ephemeral backend): a transaction, a write, and
    /// for an append its events.
    pub(crate) fn count_single(&self, appended: Option<usize>) {
        self.count_transaction();
        self.count_write();
        if let Some(n) = appended {
            self.count_append(Some(n));
        }
    }

    pub(crate) fn count_transaction(&self) {
        self.transactions.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_write(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }

    /// An append, and the events it wrote if it succeeded.
    pub(crate) fn count_append(&self, events: Option<usize>) {
        self.appends.fetch_add(1, Ordering::Relaxed);
        if let Some(n) = events {
            self.events.fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    pub(crate) fn snapshot(&self) -> StoreStats {
        StoreStats {
            transactions: self.transactions.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            appends: self.appends.load(Ordering::Relaxed),
            events: self.events.load(Ordering::Relaxed),
        }
    }
}
