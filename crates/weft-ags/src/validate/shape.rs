//! Layer 2, per node: the rules about a node's own parts and the nodes it names outside the
//! edge set (type blocks, reserved names, decisions, tiers, fallbacks, compensation,
//! escalation, fragments). These carry the dedicated codes the reference validator cannot
//! reach (AG101, AG102, AG104) because its schema layer stops first.

use super::Ctx;
use super::suggest::did_you_mean;
use crate::diagnostic::{Code, Finding, pointer_push};
use crate::model::{
    Fields, Node, NodeType, Object, ScopeKind, Tier, arr_of, entries_of, obj_of, str_of, strs_of,
};
use serde_json::Value;
use std::collections::HashSet;

/// Namespace roots an AGX expression resolves first (one list, `weft_agx::names`).
pub(crate) use weft_agx::names::RESERVED_ROOTS;

pub(crate) fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for (si, set) in ctx.sets.iter().enumerate() {
        let scope = &ctx.scopes[si];
        check_edges_shape(scope.obj, &scope.pointer, out);
        if let Some(d) = ctx.defaults(si)
            && let Some(intel) = obj_of(d, "intelligence")
        {
            check_intelligence(
                intel,
                &pointer_push(&scope.ptr("defaults"), "intelligence"),
                out,
            );
        }
        if let Some(req) = ctx.defaults(si).and_then(|d| obj_of(d, "requirements")) {
            check_secrets(
                ctx,
                req,
                &pointer_push(&scope.ptr("defaults"), "requirements"),
                out,
            );
        }
        if let ScopeKind::MapBody { item, index } = scope.kind {
            for (name, field) in [(item, "as"), (index, "index_as")] {
                if RESERVED_ROOTS.contains(&name)
                    && name != "item"
                    && let Some((_, owner_ptr)) = &scope.owner
                {
                    out.push(
                        Finding::new(
                            Code::AG117,
                            pointer_push(&pointer_push(owner_ptr, "map"), field),
                            format!("map.{field} '{name}' is a reserved namespace root"),
                        )
                        .help("choose another name; reserved roots would shadow graph data"),
                    );
                }
            }
        }
        for node in &set.nodes {
            check_node(ctx, si, node, out);
        }
    }
}

/// AG103: `when` on a sequence edge (explicit `kind: sequence` or no kind).
fn check_edges_shape(scope: &Object, scope_ptr: &str, out: &mut Vec<Finding>) {
    let edges_ptr = pointer_push(scope_ptr, "edges");
    for (i, edge) in arr_of(scope, "edges").iter().enumerate() {
        let Some(edge) = edge.as_object() else {
            continue;
        };
        let kind = str_of(edge, "kind");
        if matches!(kind, None | Some("sequence")) && edge.has("when") {
            out.push(
                Finding::new(
                    Code::AG103,
                    pointer_push(&pointer_push(&edges_ptr, &i.to_string()), "when"),
                    "a sequence edge must not declare `when`",
                )
                .help("set kind: conditional to guard the edge, or remove `when`"),
            );
        }
    }
}

fn check_node(ctx: &Ctx<'_>, si: usize, node: &Node<'_>, out: &mut Vec<Finding>) {
    let set = &ctx.sets[si];
    if node.id == "self" {
        out.push(
            Finding::new(
                Code::AG117,
                node.pointer.clone(),
                "'self' is a reserved namespace root and cannot be a node id",
            )
            .help("rename the node"),
        );
    }
    let ty = node.node_type();
    // AG101: exactly the block that matches the type, and it is required.
    if let Some(ty) = ty {
        for other in NodeType::ALL {
            let Some(block) = other.block() else { continue };
            let present = node.obj.contains_key(block);
            if other == ty && !present {
                out.push(
                    Finding::new(
                        Code::AG101,
                        node.pointer.clone(),
                        format!("node of type '{}' has no '{block}' block", ty.as_str()),
                    )
                    .help(format!("add a '{block}:' block describing the {block}")),
                );
            } else if other != ty && present {
                out.push(
                    Finding::new(
                        Code::AG101,
                        node.ptr(block),
                        format!("node of type '{}' declares a '{block}' block", ty.as_str()),
                    )
                    .help(format!(
                        "set type: {block} if this node is a {block}, or remove the block"
                    )),
                );
            }
        }
    }
    if ty == Some(NodeType::Gate) && node.obj.has("intelligence") {
        out.push(
            Finding::new(
                Code::AG102,
                node.ptr("intelligence"),
                "gate nodes must not declare intelligence",
            )
            .help("a gate is a human decision and never calls a model: remove `intelligence`"),
        );
    }
    if matches!(ty, Some(NodeType::Decision | NodeType::Gate))
        && obj_of(node.obj, "outputs").is_some_and(|o| o.has("decision"))
    {
        out.push(
            Finding::new(
                Code::AG122,
                pointer_push(&node.ptr("outputs"), "decision"),
                "'decision' is a reserved output name on decision and gate nodes",
            )
            .help("the selected label is already `outputs.decision`: remove or rename this output"),
        );
    }
    // Reserved binding names (Appendix B has no code for them; AG117 is the reserved-name code).
    for map in ["inputs", "outputs"] {
        for (name, _) in entries_of(node.obj, map) {
            if RESERVED_ROOTS.contains(&name) {
                out.push(
                    Finding::new(
                        Code::AG117,
                        pointer_push(&node.ptr(map), name),
                        format!(
                            "'{name}' is a reserved namespace root and cannot name an {}",
                            &map[..map.len() - 1]
                        ),
                    )
                    .help("rename it"),
                );
            }
        }
    }
    // AG104: at most one of from / template / value per input.
    for (name, spec) in entries_of(node.obj, "inputs") {
        let Some(spec) = spec.as_object() else {
            continue;
        };
        let given: Vec<&str> = ["from", "template", "value"]
            .into_iter()
            .filter(|k| spec.contains_key(*k))
            .collect();
        if given.len() > 1 {
            out.push(
                Finding::new(
                    Code::AG104,
                    pointer_push(&node.ptr("inputs"), name),
                    format!(
                        "input '{name}' declares {}; at most one is allowed",
                        given.iter().map(|g| format!("'{g}'")).collect::<Vec<_>>().join(" and ")
                    ),
                )
                .help("keep one source: `from` (an expression), `template` (text) or `value` (a literal)"),
            );
        }
    }
    if ty == Some(NodeType::Decision)
        && let Some(block) = node.obj("decision")
    {
        check_decision(node, block, out);
    }
    if let Some(intel) = node.obj("intelligence") {
        check_intelligence(intel, &node.ptr("intelligence"), out);
    }
    // Judges are routed too: their intelligence must be coherent.
    if let Some(success) = node.obj("success") {
        for (i, c) in arr_of(success, "criteria").iter().enumerate() {
            if let Some(j) = c.field("judge_intelligence").and_then(Value::as_object) {
                let p = pointer_push(
                    &pointer_push(
                        &pointer_push(&node.ptr("success"), "criteria"),
                        &i.to_string(),
                    ),
                    "judge_intelligence",
                );
                check_intelligence(j, &p, out);
            }
        }
    }
    check_failure(ctx, si, node, out);
    check_fragment_use(ctx, node, out);
    check_subgraph_params(ctx, si, node, out);
    if let Some(req) = node.obj("requirements") {
        check_secrets(ctx, req, &node.ptr("requirements"), out);
    }
    check_join(set, node, out);
}

fn check_decision(node: &Node<'_>, block: &Object, out: &mut Vec<Finding>) {
    let dptr = node.ptr("decision");
    let evaluator = str_of(block, "evaluator").unwrap_or("agent");
    let mut labels: Vec<&str> = Vec::new();
    let mut dupes: Vec<&str> = Vec::new();
    for (i, b) in arr_of(block, "branches").iter().enumerate() {
        let Some(b) = b.as_object() else { continue };
        if let Some(label) = str_of(b, "label") {
            if labels.contains(&label) {
                if !dupes.contains(&label) {
                    dupes.push(label);
                }
            } else {
                labels.push(label);
            }
            if evaluator == "expression" && !b.has("when") {
                out.push(
                    Finding::new(
                        Code::AG121,
                        pointer_push(&pointer_push(&dptr, "branches"), &i.to_string()),
                        format!("branch '{label}' has no `when` but evaluator is 'expression'"),
                    )
                    .help("give every branch a `when` expression, or use evaluator: agent"),
                );
            }
        }
    }
    if !dupes.is_empty() {
        dupes.sort_unstable();
        out.push(
            Finding::new(
                Code::AG124,
                pointer_push(&dptr, "branches"),
                format!("duplicate branch labels: {}", dupes.join(", ")),
            )
            .help("branch labels must be unique; rename or merge the duplicates"),
        );
    }
    if let Some(default) = str_of(block, "default_branch")
        && !labels.contains(&default)
    {
        let mut help = format!("use one of the labels: {}", labels.join(", "));
        if let Some(best) = did_you_mean(default, labels.iter().copied()) {
            help = format!("did you mean '{best}'?");
        }
        out.push(
            Finding::new(
                Code::AG123,
                pointer_push(&dptr, "default_branch"),
                format!("default_branch '{default}' is not a declared label"),
            )
            .help(help),
        );
    }
}

/// AG141 (tier vs level) and AG142 (escalate_to below tier), wherever an intelligence
/// block appears: nodes, `defaults`, and `judge_intelligence`.
fn check_intelligence(intel: &Object, pointer: &str, out: &mut Vec<Finding>) {
    let tier = str_of(intel, "tier").and_then(Tier::parse);
    if let (Some(tier), Some(level)) = (tier, intel.field("level").and_then(Value::as_u64))
        && level != tier.level()
    {
        out.push(
            Finding::new(
                Code::AG141,
                pointer_push(pointer, "level"),
                format!("tier '{}' and level {level} disagree", tier.as_str()),
            )
            .help(format!(
                "tier '{}' is level {}; remove `level` or make them agree",
                tier.as_str(),
                tier.level()
            )),
        );
    }
    if let (Some(tier), Some(up)) = (tier, str_of(intel, "escalate_to").and_then(Tier::parse))
        && up < tier
    {
        out.push(
            Finding::new(
                Code::AG142,
                pointer_push(pointer, "escalate_to"),
                format!(
                    "escalate_to '{}' is below tier '{}'",
                    up.as_str(),
                    tier.as_str()
                ),
            )
            .help("escalation only goes up: use a tier at or above the node's tier"),
        );
    }
}

/// Fallback (AG113, AG151, AG153), compensation (AG113, AG152) and escalation (AG113).
fn check_failure(ctx: &Ctx<'_>, si: usize, node: &Node<'_>, out: &mut Vec<Finding>) {
    let set = &ctx.sets[si];
    let Some(failure) = node.obj("failure") else {
        return;
    };
    let fptr = node.ptr("failure");
    let lookup = |id: &str| set.index.get(id).map(|&i| &set.nodes[i]);
    let unknown = |id: &str, what: &str, pointer: String| {
        let mut help = "name a node of the same scope".to_string();
        if let Some(best) = did_you_mean(id, set.nodes.iter().map(|n| n.id)) {
            help = format!("did you mean '{best}'?");
        }
        Finding::new(
            Code::AG113,
            pointer,
            format!("{what} node '{id}' does not exist in this scope"),
        )
        .help(help)
    };
    let required_outputs: Vec<&str> = entries_of(node.obj, "outputs")
        .filter(|(_, spec)| spec.field("required").and_then(Value::as_bool) != Some(false))
        .map(|(k, _)| k)
        .collect();
    let criteria: HashSet<&str> = node
        .obj("success")
        .map(|s| {
            arr_of(s, "criteria")
                .iter()
                .filter_map(|c| c.field("id").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let outputs: HashSet<&str> = ctx.readable_outputs(si, node).into_iter().collect();
    for (i, step) in arr_of(failure, "fallback").iter().enumerate() {
        let Some(step) = step.as_object() else {
            continue;
        };
        let sptr = pointer_push(&pointer_push(&fptr, "fallback"), &i.to_string());
        match str_of(step, "strategy") {
            Some("alternate_node") => {
                let Some(alt) = str_of(step, "node") else {
                    continue;
                };
                match lookup(alt) {
                    None => out.push(unknown(alt, "fallback", pointer_push(&sptr, "node"))),
                    Some(alt_node) => {
                        let provided: HashSet<&str> =
                            ctx.readable_outputs(si, alt_node).into_iter().collect();
                        let mut missing: Vec<&str> = required_outputs
                            .iter()
                            .copied()
                            .filter(|o| !provided.contains(o))
                            .collect();
                        missing.sort_unstable();
                        if !missing.is_empty() && !alt_node.outputs_are_open() {
                            out.push(
                                Finding::new(
                                    Code::AG151,
                                    pointer_push(&sptr, "node"),
                                    format!(
                                        "fallback node '{alt}' does not declare required outputs {}",
                                        missing.join(", ")
                                    ),
                                )
                                .help(format!(
                                    "declare {} on '{alt}' so its outputs can replace this node's",
                                    missing.join(", ")
                                )),
                            );
                        }
                    }
                }
            }
            Some("degrade_outputs") => {
                unknown_names(
                    step,
                    &sptr,
                    "outputs",
                    &outputs,
                    "list outputs this node declares",
                    out,
                );
            }
            Some("relax_criteria") => {
                unknown_names(
                    step,
                    &sptr,
                    "criteria",
                    &criteria,
                    "list criterion ids of this node's success block",
                    out,
                );
            }
            _ => {}
        }
    }
    if let Some(comp) = str_of(failure, "compensation") {
        match lookup(comp) {
            None => out.push(unknown(
                comp,
                "compensation",
                pointer_push(&fptr, "compensation"),
            )),
            Some(c) => {
                if c.obj("failure").is_some_and(|f| f.has("compensation")) {
                    out.push(
                        Finding::new(
                            Code::AG152,
                            pointer_push(&fptr, "compensation"),
                            format!("compensation node '{comp}' declares its own compensation"),
                        )
                        .help("compensation does not chain: remove `failure.compensation` from the compensating node"),
                    );
                }
            }
        }
    }
    if let Some(esc) = obj_of(failure, "escalation")
        && str_of(esc, "to") == Some("node")
        && let Some(target) = str_of(esc, "node")
        && lookup(target).is_none()
    {
        out.push(unknown(
            target,
            "escalation",
            pointer_push(&pointer_push(&fptr, "escalation"), "node"),
        ));
    }
}

/// AG203 (weft addition; the reference does not check it): `requirements.secrets` must name
/// secrets the graph declares in its top-level `secrets` list, or the harness is asked to
/// inject something the graph never announced.
fn check_secrets(ctx: &Ctx<'_>, req: &Object, req_ptr: &str, out: &mut Vec<Finding>) {
    let declared: Vec<&str> = arr_of(ctx.root, "secrets")
        .iter()
        .filter_map(|s| s.field("name").and_then(Value::as_str))
        .collect();
    let sptr = pointer_push(req_ptr, "secrets");
    for (i, name) in arr_of(req, "secrets").iter().enumerate() {
        let Some(name) = name.as_str() else { continue };
        if !declared.contains(&name) {
            let help = match did_you_mean(name, declared.iter().copied()) {
                Some(best) => format!("did you mean '{best}'?"),
                None => format!("declare it in the graph's `secrets:` list (- name: {name})"),
            };
            out.push(
                Finding::new(
                    Code::AG203,
                    pointer_push(&sptr, &i.to_string()),
                    format!("requirements.secrets names undeclared secret '{name}'"),
                )
                .help(help),
            );
        }
    }
}

/// AG203 (weft addition; the reference does not check it): each `subgraph.params` key must
/// be a param the local child (`use` or `inline`) declares in its own `params` block. A child
/// without a `params` block accepts no bindings (SPEC §7.6: the child sees only its own
/// params). External `ref` children are not loaded, so their params are not checked.
fn check_subgraph_params(ctx: &Ctx<'_>, si: usize, node: &Node<'_>, out: &mut Vec<Finding>) {
    if node.node_type() != Some(NodeType::Subgraph) {
        return;
    }
    let Some(block) = node.block() else { return };
    if block.has("ref") {
        return;
    }
    let Some(child) = ctx.child_scope(si, node) else {
        return; // unknown fragment: AG132 says so.
    };
    let declared: Vec<&str> = ctx.scopes[child].param_names().collect();
    let pptr = pointer_push(&node.ptr("subgraph"), "params");
    for (name, _) in entries_of(block, "params") {
        if !declared.contains(&name) {
            let help = match did_you_mean(name, declared.iter().copied()) {
                Some(best) => format!("did you mean '{best}'?"),
                None if declared.is_empty() => {
                    "the child declares no params: declare it under the child's `params:` or remove the binding".to_string()
                }
                None => format!("the child declares: {}", declared.join(", ")),
            };
            out.push(
                Finding::new(
                    Code::AG203,
                    pointer_push(&pptr, name),
                    format!("subgraph.params binds '{name}', which the child does not declare"),
                )
                .help(help),
            );
        }
    }
}

/// AG153: every name a fallback step lists under `field` must be one of `known`.
fn unknown_names(
    step: &Object,
    sptr: &str,
    field: &str,
    known: &HashSet<&str>,
    help: &str,
    out: &mut Vec<Finding>,
) {
    let mut bad: Vec<&str> = strs_of(step, field)
        .filter(|n| !known.contains(n))
        .collect();
    bad.sort_unstable();
    if !bad.is_empty() {
        out.push(
            Finding::new(
                Code::AG153,
                pointer_push(sptr, field),
                format!("unknown {field} {}", bad.join(", ")),
            )
            .help(help),
        );
    }
}

/// AG132: `use` must name a fragment in `subgraphs`.
fn check_fragment_use(ctx: &Ctx<'_>, node: &Node<'_>, out: &mut Vec<Finding>) {
    let Some(ty) = node.node_type().filter(|t| t.is_container()) else {
        return;
    };
    let Some(block) = node.block() else { return };
    let Some(name) = str_of(block, "use") else {
        return;
    };
    if !ctx.fragments.contains_key(name) {
        let mut help = "declare it under `subgraphs:` or fix the name".to_string();
        if let Some(best) = did_you_mean(name, ctx.fragments.keys().copied()) {
            help = format!("did you mean '{best}'?");
        }
        out.push(
            Finding::new(
                Code::AG132,
                pointer_push(&node.ptr(ty.as_str()), "use"),
                format!("'{}.use' names unknown fragment '{name}'", ty.as_str()),
            )
            .help(help),
        );
    }
}

/// AG116: `join_count` cannot exceed the number of incoming effective edges.
fn check_join(set: &crate::edges::EdgeSet<'_>, node: &Node<'_>, out: &mut Vec<Finding>) {
    if str_of(node.obj, "join") != Some("n_of") {
        return;
    }
    let Some(n) = node.field("join_count").and_then(Value::as_u64) else {
        return;
    };
    let incoming = set.incoming[node.index].len();
    if n as usize > incoming {
        out.push(
            Finding::new(
                Code::AG116,
                node.ptr("join_count"),
                format!(
                    "join_count {n} exceeds the {incoming} incoming edge(s) of '{}'",
                    node.id
                ),
            )
            .help(format!(
                "lower join_count to at most {incoming}, or add the missing edges"
            )),
        );
    }
}
