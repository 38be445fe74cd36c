//! The prepared node: a [`Job`] holds everything needed to run one node, read from the
//! document once, up front (type, which agent does its work, tier, limits, retry and
//! backoff, the failure ladder, typed inputs and outputs, `success`). What cannot be
//! prepared is a refusal: [`prepare`] says why, and the preflight refuses the run before
//! anything runs.

use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use serde_json::{Map, Value};
use weft_ags::model::{Fields, Node, NodeType, effective_block, entries_of, obj_of, str_of};
use weft_core::RetryOn;
use weft_criteria::SuccessBlock;

use super::DEFAULT_TIMEOUT;
use super::redact::redacted_names;
use crate::agent::tiers::{is_executor_key, tier_request};
use crate::agent::{Limits, TierRequest};
use crate::backoff::{Backoff, BackoffKind};
use crate::checkers::CheckerRegistry;
use crate::typing::{Typed, compiled};

/// One declared input.
#[derive(Clone, Debug)]
pub(super) struct InputSpec {
    pub(super) name: String,
    pub(super) from: Option<String>,
    pub(super) template: Option<String>,
    pub(super) value: Option<Value>,
    pub(super) default: Option<Value>,
    pub(super) required: bool,
    /// `redact: true`: the value never reaches the log (nor, so, the run record).
    pub(super) redact: bool,
    /// The declared `type` and `schema`, checked once resolved.
    pub(super) typed: Typed,
}

/// Which agent does a node's work.
#[derive(Clone, Debug)]
pub(super) enum Work {
    /// No agent: an expression decision, a notify gate, or a blocking gate (the driver
    /// decides; a blocking gate waits on a person, `run/human.rs`).
    Expression,
    /// The `exec` agent, with the node's `x-weft-exec` block.
    Exec(Value),
    /// The registry's model agent (a task without `x-weft-exec`, a decision by agent).
    Model,
    /// An executor this build does not have: the node settles `blocked`.
    Blocked(String),
    /// A `map` or `loop` node: its fragment instances run under it (`fragment.rs`).
    Container(Box<super::container::ContainerSpec>),
}

/// A `decision` node (DIGEST §1.8).
#[derive(Clone, Debug)]
pub(super) struct DecisionSpec {
    /// The branches in declared order.
    pub(super) branches: Vec<Branch>,
    pub(super) default_branch: Option<String>,
    /// `evaluator: agent` (the default): the model agent picks the label.
    pub(super) by_agent: bool,
    /// `decision.question`, the template as declared (rendered into the agent's brief).
    pub(super) question: Option<String>,
}

/// One branch of a decision.
#[derive(Clone, Debug)]
pub(super) struct Branch {
    pub(super) label: String,
    /// `when` as declared (empty for `evaluator: agent`).
    pub(super) when: String,
    /// `when` parsed once here rather than at every attempt (the parse error, formatted
    /// like `eval_condition`'s, when it does not parse).
    pub(super) parsed: Result<weft_agx::Expr, String>,
}

/// A keyword member of a node (`retry.feedback`, `failure.on_exhausted`,
/// `failure.timeout_action`): one of the words AGS defines, held without an allocation per
/// node; any other text (validation refuses it) is kept as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Word(Cow<'static, str>);

impl Word {
    /// `text`, or `default` when absent; `known` are the words held as constants.
    fn read(text: Option<&str>, default: &'static str, known: &[&'static str]) -> Word {
        let text = text.unwrap_or(default);
        Word(match known.iter().find(|k| **k == text) {
            Some(k) => Cow::Borrowed(k),
            None => Cow::Owned(text.to_string()),
        })
    }

    pub(super) fn as_str(&self) -> &str {
        &self.0
    }
}

impl PartialEq<&str> for Word {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl std::fmt::Display for Word {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The guidance of a node that is not a model's: one empty value shared by every such job.
fn no_guidance() -> Arc<crate::agent::Guidance> {
    static EMPTY: LazyLock<Arc<crate::agent::Guidance>> = LazyLock::new(Arc::default);
    Arc::clone(&EMPTY)
}

/// What every job of a run shares: held once per run, not copied into each node.
#[derive(Clone, Debug)]
pub(super) struct Shared {
    pub(super) workspace: Arc<Path>,
    pub(super) checkers: Arc<CheckerRegistry>,
    pub(super) criteria_wrapper: Arc<[String]>,
}

/// One `failure.fallback[]` step (DIGEST §1.16).
#[derive(Debug, Clone)]
pub(super) struct FallbackStep {
    pub(super) strategy: String,
    pub(super) when: Option<String>,
    /// `degrade_outputs.outputs` / `relax_criteria.criteria`.
    pub(super) names: Vec<String>,
    /// `alternate_node.node`.
    pub(super) node: Option<String>,
}

/// Everything needed to run one node, prepared up front.
#[derive(Clone, Debug)]
pub(super) struct Job {
    pub(super) id: String,
    /// Set for decision nodes: no command runs, the label is the output `decision`.
    pub(super) decision: Option<DecisionSpec>,
    /// Set for `gate` nodes with `mode: notify`: (`roles`, `prompt`), logged as
    /// `gate_notified` before the node succeeds (boxed, like `gate`: rare, and a job is
    /// held per node).
    pub(super) notify: Option<Box<(Vec<String>, Option<String>)>>,
    pub(super) when: Option<String>,
    /// Which agent does the work.
    pub(super) work: Work,
    /// `description` and the `instructions` template (rendered per attempt into the
    /// brief of an `exec` or model attempt; `description` is kept for those only).
    pub(super) description: Option<String>,
    /// What a model's prompt shows beyond the brief (model nodes only; one shared empty
    /// value otherwise).
    pub(super) guidance: Arc<crate::agent::Guidance>,
    pub(super) instructions: Option<String>,
    /// `intelligence` (after `defaults`) and `retry.escalate_intelligence`.
    pub(super) tier: TierRequest,
    /// The node's `constraints` limits (token and cost ones summed across its attempts);
    /// `wall_clock` is the per-attempt time limit (`max_wall_clock_seconds`, else
    /// [`DEFAULT_TIMEOUT`]).
    pub(super) limits: Limits,
    pub(super) max_attempts: u32,
    /// `retry.retry_on` (AGS's default when the node does not declare one).
    pub(super) retry_on: RetryOn,
    pub(super) backoff: Backoff,
    /// `retry.feedback`: `none`, `failure_summary`, `failed_criteria` (default), `full_transcript`.
    pub(super) feedback: Word,
    pub(super) on_exhausted: Word,
    pub(super) fallback: Vec<FallbackStep>,
    /// `failure.compensation`: the node that undoes this one's effects when the run ends
    /// `failed` or `cancelled` (`compensate.rs`).
    pub(super) compensation: Option<String>,
    /// `escalation.to`, if the node declares an escalation.
    pub(super) escalation_to: Option<String>,
    /// `escalation.roles`: who may decide an escalation to a human.
    pub(super) escalation_roles: Vec<String>,
    /// Set for blocking `gate` nodes (`approve`, `review`, `input`): the node waits on a
    /// person (`human.rs`). Boxed: most nodes are not gates, and a job is held per node.
    pub(super) gate: Option<Box<super::human::GateSpec>>,
    /// The declared `type` of each output (`any` when absent): what a person provides in
    /// a takeover is checked against it.
    pub(super) output_types: std::collections::BTreeMap<String, String>,
    /// `human[]` checkpoints (task nodes; `checkpoint.rs`).
    pub(super) checkpoints: Vec<super::checkpoint::CheckpointSpec>,
    /// The command is an externally visible mutation (`before_side_effects` fires).
    pub(super) side_effects: bool,
    /// Each attempt works in its own copy of the project, merged back as a recorded patch
    /// when it succeeds (`isolate.rs`): `constraints.isolation` is `worktree` or `sandbox`,
    /// or the run's [`super::IsolateMode`] covers the node (set by the preflight).
    pub(super) isolated: bool,
    /// `requirements.workspace: read_write` (after `defaults`): the node may edit the
    /// project, so an agent working on it gets its own copy (`isolate.rs`).
    pub(super) writes_workspace: bool,
    /// `requirements.environment` (after `defaults`): the names readable as `env.<NAME>`.
    pub(super) environment: Vec<String>,
    /// `policy.on_expression_error: false`: an AGX evaluation error yields `false` and is
    /// an `RT062` warning; otherwise it fails the run (set by the preflight).
    pub(super) expressions_yield_false: bool,
    /// An `after_outputs` checkpoint exists: `success` waits for it.
    pub(super) defer_success: bool,
    /// `failure.timeout_action`: `fail` (default), `retry`, `escalate`, `partial`.
    pub(super) timeout_action: Word,
    pub(super) inputs: Vec<InputSpec>,
    pub(super) outputs: Vec<(String, bool)>,
    /// The declared `type`/`schema` of each output.
    pub(super) typed_outputs: Vec<Typed>,
    /// Outputs declared `redact: true`: kept out of the log (AGS: out of logs and records).
    pub(super) redact_outputs: Vec<String>,
    pub(super) success: Option<SuccessBlock>,
    /// The run's workspace (shared by its jobs).
    pub(super) workspace: Arc<Path>,
    /// `x-weft-exec.idempotent: true`: an attempt cut short by a stop may run again on
    /// resume without `--retry-uncertain`.
    pub(super) idempotent: bool,
    /// The checkers `external` criteria may name (`RunOptions::checkers`, set by the
    /// preflight; shared by the run's jobs).
    pub(super) checkers: Arc<CheckerRegistry>,
    /// What `command` criteria run under (`RunOptions::criteria_wrapper`).
    pub(super) criteria_wrapper: Arc<[String]>,
}

impl Job {
    /// Work that does no IO and cannot wait: an expression decision or a notify gate with no
    /// `success` block (criteria may run commands) and no human checkpoint. The driver
    /// decides it in place instead of spawning a task.
    pub(super) fn is_pure(&self) -> bool {
        matches!(self.work, Work::Expression)
            && self.gate.is_none()
            && self.success.is_none()
            && self.checkpoints.is_empty()
    }
}

fn seconds(v: Option<&Value>) -> Option<Duration> {
    v.and_then(Value::as_f64)
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// Prepares a node, or says why the run must refuse it.
pub(super) fn prepare(
    node: &Node<'_>,
    defaults: Option<&Map<String, Value>>,
    workspace: &Path,
) -> Result<Job, String> {
    let shared = Shared {
        workspace: workspace.into(),
        checkers: Arc::default(),
        criteria_wrapper: Arc::from(Vec::new()),
    };
    prepare_shared(node, defaults, &shared)
}

/// [`prepare`] with what the run's jobs share: a run's nodes hold one workspace path and
/// one checker registry between them. The common node allocates nothing it does not own
/// (its id, its decision's branches): the keyword members and the default lists are
/// constants.
pub(super) fn prepare_shared(
    node: &Node<'_>,
    defaults: Option<&Map<String, Value>>,
    shared: &Shared,
) -> Result<Job, String> {
    let id = node.id;
    let mut decision = None;
    let mut notify = None;
    let mut gate = None;
    let node_type = node.node_type();
    match node_type {
        Some(NodeType::Task) => {}
        Some(NodeType::Decision) => {
            let block = obj_of(node.obj, "decision");
            let evaluator = block
                .and_then(|b| str_of(b, "evaluator"))
                .unwrap_or("agent");
            let by_agent = evaluator != "expression";
            let declared = block
                .and_then(|b| b.field("branches"))
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            // Sized once: held for the whole run, one per decision node.
            let mut branches = Vec::with_capacity(declared.len());
            for b in declared {
                let label = b.field("label").and_then(Value::as_str);
                let when = b
                    .field("when")
                    .and_then(Value::as_str)
                    .or(by_agent.then_some(""));
                let (Some(label), Some(when)) = (label, when) else {
                    return Err(format!(
                        "node `{id}`: every branch of an expression decision needs `label` and `when` (AG121)"
                    ));
                };
                branches.push(Branch {
                    label: label.to_string(),
                    when: when.to_string(),
                    parsed: weft_agx::parse(when).map_err(|e| format!("`{when}`: {e}")),
                });
            }
            decision = Some(DecisionSpec {
                branches,
                default_branch: block
                    .and_then(|b| str_of(b, "default_branch"))
                    .map(str::to_string),
                by_agent,
                question: block
                    .and_then(|b| str_of(b, "question"))
                    .map(str::to_string),
            });
        }
        Some(NodeType::Gate) => {
            let mode = obj_of(node.obj, "gate")
                .and_then(|g| str_of(g, "mode"))
                .unwrap_or_default();
            if mode != "notify" {
                gate = Some(Box::new(super::human::gate_spec(node, mode)));
            }
            // A notify gate never blocks: it succeeds at once with `outputs.decision =
            // "notified"` (no command runs; the decision path with no branches).
            if gate.is_none() {
                decision = Some(DecisionSpec {
                    branches: Vec::new(),
                    default_branch: Some("notified".into()),
                    by_agent: false,
                    question: None,
                });
                let block = obj_of(node.obj, "gate");
                notify = Some(Box::new((
                    block
                        .and_then(|g| g.field("roles"))
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect(),
                    block.and_then(|g| str_of(g, "prompt")).map(str::to_string),
                )));
            }
        }
        Some(NodeType::Map | NodeType::Loop | NodeType::Subgraph) => {}
        None => return Err(format!("node `{id}`: unknown type")),
    }
    let executor_keys: Vec<&str> = node
        .obj
        .keys()
        .map(String::as_str)
        .filter(|k| is_executor_key(k))
        .collect();
    let work = match node.obj("x-weft-exec") {
        _ if matches!(
            node_type,
            Some(NodeType::Map | NodeType::Loop | NodeType::Subgraph)
        ) =>
        {
            Work::Container(Box::new(super::container::ContainerSpec::read(
                id,
                node.type_name().unwrap_or_default(),
                node.obj,
            )?))
        }
        _ if decision.as_ref().is_some_and(|d| d.by_agent) => Work::Model,
        _ if decision.is_some() || gate.is_some() => Work::Expression,
        _ if !executor_keys.is_empty() => Work::Blocked(format!(
            "no executor for {} in this build",
            executor_keys.join(", ")
        )),
        Some(x) => match str_of(x, "run") {
            Some(_) => Work::Exec(Value::Object(x.clone())),
            None => return Err(format!("node `{id}`: `x-weft-exec` needs a string `run`")),
        },
        None => Work::Model,
    };
    let constraints = effective_block(node, defaults, "constraints");
    // SPEC §13: fail rather than downgrade (RT014).
    let isolated = match constraints
        .as_ref()
        .and_then(|c| str_of(c, "isolation"))
        .unwrap_or("shared")
    {
        "worktree" | "sandbox" => true,
        "shared" => false,
        other => {
            return Err(format!(
                "node `{id}`: RT014 isolation `{other}` is not available in this build (weft fails rather than downgrades; `worktree` and `sandbox` run the node in its own copy of the project)"
            ));
        }
    };
    let timeout = seconds(
        constraints
            .as_ref()
            .and_then(|c| c.field("max_wall_clock_seconds")),
    )
    .unwrap_or(DEFAULT_TIMEOUT);
    let limit = |key: &str| {
        constraints
            .as_ref()
            .and_then(|c| c.field(key))
            .and_then(Value::as_u64)
    };
    let limits = Limits {
        wall_clock: timeout,
        max_agent_steps: limit("max_agent_steps"),
        max_tool_calls: limit("max_tool_calls"),
        max_input_tokens: limit("max_input_tokens"),
        max_output_tokens: limit("max_output_tokens"),
        max_total_tokens: limit("max_total_tokens"),
        max_cost_usd: constraints
            .as_ref()
            .and_then(|c| c.field("max_cost_usd"))
            .and_then(Value::as_f64),
    };
    let failure = effective_block(node, defaults, "failure");
    let retry = failure.as_ref().and_then(|f| obj_of(f, "retry"));
    let max_attempts = crate::agent::tiers::max_attempts_of(retry);
    let retry_on = match retry
        .and_then(|r| r.field("retry_on"))
        .and_then(Value::as_array)
    {
        // The schema admits only class names and `any` (validated before the run), so an
        // entry that is neither cannot reach here; were one to, it would retry nothing.
        Some(list) => {
            RetryOn::parse(list.iter().filter_map(Value::as_str)).unwrap_or(RetryOn::NONE)
        }
        None => RetryOn::DEFAULT,
    };
    let defaults_b = Backoff::default();
    let backoff = Backoff {
        kind: match retry
            .and_then(|r| r.field("backoff"))
            .and_then(Value::as_str)
        {
            Some("none") => BackoffKind::None,
            Some("fixed") => BackoffKind::Fixed,
            Some("linear") => BackoffKind::Linear,
            _ => BackoffKind::Exponential,
        },
        initial: seconds(retry.and_then(|r| r.field("initial_delay_seconds")))
            .map_or(defaults_b.initial, |d| d.as_secs_f64()),
        max: seconds(retry.and_then(|r| r.field("max_delay_seconds")))
            .map_or(defaults_b.max, |d| d.as_secs_f64()),
        jitter: retry
            .and_then(|r| r.field("jitter"))
            .and_then(Value::as_bool)
            .unwrap_or(defaults_b.jitter),
    };
    let feedback = Word::read(
        retry
            .and_then(|r| r.field("feedback"))
            .and_then(Value::as_str),
        "failed_criteria",
        &[
            "none",
            "failure_summary",
            "failed_criteria",
            "full_transcript",
        ],
    );
    let on_exhausted = Word::read(
        failure.as_ref().and_then(|f| str_of(f, "on_exhausted")),
        "fail",
        &["fail", "skip", "succeed_degraded", "escalate"],
    );
    let compensation = failure
        .as_ref()
        .and_then(|f| str_of(f, "compensation"))
        .map(str::to_string);
    let list = |v: &Value, key: &str| -> Vec<String> {
        v.field(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let fallback = failure
        .as_ref()
        .and_then(|f| f.field("fallback"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|step| FallbackStep {
            strategy: step
                .field("strategy")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            when: step
                .field("when")
                .and_then(Value::as_str)
                .map(str::to_string),
            names: if step.field("outputs").is_some() {
                list(step, "outputs")
            } else {
                list(step, "criteria")
            },
            node: step
                .field("node")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
        .collect();
    let escalation_to = failure
        .as_ref()
        .and_then(|f| obj_of(f, "escalation"))
        .map(|e| str_of(e, "to").unwrap_or("human").to_string());
    let escalation_roles = failure
        .as_ref()
        .and_then(|f| obj_of(f, "escalation"))
        .and_then(|e| e.field("roles"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let timeout_action = Word::read(
        failure.as_ref().and_then(|f| str_of(f, "timeout_action")),
        "fail",
        &["fail", "retry", "escalate", "partial"],
    );
    let inputs = entries_of(node.obj, "inputs")
        .map(|(name, spec)| InputSpec {
            name: name.to_string(),
            from: spec
                .field("from")
                .and_then(Value::as_str)
                .map(str::to_string),
            template: spec
                .field("template")
                .and_then(Value::as_str)
                .map(str::to_string),
            value: spec.field("value").cloned(),
            default: spec.field("default").cloned(),
            required: spec
                .field("required")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            redact: spec
                .field("redact")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            typed: typed(name, spec),
        })
        .collect::<Vec<_>>();
    let outputs = entries_of(node.obj, "outputs")
        .map(|(name, spec)| {
            (
                name.to_string(),
                spec.field("required")
                    .and_then(Value::as_bool)
                    .unwrap_or(true),
            )
        })
        .collect();
    let typed_outputs: Vec<Typed> = entries_of(node.obj, "outputs")
        .map(|(name, spec)| typed(name, spec))
        .collect();
    for (what, t) in inputs
        .iter()
        .map(|i| ("input", &i.typed))
        .chain(typed_outputs.iter().map(|t| ("output", t)))
    {
        if let Some(schema) = &t.schema
            && let Err(e) = compiled(schema)
        {
            return Err(format!("node `{id}`: {what} `{}`: {e}", t.name));
        }
    }
    let tier = tier_request(node, defaults);
    let output_types = entries_of(node.obj, "outputs")
        .map(|(name, spec)| {
            let ty = spec.field("type").and_then(Value::as_str).unwrap_or("any");
            (name.to_string(), ty.to_string())
        })
        .collect();
    let redact_outputs = redacted_names(node.obj);
    let success = match node.get("success") {
        Some(v) => Some(
            SuccessBlock::from_value(v)
                .map_err(|e| format!("node `{id}`: invalid success block: {e}"))?,
        ),
        None => None,
    };
    let checkpoints = if decision.is_none() && gate.is_none() {
        super::checkpoint::checkpoints_of(node)
    } else {
        Vec::new()
    };
    let defer_success = checkpoints.iter().any(|c| c.at == "after_outputs");
    let guidance = match work {
        Work::Model => Arc::new(crate::agent::Guidance::of_node(node.obj)),
        _ => no_guidance(),
    };
    // Only an `exec` or model attempt renders a brief (`node.rs`).
    let briefed = matches!(work, Work::Exec(_) | Work::Model);
    Ok(Job {
        id: id.to_string(),
        side_effects: super::checkpoint::has_side_effects(node),
        isolated,
        writes_workspace: effective_block(node, defaults, "requirements")
            .as_ref()
            .and_then(|r| str_of(r, "workspace"))
            == Some("read_write"),
        environment: effective_block(node, defaults, "requirements")
            .as_ref()
            .map(|r| {
                weft_ags::model::strs_of(r, "environment")
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        expressions_yield_false: false,
        output_types,
        defer_success,
        checkpoints,
        decision,
        notify,
        when: str_of(node.obj, "when").map(str::to_string),
        work,
        description: str_of(node.obj, "description")
            .filter(|_| briefed)
            .map(str::to_string),
        guidance,
        instructions: str_of(node.obj, "instructions").map(str::to_string),
        tier,
        limits,
        max_attempts,
        retry_on,
        backoff,
        feedback,
        on_exhausted,
        fallback,
        compensation,
        escalation_to,
        escalation_roles,
        gate,
        timeout_action,
        inputs,
        outputs,
        typed_outputs,
        redact_outputs,
        success,
        workspace: Arc::clone(&shared.workspace),
        idempotent: node
            .obj("x-weft-exec")
            .and_then(|x| x.get("idempotent"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        checkers: Arc::clone(&shared.checkers),
        criteria_wrapper: Arc::clone(&shared.criteria_wrapper),
    })
}

/// The declared `type` and `schema` of an input or output.
fn typed(name: &str, spec: &Value) -> Typed {
    Typed {
        name: name.to_string(),
        ty: spec
            .field("type")
            .and_then(Value::as_str)
            .map(str::to_string),
        schema: spec.field("schema").filter(|s| s.is_object()).cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use weft_core::FailureClass;

    fn job_of(doc: &Value, id: &str) -> Job {
        let root = doc.as_object().unwrap();
        let scope = weft_ags::model::Scope::root(root);
        let node = scope.nodes().into_iter().find(|n| n.id == id).unwrap();
        prepare(
            &node,
            weft_ags::model::obj_of(root, "defaults"),
            Path::new("/p"),
        )
        .unwrap()
    }

    #[test]
    fn keyword_members_and_default_lists_read_as_declared() {
        let doc = json!({"nodes": {
            "plain": {"x-weft-exec": {"run": "true"}},
            "other": {"x-weft-exec": {"run": "true"}},
            "declared": {"x-weft-exec": {"run": "true"}, "failure": {
                "on_exhausted": "skip", "timeout_action": "x-later",
                "retry": {"feedback": "none", "retry_on": ["timeout"]}
            }}
        }});
        let (plain, other, declared) = (
            job_of(&doc, "plain"),
            job_of(&doc, "other"),
            job_of(&doc, "declared"),
        );
        assert_eq!(plain.feedback, "failed_criteria");
        assert_eq!(plain.on_exhausted.as_str(), "fail");
        assert_eq!(plain.timeout_action.to_string(), "fail");
        assert_eq!(plain.retry_on, RetryOn::DEFAULT);
        assert_eq!(other.retry_on, RetryOn::DEFAULT);
        assert_eq!(declared.feedback, "none");
        assert_eq!(declared.on_exhausted, "skip");
        // A word AGS does not define is kept as written.
        assert_eq!(declared.timeout_action, "x-later");
        assert_eq!(
            declared.retry_on.classes().collect::<Vec<_>>(),
            [FailureClass::Timeout]
        );
        assert_eq!(&*plain.workspace, Path::new("/p"));
    }

    #[test]
    fn only_work_that_renders_a_brief_keeps_its_description() {
        let doc = json!({"nodes": {
            "exec": {"description": "Build it.", "x-weft-exec": {"run": "make"}},
            "pick": {"type": "decision", "description": "Pick one.", "decision": {
                "evaluator": "expression", "branches": [{"label": "a", "when": "true"}]
            }}
        }});
        assert_eq!(
            job_of(&doc, "exec").description.as_deref(),
            Some("Build it.")
        );
        let pick = job_of(&doc, "pick");
        assert_eq!(pick.description, None);
        let branches = &pick.decision.as_ref().unwrap().branches;
        assert_eq!(branches.len(), 1);
        assert_eq!(
            (branches[0].label.as_str(), branches[0].when.as_str()),
            ("a", "true")
        );
        assert!(branches[0].parsed.is_ok());
    }
}
