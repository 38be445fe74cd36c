//! The driver: load → check → adapt → open the run → the loop that carries out the
//! scheduler's actions, appending every result to the store *before* applying it.
//!
//! One run is one task on a tokio runtime; node attempts are spawned on a `JoinSet`, and the
//! scheduler's `max_parallel` bounds how many run at once. The driver is the only writer of
//! the run's log (`append_expecting` with the last seq it wrote).
//!
//! The module, by concern:
//! - `mod.rs`: the public API, the `Driver` (append before apply) and the action loop.
//! - `preflight.rs`: the checks that refuse a run before anything runs (`dry_run.rs`: only
//!   them).
//! - `job.rs`: a node prepared from the document (`Job`).
//! - `node.rs`: one node's inputs, attempts (through the agent port) and `success`.
//! - `budget.rs`: graph budgets, per-attempt limits, admitting and routing an attempt.
//! - `fallback.rs`: the failure ladder after the retries (fallbacks, `timeout_action`,
//!   `on_exhausted`, escalation).
//! - `finish.rs`: graph outputs, graph success and the final status.
//! - `redact.rs`: what stays out of the log.
//! - `human.rs`: waits on a person (blocking gates, takeover, escalation); `resolve.rs`:
//!   decisions and timeouts carried out; `stop.rs`: cancel and suspend.
//! - `checkpoint.rs`: human checkpoints of task nodes (`human[]`) at their stages;
//!   `criteria.rs`: `human` success criteria answered through the log.
//! - `inbox.rs`: inbox events other processes append to a live run's log.
//! - `budget.rs`: the run's budgets (graph limits, what each node may still spend).
//! - `dry_run.rs`: every check a run makes before it writes anything.

mod budget;
mod checkpoint;
mod criteria;
mod dry_run;
mod fallback;
mod finish;
mod human;
mod inbox;
mod job;
mod node;
mod preflight;
mod redact;
mod resolve;
mod resume;
mod stop;

pub use self::dry_run::{DryRun, dry_run};
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

use self::budget::RunBudget;
use self::fallback::Finish;
use self::job::Job;
use self::node::{Attempt, Retry, attempt, feedback_for, resolve_inputs};
use self::preflight::{Plan, preflight};
use self::redact::{loggable_inputs, split_redacted};
use crate::EngineError;
use crate::agent::AgentRegistry;
use crate::backoff::{Sleeper, TokioSleeper};
use crate::context::{NodeView, RunContext};
use crate::events::{EVENT_FORMAT, NodeOutcome, RunEvent};
use crate::observe::{Observed, RunObserver};

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
    /// Called after every appended event (`crate::observe`): progress views, the audit trail.
    pub observers: Vec<Arc<dyn RunObserver>>,
    /// Who started the run (a user or role name), logged in `run_started.started_by`.
    pub started_by: Option<String>,
    /// The agents nodes run on; `None` is [`AgentRegistry::with_defaults`] over
    /// [`RunOptions::cassette`] (`exec`, and `replay` as the model agent).
    pub agents: Option<Arc<AgentRegistry>>,
    /// The cassette the default `replay` agent plays (`weft run --cassette`).
    pub cassette: Option<PathBuf>,
}

impl RunOptions {
    /// The registry a run uses: the given one, else the defaults over the cassette.
    pub fn registry(&self) -> Result<Arc<AgentRegistry>, EngineError> {
        if let Some(r) = &self.agents {
            return Ok(Arc::clone(r));
        }
        let cassette = match &self.cassette {
            Some(path) => Some(crate::agent::cassette::load(path)?),
            None => None,
        };
        Ok(Arc::new(AgentRegistry::with_defaults(cassette)))
    }
}

/// The final status of a run (`docs/engine.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinalStatus {
    Succeeded,
    Failed,
    Partial,
    /// Stopped by `weft cancel` (`cancel_requested`).
    Cancelled,
    /// Not finished: nothing runs and every remaining path waits on a person (the run is
    /// suspended; `weft resume` continues it once someone decided).
    AwaitingHuman,
}

impl FinalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FinalStatus::Succeeded => "succeeded",
            FinalStatus::Failed => "failed",
            FinalStatus::Partial => "partial",
            FinalStatus::Cancelled => "cancelled",
            FinalStatus::AwaitingHuman => "awaiting_human",
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
    /// What the run's agents spent (by this invocation and, on resume, before it).
    pub usage: crate::agent::Usage,
    /// `awaiting_human`: what waits on a person.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<crate::human::Waiting>,
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A fresh run id, `run-<ms>-<pid>-<n>` (letters, digits and `-`: it names the run's audit file).
pub fn new_run_id() -> String {
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
    observers: Vec<Arc<dyn RunObserver>>,
    agents: Arc<AgentRegistry>,
    budget: RunBudget,
    /// Waits on people, inbox events, a pending cancel (`human.rs`, `inbox.rs`).
    human: human::HumanState,
}

/// How the action loop ended.
enum Drive {
    Finished(weft_core::ScopeSummary),
    /// Nothing runs and every remaining path waits on a person.
    Suspended,
}

/// How often a driver with running nodes reads its log for inbox events.
const INBOX_POLL: Duration = Duration::from_millis(200);

impl Driver<'_> {
    /// Appends `event` to the log (the driver is its only writer; other processes append
    /// only inbox kinds, absorbed on a conflict: `inbox.rs`), then tells the observers.
    /// `false`: the inbox made the event moot and it was not written.
    ///
    /// Inline, not on the blocking pool: an append is one group-committed write, and a hop
    /// to another thread per event would cost more than the scheduler's whole step in
    /// memory (`docs/engine.md` §1).
    fn append(&mut self, event: &RunEvent) -> Result<bool, EngineError> {
        if self.stop_after.is_some_and(|n| self.appended >= n) {
            return Err(EngineError::Stopped(self.appended));
        }
        let mut at = now_ms();
        let seqs = loop {
            match self.store.append_expecting(
                &self.run_id,
                self.last_seq,
                &[event.to_new_event(at)],
            ) {
                Err(e) if e.is_conflict() => {
                    self.absorb_inbox()?;
                    if !self.still_valid(event) {
                        return Ok(false);
                    }
                    at = now_ms();
                }
                other => break other?,
            }
        };
        if let Some(&s) = seqs.last() {
            self.last_seq = s;
        }
        self.appended += 1;
        self.observe(self.last_seq, at, event)?;
        Ok(true)
    }

    /// Tells the observers about an event already durably in the log (the driver's own
    /// appends, and the inbox events other writers appended that the driver absorbs).
    pub(crate) fn observe(&self, seq: u64, at: i64, event: &RunEvent) -> Result<(), EngineError> {
        if self.observers.is_empty() {
            return Ok(());
        }
        let seen = Observed {
            run_id: &self.run_id,
            seq,
            recorded_at_ms: at,
            event,
        };
        Ok(crate::observe::notify(&self.observers, &seen)?)
    }

    /// Append, then apply: the state is always a fold over the log. The actions of inbox
    /// events absorbed on the way come first (they are earlier in the log).
    fn record(&mut self, event: &RunEvent) -> Result<Vec<Action>, EngineError> {
        let written = self.append(event)?;
        let mut actions: Vec<Action> = self.human.actions.drain(..).collect();
        if !written {
            return Ok(actions);
        }
        let mapped = event
            .to_scheduler(self.sched.graph())
            .map_err(|n| EngineError::Internal(format!("unknown node `{n}`")))?;
        if let Some(e) = mapped {
            actions.extend(self.sched.apply(&e)?);
        }
        Ok(actions)
    }

    fn context(&self) -> RunContext {
        let mut nodes = BTreeMap::new();
        for (i, job) in self.jobs.iter().enumerate() {
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
        let mut ctx = self.context();
        if let Some(view) = ctx.nodes.get_mut(&id) {
            view.status = finish.outcome.as_str().to_string();
            view.outputs = finish.outputs.clone();
        }
        let needed = match finish.outcome {
            NodeOutcome::Succeeded => Some(EdgeKind::Conditional),
            NodeOutcome::Failed | NodeOutcome::Blocked => Some(EdgeKind::OnFailure),
            _ => None,
        };
        let mut guards = Vec::new();
        for &e in self.sched.graph().outgoing(node) {
            let spec = self.sched.graph().edge(e);
            if !spec.guarded || Some(spec.kind) != needed {
                continue;
            }
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
        let spent = self.budget.attempts.get(node).cloned().unwrap_or_default();
        let any_spent = spent.iter().any(|u| !u.is_zero());
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
            usage: any_spent.then(|| self.budget.node_total(node)),
            attempt_usage: if any_spent { spent } else { Vec::new() },
            warnings: finish.warnings,
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
    let agents = options.registry()?;
    let Plan {
        jobs,
        params,
        adapted,
        sched_options,
        expression_errors_fatal,
        warnings,
        human_policy,
    } = preflight(root, options, &agents)?;
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
        observers: options.observers.clone(),
        agents,
        budget: RunBudget::new(root, n, created),
        human: human::HumanState::new(human_policy),
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
            started_by: options.started_by.clone(),
            warnings,
        })?
        .into();
    match drive(&mut d, queue, options).await? {
        Drive::Finished(summary) => {
            finish::finalize(&mut d, root, options, summary, expression_errors_fatal).await
        }
        Drive::Suspended => d.suspend(),
    }
}

/// The action loop: carries out `queue` and everything that follows, until the scheduler
/// reports `Finished`, or nothing runs and only people are waited on.
async fn drive(
    d: &mut Driver<'_>,
    mut queue: std::collections::VecDeque<Action>,
    options: &RunOptions,
) -> Result<Drive, EngineError> {
    let sleeper: Arc<dyn Sleeper> = options
        .sleeper
        .clone()
        .unwrap_or_else(|| Arc::new(TokioSleeper));
    let mut tasks: JoinSet<(usize, u32, Attempt)> = JoinSet::new();
    let mut immediate: std::collections::VecDeque<(usize, Finish)> = Default::default();
    // Attempt results a human checkpoint let go on (`checkpoint.rs`).
    let mut reinjected: std::collections::VecDeque<(usize, u32, Attempt)> = Default::default();
    let summary = loop {
        queue.extend(d.human.actions.drain(..));
        let mut finished = None;
        while let Some(action) = queue.pop_front() {
            match action {
                Action::EvaluateWhen { node } => {
                    if !d.sched.when_pending(node) {
                        continue;
                    }
                    let job = Arc::clone(&d.jobs[node]);
                    let (value, error) =
                        eval_condition(job.when.as_deref().unwrap_or("true"), &d.context());
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
                    if d.human.cancel.is_some() {
                        continue; // settled `cancelled` by the sweep below
                    }
                    let job = Arc::clone(&d.jobs[node]);
                    let mut ctx = d.context();
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
                                    stage: None,
                                    checkpoint: None,
                                })?;
                            }
                            // `before_*` checkpoints come before the attempt is logged: an
                            // attempt is `node_started` only once it may run.
                            if job.gate.is_none()
                                && let Some(actions) = d.checkpoint_before_run(node, first, None)?
                            {
                                queue.extend(actions);
                                continue;
                            }
                            // Admitted (routed, counted against the budgets) only once it
                            // may run, like an attempt a checkpoint lets run later: a
                            // replay counts `node_started`s.
                            let env = match d.admit_attempt(node, first) {
                                Ok(env) => env,
                                Err((blocked, reason)) => {
                                    immediate
                                        .push_back((node, Finish::not_started(blocked, reason)));
                                    continue;
                                }
                            };
                            d.append(&RunEvent::NodeStarted {
                                node: job.id.clone(),
                                attempt: first,
                                inputs: Some(logged),
                                delay_ms: None,
                                routed: env.route.clone(),
                            })?;
                            if job.gate.is_some() {
                                queue.extend(d.open_gate(node, first, &ctx)?);
                                continue;
                            }
                            tasks.spawn(async move {
                                (node, first, attempt(job, None, ctx, env).await)
                            });
                        }
                        Err(e) => immediate.push_back((
                            node,
                            Finish {
                                outcome: NodeOutcome::Failed,
                                error: Some(e),
                                ..Finish::not_started(false, String::new())
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
        if d.cancel_pending() {
            immediate.clear();
            queue.extend(d.sweep_cancel(&mut tasks).await?);
            continue;
        }
        match d.human_step()? {
            Some(human::Step::Actions(actions)) => {
                queue.extend(actions);
                continue;
            }
            Some(human::Step::Spawn { node, attempt: n }) => {
                immediate.extend(d.start_checked_attempt(node, n, &mut tasks)?);
                continue;
            }
            Some(human::Step::Reinject {
                node,
                attempt: n,
                result,
            }) => {
                reinjected.push_back((node, n, *result));
            }
            None => {}
        }
        let (node, finish) = match immediate.pop_front() {
            Some(x) => x,
            None if tasks.is_empty() && reinjected.is_empty() && !d.human.waits.is_empty() => {
                // A last look at the inbox: a decision that just landed is taken now.
                if d.poll_inbox()? {
                    continue;
                }
                return Ok(Drive::Suspended);
            }
            None => match match reinjected.pop_front() {
                Some(r) => Some(Ok(r)),
                None => tokio::select! {
                    joined = tasks.join_next() => joined,
                    () = tokio::time::sleep(INBOX_POLL), if !tasks.is_empty() => {
                        d.poll_inbox()?;
                        continue;
                    }
                },
            } {
                Some(Ok((node, number, result))) => {
                    let result = match d.checkpoint_after_attempt(node, number, result).await? {
                        checkpoint::AfterAttempt::Continue(r) => *r,
                        checkpoint::AfterAttempt::Waiting(actions) => {
                            queue.extend(actions);
                            continue;
                        }
                    };
                    let job = Arc::clone(&d.jobs[node]);
                    d.budget.spent(node, result.usage);
                    let retry = result.failure.as_ref().is_some_and(|(class, _)| {
                        class != "blocked"
                            && (job.retry_on.iter().any(|r| r == class || r == "any")
                                || (class == "timeout" && job.timeout_action == "retry"))
                    });
                    let env = (retry && number < job.max_attempts)
                        .then(|| d.admit_attempt(node, number + 1).ok())
                        .flatten();
                    if let Some(env) = env {
                        let mut ctx = d.context();
                        ctx.inputs = d.inputs[node].clone();
                        let delay = job.backoff.delay(&d.run_id, &job.id, number);
                        d.append(&RunEvent::NodeStarted {
                            node: job.id.clone(),
                            attempt: number + 1,
                            // Retries reuse the first attempt's inputs: logged once.
                            inputs: None,
                            delay_ms: Some(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX)),
                            routed: env.route.clone(),
                        })?;
                        let retry = Retry {
                            delay,
                            sleeper: Arc::clone(&sleeper),
                            feedback: feedback_for(&job, &result),
                        };
                        tasks.spawn(async move {
                            (node, number + 1, attempt(job, Some(retry), ctx, env).await)
                        });
                        continue;
                    }
                    match d.ladder(node, number, result).await? {
                        human::Ending::Settle(finish) => (node, *finish),
                        human::Ending::Wait(actions) => {
                            queue.extend(actions);
                            continue;
                        }
                    }
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
    Ok(Drive::Finished(summary))
}
