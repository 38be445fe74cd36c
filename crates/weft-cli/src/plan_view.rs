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

/// Renders a plan. `digest` is the document's `graph_digest` (the CLI computes it).
pub fn render(plan: &Plan, digest: &str, color: bool) -> String {
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
        "  level:    needs {} ({declared}); weft {} is a level-{} reader",
        plan.required_level,
        env!("CARGO_PKG_VERSION"),
        plan.harness_level
    );
    if !plan.unsupported_features.is_empty() {
        // Honest about what a run would need: weft only reads and plans for now.
        let _ = writeln!(
            out,
            "  {} a run needs a level-{} harness; weft does not execute yet. Unsupported:",
            p.s(WARN, "note:"),
            plan.required_level
        );
        for level in (1..=3u8).rev() {
            let names: Vec<String> = plan
                .unsupported_features
                .iter()
                .filter(|u| u.level == level)
                .map(|u| {
                    if u.count > 1 {
                        format!("{} ×{}", u.name, u.count)
                    } else {
                        u.name.to_string()
                    }
                })
                .collect();
            if !names.is_empty() {
                let _ = writeln!(out, "    L{level}: {}", join(&names));
            }
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
    let ceiling = c.ceiling_usd.map_or_else(|| "none".to_string(), usd);
    let verdict = match c.exceeds_ceiling {
        Some(true) => format!(" {}", p.s(BAD, "worst case exceeds the ceiling")),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "  expected {}, worst {}, ceiling {ceiling}{verdict}",
        usd(c.expected_usd),
        usd(c.worst_case_usd)
    );
    if c.nodes_without_estimate > 0 {
        let _ = writeln!(
            out,
            "  {} node(s) without a cost estimate count as $0",
            c.nodes_without_estimate
        );
    }
    if let Some(tok) = &c.tokens {
        let ceiling = tok
            .ceiling
            .map_or_else(|| "none".to_string(), |v| v.to_string());
        let verdict = match tok.exceeds_ceiling {
            Some(true) => format!(" {}", p.s(BAD, "worst case exceeds the ceiling")),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  tokens: expected {}, worst {}, ceiling {ceiling}{verdict}",
            tok.expected, tok.worst_case
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

    fn sample() -> Plan {
        let doc = json!({
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
        });
        weft_ags::plan::plan(doc.as_object().unwrap())
    }

    #[test]
    fn renders_every_section_without_colour() {
        let text = render(&sample(), "sha256:abc", false);
        assert!(!text.contains('\u{1b}'), "no ANSI codes: {text}");
        for needle in [
            "plan examples/t",
            "digest:   sha256:abc",
            "needs 3 (declared 1)",
            "L3: loop",
            "order:    a → [b, c] → g → l",
            "loop body of `l`",
            "runs:     2 instance(s)",
            "critical: a → b → g → l (10s)",
            "executions: 9 (exceeds max_node_executions 3)",
            "minimal 1, standard 0, advanced 0, frontier 0, unset 4",
            "route at `standard`",
            "expected $0.75, worst $1.25, ceiling $1.00 worst case exceeds the ceiling",
            "2 node(s) without a cost estimate",
            "gate `g`: approve by owner, timeout 60s then fail",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
        }
    }

    #[test]
    fn colour_is_ansi_only_when_asked() {
        let text = render(&sample(), "sha256:abc", true);
        assert!(text.contains("\u{1b}["));
    }
}
