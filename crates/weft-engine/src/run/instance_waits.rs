//! People waited on inside fragment instances (`map` items, `loop` iterations, `subgraph`
//! children; `docs/engine.md` §3j). An instance's driver opens its waits as the root's
//! does (`gate_waiting` with `scope`). When nothing of the instance can go on, its driver
//! ends the instance as *waiting* (`fragment.rs`): its container does not end, it stays
//! `running` in its own scope ([`super::human::HumanState::containers`]), and each driver
//! up to the root suspends once nothing else can go on: the run is `awaiting_human`, its
//! report listing each wait by address (`work[3].review`).
//!
//! A decision for a wait inside an instance is a `human_decision` whose `node` is the node
//! id and whose `scope` member is the instance's path (`crate::human::decide`). The
//! instance's events, the decision included, rebuild it when its container runs again
//! (`weft resume`); a live instance driver takes a decision addressed to it as it reads
//! its inbox, whichever driver of the run read it from the log ([`super::scope::SharedLog`]).

use super::Driver;
use crate::EngineError;
use crate::human::Waiting;

impl Driver<'_> {
    /// Does this driver wait on a person: a wait of its own, or a container whose
    /// instances wait?
    pub(super) fn waits_on_person(&self) -> bool {
        !self.human.waits.is_empty() || !self.human.containers.is_empty()
    }

    /// This instance's own waits, each named by its address (`work[3].review`).
    pub(super) fn addressed_waits(&self) -> Vec<Waiting> {
        let Some(path) = &self.scope.path else {
            return self.human.waits.values().map(|(w, _)| w.clone()).collect();
        };
        self.human
            .waits
            .values()
            .map(|(w, _)| Waiting {
                node: format!("{path}.{}", w.node),
                ..w.clone()
            })
            .collect()
    }

    /// Takes the decisions addressed to this instance that another driver of the run
    /// read from the log: `true` when there were some.
    pub(super) fn take_addressed(&mut self) -> Result<bool, EngineError> {
        let Some(path) = self.scope.path.clone() else {
            return Ok(false);
        };
        let mine = self.scope.shared.take_addressed(&path);
        let some = !mine.is_empty();
        for event in mine {
            self.take_inbox(&event)?;
        }
        Ok(some)
    }
}
