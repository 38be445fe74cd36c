//! Typed errors. Every problem found in the file carries the 1-based line number of the
//! first broken line, so `weft audit verify` can print `file:line: what is wrong`.

/// What is wrong with one line of the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineProblem {
    /// Not a v1 line at all: not UTF-8, not JSON, wrong members or member types, empty.
    #[error("malformed line: {0}")]
    Malformed(String),
    /// The file ends without a newline: a write was cut short or bytes were appended.
    #[error("the last line has no newline: a write was cut short or bytes were appended")]
    Incomplete,
    /// Longer than [`crate::MAX_LINE_BYTES`].
    #[error("line longer than {limit} bytes")]
    TooLong { limit: usize },
    /// A `v` this build does not read.
    #[error("unsupported format version {found} (this build reads v1)")]
    Version { found: String },
    /// Valid JSON, but not byte-for-byte its RFC 8785 form: the line was edited.
    #[error("not in RFC 8785 canonical form: the line was edited after it was written")]
    NotCanonical,
    /// `seq` is not the previous line's plus one.
    #[error("seq is {found}, expected {expected}: {}", seq_hint(*expected, *found))]
    SeqMismatch { expected: u64, found: u64 },
    /// `prev` is not the previous line's hash.
    #[error(
        "prev is {found} but the previous line's hash is {expected}: a line before this one \
         was changed, inserted, deleted or moved"
    )]
    PrevMismatch { expected: String, found: String },
    /// The stored `hash` is not the hash of the line's content.
    #[error("hash mismatch (stored {stored}, computed {computed}): the line was modified")]
    HashMismatch { stored: String, computed: String },
}

fn seq_hint(expected: u64, found: u64) -> &'static str {
    if found > expected {
        "lines are missing here, or were moved"
    } else {
        "seq went backwards: a line was inserted, duplicated or moved"
    }
}

/// Everything that can go wrong reading, verifying or appending to an audit log.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The first broken line; nothing after it was checked.
    #[error("line {line}: {problem}")]
    Line { line: u64, problem: LineProblem },
    /// The chain verified, but no line has the anchor's hash: the log was truncated before
    /// the anchored line, or rewritten.
    #[error(
        "anchor {anchor} is not in the chain ({lines} lines, last hash {last_hash}): the log \
         was truncated or rewritten"
    )]
    AnchorNotFound {
        anchor: String,
        lines: u64,
        last_hash: String,
    },
    /// An anchor that cannot be a hash.
    #[error("invalid anchor {0:?}: expected 64 hex digits")]
    BadAnchor(String),
    /// An entry whose line would exceed [`crate::MAX_LINE_BYTES`]; nothing was written.
    #[error("entry too large: its line is {size} bytes, the limit is {limit}")]
    EntryTooLarge { size: usize, limit: usize },
    /// The file got shorter while this writer had it open.
    #[error("the log shrank from {expected} to {found} bytes while it was open: truncated")]
    Shrunk { expected: u64, found: u64 },
    /// An entry that does not serialise to a JSON object.
    #[error("entry does not serialise to a JSON object: {0}")]
    Entry(String),
}

impl AuditError {
    /// The 1-based line number of the broken line, when the error is about one.
    pub fn line(&self) -> Option<u64> {
        match self {
            AuditError::Line { line, .. } => Some(*line),
            _ => None,
        }
    }
}
