//! Walking a chain: the public [`verify`] and the incremental [`Verifier`] the writer uses
//! to catch up with lines other writers appended.

use crate::chain::{GENESIS, MAX_LINE_BYTES, check_line, is_hash};
use crate::error::{AuditError, LineProblem};
use serde::Serialize;
use std::io::{BufRead, Read as _};

/// A verified chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Lines (= entries) verified.
    pub lines: u64,
    /// The last `seq`; 0 for an empty file.
    pub last_seq: u64,
    /// The last line's hash; [`GENESIS`] for an empty file.
    pub last_hash: String,
    /// Where the anchor was found; `None` when no anchor was given.
    pub anchor: Option<AnchorMatch>,
}

/// The line whose hash is the anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AnchorMatch {
    /// Its `seq` (0 for the [`GENESIS`] anchor of an empty chain).
    pub seq: u64,
    /// Whether the file ends there; otherwise `last_seq - seq` entries follow it.
    pub at_end: bool,
}

/// Verifies a whole log from `reader`. Stops at the first broken line and reports it. With
/// an `anchor` (a hash kept outside the file), also fails unless some line has that hash,
/// which is what catches a truncated tail.
pub fn verify<R: BufRead>(mut reader: R, anchor: Option<&str>) -> Result<VerifyReport, AuditError> {
    let anchor = anchor.map(normalise_anchor).transpose()?;
    let mut v = Verifier::new(0, GENESIS.to_owned(), anchor);
    let mut buf = Vec::new();
    while v.next_line(&mut reader, &mut buf)? {}
    v.finish()
}

/// Verifies a part of a chain: lines that continue the line `after_seq` whose hash is
/// `after_hash` (`0` and [`GENESIS`]: the whole chain, as [`verify`]). Line numbers in
/// errors, and `lines` in the report, count from `after_seq` as `seq` does. For a chain
/// kept in pieces (a store that holds the lines after those of an older file).
pub fn verify_from<R: BufRead>(
    mut reader: R,
    after_seq: u64,
    after_hash: &str,
    anchor: Option<&str>,
) -> Result<VerifyReport, AuditError> {
    let anchor = anchor.map(normalise_anchor).transpose()?;
    let mut v = Verifier::new(after_seq, after_hash.to_owned(), anchor);
    let mut buf = Vec::new();
    while v.next_line(&mut reader, &mut buf)? {}
    v.finish()
}

/// `sha256:`-prefixed and uppercase spellings are accepted; the chain stores lowercase.
fn normalise_anchor(anchor: &str) -> Result<String, AuditError> {
    let hex = anchor
        .strip_prefix("sha256:")
        .unwrap_or(anchor)
        .to_ascii_lowercase();
    if is_hash(&hex) {
        Ok(hex)
    } else {
        Err(AuditError::BadAnchor(anchor.to_owned()))
    }
}

/// Chain state between lines.
pub(crate) struct Verifier {
    line: u64,
    seq: u64,
    head: String,
    anchor: Option<String>,
    anchor_seq: Option<u64>,
}

impl Verifier {
    /// A verifier that expects the line after `seq` (whose hash is `head`).
    pub(crate) fn new(seq: u64, head: String, anchor: Option<String>) -> Self {
        let anchor_seq = anchor.as_deref().filter(|a| *a == head).map(|_| seq);
        Verifier {
            // One line per entry and no blank lines, so the line number tracks seq.
            line: seq,
            seq,
            head,
            anchor,
            anchor_seq,
        }
    }

    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    pub(crate) fn head(&self) -> &str {
        &self.head
    }

    /// Reads and checks one line; `Ok(false)` at the end of the input.
    pub(crate) fn next_line<R: BufRead>(
        &mut self,
        reader: &mut R,
        buf: &mut Vec<u8>,
    ) -> Result<bool, AuditError> {
        buf.clear();
        // The cap keeps a newline-free multi-gigabyte file from being buffered whole.
        let cap = u64::try_from(MAX_LINE_BYTES).unwrap_or(u64::MAX);
        let n = reader.by_ref().take(cap + 1).read_until(b'\n', buf)?;
        if n == 0 {
            return Ok(false);
        }
        let line = self.line + 1;
        let fail = |problem| AuditError::Line { line, problem };
        if buf.last() != Some(&b'\n') {
            return Err(fail(if n > MAX_LINE_BYTES {
                LineProblem::TooLong {
                    limit: MAX_LINE_BYTES,
                }
            } else {
                LineProblem::Incomplete
            }));
        }
        let content = &buf[..n - 1];
        let hash = check_line(content, self.seq + 1, &self.head).map_err(fail)?;
        self.line = line;
        self.seq += 1;
        if self.anchor.as_deref() == Some(hash.as_str()) {
            self.anchor_seq = Some(self.seq);
        }
        self.head = hash;
        Ok(true)
    }

    pub(crate) fn finish(self) -> Result<VerifyReport, AuditError> {
        let anchor = match (self.anchor, self.anchor_seq) {
            (None, _) => None,
            (Some(_), Some(seq)) => Some(AnchorMatch {
                seq,
                at_end: seq == self.seq,
            }),
            (Some(anchor), None) => {
                return Err(AuditError::AnchorNotFound {
                    anchor,
                    lines: self.line,
                    last_hash: self.head,
                });
            }
        };
        Ok(VerifyReport {
            lines: self.line,
            last_seq: self.seq,
            last_hash: self.head,
            anchor,
        })
    }
}
