//! The run record's nodes inside fragment instances (`map` items, `loop` iterations): one
//! `node_run` per node of each instance, with its `scope_path` (`fix_loop[2].run_tests`)
//! and its `human_events` (gates, checkpoints, decisions inside the instance), built from
//! the instance's own events (`scope` member) replayed over its fragment; and
//! the containers' `items` / `iterations` counts.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use weft_ags::model::{Fields, obj_of, str_of};
use weft_store::EventRecord;

use super::parts::{Spent, attempts};
use super::rfc3339_ms;
use super::state_name;
use crate::EngineError;
use crate::adapter::adapt_root;
use crate::events::{RunEvent, recorded_options, replay_scope};
use crate::run_log::{SCOPE_MEMBER, fragment_at, logged_graphs, scope_of};

/// The RT codes raised by nodes inside fragment instances (their `node_finished`
/// warnings), as record diagnostics naming the instance, so the record lists every code the
/// run raised wherever it was raised (DIGEST §6.9). An `RT062` is an error when
/// `on_expression_error: fail` made it fail the run.
pub(super) fn scoped_diagnostics(
    records: &[EventRecord],
    expression_errors_fatal: bool,
) -> Vec<Value> {
    let mut out = Vec::new();
    for r in records.iter().filter(|r| r.kind == "node_finished") {
        let Some(path) = scope_of(r) else { continue };
        let Ok(RunEvent::NodeFinished { node, warnings, .. }) = RunEvent::from_record(r) else {
            continue;
        };
        for w in &warnings {
            let Some((code, rest)) = super::rt_code(w) else {
                continue;
            };
            let severity = if code == "RT062" && expression_errors_fatal {
                "error"
            } else {
                "warning"
            };
            out.push(json!({
                "code": code, "severity": severity, "node_id": node, "message": rest,
                "at": rfc3339_ms(r.recorded_at_ms), super::SCOPE_PATH: format!("{path}.{node}"),
            }));
        }
    }
    out
}

/// The node runs of every fragment instance in the log, instance by instance in the order
/// they opened, nodes in declaration order.
pub(super) fn scoped_nodes(
    root: &Map<String, Value>,
    records: &[EventRecord],
) -> Result<Vec<Value>, EngineError> {
    let mut order: Vec<&str> = Vec::new();
    let mut by_scope: BTreeMap<&str, Vec<EventRecord>> = BTreeMap::new();
    for r in records {
        if let Some(path) = scope_of(r) {
            let list = by_scope.entry(path).or_default();
            if list.is_empty() {
                order.push(path);
            }
            list.push(r.clone());
        }
    }
    let logged = logged_graphs(records);
    let mut out = Vec::new();
    for path in order {
        let scoped = &by_scope[path];
        let fragment = fragment_at(root, path, &logged).ok_or_else(|| {
            EngineError::Internal(format!("scope `{path}` names no fragment of the graph"))
        })?;
        out.extend(instance_nodes(path, fragment, scoped)?);
    }
    Ok(out)
}

/// The node runs of one instance.
fn instance_nodes(
    path: &str,
    fragment: &Map<String, Value>,
    records: &[EventRecord],
) -> Result<Vec<Value>, EngineError> {
    let internal = |e: String| EngineError::Internal(format!("scope `{path}`: {e}"));
    let events = records
        .iter()
        .map(|r| RunEvent::from_record(r).map(|e| (e, r.recorded_at_ms)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| internal(e.to_string()))?;
    let options = events
        .first()
        .and_then(|(e, _)| recorded_options(e))
        .ok_or_else(|| internal("no run_started".into()))?;
    let adapted = adapt_root(fragment).map_err(|e| internal(e.to_string()))?;
    let sched =
        replay_scope(adapted.graph, options, records).map_err(|e| internal(e.to_string()))?;
    let g = sched.graph();
    let specs = obj_of(fragment, "nodes");
    // The instance's gates, checkpoints and decisions, per node, as the root's.
    let mut human_events = super::human::HumanEvents::default();
    for (e, at) in &events {
        human_events.take(e, *at);
    }
    let mut nodes = Vec::new();
    for i in 0..g.node_count() {
        let id = g.node(i).id.as_str();
        let mut starts = Vec::new();
        let mut routes = Vec::new();
        let mut inputs = None;
        let mut finished = None;
        for (e, at) in &events {
            match e {
                RunEvent::NodeStarted {
                    node,
                    attempt,
                    inputs: logged,
                    routed,
                    ..
                } if node == id => {
                    starts.push((*attempt, *at));
                    routes.push(routed.clone());
                    if logged.is_some() {
                        inputs.clone_from(logged);
                    }
                }
                RunEvent::NodeFinished { node, .. } if node == id => finished = Some((e, *at)),
                _ => {}
            }
        }
        let mut n = Map::new();
        n.insert("node_id".into(), json!(id));
        let ty = specs
            .and_then(|s| obj_of(s, id))
            .and_then(|s| str_of(s, "type"))
            .unwrap_or("task");
        n.insert("type".into(), json!(ty));
        n.insert("status".into(), json!(state_name(sched.state(i))));
        n.insert("scope_path".into(), json!(format!("{path}.{id}")));
        if let Some(&(_, at)) = starts.first() {
            n.insert("started_at".into(), json!(rfc3339_ms(at)));
        }
        if let Some(v) = inputs.filter(Value::is_object) {
            n.insert("inputs".into(), v);
        }
        if let Some(h) = human_events.by_node.get(id) {
            n.insert("human_events".into(), json!(h));
        }
        if let Some((
            RunEvent::NodeFinished {
                outcome,
                outputs,
                verdict,
                error,
                attempt_usage,
                ..
            },
            at,
        )) = finished
        {
            n.insert("finished_at".into(), json!(rfc3339_ms(at)));
            if outputs.as_object().is_some_and(|o| !o.is_empty()) {
                n.insert("outputs".into(), outputs.clone());
            }
            n.insert(
                "attempts".into(),
                attempts(
                    &starts,
                    *outcome,
                    error.as_deref(),
                    verdict,
                    at,
                    &Spent {
                        routes: &routes,
                        usage: attempt_usage,
                    },
                ),
            );
        }
        nodes.push(Value::Object(n));
    }
    Ok(nodes)
}

/// Does a fragment instance of the log wait on a person (an open `gate_waiting` in its
/// scope)?
pub(super) fn instance_waits_open(records: &[EventRecord]) -> bool {
    let mut by_scope: BTreeMap<&str, Vec<RunEvent>> = BTreeMap::new();
    for r in records {
        if let Some(path) = scope_of(r)
            && let Ok(e) = RunEvent::from_record(r)
        {
            by_scope.entry(path).or_default().push(e);
        }
    }
    by_scope
        .values()
        .any(|events| crate::human::open_waits(events).iter().any(|w| w.is_open()))
}

/// The instances a log opened under each container: `items` (map) and `iterations` (loop)
/// of every container node run (`<scope_path or id>[i]`), and a subgraph node's
/// `child_run_id`.
pub(super) struct Instances {
    opened: BTreeMap<String, u64>,
    children: std::collections::BTreeSet<String>,
}

impl Instances {
    pub(super) fn of(records: &[EventRecord]) -> Instances {
        let mut opened: BTreeMap<String, u64> = BTreeMap::new();
        let mut children = std::collections::BTreeSet::new();
        for r in records {
            if r.kind != "run_started" {
                continue;
            }
            match scope_of(r).map(|p| (p, p.rsplit_once('['))) {
                Some((_, Some((container, _)))) => {
                    *opened.entry(container.to_string()).or_default() += 1;
                }
                Some((path, None)) => {
                    children.insert(path.to_string());
                }
                None => {}
            }
        }
        Instances { opened, children }
    }

    /// Sets the counts (or the child run) on one node run of run `run_id`.
    pub(super) fn annotate(&self, node: &mut Value, run_id: &str) {
        let Some(obj) = node.as_object_mut() else {
            return;
        };
        let addr = obj
            .field("scope_path")
            .or_else(|| obj.field("node_id"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let key = match obj.field("type").and_then(Value::as_str) {
            Some("map") => "items",
            Some("loop") => "iterations",
            Some("subgraph") if self.children.contains(&addr) => {
                obj.insert("child_run_id".into(), json!(child_run_id(run_id, &addr)));
                return;
            }
            _ => return,
        };
        obj.insert(
            key.into(),
            json!(self.opened.get(&addr).copied().unwrap_or(0)),
        );
    }
}

/// The run id of the child run a subgraph instance stands for: `<run id>/<scope path>`.
pub fn child_run_id(run_id: &str, path: &str) -> String {
    format!("{run_id}/{path}")
}

/// The run record of the subgraph instance at `path` of run `run_id`, as a child run:
/// built from the instance's own events (and its nested instances', re-rooted) with its
/// `run_started.graph` as the document, `run_id` [`child_run_id`] and `parent_run_id` the
/// run. One log holds both: the child's record is a fold over its part of it.
pub fn child_record_of(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    path: &str,
) -> Result<Value, EngineError> {
    let parent = store
        .get_run(run_id)?
        .ok_or_else(|| EngineError::UnknownRun(run_id.to_string()))?;
    let nested = format!("{path}.");
    let records: Vec<EventRecord> = super::read_log(store, run_id)?
        .into_iter()
        .filter_map(|mut r| {
            let scope = scope_of(&r)?.to_string();
            let payload = r.payload.as_object_mut()?;
            if scope == path {
                payload.remove(SCOPE_MEMBER);
            } else if let Some(rest) = scope.strip_prefix(&nested) {
                payload.insert(SCOPE_MEMBER.into(), json!(rest));
            } else {
                return None;
            }
            Some(r)
        })
        .collect();
    let graph = match records.first().map(RunEvent::from_record) {
        Some(Ok(RunEvent::RunStarted { graph, .. })) if graph.is_object() => graph,
        _ => {
            return Err(EngineError::Internal(format!(
                "run {run_id} has no subgraph instance `{path}`"
            )));
        }
    };
    let run = weft_store::RunRecord {
        id: child_run_id(run_id, path),
        graph_digest: weft_ags::digest::graph_digest(&graph),
        status: parent.status,
        created_at_ms: records.first().map_or(0, |r| r.recorded_at_ms),
        updated_at_ms: parent.updated_at_ms,
    };
    let mut record = super::build_record(&run, &records)?;
    if let Some(obj) = record.as_object_mut() {
        obj.insert("parent_run_id".into(), json!(run_id));
    }
    Ok(record)
}
