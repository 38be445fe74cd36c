//! Pure renderings of a run's progress: one line per event (the plain output when stdout is
//! not a terminal), and the live view of a [`RunView`] (redrawn in place on a terminal).
//! Times are UTC wall-clock `HH:MM:SS`.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use serde_json::Value;

use super::story;
use weft_host::view::{NodeState, NodeView, RunView};

/// At most this many node lines in the live view; beyond, only the ones that matter now
/// (running, waiting, failed) are listed and the counts say the rest.
const MAX_NODE_LINES: usize = 30;

/// Node ids longer than this are cut in the live view, and at most this many waiting nodes
/// are named: a line wider than the terminal would wrap and break the redraw in place.
const MAX_ID: usize = 32;
const MAX_WAITING_NAMED: usize = 5;

/// `s` cut to `max` characters, the last one `…` when cut.
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// `HH:MM:SS` (UTC) of epoch milliseconds.
pub fn clock(ms: i64) -> String {
    let s = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn text<'a>(payload: &'a Value, key: &str) -> Option<&'a str> {
    payload.get(key).and_then(Value::as_str)
}

fn plural(n: u64, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// One line for one event: `12:00:01 node build started (attempt 1)`. `graph` is the
/// document as run (`run_started.graph`), when known: a fallback's line names the alternate
/// node or the criteria it relaxed from it.
pub fn event_line(
    run_id: &str,
    kind: &str,
    payload: &Value,
    at_ms: i64,
    graph: Option<&Value>,
) -> String {
    let node = text(payload, "node").unwrap_or("?");
    let n = |k: &str| payload.get(k).and_then(Value::as_u64).unwrap_or(0);
    let what = match kind {
        "run_started" => format!(
            "run {run_id} started ({}, max parallel {})",
            text(payload, "graph_digest").unwrap_or("?"),
            n("max_parallel")
        ),
        "node_when" => match (
            payload.get("value").and_then(Value::as_bool),
            text(payload, "error"),
        ) {
            (Some(true), _) => format!("node {node}: its `when` condition holds, so it runs"),
            (_, Some(e)) => format!(
                "node {node}: its `when` condition could not be evaluated ({e}), so it is skipped"
            ),
            _ => format!("node {node}: its `when` condition is false, so it is skipped"),
        },
        "node_started" => match (
            payload.get("delay_ms").and_then(Value::as_u64),
            text(payload, "previous_failure"),
        ) {
            (Some(d), Some(why)) => format!(
                "node {node} retried (attempt {}, after {d} ms): attempt {} failed: {}",
                n("attempt"),
                n("attempt").saturating_sub(1),
                story::failure_words(why)
            ),
            (Some(d), None) => format!(
                "node {node} started (attempt {}, after {d} ms)",
                n("attempt")
            ),
            _ => format!("node {node} started (attempt {})", n("attempt")),
        },
        "node_finished" if text(payload, "absorbed_by").is_some() => {
            format!("node {}", story::absorbed_line(payload, graph))
        }
        "node_finished" => {
            let outcome = text(payload, "outcome").unwrap_or("finished");
            let mut s = format!(
                "node {node} {outcome} ({})",
                plural(n("attempts"), "attempt")
            );
            if let Some(e) = text(payload, "error") {
                let _ = write!(s, ": {e}");
            }
            s
        }
        "node_abandoned" => format!(
            "node {node} abandoned (attempt {}, {})",
            n("attempt"),
            text(payload, "reason").unwrap_or("?")
        ),
        "node_reset" => format!("node {node} reset to run again"),
        "gate_notified" => format!("gate {node} notified"),
        "gate_waiting" => match weft_engine::signoff_criterion(node) {
            // A graph's (or a fragment's) own `human` criterion names no node.
            Some(criterion) => format!("sign-off {criterion} waits on a person"),
            None => format!("node {node} waits on a person"),
        },
        "human_decision" => format!(
            "node {node}: {} by {}",
            text(payload, "decision").unwrap_or("decided"),
            text(payload, "actor").unwrap_or("someone")
        ),
        "run_finished" => {
            let mut s = format!("run finished: {}", text(payload, "status").unwrap_or("?"));
            if let Some(reasons) = payload.get("reasons").and_then(Value::as_array) {
                for r in reasons.iter().filter_map(Value::as_str) {
                    let _ = write!(s, "; {r}");
                }
            }
            s
        }
        other => match text(payload, "node") {
            Some(node) => format!("{other} (node {node})"),
            None => other.to_string(),
        },
    };
    // An event of a loop iteration, map item or subgraph names its instance.
    let what = match text(payload, "scope") {
        None => what,
        Some(s) if kind == "run_started" => format!("instance {s} started"),
        Some(s) if kind == "run_finished" => {
            what.replacen("run finished", &format!("instance {s} finished"), 1)
        }
        Some(s) => format!("{s}: {what}"),
    };
    format!("{} {what}", clock(at_ms))
}

fn paint(color: bool, style: Style, s: &str) -> String {
    if color {
        format!("{}{s}{}", style.render(), style.render_reset())
    } else {
        s.to_string()
    }
}

fn style_of(state: &str) -> Style {
    let c = match state {
        "succeeded" => AnsiColor::Green,
        "failed" | "blocked" => AnsiColor::Red,
        "running" => AnsiColor::Cyan,
        "awaiting_human" => AnsiColor::Yellow,
        _ => return Style::new().dimmed(),
    };
    Style::new().fg_color(Some(c.into()))
}

fn mark(state: &str) -> &'static str {
    match state {
        "succeeded" => "ok",
        "failed" | "blocked" => "!!",
        "running" => ">>",
        "awaiting_human" => "??",
        "skipped" | "cancelled" => "--",
        _ => "..",
    }
}

/// The live view of `s` at `now_ms`: a header, one line per node (see [`MAX_NODE_LINES`]),
/// the counts with usage, and what waits on a person.
pub fn view(s: &RunView, now_ms: i64, color: bool) -> Vec<String> {
    let end = s.finished_ms.unwrap_or(now_ms);
    let elapsed = (end - s.started_ms.unwrap_or(end)).max(0);
    let status = s.status.as_deref().unwrap_or("running");
    let mut out = vec![format!(
        "run {} · {} · {}.{}s · {}",
        s.run_id,
        paint(color, style_of(status).bold(), status),
        elapsed / 1000,
        elapsed % 1000 / 100,
        plural(s.events, "event")
    )];
    // The root scope's nodes (a container shows `running` until its instances end).
    let nodes: Vec<&NodeView> = s.root_nodes().collect();
    let urgent = |st: &str| matches!(st, "running" | "awaiting_human" | "failed" | "blocked");
    let shown: Vec<&NodeView> = if nodes.len() <= MAX_NODE_LINES {
        nodes.clone()
    } else {
        nodes
            .iter()
            .copied()
            .filter(|n| urgent(n.state.as_str()))
            .take(MAX_NODE_LINES)
            .collect()
    };
    let width = shown
        .iter()
        .map(|n| n.node.chars().count())
        .max()
        .unwrap_or(0)
        .min(MAX_ID);
    for n in shown {
        let name = n.state.as_str();
        let mut state = if n.attempt() > 1 {
            format!("{name} (attempt {})", n.attempt())
        } else {
            name.to_string()
        };
        if n.refused_calls > 0 {
            let calls = if n.refused_calls == 1 {
                "call"
            } else {
                "calls"
            };
            state.push_str(&format!(", {} tool {calls} refused", n.refused_calls));
        }
        out.push(format!(
            "  {} {:<width$}  {}",
            mark(name),
            clip(&n.node, MAX_ID),
            paint(color, style_of(name), &state)
        ));
    }
    let mut counts: Vec<String> = s
        .counts()
        .iter()
        .map(|(st, c)| format!("{c} {}", st.replace('_', " ")))
        .collect();
    if s.has_usage {
        let usage = s.usage();
        counts.push(format!("{} tokens", usage.total_tokens()));
        counts.push(format!("${:.4}", usage.cost_usd));
    }
    out.push(format!("nodes: {}", counts.join(" · ")));
    let waiting: Vec<String> = nodes
        .iter()
        .filter(|n| n.state == NodeState::AwaitingHuman)
        .map(|n| clip(&n.node, MAX_ID))
        .collect();
    if !waiting.is_empty() {
        let mut names = waiting[..waiting.len().min(MAX_WAITING_NAMED)].join(", ");
        if waiting.len() > MAX_WAITING_NAMED {
            let _ = write!(names, " and {} more", waiting.len() - MAX_WAITING_NAMED);
        }
        out.push(paint(
            color,
            style_of("awaiting_human"),
            &format!("waiting on a person: {names}"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn event_lines_read_as_sentences() {
        let at = 12 * 3_600_000 + 61_000; // 12:01:01 UTC
        let line = |k: &str, p: Value| event_line("r1", k, &p, at, None);
        assert_eq!(
            line("node_started", json!({"node": "build", "attempt": 1})),
            "12:01:01 node build started (attempt 1)"
        );
        assert_eq!(
            line(
                "node_started",
                json!({"node": "build", "attempt": 2, "delay_ms": 500})
            ),
            "12:01:01 node build started (attempt 2, after 500 ms)"
        );
        assert_eq!(
            line(
                "node_finished",
                json!({"node": "t", "outcome": "failed", "attempts": 2, "error": "exit 1"})
            ),
            "12:01:01 node t failed (2 attempts): exit 1"
        );
        assert_eq!(
            line(
                "run_finished",
                json!({"status": "partial", "reasons": ["x"]})
            ),
            "12:01:01 run finished: partial; x"
        );
        assert_eq!(
            line("brand_new", json!({"node": "n"})),
            "12:01:01 brand_new (node n)"
        );
        assert_eq!(
            line("gate_waiting", json!({"node": "review"})),
            "12:01:01 node review waits on a person"
        );
        assert_eq!(
            line("gate_waiting", json!({"node": "success/owner"})),
            "12:01:01 sign-off owner waits on a person"
        );
    }

    #[test]
    fn the_view_shows_states_counts_usage_and_waits() {
        use weft_engine::RunEvent;
        let record = |kind: &str, payload: serde_json::Value, at: i64| weft_store::EventRecord {
            run_id: "r1".into(),
            seq: 0,
            kind: kind.into(),
            payload,
            recorded_at_ms: at,
        };
        let gate = |node: &str| {
            json!({"node": node, "stage": "gate", "mode": "approve", "on_timeout": "fail",
                   "on_reject": "fail"})
        };
        let mut s = RunView::new("r1");
        for (kind, payload, at) in [
            (
                "run_started",
                json!({"v": 1, "graph_digest": "d", "params": {}, "max_parallel": 4,
                       "on_node_failure": "halt", "graph": {"nodes": {"a": {}, "bb": {}, "c": {}}}}),
                0,
            ),
            ("node_started", json!({"node": "a", "attempt": 2}), 100),
            ("gate_waiting", gate("c"), 200),
            (
                "node_finished",
                json!({"node": "bb", "outcome": "succeeded", "outputs": {}, "verdict": null,
                       "guards": [], "attempts": 1,
                       "usage": {"input_tokens": 40, "output_tokens": 2, "cost_usd": 0.5}}),
                300,
            ),
        ] {
            s.apply_record(&record(kind, payload, at));
        }
        assert_eq!(
            view(&s, 2_500, false),
            [
                "run r1 · running · 2.5s · 4 events",
                "  >> a   running (attempt 2)",
                "  ok bb  succeeded",
                "  ?? c   awaiting_human",
                "nodes: 1 running · 1 awaiting human · 1 succeeded · 42 tokens · $0.5000",
                "waiting on a person: c",
            ]
        );
        // Long ids are cut, and only a few waiting nodes are named.
        let mut wide = RunView::new("r2");
        for i in 0..7 {
            wide.apply_record(&record(
                "gate_waiting",
                gate(&format!("{i}{}", "x".repeat(40))),
                0,
            ));
        }
        let lines = view(&wide, 0, false);
        assert!(lines.iter().all(|l| l.chars().count() <= 200), "{lines:?}");
        assert!(lines[1].ends_with("awaiting_human") && lines[1].contains('…'));
        assert!(lines.last().unwrap().ends_with(" and 2 more"), "{lines:?}");
        let finished = RunEvent::RunFinished {
            status: "succeeded".into(),
            outputs: json!({}),
            redacted: Vec::new(),
            reasons: Vec::new(),
            graph_verdict: None,
        };
        s.apply(None, &finished, 4_000);
        // A finished run's elapsed time stops at its end.
        assert!(view(&s, 9_999, false)[0].contains("4.0s"));
    }
}
