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
//! instance's events, the decision included, rebuild it when its container runs again: on
//! `weft resume`, or in a live run once the driver of the waiting container has nothing
//! else to do and a decision addressed under it has come
//! ([`Driver::reenter_container`]). A live instance driver (it still has nodes running)
//! takes a decision addressed to it as it reads its inbox, whichever driver of the run
//! read it from the log ([`super::scope::SharedLog`]).

use std::sync::Arc;

use super::node::Attempt;
use super::{Driver, RunOptions};
use crate::EngineError;
use crate::context::RunContext;
use crate::human::Waiting;

/// A container node whose instances wait on a person, kept to be run again when a decision
/// comes: its attempt number and its context (its resolved inputs).
#[derive(Clone, Debug)]
pub(super) struct WaitingContainer {
    pub(super) first: u32,
    pub(super) ctx: RunContext,
    /// Found open by a rebuild (`resume.rs`): it runs again as soon as its driver runs,
    /// in the same attempt, its instances rebuilt from the log.
    pub(super) at_once: bool,
}

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

    /// A waiting container that a decision addressed to one of its instances (read from
    /// the log by any driver of the run) lets go on.
    pub(super) fn container_to_reenter(&self) -> Option<usize> {
        let prefix = self
            .scope
            .path
            .as_ref()
            .map_or(String::new(), |p| format!("{p}."));
        self.human.containers.iter().find_map(|(&node, c)| {
            let due = c.at_once
                || self.jobs.get(node).is_some_and(|job| {
                    self.scope
                        .shared
                        .take_addressed_under(&format!("{prefix}{}", job.id))
                });
            due.then_some(node)
        })
    }

    /// A rebuild found container `node` open (started in `attempt`, never finished): it
    /// stays open in that attempt, to run again at once with its inputs resolved as when
    /// it started ([`WaitingContainer::at_once`]), rather than being abandoned and started
    /// anew. `false` when its inputs no longer resolve (then it is abandoned).
    pub(super) fn keep_container_open(&mut self, node: usize, attempt: u32) -> bool {
        let Some(job) = self.jobs.get(node).map(Arc::clone) else {
            return false;
        };
        let mut ctx = self.context_for(node);
        let Ok(inputs) = super::node::resolve_inputs(&job, &ctx) else {
            return false;
        };
        self.slots[node].inputs = Some(inputs.clone());
        ctx.inputs = Some(inputs);
        self.human.containers.insert(
            node,
            WaitingContainer {
                first: attempt,
                ctx,
                at_once: true,
            },
        );
        true
    }

    /// Runs waiting container `node` again, its instances rebuilt from their events in the
    /// log (as a resume does), so each instance a person decided carries the decision out
    /// and the others wait again. Its result, unless it still waits.
    pub(super) async fn reenter_container(
        &mut self,
        node: usize,
        options: &RunOptions,
    ) -> Result<Option<(usize, u32, Attempt)>, EngineError> {
        let Some(WaitingContainer {
            first,
            ctx,
            at_once,
            ..
        }) = self.human.containers.remove(&node)
        else {
            return Ok(None);
        };
        if !at_once || self.scope.resumed.is_none() {
            // The instances' events as the log has them now (decisions included); a
            // resume's rebuild has just read them.
            let log = super::resume_log::read(self.store, &self.run_id).await?;
            self.scope.resumed = Some(Arc::new(super::scope::Resumed {
                scopes: log.scoped,
                retry_uncertain: false,
            }));
        }
        let job = Arc::clone(&self.jobs[node]);
        let base = match &self.scope.path {
            Some(p) => format!("{p}.{}", job.id),
            None => job.id.clone(),
        };
        self.scope.shared.forget_waiting_under(&base);
        let result = self.run_container_in(node, first, ctx, options).await?;
        Ok(result.map(|r| (node, first, r)))
    }

    /// Runs container `node` (started in attempt `first`, `ctx` its view) with its fragment
    /// instances, inline: the container stays `running` meanwhile (`fragment.rs`). Then
    /// the inbox events its instances read are applied where the log has them, and a
    /// container whose instances wait on a person stays open (`None`); else its result,
    /// which settles it like an attempt's.
    pub(super) async fn run_container_in(
        &mut self,
        node: usize,
        first: u32,
        ctx: RunContext,
        options: &RunOptions,
    ) -> Result<Option<Attempt>, EngineError> {
        let job = Arc::clone(&self.jobs[node]);
        let result = super::container::run_container(self, options, &job, &ctx).await?;
        if self.scope.path.is_none() {
            for event in self.scope.shared.take_relayed() {
                self.take_inbox(&event)?;
            }
        }
        if result.waiting {
            self.human.containers.insert(
                node,
                WaitingContainer {
                    first,
                    ctx,
                    at_once: false,
                },
            );
            return Ok(None);
        }
        Ok(Some(result))
    }
}
