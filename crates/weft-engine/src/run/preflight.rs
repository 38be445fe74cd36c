//! The up-front checks that refuse a run before anything runs: every node prepared (a node
//! this engine cannot run is a refusal, all of them reported together), every model node
//! accepted by the model agent and routable at its tier (RT011, before any token is spent),
//! the graph's `success` block parsed, params bound and checked (AG301, AG302), the root
//! scope adapted, and the run's scheduling options read. Nothing is written to the store
//! until these pass. The planner's worst case over `max_node_executions` is a warning.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};
use weft_ags::model::{Fields, entries_of, obj_of, str_of};
use weft_core::{FailurePolicy, Options};
use weft_criteria::SuccessBlock;

use super::RunOptions;
use super::human::HumanPolicy;
use super::job::{Job, Shared, Work, prepare_shared};
use super::reads::{NodeReads, scan};
use crate::EngineError;
use crate::adapter::{Adapted, adapt_root};
use crate::agent::AgentRegistry;
use crate::agent::route::route;
use crate::typing::check_schema;

/// A run that may start: what the checks prepared.
#[derive(Clone)]
pub(super) struct Plan {
    pub(super) jobs: Vec<Arc<Job>>,
    /// Per node (same index): the nodes its expressions may read.
    pub(super) reads: Vec<NodeReads>,
    pub(super) params: Value,
    pub(super) adapted: Adapted,
    pub(super) sched_options: Options,
    /// `policy.on_expression_error` is not `"false"`: an expression error fails the run.
    pub(super) expression_errors_fatal: bool,
    /// Logged in `run_started` (the planner's worst case over `max_node_executions`).
    pub(super) warnings: Vec<String>,
    /// The policy's human fallbacks.
    pub(super) human_policy: HumanPolicy,
}

/// Checks `root` and prepares its run, or refuses it. `settled`: nodes a resumed run has
/// already settled (and that will not run again), so they need no model agent.
pub(super) fn preflight(
    root: &Map<String, Value>,
    options: &RunOptions,
    agents: &AgentRegistry,
    settled: &std::collections::BTreeSet<String>,
) -> Result<Plan, EngineError> {
    // The root scope only: the walk of every scope `model::scopes` does is not needed.
    let scope = weft_ags::model::Scope::root(root);
    let defaults = obj_of(root, "defaults");
    // A harness MUST refuse, naming each one, the features above its level that it lacks
    // (SPEC §19): AG303, before anything else is checked or run.
    let mut refusals: Vec<String> = weft_ags::levels::refuse_unsupported(
        root,
        crate::record::CONFORMANCE_LEVEL,
        crate::record::SUPPORTED_ABOVE_LEVEL,
    )
    .into_iter()
    .map(|f| {
        let help = f.help.map(|h| format!(" ({h})")).unwrap_or_default();
        format!("{} {}: {}{help}", f.code.as_str(), f.pointer, f.message)
    })
    .collect();
    let mut jobs = Vec::new();
    let nodes = scope.nodes();
    let shared = Shared {
        workspace: options.project_dir.as_path().into(),
        checkers: Arc::clone(&options.checkers),
        criteria_wrapper: Arc::from(options.criteria_wrapper.clone()),
    };
    for node in &nodes {
        match prepare_shared(node, defaults, &shared) {
            Ok(mut job) => {
                job.isolated = options.isolate.isolates(&job);
                job.expressions_yield_false = !super::expression_errors_fatal(root);
                if let Err(e) = super::container::check_container(&mut job, root, options, agents) {
                    refusals.push(e);
                }
                refusals.extend(check_escalation(&job).err());
                if !settled.contains(&job.id) {
                    refusals.extend(check_model_node(&job, agents).err());
                    refusals.extend(check_judges(&job, agents));
                }
                jobs.push(Arc::new(job));
            }
            Err(e) => refusals.push(e),
        }
    }
    refusals.extend(check_scope_depth(root));
    let human_policy = HumanPolicy::read(root);
    refusals.extend(super::human::policy_refusals(root, &jobs, &human_policy));
    let index: HashMap<&str, usize> = nodes.iter().map(|n| (n.id, n.index)).collect();
    let reads = nodes
        .iter()
        .map(|n| {
            scan(
                n.obj
                    .values()
                    .chain(defaults.into_iter().flat_map(|d| d.values())),
                &index,
            )
        })
        .collect();
    if root.has("success") {
        match SuccessBlock::from_value(root.field("success").unwrap_or(&Value::Null)) {
            Err(e) => refusals.push(format!("the graph's success block is invalid: {e}")),
            Ok(block) => {
                for c in &block.criteria {
                    if c.kind == weft_criteria::Kind::LlmJudge {
                        refusals.push(format!(
                            "graph success criterion `{}`: llm_judge is supported on nodes only (a graph-level judgement's spend has no node to be accounted to); judge the outputs in a node",
                            c.id
                        ));
                    }
                }
            }
        }
    }
    if !refusals.is_empty() {
        return Err(EngineError::Refused(refusals));
    }
    let params = bind_params(root, &options.params)?;
    let adapted = adapt_root(root)?;
    let policy = obj_of(root, "policy");
    let on_node_failure = match policy.and_then(|p| str_of(p, "on_node_failure")) {
        Some("halt") => FailurePolicy::Halt,
        Some("continue") => FailurePolicy::Continue,
        _ => FailurePolicy::Isolate,
    };
    let expression_errors_fatal =
        policy.and_then(|p| str_of(p, "on_expression_error")) != Some("false");
    let max_parallel = options.max_parallel.unwrap_or_else(|| {
        obj_of(root, "constraints")
            .and_then(|c| c.field("max_parallel_nodes"))
            .and_then(Value::as_u64)
            .map_or(1, |n| usize::try_from(n).unwrap_or(usize::MAX))
    });
    let sched_options = Options {
        max_parallel,
        on_node_failure,
    };
    let mut warnings = Vec::new();
    // The planner's worst case matters only against a declared `max_node_executions`; a
    // graph without one is not planned a second time.
    let limited = root
        .get("constraints")
        .and_then(|c| c.get("max_node_executions"))
        .is_some();
    let plan = limited.then(|| weft_ags::plan::plan(root));
    if let Some(plan) = &plan
        && let Some(max) = plan.max_node_executions
        && plan.worst_case_executions > max
    {
        warnings.push(format!(
            "RT061: the planner's worst case is {} node executions, over max_node_executions {max}: the run stops starting work when the limit is reached",
            plan.worst_case_executions
        ));
    }
    Ok(Plan {
        jobs,
        reads,
        params,
        adapted,
        sched_options,
        expression_errors_fatal,
        warnings,
        human_policy,
    })
}

/// `constraints.max_subgraph_depth` (default 5) caps the nesting of subgraph, loop and map
/// scopes together, inline bodies and `use` fragments included (DIGEST §1.5): a deeper
/// document is refused before anything runs. (`ref` children continue the count from the
/// node that names them when they are loaded, `refs.rs`.)
fn check_scope_depth(root: &Map<String, Value>) -> Option<String> {
    let max = crate::nesting::max_depth(root);
    let nesting = crate::nesting::measure(root, max + 1);
    (nesting.deepest > max).then(|| {
        format!(
            "`{}` nests subgraph, loop and map scopes {} deep; constraints.max_subgraph_depth is {max}",
            nesting.path.join(" > "),
            nesting.deepest
        )
    })
}

/// Escalation is carried out to a person only: a node that would escalate to a `node`, the
/// harness's `supervisor` or an `external` party is refused before anything runs (DIGEST
/// §1.16, §3), never failed at the escalation.
pub(super) fn check_escalation(job: &Job) -> Result<(), String> {
    let Some(to) = job.escalation_to.as_deref().filter(|to| *to != "human") else {
        return Ok(());
    };
    let escalates =
        job.on_exhausted.as_str() == "escalate" || job.timeout_action.as_str() == "escalate";
    if !escalates {
        return Ok(());
    }
    Err(format!(
        "node `{}`: failure.escalation.to `{to}` is not supported (weft escalates to a person only): use `to: human`, or route the failure to a node with an on_failure edge",
        job.id
    ))
}

/// A model node must be accepted by the model agent (e.g. have a cassette entry) and be
/// routable at its requested tier: RT011 refuses the run before any token is spent.
pub(super) fn check_model_node(job: &Job, agents: &AgentRegistry) -> Result<(), String> {
    if !matches!(job.work, Work::Model) {
        return Ok(());
    }
    let id = &job.id;
    let Some(agent) = agents.model_agent() else {
        return Err(format!(
            "node `{id}` needs a model and no model agent is registered"
        ));
    };
    agent.check(id)?;
    route(&agent.models(), &job.tier, 1)
        .map(|_| ())
        .map_err(|e| format!("node `{id}`: {e}"))
}

/// Every `llm_judge` criterion of a node needs the model agent to accept its key and a
/// model at its judge tier: RT011 before any token, like the node's own route.
pub(super) fn check_judges(job: &Job, agents: &AgentRegistry) -> Vec<String> {
    let Some(block) = &job.success else {
        return Vec::new();
    };
    let mut refusals = Vec::new();
    for c in block
        .criteria
        .iter()
        .filter(|c| c.kind == weft_criteria::Kind::LlmJudge)
    {
        let id = &job.id;
        let Some(agent) = agents.model_agent() else {
            refusals.push(format!(
                "node `{id}`: criterion `{}` needs a model to judge and no model agent is registered",
                c.id
            ));
            continue;
        };
        if let Err(e) = agent.check(&super::judge::judge_key(id, &c.id)) {
            refusals.push(e);
            continue;
        }
        let tier = match &c.judge_intelligence {
            Some(block) => super::judge::tier_request(block),
            None => Ok(crate::agent::TierRequest {
                escalate_on_retry: false,
                ..job.tier.clone()
            }),
        };
        if let Err(e) = tier.and_then(|t| route(&agent.models(), &t, 1).map(|_| ())) {
            refusals.push(format!("node `{id}`: judge of `{}`: {e}", c.id));
        }
    }
    refusals
}

/// Binds params: given values, then defaults; a required one missing is AG301; a value
/// outside its `enum` or failing its `schema` is AG302 (every offending param listed).
fn bind_params(
    root: &Map<String, Value>,
    given: &Map<String, Value>,
) -> Result<Value, EngineError> {
    let out = bind_values(root, given)?;
    let mut bad = Vec::new();
    for (name, spec) in entries_of(root, "params") {
        let Some(v) = out.get(name) else { continue };
        if let Some(allowed) = spec.field("enum").and_then(Value::as_array)
            && !allowed.contains(v)
        {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            bad.push(format!("`{name}` = {v} is not one of {}", list.join(", ")));
        }
        if let Some(schema) = spec.field("schema").filter(|s| s.is_object())
            && let Err(e) = check_schema(schema, v)
        {
            bad.push(format!("`{name}` = {v} does not match its schema: {e}"));
        }
    }
    if bad.is_empty() {
        Ok(Value::Object(out))
    } else {
        Err(EngineError::Params(format!("AG302: {}", bad.join("; "))))
    }
}

/// Given values, then defaults (AG301 for a required param with neither).
fn bind_values(
    root: &Map<String, Value>,
    given: &Map<String, Value>,
) -> Result<Map<String, Value>, EngineError> {
    let mut out = Map::new();
    let declared: Vec<(&str, &Value)> = entries_of(root, "params").collect();
    for name in given.keys() {
        if !declared.iter().any(|(d, _)| d == name) {
            return Err(EngineError::Params(format!("unknown param `{name}`")));
        }
    }
    for (name, spec) in declared {
        if let Some(v) = given.get(name) {
            out.insert(name.to_string(), v.clone());
        } else if let Some(d) = spec.field("default") {
            out.insert(name.to_string(), d.clone());
        } else if spec
            .field("required")
            .and_then(Value::as_bool)
            .unwrap_or(true)
        {
            return Err(EngineError::Params(format!(
                "AG301: required param `{name}` has no value and no default"
            )));
        }
    }
    Ok(out)
}
