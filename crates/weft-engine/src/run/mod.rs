//! The driver: load → check → adapt → open the run → the loop that carries out the
//! scheduler's actions, appending every result to the store *before* applying it.
//!
//! One run is one task on a tokio runtime; node attempts are spawned on a `JoinSet`, and the
//! scheduler's `max_parallel` bounds how many run at once. The driver is the only writer of
//! the run's log (`append_expecting` with the last seq it wrote).
//!
//! The module, by concern:
//! - `mod.rs`: the public API, the `Driver` (append before apply) and the action loop.
//! - `preflight.rs`: the checks that refuse a run before anything runs.
//! - `job.rs`: a node prepared from the document (`Job`).
//! - `node.rs`: one node's inputs, attempts and `success` criteria.
//! - `fallback.rs`: the failure ladder after the retries (fallbacks, `timeout_action`,
//!   `on_exhausted`, escalation).
//! - `finish.rs`: graph outputs, graph success and the final status.
//! - `redact.rs`: what stays out of the log.
//! - `reads.rs`: which nodes a node's expressions may read (the context it is given).
//! - `settle.rs`: a finished attempt → a retry, the failure ladder, or `node_finished`;
//!   nodes that finish together settle in one batch.

mod fallback;
mod finish;
mod job;
mod node;
mod preflight;
mod reads;
mod redact;
mod resume;
mod settle;

pub use self::resume::{ResumeOptions, ResumeReport, resume_run};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};
use weft_ags::model::Fields;
use weft_core::{Action, FailurePolicy, NodeState, Options, Scheduler};
use weft_store::{EventLog, NewRun, RunStatus, RunTable, Store};

use self::fallback::Finish;
use self::job::Job;
use self::node::{attempt, resolve_inputs};
use self::preflight::{Plan, preflight};
use self::reads::NodeReads;
use self::redact::loggable_inputs;
use self::settle::complete;
use crate::EngineError;
use crate::backoff::{Sleeper, TokioSleeper};
use crate::context::{NodeView, RunContext};
use crate::events::{EVENT_FORMAT, NodeOutcome, RunEvent};

/// Default time limit of an exec command without `constraints.max_wall_clock_seconds`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// How to run a document.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Param values given by the caller (defaults fill the rest).
    pub params: Map<String, Value>,
    /// Overrides `constraints.max_parallel_nodes`.
    pub max_parallel: Option<usize>,
    /// Where commands and criteria run (the workspace).
    pub project_dir: PathBuf,
    /// The run id; generated when `None`.
    pub run_id: Option<String>,
    /// Carries out the pauses between attempts; `None` is [`TokioSleeper`] (tests pass a
    /// [`crate::RecordingSleeper`]).
    pub sleeper: Option<Arc<dyn Sleeper>>,
    /// **Test hook**: stop the driver (with [`EngineError::Stopped`]) once this many events
    /// have been appended by this invocation, as if the process had died there. Running
    /// node tasks are dropped. `None` (the default) runs to the end.
    pub stop_after_events: Option<usize>,
}

/// The final status of a run (`docs/engine.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinalStatus {
    Succeeded,
    Failed,
    Partial,
}

impl FinalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FinalStatus::Succeeded => "succeeded",
            FinalStatus::Failed => "failed",
            FinalStatus::Partial => "partial",
        }
    }
}

/// One node at the end of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeReport {
    pub id: String,
    pub state: String,
    pub attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a finished run reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    pub run_id: String,
    pub status: FinalStatus,
    pub nodes: Vec<NodeReport>,
    /// Node ids in the order they started.
    pub started: Vec<String>,
    pub outputs: Value,
    pub reasons: Vec<String>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn new_run_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("run-{:013}-{}-{n}", now_ms(), std::process::id())
}

pub(crate) fn state_name(s: NodeState) -> &'static str {
    match s {
        NodeState::Pending => "pending",
        NodeState::Ready => "ready",
        NodeState::Running => "running",
        NodeState::AwaitingHuman => "awaiting_human",
        NodeState::Succeeded => "succeeded",
        NodeState::Failed => "failed",
        NodeState::Skipped => "skipped",
        NodeState::Cancelled => "cancelled",
        NodeState::Blocked => "blocked",
    }
}

/// Evaluates an AGX condition; an error is `false` plus its message.
fn eval_condition(src: &str, ctx: &RunContext) -> (bool, Option<String>) {
    match weft_agx::parse(src) {
        Ok(expr) => match weft_agx::eval_bool(&expr, ctx) {
            Ok(v) => (v, None),
            Err(e) => (false, Some(format!("`{src}`: {e}"))),
        },
        Err(e) => (false, Some(format!("`{src}`: {e}"))),
    }
}

/// The run in progress.
struct Driver<'a> {
    store: &'a Store,
    run_id: String,
    last_seq: u64,
    sched: Scheduler,
    jobs: Vec<Arc<Job>>,
    /// Per node: the nodes its expressions may read ([`Driver::context_for`]).
    reads: Vec<NodeReads>,
    edge_when: Vec<Option<String>>,
    params: Value,
    context: Value,
    outputs: Vec<Map<String, Value>>,
    attempts: Vec<u32>,
    errors: Vec<Option<String>>,
    /// Inputs as resolved at start, reused verbatim by every retry.
    inputs: Vec<Option<Value>>,
    expression_errors: Vec<String>,
    degraded: bool,
    /// Events appended by this invocation, and the test hook's limit on them.
    appended: usize,
    stop_after: Option<usize>,
    /// The attempt number a `Start` logs first: 1, or (on resume) the next after an
    /// abandoned attempt.
    first_attempt: Vec<u32>,
    /// Records waiting for the next append ([`Driver::defer`]): the `node_started` of the
    /// nodes one scheduler step starts together, written in one commit before any of them
    /// runs.
    deferred: Vec<weft_store::NewEvent>,
}

impl Driver<'_> {
    /// Appends `event` to the log (the driver is its only writer), after any deferred ones.
    fn append(&mut self, event: &RunEvent) -> Result<(), EngineError> {
        self.defer(event);
        self.flush()
    }

    /// Queues a record for the next append or [`Driver::flush`]; only for records
    /// (`node_started`, `gate_notified`), which the scheduler does not apply, and the
    /// caller must flush before acting on them.
    fn defer(&mut self, event: &RunEvent) {
        self.deferred.push(event.to_new_event(now_ms()));
    }

    /// Appends the deferred events in one batch (one commit). The `stop_after_events` hook
    /// cuts the batch at its limit, so the log ends exactly there.
    fn flush(&mut self) -> Result<(), EngineError> {
        if self.deferred.is_empty() {
            return Ok(());
        }
        let mut batch = std::mem::take(&mut self.deferred);
        let room = self.stop_after.map(|n| n.saturating_sub(self.appended));
        let cut = room.is_some_and(|r| r < batch.len());
        if let Some(r) = room {
            batch.truncate(r);
        }
        if !batch.is_empty() {
            let seqs = self
                .store
                .append_expecting(&self.run_id, self.last_seq, &batch)?;
            if let Some(&s) = seqs.last() {
                self.last_seq = s;
            }
            self.appended += batch.len();
        }
        if cut {
            return Err(EngineError::Stopped(self.appended));
        }
        Ok(())
    }

    /// Append, then apply: the state is always a fold over the log.
    fn record(&mut self, event: &RunEvent) -> Result<Vec<Action>, EngineError> {
        self.append(event)?;
        self.apply(event)
    }

    /// Applies an event already in the log to the scheduler.
    fn apply(&mut self, event: &RunEvent) -> Result<Vec<Action>, EngineError> {
        let mapped = event
            .to_scheduler(self.sched.graph())
            .map_err(|n| EngineError::Internal(format!("unknown node `{n}`")))?;
        match mapped {
            Some(e) => Ok(self.sched.apply(&e)?),
            None => Ok(Vec::new()),
        }
    }

    /// The view of every node: for graph-level expressions and the rare paths (guards,
    /// fallbacks). O(nodes); per-node actions use [`Driver::context_for`].
    fn context(&self) -> RunContext {
        self.context_with(0..self.jobs.len())
    }

    /// The context of `node`'s own expressions: itself and the nodes it may read (all of
    /// them when its expressions name nodes dynamically), so a step costs what the node
    /// reads, not what the graph holds.
    fn context_for(&self, node: usize) -> RunContext {
        match self.reads.get(node) {
            Some(NodeReads::Only(ids)) => {
                self.context_with(ids.iter().copied().chain(std::iter::once(node)))
            }
            _ => self.context(),
        }
    }

    fn context_with(&self, which: impl Iterator<Item = usize>) -> RunContext {
        let mut nodes = BTreeMap::new();
        for i in which {
            let Some(job) = self.jobs.get(i) else {
                continue;
            };
            nodes.insert(
                job.id.clone(),
                NodeView {
                    status: state_name(self.sched.state(i)).to_string(),
                    outputs: self.outputs.get(i).cloned().unwrap_or_default(),
                },
            );
        }
        RunContext {
            params: self.params.clone(),
            context: self.context.clone(),
            nodes,
            inputs: None,
            outputs: None,
        }
    }
}

/// Runs a loaded, valid document to its end. The caller has validated it (see
/// [`crate::load_document`]); the graph digest is computed here.
pub async fn run_document(
    doc: &Value,
    store: &Store,
    options: &RunOptions,
) -> Result<RunReport, EngineError> {
    let root = doc
        .as_object()
        .ok_or_else(|| EngineError::Refused(vec!["the document is not an object".into()]))?;
    let Plan {
        jobs,
        reads,
        params,
        adapted,
        sched_options,
        expression_errors_fatal,
    } = preflight(root, options)?;
    let Options {
        max_parallel,
        on_node_failure,
    } = sched_options;
    let digest = weft_ags::digest::graph_digest(doc);
    let run_id = options.run_id.clone().unwrap_or_else(new_run_id);
    let created = now_ms();
    store.create_run(&NewRun {
        id: run_id.clone(),
        graph_digest: digest.clone(),
        created_at_ms: created,
    })?;
    store.set_status(&run_id, RunStatus::Running, created)?;
    let n = jobs.len();
    let mut d = Driver {
        store,
        run_id: run_id.clone(),
        last_seq: 0,
        sched: Scheduler::new(adapted.graph, sched_options),
        jobs,
        reads,
        edge_when: adapted.edge_when,
        params: params.clone(),
        context: root
            .field("context")
            .cloned()
            .unwrap_or(Value::Object(Map::new())),
        outputs: vec![Map::new(); n],
        attempts: vec![0; n],
        errors: vec![None; n],
        inputs: vec![None; n],
        expression_errors: Vec::new(),
        degraded: false,
        appended: 0,
        stop_after: options.stop_after_events,
        first_attempt: vec![1; n],
        deferred: Vec::new(),
    };
    let queue: std::collections::VecDeque<Action> = d
        .record(&RunEvent::RunStarted {
            v: EVENT_FORMAT,
            graph_digest: digest,
            params,
            max_parallel,
            on_node_failure: match on_node_failure {
                FailurePolicy::Halt => "halt",
                FailurePolicy::Isolate => "isolate",
                FailurePolicy::Continue => "continue",
            }
            .to_string(),
            graph: doc.clone(),
        })?
        .into();
    let summary = drive(&mut d, queue, options).await?;
    finish::finalize(&mut d, root, options, summary, expression_errors_fatal).await
}

/// The action loop: carries out `queue` and everything that follows, until the scheduler
/// reports `Finished`.
async fn drive(
    d: &mut Driver<'_>,
    mut queue: std::collections::VecDeque<Action>,
    options: &RunOptions,
) -> Result<weft_core::ScopeSummary, EngineError> {
    let sleeper: Arc<dyn Sleeper> = options
        .sleeper
        .clone()
        .unwrap_or_else(|| Arc::new(TokioSleeper));
    let mut tasks = settle::Tasks::new();
    let mut immediate: std::collections::VecDeque<(usize, Finish)> = Default::default();
    let mut starting: Vec<(usize, u32, Arc<Job>, RunContext)> = Vec::new();
    let summary = loop {
        let mut finished = None;
        while let Some(action) = queue.pop_front() {
            match action {
                Action::EvaluateWhen { node } => {
                    if !d.sched.when_pending(node) {
                        continue;
                    }
                    let job = Arc::clone(&d.jobs[node]);
                    let (value, error) =
                        eval_condition(job.when.as_deref().unwrap_or("true"), &d.context_for(node));
                    if let Some(e) = &error {
                        d.expression_errors
                            .push(format!("when of `{}`: {e}", job.id));
                    }
                    let actions = d.record(&RunEvent::NodeWhen {
                        node: job.id.clone(),
                        value,
                        error,
                    })?;
                    queue.extend(actions);
                }
                Action::Start { node } => {
                    let job = Arc::clone(&d.jobs[node]);
                    let mut ctx = d.context_for(node);
                    match resolve_inputs(&job, &ctx) {
                        Ok(inputs) => {
                            d.inputs[node] = Some(inputs.clone());
                            let logged = loggable_inputs(&job, &inputs);
                            ctx.inputs = Some(inputs);
                            let first = d.first_attempt[node];
                            if let Some((roles, prompt)) = &job.notify {
                                d.defer(&RunEvent::GateNotified {
                                    node: job.id.clone(),
                                    roles: roles.clone(),
                                    prompt: prompt.clone(),
                                });
                            }
                            d.defer(&RunEvent::NodeStarted {
                                node: job.id.clone(),
                                attempt: first,
                                inputs: Some(logged),
                                delay_ms: None,
                            });
                            starting.push((node, first, job, ctx));
                        }
                        Err(e) => immediate.push_back((
                            node,
                            Finish {
                                outcome: NodeOutcome::Failed,
                                outputs: Map::new(),
                                verdict: None,
                                attempts: 0,
                                error: Some(e),
                                absorbed_by: None,
                            },
                        )),
                    }
                }
                Action::Skipped { .. } => {}
                Action::Finished { summary } => finished = Some(summary),
            }
        }
        // The starts of this step share one commit; no node runs before it is durable.
        d.flush()?;
        for (node, first, job, ctx) in starting.drain(..) {
            tasks.spawn(async move { (node, first, attempt(job, None, ctx).await) });
        }
        if let Some(s) = finished {
            break s;
        }
        // Every completion ready now settles in one batch, so nodes that finish together
        // share one commit.
        let mut done: Vec<(usize, Finish)> = immediate.drain(..).collect();
        if done.is_empty() {
            let mut joined = tasks.join_next().await;
            if joined.is_none() {
                return Err(EngineError::Internal(
                    "the scheduler waits, but nothing runs".into(),
                ));
            }
            while let Some(next) = joined {
                let (node, number, result) =
                    next.map_err(|e| EngineError::Internal(format!("a node task failed: {e}")))?;
                if let Some(finish) =
                    complete(d, &mut tasks, &sleeper, node, number, result).await?
                {
                    done.push((node, finish));
                }
                // Only what has already ended; with nothing else running, skip the probe.
                joined = if tasks.is_empty() {
                    None
                } else {
                    tasks.try_join_next()
                };
            }
        }
        queue.extend(d.settle_all(done)?);
    };
    Ok(summary)
}
