//! The driver's side of the tool journal (`docs/engine.md` §3p): the `tool_effect` events
//! of each node folded from the log, the port attempts record new ones through, and which
//! attempt's keys an attempt uses.
//!
//! An attempt's agent sends each side-effecting call's result through its
//! [`AttemptJournal`]; the driver appends it as a `tool_effect` (append before apply, like
//! every other result), folds it in, and only then answers, so the tool returns to the model
//! a result that is already durable. On resume the same fold runs over the stored events
//! ([`Journals::fold`]), and the attempt that replaces one abandoned by a dead process
//! continues that attempt's call slots under its keys (see `crate::agent::journal`).

use std::collections::BTreeSet;

use tokio::sync::mpsc;

use super::Driver;
use crate::EngineError;
use crate::agent::journal::{AttemptJournal, EffectMessage, Logged, ToolEffect};
use crate::events::RunEvent;

/// Per node: its journalled effects and abandoned attempts; and the port's two ends.
#[derive(Debug)]
pub(super) struct Journals {
    effects: Vec<Vec<ToolEffect>>,
    abandoned: Vec<BTreeSet<u32>>,
    port: mpsc::UnboundedSender<EffectMessage>,
    inbox: mpsc::UnboundedReceiver<EffectMessage>,
}

impl Journals {
    /// Empty journals for `nodes` nodes.
    pub(super) fn new(nodes: usize) -> Journals {
        let (port, inbox) = mpsc::unbounded_channel();
        Journals {
            effects: vec![Vec::new(); nodes],
            abandoned: vec![BTreeSet::new(); nodes],
            port,
            inbox,
        }
    }

    /// How many nodes it holds journals for.
    pub(super) fn nodes(&self) -> usize {
        self.effects.len().min(self.abandoned.len())
    }

    /// One more node (a node added to the live run, `grow.rs`).
    pub(super) fn push_node(&mut self) {
        self.effects.push(Vec::new());
        self.abandoned.push(BTreeSet::new());
    }

    /// Folds one event of `node` (its index) in: a `tool_effect`, a `node_abandoned`.
    pub(super) fn fold(&mut self, node: usize, event: &RunEvent) {
        match event {
            RunEvent::ToolEffect(effect) => {
                if let Some(list) = self.effects.get_mut(node) {
                    list.push((**effect).clone());
                }
            }
            RunEvent::NodeAbandoned { attempt, .. } => {
                if let Some(set) = self.abandoned.get_mut(node) {
                    set.insert(*attempt);
                }
            }
            _ => {}
        }
    }

    /// The attempt whose keys attempt `number` of `node` uses: the first of the unbroken
    /// run of abandoned attempts just before it, else its own number.
    pub(super) fn key_attempt(&self, node: usize, number: u32) -> u32 {
        let mut k = number;
        while k > 1
            && self
                .abandoned
                .get(node)
                .is_some_and(|s| s.contains(&(k - 1)))
        {
            k -= 1;
        }
        k
    }

    /// The journal attempt `number` of `node` runs with.
    pub(super) fn for_attempt(&self, node: usize, number: u32) -> AttemptJournal {
        let key_attempt = self.key_attempt(node, number);
        let all = self.effects.get(node).cloned().unwrap_or_default();
        let (slots, earlier) = all
            .into_iter()
            .partition(|e| e.attempt >= key_attempt && e.attempt <= number);
        AttemptJournal::new(key_attempt, slots, earlier, Some(self.port.clone()))
    }

    /// A journal with the port and no history (an alternate node run in a node's place).
    pub(super) fn fresh(&self) -> AttemptJournal {
        AttemptJournal::new(1, Vec::new(), Vec::new(), Some(self.port.clone()))
    }

    /// The next effect an attempt sent.
    pub(super) async fn next(&mut self) -> Option<EffectMessage> {
        self.inbox.recv().await
    }
}

impl Driver<'_> {
    /// Appends an effect an attempt sent, folds it in, then tells the attempt it is durable.
    pub(super) async fn log_effect(&mut self, message: EffectMessage) -> Result<(), EngineError> {
        let EffectMessage { logged, done } = message;
        let effect = match logged {
            Logged::Effect(effect) => effect,
            Logged::Decision(decision)
                if decision.decision == weft_policy::Verdict::Allow.as_str() =>
            {
                // An allowed call goes on at once: its decision is written at the head of
                // this driver's next commit (the call's effect, the attempt's end), so it
                // costs no commit of its own (docs/engine.md §3p).
                self.allowed_calls
                    .push(RunEvent::PolicyDecision(Box::new(decision)));
                let _ = done.send(Ok(()));
                return Ok(());
            }
            Logged::Decision(decision) => {
                // A refusal or a hold is durable before the attempt hears it, so every
                // refusal is on the record. Informational for the driver: nothing folds
                // it; the record and status read it from the log.
                let result = self
                    .append(&RunEvent::PolicyDecision(Box::new(decision)))
                    .await;
                let _ = done.send(result.as_ref().map(|_| ()).map_err(ToString::to_string));
                return result.map(|_| ());
            }
        };
        let node = self.jobs.iter().position(|j| {
            effect.node == j.id
                || self
                    .scope
                    .path
                    .as_ref()
                    .is_some_and(|p| effect.node == format!("{p}.{}", j.id))
        });
        let event = RunEvent::ToolEffect(Box::new(effect));
        match self.append(&event).await {
            Ok(_) => {
                if let Some(i) = node {
                    self.journal.fold(i, &event);
                }
                // The attempt may have ended meanwhile (timed out): nobody to tell.
                let _ = done.send(Ok(()));
                Ok(())
            }
            Err(e) => {
                let _ = done.send(Err(e.to_string()));
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn effect(attempt: u32, key: &str) -> RunEvent {
        RunEvent::ToolEffect(Box::new(ToolEffect {
            node: "n".into(),
            attempt,
            key: key.into(),
            tool: "file_write".into(),
            arguments: "sha256:0".into(),
            result: json!({}),
        }))
    }

    fn abandoned(attempt: u32) -> RunEvent {
        RunEvent::NodeAbandoned {
            node: "n".into(),
            attempt,
            reason: "retry_uncertain".into(),
        }
    }

    #[test]
    fn an_attempt_after_abandoned_ones_continues_the_first_of_them() {
        let mut j = Journals::new(1);
        j.fold(0, &effect(1, "a1"));
        j.fold(0, &effect(2, "b1"));
        j.fold(0, &abandoned(2));
        j.fold(0, &effect(3, "b2"));
        j.fold(0, &abandoned(3));
        // Attempt 4 takes over from 3, which took over from 2: the keys of attempt 2.
        let four = j.for_attempt(0, 4);
        assert_eq!(four.key_attempt(), Some(2));
        assert!(four.get("b1").is_some() && four.get("b2").is_some());
        assert!(four.get("a1").is_none());
        assert_eq!(four.earlier().len(), 1);
        // A retry after a failure (no abandon before it) uses its own keys.
        let two = Journals::new(1).for_attempt(0, 2);
        assert_eq!(two.key_attempt(), Some(2));
    }
}
