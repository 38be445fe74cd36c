//! The SQLite backend as a source of tails (`crate::tail`): how its hub thread reads, and
//! for a file, how it finds the commits of other processes.
//!
//! For a file the hub has a connection of its own (`data_version` is per connection, and
//! a pooled one would not be the same one each time) and, while something waits, asks it
//! every `POLL` for `PRAGMA data_version` (a read of the WAL index in shared memory); when
//! it changed and the new events are not all this process's own, it reads which runs
//! advanced. An in-memory database is read through its one connection: nothing else can
//! write there.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;

use super::{Inner, connection, queries, tail_read};
use crate::counters::Counters;
use crate::error::{Result, StoreError};
use crate::tail::{HubReader, TailFrom, TailSource, TailedEvent, Watchers};

impl TailSource for Inner {
    fn watchers(&self) -> &Watchers {
        &self.counters.watchers
    }

    fn hub_reader(&self) -> Box<dyn HubReader> {
        match (&self.path, &self.inline) {
            (Some(path), _) => Box::new(FileReader {
                path: path.clone(),
                counters: Arc::clone(&self.counters),
                conn: None,
                known: None,
            }),
            (None, Some(conn)) => Box::new(MemoryReader(Arc::clone(conn))),
            (None, None) => Box::new(Gone),
        }
    }

    fn last_seq_now(&self, run_id: &str) -> Option<Result<u64>> {
        // In memory nothing blocks (no file, no other writer): answered at the call, and
        // no hub thread is started for it.
        let conn = self.inline.as_ref()?;
        let conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
        Some(queries::last_seq(&conn, run_id))
    }
}

/// An in-memory database's hub reads through its one connection.
struct MemoryReader(Arc<Mutex<Connection>>);

impl HubReader for MemoryReader {
    fn read_after(&mut self, from: &TailFrom, limit: usize) -> Result<Vec<TailedEvent>> {
        let conn = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        tail_read::read_after(&conn, from, limit)
    }

    fn last_seq(&mut self, run_id: &str) -> Result<u64> {
        let conn = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        queries::last_seq(&conn, run_id)
    }
}

/// A store with neither a file nor a connection cannot exist; answered, not panicked.
struct Gone;

impl HubReader for Gone {
    fn read_after(&mut self, _: &TailFrom, _: usize) -> Result<Vec<TailedEvent>> {
        Err(StoreError::Internal("the store has no connection".into()))
    }

    fn last_seq(&mut self, _: &str) -> Result<u64> {
        Err(StoreError::Internal("the store has no connection".into()))
    }
}

/// What the hub last knew of a database file: its `data_version`, its last position, and
/// how many events this process's writer had committed once that position was read.
#[derive(Clone, Copy)]
struct Known {
    data_version: i64,
    position: i64,
    own_events: u64,
}

/// A database file's hub reader: a connection of its own, opened on first use.
struct FileReader {
    path: PathBuf,
    /// The store's counters: how many events this process committed.
    counters: Arc<Counters>,
    conn: Option<Connection>,
    /// Set while something waits; `None` when nothing does, so that the next wait starts
    /// from the file as it is then.
    known: Option<Known>,
}

impl FileReader {
    fn conn(&mut self) -> Result<&Connection> {
        if self.conn.is_none() {
            self.conn = Some(connection::open_reader(&self.path)?);
        }
        self.conn
            .as_ref()
            .ok_or_else(|| StoreError::Internal("the tail connection is gone".into()))
    }

    /// Events this process's writer has committed to the file.
    fn own_events(&self) -> u64 {
        self.counters.snapshot().events
    }
}

impl HubReader for FileReader {
    fn read_after(&mut self, from: &TailFrom, limit: usize) -> Result<Vec<TailedEvent>> {
        tail_read::read_after(self.conn()?, from, limit)
    }

    fn last_seq(&mut self, run_id: &str) -> Result<u64> {
        queries::last_seq(self.conn()?, run_id)
    }

    fn shared(&self) -> bool {
        true
    }

    fn know(&mut self) -> Result<()> {
        if self.known.is_some() {
            return Ok(());
        }
        let conn = self.conn()?;
        let data_version = tail_read::data_version(conn)?;
        let position = tail_read::max_position(conn)?;
        self.known = Some(Known {
            data_version,
            position,
            // Read after the position: an own event counted here is at or below it.
            own_events: self.own_events(),
        });
        Ok(())
    }

    fn others_committed(&mut self) -> Vec<(String, u64)> {
        let Some(known) = self.known else {
            return Vec::new();
        };
        let Ok(conn) = self.conn() else {
            return Vec::new();
        };
        let Ok(data_version) = tail_read::data_version(conn) else {
            return Vec::new();
        };
        if data_version == known.data_version {
            return Vec::new();
        }
        // Most changes are this process's own commits, whose watchers the commit path
        // has woken already. Positions are gap-free, so when the events after the known
        // position are as many as this process committed since, none is another's and
        // nothing needs reading. (Counted before the position is read: every event counted
        // is then at or below it.)
        let own_before = self.own_events();
        let Ok(position) = self.conn().and_then(tail_read::max_position) else {
            return Vec::new();
        };
        let own_after = self.own_events();
        let new = u64::try_from(position - known.position).unwrap_or(u64::MAX);
        let mut runs = Vec::new();
        if new != own_before.saturating_sub(known.own_events) {
            match self
                .conn()
                .and_then(|conn| tail_read::advanced_between(conn, known.position, position))
            {
                Ok(advanced) => runs = advanced,
                Err(_) => return Vec::new(),
            }
        }
        self.known = Some(Known {
            data_version,
            position,
            own_events: own_after,
        });
        runs
    }

    fn forget(&mut self) {
        self.known = None;
    }
}
