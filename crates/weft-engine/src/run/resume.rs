//! Resuming a stopped run from its log (`docs/engine.md` §2a): the stored events are
//! replayed into a fresh scheduler, the actions they produced and that were not carried out
//! are carried out, and the normal driver loop continues, appending to the same log.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;
use serde_json::{Map, Value};
use weft_core::{Action, NodeState};
use weft_store::RunStatus;

use super::preflight::{Plan, preflight};
use super::{Drive, Driver, DriverInit, RunOptions, RunReport, drive, finish};
use crate::EngineError;
use crate::events::{NodeOutcome, RunEvent, recorded_options};

/// How to resume a run.
#[derive(Clone, Debug, Default)]
pub struct ResumeOptions {
    /// `project_dir`, `sleeper` and `stop_after_events` are used; `params`, `max_parallel`
    /// and `run_id` come from the log.
    pub run: RunOptions,
    /// Resume even when the given document's digest differs from the run's (RT053); the
    /// run's stored document is still the one that runs.
    pub force: bool,
    /// Run again the nodes whose last attempt was started and never finished.
    pub retry_uncertain: bool,
    /// Failed or blocked nodes to run again (`resume_failed`): none of their downstream
    /// nodes may have started.
    pub retry_nodes: Vec<String>,
}

/// What `resume_run` did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResumeReport {
    pub run_id: String,
    /// `false` when the run had already finished: nothing was done.
    pub resumed: bool,
    /// The final status (`succeeded`, `partial`, `failed`, `cancelled`), or
    /// `awaiting_human` when the run is suspended again.
    pub status: String,
    /// The report of the resumed part, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<RunReport>,
    /// `policy.resume: restart`: the run this one replaces (`run_id` is the new run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted_from: Option<String>,
}

impl ResumeReport {
    /// A finished run nothing may run again in: it is left as it is.
    fn left_alone(run_id: &str, status: &str) -> ResumeReport {
        ResumeReport {
            run_id: run_id.to_string(),
            resumed: false,
            status: status.to_string(),
            report: None,
            restarted_from: None,
        }
    }
}

/// `policy.resume` (DIGEST §1.5): what `weft resume` does with a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ResumePolicy {
    /// The default: finished nodes keep their state, the rest runs.
    ResumeIncomplete,
    /// Also every failed or blocked node that may run again, even in a finished run.
    ResumeFailed,
    /// A new run of the stored document with the same params; the old one is cancelled.
    Restart,
}

impl ResumePolicy {
    fn of(root: &Map<String, Value>) -> ResumePolicy {
        match root
            .get("policy")
            .and_then(|p| p.get("resume"))
            .and_then(Value::as_str)
        {
            Some("resume_failed") => ResumePolicy::ResumeFailed,
            Some("restart") => ResumePolicy::Restart,
            _ => ResumePolicy::ResumeIncomplete,
        }
    }
}

/// `policy.resume: restart`: a run that did not succeed starts over as a new run of its
/// stored document with its params. An unfinished old run is first ended `cancelled`, its
/// reason naming the new run, so it cannot be resumed as well.
async fn restart(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    graph: &Value,
    params: &Value,
    unfinished: bool,
    options: &ResumeOptions,
) -> Result<ResumeReport, EngineError> {
    let new_id = super::new_run_id();
    if unfinished {
        let last = store.last_seq_async(run_id).await?;
        let end = RunEvent::RunFinished {
            status: "cancelled".into(),
            outputs: Value::Object(Map::new()),
            redacted: Vec::new(),
            reasons: vec![format!("restarted as {new_id} (policy.resume: restart)")],
            graph_verdict: None,
        };
        let at = options.run.clock().now_ms();
        let seqs = store
            .append_async(run_id, last, vec![end.to_new_event(at)?])
            .await?;
        let seen = crate::observe::Observed {
            run_id,
            seq: seqs.last().copied().unwrap_or(last),
            recorded_at_ms: at,
            event: &end,
            scope: None,
        };
        crate::observe::notify(&options.run.observers, &seen)?;
        store
            .set_status_async(run_id, RunStatus::Cancelled, at)
            .await?;
    }
    let mut run = options.run.clone();
    run.params = params.as_object().cloned().unwrap_or_default();
    run.run_id = Some(new_id.clone());
    let report = super::run_document(graph, store, &run).await?;
    Ok(ResumeReport {
        run_id: new_id,
        resumed: true,
        status: report.status.as_str().to_string(),
        report: Some(report),
        restarted_from: Some(run_id.to_string()),
    })
}

/// Decodes the log, moving each payload out of its record (only the seqs are used after).
pub(super) fn decode(
    records: &mut [weft_store::EventRecord],
) -> Result<Vec<RunEvent>, EngineError> {
    records
        .iter_mut()
        .map(RunEvent::take_from_record)
        .collect::<Result<Vec<_>, _>>()
        .map_err(internal)
}

fn internal(e: impl std::fmt::Display) -> EngineError {
    EngineError::Internal(format!("resume: {e}"))
}

/// Resumes the stopped run `run_id` (see the module docs). `document`, when given, is only
/// compared with the run's `graph_digest` (RT053 unless `force`).
///
/// The run's lease is taken first (`lease.rs`): [`EngineError::Driven`] when a live driver
/// holds it, and nothing is read or written then.
pub async fn resume_run(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    document: Option<&Value>,
    options: &ResumeOptions,
) -> Result<ResumeReport, EngineError> {
    if store.get_run_async(run_id).await?.is_none() {
        return Err(EngineError::UnknownRun(run_id.to_string()));
    }
    let clock = options.run.clock();
    let lease = super::lease::acquire(store, run_id, &options.run.lease, &*clock).await?;
    let fenced = store.fenced(lease);
    let store: &dyn weft_store::RunStore = &*fenced;
    let held = super::lease::hold(store, &options.run.lease, clock);
    let resumed = resume_held(store, run_id, document, options).await;
    let resumed = crate::observe::drained(&options.run.observers, resumed).await;
    // Let go awaited on every way out (`lease::Held`).
    held.release().await;
    resumed
}

/// [`resume_run`] once the lease is held, `store` fenced by it.
async fn resume_held(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    document: Option<&Value>,
    options: &ResumeOptions,
) -> Result<ResumeReport, EngineError> {
    let row = store
        .get_run_async(run_id)
        .await?
        .ok_or_else(|| EngineError::UnknownRun(run_id.to_string()))?;
    // The root's events decoded from the stored text; fragment instances' events, by
    // instance: each is rebuilt when its container runs again (`fragment.rs`).
    let super::resume_log::ResumeLog {
        records,
        mut events,
        scoped,
    } = super::resume_log::read(store, run_id).await?;
    // The document is moved out of `run_started` (the log's largest value), not copied.
    let Some(RunEvent::RunStarted {
        graph,
        params,
        refs: logged_refs,
        ..
    }) = events.first_mut()
    else {
        return Err(internal(format!("run {run_id} has no run_started event")));
    };
    let (graph, params) = (std::mem::take(graph), params.clone());
    let logged_refs = std::mem::take(logged_refs);
    if graph.is_null() {
        return Err(EngineError::Refused(vec![format!(
            "run {run_id}: its log predates the stored document; it cannot be resumed"
        )]));
    }
    // The stored document must be the one the run started with: a log whose document was
    // rewritten (a forged command for a node still to run) is refused, `--force` or not.
    let stored = weft_ags::digest::graph_digest(&graph);
    if stored != row.graph_digest {
        return Err(EngineError::Refused(vec![format!(
            "run {run_id}: the document in its log has digest {stored}, not the {} the run \
             started with: the log was altered, so it is not resumed",
            row.graph_digest
        )]));
    }
    if let Some(doc) = document {
        let digest = weft_ags::digest::graph_digest(doc);
        if digest != row.graph_digest && !options.force {
            return Err(EngineError::Refused(vec![format!(
                "RT053: the document's graph digest {digest} differs from the run's {}; pass --force to resume anyway (the run's stored document runs)",
                row.graph_digest
            )]));
        }
    }
    let graph = match graph {
        Value::Object(m) => m,
        _ => return Err(internal("the stored document is not an object")),
    };
    let root: &Map<String, Value> = &graph;
    let policy = ResumePolicy::of(root);
    let finished = crate::events::finished_status(&events).map(str::to_string);
    if policy == ResumePolicy::Restart && finished.as_deref() != Some("succeeded") {
        let graph = Value::Object(root.clone());
        return restart(store, run_id, &graph, &params, finished.is_none(), options).await;
    }
    if let Some(status) = &finished
        && options.retry_nodes.is_empty()
        && policy != ResumePolicy::ResumeFailed
    {
        return Ok(ResumeReport::left_alone(run_id, status));
    }
    let sched_options = events
        .first()
        .and_then(recorded_options)
        .ok_or_else(|| internal("run_started without options"))?;
    let mut run_opts = options.run.clone();
    run_opts.params = params.as_object().cloned().unwrap_or_default();
    run_opts.max_parallel = Some(sched_options.max_parallel);
    run_opts.run_id = Some(run_id.to_string());
    let agents = run_opts.registry()?;
    let Plan {
        jobs,
        reads,
        params,
        adapted,
        expression_errors_fatal,
        human_policy,
        ..
    } = preflight(
        root,
        &run_opts,
        &agents,
        &settled_nodes(&events, &options.retry_nodes),
    )?;
    let cancel = crate::human::cancel_requested(&events);
    // Checks before anything is written: uncertain nodes, then `retry_nodes`.
    let mut open_pre: BTreeMap<&str, u32> = BTreeMap::new();
    for e in &events {
        match e {
            RunEvent::NodeStarted { node, attempt, .. } => {
                open_pre.insert(node, *attempt);
            }
            // A node that waits on a person ran no side effect: it is not uncertain.
            RunEvent::GateWaiting(w) => {
                open_pre.remove(w.node.as_str());
            }
            RunEvent::NodeAbandoned { node, .. } | RunEvent::NodeFinished { node, .. } => {
                open_pre.remove(node.as_str());
            }
            _ => {}
        }
    }
    // A cancelled run settles its uncertain nodes `cancelled`: they never run again.
    if cancel.is_some() {
        open_pre.clear();
    }
    let mut refused = Vec::new();
    for (&id, &attempt) in &open_pre {
        // Gates and expression decisions run no command: never uncertain.
        // A container runs no command of its own: its instances' nodes are checked below.
        let idempotent = jobs.iter().any(|j| {
            j.id == id
                && (j.idempotent
                    || j.gate.is_some()
                    || j.decision.is_some()
                    || matches!(j.work, super::job::Work::Container(_)))
        });
        if !options.retry_uncertain && !idempotent {
            refused.push(format!("`{id}` (attempt {attempt})"));
        }
    }
    if cancel.is_none() && !options.retry_uncertain {
        refused.extend(super::scope::uncertain_in_fragments(root, &scoped));
    }
    if !refused.is_empty() {
        return Err(EngineError::Refused(vec![format!(
            "run {run_id}: these nodes were running when the run stopped and may have had side effects: {}; pass --retry-uncertain to run them again (or declare them `x-weft-exec: {{idempotent: true}}`)",
            refused.join(", ")
        )]));
    }
    // A container's instances are in the log for good: running it again would reuse them,
    // so a failed loop, map or subgraph is not run again (named: refused; by policy: left).
    let containers: Vec<&str> = jobs
        .iter()
        .filter(|j| matches!(j.work, super::job::Work::Container(_)))
        .map(|j| j.id.as_str())
        .collect();
    if let Some(c) = options
        .retry_nodes
        .iter()
        .find(|n| containers.contains(&n.as_str()))
    {
        return Err(EngineError::Refused(vec![format!(
            "--retry-nodes: `{c}` is a loop, map or subgraph: running its instances again is not supported yet"
        )]));
    }
    let resets = if options.retry_nodes.is_empty() && policy == ResumePolicy::ResumeFailed {
        // `policy.resume: resume_failed`: every failed or blocked node that can run again.
        failed_nodes(&adapted.graph, &events)
    } else {
        check_retry_nodes(&adapted.graph, &events, &options.retry_nodes)?
    };
    let resets: Vec<String> = resets
        .into_iter()
        .filter(|n| !containers.contains(&n.as_str()))
        .collect();
    if let Some(status) = &finished
        && resets.is_empty()
    {
        // Finished, and nothing may run again: left as it is.
        return Ok(ResumeReport::left_alone(run_id, status));
    }
    let (records, events) = if resets.is_empty() {
        (records, events)
    } else {
        let mut last = store.last_seq_async(run_id).await?;
        for node in resets {
            let e = RunEvent::NodeReset { node };
            let at = options.run.clock().now_ms();
            let seqs = store
                .append_async(run_id, last, vec![e.to_new_event(at)?])
                .await?;
            last = seqs.last().copied().unwrap_or(last);
            let seen = crate::observe::Observed {
                run_id,
                seq: last,
                recorded_at_ms: at,
                event: &e,
                scope: None,
            };
            crate::observe::notify(&options.run.observers, &seen)?;
        }
        let log = super::resume_log::read(store, run_id).await?;
        (log.records, log.events)
    };
    // The log's last seq, fragment instances' events included.
    let last_seq = store.last_seq_async(run_id).await?;
    let mut d = Driver::new(DriverInit {
        store,
        run_id: run_id.to_string(),
        last_seq,
        root,
        jobs,
        reads,
        adapted,
        sched_options,
        params,
        human_policy,
        options: &options.run,
        agents,
        started_ms: records.first().map_or(0, |r| r.recorded_at_ms),
    });
    d.scope.doc = std::sync::Arc::new(crate::run_log::kept_document_of(&graph));
    super::attachments::bind(&mut d.scope.bindings, root);
    // The children loaded for this resume (`resume_file_blocking`), else those the run logged
    // when it started: a child not reached before the stop runs without the file.
    d.scope.refs = std::sync::Arc::new(if options.run.refs.is_empty() {
        logged_refs
            .into_iter()
            .map(crate::refs::ChildRef::from)
            .collect()
    } else {
        options.run.refs.clone()
    });
    d.scope.resumed = Some(std::sync::Arc::new(super::scope::Resumed {
        scopes: scoped,
        retry_uncertain: options.retry_uncertain,
    }));
    // `updated_at_ms` is the time of the last status change: a run that died running (the
    // usual resume) keeps its row, and the resume's first commit is its first event.
    if row.status != RunStatus::Running {
        store
            .set_status_async(run_id, RunStatus::Running, options.run.clock().now_ms())
            .await?;
    }
    // Boxed: awaited once per resume.
    let queue = Box::pin(rebuild(&mut d, &records, &events, options.retry_uncertain)).await?;
    let report = match drive(&mut d, queue, &run_opts).await? {
        Drive::Finished(summary) => {
            finish::finalize(&mut d, root, &run_opts, summary, expression_errors_fatal).await?
        }
        Drive::Suspended => d.suspend().await?,
    };
    Ok(ResumeReport {
        run_id: run_id.to_string(),
        resumed: true,
        status: report.status.as_str().to_string(),
        report: Some(report),
        restarted_from: None,
    })
}

/// The nodes the log has settled for good: a `node_finished` no `node_reset` supersedes,
/// and not named to run again. A resumed run needs no agent for them (their model turns
/// were played already: `weft resume` without `--cassette` finishes a run whose model
/// nodes are done).
pub(super) fn settled_nodes(
    events: &[RunEvent],
    retry_nodes: &[String],
) -> std::collections::BTreeSet<String> {
    let skip = crate::events::superseded(events);
    events
        .iter()
        .enumerate()
        .filter(|(i, _)| !skip.contains(i))
        .filter_map(|(_, e)| match e {
            RunEvent::NodeFinished { node, .. } if !retry_nodes.contains(node) => {
                Some(node.clone())
            }
            _ => None,
        })
        .collect()
}

/// Checks `retry_nodes` (`resume_failed`): each must be a node whose outcome is `failed` or
/// `blocked` and none of whose downstream nodes appears in the log. Returns the ids.
fn check_retry_nodes(
    graph: &weft_core::WorkGraph,
    events: &[RunEvent],
    names: &[String],
) -> Result<Vec<String>, EngineError> {
    let mut refused = Vec::new();
    let mut out = Vec::new();
    for name in names.iter().filter(|n| !n.is_empty()) {
        match may_run_again(graph, events, name) {
            Ok(()) => out.push(name.clone()),
            Err(why) => refused.push(format!("--retry-nodes: {why}")),
        }
    }
    if refused.is_empty() {
        Ok(out)
    } else {
        Err(EngineError::Refused(refused))
    }
}

/// The failed or blocked nodes that may run again (`policy.resume: resume_failed`), in
/// declaration order; the others (a dependent already started) are left as they are.
fn failed_nodes(graph: &weft_core::WorkGraph, events: &[RunEvent]) -> Vec<String> {
    (0..graph.node_count())
        .filter(|&i| graph.is_live(i))
        .map(|i| graph.node(i).id.clone())
        .filter(|id| may_run_again(graph, events, id).is_ok())
        .collect()
}

/// Whether node `name` may run again: it settled `failed` or `blocked`, and no node
/// downstream of it (any edge kind, transitively) appears in the log.
fn may_run_again(
    graph: &weft_core::WorkGraph,
    events: &[RunEvent],
    name: &str,
) -> Result<(), String> {
    let skip = crate::events::superseded(events);
    {
        let Some(i) = graph.find(name) else {
            return Err(format!("no node `{name}`"));
        };
        let outcome = events.iter().enumerate().rev().find_map(|(k, e)| match e {
            RunEvent::NodeFinished { node, outcome, .. } if node == name && !skip.contains(&k) => {
                Some(*outcome)
            }
            _ => None,
        });
        if !matches!(outcome, Some(NodeOutcome::Failed | NodeOutcome::Blocked)) {
            return Err(format!(
                "`{name}` is not failed or blocked ({})",
                outcome.map_or("not finished", NodeOutcome::as_str)
            ));
        }
        // Every node downstream of `name`.
        let mut seen = vec![false; graph.node_count()];
        let mut stack = vec![i];
        while let Some(x) = stack.pop() {
            for &e in graph.outgoing(x) {
                let to = graph.edge(e).to;
                if !seen[to] {
                    seen[to] = true;
                    stack.push(to);
                }
            }
        }
        let started = events.iter().find_map(|e| {
            let node = match e {
                RunEvent::NodeWhen { node, .. }
                | RunEvent::NodeStarted { node, .. }
                | RunEvent::NodeFinished { node, .. } => node,
                _ => return None,
            };
            graph.find(node).filter(|&j| seen[j]).map(|_| node.clone())
        });
        if let Some(dep) = started {
            return Err(format!(
                "`{name}` cannot run again: its dependent `{dep}` has already started"
            ));
        }
    }
    Ok(())
}

/// Rebuilds a driver's state from its scope's log (`records` and their decoded `events`):
/// budgets, node outputs, attempts and errors, human waits, a pending cancel, and the
/// scheduler, keeping the actions not carried out yet (returned). Attempts started and
/// never finished are given up (`node_abandoned`) so they start again. Used for the root
/// scope and for each fragment instance a resumed run meets again (`fragment.rs`).
pub(super) async fn rebuild(
    d: &mut Driver<'_>,
    records: &[weft_store::EventRecord],
    events: &[RunEvent],
    retry_uncertain: bool,
) -> Result<VecDeque<Action>, EngineError> {
    let skip = crate::events::superseded(events);
    let cancel = crate::human::cancel_requested(events);
    // Replay, keeping the actions: those not carried out yet are carried out below.
    let mut queue = VecDeque::new();
    let mut open: BTreeMap<usize, u32> = BTreeMap::new();
    for (k, (event, record)) in events.iter().zip(records).enumerate() {
        if skip.contains(&k) {
            continue;
        }
        let find = |id: &str| {
            d.sched
                .graph()
                .find(id)
                .ok_or_else(|| internal(format!("event {}: unknown node `{id}`", record.seq)))
        };
        match event {
            RunEvent::NodeStarted { node, attempt, .. } => {
                let i = find(node)?;
                d.slots[i].started_at.get_or_insert(record.recorded_at_ms);
                open.insert(i, *attempt);
                d.slots[i].first_attempt = attempt + 1;
            }
            RunEvent::NodeReset { node } => {
                let i = find(node)?;
                d.outputs[i] = std::sync::Arc::new(Map::new());
                d.slots[i].attempts = 0;
                d.slots[i].error = None;
            }
            // A graph-level sign-off wait names no node (`signoff.rs`).
            RunEvent::GateWaiting(w) if super::signoff::criterion_of(&w.node).is_none() => {
                open.remove(&find(&w.node)?);
            }
            RunEvent::NodeAbandoned { node, attempt, .. } => {
                let i = find(node)?;
                d.journal.fold(i, event);
                open.remove(&i);
                d.slots[i].first_attempt = d.slots[i].first_attempt.max(attempt + 1);
            }
            RunEvent::ToolEffect(effect) => {
                // Logged under the node's instance address inside a fragment.
                let local = d
                    .scope
                    .path
                    .as_ref()
                    .and_then(|p| effect.node.strip_prefix(&format!("{p}.")))
                    .unwrap_or(&effect.node);
                d.journal.fold(find(local)?, event);
            }
            RunEvent::NodeWhen {
                node,
                error: Some(e),
                ..
            } => d.expression_errors.push(format!("when of `{node}`: {e}")),
            RunEvent::NodeFinished {
                node,
                outcome,
                outputs,
                attempts,
                error,
                warnings,
                ..
            } => {
                let i = find(node)?;
                open.remove(&i);
                // The node's `RT062`s failed the run under `on_expression_error: fail`.
                if super::expression_errors_fatal(&d.scope.doc) {
                    let raised = warnings
                        .iter()
                        .filter_map(|w| w.strip_prefix(super::RT062))
                        .chain(error.as_deref().and_then(|e| {
                            e.find(super::RT062).map(|k| &e[k + super::RT062.len()..])
                        }));
                    for e in raised {
                        d.expression_errors.push(format!("`{node}`: {e}"));
                    }
                }
                d.outputs[i] =
                    std::sync::Arc::new(outputs.as_object().cloned().unwrap_or_default());
                d.slots[i].attempts = *attempts;
                d.slots[i].duration = d.slots[i]
                    .started_at
                    .map(|s| (record.recorded_at_ms - s).max(0) as f64 / 1000.0);
                d.slots[i].error.clone_from(error);
                if *outcome == NodeOutcome::Succeeded && error.is_some() {
                    d.degraded = true;
                }
            }
            _ => {}
        }
        let mapped = event
            .to_scheduler(d.sched.graph())
            .map_err(|node| internal(format!("event {}: unknown node `{node}`", record.seq)))?;
        if event.is_inbox() && d.sched.is_finished() {
            continue; // too late to matter, as for the live driver and `replay`
        }
        if let Some(e) = mapped {
            queue.extend(crate::events::apply_logged(&mut d.sched, event, &e)?);
            if let RunEvent::GraphMutated { mutation, .. } = event {
                d.grow_to_graph(mutation)?;
            }
        }
    }
    // After the replay, so the graph holds the nodes mutations added too.
    {
        let graph = d.sched.graph();
        let kept = events
            .iter()
            .enumerate()
            .filter(|(k, _)| !skip.contains(k))
            .map(|(_, e)| e);
        // The root counts the run's totals, its fragment instances' events included; an
        // instance rebuilt later only restores its own nodes' attempts.
        let root = d.scope.path.is_none();
        d.budget.replay(kept, |id| graph.find(id), root);
        if root && let Some(resumed) = &d.scope.resumed {
            for records in resumed.scopes.values() {
                let events = decode(&mut records.clone())?;
                d.budget.replay_totals(&events);
            }
        }
    }
    let waits = crate::human::open_waits(events);
    {
        let graph = d.sched.graph();
        d.human.rebuild(waits, cancel.clone(), |id| graph.find(id));
        d.human
            .rebuild_answers(crate::human::criteria_answers(events), |id| graph.find(id));
        for (node, digest) in crate::human::tool_approvals(events) {
            if let Some(i) = graph.find(&node) {
                d.human.approve_tool(i, digest);
            }
        }
    }
    if cancel.is_some() {
        open.clear();
    }
    // A container started and never finished stays open in its attempt: it runs again at
    // once, its instances rebuilt from their events (`instance_waits.rs`).
    let containers: Vec<(usize, u32)> = open
        .iter()
        .filter(|(i, _)| matches!(d.jobs[**i].work, super::job::Work::Container(_)))
        .map(|(&i, &a)| (i, a))
        .collect();
    for (i, attempt) in containers {
        if d.keep_container_open(i, attempt) {
            open.remove(&i);
        }
    }
    let waiting: Vec<usize> = d
        .human
        .waits
        .keys()
        .chain(d.human.containers.keys())
        .copied()
        .collect();
    queue.retain(|a| match a {
        // A waiting node is resolved from the log (`human.rs`), never started again; a
        // cancelled run starts nothing.
        Action::Start { node } => {
            d.sched.state(*node) == NodeState::Running
                && !waiting.contains(node)
                && cancel.is_none()
        }
        Action::Skipped { .. } => false,
        _ => true,
    });
    // Uncertain nodes: started, never finished.
    let abandon: Vec<(usize, u32, &str)> = open
        .iter()
        .map(|(&i, &attempt)| {
            let reason = if retry_uncertain {
                "retry_uncertain"
            } else {
                "idempotent"
            };
            (i, attempt, reason)
        })
        .collect();
    for (i, attempt, reason) in abandon {
        let node = d.jobs[i].id.clone();
        let event = RunEvent::NodeAbandoned {
            node,
            attempt,
            reason: reason.to_string(),
        };
        d.append(&event).await?;
        d.journal.fold(i, &event);
    }
    Ok(queue)
}
