//! Choosing the backend at run time: one constructor that answers the trait object.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::Result;
use crate::memory::EphemeralStore;
use crate::sqlite::SqliteStore;
use crate::traits::SharedStore;

/// Which backend a store is opened on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A SQLite database file (created and migrated when needed): durable, shared by
    /// every process that opens the same file.
    File(PathBuf),
    /// A private SQLite database in memory: the file's SQL, nothing durable.
    SqliteInMemory,
    /// Runs held in this process only, no SQL (`docs/store.md` §6).
    Ephemeral,
}

/// Opens a store on `backend`, as the trait object the engine holds.
pub fn open_store(backend: &Backend) -> Result<SharedStore> {
    Ok(match backend {
        Backend::File(path) => Arc::new(SqliteStore::open(path)?),
        Backend::SqliteInMemory => Arc::new(SqliteStore::open_in_memory()?),
        Backend::Ephemeral => Arc::new(EphemeralStore::new()),
    })
}
