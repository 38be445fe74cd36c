//! [`Store`] behind the seam's traits: each awaited method is the inherent one, boxed.

use std::path::Path;
use std::sync::Arc;

use super::{RunWatch, Store, Tail, TailFrom};
use crate::lease::Lease;
use crate::model::{NewEvent, NewRun, RunStatus, StoreStats};
use crate::traits::{AwaitedWrites, FollowLog, LeaseFence, RunStore, SharedStore, StoreFuture};

impl AwaitedWrites for Store {
    fn append_async(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: Vec<NewEvent>,
    ) -> StoreFuture<Vec<u64>> {
        Box::pin(Store::append_async(self, run_id, expected_last_seq, events))
    }

    fn open_run(
        &self,
        run: NewRun,
        status: RunStatus,
        events: Vec<NewEvent>,
    ) -> StoreFuture<Vec<u64>> {
        Box::pin(Store::open_run(self, run, status, events))
    }

    fn close_run(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: Vec<NewEvent>,
        status: RunStatus,
        updated_at_ms: i64,
    ) -> StoreFuture<Vec<u64>> {
        Box::pin(Store::close_run(
            self,
            run_id,
            expected_last_seq,
            events,
            status,
            updated_at_ms,
        ))
    }

    fn renew_lease_async(
        &self,
        run_id: &str,
        token: u64,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreFuture<Lease> {
        Box::pin(Store::renew_lease_async(
            self, run_id, token, now_ms, ttl_ms,
        ))
    }
}

impl FollowLog for Store {
    fn tail(&self, from: TailFrom) -> Tail {
        Store::tail(self, from)
    }

    fn watch_run(&self, run_id: &str) -> RunWatch {
        Store::watch_run(self, run_id)
    }
}

impl LeaseFence for Store {
    fn fenced(&self, lease: Lease) -> SharedStore {
        Arc::new(Store::fenced(self, lease))
    }

    fn held_lease(&self) -> Option<&Lease> {
        Store::held_lease(self)
    }

    fn lease_released(&self) -> bool {
        Store::lease_released(self)
    }
}

impl RunStore for Store {
    fn shared(&self) -> SharedStore {
        Arc::new(self.clone())
    }

    fn path(&self) -> Option<&Path> {
        Store::path(self)
    }

    fn stats(&self) -> StoreStats {
        Store::stats(self)
    }
}
