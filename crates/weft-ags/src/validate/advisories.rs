//! The AGS advisories (AG9xx, warnings): AG901 and AG903 come from `refs`; the rest are here.
//! Differences from the reference validator: AG902 and AG907 look at the node's effective
//! blocks (after `defaults`), and AG904 counts reads through a criterion's `output:` field.

use super::Ctx;
use super::dataflow::Reads;
use crate::diagnostic::{Code, Finding, pointer_push};
use crate::model::{
    Fields, NodeType, Tier, arr_of, effective_block, entries_of, obj_of, str_of, strs_of,
};
use serde_json::Value;

/// Permissions that mutate the outside world (the reference's classifier, AG902).
const MUTATING: &[&str] = &[
    "fs:write",
    "fs:delete",
    "git:commit",
    "git:push",
    "shell:exec",
];

pub(crate) fn check(ctx: &Ctx<'_>, reads: &Reads, out: &mut Vec<Finding>) {
    let mut any_estimate = false;
    for (si, set) in ctx.sets.iter().enumerate() {
        let defaults = ctx.defaults(si);
        for node in &set.nodes {
            any_estimate |= node.obj.has("estimate");
            let ty = node.node_type();
            // AG902: a side-effecting task with no definition of done.
            if ty == Some(NodeType::Task) && !node.obj.has("success") {
                let req = effective_block(node, defaults, "requirements");
                let mutating = req.as_deref().is_some_and(|r| {
                    str_of(r, "workspace") == Some("read_write")
                        || strs_of(r, "permissions")
                            .any(|p| MUTATING.iter().any(|m| p.starts_with(m)))
                });
                if mutating {
                    out.push(
                        Finding::new(Code::AG902, node.pointer.clone(), "side-effecting node declares no success block")
                            .help("add `success:` with at least one deterministic criterion (command, file_exists, expression…) so its changes are checked"),
                    );
                }
            }
            // AG905: frontier without a rationale.
            if let Some(intel) = node.obj("intelligence")
                && str_of(intel, "tier") == Some(Tier::Frontier.as_str())
                && !intel.has("rationale")
            {
                out.push(
                    Finding::new(
                        Code::AG905,
                        node.ptr("intelligence"),
                        "frontier-tier node has no rationale",
                    )
                    .help("add intelligence.rationale saying why the most capable tier is needed"),
                );
            }
            // AG906: only judges or humans decide success.
            if let Some(success) = node.obj("success") {
                let required: Vec<&str> = arr_of(success, "criteria")
                    .iter()
                    .filter(|c| c.field("severity").and_then(Value::as_str) != Some("advisory"))
                    .filter_map(|c| c.field("kind").and_then(Value::as_str))
                    .collect();
                if !required.is_empty()
                    && required.iter().all(|k| matches!(*k, "llm_judge" | "human"))
                {
                    out.push(
                        Finding::new(Code::AG906, node.ptr("success"), "success block has no deterministic required criterion")
                            .help("add a required command, file_exists, artifact_present, json_schema, regex or expression criterion"),
                    );
                }
            }
            // AG907: strict determinism needs a seed.
            if let Some(c) = effective_block(node, defaults, "constraints")
                && str_of(&c, "determinism") == Some("strict")
                && !c.has("seed")
            {
                out.push(
                    Finding::new(
                        Code::AG907,
                        node.ptr("constraints"),
                        "determinism 'strict' without a seed",
                    )
                    .help("add constraints.seed, or relax determinism to 'reproducible'"),
                );
            }
            // AG909: a non-local ref must pin its content.
            if ty == Some(NodeType::Subgraph)
                && let Some(r) = node.block().and_then(|b| obj_of(b, "ref"))
            {
                let uri = str_of(r, "uri").unwrap_or_default();
                let local = uri.starts_with('.') || uri.starts_with('/');
                if !local && !r.has("integrity") {
                    out.push(
                        Finding::new(
                            Code::AG909,
                            pointer_push(&node.ptr("subgraph"), "ref"),
                            format!("non-local subgraph reference '{uri}' has no integrity digest"),
                        )
                        .help("add ref.integrity: sha256-… (`weft digest CHILD` prints it)"),
                    );
                }
            }
            // AG904: declared outputs nobody reads.
            if !reads.dynamic.contains(&si) {
                for (name, _) in entries_of(node.obj, "outputs") {
                    if !reads.outputs.contains(&(si, node.index, name.to_string())) {
                        out.push(
                            Finding::new(
                                Code::AG904,
                                pointer_push(&node.ptr("outputs"), name),
                                format!("output '{name}' of node '{}' is never read", node.id),
                            )
                            .help(
                                "read it downstream (inputs, graph outputs, criteria) or remove it",
                            ),
                        );
                    }
                }
            }
        }
    }
    // AG908: no way to preview cost.
    let ceiling = obj_of(ctx.root, "constraints").is_some_and(|c| c.has("max_cost_usd"));
    if !ceiling && !any_estimate {
        out.push(
            Finding::new(
                Code::AG908,
                "",
                "graph has neither constraints.max_cost_usd nor any node estimate; its cost cannot be previewed",
            )
            .help("set constraints.max_cost_usd, or give nodes `estimate: {cost_usd: …}`"),
        );
    }
}
