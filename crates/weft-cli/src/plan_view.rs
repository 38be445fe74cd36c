//! The human rendering of a [`Plan`] for `weft plan`: compact text, one section per topic,
//! with ANSI colour only when asked (the caller decides from the terminal and `NO_COLOR`).
//!
//! Everything shown comes from the plan itself, so `weft plan --json` and this view never
//! disagree; this module only chooses words and layout.

use anstyle::{AnsiColor, Style};
use std::fmt::Write as _;
use weft_ags::plan::{Plan, ScopePlan};

const HEAD: Style = Style::new().bold();
const WARN: Style = AnsiColor::Yellow.on_default().bold();
const BAD: Style = AnsiColor::Red.on_default().bold();
const GOOD: Style = AnsiColor::Green.on_default();
const DIM: Style = AnsiColor::Blue.on_default();

/// Applies `style` only when colour is on.
struct Paint {
    color: bool,
}

impl Paint {
    fn s(&self, style: Style, text: &str) -> String {
        if self.color {
            format!("{style}{text}{style:#}")
        } else {
            text.to_string()
        }
    }
}

/// Formats a dollar amount with cents; large values stay readable.
fn usd(v: f64) -> String {
    format!("${v:.2}")
}

fn join(items: &[String]) -> String {
    items.join(", ")
}

/// The order with parallel groups bracketed: `a → [b, c] → d`.
fn order_line(scope: &ScopePlan) -> String {
    if scope.parallel_groups.is_empty() {
        return scope.order.as_deref().map(join).unwrap_or_default();
    }
    scope
        .parallel_groups
        .iter()
        .map(|g| match g.as_slice() {
            [one] => one.clone(),
            _ => format!("[{}]", join(g)),
        })
        .collect::<Vec<_>>()
        .join(" → ")
}

fn scope_title(scope: &ScopePlan) -> String {
    match (scope.kind, &scope.owner, &scope.name) {
        ("root", _, _) => "graph".to_string(),
        ("fragment", _, Some(name)) => format!("fragment `{name}`"),
        (kind, Some(owner), _) => format!("{} of `{owner}`", kind.replace('_', " ")),
        (kind, _, _) => kind.replace('_', " "),
    }
}

fn yes_no_limit(p: &Paint, exceeds: Option<bool>, limit: String) -> String {
    match exceeds {
        Some(true) => p.s(BAD, &format!("exceeds {limit}")),
        Some(false) => p.s(GOOD, &format!("within {limit}")),
        None => format!("no {limit}"),
    }
}

/// `$1.25, over the ceiling of $1.00` (or within it, or `no ceiling (FIELD)`).
fn against_ceiling(
    p: &Paint,
    worst: &str,
    ceiling: Option<String>,
    exceeds: Option<bool>,
    field: &str,
) -> String {
    match (ceiling, exceeds) {
        (Some(c), Some(true)) => {
            format!("{worst}, {}", p.s(BAD, &format!("over the ceiling of {c}")))
        }
        (Some(c), _) => format!(
            "{worst}, {}",
            p.s(GOOD, &format!("within the ceiling of {c}"))
        ),
        (None, _) => format!("{worst}; no ceiling ({field})"),
    }
}

/// Something this weft would refuse about a document, beyond the features its level lacks
/// (which the plan lists itself): shown in the plan's note with its code and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The code the run would be refused with (`WF101`, …).
    pub code: String,
    /// Where: a JSON pointer, or a `file:line:column` in another document.
    pub at: String,
    /// Why, in one sentence.
    pub why: String,
}

/// Renders a plan. `digest` is the document's `graph_digest` (the CLI computes it);
/// `refusals` are what this weft would refuse for the document besides the features above
/// the plan's harness level (its subgraph references, ...). Without either, no note.
pub fn render(plan: &Plan, digest: &str, color: bool, refusals: &[Refusal]) -> String {
    let p = Paint { color };
    let mut out = String::new();
    let id = plan.graph_id.as_deref().unwrap_or("(no id)");
    let _ = writeln!(out, "{} {}", p.s(HEAD, "plan"), p.s(HEAD, id));
    if let Some(title) = &plan.title {
        let _ = writeln!(out, "  title:    {title}");
    }
    let _ = writeln!(out, "  digest:   {digest}");
    let declared = plan
        .declared_level
        .map_or_else(|| "not declared".to_string(), |l| format!("declared {l}"));
    let _ = writeln!(
        out,
        "  level:    needs {} ({declared}); weft {} runs level {}",
        plan.required_level,
        env!("CARGO_PKG_VERSION"),
        plan.harness_level
    );
    // Only what this weft would refuse for this document, each with why; nothing else.
    let lacking = plan.unsupported_features.iter().map(|u| Refusal {
        code: "AG303".to_string(),
        at: u.pointer.clone(),
        why: format!(
            "feature `{}` needs conformance level {}, above weft's level {}{}",
            u.name,
            u.level,
            plan.harness_level,
            if u.count > 1 {
                format!(" ({} uses)", u.count)
            } else {
                String::new()
            }
        ),
    });
    let all: Vec<Refusal> = lacking.chain(refusals.iter().cloned()).collect();
    if !all.is_empty() {
        let _ = writeln!(
            out,
            "  {} weft would refuse to run this document:",
            p.s(WARN, "note:")
        );
        for r in &all {
            let at = if r.at.is_empty() {
                String::new()
            } else {
                format!(" {}", r.at)
            };
            let _ = writeln!(out, "    {}{at}: {}", r.code, r.why);
        }
    }

    for scope in &plan.scopes {
        let _ = writeln!(
            out,
            "\n{} {}",
            p.s(HEAD, &scope_title(scope)),
            p.s(
                DIM,
                &format!(
                    "({} node{}, {})",
                    scope.nodes,
                    if scope.nodes == 1 { "" } else { "s" },
                    if scope.pointer.is_empty() {
                        "/"
                    } else {
                        &scope.pointer
                    }
                )
            ),
        );
        match (&scope.order, &scope.cycle) {
            (Some(_), _) => {
                let _ = writeln!(out, "  order:    {}", order_line(scope));
            }
            (None, Some(cycle)) => {
                let _ = writeln!(
                    out,
                    "  order:    {} {}",
                    p.s(BAD, "none, cycle:"),
                    cycle.join(" → ")
                );
            }
            (None, None) => {
                let _ = writeln!(out, "  order:    {}", p.s(BAD, "none (cycle)"));
            }
        }
        if !scope.unreachable.is_empty() {
            let _ = writeln!(
                out,
                "  {} {}",
                p.s(WARN, "unreachable:"),
                join(&scope.unreachable)
            );
        }
        if let Some(cp) = &scope.critical_path
            && cp.nodes.len() > 1
        {
            // Without wall-clock estimates the path is the longest by node count.
            let length = if cp.seconds > 0.0 {
                format!("{}s", cp.seconds)
            } else {
                format!("{} nodes, no time estimates", cp.nodes.len())
            };
            let _ = writeln!(out, "  critical: {} ({length})", cp.nodes.join(" → "));
        }
        if scope.instances != 1 {
            let _ = writeln!(
                out,
                "  runs:     {} instance(s), {} executions each at worst",
                scope.instances, scope.worst_case_executions
            );
        }
    }

    let _ = writeln!(out, "\n{}", p.s(HEAD, "worst case"));
    let limit = plan.max_node_executions.map_or_else(
        || "max_node_executions".to_string(),
        |m| format!("max_node_executions {m}"),
    );
    let _ = writeln!(
        out,
        "  executions: {} ({})",
        plan.worst_case_executions,
        yes_no_limit(&p, plan.exceeds_max_node_executions, limit)
    );
    for u in &plan.unresolved_refs {
        let _ = writeln!(
            out,
            "  {} {} `{}` at {} counted as one execution",
            p.s(WARN, "unresolved:"),
            u.kind,
            u.target,
            u.pointer
        );
    }
    for r in &plan.recursion {
        let _ = writeln!(
            out,
            "  {} {} to `{}` cut at {}",
            p.s(BAD, "recursion:"),
            r.reason,
            r.target,
            r.pointer
        );
    }

    let t = &plan.tiers;
    let _ = writeln!(out, "\n{}", p.s(HEAD, "tiers"));
    let _ = writeln!(
        out,
        "  minimal {}, standard {}, advanced {}, frontier {}, unset {}",
        t.minimal, t.standard, t.advanced, t.frontier, t.unset
    );
    if t.unset > 0 {
        let _ = writeln!(out, "  {}", p.s(DIM, &plan.tier_routing_note));
    }

    let c = &plan.cost;
    let _ = writeln!(out, "\n{}", p.s(HEAD, "cost"));
    let _ = writeln!(
        out,
        "  expected {}; worst case {}",
        usd(c.expected_usd),
        against_ceiling(
            &p,
            &usd(c.worst_case_usd),
            c.ceiling_usd.map(usd),
            c.exceeds_ceiling,
            "constraints.max_cost_usd"
        )
    );
    if c.nodes_without_estimate > 0 {
        let _ = writeln!(
            out,
            "  {} node(s) without a cost estimate count as $0",
            c.nodes_without_estimate
        );
    }
    if let Some(tok) = &c.tokens {
        let _ = writeln!(
            out,
            "  tokens: expected {}; worst case {}",
            tok.expected,
            against_ceiling(
                &p,
                &tok.worst_case.to_string(),
                tok.ceiling.map(|v| v.to_string()),
                tok.exceeds_ceiling,
                "constraints.max_total_tokens"
            )
        );
    }

    let g = &plan.gates;
    let _ = writeln!(out, "\n{}", p.s(HEAD, "human interactions"));
    if g.nodes.is_empty()
        && g.checkpoints.is_empty()
        && g.criteria.is_empty()
        && g.escalations.is_empty()
    {
        let _ = writeln!(out, "  none");
    }
    for gate in &g.nodes {
        let roles = if gate.roles.is_empty() {
            String::new()
        } else {
            format!(" by {}", join(&gate.roles))
        };
        let timeout = gate
            .timeout_seconds
            .map_or_else(|| "no timeout".to_string(), |s| format!("timeout {s}s"));
        let _ = writeln!(
            out,
            "  gate `{}`: {}{roles}, {timeout} then {}",
            gate.node,
            gate.mode.as_deref().unwrap_or("?"),
            gate.on_timeout
        );
    }
    for cp in &g.checkpoints {
        let kind = if cp.required { "required" } else { "optional" };
        let _ = writeln!(
            out,
            "  checkpoint on `{}` at {}: {} ({kind})",
            cp.node,
            cp.at.as_deref().unwrap_or("?"),
            cp.mode.as_deref().unwrap_or("?")
        );
    }
    for cr in &g.criteria {
        let owner = cr
            .node
            .as_deref()
            .map_or_else(|| "graph success".to_string(), |n| format!("`{n}`"));
        let _ = writeln!(
            out,
            "  criterion `{}` on {owner}{}",
            cr.id.as_deref().unwrap_or("?"),
            if cr.required { "" } else { " (advisory)" }
        );
    }
    for esc in &g.escalations {
        let roles = if esc.roles.is_empty() {
            String::new()
        } else {
            format!(" ({})", join(&esc.roles))
        };
        let _ = writeln!(out, "  escalation of `{}` to a person{roles}", esc.node);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample_doc() -> serde_json::Value {
        json!({
            "id": "examples/t", "title": "T", "requires_conformance": 1,
            "constraints": {"max_cost_usd": 1.0, "max_node_executions": 3},
            "entrypoints": ["a"],
            "nodes": {
                "a": {"estimate": {"cost_usd": 0.5, "wall_clock_seconds": 10}, "intelligence": {"tier": "minimal"}},
                "b": {"depends_on": ["a"], "failure": {"retry": {"max_attempts": 3}}, "estimate": {"cost_usd": 0.25}},
                "c": {"depends_on": ["a"]},
                "g": {"type": "gate", "depends_on": ["b", "c"], "gate": {"mode": "approve", "roles": ["owner"], "on_timeout": "fail", "timeout_seconds": 60}},
                "l": {"type": "loop", "depends_on": ["g"], "loop": {"mode": "repeat", "max_iterations": 2, "body": {
                    "entrypoints": ["t"], "nodes": {"t": {}}}}}
            }
        })
    }

    /// The plan for the engine's level, as `weft plan` makes it.
    fn sample() -> Plan {
        let doc = sample_doc();
        weft_ags::plan::plan_for(
            doc.as_object().unwrap(),
            crate::commands::plan::engine_harness(),
        )
    }

    #[test]
    fn renders_every_section_without_colour() {
        let text = render(&sample(), "sha256:abc", false, &[]);
        assert!(!text.contains('\u{1b}'), "no ANSI codes: {text}");
        let level = format!(
            "level:    needs 3 (declared 1); weft {} runs level 3",
            env!("CARGO_PKG_VERSION")
        );
        assert!(text.contains(&level), "missing {level:?} in:\n{text}");
        for needle in [
            "plan examples/t",
            "digest:   sha256:abc",
            "order:    a → [b, c] → g → l",
            "loop body of `l`",
            "runs:     2 instance(s)",
            "critical: a → b → g → l (10s)",
            "executions: 9 (exceeds max_node_executions 3)",
            "minimal 1, standard 0, advanced 0, frontier 0, unset 4",
            "route at `standard`",
            "expected $0.75; worst case $1.25, over the ceiling of $1.00",
            "2 node(s) without a cost estimate",
            "gate `g`: approve by owner, timeout 60s then fail",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
        }
    }

    #[test]
    fn a_level_three_document_gets_no_note_and_no_claim_that_weft_only_reads() {
        let text = render(&sample(), "sha256:abc", false, &[]);
        for absent in ["note:", "reader", "does not execute", "Unsupported"] {
            assert!(!text.contains(absent), "{absent:?} in:\n{text}");
        }
    }

    #[test]
    fn the_note_lists_only_what_weft_would_refuse_and_why() {
        let refusal = Refusal {
            code: "WF101".into(),
            at: "/nodes/c/subgraph/ref/uri".into(),
            why: "`https://x/c.agraph.yaml` is not a local file".into(),
        };
        let text = render(&sample(), "sha256:abc", false, &[refusal]);
        assert!(
            text.contains(
                "  note: weft would refuse to run this document:\n    WF101 /nodes/c/subgraph/ref/uri: `https://x/c.agraph.yaml` is not a local file\n"
            ),
            "{text}"
        );
        // A harness below the features used refuses them, each with the level it needs.
        let doc = sample_doc();
        let reader = weft_ags::plan::plan(doc.as_object().unwrap());
        let text = render(&reader, "sha256:abc", false, &[]);
        assert!(
            text.contains(
                "AG303 /nodes/l/loop: feature `loop` needs conformance level 3, above weft's level 0"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_cost_line_reads_as_a_sentence_within_over_or_without_a_ceiling() {
        let mut doc = sample_doc();
        let harness = crate::commands::plan::engine_harness();
        let line = |doc: &serde_json::Value| {
            let text = render(
                &weft_ags::plan::plan_for(doc.as_object().unwrap(), harness),
                "d",
                false,
                &[],
            );
            text.lines()
                .skip_while(|l| *l != "cost")
                .nth(1)
                .unwrap()
                .to_string()
        };
        assert_eq!(
            line(&doc),
            "  expected $0.75; worst case $1.25, over the ceiling of $1.00"
        );
        doc["constraints"]["max_cost_usd"] = json!(25.0);
        assert_eq!(
            line(&doc),
            "  expected $0.75; worst case $1.25, within the ceiling of $25.00"
        );
        doc["constraints"]
            .as_object_mut()
            .unwrap()
            .remove("max_cost_usd");
        assert_eq!(
            line(&doc),
            "  expected $0.75; worst case $1.25; no ceiling (constraints.max_cost_usd)"
        );
    }

    #[test]
    fn colour_is_ansi_only_when_asked() {
        let text = render(&sample(), "sha256:abc", true, &[]);
        assert!(text.contains("\u{1b}["));
    }
}
