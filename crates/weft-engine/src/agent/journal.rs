//! The tool journal an attempt's agent works with (`docs/engine.md` §3p): the node's
//! journalled side effects as the run's log holds them, and the port through which the agent
//! records a new one. Recording sends the entry to the driver, which appends it to the log as
//! a `tool_effect` event and only then answers: the agent never touches the store, the driver
//! stays the log's only writer, and the result is durable before the model sees it.
//!
//! Which attempt's keys an attempt uses ([`AttemptJournal::key_attempt`]): its own number,
//! except for the attempt that takes over from one the process died in (on resume the engine
//! abandons that attempt and runs the next number): that one continues the abandoned
//! attempt's call slots, under its keys, so its `k`-th side-effecting call is answered from
//! the log when the dead attempt's `k`-th call was journalled. A retry after a failure is a new
//! attempt with new keys; it sees what earlier attempts did in [`AttemptJournal::earlier`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// The most bytes of a result's JSON text a `tool_effect` keeps; a longer result is logged
/// as `{"truncated": true, "head": …}` (the first bytes of that text).
pub const MAX_EFFECT_RESULT: usize = 16 * 1024;

/// One journalled side-effecting call, as the `tool_effect` event logs it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolEffect {
    /// The node (its instance address inside a fragment).
    pub node: String,
    /// The attempt that made the call.
    pub attempt: u32,
    /// The call's idempotency key (`idem-…`).
    pub key: String,
    /// The tool (`file_write`, `shell_exec`, `mcp__SERVER__TOOL`, …).
    pub tool: String,
    /// `sha256:…` of the call's arguments (never the arguments: file contents stay out).
    pub arguments: String,
    /// What the tool returned, secrets redacted and bounded ([`MAX_EFFECT_RESULT`]).
    pub result: Value,
}

impl ToolEffect {
    /// `result` made fit for the log: members named like secrets redacted (as in the audit
    /// trail), and cut to [`MAX_EFFECT_RESULT`] bytes of JSON text.
    pub fn bounded(mut result: Value) -> Value {
        weft_audit::redact(&mut result, weft_audit::DEFAULT_SECRET_FIELDS);
        let text = result.to_string();
        if text.len() <= MAX_EFFECT_RESULT {
            return result;
        }
        let mut cut = MAX_EFFECT_RESULT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        serde_json::json!({"truncated": true, "head": &text[..cut]})
    }

    /// The entry the tool layer matches a call slot against: `{tool, arguments, result}`.
    pub fn entry(&self) -> Value {
        serde_json::json!({"tool": self.tool, "arguments": self.arguments,
            "result": self.result})
    }
}

/// A side effect or a policy decision on its way to the log, and who waits for it to be
/// durable.
#[derive(Debug)]
pub struct EffectMessage {
    pub logged: Logged,
    /// Answered once the event is appended (`Err`: why it was not).
    pub done: oneshot::Sender<Result<(), String>>,
}

/// What an attempt sends the driver to append before it goes on.
#[derive(Debug)]
pub enum Logged {
    /// A side effect's result (`tool_effect`).
    Effect(ToolEffect),
    /// A policy decision on one action of a tool call (`policy_decision`).
    Decision(PolicyDecision),
}

/// One policy decision on a tool call of an attempt, as the log keeps it: allow, ask or
/// deny, with the layer or rule that decided (`docs/engine.md`, event `policy_decision`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PolicyDecision {
    /// The node's address (`fix[2].step` inside a fragment).
    pub node: String,
    pub attempt: u32,
    pub tool: String,
    /// `scope:action:target`.
    pub action: String,
    /// `allow`, `ask` or `deny`.
    pub decision: String,
    /// `node`, a container, `policy.rules[i] PATTERN`, `default` or `resource`.
    pub rule: String,
    pub reason: String,
}

/// Why an effect could not be recorded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JournalError {
    /// The attempt runs without a port (an embedder's direct call, a judge).
    #[error("this attempt has no journal port")]
    NoPort,
    /// The driver stopped before it appended the effect.
    #[error("the run stopped before the effect was logged")]
    Stopped,
    /// The append failed.
    #[error("the effect was not logged: {0}")]
    Append(String),
}

/// One attempt's view of its node's journal (see the module docs). The default has no
/// entries and no port.
#[derive(Clone, Debug, Default)]
pub struct AttemptJournal {
    key_attempt: u32,
    entries: Arc<Mutex<BTreeMap<String, ToolEffect>>>,
    earlier: Arc<Vec<ToolEffect>>,
    port: Option<mpsc::UnboundedSender<EffectMessage>>,
}

impl AttemptJournal {
    /// The journal of an attempt whose calls use `key_attempt`'s keys: `slots` are the
    /// entries recorded under those keys so far, `earlier` the effects of the node's other
    /// attempts, `port` where new entries go.
    pub fn new(
        key_attempt: u32,
        slots: Vec<ToolEffect>,
        earlier: Vec<ToolEffect>,
        port: Option<mpsc::UnboundedSender<EffectMessage>>,
    ) -> AttemptJournal {
        AttemptJournal {
            key_attempt,
            entries: Arc::new(Mutex::new(
                slots.into_iter().map(|e| (e.key.clone(), e)).collect(),
            )),
            earlier: Arc::new(earlier),
            port,
        }
    }

    /// The attempt number the idempotency keys of this attempt's calls are derived from;
    /// `None` when the engine gave no journal (the agent uses its own attempt number).
    pub fn key_attempt(&self) -> Option<u32> {
        (self.key_attempt > 0).then_some(self.key_attempt)
    }

    /// Whether the engine gave this attempt a journal port.
    pub fn is_connected(&self) -> bool {
        self.port.is_some()
    }

    /// The journalled entry under `key`, if that call slot already ran.
    pub fn get(&self, key: &str) -> Option<ToolEffect> {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    /// The side effects the node's earlier attempts made (other keys than this attempt's).
    pub fn earlier(&self) -> &[ToolEffect] {
        &self.earlier
    }

    /// Sends `effect` to the log and waits until it is appended.
    pub async fn record(&self, mut effect: ToolEffect) -> Result<(), JournalError> {
        let port = self.port.as_ref().ok_or(JournalError::NoPort)?;
        effect.result = ToolEffect::bounded(effect.result);
        let (done, appended) = oneshot::channel();
        port.send(EffectMessage {
            logged: Logged::Effect(effect.clone()),
            done,
        })
        .map_err(|_| JournalError::Stopped)?;
        appended
            .await
            .map_err(|_| JournalError::Stopped)?
            .map_err(JournalError::Append)?;
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(effect.key.clone(), effect);
        Ok(())
    }

    /// Sends a policy decision to the driver and waits until it is appended. Without a
    /// port (an agent run outside a driver) there is no log to keep it in: `Ok`.
    pub async fn record_decision(&self, decision: PolicyDecision) -> Result<(), JournalError> {
        let Some(port) = self.port.as_ref() else {
            return Ok(());
        };
        let (done, appended) = oneshot::channel();
        port.send(EffectMessage {
            logged: Logged::Decision(decision),
            done,
        })
        .map_err(|_| JournalError::Stopped)?;
        appended
            .await
            .map_err(|_| JournalError::Stopped)?
            .map_err(JournalError::Append)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn results_are_redacted_and_bounded() {
        let r = ToolEffect::bounded(json!({"stdout": "ok", "token": "sk-1"}));
        assert_eq!(r, json!({"stdout": "ok", "token": "[redacted]"}));
        let long = ToolEffect::bounded(json!({"stdout": "é".repeat(MAX_EFFECT_RESULT)}));
        assert_eq!(long["truncated"], true);
        assert!(long["head"].as_str().unwrap().len() <= MAX_EFFECT_RESULT);
    }

    #[tokio::test]
    async fn an_effect_is_kept_once_the_driver_answered() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let journal = AttemptJournal::new(1, Vec::new(), Vec::new(), Some(tx));
        let effect = ToolEffect {
            node: "n".into(),
            attempt: 1,
            key: "idem-1".into(),
            tool: "file_write".into(),
            arguments: "sha256:0".into(),
            result: json!({"bytes": 1}),
        };
        let driver = tokio::spawn(async move {
            let m: EffectMessage = rx.recv().await.unwrap();
            let _ = m.done.send(Ok(()));
            match m.logged {
                Logged::Effect(e) => e,
                Logged::Decision(d) => panic!("expected an effect, got {d:?}"),
            }
        });
        journal.record(effect.clone()).await.unwrap();
        assert_eq!(driver.await.unwrap(), effect);
        assert_eq!(journal.get("idem-1"), Some(effect.clone()));
        // Without a port nothing is recorded.
        let none = AttemptJournal::default();
        assert_eq!(none.record(effect).await, Err(JournalError::NoPort));
        assert_eq!(none.key_attempt(), None);
    }
}
