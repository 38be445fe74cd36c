//! The light path of a `map` item (`docs/engine.md` §3j, "Light items"): when the map's
//! body is one node whose work is pure (an expression `decision` with no `when`, gate,
//! `success` block or checkpoint) and nothing else can happen in an item (no fragment
//! `params`, `outputs`, `success` or edges; no graph budget), an item needs no driver or
//! scheduler of its own. Its node is decided in place, as the driver would decide it, and
//! the item writes **exactly the events its own driver would**, in one commit: its scope's
//! `run_started`, the node's `node_started` and `node_finished`, its scope's `run_finished`,
//! each built by the function the driver builds it with (`fragment::instance_started`,
//! `start::node_started`, `settle::node_finished`, `finish::run_finished`) and written
//! through the driver's writer ([`ScopeWriter`]). The log is the same as on the full path,
//! so replay, resume and the run record read it unchanged; only the cost differs.
//!
//! An item whose node does not end plainly (inputs that do not resolve, a failed or warned
//! decision) is handed to the full path before anything is written: its result is
//! recomputed there (the work is pure), and the full path logs it with its ladder, retries
//! and guards. So is an item already in the log (a resumed run rebuilds it from its
//! events), one whose append meets another writer's event (the inbox), and one that finds
//! another driver of the run writing (`write`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};
use weft_ags::model::Fields;

use super::budget::RunBudget;
use super::container::ContainerSpec;
use super::fallback::Finish;
use super::finish::run_finished;
use super::fragment::{InstanceEnd, instance_started};
use super::job::Job;
use super::node::{decide_pure, resolve_inputs_noting};
use super::preflight::{Plan, preflight};
use super::redact::loggable_inputs;
use super::settle::node_finished;
use super::start::node_started;
use super::write::ScopeWriter;
use super::{Driver, FinalStatus, RunOptions};
use crate::EngineError;
use crate::agent::Usage;
use crate::context::{NodeView, RunContext};
use crate::events::{NodeOutcome, RunEvent};

/// One map run's body, prepared once for every light item.
pub(super) struct LightBody {
    job: Arc<Job>,
    /// The fragment document (`attachments` of an item are bound from it).
    doc: Arc<Map<String, Value>>,
    /// The fragment's `context`, shared by every item's view.
    context: Arc<Value>,
    /// Every item's `run_started` and `run_finished`: the same events, only their
    /// `scope` differs. Kept as events for the observers and as payload text for the log.
    started: (RunEvent, String),
    finished: (RunEvent, String),
    /// The payload text of the node's `node_started` with no inputs (the same for every
    /// item of a node that declares none).
    node_started_plain: String,
    /// The payload texts of the `node_finished` events written so far, by event: a
    /// decision has a few labels, so its items' ends are a few distinct events.
    node_finished_texts: std::cell::RefCell<Vec<(RunEvent, Arc<str>)>>,
    /// The run's totals (every item's attempt counts against them, as on the full path).
    budget: RunBudget,
}

#[cfg(test)]
thread_local! {
    /// Test hook: every item takes the full path (the light path's log is compared with it).
    static FULL_PATH_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Test count: the items that ended on the light path.
    static LIGHT_ITEMS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// What became of an item offered to the light path.
pub(super) enum Light {
    /// It ran and ended: its events are in the log.
    Ended(Box<InstanceEnd>),
    /// It takes the full path; nothing was written. Its bindings are handed back.
    Full(Map<String, Value>),
}

impl LightBody {
    /// The light body of a map run over fragment `doc` (digest `digest`), when its items
    /// may take the light path. `plan` is the map's shared preflight of the fragment,
    /// filled here when still empty.
    pub(super) fn prepare(
        d: &Driver<'_>,
        options: &RunOptions,
        spec: &ContainerSpec,
        doc: &Arc<Map<String, Value>>,
        digest: &str,
        plan: &std::sync::OnceLock<Plan>,
    ) -> Option<LightBody> {
        #[cfg(test)]
        if FULL_PATH_ONLY.with(std::cell::Cell::get) {
            return None;
        }
        let one_node = doc
            .field("nodes")
            .and_then(Value::as_object)
            .is_some_and(|n| n.len() == 1);
        let no_edges = doc
            .field("edges")
            .is_none_or(|e| e.as_array().is_some_and(Vec::is_empty));
        if spec.declares_params()
            || !one_node
            || !no_edges
            || ["outputs", "success"].iter().any(|k| doc.contains_key(*k))
            || d.budget.has_limits()
        {
            return None;
        }
        if plan.get().is_none() {
            // As the first item's full path would prepare it.
            let mut child_opts = options.clone();
            child_opts.params = Map::new();
            child_opts.max_parallel = Some(d.sched.options().max_parallel);
            let prepared = preflight(doc, &child_opts, &d.agents, &Default::default()).ok()?;
            let _ = plan.set(prepared);
        }
        let plan = plan.get()?;
        let [job] = plan.jobs.as_slice() else {
            return None;
        };
        if !job.is_pure() || job.notify.is_some() || job.when.is_some() {
            return None;
        }
        // A fragment without params logs none (they are the enclosing scope's), and a map's
        // body logs no document of its own.
        let empty = || Value::Object(Map::new());
        let started = instance_started(digest, empty(), &plan.sched_options, Value::Null);
        // A fragment without `outputs` or `success` binds nothing and has no verdict.
        let finished = run_finished(
            FinalStatus::Succeeded,
            empty(),
            Vec::new(),
            Vec::new(),
            None,
        );
        let text = |e: &RunEvent| payload_text(e).ok();
        let node_started_plain = text(&first_started(job, empty()))?;
        Some(LightBody {
            job: Arc::clone(job),
            doc: Arc::clone(doc),
            context: Arc::new(
                doc.field("context")
                    .cloned()
                    .unwrap_or(Value::Object(Map::new())),
            ),
            started: (started.clone(), text(&started)?),
            finished: (finished.clone(), text(&finished)?),
            node_started_plain,
            node_finished_texts: std::cell::RefCell::default(),
            budget: d.budget.for_fragment(0),
        })
    }

    /// Runs the item at scope `path` with its `bindings` (`as`, `index_as`), or hands it
    /// to the full path with nothing written.
    pub(super) async fn run(
        &self,
        d: &Driver<'_>,
        path: &str,
        mut bindings: Map<String, Value>,
    ) -> Result<Light, EngineError> {
        let logged = d
            .scope
            .resumed
            .as_ref()
            .is_some_and(|r| r.scopes.contains_key(path));
        if logged {
            return Ok(Light::Full(bindings));
        }
        super::attachments::for_instance(&mut bindings, &d.scope.bindings, &self.doc);
        let job = &self.job;
        // The node's view when its driver starts it: itself, `running`, with no outputs.
        let mut ctx = RunContext {
            params: Arc::clone(&d.params),
            context: Arc::clone(&self.context),
            nodes: BTreeMap::from([(
                job.id.clone(),
                NodeView {
                    status: "running",
                    ..NodeView::default()
                },
            )]),
            inputs: None,
            outputs: None,
            bindings,
            graph: Arc::clone(&d.scope.graph),
            self_id: None,
            attempt: None,
            env: None,
        };
        ctx.enter_node(&job.id, 1, &job.environment);
        // An input that failed to evaluate, whether it fails the item or (under
        // `on_expression_error: false`) is noted as RT062, is the full driver's to record.
        let mut notes = Vec::new();
        let Ok(inputs) = resolve_inputs_noting(job, &ctx, &mut notes) else {
            return Ok(Light::Full(ctx.bindings));
        };
        if !notes.is_empty() {
            return Ok(Light::Full(ctx.bindings));
        }
        let logged_inputs = loggable_inputs(job, &inputs);
        ctx.inputs = Some(inputs);
        let result = decide_pure(job, &ctx);
        let plain = result.failure.is_none()
            && result.warnings.is_empty()
            && result.usage.is_zero()
            && result.verdict.is_none()
            && result.approval.is_none()
            && result.isolation.is_none()
            && !result.waiting
            && !result.success_pending;
        if !plain {
            return Ok(Light::Full(ctx.bindings));
        }
        let plain_inputs = logged_inputs.as_object().is_some_and(Map::is_empty);
        let node_started = first_started(job, logged_inputs);
        let started_text = if plain_inputs {
            std::borrow::Cow::Borrowed(self.node_started_plain.as_str())
        } else {
            std::borrow::Cow::Owned(payload_text(&node_started)?)
        };
        // The driver's `Finish` of a plain first attempt (no fallback ran), with no edges to
        // guard and nothing spent.
        let finish = Finish {
            outcome: NodeOutcome::Succeeded,
            outputs: result.outputs,
            verdict: result.verdict,
            attempts: 1,
            error: None,
            absorbed_by: None,
            absorbed_failure: None,
            escalate: false,
            warnings: result.warnings,
        };
        let (node_finished, outputs) =
            node_finished(job, finish, Vec::new(), Vec::new(), Usage::default);
        let finished_text = self.finished_text(&node_finished)?;
        let at = d.clock.now_ms();
        let events = [
            (&self.started.0, self.started.1.as_str()),
            (&node_started, &*started_text),
            (&node_finished, &*finished_text),
            (&self.finished.0, self.finished.1.as_str()),
        ];
        if !write(d, path, at, &events).await? {
            return Ok(Light::Full(std::mem::take(&mut ctx.bindings)));
        }
        // Counted as its driver's admission counts it (no graph limit: it always may run).
        self.budget
            .count_execution()
            .map_err(|r| EngineError::Internal(format!("a light map item: {r}")))?;
        #[cfg(test)]
        LIGHT_ITEMS.with(|n| n.set(n.get() + 1));
        // The item's final scope, as its driver's `context()` would give it.
        ctx.inputs = None;
        ctx.outputs = Some(Value::Object(Map::new()));
        ctx.nodes.insert(
            job.id.clone(),
            NodeView {
                status: NodeOutcome::Succeeded.as_str(),
                outputs: Arc::new(outputs),
                attempts: 1,
                duration_seconds: Some(0.0),
            },
        );
        Ok(Light::Ended(Box::new(InstanceEnd {
            status: FinalStatus::Succeeded,
            outputs: Value::Object(Map::new()),
            scope: ctx,
            reasons: Vec::new(),
        })))
    }
}

impl LightBody {
    /// The payload text of `event`, a `node_finished`: an event written before is not
    /// serialised again.
    fn finished_text(&self, event: &RunEvent) -> Result<Arc<str>, EngineError> {
        /// Distinct ends kept (a decision's labels); past it, each is serialised.
        const KEEP: usize = 16;
        let mut known = self.node_finished_texts.borrow_mut();
        if let Some((_, text)) = known.iter().find(|(e, _)| e == event) {
            return Ok(Arc::clone(text));
        }
        let text: Arc<str> = payload_text(event)?.into();
        if known.len() < KEEP {
            known.push((event.clone(), Arc::clone(&text)));
        }
        Ok(text)
    }
}

/// The first attempt's `node_started` of `job` with its loggable `inputs` (a pure node is
/// routed to no model).
fn first_started(job: &Job, inputs: Value) -> RunEvent {
    node_started(job, 1, inputs, None)
}

/// The stored payload text of `event` (its members but `kind`, no `scope`).
fn payload_text(event: &RunEvent) -> Result<String, EngineError> {
    Ok(event.to_new_event(0)?.payload.into_text())
}

/// Appends an item's events in one awaited commit at the run's shared end, in the run's
/// turn, through the writer of its scope, as its driver would. `false`: nothing was
/// written, and the item takes the full path: another writer appended first (an inbox
/// event, which the full path's driver absorbs), or another driver of the run holds the
/// turn. That driver is an instance of this map (or of a map around it) that this map's
/// own loop polls, and it does not while it waits here: waiting for the turn could wait for
/// ever, while the full path's driver waits for it as every instance does.
/// `stop_after_events` cuts the batch at its limit, so the log ends exactly there.
async fn write(
    d: &Driver<'_>,
    path: &str,
    at: i64,
    events: &[(&RunEvent, &str)],
) -> Result<bool, EngineError> {
    let Some(_turn) = d.scope.shared.try_turn() else {
        return Ok(false);
    };
    let writer = ScopeWriter::new(d, Some(path));
    let (room, cut) = writer.room(events.len());
    let events = &events[..room];
    let records: Vec<_> = events
        .iter()
        .map(|(event, text)| writer.record_of_text(event, text, at))
        .collect();
    if !records.is_empty() {
        let last = d.scope.shared.last_seq();
        let seqs = match d.store.append_async(&d.run_id, last, records).await {
            Err(e) if e.is_conflict() => return Ok(false),
            other => other?,
        };
        writer.written(events.iter().map(|(event, _)| *event), &seqs, at)?;
    }
    if cut {
        return Err(EngineError::Stopped(d.scope.shared.appended()));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use weft_store::{EphemeralStore, EventLog};

    /// A map over `xs` whose body is one decision on the item; the string item's decision
    /// fails (`x > 2` on a string), so it takes the full path.
    fn doc() -> Value {
        json!({
            "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/light",
            "params": {"xs": {"type": "array", "required": false, "default": [1, 3, "a", 4]}},
            "context": {"limit": 2},
            "entrypoints": ["m"],
            "nodes": {"m": {"type": "map", "description": "label each", "map": {
                "over": "params.xs", "as": "x", "max_items": 10, "max_parallel": 2,
                "on_item_failure": "continue",
                "collect": {"labels": "nodes.pick.outputs.decision", "seen": "x", "at": "index"},
                "body": {"entrypoints": ["pick"], "nodes": {"pick": {
                    "type": "decision", "description": "big or small",
                    "decision": {"evaluator": "expression", "branches": [
                        {"label": "big", "description": "over", "when": "x > context.limit"},
                        {"label": "small", "description": "else", "when": "nodes.pick.status == 'running'"}
                    ]}
                }}}
            }, "outputs": {"labels": {"type": "array"}, "seen": {"type": "array"},
                           "at": {"type": "array"}}}},
            "outputs": {"labels": {"type": "array", "from": "nodes.m.outputs.labels"}}
        })
    }

    /// The log of a run (kind and payload of each event), its report, and what an observer
    /// saw (seq and kind of each event).
    type Ran = (Vec<(String, Value)>, crate::RunReport, Vec<(u64, String)>);

    /// One run of [`doc`], all its items on the full path or not.
    fn run(full_path_only: bool) -> Ran {
        FULL_PATH_ONLY.with(|f| f.set(full_path_only));
        let store = EphemeralStore::new();
        let dir = tempfile::tempdir().unwrap();
        let observer = Arc::new(crate::observe::RecordingObserver::default());
        let options = RunOptions {
            project_dir: dir.path().to_path_buf(),
            run_id: Some("light".into()),
            observers: vec![observer.clone()],
            ..RunOptions::default()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let report = rt
            .block_on(crate::run_document(&doc(), &store, &options))
            .unwrap();
        FULL_PATH_ONLY.with(|f| f.set(false));
        let log = store
            .read("light", 1, 10_000)
            .unwrap()
            .into_iter()
            .map(|r| (r.kind, r.payload))
            .collect();
        (log, report, observer.seen())
    }

    #[test]
    fn light_items_log_exactly_what_their_own_drivers_would() {
        LIGHT_ITEMS.with(|n| n.set(0));
        let (light, light_report, light_seen) = run(false);
        // Three items ran light; the string item took the full path.
        assert_eq!(LIGHT_ITEMS.with(std::cell::Cell::get), 3);
        LIGHT_ITEMS.with(|n| n.set(0));
        let (full, full_report, full_seen) = run(true);
        assert_eq!(LIGHT_ITEMS.with(std::cell::Cell::get), 0);
        assert_eq!(light, full);
        // The observers see every event of the log once, in order, on either path.
        assert_eq!(light_seen, full_seen);
        assert_eq!(light_seen.len(), light.len());
        assert_eq!(light_report.outputs, full_report.outputs);
        assert_eq!(light_report.status, full_report.status);
        assert_eq!(
            light_report.outputs["labels"],
            json!(["small", "big", null, "big"])
        );
    }
}
