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

mod fallback;
mod finish;
mod job;
mod node;
mod preflight;
mod reads;
mod redact;
mod resume;

pub use self::resume::{ResumeOptions, ResumeReport, resume_run};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::task::JoinSet;
use weft_ags::model::Fields;
use weft_core::{Action, EdgeKind, FailurePolicy, NodeState, Options, Scheduler};
use weft_store::{EventLog, NewRun, RunStatus, RunTable, Store};

use self::fallback::Finish;
use self::job::Job;
use self::node::{Attempt, Retry, attempt, feedback_for, resolve_inputs};
use self::preflight::{Plan, preflight};
use self::reads::NodeReads;
use self::redact::{loggable_inputs, split_redacted};
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
}

impl Driver<'_> {
    /// Appends `event` to the log (the driver is its only writer).
    fn append(&mut self, event: &RunEvent) -> Result<(), EngineError> {
        if self.stop_after.is_some_and(|n| self.appended >= n) {
            return Err(EngineError::Stopped(self.appended));
        }
        let seqs = self.store.append_expecting(
            &self.run_id,
            self.last_seq,
            &[event.to_new_event(now_ms())],
        )?;
        if let Some(&s) = seqs.last() {
            self.last_seq = s;
        }
        self.appended += 1;
        Ok(())
    }

    /// Append, then apply: the state is always a fold over the log.
    fn record(&mut self, event: &RunEvent) -> Result<Vec<Action>, EngineError> {
        self.append(event)?;
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

    fn settle(&mut self, node: usize, finish: Finish) -> Result<Vec<Action>, EngineError> {
        let id = self.jobs[node].id.clone();
        let needed = match finish.outcome {
            NodeOutcome::Succeeded => Some(EdgeKind::Conditional),
            NodeOutcome::Failed | NodeOutcome::Blocked => Some(EdgeKind::OnFailure),
            _ => None,
        };
        let graph = self.sched.graph();
        let guarded: Vec<usize> = graph
            .outgoing(node)
            .iter()
            .copied()
            .filter(|&e| graph.edge(e).guarded && Some(graph.edge(e).kind) == needed)
            .collect();
        // Guards see every node (edge `when`s are not scanned); most nodes have none, and
        // then no view is built at all.
        let mut ctx = if guarded.is_empty() {
            RunContext::default()
        } else {
            self.context()
        };
        if let Some(view) = ctx.nodes.get_mut(&id) {
            view.status = finish.outcome.as_str().to_string();
            view.outputs = finish.outputs.clone();
        }
        let mut guards = Vec::new();
        for e in guarded {
            let when = self.edge_when.get(e).cloned().flatten().unwrap_or_default();
            let (value, error) = eval_condition(&when, &ctx);
            if let Some(err) = error {
                self.expression_errors
                    .push(format!("edge from `{id}`: {err}"));
            }
            guards.push((e, value));
        }
        self.outputs[node] = finish.outputs.clone();
        self.attempts[node] = finish.attempts;
        self.errors[node] = finish.error.clone();
        let (outputs, redacted) = split_redacted(&finish.outputs, &self.jobs[node].redact_outputs);
        self.record(&RunEvent::NodeFinished {
            node: id,
            outcome: finish.outcome,
            outputs,
            redacted,
            verdict: finish.verdict,
            guards,
            attempts: finish.attempts,
            error: finish.error,
            absorbed_by: finish.absorbed_by,
        })
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
    let mut tasks: JoinSet<(usize, u32, Attempt)> = JoinSet::new();
    let mut immediate: std::collections::VecDeque<(usize, Finish)> = Default::default();
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
                                d.append(&RunEvent::GateNotified {
                                    node: job.id.clone(),
                                    roles: roles.clone(),
                                    prompt: prompt.clone(),
                                })?;
                            }
                            d.append(&RunEvent::NodeStarted {
                                node: job.id.clone(),
                                attempt: first,
                                inputs: Some(logged),
                                delay_ms: None,
                            })?;
                            tasks
                                .spawn(async move { (node, first, attempt(job, None, ctx).await) });
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
        if let Some(s) = finished {
            break s;
        }
        let (node, finish) = match immediate.pop_front() {
            Some(x) => x,
            None => match tasks.join_next().await {
                Some(Ok((node, number, result))) => {
                    let job = Arc::clone(&d.jobs[node]);
                    let retry = result.failure.as_ref().is_some_and(|(class, _)| {
                        class != "blocked"
                            && (job.retry_on.iter().any(|r| r == class || r == "any")
                                || (class == "timeout" && job.timeout_action == "retry"))
                    });
                    if retry && number < job.max_attempts {
                        let mut ctx = d.context_for(node);
                        ctx.inputs = d.inputs[node].clone();
                        let delay = job.backoff.delay(&d.run_id, &job.id, number);
                        d.append(&RunEvent::NodeStarted {
                            node: job.id.clone(),
                            attempt: number + 1,
                            // Retries reuse the first attempt's inputs: logged once.
                            inputs: None,
                            delay_ms: Some(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX)),
                        })?;
                        let retry = Retry {
                            delay,
                            sleeper: Arc::clone(&sleeper),
                            feedback: feedback_for(&job, &result),
                        };
                        tasks.spawn(async move {
                            (node, number + 1, attempt(job, Some(retry), ctx).await)
                        });
                        continue;
                    }
                    let result = d.fallbacks(node, result).await;
                    (node, d.finish(node, number, result))
                }
                Some(Err(e)) => {
                    return Err(EngineError::Internal(format!("a node task failed: {e}")));
                }
                None => {
                    return Err(EngineError::Internal(
                        "the scheduler waits, but nothing runs".into(),
                    ));
                }
            },
        };
        queue.extend(d.settle(node, finish)?);
    };
    Ok(summary)
}
