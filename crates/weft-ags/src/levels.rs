//! Conformance levels: which level each construct of a document needs (SPEC §19).
//!
//! A level-N harness MUST reject a document that *uses* a construct above N and say exactly
//! which constructs it lacks (`AG303`); `requires_conformance` alone is not trusted, because
//! its default (1) says nothing about what the graph actually uses. So this module walks the
//! whole document (the root, every inline body at any depth and every named fragment) and
//! reports each use of a construct as a [`Feature`] with a stable name. The table of names,
//! levels and the reasons behind each assignment is [`FEATURES`] and `docs/levels.md`.
//!
//! The walk is lenient like the rest of the model: shapes it does not understand are
//! skipped (the validator reports them), and it never panics.

use crate::diagnostic::{Code, Finding, pointer_push};
use crate::model::{Fields, Node, NodeType, Object, Scope, arr_of, obj_of, scopes, str_of};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashSet;

/// One use of a construct in a document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Feature {
    /// Stable feature name (see [`FEATURES`]).
    pub name: &'static str,
    /// The conformance level the construct needs.
    pub level: u8,
    /// JSON Pointer of the use.
    pub pointer: String,
}

/// All uses of one feature, summarised: how many, and where the first one is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FeatureUse {
    pub name: &'static str,
    pub level: u8,
    /// Number of uses in the whole document.
    pub count: usize,
    /// JSON Pointer of the first use, in walk order.
    pub pointer: String,
}

/// A feature name with its level and what it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureDef {
    pub name: &'static str,
    pub level: u8,
    /// A noun phrase for messages ("loop nodes").
    pub what: &'static str,
}

/// Features a harness below their level MUST report as ignored rather than refuse (SPEC
/// §14: compensation is the one exception to the rejection rule).
pub const IGNORABLE: &[&str] = &["compensation"];

macro_rules! features {
    ($( $id:ident => $name:literal, $level:literal, $what:literal; )*) => {
        /// Internal feature ids, indices into [`FEATURES`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        enum F { $( $id, )* }

        /// Every feature name weft detects, in level order. Documented in `docs/levels.md`.
        pub const FEATURES: &[FeatureDef] = &[
            $( FeatureDef { name: $name, level: $level, what: $what }, )*
        ];
    };
}

features! {
    // Level 1: the minimal harness (SPEC §19 table, row 1).
    Task => "task", 1, "task nodes";
    Gate => "gate", 1, "gate nodes";
    SequenceEdge => "sequence-edge", 1, "sequence edges and depends_on";
    JoinAll => "join-all", 1, "join: all";
    InputsFrom => "inputs-from", 1, "inputs bound with from";
    InputsValue => "inputs-value", 1, "inputs bound with value";
    InputsDefault => "inputs-default", 1, "input defaults";
    InputsImplicit => "inputs-implicit", 1, "implicitly bound inputs";
    CriterionCommand => "criterion-command", 1, "command criteria";
    CriterionFileExists => "criterion-file_exists", 1, "file_exists criteria";
    CriterionArtifactPresent => "criterion-artifact_present", 1, "artifact_present criteria";
    CriterionHuman => "criterion-human", 1, "human criteria";
    IntelligenceRouting => "intelligence-routing", 1, "intelligence tiers";
    Retry => "retry", 1, "failure.retry";
    OnExhausted => "on_exhausted", 1, "failure.on_exhausted";
    CheckpointBeforeStart => "checkpoint-before_start", 1, "human checkpoints at before_start";
    CheckpointAfterOutputs => "checkpoint-after_outputs", 1, "human checkpoints at after_outputs";
    NodeConstraintsBasic => "node-constraints-basic", 1, "max_agent_steps and max_wall_clock_seconds node limits";
    Hold => "hold", 1, "on_timeout: hold";
    // Level 2: the standard harness.
    Decision => "decision", 2, "decision nodes";
    ConditionalEdge => "conditional-edge", 2, "conditional edges";
    OnFailureEdge => "on_failure-edge", 2, "on_failure edges";
    NodeWhen => "node-when", 2, "node when guards";
    JoinAny => "join-any", 2, "join: any";
    JoinNOf => "join-n_of", 2, "join: n_of";
    CriterionExpression => "criterion-expression", 2, "expression criteria";
    CriterionRegex => "criterion-regex", 2, "regex criteria";
    CriterionJsonSchema => "criterion-json_schema", 2, "json_schema criteria";
    Fallback => "fallback", 2, "failure.fallback";
    Escalation => "escalation", 2, "failure.escalation";
    CheckpointBeforeSideEffects => "checkpoint-before_side_effects", 2, "human checkpoints at before_side_effects";
    CheckpointOnCriteriaFailure => "checkpoint-on_criteria_failure", 2, "human checkpoints at on_criteria_failure";
    CheckpointOnFailure => "checkpoint-on_failure", 2, "human checkpoints at on_failure";
    CheckpointOnEscalation => "checkpoint-on_escalation", 2, "human checkpoints at on_escalation";
    CheckpointWhen => "checkpoint-when", 2, "human checkpoint when guards";
    Policy => "policy", 2, "non-default policy switches";
    Parallelism => "parallelism", 2, "parallel scheduling";
    GateOnRejectRoute => "gate-on_reject-route", 2, "gate on_reject: route";
    HumanTimeoutEscalate => "human-timeout-escalate", 2, "on_timeout: escalate";
    TimeoutAction => "timeout_action", 2, "failure.timeout_action other than fail";
    Template => "template", 2, "${{ }} templates";
    NodeConstraints => "node-constraints", 2, "node constraints beyond the basic limits";
    GraphConstraints => "graph-constraints", 2, "graph budgets and limits";
    // Level 3: the full harness.
    Loop => "loop", 3, "loop nodes";
    Map => "map", 3, "map nodes";
    SubgraphUse => "subgraph-use", 3, "subgraph nodes with use";
    SubgraphInline => "subgraph-inline", 3, "subgraph nodes with inline";
    SubgraphRef => "subgraph-ref", 3, "subgraph nodes with ref";
    CriterionLlmJudge => "criterion-llm_judge", 3, "llm_judge criteria";
    CriterionExternal => "criterion-external", 3, "external criteria";
    Compensation => "compensation", 3, "failure.compensation";
}

impl F {
    fn def(self) -> FeatureDef {
        // The macro keeps `F` and `FEATURES` in the same order, so the index always exists;
        // the fallback only satisfies the no-panic rule.
        FEATURES.get(self as usize).copied().unwrap_or(FeatureDef {
            name: "unknown",
            level: 3,
            what: "an unknown construct",
        })
    }
}

/// The definition of a feature name, if weft knows it.
pub fn feature_def(name: &str) -> Option<FeatureDef> {
    FEATURES.iter().copied().find(|d| d.name == name)
}

/// Every use of every feature, in walk order: graph `policy` and `constraints`, then each
/// scope (the root, its inline bodies depth-first, each named fragment and its bodies) with
/// its `defaults`, `edges`, nodes (members in document order) and `success`.
pub fn detect(root: &Object) -> Vec<Feature> {
    let mut sink = Collect(Vec::new());
    walk_document(root, &mut sink);
    sink.0
}

/// One entry per feature used, with its count and first use, in first-use order. Cheaper
/// than [`detect`] on large documents: only the first use of each feature builds a pointer.
pub fn summarize(root: &Object) -> Vec<FeatureUse> {
    let mut sink = Summary::new();
    walk_document(root, &mut sink);
    sink.finish()
}

/// [`summarize`] over scopes and nodes the caller already built (the planner).
pub(crate) fn summarize_prepared<'n, 'a: 'n>(
    root: &Object,
    all: &[Scope<'a>],
    nodes: impl Fn(usize) -> &'n [Node<'a>],
) -> Vec<FeatureUse> {
    let mut sink = Summary::new();
    walk_prepared(root, all, nodes, &mut sink);
    sink.finish()
}

impl Summary {
    fn new() -> Summary {
        Summary {
            slots: vec![None; FEATURES.len()],
            order: Vec::new(),
        }
    }

    fn finish(self) -> Vec<FeatureUse> {
        let Summary { mut slots, order } = self;
        order
            .into_iter()
            .filter_map(|f| {
                let def = f.def();
                let (count, pointer) = slots.get_mut(f as usize)?.take()?;
                Some(FeatureUse {
                    name: def.name,
                    level: def.level,
                    count,
                    pointer,
                })
            })
            .collect()
    }
}

/// The level a document needs: the highest level among its features (0 when it uses none).
pub fn required_level(features: &[Feature]) -> u8 {
    features.iter().map(|f| f.level).max().unwrap_or(0)
}

/// `AG303` findings for a harness of conformance `level`: one per distinct feature above
/// it (at its first use, naming the feature, the level it needs and how many uses), plus one
/// when `requires_conformance` exceeds `level`. Features in [`IGNORABLE`] are not refused;
/// see [`ignored_above`].
pub fn refuse_above(root: &Object, level: u8) -> Vec<Finding> {
    refuse_unsupported(root, level, &[])
}

/// [`refuse_above`] for a harness that also supports the features named in `supported`
/// although they are above its level (a harness refuses what it lacks, not what it has).
pub fn refuse_unsupported(root: &Object, level: u8, supported: &[&str]) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(declared) = root.field("requires_conformance").and_then(Value::as_u64)
        && declared > u64::from(level)
    {
        out.push(
            Finding::new(
                Code::AG303,
                "/requires_conformance",
                format!(
                    "the graph declares requires_conformance: {declared}, above this harness's level {level}"
                ),
            )
            .help(format!(
                "run with a level-{declared} harness, or lower requires_conformance if the graph uses nothing above level {level}"
            )),
        );
    }
    // A harness at or above every feature's level refuses none: the document walk would
    // only find uses it skips (the engine is at level 3, the highest).
    if FEATURES.iter().all(|d| d.level <= level) {
        return out;
    }
    for used in summarize(root) {
        if used.level <= level || IGNORABLE.contains(&used.name) || supported.contains(&used.name) {
            continue;
        }
        let what = feature_def(used.name).map_or(used.name, |d| d.what);
        let uses = if used.count == 1 {
            "1 use".to_string()
        } else {
            format!("{} uses", used.count)
        };
        out.push(
            Finding::new(
                Code::AG303,
                used.pointer,
                format!(
                    "feature `{}` ({what}) needs conformance level {}, above this harness's level {level} ({uses}; the first is here)",
                    used.name, used.level
                ),
            )
            .help(format!(
                "run with a level-{} harness or remove the {what}",
                used.level
            )),
        );
    }
    out
}

/// Features above `level` that a harness ignores instead of refusing ([`IGNORABLE`]); it
/// MUST report each of them.
pub fn ignored_above(root: &Object, level: u8) -> Vec<FeatureUse> {
    summarize(root)
        .into_iter()
        .filter(|u| u.level > level && IGNORABLE.contains(&u.name))
        .collect()
}

/// Where uses go. The pointer is built lazily so that a summary allocates one per feature.
trait Sink {
    fn hit(&mut self, f: F, pointer: impl FnOnce() -> String);
}

struct Collect(Vec<Feature>);

impl Sink for Collect {
    fn hit(&mut self, f: F, pointer: impl FnOnce() -> String) {
        let def = f.def();
        self.0.push(Feature {
            name: def.name,
            level: def.level,
            pointer: pointer(),
        });
    }
}

struct Summary {
    slots: Vec<Option<(usize, String)>>,
    order: Vec<F>,
}

impl Sink for Summary {
    fn hit(&mut self, f: F, pointer: impl FnOnce() -> String) {
        let Some(slot) = self.slots.get_mut(f as usize) else {
            return;
        };
        match slot {
            Some((count, _)) => *count += 1,
            None => {
                *slot = Some((1, pointer()));
                self.order.push(f);
            }
        }
    }
}

fn has_template(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str).is_some_and(|s| s.contains("${{"))
}

fn walk_document<S: Sink>(root: &Object, sink: &mut S) {
    let all = scopes(root);
    let nodes: Vec<Vec<Node<'_>>> = all.iter().map(Scope::nodes).collect();
    walk_prepared(
        root,
        &all,
        |i| nodes.get(i).map_or(&[][..], Vec::as_slice),
        sink,
    );
}

/// The walk over scopes whose nodes are already built (the planner has them in its edge
/// sets; building them again would double the pointer allocations on large graphs).
fn walk_prepared<'n, 'a: 'n, S: Sink>(
    root: &Object,
    all: &[Scope<'a>],
    nodes: impl Fn(usize) -> &'n [Node<'a>],
    sink: &mut S,
) {
    if let Some(policy) = obj_of(root, "policy") {
        walk_policy(policy, sink);
    }
    if let Some(c) = obj_of(root, "constraints") {
        walk_graph_constraints(c, sink);
    }
    for (i, scope) in all.iter().enumerate() {
        walk_scope(scope, nodes(i), sink);
    }
}

/// Policy switches away from their Appendix A defaults are level 2 ("all policy switches").
/// Two keys are not switches: `default_human_timeout_seconds` only supplies the timeout value
/// a level-1 gate already honours, and `record_run: false` asks for less than the default.
fn walk_policy<S: Sink>(policy: &Object, sink: &mut S) {
    for (key, value) in policy {
        let default_like = match key.as_str() {
            "on_expression_error" => value.as_str() == Some("fail"),
            "on_node_failure" => value.as_str() == Some("isolate"),
            "on_unknown_field" => value.as_str() == Some("error"),
            "on_human_timeout" => value.as_str() == Some("hold"),
            "checkpointing" => value.as_str() == Some("per_node"),
            "resume" => value.as_str() == Some("resume_incomplete"),
            "record_run" => value.is_boolean(),
            _ => true,
        };
        if !default_like {
            sink.hit(F::Policy, || pointer_push(&pointer_push("", "policy"), key));
        }
        if key == "on_human_timeout" && value.as_str() == Some("escalate") {
            sink.hit(F::HumanTimeoutEscalate, || {
                "/policy/on_human_timeout".into()
            });
        }
    }
}

fn walk_graph_constraints<S: Sink>(c: &Object, sink: &mut S) {
    if c.field("max_parallel_nodes")
        .and_then(Value::as_f64)
        .is_some_and(|n| n > 1.0)
    {
        sink.hit(F::Parallelism, || "/constraints/max_parallel_nodes".into());
    }
    if let Some(key) = c
        .keys()
        .find(|k| !k.starts_with("x-") && k.as_str() != "max_parallel_nodes")
    {
        sink.hit(F::GraphConstraints, || pointer_push("/constraints", key));
    }
}

fn walk_scope<S: Sink>(scope: &Scope<'_>, nodes: &[Node<'_>], sink: &mut S) {
    if let Some(defaults) = obj_of(scope.obj, "defaults") {
        let base = scope.ptr("defaults");
        walk_common_blocks(defaults, &base, sink);
    }
    // Targets of explicit edges: a node with incoming edges and no `join` joins with `all`.
    // One pass over each edge's few members instead of hashed lookups (100k-edge graphs).
    let mut targets: HashSet<&str> = HashSet::new();
    let edges_ptr = scope.ptr("edges");
    for (i, e) in arr_of(scope.obj, "edges").iter().enumerate() {
        let Some(e) = e.as_object() else { continue };
        let mut f = Some(F::SequenceEdge);
        for (key, value) in e {
            match key.as_str() {
                "to" => {
                    if let Some(to) = value.as_str() {
                        targets.insert(to);
                    }
                }
                "kind" => {
                    f = match value.as_str() {
                        Some("sequence") => Some(F::SequenceEdge),
                        Some("conditional") => Some(F::ConditionalEdge),
                        Some("on_failure") => Some(F::OnFailureEdge),
                        _ => None,
                    }
                }
                _ => {}
            }
        }
        if let Some(f) = f {
            sink.hit(f, || pointer_push(&edges_ptr, &i.to_string()));
        }
    }
    for node in nodes {
        walk_node(node, &targets, sink);
    }
    if let Some(success) = obj_of(scope.obj, "success") {
        walk_success(success, &scope.ptr("success"), sink);
    }
}

/// The blocks `defaults` and nodes share: intelligence, constraints, failure, human, join.
/// Used for `defaults`, which may hold only these blocks; uses there count once each.
fn walk_common_blocks<S: Sink>(obj: &Object, base: &str, sink: &mut S) {
    if obj.has("intelligence") {
        sink.hit(F::IntelligenceRouting, || {
            pointer_push(base, "intelligence")
        });
    }
    if let Some(c) = obj_of(obj, "constraints") {
        walk_node_constraints(c, base, sink);
    }
    if let Some(failure) = obj_of(obj, "failure") {
        walk_failure(failure, base, sink);
    }
    if let Some(Value::Array(human)) = obj.field("human") {
        walk_human(human, base, sink);
    }
    if let Some(join) = str_of(obj, "join") {
        walk_join(join, || pointer_push(base, "join"), sink);
    }
}

fn walk_join<S: Sink>(join: &str, pointer: impl FnOnce() -> String, sink: &mut S) {
    let f = match join {
        "all" => F::JoinAll,
        "any" => F::JoinAny,
        "n_of" => F::JoinNOf,
        _ => return,
    };
    sink.hit(f, pointer);
}

fn walk_node<S: Sink>(node: &Node<'_>, targets: &HashSet<&str>, sink: &mut S) {
    let ty = node.node_type();
    match ty {
        Some(NodeType::Task) => sink.hit(F::Task, || node.pointer.clone()),
        Some(NodeType::Gate) => sink.hit(F::Gate, || node.ptr("type")),
        Some(NodeType::Decision) => sink.hit(F::Decision, || node.ptr("type")),
        Some(NodeType::Loop) => sink.hit(F::Loop, || node.ptr("loop")),
        Some(NodeType::Map) => sink.hit(F::Map, || node.ptr("map")),
        Some(NodeType::Subgraph) => {
            if let Some(b) = node.obj("subgraph") {
                let sub = || node.ptr("subgraph");
                if b.has("use") {
                    sink.hit(F::SubgraphUse, || pointer_push(&sub(), "use"));
                }
                if b.has("inline") {
                    sink.hit(F::SubgraphInline, || pointer_push(&sub(), "inline"));
                }
                if b.has("ref") {
                    sink.hit(F::SubgraphRef, || pointer_push(&sub(), "ref"));
                }
            } else {
                // No block (AG101/AG001): still a subgraph node, which no level below 3 runs.
                sink.hit(F::SubgraphInline, || node.ptr("type"));
            }
        }
        None => {}
    }
    // One pass over the node's members, in document order: on 10k-node graphs this is
    // markedly cheaper than a dozen hashed lookups per node, and "first use" then follows
    // the document.
    let mut has_deps = false;
    let mut has_join = false;
    for (key, value) in node.obj {
        match key.as_str() {
            "depends_on" if value.as_array().is_some_and(|a| !a.is_empty()) => {
                has_deps = true;
                sink.hit(F::SequenceEdge, || node.ptr("depends_on"));
            }
            "join" => {
                has_join = true;
                if let Some(join) = value.as_str() {
                    walk_join(join, || node.ptr("join"), sink);
                }
            }
            "when" => sink.hit(F::NodeWhen, || node.ptr("when")),
            "instructions" if has_template(Some(value)) => {
                sink.hit(F::Template, || node.ptr("instructions"));
            }
            "inputs" => {
                if let Some(inputs) = value.as_object() {
                    walk_inputs(node, inputs, sink);
                }
            }
            // A gate that declares intelligence is AG102; it never routes, so it is not
            // counted.
            "intelligence" if ty != Some(NodeType::Gate) => {
                sink.hit(F::IntelligenceRouting, || node.ptr("intelligence"));
            }
            "constraints" => {
                if let Some(c) = value.as_object() {
                    walk_node_constraints(c, &node.pointer, sink);
                }
            }
            "failure" => {
                if let Some(failure) = value.as_object() {
                    walk_failure(failure, &node.pointer, sink);
                }
            }
            "human" => {
                if let Some(human) = value.as_array() {
                    walk_human(human, &node.pointer, sink);
                }
            }
            "success" => {
                if let Some(success) = value.as_object() {
                    walk_success(success, &node.ptr("success"), sink);
                }
            }
            "gate" if ty == Some(NodeType::Gate) => {
                if let Some(g) = value.as_object() {
                    let gp = || node.ptr("gate");
                    if str_of(g, "on_reject") == Some("route") {
                        sink.hit(F::GateOnRejectRoute, || pointer_push(&gp(), "on_reject"));
                    }
                    walk_on_timeout(
                        str_of(g, "on_timeout"),
                        || pointer_push(&gp(), "on_timeout"),
                        sink,
                    );
                    if has_template(g.field("prompt")) {
                        sink.hit(F::Template, || pointer_push(&gp(), "prompt"));
                    }
                }
            }
            "decision" if ty == Some(NodeType::Decision) => {
                if let Some(d) = value.as_object()
                    && has_template(d.field("question"))
                {
                    sink.hit(F::Template, || {
                        pointer_push(&node.ptr("decision"), "question")
                    });
                }
            }
            "map" if ty == Some(NodeType::Map) => {
                if let Some(m) = value.as_object()
                    && m.field("max_parallel")
                        .and_then(Value::as_f64)
                        .is_some_and(|n| n > 1.0)
                {
                    sink.hit(F::Parallelism, || {
                        pointer_push(&node.ptr("map"), "max_parallel")
                    });
                }
            }
            _ => {}
        }
    }
    if !has_join && (has_deps || targets.contains(node.id)) {
        sink.hit(F::JoinAll, || node.pointer.clone());
    }
}

fn walk_inputs<S: Sink>(node: &Node<'_>, inputs: &Object, sink: &mut S) {
    for (name, spec) in inputs {
        let Some(spec) = spec.as_object() else {
            continue;
        };
        let at = |key: &str| pointer_push(&pointer_push(&node.ptr("inputs"), name), key);
        let mut bound = false;
        if spec.has("from") {
            bound = true;
            sink.hit(F::InputsFrom, || at("from"));
        }
        if spec.has("value") {
            bound = true;
            sink.hit(F::InputsValue, || at("value"));
        }
        if spec.has("template") {
            bound = true;
            sink.hit(F::Template, || at("template"));
        }
        if !bound {
            sink.hit(F::InputsImplicit, || {
                pointer_push(&node.ptr("inputs"), name)
            });
        }
        if spec.has("default") {
            sink.hit(F::InputsDefault, || at("default"));
        }
    }
}

fn walk_on_timeout<S: Sink>(value: Option<&str>, pointer: impl FnOnce() -> String, sink: &mut S) {
    match value {
        Some("hold") => sink.hit(F::Hold, pointer),
        Some("escalate") => sink.hit(F::HumanTimeoutEscalate, pointer),
        _ => {}
    }
}

/// `max_agent_steps` and `max_wall_clock_seconds` are what the level-1 example itself
/// declares (an agent-loop bound and a timeout), so they are level 1; every other limit is
/// "enforcement of all node constraints", level 2. Default values ask for nothing.
fn walk_node_constraints<S: Sink>(c: &Object, base: &str, sink: &mut S) {
    let ptr = || pointer_push(base, "constraints");
    let mut basic = false;
    let mut beyond: Option<&str> = None;
    for (key, value) in c {
        match key.as_str() {
            k if k.starts_with("x-") => {}
            "max_agent_steps" | "max_wall_clock_seconds" => basic = true,
            "determinism" if value.as_str() == Some("relaxed") => {}
            "isolation" if value.as_str() == Some("shared") => {}
            k => {
                if beyond.is_none() {
                    beyond = Some(k);
                }
            }
        }
    }
    if basic {
        sink.hit(F::NodeConstraintsBasic, ptr);
    }
    if let Some(k) = beyond {
        sink.hit(F::NodeConstraints, || pointer_push(&ptr(), k));
    }
}

fn walk_failure<S: Sink>(failure: &Object, base: &str, sink: &mut S) {
    let fp = || pointer_push(base, "failure");
    if failure.has("retry") {
        sink.hit(F::Retry, || pointer_push(&fp(), "retry"));
    }
    if failure.has("on_exhausted") {
        sink.hit(F::OnExhausted, || pointer_push(&fp(), "on_exhausted"));
    }
    if failure
        .field("fallback")
        .is_some_and(|f| !matches!(f, Value::Array(a) if a.is_empty()))
    {
        sink.hit(F::Fallback, || pointer_push(&fp(), "fallback"));
    }
    if failure.has("escalation") {
        sink.hit(F::Escalation, || pointer_push(&fp(), "escalation"));
        if let Some(esc) = obj_of(failure, "escalation")
            && has_template(esc.field("message"))
        {
            sink.hit(F::Template, || {
                pointer_push(&pointer_push(&fp(), "escalation"), "message")
            });
        }
    }
    if failure.has("compensation") {
        sink.hit(F::Compensation, || pointer_push(&fp(), "compensation"));
    }
    if let Some(action) = str_of(failure, "timeout_action")
        && action != "fail"
    {
        sink.hit(F::TimeoutAction, || pointer_push(&fp(), "timeout_action"));
    }
}

fn walk_human<S: Sink>(human: &[Value], base: &str, sink: &mut S) {
    for (i, h) in human.iter().enumerate() {
        let Some(h) = h.as_object() else { continue };
        let hp = || pointer_push(&pointer_push(base, "human"), &i.to_string());
        let f = match str_of(h, "at") {
            Some("before_start") => Some(F::CheckpointBeforeStart),
            Some("after_outputs") => Some(F::CheckpointAfterOutputs),
            Some("before_side_effects") => Some(F::CheckpointBeforeSideEffects),
            Some("on_criteria_failure") => Some(F::CheckpointOnCriteriaFailure),
            Some("on_failure") => Some(F::CheckpointOnFailure),
            Some("on_escalation") => Some(F::CheckpointOnEscalation),
            _ => None,
        };
        if let Some(f) = f {
            sink.hit(f, || pointer_push(&hp(), "at"));
        }
        if h.has("when") {
            sink.hit(F::CheckpointWhen, || pointer_push(&hp(), "when"));
        }
        walk_on_timeout(
            str_of(h, "on_timeout"),
            || pointer_push(&hp(), "on_timeout"),
            sink,
        );
        if has_template(h.field("prompt")) {
            sink.hit(F::Template, || pointer_push(&hp(), "prompt"));
        }
    }
}

fn walk_success<S: Sink>(success: &Object, base: &str, sink: &mut S) {
    for (i, c) in arr_of(success, "criteria").iter().enumerate() {
        let Some(c) = c.as_object() else { continue };
        let cp = || pointer_push(&pointer_push(base, "criteria"), &i.to_string());
        let f = match str_of(c, "kind") {
            Some("command") => F::CriterionCommand,
            Some("file_exists") => F::CriterionFileExists,
            Some("artifact_present") => F::CriterionArtifactPresent,
            Some("human") => F::CriterionHuman,
            Some("expression") => F::CriterionExpression,
            Some("regex") => F::CriterionRegex,
            Some("json_schema") => F::CriterionJsonSchema,
            Some("llm_judge") => F::CriterionLlmJudge,
            Some("external") => F::CriterionExternal,
            _ => continue,
        };
        sink.hit(f, || pointer_push(&cp(), "kind"));
        for key in ["prompt", "rubric"] {
            if has_template(c.get(key)) {
                sink.hit(F::Template, || pointer_push(&cp(), key));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_table_agree() {
        assert_eq!(F::Task.def().name, "task");
        assert_eq!(F::Compensation.def().name, "compensation");
        assert_eq!(F::Compensation.def().level, 3);
        let names: HashSet<&str> = FEATURES.iter().map(|d| d.name).collect();
        assert_eq!(names.len(), FEATURES.len(), "feature names are unique");
    }
}
