//! Idempotency keys and the journal of side effects.
//!
//! Every call has a key derived from run, node, attempt and call number ([`CallId::key`]):
//! the same call of the same attempt, replayed after a crash, has the same key, so the
//! journal returns what it did instead of doing it again; a shell command sees its key in
//! `WEFT_IDEMPOTENCY_KEY`, so an effect outside the workspace (an API call, a deploy) can be
//! made idempotent by the command itself. The engine persists the journal in its log (each
//! entry a `tool_effect` event, durable before the model sees the result); the
//! [`MemoryJournal`] here serves a single process and the tests.
//!
//! An entry is `{"tool", "arguments", "result"}` where `arguments` is [`arguments_digest`]
//! of the call's arguments, never the arguments themselves: the slot is matched by digest,
//! and what a call wrote (a file's content) stays out of the log.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Which call this is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallId {
    pub run: String,
    pub node: String,
    pub attempt: u32,
    /// The call's number within the attempt, from 1.
    pub index: u32,
}

impl CallId {
    /// `idem-<hex>`: sha256 of `run`, `node`, attempt and call number, NUL-separated
    /// (no id may contain NUL, so two different calls never share a key).
    pub fn key(&self) -> String {
        let mut h = Sha256::new();
        for part in [
            self.run.as_bytes(),
            self.node.as_bytes(),
            self.attempt.to_string().as_bytes(),
            self.index.to_string().as_bytes(),
        ] {
            h.update(part);
            h.update([0]);
        }
        let digest = h.finalize();
        let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        format!("idem-{hex}")
    }
}

/// `sha256:<hex>` of a call's arguments in their JSON text (`serde_json` keeps member order
/// as parsed, so the same call from the same model turn has the same digest).
pub fn arguments_digest(arguments: &Value) -> String {
    let digest = Sha256::digest(arguments.to_string().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// What recording an entry returns once it is durable: `Err` says why it could not be.
pub type JournalFuture<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// Where the results of side-effecting calls are kept, by idempotency key.
pub trait Journal: Send + Sync {
    /// The recorded entry of the call with `key`, if it already ran.
    fn get(&self, key: &str) -> Option<Value>;
    /// Records the entry of the call with `key`; resolves once it is kept (for the engine's
    /// journal: appended to the run's log).
    fn put<'a>(&'a self, key: &'a str, entry: Value) -> JournalFuture<'a>;
    /// Records one policy decision on an action of a call (allow, ask or deny, with the
    /// layer or rule that decided); resolves once it is kept. The engine's journal appends
    /// it to the run's log as a `policy_decision` event (and so to the audit trail); a
    /// journal outside a run keeps nothing.
    fn decided(&self, record: Value) -> JournalFuture<'_> {
        let _ = record;
        Box::pin(std::future::ready(Ok(())))
    }
}

/// A journal held in this process.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    entries: Mutex<HashMap<String, Value>>,
}

impl Journal for MemoryJournal {
    fn get(&self, key: &str) -> Option<Value> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    fn put<'a>(&'a self, key: &'a str, entry: Value) -> JournalFuture<'a> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key.to_owned(), entry);
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::CallId;

    #[test]
    fn keys_differ_per_call_and_are_stable() {
        let id = |run: &str, node: &str, attempt, index| CallId {
            run: run.into(),
            node: node.into(),
            attempt,
            index,
        };
        let a = id("r", "n", 1, 1).key();
        assert_eq!(a, id("r", "n", 1, 1).key());
        for other in [
            id("r", "n", 1, 2),
            id("r", "n", 2, 1),
            id("r", "m", 1, 1),
            id("s", "n", 1, 1),
        ] {
            assert_ne!(a, other.key());
        }
        // Concatenation cannot collide: ("ab","c") vs ("a","bc").
        assert_ne!(id("ab", "c", 1, 1).key(), id("a", "bc", 1, 1).key());
        assert!(a.starts_with("idem-") && a.len() == 5 + 32);
    }
}
