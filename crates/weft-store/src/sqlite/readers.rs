//! Reader connections: separate from the writer so reads never queue behind a commit.
//!
//! With WAL a reader sees the last committed state while the writer writes. Idle
//! connections are kept for reuse (opening one costs a file open and the pragmas).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;

use super::connection;
use crate::error::Result;

/// How many idle reader connections to keep; more are opened on demand and closed after use.
const MAX_IDLE: usize = 8;

pub(crate) enum Readers {
    /// A database file: a pool of read-only connections.
    Pool {
        path: PathBuf,
        idle: Mutex<Vec<Connection>>,
    },
    /// An in-memory database: the writer's own connection (a second one would see a
    /// different, empty database).
    Shared(Arc<Mutex<Connection>>),
}

impl Readers {
    pub(crate) fn with<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        match self {
            Readers::Shared(conn) => {
                let conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
                f(&conn)
            }
            Readers::Pool { path, idle } => {
                let pooled = idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
                let conn = match pooled {
                    Some(conn) => conn,
                    None => connection::open_reader(path)?,
                };
                let result = f(&conn);
                let mut idle = idle.lock().unwrap_or_else(PoisonError::into_inner);
                if idle.len() < MAX_IDLE {
                    idle.push(conn);
                }
                result
            }
        }
    }
}
