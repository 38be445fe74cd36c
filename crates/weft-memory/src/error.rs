//! The errors of the memory store.

use thiserror::Error;

/// What went wrong in a memory operation. Input problems name the input; storage problems
/// say what was being done.
#[derive(Debug, Error)]
pub enum MemoryError {
    /// SQLite failed while doing `doing`.
    #[error("memory store: {doing}: {source}")]
    Sqlite {
        doing: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    /// The database exists but is not a memory store this build can read.
    #[error("memory store: {0}")]
    Schema(String),
    /// A line of a JSONL candidate file is not a candidate (1-based line number).
    #[error("line {line}: {reason}")]
    MalformedLine { line: usize, reason: String },
    /// A candidate id, merge id or entity name that the store does not hold.
    #[error("{0}")]
    NotFound(String),
    /// A decision that the current state does not allow (e.g. promoting a rejected candidate).
    #[error("{0}")]
    Refused(String),
    /// The store's directory is missing and cannot be created.
    #[error("memory store: cannot create {path}: {source}", path = .path.display())]
    Directory {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The writer thread is gone (it panicked or the store was closed).
    #[error("memory store: the writer thread has stopped")]
    WriterGone,
    /// More entities, predicates or edges than the in-memory index addresses (u32).
    #[error("memory store: {0} exceeds the index's capacity")]
    Capacity(&'static str),
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, MemoryError>;

/// Attaches what was being done to a SQLite error.
pub(crate) trait SqliteContext<T> {
    fn ctx(self, doing: &'static str) -> Result<T>;
}

impl<T> SqliteContext<T> for std::result::Result<T, rusqlite::Error> {
    fn ctx(self, doing: &'static str) -> Result<T> {
        self.map_err(|source| MemoryError::Sqlite { doing, source })
    }
}
