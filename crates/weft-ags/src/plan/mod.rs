//! The execution preview of a document: what a run would do, without running it.
//!
//! This is the level-0 "render a plan" of SPEC §19: per scope, the deterministic order
//! (Kahn's algorithm, ties by declaration order), parallel groups, entrypoints, unreachable
//! nodes and the critical path; for the whole document, the conformance level it needs,
//! the worst-case node executions multiplied through nesting, the tier histogram, the cost
//! preview and every human interaction. Field meanings are in `docs/planner.md`.
//!
//! [`plan`] is a pure function of the parsed document: it never fails and never panics, even
//! on schema-invalid input (it plans what exists), and it is O(V + E) per scope: one
//! [`EdgeSet`] is built per scope and every pass walks it once.

mod cost;
mod critical_path;
mod human;
mod worst_case;

use crate::edges::EdgeSet;
use crate::levels::{self, FeatureUse};
use crate::model::{
    Fields, NodeType, Object, Scope, ScopeKind, effective_tier, obj_of, scopes, str_of,
};
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;

/// The conformance level of this crate alone: a reader (SPEC §19 level 0). [`plan`] plans
/// for it; a harness that runs documents plans for its own level with [`plan_for`].
pub const READER_LEVEL: u8 = 0;

/// What the harness a plan is made for can run: its conformance level, and the features
/// above that level it supports all the same. Features it lacks are listed in
/// [`Plan::unsupported_features`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Harness<'s> {
    pub level: u8,
    pub supported_above: &'s [&'s str],
}

impl Harness<'static> {
    /// This crate alone: it reads and plans, it runs nothing.
    pub const READER: Harness<'static> = Harness {
        level: READER_LEVEL,
        supported_above: &[],
    };
}

/// What an unset tier routes at (weft's documented default; the spec defines none).
pub const DEFAULT_TIER: &str = "standard";

/// The execution preview of one document. Serialized as-is by `weft plan --json`.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The graph `id`, when it is a string.
    pub graph_id: Option<String>,
    /// The graph `title`, when it is a string.
    pub title: Option<String>,
    /// `requires_conformance` as declared (informative only; features decide).
    pub declared_level: Option<u64>,
    /// The level the features actually used need.
    pub required_level: u8,
    /// The level of the harness the plan is for ([`Harness::level`]).
    pub harness_level: u8,
    /// Feature name → number of uses, over the whole document.
    pub features: BTreeMap<&'static str, usize>,
    /// Features above the harness's level that it does not support all the same, highest
    /// level first, then in first-use order: what that harness would refuse (AG303).
    pub unsupported_features: Vec<FeatureUse>,
    /// One entry per scope: the root, each inline body (depth-first), each named fragment.
    pub scopes: Vec<ScopePlan>,
    /// Worst-case node executions of the whole run (saturating).
    pub worst_case_executions: u64,
    /// `constraints.max_node_executions`, when set.
    pub max_node_executions: Option<u64>,
    /// Whether the worst case exceeds `max_node_executions` (null without a limit).
    pub exceeds_max_node_executions: Option<bool>,
    /// Node pointer → worst-case executions of that node over the whole run.
    pub executions: Executions,
    /// Children the planner could not see into (`ref` documents, unknown fragments).
    pub unresolved_refs: Vec<Unresolved>,
    /// Where a recursion was cut (a `use` cycle, a fallback cycle).
    pub recursion: Vec<Recursion>,
    /// Histogram of effective tiers over agent-consuming nodes.
    pub tiers: Tiers,
    /// How unset tiers are routed.
    pub tier_routing_note: String,
    /// The cost preview.
    pub cost: Cost,
    /// Every human interaction.
    pub gates: HumanInteractions,
}

/// The plan of one scope.
#[derive(Clone, Debug, Serialize)]
pub struct ScopePlan {
    /// JSON Pointer of the graph or fragment (`""` for the root).
    pub pointer: String,
    /// Id of the container node that owns this scope (null for the root and named fragments).
    pub owner: Option<String>,
    /// `root`, `loop_body`, `map_body`, `inline` or `fragment`.
    pub kind: &'static str,
    /// The fragment name, for named fragments.
    pub name: Option<String>,
    /// Nesting depth (0 for the root and named fragments).
    pub depth: usize,
    /// Number of nodes.
    pub nodes: usize,
    /// Deterministic topological order; null when the scope has a cycle.
    pub order: Option<Vec<String>>,
    /// A witness of the first cycle (`[a, b, a]`) when `order` is null.
    pub cycle: Option<Vec<String>>,
    /// ASAP levels: nodes that could run together; empty when cyclic.
    pub parallel_groups: Vec<Vec<String>>,
    /// Declared entrypoints.
    pub entrypoints: Vec<String>,
    /// Nodes not reachable from any entrypoint, in declaration order.
    pub unreachable: Vec<String>,
    /// Longest path by estimated wall-clock seconds; null when cyclic or empty.
    pub critical_path: Option<CriticalPath>,
    /// Worst-case executions of one instance of this scope.
    pub worst_case_executions: u64,
    /// How many instances of this scope run in the worst case (root: 1; unused: 0).
    pub instances: u64,
}

/// The critical path of a scope.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CriticalPath {
    /// Sum of `estimate.wall_clock_seconds` along the path.
    pub seconds: f64,
    /// Node ids, first to last.
    pub nodes: Vec<String>,
}

/// A child the planner cannot see into; it counts as one execution of its node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unresolved {
    /// Pointer of the container block.
    pub pointer: String,
    /// `ref` (another document) or `unknown_fragment` (a `use` naming no fragment).
    pub kind: &'static str,
    /// The `ref.uri` or the fragment name.
    pub target: String,
}

/// A recursion the planner cut to stay finite.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Recursion {
    /// The node where the cycle was cut.
    pub pointer: String,
    /// `recursive_use` (a fragment that uses itself, transitively) or `fallback_cycle`.
    pub reason: &'static str,
    /// The fragment name, scope pointer or node id the cycle returns to.
    pub target: String,
}

/// Node pointer → count, serialized as a JSON object in document walk order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Executions(pub Vec<(String, u64)>);

impl Executions {
    /// The count of the node at `pointer`, if it is a node of the document.
    pub fn get(&self, pointer: &str) -> Option<u64> {
        self.0.iter().find(|(p, _)| p == pointer).map(|(_, c)| *c)
    }
}

impl Serialize for Executions {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// Effective tiers of agent-consuming nodes (every type but `gate`), all scopes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tiers {
    pub minimal: usize,
    pub standard: usize,
    pub advanced: usize,
    pub frontier: usize,
    /// No tier declared or inherited (routes at [`DEFAULT_TIER`]).
    pub unset: usize,
}

/// The cost preview.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cost {
    pub expected_usd: f64,
    pub worst_case_usd: f64,
    /// `constraints.max_cost_usd`.
    pub ceiling_usd: Option<f64>,
    pub nodes_without_estimate: usize,
    /// Worst case above the ceiling; null without a ceiling.
    pub exceeds_ceiling: Option<bool>,
    /// Token preview; null unless some estimate gives tokens or a token ceiling is set.
    pub tokens: Option<TokenCost>,
}

/// The token preview, computed like the dollar one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TokenCost {
    pub expected: u64,
    pub worst_case: u64,
    /// `constraints.max_total_tokens`.
    pub ceiling: Option<u64>,
    pub nodes_without_estimate: usize,
    pub exceeds_ceiling: Option<bool>,
}

/// Every human interaction of the document.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HumanInteractions {
    /// Gate nodes.
    pub nodes: Vec<HumanGate>,
    /// `human` checkpoints on nodes (own or inherited from `defaults`).
    pub checkpoints: Vec<HumanCheckpoint>,
    /// `human`-kind success criteria (node or scope level).
    pub criteria: Vec<HumanCriterion>,
    /// Failure escalations that go to a person (`failure.escalation.to: human`, after
    /// `defaults`): the node's ladder ends with someone being asked.
    pub escalations: Vec<HumanEscalation>,
}

/// A failure escalation to a person.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HumanEscalation {
    pub pointer: String,
    pub node: String,
    pub roles: Vec<String>,
    pub channel: Option<String>,
}

/// A gate node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HumanGate {
    pub pointer: String,
    pub node: String,
    pub mode: Option<String>,
    pub roles: Vec<String>,
    /// Effective: the gate's own, else `policy.on_human_timeout`, else `hold`.
    pub on_timeout: String,
    /// Effective: the gate's own, else `policy.default_human_timeout_seconds`.
    pub timeout_seconds: Option<f64>,
    pub on_reject: String,
}

/// A `human` checkpoint of a node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HumanCheckpoint {
    /// Pointer of the checkpoint entry (in the node, or in `defaults.human`).
    pub pointer: String,
    /// The node it belongs to.
    pub node: String,
    pub id: Option<String>,
    pub at: Option<String>,
    pub mode: Option<String>,
    pub required: bool,
    pub roles: Vec<String>,
    pub on_timeout: String,
    pub timeout_seconds: Option<f64>,
}

/// A `human` success criterion.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HumanCriterion {
    pub pointer: String,
    /// The node, or null for a graph or fragment `success` block.
    pub node: Option<String>,
    pub id: Option<String>,
    /// False for `severity: advisory`.
    pub required: bool,
    pub roles: Vec<String>,
}

/// Every scope with its edge set and reachability, built once and shared by all passes.
pub(crate) struct Analysed<'a> {
    pub scopes: Vec<Scope<'a>>,
    pub sets: Vec<EdgeSet<'a>>,
    pub reachable: Vec<Vec<bool>>,
}

impl<'a> Analysed<'a> {
    fn new(root: &'a Object) -> Analysed<'a> {
        let scopes = scopes(root);
        let sets: Vec<EdgeSet<'a>> = scopes.iter().map(EdgeSet::build).collect();
        let reachable = scopes
            .iter()
            .zip(&sets)
            .map(|(scope, set)| {
                let starts: Vec<usize> = scope
                    .entrypoints()
                    .filter_map(|e| set.index.get(e).copied())
                    .collect();
                set.reachable_from(starts)
            })
            .collect();
        Analysed {
            scopes,
            sets,
            reachable,
        }
    }
}

fn kind_name(kind: &ScopeKind<'_>) -> &'static str {
    match kind {
        ScopeKind::Root => "root",
        ScopeKind::LoopBody => "loop_body",
        ScopeKind::MapBody { .. } => "map_body",
        ScopeKind::Inline => "inline",
        ScopeKind::Named(_) => "fragment",
    }
}

/// Plans a document for the reader alone ([`Harness::READER`]): every feature above level
/// 0 is unsupported. Deterministic: the same document always gives the same plan.
pub fn plan(root: &Object) -> Plan {
    plan_for(root, Harness::READER)
}

/// Plans a document for `harness`. Deterministic: the same document and harness always give
/// the same plan.
pub fn plan_for(root: &Object, harness: Harness<'_>) -> Plan {
    let a = Analysed::new(root);
    let summary = levels::summarize_prepared(root, &a.scopes, |i| {
        a.sets.get(i).map_or(&[][..], |s| s.nodes.as_slice())
    });
    let required_level = summary.iter().map(|u| u.level).max().unwrap_or(0);
    let features = summary.iter().map(|u| (u.name, u.count)).collect();
    let mut unsupported_features: Vec<FeatureUse> = summary
        .into_iter()
        .filter(|u| u.level > harness.level && !harness.supported_above.contains(&u.name))
        .collect();
    // Stable: equal levels keep first-use order.
    unsupported_features.sort_by_key(|u| std::cmp::Reverse(u.level));

    let wc = worst_case::analyse(&a);
    let cost = cost::cost(root, &a, &wc);
    let gates = human::collect(root, &a);

    let mut scope_plans = Vec::with_capacity(a.scopes.len());
    let mut executions = Vec::new();
    let mut tiers = Tiers::default();
    for (si, scope) in a.scopes.iter().enumerate() {
        let set = &a.sets[si];
        let ids = |vs: &[usize]| -> Vec<String> {
            vs.iter().map(|&v| set.nodes[v].id.to_string()).collect()
        };
        let topo = set.topological_order();
        let (order, cycle, parallel_groups, critical_path) = match &topo {
            Some(order) => (
                Some(ids(order)),
                None,
                critical_path::parallel_groups(set, order)
                    .iter()
                    .map(|g| ids(g))
                    .collect(),
                critical_path::critical_path(set, order),
            ),
            None => (None, set.cycles().first().map(|c| ids(c)), Vec::new(), None),
        };
        let reach = &a.reachable[si];
        let unreachable = (0..set.len())
            .filter(|&v| !reach.get(v).copied().unwrap_or(false))
            .map(|v| set.nodes[v].id.to_string())
            .collect();
        let instances = wc.instances[si];
        for (node, f) in set.nodes.iter().zip(&wc.facts[si]) {
            let n = instances.saturating_mul(f.count).saturating_mul(f.attempts);
            executions.push((node.pointer.clone(), n));
        }
        let defaults = obj_of(scope.obj, "defaults");
        for node in &set.nodes {
            match node.node_type() {
                None | Some(NodeType::Gate) => {}
                Some(_) => match effective_tier(node, defaults) {
                    Some(crate::model::Tier::Minimal) => tiers.minimal += 1,
                    Some(crate::model::Tier::Standard) => tiers.standard += 1,
                    Some(crate::model::Tier::Advanced) => tiers.advanced += 1,
                    Some(crate::model::Tier::Frontier) => tiers.frontier += 1,
                    None => tiers.unset += 1,
                },
            }
        }
        scope_plans.push(ScopePlan {
            pointer: scope.pointer.clone(),
            owner: scope.owner.as_ref().map(|(id, _)| id.clone()),
            kind: kind_name(&scope.kind),
            name: match scope.kind {
                ScopeKind::Named(n) => Some(n.to_string()),
                _ => None,
            },
            depth: scope.depth,
            nodes: set.len(),
            order,
            cycle,
            parallel_groups,
            entrypoints: scope.entrypoints().map(str::to_string).collect(),
            unreachable,
            critical_path,
            worst_case_executions: wc.per_instance[si],
            instances,
        });
    }

    let worst_case_executions = wc.per_instance.first().copied().unwrap_or(0);
    let max_node_executions = obj_of(root, "constraints")
        .and_then(|c| worst_case::count_value(c.field("max_node_executions")));
    Plan {
        graph_id: str_of(root, "id").map(str::to_string),
        title: str_of(root, "title").map(str::to_string),
        declared_level: root
            .field("requires_conformance")
            .and_then(serde_json::Value::as_u64),
        required_level,
        harness_level: harness.level,
        features,
        unsupported_features,
        scopes: scope_plans,
        worst_case_executions,
        max_node_executions,
        exceeds_max_node_executions: max_node_executions.map(|m| worst_case_executions > m),
        executions: Executions(executions),
        unresolved_refs: wc.unresolved,
        recursion: wc.recursion,
        tiers,
        tier_routing_note: format!(
            "nodes without a tier (own or from defaults) route at `{DEFAULT_TIER}`, weft's documented default (the spec defines none)"
        ),
        cost,
        gates,
    }
}
