//! Fragment instances: the fragment of a container node (`map` item, `loop` iteration,
//! `subgraph` child) turned into a document of its own (the body's nodes, edges, params and
//! outputs, with the run's `context`, `subgraphs` and `policy`: [`fragment_doc`]), and one
//! instance of it run by a driver of its own in the run's log ([`run_instance`],
//! `scope.rs`), or rebuilt from its events on resume.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::preflight::{Plan, preflight};
use super::scope::ScopeRun;
use super::{Drive, Driver, DriverInit, FinalStatus, RunOptions, drive, finish};
use crate::EngineError;
use crate::context::RunContext;
use crate::events::{EVENT_FORMAT, RunEvent};

/// The document a fragment instance runs: the fragment's own members, with the run's
/// `context`, `subgraphs` and `policy` (a fragment cannot declare them, DIGEST §1.9) and,
/// when the fragment declares no `params`, the enclosing document's params.
/// The fragment document shared by the instances of one container run, and its digest.
pub(super) fn shared_doc(doc: Value) -> (Arc<Map<String, Value>>, Arc<str>) {
    let digest: Arc<str> = weft_ags::digest::graph_digest(&doc).into();
    let map = match doc {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    (Arc::new(map), digest)
}

/// The document of a fragment that sees the enclosing scope's params ([`InstanceParams::
/// Inherited`]): without the enclosing `params` declarations, which its instances never
/// bind again.
pub(super) fn inheriting_doc(parent: &Map<String, Value>, body: &Map<String, Value>) -> Value {
    let mut doc = fragment_doc(parent, body);
    if !body.contains_key("params")
        && let Some(obj) = doc.as_object_mut()
    {
        obj.shift_remove("params");
    }
    doc
}

pub(super) fn fragment_doc(parent: &Map<String, Value>, body: &Map<String, Value>) -> Value {
    let mut doc = Map::new();
    for key in ["ags_version", "kind", "id"] {
        if let Some(v) = parent.get(key) {
            doc.insert(key.into(), v.clone());
        }
    }
    if let Some(p) = body.get("params").or_else(|| parent.get("params")) {
        doc.insert("params".into(), p.clone());
    }
    for key in ["context", "subgraphs", "policy"] {
        if let Some(v) = parent.get(key) {
            doc.insert(key.into(), v.clone());
        }
    }
    for key in [
        "title",
        "description",
        "entrypoints",
        "nodes",
        "edges",
        "outputs",
        "success",
        "defaults",
    ] {
        if let Some(v) = body.get(key) {
            doc.insert(key.into(), v.clone());
        }
    }
    Value::Object(doc)
}

/// How one fragment instance ended.
#[derive(Clone, Debug)]
pub(super) struct InstanceEnd {
    pub(super) status: FinalStatus,
    /// The fragment's bound `outputs`.
    pub(super) outputs: Value,
    /// The instance's final scope: its nodes, params and bindings, with `outputs` set to
    /// the fragment's outputs (`collect` and loop conditions are evaluated in it).
    pub(super) scope: RunContext,
    /// Why it did not succeed.
    pub(super) reasons: Vec<String>,
}

impl InstanceEnd {
    /// Did the instance do its work? Only `succeeded` counts: a `partial` instance had an
    /// unabsorbed failure or an unbound output (`docs/semantics.md`).
    pub(super) fn ok(&self) -> bool {
        self.status == FinalStatus::Succeeded
    }

    /// The instance has not ended: it waits on a person (its container waits with it).
    pub(super) fn waiting(&self) -> bool {
        self.status == FinalStatus::AwaitingHuman
    }

    /// `collect` evaluated in the instance's final scope; an expression that fails or is
    /// absent gives `null`.
    pub(super) fn collect(&self, collect: &[(String, String)]) -> Map<String, Value> {
        collect
            .iter()
            .map(|(name, src)| {
                let v = weft_agx::parse(src)
                    .ok()
                    .and_then(|e| weft_agx::eval(&e, &self.scope).ok())
                    .unwrap_or(Value::Null);
                (name.clone(), v)
            })
            .collect()
    }
}

/// What an instance's `params` are.
pub(super) enum InstanceParams {
    /// The values given to a fragment that declares params (defaults fill the rest), or a
    /// subgraph child's.
    Given(Map<String, Value>),
    /// A fragment without `params` sees the enclosing scope's, shared as they are: a map of
    /// 1,000 items must not copy (nor bind again) its enclosing params 1,000 times.
    Inherited(Arc<Value>),
}

/// One fragment instance to run.
pub(super) struct Instance {
    /// The instance's scope path (`docs[3]`).
    pub(super) path: String,
    /// The fragment document, shared by every instance of one container run, and its
    /// digest (computed once per container run, not per item).
    pub(super) doc: Arc<Map<String, Value>>,
    pub(super) digest: Arc<str>,
    pub(super) params: InstanceParams,
    /// The preflight of the fragment, shared by the instances of one container run that
    /// bind the same params (every map item; loop iterations that inherit params): the
    /// fragment is prepared once, not once per item. `None`: prepare each instance.
    pub(super) plan: Option<Arc<std::sync::OnceLock<Plan>>>,
    pub(super) bindings: Map<String, Value>,
    /// Logged as the instance's `run_started.graph`: a subgraph's child document (its
    /// run record is built from it); `null` for map items and loop iterations.
    pub(super) graph: Value,
    /// A `ref` child's own loaded references; `None`: the enclosing document's.
    pub(super) refs: Option<Arc<Vec<crate::refs::ChildRef>>>,
    /// The fragment declares its own params: they are logged in its `run_started`. A
    /// fragment that sees the enclosing scope's params logs none (they are in the log
    /// already; a 1,000-item map would otherwise log its input 1,000 times).
    pub(super) own_params: bool,
}

/// A fragment instance's run, boxed: drivers nest (a map in a loop body).
pub(super) type InstanceRun<'a> =
    Pin<Box<dyn Future<Output = Result<InstanceEnd, EngineError>> + 'a>>;

/// Runs one fragment instance in the run's log under `parent`: a driver of its own over
/// the fragment document, its events tagged with the instance's path. Refusals of the
/// fragment (a node this engine cannot run) fail the instance.
pub(super) fn run_instance<'a, 's: 'a>(
    parent: &'a Driver<'s>,
    options: &'a RunOptions,
    instance: Instance,
) -> InstanceRun<'a> {
    Box::pin(async move {
        let Instance {
            path,
            doc,
            digest,
            plan: shared_plan,
            params,
            bindings,
            graph,
            refs,
            own_params,
        } = instance;
        let (given, inherited) = match params {
            InstanceParams::Given(m) => (m, None),
            InstanceParams::Inherited(shared) => (Map::new(), Some(shared)),
        };
        let root: &Map<String, Value> = &doc;
        let mut bindings = bindings;
        super::attachments::for_instance(&mut bindings, &parent.scope.bindings, root);
        // On resume, the instance's events already in the log: it is rebuilt from them.
        let logged: Option<Vec<weft_store::EventRecord>> = parent
            .scope
            .resumed
            .as_ref()
            .and_then(|r| r.scopes.get(&path))
            .cloned();
        let mut logged_events = match &logged {
            Some(records) => Some(super::resume::decode(&mut records.clone())?),
            None => None,
        };
        let settled = logged_events
            .as_deref()
            .map(|e| super::resume::settled_nodes(e, &[]))
            .unwrap_or_default();
        let mut child_opts = options.clone();
        child_opts.params = given;
        child_opts.max_parallel = Some(parent.sched.options().max_parallel);
        let cached = shared_plan
            .as_ref()
            .filter(|_| logged.is_none())
            .and_then(|c| c.get().cloned());
        let prepared = match cached {
            Some(plan) => Ok(plan),
            None => preflight(root, &child_opts, &parent.agents, &settled),
        };
        let plan = match prepared {
            Ok(plan) => {
                if let Some(cache) = shared_plan.as_ref().filter(|_| logged.is_none()) {
                    // A fresh instance's preflight depends on nothing but the fragment and
                    // its params: the next instance of this run reuses it.
                    let _ = cache.set(plan.clone());
                }
                plan
            }
            // A fragment the instance cannot run (e.g. a param without a value) fails the
            // instance before anything is written, like a node that cannot start.
            Err(e @ (EngineError::Refused(_) | EngineError::Params(_))) => {
                return Ok(InstanceEnd {
                    status: FinalStatus::Failed,
                    outputs: Value::Object(Map::new()),
                    scope: RunContext::default(),
                    reasons: vec![format!("scope `{path}`: {e}")],
                });
            }
            Err(e) => return Err(e),
        };
        let Plan {
            jobs,
            reads,
            params,
            adapted,
            sched_options,
            expression_errors_fatal,
            human_policy,
            ..
        } = plan;
        let started_ms = parent.clock.now_ms();
        let mut d = Driver::new(DriverInit {
            store: parent.store,
            run_id: parent.run_id.clone(),
            last_seq: parent.scope.shared.last_seq(),
            root,
            jobs,
            reads,
            adapted,
            sched_options,
            params: params.clone(),
            human_policy,
            options: &child_opts,
            agents: Arc::clone(&parent.agents),
            started_ms,
        });
        if let Some(shared) = inherited {
            d.params = shared;
        }
        d.scope = ScopeRun {
            path: Some(path.clone()),
            bindings,
            shared: Arc::clone(&parent.scope.shared),
            doc: Arc::clone(&doc),
            resumed: parent.scope.resumed.clone(),
            // A `ref` child is a graph of its own; any other body reads its enclosing one.
            graph: if graph.is_object() {
                Arc::new(crate::context::graph_fields(root))
            } else {
                Arc::clone(&parent.scope.graph)
            },
            refs: refs.unwrap_or_else(|| Arc::clone(&parent.scope.refs)),
        };
        // The run's limits and totals: the instance's work counts against the run's budget.
        d.budget = parent.budget.for_fragment(d.jobs.len());
        let queue = match (&logged, logged_events.take()) {
            (Some(records), Some(events)) => {
                let retry = parent
                    .scope
                    .resumed
                    .as_ref()
                    .is_some_and(|r| r.retry_uncertain);
                // Boxed: only a resumed instance awaits it, and an instance's future is
                // held while it runs.
                let queue =
                    Box::pin(super::resume::rebuild(&mut d, records, &events, retry)).await?;
                if let Some(end) = logged_end(&events) {
                    // Finished before the run stopped: its result is a fold over its log.
                    let mut scope = d.context();
                    scope.outputs = Some(end.outputs.clone());
                    return Ok(InstanceEnd { scope, ..end });
                }
                queue
            }
            _ => {
                let params = if own_params {
                    params
                } else {
                    Value::Object(Map::new())
                };
                d.record(&instance_started(&digest, params, &sched_options, graph))
                    .await?
                    .into()
            }
        };
        let report = match drive(&mut d, queue, &child_opts).await? {
            Drive::Finished(summary) => {
                finish::finalize(&mut d, root, &child_opts, summary, expression_errors_fatal)
                    .await?
            }
            // Nothing runs in the instance and a person is waited on: it stays open (its
            // container stays `running`); its waits, by address, go to the run's report,
            // and a resume rebuilds it from its events, decisions included.
            Drive::Suspended => {
                d.scope.shared.add_waiting(d.addressed_waits());
                return Ok(InstanceEnd {
                    status: FinalStatus::AwaitingHuman,
                    outputs: Value::Object(Map::new()),
                    scope: d.context(),
                    reasons: Vec::new(),
                });
            }
        };
        let mut scope = d.context();
        scope.outputs = Some(report.outputs.clone());
        Ok(InstanceEnd {
            status: report.status,
            outputs: report.outputs,
            scope,
            reasons: report.reasons,
        })
    })
}

/// The `run_started` of a fragment instance: its fragment's digest, the `params` it logs
/// (its own, or none when they are the enclosing scope's), its scheduler's `options`, and
/// the document it logs (a subgraph child's; `null` otherwise). A light map item
/// (`map_item.rs`) logs its own through this too.
pub(super) fn instance_started(
    digest: &str,
    params: Value,
    options: &weft_core::Options,
    graph: Value,
) -> RunEvent {
    RunEvent::RunStarted {
        v: EVENT_FORMAT,
        graph_digest: digest.to_string(),
        params,
        max_parallel: options.max_parallel,
        on_node_failure: format!("{:?}", options.on_node_failure).to_lowercase(),
        graph,
        started_by: None,
        warnings: Vec::new(),
        refs: Vec::new(),
    }
}

/// The end of an instance whose `run_finished` is in its log (`scope` still to be set).
fn logged_end(events: &[RunEvent]) -> Option<InstanceEnd> {
    events.iter().rev().find_map(|e| match e {
        RunEvent::RunFinished {
            status,
            outputs,
            reasons,
            ..
        } => Some(InstanceEnd {
            status: match status.as_str() {
                "succeeded" => FinalStatus::Succeeded,
                "partial" => FinalStatus::Partial,
                "cancelled" => FinalStatus::Cancelled,
                _ => FinalStatus::Failed,
            },
            outputs: outputs.clone(),
            scope: RunContext::default(),
            reasons: reasons.clone(),
        }),
        _ => None,
    })
}
