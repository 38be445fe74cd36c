//! The fold on event sequences as the store holds them (kind + payload, `scope` member).

use serde_json::{Value, json};
use weft_store::EventRecord;

use super::*;

/// A log of `(kind, payload)` at 1000, 1001, … ms.
fn log(events: &[(&str, Value)]) -> Vec<EventRecord> {
    events
        .iter()
        .enumerate()
        .map(|(k, (kind, payload))| EventRecord {
            run_id: "r".into(),
            seq: k as u64 + 1,
            kind: (*kind).to_string(),
            payload: payload.clone(),
            recorded_at_ms: 1000 + k as i64,
        })
        .collect()
}

/// The `run_started` of a document whose nodes are all entry nodes, no edges.
fn started(nodes: &[&str]) -> (&'static str, Value) {
    let specs: serde_json::Map<String, Value> = nodes
        .iter()
        .map(|n| ((*n).to_string(), json!({})))
        .collect();
    started_graph(json!({"entrypoints": nodes, "nodes": specs}), "halt")
}

fn started_graph(graph: Value, on_node_failure: &str) -> (&'static str, Value) {
    (
        "run_started",
        json!({"v": 1, "graph_digest": "d", "params": {}, "max_parallel": 4,
               "on_node_failure": on_node_failure, "graph": graph}),
    )
}

fn finished(node: &str, outcome: &str, extra: Value) -> (&'static str, Value) {
    let mut p = json!({"node": node, "outcome": outcome, "outputs": {}, "verdict": null,
                       "guards": [], "attempts": 1});
    if let (Value::Object(p), Value::Object(extra)) = (&mut p, extra) {
        p.extend(extra);
    }
    ("node_finished", p)
}

fn scoped(scope: &str, (kind, mut payload): (&'static str, Value)) -> (&'static str, Value) {
    payload["scope"] = json!(scope);
    (kind, payload)
}

fn tokens(input: u64, output: u64, cost: f64) -> Value {
    json!({"input_tokens": input, "output_tokens": output, "cost_usd": cost})
}

fn states(v: &RunView) -> Vec<(String, &'static str, u32)> {
    v.nodes()
        .iter()
        .map(|n| (n.address(), n.state.as_str(), n.attempt()))
        .collect()
}

#[test]
fn nodes_attempts_usage_verdicts_and_the_final_status() {
    let records = log(&[
        started(&["a", "b", "c"]),
        ("node_started", json!({"node": "a", "attempt": 1})),
        ("node_started", json!({"node": "a", "attempt": 2})),
        finished(
            "a",
            "succeeded",
            json!({"attempts": 2, "usage": tokens(30, 12, 0.5),
                   "attempt_usage": [tokens(10, 2, 0.1), tokens(20, 10, 0.4)],
                   "verdict": {"passed": true, "results": [{"id": "tests", "outcome": "passed"}]}}),
        ),
        ("node_when", json!({"node": "b", "value": false})),
        ("node_started", json!({"node": "c", "attempt": 1})),
        finished(
            "c",
            "failed",
            json!({"error": "criteria_failed: lint", "usage": tokens(5, 0, 0.0),
                   "verdict": {"passed": false, "results": [
                       {"id": "lint", "outcome": "failed"}, {"id": "fmt", "outcome": "passed"}]}}),
        ),
        (
            "run_finished",
            json!({"status": "failed", "outputs": {}, "reasons": ["c failed"]}),
        ),
    ]);
    let v = RunView::of_records("r", &records);
    assert_eq!(
        states(&v),
        [
            ("a".into(), "succeeded", 2),
            ("b".into(), "skipped", 0),
            ("c".into(), "failed", 1)
        ]
    );
    let a = v.node(None, "a").unwrap();
    assert_eq!(a.attempts[0].usage.input_tokens, 10);
    assert_eq!(a.attempts[1].usage.output_tokens, 10);
    assert_eq!(a.verdict.as_ref().map(|c| c.passed), Some(true));
    let c = v.node(None, "c").unwrap();
    assert_eq!(c.verdict.as_ref().unwrap().not_passed, ["lint"]);
    assert_eq!(c.error.as_deref(), Some("criteria_failed: lint"));
    assert_eq!(v.usage().total_tokens(), 47);
    assert!((v.usage().cost_usd - 0.5).abs() < 1e-9);
    assert!(v.has_usage);
    assert_eq!(v.executions, 3);
    assert_eq!(v.status.as_deref(), Some("failed"));
    assert_eq!(v.reasons, ["c failed"]);
    assert_eq!((v.started_ms, v.finished_ms), (Some(1000), Some(1007)));
    assert_eq!(v.events, 8);
    assert_eq!(
        v.counts(),
        [("succeeded", 1), ("failed", 1), ("skipped", 1)]
    );
}

#[test]
fn a_wait_its_spend_and_refusals_then_a_resumed_run_that_finishes() {
    let gate = json!({"node": "review", "stage": "on_escalation", "mode": "approve",
                      "on_timeout": "fail", "on_reject": "fail", "attempts": 1});
    let spent = |n: u64| {
        (
            "attempt_spent",
            json!({"node": "review", "attempt": 1, "usage": tokens(n, 0, 0.0)}),
        )
    };
    let first = [
        started(&["review", "deploy"]),
        ("node_started", json!({"node": "review", "attempt": 1})),
        (
            "policy_decision",
            json!({"node": "review", "attempt": 1, "tool": "shell_exec",
            "action": "shell:exec:rm", "decision": "deny", "rule": "default", "reason": "no"}),
        ),
        (
            "policy_decision",
            json!({"node": "review", "attempt": 1, "tool": "read_file",
            "action": "fs:read:a", "decision": "allow", "rule": "node", "reason": "ok"}),
        ),
        spent(100),
        ("gate_waiting", gate.clone()),
    ];
    let v = RunView::of_records("r", &log(&first));
    assert_eq!(
        states(&v),
        [
            ("review".into(), "awaiting_human", 1),
            ("deploy".into(), "pending", 0)
        ]
    );
    assert_eq!(v.waits.len(), 1);
    assert_eq!(v.waits[0].waiting.node, "review");
    assert_eq!(v.node(None, "review").unwrap().refused_calls, 1);
    assert_eq!(v.usage().input_tokens, 100);
    assert_eq!(v.status, None);

    // The process stopped; a resume logs the spend again at a second wait, a person
    // decides, an attempt was abandoned and retried, and the run ends.
    let mut resumed = first.to_vec();
    resumed.extend([
        spent(100),
        ("gate_waiting", gate),
        (
            "human_decision",
            json!({"node": "review", "outcome": "approve", "actor": "ana"}),
        ),
        ("node_started", json!({"node": "deploy", "attempt": 1})),
        (
            "node_abandoned",
            json!({"node": "deploy", "attempt": 1, "reason": "retry_uncertain"}),
        ),
        ("node_started", json!({"node": "deploy", "attempt": 2})),
        finished("deploy", "succeeded", json!({"attempts": 2})),
        finished(
            "review",
            "succeeded",
            json!({"usage": tokens(130, 0, 0.0),
            "attempt_usage": [tokens(130, 0, 0.0)]}),
        ),
        (
            "run_finished",
            json!({"status": "succeeded", "outputs": {}}),
        ),
    ]);
    let v = RunView::of_records("r", &log(&resumed));
    assert_eq!(
        states(&v),
        [
            ("review".into(), "succeeded", 1),
            ("deploy".into(), "succeeded", 2)
        ]
    );
    assert!(v.waits.is_empty());
    assert_eq!(
        v.usage().input_tokens,
        130,
        "the spend logged twice counts once"
    );
    assert_eq!(
        v.node(None, "review").unwrap().attempts[0]
            .usage
            .input_tokens,
        130
    );
    assert_eq!(v.node(None, "deploy").unwrap().attempts.len(), 2);
    assert_eq!(v.executions, 3);
}

#[test]
fn fragment_instances_are_their_own_nodes_and_their_spend_counts() {
    let records = log(&[
        started(&["each"]),
        ("node_started", json!({"node": "each", "attempt": 1})),
        scoped(
            "each[0]",
            ("node_started", json!({"node": "step", "attempt": 1})),
        ),
        scoped(
            "each[1]",
            ("node_started", json!({"node": "step", "attempt": 1})),
        ),
        scoped(
            "each[0]",
            finished("step", "succeeded", json!({"usage": tokens(4, 1, 0.01)})),
        ),
        scoped(
            "each[1]",
            (
                "gate_waiting",
                json!({"node": "step", "stage": "gate", "mode": "approve",
                                    "on_timeout": "fail", "on_reject": "fail"}),
            ),
        ),
        scoped(
            "each[1]",
            (
                "policy_decision",
                json!({"node": "each[1].step", "attempt": 1, "tool": "t",
                "action": "net:fetch:x", "decision": "ask", "rule": "default", "reason": "r"}),
            ),
        ),
        ("some_future_kind", json!({"node": "each"})),
    ]);
    let v = RunView::of_records("r", &records);
    assert_eq!(
        states(&v),
        [
            ("each".into(), "running", 1),
            ("each[0].step".into(), "succeeded", 1),
            ("each[1].step".into(), "awaiting_human", 1)
        ]
    );
    assert_eq!(v.root_nodes().count(), 1);
    assert_eq!(v.counts(), [("running", 1)], "the root's nodes only");
    assert_eq!(v.waits.len(), 1);
    assert_eq!(v.waits[0].scope.as_deref(), Some("each[1]"));
    assert_eq!(v.node(Some("each[1]"), "step").unwrap().refused_calls, 1);
    assert_eq!(v.usage().total_tokens(), 5);
    assert_eq!(v.executions, 3);
    assert_eq!(v.events, 8, "an unknown kind is counted and passed over");
}

#[test]
fn a_node_reset_takes_back_the_superseded_finish() {
    let records = log(&[
        started(&["a"]),
        ("node_started", json!({"node": "a", "attempt": 1})),
        finished(
            "a",
            "failed",
            json!({"usage": tokens(40, 0, 0.0), "error": "failed: x"}),
        ),
        ("run_finished", json!({"status": "failed", "outputs": {}})),
        ("node_reset", json!({"node": "a"})),
        ("node_started", json!({"node": "a", "attempt": 2})),
    ]);
    let v = RunView::of_records("r", &records);
    let a = v.node(None, "a").unwrap();
    assert_eq!((a.state, a.error.as_deref()), (NodeState::Running, None));
    assert_eq!(v.status, None, "the reset reopened the run");
    assert_eq!(v.usage().input_tokens, 0);
}

/// `a -> b` (sequence), `c` on its own: under `isolate`, `a` failing leaves `b` a join that
/// can no longer be met.
fn chain_and_loner() -> Value {
    json!({"entrypoints": ["a", "c"], "nodes": {
        "a": {}, "b": {"depends_on": ["a"]}, "c": {}}})
}

#[test]
fn nodes_the_scheduler_skipped_without_an_event_are_skipped_before_the_run_ends() {
    let records = log(&[
        started_graph(chain_and_loner(), "isolate"),
        ("node_started", json!({"node": "a", "attempt": 1})),
        ("node_started", json!({"node": "c", "attempt": 1})),
        finished("a", "failed", json!({"error": "tool_error: exit 1"})),
    ]);
    let v = RunView::of_records("r", &records);
    assert_eq!(
        states(&v),
        [
            ("a".into(), "failed", 1),
            ("b".into(), "skipped", 0),
            ("c".into(), "running", 1)
        ],
        "declaration order; b named by no event"
    );
    assert_eq!(v.status, None);
    assert_eq!(v.status_given(weft_store::RunStatus::Running), "running");
}

#[test]
fn a_cancel_ends_the_nodes_not_started_as_cancelled() {
    let records = log(&[
        started_graph(chain_and_loner(), "isolate"),
        ("node_started", json!({"node": "a", "attempt": 1})),
        ("cancel_requested", json!({"actor": "bob"})),
        finished("a", "cancelled", json!({})),
        ("node_started", json!({"node": "c", "attempt": 1})),
    ]);
    let v = RunView::of_records("r", &records);
    assert_eq!(
        states(&v),
        [
            ("a".into(), "cancelled", 1),
            ("b".into(), "cancelled", 0),
            ("c".into(), "running", 1)
        ],
        "a node the log says started is running whatever the scheduler thought"
    );
}

#[test]
fn a_live_reset_takes_back_what_the_scheduler_decided_from_the_finish() {
    let mut v = RunView::new("r");
    let apply = |v: &mut RunView, (kind, payload): (&str, Value)| {
        let record = &log(&[(kind, payload)])[0];
        v.apply_record(record);
    };
    apply(&mut v, started_graph(chain_and_loner(), "halt"));
    apply(&mut v, ("node_started", json!({"node": "a", "attempt": 1})));
    apply(&mut v, finished("a", "failed", json!({})));
    assert_eq!(
        states(&v),
        [
            ("a".into(), "failed", 1),
            ("b".into(), "skipped", 0),
            ("c".into(), "pending", 0)
        ],
        "the halt skipped what the scheduler had not started (it had started c, an entry)"
    );
    apply(&mut v, ("node_reset", json!({"node": "a"})));
    assert_eq!(
        states(&v),
        [
            ("a".into(), "pending", 1),
            ("b".into(), "pending", 0),
            ("c".into(), "pending", 0)
        ]
    );

    // Read whole, the superseded finish never reaches the scheduler: nothing was halted.
    let records = log(&[
        started_graph(chain_and_loner(), "halt"),
        ("node_started", json!({"node": "a", "attempt": 1})),
        finished("a", "failed", json!({})),
        ("node_reset", json!({"node": "a"})),
        ("node_started", json!({"node": "a", "attempt": 2})),
        finished("a", "succeeded", json!({})),
    ]);
    let v = RunView::of_records("r", &records);
    assert_eq!(
        states(&v),
        [
            ("a".into(), "succeeded", 2),
            ("b".into(), "pending", 0),
            ("c".into(), "pending", 0)
        ]
    );
}

#[test]
fn an_instance_lists_its_fragments_nodes_and_its_wait_by_address() {
    let body = json!({"entrypoints": ["s"], "nodes": {
        "s": {}, "g": {"depends_on": ["s"]}, "t": {"depends_on": ["s"], "when": "false"}}});
    let doc = json!({"entrypoints": ["m", "x"], "nodes": {
        "m": {"type": "map", "map": {"body": body}}, "x": {}}});
    let instance = |path: &str| {
        scoped(
            path,
            (
                "run_started",
                json!({"v": 1, "graph_digest": "f", "params": {}, "max_parallel": 4,
                       "on_node_failure": "halt", "graph": null}),
            ),
        )
    };
    let gate = json!({"node": "g", "stage": "gate", "mode": "approve",
                      "on_timeout": "fail", "on_reject": "fail"});
    let records = log(&[
        started_graph(doc, "halt"),
        ("node_started", json!({"node": "m", "attempt": 1})),
        ("node_started", json!({"node": "x", "attempt": 1})),
        (
            "gate_waiting",
            json!({"node": "x", "stage": "gate", "mode": "approve",
                   "on_timeout": "fail", "on_reject": "fail"}),
        ),
        instance("m[0]"),
        scoped("m[0]", ("node_started", json!({"node": "s", "attempt": 1}))),
        scoped("m[0]", finished("s", "succeeded", json!({}))),
        scoped("m[0]", ("node_when", json!({"node": "t", "value": false}))),
        scoped("m[0]", ("node_started", json!({"node": "g", "attempt": 1}))),
        scoped("m[0]", ("gate_waiting", gate)),
        instance("m[1]"),
    ]);
    let v = RunView::of_records("r", &records);
    assert_eq!(
        states(&v),
        [
            ("m".into(), "running", 1),
            ("x".into(), "awaiting_human", 1),
            ("m[0].s".into(), "succeeded", 1),
            ("m[0].g".into(), "awaiting_human", 1),
            ("m[0].t".into(), "skipped", 0),
            ("m[1].s".into(), "pending", 0),
            ("m[1].g".into(), "pending", 0),
            ("m[1].t".into(), "pending", 0)
        ],
        "every node of an opened instance, in its fragment's order"
    );
    let waits: Vec<String> = v.open_waits().into_iter().map(|w| w.node).collect();
    assert_eq!(
        waits,
        ["x", "m[0].g"],
        "the root's first, instances by address"
    );
    // A root node runs: not yet waiting on a person as a whole, unless suspended on one.
    assert_eq!(v.status_given(weft_store::RunStatus::Running), "running");
    assert_eq!(
        v.status_given(weft_store::RunStatus::Suspended),
        "awaiting_human"
    );
}

#[test]
fn a_sign_off_waits_on_no_node_and_the_run_awaits_a_person() {
    let signoff = json!({"node": "success/review", "stage": "graph_success",
                         "mode": "approve", "on_timeout": "fail", "on_reject": "fail"});
    let records = log(&[
        started(&["a"]),
        ("node_started", json!({"node": "a", "attempt": 1})),
        finished("a", "succeeded", json!({})),
        ("gate_waiting", signoff),
    ]);
    let v = RunView::of_records("r", &records);
    assert_eq!(states(&v), [("a".into(), "succeeded", 1)]);
    assert_eq!(v.open_waits()[0].node, "success/review");
    assert_eq!(
        v.status_given(weft_store::RunStatus::Running),
        "awaiting_human"
    );
    let a = v.node(None, "a").unwrap();
    assert_eq!((a.started_ms, a.finished_ms), (Some(1001), Some(1002)));

    let decided = [
        records.clone(),
        log(&[(
            "human_decision",
            json!({"node": "success/review", "outcome": "approve", "actor": "ana"}),
        )]),
    ]
    .concat();
    let v = RunView::of_records("r", &decided);
    assert!(v.open_waits().is_empty());
    assert_eq!(states(&v), [("a".into(), "succeeded", 1)]);
    assert_eq!(v.status_given(weft_store::RunStatus::Suspended), "running");
    assert_eq!(v.status_given(weft_store::RunStatus::Failed), "failed");
}

#[test]
fn a_wait_before_an_attempt_closes_when_the_attempt_begins() {
    let records = log(&[
        started(&["a"]),
        (
            "gate_waiting",
            json!({"node": "a", "stage": "gate", "checkpoint": "before", "mode": "approve",
                   "on_timeout": "fail", "on_reject": "fail"}),
        ),
        ("node_started", json!({"node": "a", "attempt": 1})),
    ]);
    let v = RunView::of_records("r", &records);
    assert!(v.open_waits().is_empty());
    assert_eq!(states(&v), [("a".into(), "running", 1)]);
}

#[test]
fn a_log_its_scheduler_refuses_is_shown_from_its_facts() {
    // `b` finishes before the `a` it depends on: no scheduler takes that; the view still
    // shows what the log says.
    let records = log(&[
        started_graph(chain_and_loner(), "isolate"),
        finished("b", "succeeded", json!({})),
        ("node_started", json!({"node": "ghost", "attempt": 1})),
    ]);
    let v = RunView::of_records("r", &records);
    assert_eq!(
        states(&v),
        [
            ("a".into(), "pending", 0),
            ("b".into(), "succeeded", 0),
            ("c".into(), "pending", 0),
            ("ghost".into(), "running", 1)
        ]
    );
}

#[test]
fn a_mutation_the_scheduler_refused_adds_no_node_and_an_accepted_one_does() {
    let records = log(&[
        started_graph(chain_and_loner(), "isolate"),
        ("node_started", json!({"node": "a", "attempt": 1})),
        // `a` has started: the split comes too late (a race `submit` cannot rule out), and
        // the driver, the replay and the record all leave the graph as it was.
        (
            "graph_mutated",
            json!({"v": 2, "actor": "planner", "mutation": {"op": "split", "node": "a",
                   "parts": [{"id": "a1", "node": {}}, {"id": "a2", "node": {}}],
                   "shape": "chain"}}),
        ),
        (
            "graph_mutated",
            json!({"v": 2, "actor": "planner", "mutation": {"op": "add_node", "id": "d",
                   "node": {}, "after": [{"from": "c"}]}}),
        ),
    ]);
    let v = RunView::of_records("r", &records);
    assert_eq!(
        states(&v),
        [
            ("a".into(), "running", 1),
            ("b".into(), "pending", 0),
            ("c".into(), "pending", 0),
            ("d".into(), "pending", 0)
        ],
        "the refused split's parts are not nodes; the added node is"
    );
}
