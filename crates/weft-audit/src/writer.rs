//! Appending to a log. Every append takes an exclusive `File::lock` for the duration of
//! the write, first reads (and verifies) whatever other writers appended since this handle
//! last looked, then continues the chain from the true tail. So any number of handles, in
//! one process or many, can share a file without interleaving or forking the chain.

use crate::chain::{GENESIS, MAX_LINE_BYTES, encode_line};
use crate::entry::Entry;
use crate::error::AuditError;
use crate::redact::{DEFAULT_SECRET_FIELDS, redact};
use crate::verify::Verifier;
use serde::Serialize;
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

/// How deeply an entry may nest arrays and objects (well under serde_json's parse limit).
const MAX_ENTRY_DEPTH: usize = 64;

/// Whether `value` nests containers more than `budget` deep; recursion stops at the budget.
fn too_deep(value: &Value, budget: usize) -> bool {
    let children: Box<dyn Iterator<Item = &Value>> = match value {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(map) => Box::new(map.values()),
        _ => return false,
    };
    budget == 0 || children.into_iter().any(|c| too_deep(c, budget - 1))
}

/// Where an entry landed: keep `hash` elsewhere (the run store) as a truncation anchor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Receipt {
    pub seq: u64,
    pub hash: String,
}

/// An open audit log. Appends are written (not synced) at once; call [`AuditWriter::sync`]
/// after a batch to make it durable.
#[derive(Debug)]
pub struct AuditWriter {
    file: File,
    path: PathBuf,
    /// Bytes of the file this handle has verified.
    len: u64,
    head: Receipt,
    secret_fields: Vec<String>,
}

impl AuditWriter {
    /// Opens (creating if needed) the log at `path` and verifies the whole existing chain;
    /// a broken chain is an error, so nothing is ever appended to a log that fails
    /// `weft audit verify`. Redacts [`DEFAULT_SECRET_FIELDS`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, AuditError> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)?;
        let mut writer = AuditWriter {
            file,
            path,
            len: 0,
            head: Receipt {
                seq: 0,
                hash: GENESIS.to_owned(),
            },
            secret_fields: DEFAULT_SECRET_FIELDS
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
        };
        writer.locked(Self::catch_up)?;
        Ok(writer)
    }

    /// Adds member names to redact (on top of [`DEFAULT_SECRET_FIELDS`]).
    #[must_use]
    pub fn with_secret_fields<I, S>(mut self, fields: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.secret_fields
            .extend(fields.into_iter().map(Into::into));
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The last line this handle has seen (seq 0 and [`GENESIS`] for an empty log).
    pub fn head(&self) -> &Receipt {
        &self.head
    }

    /// Appends one entry (redacted first) and returns where it landed.
    pub fn append(&mut self, entry: &Entry) -> Result<Receipt, AuditError> {
        let mut receipts = self.append_all(std::slice::from_ref(entry))?;
        receipts
            .pop()
            .ok_or_else(|| AuditError::Entry("nothing appended".into()))
    }

    /// Appends several entries under one lock and one write.
    pub fn append_all(&mut self, entries: &[Entry]) -> Result<Vec<Receipt>, AuditError> {
        let values = entries
            .iter()
            .map(|e| self.prepare(e))
            .collect::<Result<Vec<_>, _>>()?;
        self.locked(|w| w.write_locked(&values))
    }

    /// Runs `f` holding the exclusive lock, and releases it on every path, errors included.
    fn locked<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, AuditError>,
    ) -> Result<T, AuditError> {
        self.file.lock()?;
        let result = f(self);
        // Closing the file would release the lock anyway; an unlock error changes nothing
        // about what was written, so it must not turn a successful append into a failure.
        let _ = self.file.unlock();
        result
    }

    fn write_locked(&mut self, values: &[Value]) -> Result<Vec<Receipt>, AuditError> {
        self.catch_up()?;
        let mut bytes = Vec::new();
        let mut receipts = Vec::with_capacity(values.len());
        let (mut seq, mut prev) = (self.head.seq, self.head.hash.clone());
        for value in values {
            seq += 1;
            let (line, hash) = encode_line(seq, &prev, value);
            if line.len() > MAX_LINE_BYTES {
                return Err(AuditError::EntryTooLarge {
                    size: line.len(),
                    limit: MAX_LINE_BYTES,
                });
            }
            bytes.extend_from_slice(line.as_bytes());
            receipts.push(Receipt {
                seq,
                hash: hash.clone(),
            });
            prev = hash;
        }
        if let Err(e) = (&self.file).write_all(&bytes) {
            // A torn line would make the log fail verification for every later open; cut it
            // off so the file ends at the last complete line again.
            let _ = self.file.set_len(self.len);
            return Err(e.into());
        }
        self.len += bytes.len() as u64;
        if let Some(last) = receipts.last() {
            self.head = last.clone();
        }
        Ok(receipts)
    }

    /// Makes everything appended so far durable (`sync_data`).
    pub fn sync(&self) -> Result<(), AuditError> {
        self.file.sync_data()?;
        Ok(())
    }

    fn prepare(&self, entry: &Entry) -> Result<Value, AuditError> {
        prepare_entry(entry, &self.secret_fields)
    }

    /// Verifies the bytes other writers appended since `self.len`. Call with the lock held.
    fn catch_up(&mut self) -> Result<(), AuditError> {
        let len = self.file.metadata()?.len();
        if len < self.len {
            return Err(AuditError::Shrunk {
                expected: self.len,
                found: len,
            });
        }
        if len == self.len {
            return Ok(());
        }
        let mut file = &self.file;
        file.seek(SeekFrom::Start(self.len))?;
        let mut reader = BufReader::new(file.take(len - self.len));
        let mut v = Verifier::new(self.head.seq, self.head.hash.clone(), None);
        let mut buf = Vec::new();
        while v.next_line(&mut reader, &mut buf)? {}
        self.head = Receipt {
            seq: v.seq(),
            hash: v.head().to_owned(),
        };
        self.len = len;
        Ok(())
    }
}

/// `entry` as the value a line holds: an object, at most 64 levels deep, with the members
/// named in `secret_fields` redacted. What [`AuditWriter`] hashes; public for writers that
/// keep the chain elsewhere (the engine's store, `docs/audit.md` §9).
pub fn prepare_entry<S: AsRef<str>>(
    entry: &Entry,
    secret_fields: &[S],
) -> Result<Value, AuditError> {
    let mut value = serde_json::to_value(entry).map_err(|e| AuditError::Entry(e.to_string()))?;
    if !value.is_object() {
        return Err(AuditError::Entry("not an object".into()));
    }
    // The verifier parses with serde_json's nesting limit (128); an entry deeper than
    // that would be written but could never be verified, locking the log for good.
    if too_deep(&value, MAX_ENTRY_DEPTH) {
        return Err(AuditError::Entry(format!(
            "nested deeper than {MAX_ENTRY_DEPTH} levels"
        )));
    }
    redact(&mut value, secret_fields);
    Ok(value)
}
