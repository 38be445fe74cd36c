//! Layer 2, per scope: the effective edge set and what it references (AG111–AG116 except
//! AG116's join check, AG133, AG901, AG903), and fragment recursion (AG131) through `use`
//! at any nesting depth — the reference only follows top-level nodes of fragments.

use super::Ctx;
use super::suggest::did_you_mean;
use crate::diagnostic::{Code, Finding, pointer_push};
use crate::model::{Object, ScopeKind, arr_of, entries_of, inline_body, obj_of, str_of};
use std::collections::HashMap;

pub(crate) fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    check_recursion(ctx, out);
    for (si, set) in ctx.sets.iter().enumerate() {
        let scope = &ctx.scopes[si];
        let ids = || set.nodes.iter().map(|n| n.id);
        let suggest = |id: &str| match did_you_mean(id, ids()) {
            Some(best) => format!("did you mean '{best}'?"),
            None => "name a node declared in this scope".to_string(),
        };
        // AG114: depends_on.
        for node in &set.nodes {
            let dptr = node.ptr("depends_on");
            for (i, dep) in arr_of(node.obj, "depends_on").iter().enumerate() {
                let Some(dep) = dep.as_str() else { continue };
                if !set.index.contains_key(dep) {
                    out.push(
                        Finding::new(
                            Code::AG114,
                            pointer_push(&dptr, &i.to_string()),
                            format!("depends_on references unknown node '{dep}'"),
                        )
                        .help(suggest(dep)),
                    );
                }
            }
        }
        // AG113: explicit edge endpoints.
        let eptr = scope.ptr("edges");
        for (i, edge) in arr_of(scope.obj, "edges").iter().enumerate() {
            let Some(edge) = edge.as_object() else {
                continue;
            };
            for end in ["from", "to"] {
                if let Some(id) = str_of(edge, end)
                    && !set.index.contains_key(id)
                {
                    out.push(
                        Finding::new(
                            Code::AG113,
                            pointer_push(&pointer_push(&eptr, &i.to_string()), end),
                            format!("edge `{end}` references unknown node '{id}'"),
                        )
                        .help(suggest(id)),
                    );
                }
            }
        }
        // AG901: the same pair declared by depends_on and by an explicit edge.
        for e in set.edges.iter().filter(|e| e.declared_twice) {
            let (from, to) = (set.nodes[e.from].id, set.nodes[e.to].id);
            out.push(
                Finding::new(
                    Code::AG901,
                    set.nodes[e.to].ptr("depends_on"),
                    format!("{from} -> {to} is declared by both depends_on and an explicit edge"),
                )
                .help("keep one declaration: drop it from depends_on or remove the explicit edge"),
            );
        }
        // AG115 / AG133 and AG112: entrypoints.
        let fragment = !matches!(scope.kind, ScopeKind::Root);
        let mut starts = Vec::new();
        let epptr = scope.ptr("entrypoints");
        for (i, ep) in arr_of(scope.obj, "entrypoints").iter().enumerate() {
            let Some(ep) = ep.as_str() else { continue };
            let p = pointer_push(&epptr, &i.to_string());
            match set.index.get(ep) {
                None => out.push(
                    Finding::new(
                        if fragment { Code::AG133 } else { Code::AG115 },
                        p,
                        format!(
                            "entrypoint '{ep}' is not a node of this {}",
                            if fragment { "fragment" } else { "graph" }
                        ),
                    )
                    .help(if fragment {
                        format!(
                            "fragment entrypoints must name the fragment's own nodes; {}",
                            suggest(ep)
                        )
                    } else {
                        suggest(ep)
                    }),
                ),
                Some(&n) => {
                    starts.push(n);
                    if !set.incoming[n].is_empty() {
                        let from: Vec<&str> =
                            set.predecessors(n).map(|p| set.nodes[p].id).collect();
                        out.push(
                            Finding::new(
                                Code::AG112,
                                p,
                                format!(
                                    "entrypoint '{ep}' has incoming edges (from {})",
                                    from.join(", ")
                                ),
                            )
                            .help("an entrypoint is ready at start: remove it from entrypoints or remove its incoming edges"),
                        );
                    }
                }
            }
        }
        // AG111: every cycle, with a witness.
        for cycle in set.cycles() {
            let names: Vec<&str> = cycle.iter().map(|&i| set.nodes[i].id).collect();
            let first = cycle.first().copied().unwrap_or(0);
            out.push(
                Finding::new(
                    Code::AG111,
                    set.nodes[first].pointer.clone(),
                    format!("cycle in effective edge set: {}", names.join(" -> ")),
                )
                .help("graphs are acyclic: remove one of these edges, or express repetition with a `loop` node"),
            );
        }
        // AG903: unreachable from every entrypoint.
        // weft fix: a node that a reachable node invokes through its failure handling
        // (`fallback` alternate_node, `escalation.node`, `compensation`) does run, so it is
        // not unreachable; the reference warned on every such node, and the only way to
        // silence it was to wire the node into the normal flow, which changes the graph.
        // The planner counts these invocations the same way (plan/worst_case.rs).
        let mut reach = set.reachable_from(starts.iter().copied());
        loop {
            let invoked: Vec<usize> = set
                .nodes
                .iter()
                .filter(|n| reach[n.index])
                .flat_map(|n| failure_targets(n.obj))
                .filter_map(|id| set.index.get(id).copied())
                .filter(|&t| !reach[t])
                .collect();
            if invoked.is_empty() {
                break;
            }
            starts.extend(invoked);
            reach = set.reachable_from(starts.iter().copied());
        }
        for node in &set.nodes {
            if !reach[node.index] {
                out.push(
                    Finding::new(
                        Code::AG903,
                        node.pointer.clone(),
                        format!("node '{}' is unreachable from any entrypoint", node.id),
                    )
                    .help("add an edge or depends_on from a reachable node, list it in entrypoints, or remove it"),
                );
            }
        }
    }
}

/// The nodes a node's failure handling may run: fallback alternates, the escalation node
/// and the compensation node.
fn failure_targets(node: &Object) -> Vec<&str> {
    let Some(failure) = obj_of(node, "failure") else {
        return Vec::new();
    };
    let mut out: Vec<&str> = arr_of(failure, "fallback")
        .iter()
        .filter_map(|s| s.as_object())
        .filter(|s| str_of(s, "strategy") == Some("alternate_node"))
        .filter_map(|s| str_of(s, "node"))
        .collect();
    if let Some(esc) = obj_of(failure, "escalation").filter(|e| str_of(e, "to") == Some("node")) {
        out.extend(str_of(esc, "node"));
    }
    out.extend(str_of(failure, "compensation"));
    out
}

/// AG131: a named fragment that reaches itself through `use`, at any depth.
fn check_recursion(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let names: Vec<&str> = entries_of(ctx.root, "subgraphs").map(|(k, _)| k).collect();
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let mut uses: Vec<Vec<usize>> = vec![Vec::new(); names.len()];
    for (i, name) in names.iter().enumerate() {
        if let Some(frag) = obj_of(ctx.root, "subgraphs").and_then(|s| obj_of(s, name)) {
            let mut found = Vec::new();
            collect_uses(frag, &mut found, 0);
            for u in found {
                if let Some(&j) = index.get(u)
                    && !uses[i].contains(&j)
                {
                    uses[i].push(j);
                }
            }
        }
    }
    // Each fragment on a cycle is reported once, with the cycle it starts.
    let mut reported = vec![false; names.len()];
    for start in 0..names.len() {
        if reported[start] {
            continue;
        }
        if let Some(path) = shortest_cycle(&uses, start) {
            for &p in &path {
                reported[p] = true;
            }
            let rendered: Vec<&str> = path.iter().map(|&p| names[p]).collect();
            out.push(
                Finding::new(
                    Code::AG131,
                    pointer_push("/subgraphs", names[start]),
                    format!("recursive subgraph reference: {}", rendered.join(" -> ")),
                )
                .help("fragments cannot use themselves, directly or through other fragments: break the cycle or bound the repetition with a `loop`"),
            );
        }
    }
}

/// Every `use` name in a fragment, including inside nested inline bodies.
fn collect_uses<'a>(frag: &'a Object, out: &mut Vec<&'a str>, depth: usize) {
    if depth > 64 {
        return;
    }
    let scope = crate::model::Scope {
        kind: ScopeKind::Inline,
        obj: frag,
        pointer: String::new(),
        owner: None,
        depth,
    };
    for node in scope.nodes() {
        if let Some(block) = node.block()
            && let Some(u) = str_of(block, "use")
        {
            out.push(u);
        }
        if let Some((_, body, _)) = inline_body(&node) {
            collect_uses(body, out, depth + 1);
        }
    }
}

/// The shortest path start → … → start in the `uses` graph, if any (BFS).
fn shortest_cycle(uses: &[Vec<usize>], start: usize) -> Option<Vec<usize>> {
    let mut parent: Vec<Option<usize>> = vec![None; uses.len()];
    let mut queue = std::collections::VecDeque::from([start]);
    let mut seen = vec![false; uses.len()];
    seen[start] = true;
    while let Some(v) = queue.pop_front() {
        for &w in &uses[v] {
            if w == start {
                let mut back = vec![v];
                let mut at = v;
                while let Some(p) = parent[at] {
                    back.push(p);
                    at = p;
                }
                back.reverse();
                if back.first() != Some(&start) {
                    back.insert(0, start);
                }
                back.push(start);
                return Some(back);
            }
            if !seen[w] {
                seen[w] = true;
                parent[w] = Some(v);
                queue.push_back(w);
            }
        }
    }
    None
}
