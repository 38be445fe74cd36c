//! The AGS run record (`application/vnd.agentic-graph-run+json; version=1.0`), built purely
//! from a run's stored events, its run row and the graph document recorded in
//! `run_started` — never from a live driver's memory, so any process that can read the
//! store can produce it and two builds of one log are equal. Field by field derivation:
//! `docs/engine.md` §5.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use weft_ags::model::{Fields, obj_of};
use weft_core::{EdgeKind, NodeState};
use weft_store::{EventRecord, RunRecord, RunStatus};

use crate::EngineError;
use crate::events::{NodeOutcome, RunEvent, recorded_options, replay_decoded};
pub use crate::run_log::read_log;
pub use crate::timefmt::rfc3339_ms;

mod compensation;
mod document;
mod human;
mod log;
mod parts;
mod scope;
mod signoff;
mod text;
use crate::agent::{Route, Usage};
use document::DocumentParts;
use log::DecodedLog;
use parts::{Spent, attempts, criteria_results, usage};
pub use scope::{child_record_of, child_run_id};
use text::Items;
pub use text::RecordText;

/// The media type of the record.
pub const MEDIA_TYPE: &str = "application/vnd.agentic-graph-run+json; version=1.0";

/// What this slice supports, stated for `harness.supported_features` (the `x-` keys it
/// understands in a document among them: SPEC §19's extension negotiation). Only what the
/// engine really does: `exec` task nodes, expression decisions, gates, human checkpoints
/// and criteria, takeover, escalation to a human, suspend and cancel, the three
/// edge kinds, joins, `when`, retries (backoff, jitter, feedback), fallbacks, `on_exhausted`,
/// `timeout_action`, success criteria, loops, maps, subgraphs (`ref` integrity checked),
/// compensation, graph outputs, the durable log and resume.
const SUPPORTED_FEATURES: &[&str] = &[
    "root-scope-task-nodes",
    "x-weft-exec",
    "x-weft-forbid-timeout-approve",
    "sequence-edges",
    "conditional-edges",
    "on-failure-edges",
    "joins",
    "when",
    "expression-decisions",
    "notify-gates",
    "blocking-gates",
    "human-checkpoints",
    "human-criteria",
    "human-takeover",
    "escalation-to-human",
    "awaiting-human-suspend",
    "cancel",
    "retry",
    "retry-backoff",
    "retry-feedback",
    "fallback",
    "on-exhausted",
    "timeout-action",
    "success-criteria",
    "external-criteria",
    "llm-judge-criteria",
    "compensation",
    "loop",
    "map",
    "subgraph-use",
    "subgraph-inline",
    "subgraph-ref",
    "ref-integrity",
    "attachments",
    "checkpoint-resume",
    "graph-outputs",
    "graph-success",
    "durable-event-log",
    "agent-port",
    "replay-agent",
    "decision-by-agent",
    "tier-routing",
    "budgets",
    "typed-inputs-outputs",
    "param-enum-schema",
    "replay",
    "run-record",
];

/// What the log says about one node.
#[derive(Default)]
struct NodeLog<'a> {
    /// (attempt number, started at ms), in log order.
    starts: Vec<(u32, i64)>,
    /// `node_started.routed`, one per start.
    routes: Vec<Option<Route>>,
    /// The logged inputs (redacted ones never logged).
    inputs: Option<Value>,
    when: Option<(bool, Option<String>)>,
    /// The `node_finished` event and its time.
    finished: Option<(&'a RunEvent, i64)>,
}

/// Builds the run record of `run` from its whole log `records` (in seq order). The graph is
/// the document stored in `run_started`.
pub fn build_record(run: &RunRecord, records: &[EventRecord]) -> Result<Value, EngineError> {
    Ok(build(run, DecodedLog::of(records)?, false)?.into_value())
}

/// [`build_record`] as the text the record file holds ([`RecordText::write_pretty`]): the
/// node runs and edges rendered as they are built, never all held as values.
pub fn build_record_text(
    run: &RunRecord,
    records: &[EventRecord],
) -> Result<RecordText, EngineError> {
    record_text(run, DecodedLog::of(records)?)
}

/// [`build_record_text`] of a decoded log.
fn record_text(run: &RunRecord, log: DecodedLog<'_>) -> Result<RecordText, EngineError> {
    let built = build(run, log, true)?;
    let texts = |items: Items| match items {
        Items::Texts(list) => list,
        // `build` was asked for texts.
        Items::Values(list) => list
            .iter()
            .map(|v| v.to_string().into_boxed_str())
            .collect(),
    };
    Ok(RecordText {
        head: built.head,
        nodes: texts(built.nodes),
        edges: texts(built.edges),
        tail: built.tail,
    })
}

/// A record being built: the members before `nodes`, the node runs, the edges, the members
/// after `edges_taken`.
struct Built {
    head: Map<String, Value>,
    nodes: Items,
    edges: Items,
    tail: Map<String, Value>,
}

impl Built {
    /// The record as one value.
    fn into_value(self) -> Value {
        let mut rec = self.head;
        rec.insert("nodes".into(), self.nodes.into_value());
        rec.insert("edges_taken".into(), self.edges.into_value());
        rec.extend(self.tail);
        Value::Object(rec)
    }
}

/// The record of `run` from its decoded log, its items as values or (`texts`) as rendered
/// text.
fn build(run: &RunRecord, log: DecodedLog<'_>, texts: bool) -> Result<Built, EngineError> {
    // The root scope's events are decoded once (`log.rs`): the fold below, the replay, the
    // run view and the sign-off listing share them; fragment instances' nodes are added
    // from their records (`scope.rs`).
    let DecodedLog {
        all,
        events,
        seqs,
        graph,
    } = log;
    let all = &*all;
    let Some((started @ RunEvent::RunStarted { params, .. }, started_ms)) = events.first() else {
        return Err(EngineError::Internal(format!(
            "run {} has no run_started event",
            run.id
        )));
    };
    // The run's totals are the run view's: every scope instance's attempts and spend, each
    // unit once (`crate::view`), as `weft status` and the progress display show them. Taken
    // first, so the view (a state per node) is freed before the record's items are built.
    let (run_usage, executions) = {
        let view = run_view(&run.id, all, &seqs, &events);
        let executions = usize::try_from(view.executions).unwrap_or(usize::MAX);
        (view.usage(), executions)
    };
    let DocumentParts {
        members: root,
        graph: planned,
        nodes: declared,
        scoped,
    } = {
        let doc = graph.as_object().ok_or_else(|| {
            EngineError::Internal(format!(
                "run {} predates stored graph documents: no record can be built",
                run.id
            ))
        })?;
        // The stored document must be the one the run row names, or the record would
        // describe another graph than the one that ran.
        let digest = weft_ags::digest::graph_digest(&graph);
        if digest != run.graph_digest {
            return Err(EngineError::Internal(format!(
                "run {}: the stored graph digests to {digest}, the run row says {}",
                run.id, run.graph_digest
            )));
        }
        DocumentParts::of(doc, all)?
    };
    // Not held while the node runs are built (`document.rs`).
    drop(graph);
    let root = &root;
    let options = recorded_options(started)
        .ok_or_else(|| EngineError::Internal("run_started without options".into()))?;
    let sched = replay_decoded(
        planned,
        options,
        seqs.iter().copied().zip(events.iter().map(|(e, _)| e)),
    )
    .map_err(|e| EngineError::Internal(format!("replay: {e}")))?;
    let g = sched.graph();

    let mut logs: BTreeMap<&str, NodeLog<'_>> = BTreeMap::new();
    let mut finished_run = None;
    let mut diagnostics = Vec::new();
    let mut human_events = human::HumanEvents::default();
    let mut compensations = compensation::Compensations::default();
    // Per node, the patches of its isolated attempts (`node_patch`), in log order.
    let mut patches: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    // Per node, its journalled side effects (`tool_effect`), in log order.
    let mut effects: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    // Per node, the tool calls its attempts were refused or held (`policy_decision` other
    // than allow), in log order: a node that succeeded after denials says so.
    let mut refusals: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for (e, at) in &events {
        human_events.take(e, *at);
        compensations.take(e, *at);
        match e {
            RunEvent::NodeStarted {
                node,
                attempt,
                inputs,
                routed,
                ..
            } => {
                let l = logs.entry(node).or_default();
                l.starts.push((*attempt, *at));
                l.routes.push(routed.clone());
                if inputs.is_some() {
                    l.inputs.clone_from(inputs);
                }
            }
            RunEvent::NodeWhen { node, value, error } => {
                logs.entry(node).or_default().when = Some((*value, error.clone()));
            }
            RunEvent::NodeFinished { node, .. } => {
                logs.entry(node).or_default().finished = Some((e, *at));
            }
            RunEvent::RunFinished { .. } => finished_run = Some((e, *at)),
            RunEvent::NodeReset { node } => {
                logs.entry(node).or_default().finished = None;
                // A reset after the end reopened the run (`events::superseded`).
                finished_run = None;
            }
            RunEvent::RunStarted { warnings, .. } => {
                for w in warnings {
                    if let Some(rest) = w.strip_prefix("RT061: ") {
                        diagnostics.push(json!({
                            "code": "RT061", "severity": "warning", "message": rest,
                            "at": rfc3339_ms(*at),
                        }));
                    }
                }
            }
            RunEvent::NodeAbandoned { .. }
            | RunEvent::AttemptSpent { .. }
            | RunEvent::GateNotified { .. }
            | RunEvent::GateWaiting(_)
            | RunEvent::HumanDecision(_)
            | RunEvent::HumanTimeout { .. }
            | RunEvent::CancelRequested { .. }
            // The states it changed come from the replay (`record/scope.rs`).
            | RunEvent::GraphMutated { .. }
            | RunEvent::CompensationStarted { .. }
            | RunEvent::CompensationFinished { .. } => {}
            RunEvent::NodePatch {
                node,
                attempt,
                applied,
                files,
                error,
                ..
            } => {
                let mut p = json!({"attempt": attempt, "applied": applied, "files": files,
                    "at": rfc3339_ms(*at)});
                if let Some(e) = error {
                    p["error"] = json!(e);
                }
                patches.entry(node).or_default().push(p);
            }
            RunEvent::PolicyDecision(d) => {
                if d.decision != "allow" {
                    refusals.entry(&d.node).or_default().push(json!({
                        "attempt": d.attempt, "tool": d.tool, "action": d.action,
                        "decision": d.decision, "rule": d.rule, "reason": d.reason,
                        "at": rfc3339_ms(*at),
                    }));
                }
            }
            RunEvent::ToolEffect(effect) => {
                effects.entry(&effect.node).or_default().push(json!({
                    "attempt": effect.attempt, "key": effect.key, "tool": effect.tool,
                    "arguments": effect.arguments, "result": effect.result,
                    "at": rfc3339_ms(*at),
                }));
            }
        }
    }

    // The nodes mutations added have their AGS object in their `graph_mutated`.
    let added = crate::graph_change::added_objects(
        g,
        events.iter().filter_map(|(e, _)| match e {
            RunEvent::GraphMutated { mutation, .. } => Some(mutation),
            _ => None,
        }),
    );
    let expression_errors_fatal = obj_of(root, "policy")
        .and_then(|p| p.get("on_expression_error"))
        .and_then(Value::as_str)
        != Some("false");
    // Container counts are set on each node run as it is built (`scope::Instances`).
    let instances = scope::Instances::of(all);
    let mut nodes = Items::new(texts);
    let mut edges_taken = Items::new(texts);
    let empty = NodeLog::default();
    for i in 0..g.node_count() {
        let id = g.node(i).id.as_str();
        // Declared in the document, or added by a mutation.
        let added_spec = added.get(id).copied();
        let (ty, outputs_declared) = match declared.get(i) {
            Some(d) => (&*d.ty, d.outputs.as_ref()),
            None => (
                added_spec
                    .and_then(|s| s.get("type"))
                    .and_then(Value::as_str)
                    .unwrap_or("task"),
                added_spec.and_then(|s| obj_of(s, "outputs")),
            ),
        };
        let log = logs.get(id).unwrap_or(&empty);
        let status = state_name(sched.state(i));
        let mut spent_total = Usage::default();
        let mut n = Map::new();
        n.insert("node_id".into(), json!(id));
        n.insert("type".into(), json!(ty));
        n.insert("status".into(), json!(status));
        if status == "skipped" {
            n.insert("skip_reason".into(), json!(skip_reason(log)));
        }
        // With `on_expression_error: false` a failed `when` is a warning the run goes on
        // past; with `fail` the `run_finished` reasons carry it (below).
        if let Some((_, Some(err))) = &log.when
            && !expression_errors_fatal
        {
            diagnostics.push(json!({
                "code": "RT062", "severity": "warning", "node_id": id,
                "message": format!("when evaluated as false: {err}"),
            }));
        }
        if let Some(&(_, at)) = log.starts.first() {
            n.insert("started_at".into(), json!(rfc3339_ms(at)));
        }
        if let Some(i) = log.inputs.as_ref().filter(|i| i.is_object()) {
            n.insert("inputs".into(), i.clone());
        }
        if let Some((
            RunEvent::NodeFinished {
                outcome,
                outputs,
                redacted: logged_redacted,
                verdict,
                guards,
                error,
                absorbed_by,
                usage: node_usage,
                attempt_usage,
                warnings,
                ..
            },
            at,
        )) = &log.finished
        {
            spent_total = node_usage.unwrap_or_default();
            // Every RT code a node raised is a diagnostic: its warnings (`RT021`, `RT022`,
            // `RT062`, ...) and the code its error names. An `RT062` is an error when it
            // failed the run (`on_expression_error: fail`).
            for w in warnings {
                if let Some((code, rest)) = rt_code(w) {
                    let severity = if code == "RT062" && expression_errors_fatal {
                        "error"
                    } else {
                        "warning"
                    };
                    diagnostics.push(json!({
                        "code": code, "severity": severity, "node_id": id,
                        "message": rest, "at": rfc3339_ms(*at),
                    }));
                }
            }
            if let Some(e) = error.as_deref()
                && let Some((code, _)) = e.match_indices("RT").find_map(|(k, _)| rt_code(&e[k..]))
            {
                diagnostics.push(json!({
                    "code": code, "severity": "error", "node_id": id,
                    "message": e, "at": rfc3339_ms(*at),
                }));
            }
            n.insert("finished_at".into(), json!(rfc3339_ms(*at)));
            let (kept, redacted) = redact(outputs, logged_redacted, outputs_declared);
            if !kept.is_empty() {
                n.insert("outputs".into(), Value::Object(kept));
            }
            if !redacted.is_empty() {
                n.insert("x-weft-redacted-outputs".into(), json!(redacted));
            }
            if let Some(rung) = absorbed_by {
                n.insert("x-weft-absorbed-by".into(), json!(rung));
            }
            n.insert(
                "attempts".into(),
                attempts(
                    &log.starts,
                    *outcome,
                    error.as_deref(),
                    verdict,
                    *at,
                    &Spent {
                        routes: &log.routes,
                        usage: attempt_usage,
                    },
                ),
            );
            if let Some(e) = error
                .as_deref()
                .filter(|e| e.starts_with("output_missing:"))
            {
                diagnostics.push(json!({
                    "code": "RT033", "severity": "error", "node_id": id,
                    "message": e, "at": rfc3339_ms(*at),
                }));
            }
            if *outcome == NodeOutcome::Succeeded
                && let Some(e) = error
            {
                diagnostics.push(json!({
                    "code": "RT042", "severity": "warning", "node_id": id,
                    "message": format!("succeeded degraded after exhausting its attempts: {e}"),
                    "at": rfc3339_ms(*at),
                }));
            }
            edges_taken.extend(edges_from(g, i, *outcome, guards, Some(*at)));
            // `decision` (the chosen label) and `fallback_used` (the rung that absorbed
            // the failure) on the node runs they apply to (DIGEST §6.9).
            if ty == "decision"
                && let Some(label) = outputs.get("decision").and_then(Value::as_str)
            {
                n.insert("decision".into(), json!(label));
            }
            if let Some(strategy) = absorbed_by
                .as_deref()
                .and_then(|r| r.strip_prefix("fallback["))
                .and_then(|r| r.split_once("]:"))
                .map(|(_, s)| s)
            {
                n.insert("fallback_used".into(), json!(strategy));
            }
        } else if matches!(status, "skipped" | "cancelled") {
            // A node skipped without running resolves its outgoing edges too: each is
            // inactive (DIGEST §6.3, the bottom row), and is recorded.
            let at = finished_run.as_ref().map(|(_, at)| *at);
            edges_taken.extend(edges_from(g, i, NodeOutcome::Skipped, &[], at));
        }
        if let Some(h) = human_events.by_node.get(id) {
            n.insert("human_events".into(), json!(h));
        }
        let executions = log.starts.len();
        if let Some(p) = patches.get(id) {
            n.insert("x-weft-patches".into(), json!(p));
        }
        if let Some(r) = refusals.get(id) {
            n.insert("x-weft-refused_calls".into(), json!(r));
        }
        if let Some(e) = effects.get(id) {
            n.insert("x-weft-effects".into(), json!(e));
        }
        // A compensation's spend is in the run's totals (`view`), not the node's.
        compensations.annotate(id, &mut n);
        n.insert("usage".into(), usage(&spent_total, executions, None));
        let mut n = Value::Object(n);
        instances.annotate(&mut n, &run.id);
        nodes.push(n);
    }

    let mut rec = Map::new();
    rec.insert("ags_version".into(), json!("1.0"));
    rec.insert("kind".into(), json!("AgenticGraphRun"));
    rec.insert("run_id".into(), json!(run.id));
    let graph_id = root.field("id").and_then(Value::as_str).unwrap_or("");
    rec.insert("graph_id".into(), json!(graph_id));
    if let Some(v) = root.field("version").and_then(Value::as_str) {
        rec.insert("graph_version".into(), json!(v));
    }
    rec.insert("graph_digest".into(), json!(run.graph_digest));
    rec.insert(
        "harness".into(),
        json!({
            "name": "weft",
            "version": env!("CARGO_PKG_VERSION"),
            "conformance_level": CONFORMANCE_LEVEL,
            "supported_features": SUPPORTED_FEATURES,
        }),
    );
    let status = match finished_run {
        Some((RunEvent::RunFinished { status, .. }, _)) => status.clone(),
        // Not finished, nothing running, a node waiting on a person: suspended on a human.
        _ if (0..g.node_count()).any(|i| sched.state(i) == weft_core::NodeState::AwaitingHuman)
            && !(0..g.node_count()).any(|i| sched.state(i) == weft_core::NodeState::Running) =>
        {
            "awaiting_human".into()
        }
        // Suspended on a person inside a loop, map or subgraph (its container `running`).
        _ if run.status == RunStatus::Suspended && scope::instance_waits_open(all) => {
            "awaiting_human".into()
        }
        // Every node ended, the graph's sign-off awaited (`run/signoff.rs`).
        _ if awaits_signoff(&events) => "awaiting_human".into(),
        _ => match run.status {
            RunStatus::Failed => "failed".into(),
            RunStatus::Cancelled => "cancelled".into(),
            RunStatus::Succeeded => "succeeded".into(),
            RunStatus::Pending | RunStatus::Running | RunStatus::Suspended => "running".into(),
        },
    };
    rec.insert("status".into(), json!(status));
    rec.insert("started_at".into(), json!(rfc3339_ms(*started_ms)));
    let mut wall = None;
    if let Some((
        RunEvent::RunFinished {
            outputs,
            redacted: logged_redacted,
            reasons,
            graph_verdict,
            ..
        },
        at,
    )) = finished_run
    {
        rec.insert("finished_at".into(), json!(rfc3339_ms(at)));
        wall = Some((at - started_ms).max(0));
        if let Some(v) = graph_verdict {
            rec.insert("graph_success".into(), criteria_results(v));
        }
        let (kept, redacted) = redact(outputs, logged_redacted, obj_of(root, "outputs"));
        rec.insert("outputs".into(), Value::Object(kept));
        if !redacted.is_empty() {
            rec.insert("x-weft-redacted-outputs".into(), json!(redacted));
        }
        for r in reasons {
            if let Some(rest) = r.strip_prefix("RT041: ") {
                diagnostics.push(json!({
                    "code": "RT041", "severity": "warning", "message": rest,
                    "pointer": "/outputs", "at": rfc3339_ms(at),
                }));
            }
            if let Some(rest) = r.strip_prefix("RT061: ") {
                diagnostics.push(json!({
                    "code": "RT061", "severity": "error", "message": rest,
                    "at": rfc3339_ms(at),
                }));
            }
            if let Some(rest) = r.strip_prefix("expression error: ") {
                diagnostics.push(json!({
                    "code": "RT062", "severity": "error", "message": rest,
                    "at": rfc3339_ms(at),
                }));
            }
        }
    }
    if params.is_object() {
        rec.insert("params".into(), params.clone());
    }
    if let Some(c) = root.field("context").filter(|c| c.is_object()) {
        rec.insert("context".into(), c.clone());
    }
    rec.insert("usage".into(), usage(&run_usage, executions, wall));
    diagnostics.extend(compensations.diagnostics().cloned());
    diagnostics.extend(scope::scoped_diagnostics(all, expression_errors_fatal));
    // One diagnostic per (code, node, instance, message): a code logged twice is listed once.
    let mut seen = std::collections::HashSet::new();
    diagnostics.retain(|d| {
        seen.insert((
            d["code"].clone(),
            d["node_id"].clone(),
            d[SCOPE_PATH].clone(),
            d["message"].clone(),
        ))
    });
    if !diagnostics.is_empty() {
        rec.insert("diagnostics".into(), Value::Array(diagnostics));
    }
    nodes.extend(scoped.into_iter().map(|mut n| {
        instances.annotate(&mut n, &run.id);
        n
    }));
    let mut tail = Map::new();
    if let Some(list) = compensations.listing() {
        tail.insert("x-weft-compensations".into(), list);
    }
    if let Some(list) = signoff::listing(&events) {
        tail.insert("x-weft-signoffs".into(), list);
    }
    Ok(Built {
        head: rec,
        nodes,
        edges: edges_taken,
        tail,
    })
}

/// [`crate::view::RunView::of_records`] of a log: the fragment instances' records of `all`
/// (its root records, if any, are skipped) and the root's events `root` (already decoded,
/// at `seqs`), applied in log order. Their `run_started` has no document, so the view
/// lists only the root nodes the log names: the record reads its totals (executions,
/// spend), never its node list.
fn run_view(
    run_id: &str,
    all: &[EventRecord],
    seqs: &[u64],
    root: &[(RunEvent, i64)],
) -> crate::view::RunView {
    let mut view = crate::view::RunView::new(run_id);
    let mut root = seqs.iter().zip(root).peekable();
    for r in all.iter().filter(|r| crate::run_log::scope_of(r).is_some()) {
        while let Some((_, (event, at))) = root.next_if(|(seq, _)| **seq < r.seq) {
            view.apply(None, event, *at);
        }
        view.apply_record(r);
    }
    for (_, (event, at)) in root {
        view.apply(None, event, *at);
    }
    view
}

/// The `edges_taken` entries of a settled node: each outgoing edge with whether the outcome
/// and the logged guard made it active (the scheduler's rule, `weft_core::EdgeKind`).
fn edges_from(
    g: &weft_core::WorkGraph,
    node: usize,
    outcome: NodeOutcome,
    guards: &[(usize, bool)],
    at: Option<i64>,
) -> Vec<Value> {
    let succeeded = outcome == NodeOutcome::Succeeded;
    let failed = matches!(outcome, NodeOutcome::Failed | NodeOutcome::Blocked);
    g.outgoing(node)
        .iter()
        .map(|&e| {
            let edge = g.edge(e);
            let guard = guards.iter().find(|(x, _)| *x == e).map(|&(_, v)| v);
            let (kind, active) = match edge.kind {
                EdgeKind::Sequence => ("sequence", succeeded),
                EdgeKind::Conditional => ("conditional", succeeded && guard == Some(true)),
                EdgeKind::OnFailure => (
                    "on_failure",
                    failed && (!edge.guarded || guard == Some(true)),
                ),
            };
            let mut t = Map::new();
            t.insert("from".into(), json!(g.node(node).id));
            t.insert("to".into(), json!(g.node(edge.to).id));
            t.insert("kind".into(), json!(kind));
            t.insert("active".into(), json!(active));
            if edge.guarded {
                t.insert("when_result".into(), json!(guard));
            }
            if let Some(at) = at {
                t.insert("at".into(), json!(rfc3339_ms(at)));
            }
            Value::Object(t)
        })
        .collect()
}

/// Why a skipped node was skipped, from what the log says about it.
fn skip_reason(log: &NodeLog<'_>) -> String {
    match (&log.when, &log.finished) {
        (_, Some((RunEvent::NodeFinished { error: Some(e), .. }, _))) => {
            format!("on_exhausted: skip ({e})")
        }
        (Some((false, Some(err))), _) => format!("when could not be evaluated: {err}"),
        (Some((false, None)), _) => "when evaluated to false".into(),
        _ => "no incoming edge became active".into(),
    }
}

/// The outputs without those declared `redact: true`, and the names left out: those the
/// engine already kept out of the log (`logged`) and any a log written before it did so
/// still holds.
fn redact(
    outputs: &Value,
    logged: &[String],
    specs: Option<&Map<String, Value>>,
) -> (Map<String, Value>, Vec<String>) {
    let mut kept = Map::new();
    let mut redacted = logged.to_vec();
    let secret = |name: &str| {
        specs
            .and_then(|s| s.get(name))
            .and_then(|s| s.get("redact"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    if let Value::Object(m) = outputs {
        for (k, v) in m {
            if secret(k) {
                redacted.push(k.clone());
            } else {
                kept.insert(k.clone(), v.clone());
            }
        }
    }
    (kept, redacted)
}

/// The name of a node state in the record and the run's report.
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

/// Whether the root log's last open person wait is a graph-level sign-off.
fn awaits_signoff(events: &[(RunEvent, i64)]) -> bool {
    crate::human::open_waits(events.iter().map(|(e, _)| e))
        .iter()
        .any(|w| w.is_open() && crate::wait::criterion_of(&w.waiting.node).is_some())
}

/// The record of a stored run: its row and log read from `store`.
pub fn record_of(store: &dyn weft_store::RunStore, run_id: &str) -> Result<Value, EngineError> {
    let run = store
        .get_run(run_id)?
        .ok_or_else(|| EngineError::UnknownRun(run_id.to_string()))?;
    let built = build(&run, DecodedLog::read(store, run_id)?, false)?;
    Ok(built.into_value())
}

/// [`record_of`] as the text of the record file ([`build_record_text`]).
pub fn record_text_of(
    store: &dyn weft_store::RunStore,
    run_id: &str,
) -> Result<RecordText, EngineError> {
    let run = store
        .get_run(run_id)?
        .ok_or_else(|| EngineError::UnknownRun(run_id.to_string()))?;
    record_text(&run, DecodedLog::read(store, run_id)?)
}

/// The record's `usage` object of a run view's totals (no wall clock): what `weft status
/// --json` shows beside the record, in the same shape.
pub fn usage_of(view: &crate::view::RunView) -> Value {
    usage(
        &view.usage(),
        usize::try_from(view.executions).unwrap_or(usize::MAX),
        None,
    )
}

/// The AGS conformance level the run record claims: the level `conformance/weft.json`
/// proves (its test fails when the two disagree).
pub const CONFORMANCE_LEVEL: u8 = 3;

/// Features above [`CONFORMANCE_LEVEL`] the engine supports all the same (names of
/// `weft_ags::levels`): a graph using them is not refused for them. Empty at level 3, the
/// highest: every feature the detector knows is within it.
pub const SUPPORTED_ABOVE_LEVEL: &[&str] = &[];

/// Whether the run's document asks for its record to be emitted (`policy.record_run`,
/// default `true`), read from the stored document in `run_started`.
pub fn asks_for_record(
    store: &dyn weft_store::RunStore,
    run_id: &str,
) -> Result<bool, EngineError> {
    let first = store.read(run_id, 1, 1)?;
    Ok(first
        .first()
        .and_then(|r| r.payload.get("graph"))
        .and_then(|g| g.get("policy"))
        .and_then(|p| p.get("record_run"))
        .and_then(Value::as_bool)
        .unwrap_or(true))
}

/// The member of a diagnostic raised inside a fragment instance that names the node's
/// instance (`m[2].pick`): the schema's `node_id` is the node's own id.
const SCOPE_PATH: &str = "x-weft-scope_path";

/// The `RTnnn` code a message starts with (`"RT021: ..."`) and the rest of it.
fn rt_code(message: &str) -> Option<(&str, &str)> {
    let (code, rest) = message.split_once(": ")?;
    let digits = code.strip_prefix("RT")?;
    (digits.len() == 3 && digits.bytes().all(|b| b.is_ascii_digit())).then_some((code, rest))
}
