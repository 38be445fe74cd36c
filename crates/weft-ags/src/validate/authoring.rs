//! weft's own advisories (WF9xx): the authoring failure modes the AGS author lists, each
//! advice (severity info, which never fails `--strict`) with a fix. Each rule is tuned to fire on a real smell and stay silent on the
//! shipped examples; `docs/diagnostics.md` gives the rationale and an example of each.

use super::Ctx;
use super::dataflow::Reads;
use crate::diagnostic::{Code, Finding, pointer_push};
use crate::model::{Fields, NodeType, Tier, arr_of, effective_tier, entries_of, obj_of, str_of};
use serde_json::Value;

/// A brief shorter than this many words cannot state inputs, deliverable and constraints.
const MIN_BRIEF_WORDS: usize = 8;
/// Tier inflation needs a graph big enough for the absence of cheap nodes to mean something.
const MIN_AGENT_NODES_FOR_INFLATION: usize = 4;
/// Words that ask for judgement, which a minimal-tier model does badly.
const JUDGEMENT_WORDS: &[&str] = &[
    "decide",
    "judge",
    "evaluate",
    "assess",
    "prioritize",
    "prioritise",
    "choose",
    "weigh",
    "architect",
    "design",
];

pub(crate) fn check(ctx: &Ctx<'_>, reads: &Reads, out: &mut Vec<Finding>) {
    let mut agent_nodes = 0usize;
    let mut minimal_nodes = 0usize;
    let mut first_agent: Option<String> = None;
    for (si, set) in ctx.sets.iter().enumerate() {
        let defaults = ctx.defaults(si);
        for node in &set.nodes {
            let ty = node.node_type();
            // A task run by weft's `x-weft-exec` command or a decision by expression calls no
            // model: briefs and tiers are not advice that applies to it.
            let mechanical = node.obj.has("x-weft-exec")
                || obj_of(node.obj, "decision")
                    .and_then(|d| str_of(d, "evaluator"))
                    .is_some_and(|e| e == "expression");
            let agent = matches!(ty, Some(NodeType::Task | NodeType::Decision)) && !mechanical;
            let tier = effective_tier(node, defaults);
            if agent {
                agent_nodes += 1;
                first_agent.get_or_insert_with(|| node.pointer.clone());
                if tier == Some(Tier::Minimal) {
                    minimal_nodes += 1;
                }
            }
            let description = str_of(node.obj, "description").unwrap_or_default();
            // WF901: an agent brief too short to act on.
            if agent
                && description.split_whitespace().count() < MIN_BRIEF_WORDS
                && !node.obj.has("instructions")
            {
                out.push(
                    Finding::new(
                        Code::WF901,
                        node.ptr("description"),
                        format!("the brief of '{}' is {} word(s): too short for an agent to act on", node.id, description.split_whitespace().count()),
                    )
                    .help("say what to produce, from which inputs, and what to avoid (a few sentences), or add `instructions`"),
                );
            }
            // WF905: a minimal node asked to exercise judgement.
            if agent && tier == Some(Tier::Minimal) {
                let lower = description.to_lowercase();
                if let Some(word) = JUDGEMENT_WORDS.iter().find(|w| {
                    lower
                        .split(|c: char| !c.is_alphanumeric())
                        .any(|t| t == **w)
                }) {
                    out.push(
                        Finding::new(
                            Code::WF905,
                            node.ptr("intelligence"),
                            format!(
                                "'{}' runs at the minimal tier but its brief asks it to {word}",
                                node.id
                            ),
                        )
                        .help("raise the tier to standard or higher, or make the step mechanical"),
                    );
                }
            }
            let criteria: Vec<&serde_json::Map<String, Value>> = node
                .obj("success")
                .map(|s| {
                    arr_of(s, "criteria")
                        .iter()
                        .filter_map(Value::as_object)
                        .collect()
                })
                .unwrap_or_default();
            let required: Vec<&str> = criteria
                .iter()
                .filter(|c| str_of(c, "severity") != Some("advisory"))
                .filter_map(|c| str_of(c, "kind"))
                .collect();
            // WF902: presence is not quality on a node that needs a capable model.
            if agent
                && tier.is_some_and(|t| t >= Tier::Standard)
                && !required.is_empty()
                && required.iter().all(|k| *k == "artifact_present")
            {
                out.push(
                    Finding::new(
                        Code::WF902,
                        node.ptr("success"),
                        format!("'{}' is a {}-tier node whose only required criteria check that outputs exist", node.id, tier.map(Tier::as_str).unwrap_or("standard")),
                    )
                    .help("add a criterion on the content: json_schema, regex, expression, command or a multi-sample llm_judge"),
                );
            }
            // WF903: a judge-only or single-sample judge gate in front of a fan-out.
            let judges: Vec<u64> = criteria
                .iter()
                .filter(|c| {
                    str_of(c, "severity") != Some("advisory")
                        && str_of(c, "kind") == Some("llm_judge")
                })
                .map(|c| c.field("samples").and_then(Value::as_u64).unwrap_or(1))
                .collect();
            if !judges.is_empty() {
                let judge_only = required.iter().all(|k| *k == "llm_judge");
                let single = judges.contains(&1);
                let fans_out = set.outgoing[node.index].len() >= 2
                    || set
                        .successors(node.index)
                        .any(|s| set.nodes[s].node_type() == Some(NodeType::Map));
                if fans_out && (judge_only || single) {
                    out.push(
                        Finding::new(
                            Code::WF903,
                            node.ptr("success"),
                            format!(
                                "'{}' gates a fan-out on {}: one wrong verdict is multiplied downstream",
                                node.id,
                                if judge_only { "model judgement alone" } else { "a single-sample judge" }
                            ),
                        )
                        .help("add a deterministic required criterion and use samples: 3 or more"),
                    );
                }
            }
            // WF907: external checkers are not portable.
            let cptr = pointer_push(&node.ptr("success"), "criteria");
            for (i, c) in criteria.iter().enumerate() {
                if str_of(c, "kind") == Some("external") {
                    out.push(
                        Finding::new(
                            Code::WF907,
                            pointer_push(&cptr, &i.to_string()),
                            format!("criterion '{}' uses an external checker, which other harnesses do not have", str_of(c, "id").unwrap_or("?")),
                        )
                        .help("prefer a command or expression criterion; if the checker is needed, document it next to the graph"),
                    );
                }
            }
            // WF906: depends_on on a node that produces data, with none of it wired in.
            if !reads.dynamic.contains(&si) && node.obj.has("inputs") {
                let sources = reads.sources.get(&(si, node.index));
                // One finding per node, naming every such dependency: a wide fan-in would
                // otherwise bury the reader in near-identical lines.
                let unread: Vec<&str> = node
                    .depends_on()
                    .filter(|dep| {
                        set.index.get(dep).is_some_and(|&d| {
                            entries_of(set.nodes[d].obj, "outputs").next().is_some()
                                && !sources.is_some_and(|s| s.contains(&d))
                        })
                    })
                    .collect();
                if let Some(first) = unread.first() {
                    let (what, them) = if unread.len() == 1 {
                        (format!("'{first}'"), "its")
                    } else {
                        (
                            unread
                                .iter()
                                .map(|d| format!("'{d}'"))
                                .collect::<Vec<_>>()
                                .join(", "),
                            "their",
                        )
                    };
                    out.push(
                        Finding::new(
                            Code::WF906,
                            node.ptr("depends_on"),
                            format!("'{}' depends on {what} but reads none of {them} outputs", node.id),
                        )
                        .help(format!("wire the data with an input `from: nodes.{first}.outputs.<name>`, or drop the dependency if only ordering matters")),
                    );
                }
            }
            // WF908: a container granting permissions its children do not narrow.
            if ty.is_some_and(NodeType::is_container) {
                let grants = node.obj("requirements").is_some_and(|r| {
                    str_of(r, "workspace") == Some("read_write")
                        || arr_of(r, "permissions").iter().any(|p| {
                            p.as_str()
                                .is_some_and(|p| p.contains(":write") || p.starts_with("shell:"))
                        })
                });
                if grants && let Some(child) = ctx.child_scope(si, node) {
                    let silent = ctx.sets[child]
                        .nodes
                        .iter()
                        .all(|n| !n.obj.has("requirements"));
                    if silent {
                        out.push(
                                Finding::new(
                                    Code::WF908,
                                    node.ptr("requirements"),
                                    format!("'{}' grants write or shell access but none of its children declares requirements", node.id),
                                )
                                .help("declare requirements on each child so every step gets only what it needs"),
                            );
                    }
                }
            }
        }
    }
    // WF904: every agent node at standard or above.
    if agent_nodes >= MIN_AGENT_NODES_FOR_INFLATION && minimal_nodes == 0 {
        out.push(
            Finding::new(
                Code::WF904,
                first_agent.unwrap_or_default(),
                format!("none of the {agent_nodes} agent nodes runs at the minimal tier"),
            )
            .help("mechanical steps (run a command, transcribe, reformat) rarely need more than intelligence.tier: minimal"),
        );
    }
}
