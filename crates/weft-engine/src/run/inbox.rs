//! The driver's inbox (`docs/engine.md` §2b). Other processes (`weft approve|reject|
//! provide`, `weft cancel`) append only inbox kinds (`human_decision`, `cancel_requested`)
//! to a live run's log. The driver meets them when its own `append_expecting` conflicts, or
//! when it polls the log while it waits on running nodes: it reads the new events, accepts
//! only inbox kinds (anything else means a second driver: an error), applies them to the
//! scheduler in log order — so a replay sees exactly what the driver saw — and then
//! re-checks that its own event still makes sense before it retries the append.

use weft_core::NodeState;
use weft_store::EventLog;

use super::Driver;
use super::human::Resolution;
use crate::EngineError;
use crate::events::RunEvent;

/// How many events one read of the inbox takes at most.
const READ_BATCH: usize = 256;

impl Driver<'_> {
    /// Reads and applies every event after `last_seq` (all must be inbox kinds).
    pub(super) fn absorb_inbox(&mut self) -> Result<(), EngineError> {
        loop {
            let records = self
                .store
                .read(&self.run_id, self.last_seq + 1, READ_BATCH)?;
            if records.is_empty() {
                return Ok(());
            }
            for record in records {
                let event = RunEvent::from_record(&record)
                    .map_err(|e| EngineError::Internal(e.to_string()))?;
                if !event.is_inbox() {
                    return Err(EngineError::Internal(format!(
                        "run {}: event {} (`{}`) was written by another driver; this one stops",
                        self.run_id, record.seq, record.kind
                    )));
                }
                self.last_seq = record.seq;
                self.take_inbox(&event)?;
            }
        }
    }

    /// Polls the log for inbox events (while nodes run, and before suspending): `true`
    /// when there were some.
    pub(super) fn poll_inbox(&mut self) -> Result<bool, EngineError> {
        if self.store.last_seq(&self.run_id)? == self.last_seq {
            return Ok(false);
        }
        self.absorb_inbox()?;
        Ok(true)
    }

    /// Applies one inbox event that is already in the log.
    fn take_inbox(&mut self, event: &RunEvent) -> Result<(), EngineError> {
        // Too late: the scope has finished (a replay skips it the same way).
        if self.sched.is_finished() {
            return Ok(());
        }
        match event {
            RunEvent::HumanDecision(d) => {
                let node = self.sched.graph().find(&d.node).ok_or_else(|| {
                    EngineError::Internal(format!("a decision for unknown node `{}`", d.node))
                })?;
                self.human
                    .resolved
                    .push_back((node, Resolution::Decision(d.clone())));
            }
            RunEvent::CancelRequested { actor, .. } => {
                self.human.cancel.get_or_insert_with(|| actor.clone());
            }
            _ => {}
        }
        let mapped = event
            .to_scheduler(self.sched.graph())
            .map_err(|n| EngineError::Internal(format!("unknown node `{n}`")))?;
        if let Some(e) = mapped {
            let actions = self.sched.apply(&e)?;
            self.human.actions.extend(actions);
        }
        Ok(())
    }

    /// After absorbing inbox events: does the driver's own `event` still apply? A `when`
    /// of a node a cancel has settled, or a timeout of a node a person has just decided,
    /// does not: it is dropped instead of appended.
    pub(super) fn still_valid(&self, event: &RunEvent) -> bool {
        let find = |id: &str| self.sched.graph().find(id);
        match event {
            RunEvent::NodeWhen { node, .. } => {
                find(node).is_some_and(|i| self.sched.when_pending(i))
            }
            RunEvent::HumanTimeout { node, .. } => {
                find(node).is_some_and(|i| self.sched.state(i) == NodeState::AwaitingHuman)
            }
            _ => true,
        }
    }
}
