//! What happened, in words a user reads once: what failed and why (a command's last stderr
//! lines), what weft did instead (the fallback, the alternate node that supplied the result,
//! the criteria it relaxed, the `on_failure` edge that took over), and why the run still
//! counts as succeeded. Pure: built from the run's stored events (`node_finished` with
//! `absorbed_by` / `absorbed_failure`, and the document in `run_started.graph`).

use serde_json::Value;
use weft_core::FailureClass;
use weft_store::EventRecord;

/// A node's failure message (`class: message`, as the engine logs it) as a clause:
/// `its command exited with code 1 (trace store unreachable)`.
pub fn failure_words(error: &str) -> String {
    let Some((class, msg)) = FailureClass::split_logged(error) else {
        return format!("it failed ({error})");
    };
    match class {
        FailureClass::ToolError => match msg.strip_prefix("exit code ") {
            Some(rest) => {
                let (code, tail) = rest.split_once(": ").unwrap_or((rest, ""));
                let how = if code == "a signal" || code.starts_with("signal") {
                    format!("its command was killed by {code}")
                } else {
                    format!("its command exited with code {code}")
                };
                if tail.is_empty() {
                    format!("{how} and printed nothing on stderr")
                } else {
                    format!("{how} ({tail})")
                }
            }
            None => format!("its command failed ({msg})"),
        },
        FailureClass::CriteriaFailed => format!("its success criteria failed ({msg})"),
        FailureClass::OutputMissing => format!("its outputs were incomplete ({msg})"),
        FailureClass::Timeout => format!("it timed out ({msg})"),
        _ => format!("it failed ({error})"),
    }
}

/// `graph.nodes[node].failure.fallback[index]`.
fn fallback_step<'a>(graph: Option<&'a Value>, node: &str, index: usize) -> Option<&'a Value> {
    graph?
        .get("nodes")?
        .get(node)?
        .pointer("/failure/fallback")?
        .get(index)
}

/// Names as `a`, `a and b`, `a, b and c`.
fn listing(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// What weft did about a failure that the rung `rung` (`fallback[i]:<strategy>`,
/// `timeout_action:<action>`, `on_timeout:<action>`) absorbed, as a clause.
pub fn remedy_words(node: &str, rung: &str, graph: Option<&Value>) -> String {
    if let Some(action) = rung.strip_prefix("timeout_action:") {
        return format!(
            "its timeout_action is `{action}`, so it counts as succeeded degraded (and the run \
             as partial)"
        );
    }
    if let Some(action) = rung.strip_prefix("on_timeout:") {
        return format!("nobody decided before the deadline, and its on_timeout is `{action}`");
    }
    let Some((index, strategy)) = rung
        .strip_prefix("fallback[")
        .and_then(|r| r.split_once("]:"))
        .and_then(|(i, s)| i.parse::<usize>().ok().map(|i| (i, s)))
    else {
        return format!("`{rung}` absorbed the failure");
    };
    let step = fallback_step(graph, node, index);
    match strategy {
        "alternate_node" => match step.and_then(|s| s.get("node")).and_then(Value::as_str) {
            Some(alt) => {
                format!("its fallback ran {alt} in its place, and its outputs are {alt}'s")
            }
            None => "its fallback ran its alternate node in its place".to_string(),
        },
        "relax_criteria" => {
            let names = strings(step.and_then(|s| s.get("criteria")));
            if names.is_empty() {
                "its fallback relaxed its criteria to advisory, so they no longer decide"
                    .to_string()
            } else {
                let noun = if names.len() == 1 {
                    "criterion"
                } else {
                    "criteria"
                };
                format!(
                    "its fallback relaxed {noun} {} to advisory: the outputs were accepted, \
                     the criterion's failure kept as a note",
                    listing(&names)
                )
            }
        }
        "degrade_outputs" => {
            let names = strings(step.and_then(|s| s.get("outputs")));
            if names.is_empty() {
                "its fallback accepted the outputs it had".to_string()
            } else {
                format!(
                    "its fallback accepted the outputs it had (only {} required)",
                    listing(&names)
                )
            }
        }
        "skip" => "its fallback skipped it".to_string(),
        "human_takeover" => "a person supplied its outputs (its human_takeover fallback)".into(),
        other => format!("its fallback `{other}` absorbed the failure"),
    }
}

/// What the lines need of the document as run: each node's `failure.fallback` steps (the
/// alternate's name, the criteria relaxed), and nothing else, so a sink keeps a few entries
/// rather than a copy of a large document.
pub fn fallback_view(graph: &Value) -> Value {
    let nodes: serde_json::Map<String, Value> = graph
        .get("nodes")
        .and_then(Value::as_object)
        .map(|nodes| {
            nodes
                .iter()
                .filter_map(|(id, node)| {
                    let steps = node.pointer("/failure/fallback")?;
                    Some((
                        id.clone(),
                        serde_json::json!({"failure": {"fallback": steps}}),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    serde_json::json!({ "nodes": nodes })
}

/// The criteria a verdict (`node_finished.verdict`) says failed, with their evidence:
/// ``criterion `fresh` was not met (`self.outputs.p99_ms < 500` is false)``.
fn failed_criteria(verdict: Option<&Value>) -> Vec<String> {
    verdict
        .and_then(|v| v.get("results"))
        .and_then(Value::as_array)
        .map(|results| {
            results
                .iter()
                .filter(|r| r.get("outcome").and_then(Value::as_str) == Some("failed"))
                .map(|r| {
                    let id = r.get("id").and_then(Value::as_str).unwrap_or("?");
                    match r.pointer("/evidence/summary").and_then(Value::as_str) {
                        Some(why) => format!("criterion `{id}` was not met ({why})"),
                        None => format!("criterion `{id}` was not met"),
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The line of a node that ended through a fallback, from its `node_finished` payload:
/// `gather_traces succeeded through its fallback: its command exited with code 1 (…); its
/// fallback ran traces_mirror in its place…`. A criteria failure names each criterion and
/// its evidence.
pub fn absorbed_line(payload: &Value, graph: Option<&Value>) -> String {
    let text = |k: &str| payload.get(k).and_then(Value::as_str);
    let node = text("node").unwrap_or("?");
    let failure = text("absorbed_failure");
    let criteria = failed_criteria(payload.get("verdict"));
    let what = match failure {
        Some(f) if f.starts_with("criteria_failed: ") && !criteria.is_empty() => {
            criteria.join(", ")
        }
        Some(f) => failure_words(f),
        None => "it failed".to_string(),
    };
    format!(
        "{node} {} through its fallback: {what}; {}",
        text("outcome").unwrap_or("finished"),
        remedy_words(node, text("absorbed_by").unwrap_or_default(), graph)
    )
}

/// The `on_failure` edges from `node`: the nodes that run because it failed.
fn on_failure_targets(graph: Option<&Value>, node: &str) -> Vec<String> {
    graph
        .and_then(|g| g.get("edges"))
        .and_then(Value::as_array)
        .map(|edges| {
            edges
                .iter()
                .filter(|e| {
                    e.get("from").and_then(Value::as_str) == Some(node)
                        && e.get("kind").and_then(Value::as_str) == Some("on_failure")
                })
                .filter_map(|e| e.get("to").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// What a finished run says after its node table: one line per node that failed or ended
/// through a fallback (what failed, why, what weft did instead), the alternates that ran in
/// another node's place, and, when the run succeeded in spite of them, why it counts as
/// succeeded. Empty when nothing failed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Story {
    /// `node …` lines, in the document's node order (parallel nodes end in any order).
    pub lines: Vec<String>,
    /// Nodes that supplied another's result: `(alternate, for node)`.
    pub alternates: Vec<(String, String)>,
    /// Root nodes that failed and why, in log order.
    pub failed: Vec<(String, String)>,
    /// Root nodes that ended through a fallback.
    pub absorbed: Vec<String>,
    /// Failed nodes with `on_failure` edges: `(node, targets)`.
    pub handled: Vec<(String, Vec<String>)>,
    /// `run_started.on_node_failure` (`isolate`, `halt`, …).
    pub on_node_failure: Option<String>,
}

impl Story {
    /// Built from the run's stored events (the root scope's; fragment instances have
    /// their own lines in the log).
    pub fn from_events(events: &[EventRecord]) -> Story {
        let started = events
            .iter()
            .find(|e| e.kind == "run_started" && e.payload.get("scope").is_none());
        let graph = started.and_then(|e| e.payload.get("graph"));
        let mut story = Story {
            on_node_failure: started
                .and_then(|e| e.payload.get("on_node_failure"))
                .and_then(Value::as_str)
                .map(str::to_string),
            ..Story::default()
        };
        // The node each line is about, to order the lines by the document.
        let mut lines = Vec::new();
        for e in events
            .iter()
            .filter(|e| e.kind == "node_finished" && e.payload.get("scope").is_none())
        {
            let text = |k: &str| e.payload.get(k).and_then(Value::as_str);
            let Some(node) = text("node") else { continue };
            lines.push(node.to_string());
            let outcome = text("outcome").unwrap_or("finished");
            if let Some(rung) = text("absorbed_by") {
                story.lines.push(absorbed_line(&e.payload, graph));
                story.absorbed.push(node.to_string());
                if rung.ends_with(":alternate_node")
                    && let Some(alt) = rung
                        .strip_prefix("fallback[")
                        .and_then(|r| r.split_once(']'))
                        .and_then(|(i, _)| i.parse().ok())
                        .and_then(|i| fallback_step(graph, node, i))
                        .and_then(|s| s.get("node"))
                        .and_then(Value::as_str)
                {
                    story.alternates.push((alt.to_string(), node.to_string()));
                }
            } else if outcome == "failed" {
                let error = text("error").unwrap_or("failed");
                let targets = on_failure_targets(graph, node);
                let criteria = failed_criteria(e.payload.get("verdict"));
                let why = if error.starts_with("criteria_failed: ") && !criteria.is_empty() {
                    criteria.join(", ")
                } else {
                    failure_words(error)
                };
                let mut line = format!("{node} failed: {why}");
                if !targets.is_empty() {
                    line.push_str(&format!(
                        "; its on_failure edge ran {} instead",
                        listing(&targets)
                    ));
                    story.handled.push((node.to_string(), targets));
                }
                story.lines.push(line);
                story.failed.push((node.to_string(), error.to_string()));
            } else {
                lines.pop();
            }
        }
        let order: Vec<&String> = graph
            .and_then(|g| g.get("nodes"))
            .and_then(Value::as_object)
            .map(|nodes| nodes.keys().collect())
            .unwrap_or_default();
        let rank = |node: &str| order.iter().position(|n| *n == node).unwrap_or(usize::MAX);
        let mut ranked: Vec<(usize, String)> = lines
            .iter()
            .map(|n| rank(n))
            .zip(std::mem::take(&mut story.lines))
            .collect();
        ranked.sort_by_key(|(r, _)| *r);
        story.lines = ranked.into_iter().map(|(_, l)| l).collect();
        story.absorbed.sort_by_key(|n| rank(n));
        story.failed.sort_by_key(|(n, _)| rank(n));
        story.handled.sort_by_key(|(n, _)| rank(n));
        story
    }

    /// The note beside a node in the final table, if any.
    pub fn note_for(&self, node: &str) -> Option<String> {
        if let Some((_, of)) = self.alternates.iter().find(|(alt, _)| alt == node) {
            return Some(format!("ran in place of {of}, as its fallback"));
        }
        self.absorbed
            .iter()
            .any(|n| n == node)
            .then(|| "through its fallback; see below".to_string())
    }

    /// Why a run that `succeeded` did so in spite of failures, or `None` when nothing
    /// failed.
    pub fn why_succeeded(&self) -> Option<String> {
        if self.failed.is_empty() && self.absorbed.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        if !self.absorbed.is_empty() {
            parts.push(format!(
                "{} recovered through {} fallback",
                listing(&self.absorbed),
                if self.absorbed.len() == 1 {
                    "its"
                } else {
                    "their"
                }
            ));
        }
        if !self.handled.is_empty() {
            let names: Vec<String> = self.handled.iter().map(|(n, _)| n.clone()).collect();
            parts.push(format!(
                "the failure of {} is handled by its on_failure edge",
                listing(&names)
            ));
        }
        let unhandled: Vec<String> = self
            .failed
            .iter()
            .filter(|(n, _)| !self.handled.iter().any(|(h, _)| h == n))
            .map(|(n, _)| n.clone())
            .collect();
        if !unhandled.is_empty() {
            parts.push(format!(
                "the failure of {} stopped only what depends on it (on_node_failure: {})",
                listing(&unhandled),
                self.on_node_failure.as_deref().unwrap_or("isolate")
            ));
        }
        Some(format!(
            "the run succeeded: {}, and every required output was produced",
            parts.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_node_failed_by_its_criteria_names_them_with_their_evidence() {
        let events = [record(
            "node_finished",
            json!({"node": "rate", "outcome": "failed",
                   "error": "criteria_failed: success criteria not met: on_the_scale",
                   "verdict": {"results": [{"id": "on_the_scale", "outcome": "failed",
                       "evidence": {"summary": "`self.outputs.severity <= 4` is false"}}]}}),
        )];
        assert_eq!(
            Story::from_events(&events).lines,
            [
                "rate failed: criterion `on_the_scale` was not met (`self.outputs.severity <= 4` \
              is false)"
            ]
        );
    }

    #[test]
    fn the_fallback_view_keeps_only_the_fallback_steps() {
        let graph = json!({"nodes": {
            "t": {"title": "T", "failure": {"retry": {}, "fallback": [{"strategy": "skip"}]}},
            "u": {"title": "U"}
        }});
        assert_eq!(
            fallback_view(&graph),
            json!({"nodes": {"t": {"failure": {"fallback": [{"strategy": "skip"}]}}}})
        );
    }

    #[test]
    fn failures_read_as_clauses() {
        assert_eq!(
            failure_words("tool_error: exit code 1: trace store unreachable"),
            "its command exited with code 1 (trace store unreachable)"
        );
        assert_eq!(
            failure_words("tool_error: exit code 2: "),
            "its command exited with code 2 and printed nothing on stderr"
        );
        assert_eq!(
            failure_words("criteria_failed: `fresh` failed"),
            "its success criteria failed (`fresh` failed)"
        );
        assert_eq!(
            failure_words("budget_exceeded: max_cost_usd"),
            "it failed (budget_exceeded: max_cost_usd)"
        );
    }

    fn record(kind: &str, payload: Value) -> EventRecord {
        EventRecord {
            run_id: "r".into(),
            seq: 1,
            kind: kind.into(),
            payload,
            recorded_at_ms: 0,
        }
    }

    #[test]
    fn the_story_names_the_alternate_the_relaxed_criteria_and_the_handled_failure() {
        let graph = json!({
            "nodes": {
                "t": {"failure": {"fallback": [{"strategy": "alternate_node", "node": "m"}]}},
                "x": {"failure": {"fallback": [{"strategy": "relax_criteria", "criteria": ["fresh"]}]}},
                "d": {}, "m": {}, "n": {}
            },
            "edges": [{"from": "d", "to": "n", "kind": "on_failure"}]
        });
        let events = [
            record("run_started", json!({"graph": graph})),
            record(
                "node_finished",
                json!({"node": "t", "outcome": "succeeded",
                       "absorbed_by": "fallback[0]:alternate_node",
                       "absorbed_failure": "tool_error: exit code 1: down"}),
            ),
            record(
                "node_finished",
                json!({"node": "x", "outcome": "succeeded",
                       "absorbed_by": "fallback[0]:relax_criteria",
                       "absorbed_failure": "criteria_failed: success criteria not met: fresh",
                       "verdict": {"results": [
                           {"id": "fresh", "outcome": "failed",
                            "evidence": {"summary": "`p < 5` is false"}},
                           {"id": "shape", "outcome": "passed"}]}}),
            ),
            record(
                "node_finished",
                json!({"node": "d", "outcome": "failed", "error": "tool_error: exit code 1: 503"}),
            ),
        ];
        let story = Story::from_events(&events);
        assert_eq!(
            story.lines,
            [
                "t succeeded through its fallback: its command exited with code 1 (down); its \
                 fallback ran m in its place, and its outputs are m's",
                "x succeeded through its fallback: criterion `fresh` was not met (`p < 5` is \
                 false); its fallback relaxed criterion fresh to advisory: the outputs were \
                 accepted, the criterion's failure kept as a note",
                "d failed: its command exited with code 1 (503); its on_failure edge ran n \
                 instead",
            ]
        );
        assert_eq!(
            story.note_for("m").as_deref(),
            Some("ran in place of t, as its fallback")
        );
        assert_eq!(story.note_for("n"), None);
        assert_eq!(
            story.why_succeeded().unwrap(),
            "the run succeeded: t and x recovered through their fallback; the failure of d is \
             handled by its on_failure edge, and every required output was produced"
        );
        assert_eq!(Story::from_events(&events[..1]).why_succeeded(), None);
    }
}
