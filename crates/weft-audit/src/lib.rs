//! weft's audit log: a hash-chained, append-only JSONL file of every authority-relevant
//! event (approvals, policy decisions, node starts with their route, criteria verdicts,
//! run boundaries), and the verifier behind `weft audit verify`.
//!
//! Each line is the RFC 8785 (JCS) canonical form of
//! `{"entry":{…},"hash":H,"prev":P,"seq":N,"v":1}` and `H` is the SHA-256 of the same line
//! with the `"hash"` member left out, so the chain can be checked with `sed` and
//! `sha256sum` alone. `docs/audit.md` is the format's specification.
//!
//! The crate reads no clock (`at_ms` is the caller's) and touches only the file it is given.

mod chain;
mod entry;
mod error;
mod redact;
mod verify;
mod writer;

pub use chain::{FORMAT_VERSION, GENESIS, MAX_LINE_BYTES, encode_line};
pub use entry::{Entry, Kind};
pub use error::{AuditError, LineProblem};
pub use redact::{DEFAULT_SECRET_FIELDS, REDACTED, redact};
pub use verify::{AnchorMatch, VerifyReport, verify, verify_from};
pub use writer::{AuditWriter, Receipt, prepare_entry};
