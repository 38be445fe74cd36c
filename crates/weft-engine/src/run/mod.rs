//! The driver: load → check → adapt → open the run → the loop that carries out the
//! scheduler's actions, appending every result to the store *before* applying it.
//!
//! One run is one task on a tokio runtime; node attempts are spawned on a `JoinSet`, and the
//! scheduler's `max_parallel` bounds how many run at once. The driver is the only writer of
//! the run's log (`append_expecting` with the last seq it wrote).
//!
//! The module, by concern:
//! - `mod.rs`: the public API, the `Driver` (append before apply) and the action loop.
//! - `write.rs`: how the driver appends: batches, awaited (so concurrent runs share
//!   commits and no write blocks the runtime's thread), the run's opening and closing
//!   writes.
//! - `preflight.rs`: the checks that refuse a run before anything runs (`dry_run.rs`: only
//!   them).
//! - `job.rs`: a node prepared from the document (`Job`), the typed task the driver runs;
//!   `slot.rs`: a node's state while the run goes on (`NodeSlot`), one per node;
//!   `grow.rs`: both grown together when a live mutation adds nodes.
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
//! - `start.rs`: a node's first attempt, from `Start` to its deferred `node_started`.
//! - `settle.rs`: a finished attempt → checkpoints, a retry, or the ladder; nodes that end
//!   together settle in one batch (one commit).
//! - `reads.rs`: which nodes a node's expressions may read (the context it is given).
//! - `resume.rs`: resuming a stopped run; `resume_log.rs`: its log, decoded from the
//!   stored text.
//! - `container.rs`: `map`, `loop` and `subgraph` nodes (their spec, the up-front check of
//!   their fragments, the dispatch); `map.rs`, `loop_.rs`, `subgraph.rs`: each kind;
//!   `fragment.rs`: one fragment instance run by a driver of its own in the run's log;
//!   `map_item.rs`: a map item whose body is one pure node, without a driver of its own;
//!   `scope.rs`: what the drivers of one run share (`docs/engine.md` §3j);
//!   `instance_waits.rs`: people waited on inside fragment instances.

mod approval;
mod attachments;
mod budget;
mod checkpoint;
mod compensate;
mod contain;
mod container;
mod criteria;
mod dry_run;
mod fallback;
mod finish;
mod fragment;
mod grow;
mod human;
mod inbox;
mod instance_waits;
mod isolate;
mod job;
mod journal;
mod judge;
mod lease;
mod loop_;
mod map;
mod map_item;
mod node;
mod preflight;
mod reads;
mod redact;
mod resolve;
mod resume;
mod resume_log;
mod scope;
mod settle;
mod signoff;
mod slot;
mod start;
mod stop;
mod subgraph;
mod write;

pub use self::dry_run::{DryRun, dry_run};
pub(crate) use self::grow::check_added;
pub use self::isolate::IsolateMode;
pub use self::lease::{LeaseOptions, driven_by, host_name, is_live, process_alive, this_process};
pub use self::resume::{ResumeOptions, ResumeReport, resume_run};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};
use weft_ags::model::Fields;
use weft_core::{Action, FailurePolicy, Options, Scheduler};
use weft_store::{NewRun, RunStore};

use self::budget::RunBudget;
use self::fallback::Finish;
use self::job::Job;
use self::node::{Attempt, attempt};
use self::preflight::{Plan, preflight};
use self::reads::NodeReads;
use self::settle::{Completion, Tasks, complete};
use self::start::Starting;
use crate::EngineError;
use crate::agent::AgentRegistry;
use crate::backoff::{Sleeper, TokioSleeper};
use crate::clock::{Clock, SystemClock};
use crate::context::{NodeView, RunContext};
use crate::events::{EVENT_FORMAT, RunEvent};
use crate::observe::{Observed, RunObserver};
use crate::record::state_name;
use crate::run_log::scope_of;

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
    /// Carries out the pauses between attempts; `None` is the run's [`RunOptions::clock`]
    /// when one is given, else [`TokioSleeper`] (tests pass a [`crate::RecordingSleeper`]).
    pub sleeper: Option<Arc<dyn Sleeper>>,
    /// The run's time: events' timestamps, attempts' time limits, budgets, people's
    /// deadlines, the lease (`crate::clock`); `None` is [`SystemClock`]. Tests pass a
    /// [`crate::clock::TestClock`].
    pub clock: Option<Arc<dyn Clock>>,
    /// How the driver holds the run's lease (`docs/engine.md` §2d).
    pub lease: LeaseOptions,
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
    /// The checkers `external` success criteria may name (`crate::checkers`); empty by
    /// default, so such a criterion fails closed.
    pub checkers: Arc<crate::checkers::CheckerRegistry>,
    /// The local `subgraph.ref` children of the document, loaded and checked
    /// (`crate::refs::load_refs`; [`crate::run_file_blocking`] loads them). A `ref` whose
    /// child is neither here nor in the run's log fails its node.
    pub refs: Vec<crate::refs::ChildRef>,
    /// Which nodes work in their own copy of the project (`[workspace] isolate`).
    pub isolate: IsolateMode,
    /// Put before `/bin/sh -c` of every `command` success criterion
    /// (`weft_criteria::Limits::command_wrapper`): `weft run --sandbox` runs criteria in
    /// the sandbox, read-only. Empty by default.
    pub criteria_wrapper: Vec<String>,
}

impl RunOptions {
    /// The run's clock: the given one, else the system's.
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.clock
            .clone()
            .unwrap_or_else(|| Arc::new(SystemClock) as Arc<dyn Clock>)
    }

    /// What carries out the pauses between attempts: the given sleeper, else the given
    /// clock, else [`TokioSleeper`] (its pauses capped).
    fn sleeper(&self) -> Arc<dyn Sleeper> {
        match (&self.sleeper, &self.clock) {
            (Some(s), _) => Arc::clone(s),
            (None, Some(c)) => Arc::clone(c) as Arc<dyn Sleeper>,
            (None, None) => Arc::new(TokioSleeper),
        }
    }

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

/// A fresh run id, `run-<ms>-<pid>-<n>` (letters, digits and `-`: it names the run's audit file).
pub fn new_run_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        "run-{:013}-{}-{n}",
        SystemClock.now_ms(),
        std::process::id()
    )
}

/// Evaluates an AGX condition; an error is `false` plus its message.
/// The prefix of an AGX evaluation error wherever it is logged (a node's error or warning,
/// the run's reasons): the record lists each as an `RT062` diagnostic (DIGEST §2.6).
pub(super) const RT062: &str = "RT062: ";

/// `policy.on_expression_error` is not `false`: an AGX evaluation error, wherever the
/// expression is, fails the run (DIGEST §1.5, §2.6).
pub(super) fn expression_errors_fatal(doc: &Map<String, Value>) -> bool {
    doc.get("policy")
        .and_then(|p| p.get("on_expression_error"))
        .and_then(Value::as_str)
        != Some("false")
}

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
    store: &'a dyn RunStore,
    run_id: String,
    last_seq: u64,
    sched: Scheduler,
    jobs: Vec<Arc<Job>>,
    /// Per node: the nodes its expressions may read ([`Driver::context_for`]).
    reads: Vec<NodeReads>,
    edge_when: Vec<Option<String>>,
    params: Arc<Value>,
    context: Arc<Value>,
    /// Per node, its outputs once it finished; shared with the views that read them.
    outputs: Vec<Arc<Map<String, Value>>>,
    /// Per node, its state while the run goes on (`slot.rs`), grown with the graph.
    slots: Vec<slot::NodeSlot>,
    expression_errors: Vec<String>,
    degraded: bool,
    /// Events appended by this invocation, and the test hook's limit on them.
    appended: usize,
    stop_after: Option<usize>,
    observers: Vec<Arc<dyn RunObserver>>,
    agents: Arc<AgentRegistry>,
    /// The run's clock (`crate::clock`): every time the driver reads or waits for.
    clock: Arc<dyn Clock>,
    budget: RunBudget,
    /// Waits on people, inbox events, a pending cancel (`human.rs`, `inbox.rs`).
    human: human::HumanState,
    /// Events waiting for the next append ([`Driver::defer`]).
    deferred: Vec<RunEvent>,
    /// The `policy_decision`s of allowed tool calls, written at the head of the driver's
    /// next commit (`journal.rs`, `write.rs`): an allowed call costs no commit of its own.
    allowed_calls: Vec<RunEvent>,
    /// The scope instance this driver runs: the root, or a fragment instance (`scope.rs`).
    scope: scope::ScopeRun,
    /// The nodes' tool journals and the port attempts log side effects through (`journal.rs`).
    journal: journal::Journals,
    /// What a node added to the live run is prepared with (`grow.rs`).
    growth: grow::Growth,
}

/// What a driver starts from: its run and place in the log, the prepared plan, and the
/// options (`run_document` and `resume_run` build one each).
struct DriverInit<'s, 'r> {
    store: &'s dyn RunStore,
    run_id: String,
    /// The last seq already in the log (0 for a new run).
    last_seq: u64,
    root: &'r Map<String, Value>,
    jobs: Vec<Arc<Job>>,
    reads: Vec<NodeReads>,
    adapted: crate::adapter::Adapted,
    sched_options: Options,
    params: Value,
    human_policy: human::HumanPolicy,
    options: &'r RunOptions,
    agents: Arc<AgentRegistry>,
    /// When the run started (its budgets' wall clock counts from there).
    started_ms: i64,
}

impl<'s> Driver<'s> {
    fn new(init: DriverInit<'s, '_>) -> Driver<'s> {
        let n = init.jobs.len();
        Driver {
            store: init.store,
            run_id: init.run_id,
            last_seq: init.last_seq,
            sched: Scheduler::new(init.adapted.graph, init.sched_options),
            jobs: init.jobs,
            reads: init.reads,
            edge_when: init.adapted.edge_when,
            params: Arc::new(init.params),
            context: Arc::new(
                init.root
                    .field("context")
                    .cloned()
                    .unwrap_or(Value::Object(Map::new())),
            ),
            // An empty map per node until it finishes (then replaced, never mutated): one
            // shared by all of them.
            outputs: std::iter::repeat_n(Arc::new(Map::new()), n).collect(),
            slots: vec![slot::NodeSlot::new(); n],
            expression_errors: Vec::new(),
            degraded: false,
            appended: 0,
            stop_after: init.options.stop_after_events,
            observers: init.options.observers.clone(),
            agents: init.agents,
            clock: init.options.clock(),
            budget: RunBudget::new(init.root, n, init.started_ms),
            human: human::HumanState::new(init.human_policy),
            deferred: Vec::new(),
            allowed_calls: Vec::new(),
            scope: scope::ScopeRun::root(init.last_seq, crate::context::graph_fields(init.root)),
            journal: journal::Journals::new(n),
            growth: grow::Growth::of(init.options),
        }
    }
}

/// How the action loop ended.
enum Drive {
    Finished(weft_core::ScopeSummary),
    /// Nothing runs and every remaining path waits on a person.
    Suspended,
}

impl Driver<'_> {
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
            scope: self.scope.path.as_deref(),
        };
        Ok(crate::observe::notify(&self.observers, &seen)?)
    }

    /// Append, then apply: the state is always a fold over the log. The actions of inbox
    /// events absorbed on the way come first (they are earlier in the log).
    async fn record(&mut self, event: &RunEvent) -> Result<Vec<Action>, EngineError> {
        let written = self.append(event).await?;
        let mut actions: Vec<Action> = self.human.actions.drain(..).collect();
        if written {
            actions.extend(self.apply(event)?);
        }
        Ok(actions)
    }

    /// Evaluates the `when` of `node` and records it (`node_when`).
    async fn evaluate_when(&mut self, node: usize) -> Result<Vec<Action>, EngineError> {
        let job = Arc::clone(&self.jobs[node]);
        let (value, error) = eval_condition(
            job.when.as_deref().unwrap_or("true"),
            &self.context_for(node),
        );
        if let Some(e) = &error {
            self.expression_errors
                .push(format!("when of `{}`: {e}", job.id));
        }
        self.record(&RunEvent::NodeWhen {
            node: job.id.clone(),
            value,
            error,
        })
        .await
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
        // Built in bulk from every node's view (one sort, no insert per node).
        let nodes = (0..self.jobs.len())
            .filter_map(|i| self.view_of(i))
            .collect();
        self.context_of(nodes)
    }

    /// The context of `node`'s own expressions: itself and the nodes it may read (all of
    /// them when its expressions name nodes dynamically), so a step costs what the node
    /// reads, not what the graph holds.
    fn context_for(&self, node: usize) -> RunContext {
        let mut ctx = match self.reads.get(node) {
            Some(NodeReads::Only(ids)) => {
                self.context_with(ids.iter().copied().chain(std::iter::once(node)))
            }
            _ => self.context(),
        };
        if let Some(job) = self.jobs.get(node) {
            // The attempt in progress (attempts are counted as they start), else the last.
            let started = self.budget.attempts.get(node).map_or(0, Vec::len);
            let attempt = u32::try_from(started).unwrap_or(u32::MAX);
            ctx.enter_node(
                &job.id,
                attempt.max(self.slots[node].attempts).max(1),
                &job.environment,
            );
        }
        ctx
    }

    /// Notes when node `node`'s first attempt started, and on its end, its duration.
    fn time_node(&mut self, node: usize, finished: bool) {
        let now = self.clock.now_ms();
        match (finished, self.slots[node].started_at) {
            (false, None) => self.slots[node].started_at = Some(now),
            (true, Some(start)) => {
                self.slots[node].duration = Some((now - start).max(0) as f64 / 1000.0);
            }
            (true, None) => self.slots[node].duration = Some(0.0),
            (false, Some(_)) => {}
        }
    }

    fn context_with(&self, which: impl Iterator<Item = usize>) -> RunContext {
        let mut nodes = BTreeMap::new();
        for (id, view) in which.filter_map(|i| self.view_of(i)) {
            nodes.insert(id, view);
        }
        self.context_of(nodes)
    }

    /// Node `i`'s id and view, if it is a node of this scope.
    fn view_of(&self, i: usize) -> Option<(String, NodeView)> {
        let job = self.jobs.get(i)?;
        Some((
            job.id.clone(),
            NodeView {
                status: state_name(self.sched.state(i)),
                outputs: self.outputs.get(i).cloned().unwrap_or_default(),
                attempts: self.slots.get(i).map_or(0, |s| s.attempts),
                duration_seconds: self.slots.get(i).and_then(|s| s.duration),
            },
        ))
    }

    fn context_of(&self, nodes: BTreeMap<String, NodeView>) -> RunContext {
        RunContext {
            params: Arc::clone(&self.params),
            context: Arc::clone(&self.context),
            nodes,
            inputs: None,
            outputs: None,
            bindings: self.scope.bindings.clone(),
            graph: Arc::clone(&self.scope.graph),
            self_id: None,
            attempt: None,
            env: None,
        }
    }
}

/// Runs a loaded, valid document to its end. The caller has validated it (see
/// [`crate::load_document`]); the graph digest is computed here. The run keeps a copy of
/// the document (logged in `run_started`); a caller that has no further use for its own
/// hands it over with [`run_owned`] and saves the copy.
pub async fn run_document(
    doc: &Value,
    store: &dyn RunStore,
    options: &RunOptions,
) -> Result<RunReport, EngineError> {
    run_owned(doc.clone(), store, options).await
}

/// [`run_document`] on a document the run takes: it is logged in `run_started` and kept as
/// the driver's, never copied.
pub async fn run_owned(
    doc: Value,
    store: &dyn RunStore,
    options: &RunOptions,
) -> Result<RunReport, EngineError> {
    let root = doc
        .as_object()
        .ok_or_else(|| EngineError::Refused(vec!["the document is not an object".into()]))?;
    let agents = options.registry()?;
    let Plan {
        jobs,
        reads,
        params,
        adapted,
        sched_options,
        expression_errors_fatal,
        warnings,
        human_policy,
    } = preflight(root, options, &agents, &Default::default())?;
    let unloaded = subgraph::unloaded_refs(root, &options.refs);
    if !unloaded.is_empty() {
        return Err(EngineError::Refused(unloaded));
    }
    let Options {
        max_parallel,
        on_node_failure,
    } = sched_options;
    let digest = weft_ags::digest::graph_digest(&doc);
    let run_id = options.run_id.clone().unwrap_or_else(new_run_id);
    let clock = options.clock();
    let created = clock.now_ms();
    // The run is opened with its first lease, and every write of its drivers is fenced by
    // it; the lease is renewed while the run is driven and let go when it stops.
    let fenced = store.fenced(lease::first(&run_id, &options.lease, created));
    let store: &dyn RunStore = &*fenced;
    let held = lease::hold(store, &options.lease, clock);
    let mut d = Driver::new(DriverInit {
        store,
        run_id: run_id.clone(),
        last_seq: 0,
        root,
        jobs,
        reads,
        adapted,
        sched_options,
        params: params.clone(),
        human_policy,
        options,
        agents,
        started_ms: created,
    });
    attachments::bind(&mut d.scope.bindings, root);
    d.scope.refs = Arc::new(options.refs.clone());
    // The run's row, already `running`, and its `run_started` go in one write.
    let opened = NewRun {
        id: run_id.clone(),
        graph_digest: digest.clone(),
        created_at_ms: created,
    };
    let started = RunEvent::RunStarted {
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
        graph: doc,
        started_by: options.started_by.clone(),
        warnings,
        refs: options
            .refs
            .iter()
            .map(crate::refs::LoggedRef::from)
            .collect(),
    };
    // Every way out of the run lets its lease go, awaited (the closing write already did
    // when the run finished; `Held`'s drop is left only for a future dropped mid-run).
    let driven: Result<RunReport, EngineError> = async {
        let queue: std::collections::VecDeque<Action> = d.open(opened, &started).await?.into();
        // The driver's document is the logged one, moved (the run never copies it), less
        // the nodes and edges its jobs hold (`run_log::kept_document`): nothing reads it
        // before the action loop.
        d.scope.doc = Arc::new(match started {
            RunEvent::RunStarted {
                graph: Value::Object(graph),
                ..
            } => crate::run_log::kept_document(graph),
            _ => Map::new(),
        });
        match drive(&mut d, queue, options).await? {
            Drive::Finished(summary) => {
                let root = Arc::clone(&d.scope.doc);
                Box::pin(finish::finalize(
                    &mut d,
                    &root,
                    options,
                    summary,
                    expression_errors_fatal,
                ))
                .await
            }
            Drive::Suspended => d.suspend().await,
        }
    }
    .await;
    // What the observers do off this thread (the audit export) is done before the run
    // returns, and before its lease goes.
    let driven = crate::observe::drained(&options.observers, driven).await;
    held.release().await;
    driven
}

/// The action loop: carries out `queue` and everything that follows, until the scheduler
/// reports `Finished`, or nothing runs and only people are waited on.
///
/// What it awaits only now and then (a finished attempt's handling, containers, a cancel
/// sweep, FINALIZE) is boxed: an await's state is part of the run's future for the run's
/// whole life, so a run in flight holds 5 KB instead of 25 (W10 runs 100 at once), for an
/// allocation per awaited call.
async fn drive(
    d: &mut Driver<'_>,
    mut queue: std::collections::VecDeque<Action>,
    options: &RunOptions,
) -> Result<Drive, EngineError> {
    let sleeper = options.sleeper();
    let mut tasks = Tasks::new();
    // While nodes run: the wait for another writer's append to the log (`inbox.rs`).
    let mut inbox = inbox::InboxWatch::default();
    let mut immediate: std::collections::VecDeque<(usize, Finish)> = Default::default();
    // Attempt results a human checkpoint let go on (`checkpoint.rs`).
    let mut reinjected: std::collections::VecDeque<(usize, u32, Attempt)> = Default::default();
    // Nodes this scheduler step starts: their `node_started` are deferred and flushed in
    // one commit before any of them runs.
    let mut starting: Vec<Starting> = Vec::new();
    // Containers a rebuild found open run again first, in their attempt (`instance_waits.rs`).
    while let Some(node) = d.container_to_reenter() {
        reinjected.extend(Box::pin(d.reenter_container(node, options)).await?);
    }
    let summary = loop {
        queue.extend(d.human.actions.drain(..));
        let mut finished = None;
        while let Some(action) = queue.pop_front() {
            let writing = match action {
                Action::EvaluateWhen { node } if d.sched.when_pending(node) => Some(action),
                // Settled `cancelled` by the sweep below.
                Action::Start { .. } if d.human.cancel.is_some() => None,
                Action::Start { node } if d.start_writes(node) => Some(action),
                Action::Start { node } => {
                    if let Some(start) = d.start(node, &mut immediate)? {
                        starting.push(start);
                    }
                    None
                }
                Action::Finished { summary } => {
                    finished = Some(summary);
                    None
                }
                Action::EvaluateWhen { .. } | Action::Skipped { .. } => None,
            };
            if let Some(action) = writing {
                // An action that writes before it goes on (a `node_when`; a start's
                // checkpoint or gate wait): boxed, all behind this one await, so that the
                // loop's future does not grow with them (W1's nodes have none of them).
                let start = Box::pin(d.carry_out_writing(action, &mut queue, &mut immediate));
                if let Some(start) = start.await? {
                    starting.push(start);
                }
            }
        }
        // The starts of this step share one commit; no node runs before it is durable. A
        // step that starts only pure nodes (decided below, no IO, nothing acts on them)
        // needs no commit of its own: their `node_started` stay deferred and share the
        // commit of the `node_finished` they lead to, so a chain of them costs one commit
        // (one sync) per node, not two. A crash before it loses both, as before the start.
        let all_pure = !starting.is_empty()
            && starting.iter().all(|Starting { job, .. }| {
                job.is_pure() && !matches!(job.work, job::Work::Container(_))
            });
        if !all_pure {
            d.flush().await?;
        }
        for Starting {
            node,
            first,
            job,
            run,
        } in starting.drain(..)
        {
            if matches!(job.work, job::Work::Container(_)) {
                // Run inline, `running` meanwhile; it may stay open on its instances' waits.
                let (ctx, _) = *run;
                if let Some(result) =
                    Box::pin(d.run_container_in(node, first, ctx, options)).await?
                {
                    reinjected.push_back((node, first, result));
                }
            } else if job.is_pure() {
                // An expression decision or a notify gate with no `success` block does no
                // IO: it is decided here, without a task, and settles like a joined one.
                let result = node::decide_pure(&job, &run.0);
                reinjected.push_back((node, first, result));
            } else {
                let (ctx, env) = *run;
                tasks.spawn(async move { (node, first, attempt(job, None, ctx, env).await) });
            }
        }
        if let Some(s) = finished {
            break s;
        }
        if d.cancel_pending() {
            immediate.clear();
            queue.extend(Box::pin(d.sweep_cancel(&mut tasks)).await?);
            continue;
        }
        // Boxed, and only when there is human work: most steps of most runs have none.
        let step = if d.human.has_work() {
            Box::pin(d.human_step()).await?
        } else {
            None
        };
        match step {
            Some(human::Step::Actions(actions)) => {
                queue.extend(actions);
                continue;
            }
            Some(human::Step::Spawn { node, attempt: n }) => {
                immediate.extend(Box::pin(d.start_checked_attempt(node, n, &mut tasks)).await?);
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
        // Everything that has ended by now settles in one batch, so nodes that finish
        // together share one commit.
        let mut done: Vec<(usize, Finish)> = immediate.drain(..).collect();
        if done.is_empty() {
            let first = match reinjected.pop_front() {
                Some(r) => Some(Ok(r)),
                None if tasks.is_empty() && d.waits_on_person() => {
                    // A last look at the inbox: a decision that just landed is taken now.
                    if d.poll_inbox().await? {
                        continue;
                    }
                    // A decision for an instance of a waiting container: it runs again.
                    if let Some(node) = d.container_to_reenter() {
                        reinjected.extend(Box::pin(d.reenter_container(node, options)).await?);
                        continue;
                    }
                    return Ok(Drive::Suspended);
                }
                None if tasks.is_empty() && d.sched.is_held() => {
                    // Held open (`graph_mutated` `hold`) and idle: nothing finishes the
                    // run until another writer adds work, releases it or cancels it.
                    inbox.appended(d).await?;
                    Box::pin(d.absorb_appended()).await?;
                    continue;
                }
                None => {
                    let appended = inbox.appended(d);
                    tokio::select! {
                        joined = tasks.join_next() => joined,
                        // A side effect an attempt waits to see durable (`journal.rs`).
                        Some(effect) = d.journal.next(), if !tasks.is_empty() => {
                            Box::pin(d.log_effect(effect)).await?;
                            continue;
                        }
                        // Another process appended (a decision, a cancel): taken now.
                        woken = appended, if !tasks.is_empty() => {
                            woken?;
                            Box::pin(d.absorb_appended()).await?;
                            continue;
                        }
                    }
                }
            };
            if first.is_none() {
                return Err(EngineError::Internal(
                    "the scheduler waits, but nothing runs".into(),
                ));
            }
            let mut next = first;
            while let Some(joined) = next {
                let (node, number, result) = joined
                    .map_err(|e| EngineError::Internal(format!("a node task failed: {e}")))?;
                match Box::pin(complete(d, &mut tasks, &sleeper, node, number, result)).await? {
                    Completion::Finish(finish) => done.push((node, *finish)),
                    Completion::Retried => {}
                    Completion::Waiting(actions) => queue.extend(actions),
                }
                // Only what has already ended: results decided in place first, then tasks
                // that have finished (with nothing else running, skip the probe).
                next = match reinjected.pop_front() {
                    Some(r) => Some(Ok(r)),
                    None if tasks.is_empty() => None,
                    None => tasks.try_join_next(),
                };
            }
        }
        queue.extend(d.settle_all(done).await?);
    };
    Ok(Drive::Finished(summary))
}
