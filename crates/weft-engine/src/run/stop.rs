//! How a run stops short of its end: a cancel sweeps what still runs or waits, and a run
//! in which nothing runs but people are waited on is suspended (`awaiting_human`).

use serde_json::{Map, Value};
use tokio::task::JoinSet;
use weft_core::Action;
use weft_store::RunStatus;

use super::fallback::Finish;
use super::{Driver, FinalStatus, NodeReport, RunReport, state_name};
use crate::EngineError;
use crate::events::{NodeOutcome, RunEvent};

impl Driver<'_> {
    /// After a `cancel_requested`: stops every running attempt (dropping a task kills its
    /// process group) and settles every running or waiting node `cancelled`.
    pub(super) async fn sweep_cancel<T: 'static>(
        &mut self,
        tasks: &mut JoinSet<T>,
    ) -> Result<Vec<Action>, EngineError> {
        tasks.shutdown().await;
        self.human.waits.clear();
        self.human.resolved.clear();
        self.human.containers.clear();
        let mut actions = Vec::new();
        for i in 0..self.jobs.len() {
            if self.sched.state(i).is_started() {
                actions.extend(
                    self.settle(
                        i,
                        Finish {
                            outcome: NodeOutcome::Cancelled,
                            outputs: Map::new(),
                            verdict: None,
                            attempts: self.slots[i].attempts,
                            error: Some(format!(
                                "cancelled by {}",
                                self.human.cancel.as_deref().unwrap_or("unknown")
                            )),
                            absorbed_by: None,
                            absorbed_failure: None,
                            escalate: false,
                            warnings: Vec::new(),
                        },
                    )
                    .await?,
                );
            }
        }
        Ok(actions)
    }

    /// Does a cancel still have work (a node running or waiting)?
    pub(super) fn cancel_pending(&self) -> bool {
        self.human.cancel.is_some()
            && (0..self.jobs.len()).any(|i| self.sched.state(i).is_started())
    }

    /// Nothing runs and every remaining path waits on a person: the run is suspended
    /// (store status `suspended`, no `run_finished`); `weft resume` continues it.
    /// Logs the wait for a graph-level `human` criterion (`signoff.rs`) and suspends the
    /// run on it: everything else of the run has ended; `weft resume` evaluates the graph's
    /// `success` again once the person answered.
    /// In a fragment instance only the instance waits: its wait goes, by address
    /// (`m[1].success/<id>`), to the run's list, and its container stays open
    /// (`instance_waits.rs`) while the rest of the run goes on.
    pub(super) async fn suspend_on_signoff(
        &mut self,
        waiting: crate::human::Waiting,
    ) -> Result<RunReport, EngineError> {
        self.append(&RunEvent::GateWaiting(Box::new(waiting.clone())))
            .await?;
        if let Some(path) = self.scope.path.clone() {
            self.scope.shared.add_waiting(vec![crate::human::Waiting {
                node: format!("{path}.{}", waiting.node),
                ..waiting
            }]);
            return Ok(RunReport {
                run_id: self.run_id.clone(),
                status: FinalStatus::AwaitingHuman,
                nodes: Vec::new(),
                started: Vec::new(),
                outputs: Value::Object(Map::new()),
                reasons: Vec::new(),
                usage: self.budget.used(),
                waiting: Vec::new(),
            });
        }
        let mut report = self.suspend().await?;
        report.waiting.push(waiting);
        Ok(report)
    }

    pub(super) async fn suspend(&mut self) -> Result<RunReport, EngineError> {
        self.store
            .set_status_async(&self.run_id, RunStatus::Suspended, self.clock.now_ms())
            .await?;
        let nodes = (0..self.jobs.len())
            .map(|i| NodeReport {
                id: self.jobs[i].id.clone(),
                state: state_name(self.sched.state(i)).to_string(),
                // A waiting node has not settled: its attempts are the wait's.
                attempts: self
                    .human
                    .waits
                    .get(&i)
                    .map_or(self.slots[i].attempts, |(w, _)| w.attempts),
                error: self.slots[i].error.clone(),
            })
            .collect();
        let id_of = |i: usize| {
            self.jobs
                .get(i)
                .map_or_else(|| i.to_string(), |j| j.id.clone())
        };
        Ok(RunReport {
            run_id: self.run_id.clone(),
            status: FinalStatus::AwaitingHuman,
            nodes,
            started: self.sched.started().iter().map(|&i| id_of(i)).collect(),
            outputs: Value::Object(Map::new()),
            reasons: Vec::new(),
            usage: self.budget.used(),
            waiting: self
                .human
                .waits
                .values()
                .map(|(w, _)| w.clone())
                .chain(self.scope.shared.take_waiting())
                .collect(),
        })
    }
}
