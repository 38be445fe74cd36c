//! AGS fidelity at run time (issue 13): what the spec defines, a run does. Each test cites
//! the DIGEST section it checks: the names in scope (§2.5, §1.14), absent values read as
//! null (§1.8, §2.3), `policy.on_expression_error` wherever the expression is (§1.5, §2.6),
//! `RT021` on a loop's cap (§1.8), and the record's diagnostics (§6.9).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{assert_valid, py, record_node, request, resume_with, state};
use serde_json::{Value, json};
use weft_engine::human::{Verb, decide};
use weft_engine::record::record_of;
use weft_engine::{FinalStatus, RunOptions, RunReport, run_document};
use weft_store::Store;

fn doc(nodes: Value, extra: Value) -> Value {
    let mut d = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/fidelity",
        "title": "Fidelity", "objective": "Check what the spec defines", "version": "2.1.0",
        "entrypoints": ["a"],
        "nodes": nodes,
    });
    if let (Some(m), Some(e)) = (d.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    d
}

/// The validator's errors, less the schema's demand for a `title` or `description` on
/// every node, input, output and param (these tests leave the prose out).
fn errors(doc: &Value) -> Vec<weft_ags::Finding> {
    weft_ags::validate::validate(doc)
        .into_iter()
        .filter(|f| f.is_error())
        .filter(|f| {
            !(f.code.as_str() == "AG001"
                && (f.message.ends_with("field 'title'")
                    || f.message.ends_with("field 'description'")))
        })
        .collect()
}

/// The document the validator accepts: no error-level finding.
fn assert_accepted(doc: &Value) {
    let errors: Vec<String> = errors(doc)
        .iter()
        .map(|f| format!("{} {}: {}", f.code.as_str(), f.pointer, f.message))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

async fn run(doc: &Value, store: &Store) -> (RunReport, Value) {
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..RunOptions::default()
    };
    let report = run_document(doc, store, &options).await.unwrap();
    let record = record_of(store, &report.run_id).unwrap();
    assert_valid(&record);
    (report, record)
}

/// The codes of the record's diagnostics, with their severity.
fn diagnostics(record: &Value) -> Vec<(String, String)> {
    record["diagnostics"]
        .as_array()
        .map(|d| {
            d.iter()
                .map(|d| {
                    (
                        d["code"].as_str().unwrap().to_string(),
                        d["severity"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// An exec node that echoes its inputs as output `got`.
fn echo(inputs: Value) -> Value {
    json!({
        "type": "task", "description": "echo what the node sees",
        "inputs": inputs,
        "outputs": {"got": {"type": "object"}},
        "x-weft-exec": {"run": py("dict(got=i)")}
    })
}

#[tokio::test]
async fn every_name_of_the_scope_table_resolves_at_run_time() {
    // DIGEST §2.5 (graph, self, nodes.<id>.*) and §1.14 (env.<NAME> for listed names).
    let mut a = echo(json!({
        "me": {"type": "string", "from": "self.id"},
        "n": {"type": "integer", "from": "self.attempt"},
        "also": {"type": "string", "from": "nodes.self.id"},
        "gid": {"type": "string", "from": "graph.id"},
        "title": {"type": "string", "from": "graph.title"},
        "objective": {"type": "string", "from": "graph.objective"},
        "version": {"type": "string", "from": "graph.version"},
        "path": {"type": "string", "from": "env.PATH"},
        "unset": {"type": "string", "required": false,
                  "from": "default(env.WEFT_FIDELITY_SURELY_UNSET, 'none')"}
    }));
    a["requirements"] = json!({"environment": ["PATH", "WEFT_FIDELITY_SURELY_UNSET"]});
    let mut b = echo(json!({
        "attempts": {"type": "integer", "from": "nodes.a.attempts"},
        "took": {"type": "number", "from": "nodes.a.duration_seconds"},
        "status": {"type": "string", "from": "nodes.a.status"},
        "label": {"type": "string", "from": "nodes.pick.decision"}
    }));
    b["depends_on"] = json!(["a", "pick"]);
    let pick = json!({
        "type": "decision", "description": "pick a way",
        "depends_on": ["a"],
        "decision": {"evaluator": "expression", "default_branch": "right", "branches": [
            {"label": "left", "description": "first attempt", "when": "self.attempt == 1"},
            {"label": "right", "description": "later", "when": "self.attempt > 1"}
        ]},
    });
    let doc = doc(json!({"a": a, "pick": pick, "b": b}), json!({}));
    assert_accepted(&doc);
    let store = Store::open_in_memory().unwrap();
    let (report, record) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    let got = &record_node(&record, "a")["outputs"]["got"];
    assert_eq!(got["me"], "a");
    assert_eq!(got["also"], "a");
    assert_eq!(got["n"], 1);
    assert_eq!(got["gid"], "test/fidelity");
    assert_eq!(got["title"], "Fidelity");
    assert_eq!(got["objective"], "Check what the spec defines");
    assert_eq!(got["version"], "2.1.0");
    assert_eq!(got["path"], json!(std::env::var("PATH").unwrap()));
    assert_eq!(got["unset"], "none");
    let got = &record_node(&record, "b")["outputs"]["got"];
    assert_eq!(got["attempts"], 1);
    assert!(got["took"].as_f64().unwrap() >= 0.0, "{got}");
    assert_eq!(got["status"], "succeeded");
    assert_eq!(got["label"], "left");
    // DIGEST §6.9: a decision node's run names the label it chose.
    assert_eq!(record_node(&record, "pick")["decision"], "left");
}

#[tokio::test]
async fn an_env_name_not_listed_is_refused_by_the_validator() {
    // DIGEST §1.14: only the names in requirements.environment are visible as env.<NAME>.
    let doc = doc(
        json!({"a": echo(json!({"p": {"type": "string", "from": "env.PATH"}}))}),
        json!({}),
    );
    let found = errors(&doc);
    let codes: Vec<&str> = found.iter().map(|f| f.code.as_str()).collect();
    assert_eq!(codes, ["AG203"]);
}

#[tokio::test]
async fn the_first_test_of_a_while_loop_reads_absent_outputs_as_null() {
    // DIGEST §1.8 (the first `while` test's body scope is empty) and §2.3 (a declared name
    // whose value is absent evaluates to null, so `default()` works).
    let lp = json!({
        "mode": "while", "max_iterations": 5,
        "condition": "default(nodes.step.outputs.acc, 0) < 2",
        "carry": {"acc": "acc"},
        "collect": {"total": "nodes.step.outputs.acc"},
        "body": {
            "params": {"acc": {"type": "integer", "required": false, "default": 0}},
            "entrypoints": ["step"],
            "nodes": {"step": {
                "type": "task", "description": "add one",
                "inputs": {"acc": {"type": "integer", "from": "params.acc"}},
                "outputs": {"acc": {"type": "integer"}},
                "x-weft-exec": {"run": py("dict(acc=i[\"acc\"] + 1)")}
            }}
        }
    });
    let doc = doc(
        json!({"a": {"type": "loop", "description": "count", "loop": lp,
                     "outputs": {"total": {"type": "integer"}}}}),
        json!({"outputs": {"total": {"type": "integer", "from": "nodes.a.outputs.total"}}}),
    );
    assert_accepted(&doc);
    let store = Store::open_in_memory().unwrap();
    let (report, record) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(report.outputs["total"], json!(2));
    assert!(diagnostics(&record).is_empty(), "{record:#}");
}

#[tokio::test]
async fn a_skipped_nodes_outputs_read_as_null() {
    // DIGEST §2.3 and §8: a declared output a skipped node never produced is null.
    let mut b = echo(json!({}));
    b["when"] = json!("false");
    b["outputs"] = json!({"x": {"type": "string"}});
    let mut c = echo(json!({
        "x": {"type": "string", "from": "default(nodes.b.outputs.x, 'none')"},
        "is_null": {"type": "boolean", "from": "nodes.b.outputs.x == null"}
    }));
    c["join"] = json!("any");
    let doc = doc(
        json!({"a": echo(json!({})), "b": b, "c": c}),
        json!({"entrypoints": ["a", "b"],
               "edges": [{"from": "a", "to": "c"}, {"from": "b", "to": "c"}]}),
    );
    assert_accepted(&doc);
    let store = Store::open_in_memory().unwrap();
    let (report, record) = run(&doc, &store).await;
    assert_eq!(state(&report, "b"), "skipped");
    assert_eq!(state(&report, "c"), "succeeded", "{report:#?}");
    assert_eq!(
        record_node(&record, "c")["outputs"]["got"],
        json!({"x": "none", "is_null": true})
    );
    // DIGEST §6.3: the edge leaving the skipped node resolved (inactive) and is recorded.
    let edges = record["edges_taken"].as_array().unwrap();
    let from_b: Vec<&Value> = edges.iter().filter(|e| e["from"] == "b").collect();
    assert_eq!(from_b.len(), 1, "{edges:#?}");
    assert_eq!(from_b[0]["to"], "c");
    assert_eq!(from_b[0]["active"], false);
}

#[tokio::test]
async fn a_node_run_names_the_fallback_that_absorbed_its_failure() {
    // DIGEST §6.9 (`fallback_used`) and §1.16 (`skip`: the node is skipped).
    let a = json!({"type": "task", "description": "fail", "x-weft-exec": {"run": "exit 1"},
                   "failure": {"fallback": [{"strategy": "skip"}]}});
    let doc = doc(json!({"a": a}), json!({}));
    let store = Store::open_in_memory().unwrap();
    let (report, record) = run(&doc, &store).await;
    assert_eq!(state(&report, "a"), "skipped", "{report:#?}");
    assert_eq!(record_node(&record, "a")["fallback_used"], "skip");
}

/// A graph whose only evaluation error is at `site`, under `on_expression_error: policy`.
fn erring(site: &str, policy: &str) -> Value {
    // `int('abc')` is a failed conversion: an evaluation error at run time (DIGEST §2.6).
    let bad = "int(params.word) > 1";
    let mut a = echo(json!({}));
    let mut b = echo(json!({}));
    b["depends_on"] = json!(["a"]);
    let mut extra = json!({
        "params": {"word": {"type": "string", "required": false, "default": "abc"}},
        "policy": {"on_expression_error": policy},
    });
    match site {
        "input" => a["inputs"] = json!({"w": {"type": "boolean", "from": bad}}),
        "criterion" => {
            a["success"] = json!({"criteria": [{"id": "c", "kind": "expression", "description": "a conversion", "expr": bad}]});
        }
        "edge" => {
            b.as_object_mut().unwrap().remove("depends_on");
            extra["edges"] = json!([{"from": "a", "to": "b", "kind": "conditional", "when": bad}]);
        }
        "when" => b["when"] = json!(bad),
        "fallback" => {
            a["x-weft-exec"] = json!({"run": "exit 1"});
            a["failure"] = json!({"fallback": [{"strategy": "skip", "when": bad}]});
        }
        _ => unreachable!(),
    }
    doc(json!({"a": a, "b": b}), extra)
}

#[tokio::test]
async fn under_fail_an_evaluation_error_fails_the_run_wherever_the_expression_is() {
    // DIGEST §1.5 and §2.6: `fail` (the default) makes an AGX evaluation error run-fatal,
    // in an input `from`, a criterion, an edge guard, a node `when` and a fallback's `when`.
    for site in ["input", "criterion", "edge", "when", "fallback"] {
        let doc = erring(site, "fail");
        assert_accepted(&doc);
        let store = Store::open_in_memory().unwrap();
        let (report, record) = run(&doc, &store).await;
        assert_eq!(report.status, FinalStatus::Failed, "{site}: {report:#?}");
        assert!(
            report
                .reasons
                .iter()
                .any(|r| r.contains("expression error")),
            "{site}: {:?}",
            report.reasons
        );
        assert!(
            diagnostics(&record).contains(&("RT062".into(), "error".into())),
            "{site}: {record:#}"
        );
    }
}

#[tokio::test]
async fn under_false_an_evaluation_error_yields_false_and_is_recorded_as_rt062() {
    // DIGEST §1.5 and §2.6: `false` makes the expression false, records RT062 and goes on.
    for (site, a_state, b_state) in [
        ("input", "succeeded", "succeeded"),
        ("criterion", "failed", "skipped"),
        ("edge", "succeeded", "skipped"),
        ("when", "succeeded", "skipped"),
        ("fallback", "failed", "skipped"),
    ] {
        let doc = erring(site, "false");
        let store = Store::open_in_memory().unwrap();
        let (report, record) = run(&doc, &store).await;
        assert_eq!(state(&report, "a"), a_state, "{site}: {report:#?}");
        assert_eq!(state(&report, "b"), b_state, "{site}: {report:#?}");
        assert!(
            !report
                .reasons
                .iter()
                .any(|r| r.contains("expression error")),
            "{site}: {:?}",
            report.reasons
        );
        assert!(
            diagnostics(&record).contains(&("RT062".into(), "warning".into())),
            "{site}: {record:#}"
        );
        if site == "input" {
            assert_eq!(
                record_node(&record, "a")["outputs"]["got"],
                json!({"w": false})
            );
        }
    }
}

fn loop_doc(condition: &str, policy: &str, on_max: &str) -> Value {
    let lp = json!({
        "mode": "until", "max_iterations": 2, "condition": condition,
        "on_max_iterations": on_max,
        "body": {
            "entrypoints": ["step"],
            "nodes": {"step": echo(json!({}))}
        }
    });
    doc(
        json!({"a": {"type": "loop", "description": "loop", "loop": lp}}),
        json!({
            "params": {"word": {"type": "string", "required": false, "default": "abc"}},
            "policy": {"on_expression_error": policy},
        }),
    )
}

#[tokio::test]
async fn a_loop_test_that_fails_to_evaluate_follows_on_expression_error() {
    // DIGEST §2.6: a loop test is an expression like any other: never a hidden warning.
    let store = Store::open_in_memory().unwrap();
    let doc = loop_doc("int(params.word) > 1", "fail", "fail");
    let (report, record) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::Failed, "{report:#?}");
    assert_eq!(state(&report, "a"), "failed");
    assert!(diagnostics(&record).contains(&("RT062".into(), "error".into())));
    // Under `false` the test is false: an `until` loop runs to its cap (RT021).
    let doc = loop_doc("int(params.word) > 1", "false", "succeed");
    let (report, record) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    let codes = diagnostics(&record);
    assert!(
        codes.contains(&("RT062".into(), "warning".into())),
        "{codes:?}"
    );
    assert!(
        codes.contains(&("RT021".into(), "warning".into())),
        "{codes:?}"
    );
}

#[tokio::test]
async fn a_loop_reaching_its_cap_records_rt021_whatever_on_max_iterations_says() {
    // DIGEST §1.8: "RT021 is recorded when the cap is hit".
    for on_max in ["fail", "succeed"] {
        let store = Store::open_in_memory().unwrap();
        let (report, record) = run(&loop_doc("false", "fail", on_max), &store).await;
        let codes: Vec<String> = diagnostics(&record).into_iter().map(|(c, _)| c).collect();
        assert!(codes.contains(&"RT021".to_string()), "{on_max}: {record:#}");
        let node = if on_max == "fail" {
            "failed"
        } else {
            "succeeded"
        };
        assert_eq!(state(&report, "a"), node, "{on_max}: {report:#?}");
    }
}

#[tokio::test]
async fn an_escalation_to_a_node_is_refused_before_anything_runs() {
    // DIGEST §1.16 (`escalation.to: node`) and §3 (refuse what the harness lacks, never
    // fail midway): nothing is logged, no node runs.
    let mut a = echo(json!({}));
    a["failure"] = json!({"on_exhausted": "escalate",
                          "escalation": {"to": "node", "node": "fixer"}});
    let doc = doc(
        json!({"a": a, "fixer": echo(json!({}))}),
        json!({"entrypoints": ["a", "fixer"]}),
    );
    assert_accepted(&doc);
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..RunOptions::default()
    };
    let refused = run_document(&doc, &store, &options).await.unwrap_err();
    let text = refused.to_string();
    assert!(text.contains("failure.escalation.to `node`"), "{text}");
    // Declared but never reached (no `escalate` rung): the run goes ahead.
    let mut calm = doc.clone();
    calm["nodes"]["a"]["failure"]["on_exhausted"] = json!("fail");
    let (report, _) = run(&calm, &store).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
}

/// `levels` loops nested inline, the innermost body one echo node.
fn nested_loops(levels: usize, max_depth: Option<u64>) -> Value {
    let mut body = json!({"entrypoints": ["step"], "nodes": {"step": echo(json!({}))}});
    for _ in 0..levels {
        body = json!({"entrypoints": ["l"], "nodes": {"l": {
            "type": "loop", "description": "nest",
            "loop": {"mode": "repeat", "max_iterations": 1, "body": body}}}});
    }
    let mut extra = json!({});
    if let Some(m) = max_depth {
        extra["constraints"] = json!({"max_subgraph_depth": m});
    }
    doc(body["nodes"].clone(), extra)
        .as_object()
        .cloned()
        .map(|mut d| {
            d.insert("entrypoints".into(), json!(["l"]));
            Value::Object(d)
        })
        .unwrap()
}

#[tokio::test]
async fn max_subgraph_depth_caps_inline_loop_nesting_before_anything_runs() {
    // DIGEST §1.5: "Nesting depth of subgraph, loop and map scopes", inline bodies included.
    let store = Store::open_in_memory().unwrap();
    let (report, _) = run(&nested_loops(2, Some(2)), &store).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..RunOptions::default()
    };
    let refused = run_document(&nested_loops(3, Some(2)), &store, &options)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("`l > l > l` nests subgraph, loop and map scopes 3 deep"),
        "{refused}"
    );
    // The default is 5.
    assert!(
        run_document(&nested_loops(6, None), &store, &options)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_run_past_its_deadline_stops_with_rt061() {
    // DIGEST §1.5: `deadline` is a global limit; exceeding one records RT061.
    let mut b = echo(json!({}));
    b["depends_on"] = json!(["a"]);
    let doc = doc(
        json!({"a": echo(json!({})), "b": b}),
        json!({"constraints": {"deadline": "2020-01-01T00:00:00Z"}}),
    );
    let store = Store::open_in_memory().unwrap();
    let (report, record) = run(&doc, &store).await;
    assert_ne!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert!(
        report
            .reasons
            .iter()
            .any(|r| r.starts_with("RT061: deadline 2020-01-01T00:00:00.000Z passed")),
        "{:?}",
        report.reasons
    );
    assert!(diagnostics(&record).iter().any(|(c, _)| c == "RT061"));
    assert_ne!(state(&report, "a"), "succeeded");
    // A deadline far ahead changes nothing.
    let mut later = doc.clone();
    later["constraints"]["deadline"] = json!("2999-01-01T00:00:00Z");
    let (report, _) = run(&later, &store).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
}

#[tokio::test]
async fn a_gate_waiting_on_a_person_holds_no_slot() {
    // Issue 13 (DIGEST §1.5 `max_parallel_nodes`, default 1): a person's wait does not
    // stop independent work; the run suspends only when nothing else can run.
    let doc = doc(
        json!({
            "a": {"type": "gate", "description": "a person decides",
                  "gate": {"mode": "approve", "prompt": "Ship it?"}},
            "x": echo(json!({})),
            "y": {"type": "task", "description": "after x", "depends_on": ["x"],
                  "x-weft-exec": {"run": py("dict()")}}
        }),
        json!({"entrypoints": ["a", "x"]}),
    );
    let store = Store::open_in_memory().unwrap();
    let (report, _) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    assert_eq!(state(&report, "a"), "awaiting_human");
    assert_eq!(state(&report, "x"), "succeeded");
    assert_eq!(state(&report, "y"), "succeeded");
}

#[tokio::test]
async fn self_attempt_counts_the_attempts_of_a_retried_node() {
    // DIGEST §2.5: `self.attempt` is 1-based, the attempt being evaluated.
    let mut a = echo(json!({}));
    a["success"] = json!({"criteria": [{"id": "second", "kind": "expression",
        "description": "only the second attempt passes", "expr": "self.attempt >= 2"}]});
    a["failure"] = json!({"retry": {"max_attempts": 3, "backoff": "none"}});
    let doc = doc(json!({"a": a}), json!({}));
    assert_accepted(&doc);
    let store = Store::open_in_memory().unwrap();
    let (report, _) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(report.nodes[0].attempts, 2, "{report:#?}");
}

/// The RT062 warnings of the record that name `node`.
fn rt062_warnings_of(record: &Value, node: &str) -> usize {
    record["diagnostics"].as_array().map_or(0, |d| {
        d.iter()
            .filter(|d| d["code"] == "RT062" && d["severity"] == "warning" && d["node_id"] == node)
            .count()
    })
}

#[tokio::test]
async fn under_false_inputs_resolved_after_a_checkpoint_and_a_resume_yield_false_with_rt062() {
    // DIGEST §2.6: an input behind a `before_start` checkpoint is resolved when the
    // checkpoint lets the attempt run (after a resume here); its evaluation error under
    // `false` is the same RT062 warning as anywhere else, not a silent `false`.
    let mut doc = erring("input", "false");
    doc["nodes"]["a"]["human"] = json!([{"id": "go", "at": "before_start", "mode": "approve",
        "prompt": "run a?"}]);
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..RunOptions::default()
    };
    let store = Store::open_in_memory().unwrap();
    let waiting = run_document(&doc, &store, &options).await.unwrap();
    assert_eq!(waiting.status, FinalStatus::AwaitingHuman, "{waiting:#?}");
    decide(
        &store,
        &waiting.run_id,
        &request("a", Verb::Approve, json!({})),
    )
    .unwrap();
    let done = resume_with(&store, &waiting.run_id, options).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    let record = record_of(&store, &done.run_id).unwrap();
    assert_valid(&record);
    assert_eq!(
        record_node(&record, "a")["outputs"]["got"],
        json!({"w": false})
    );
    assert_eq!(rt062_warnings_of(&record, "a"), 1, "{record:#}");
}

#[tokio::test]
async fn under_false_a_compensation_input_yields_false_with_rt062() {
    // DIGEST §2.6 on the compensation path: `b` fails, `a`'s compensation `undo` runs with
    // an input that fails to evaluate; under `false` it runs with `false` and says so.
    let mut a = echo(json!({}));
    a["failure"] = json!({"compensation": "undo"});
    let b = json!({"description": "fails", "depends_on": ["a"], "x-weft-exec": {"run": "exit 3"}});
    let undo = echo(json!({"w": {"type": "boolean", "from": "int(params.word) > 1"}}));
    let doc = doc(
        json!({"a": a, "b": b, "undo": undo}),
        json!({
            "params": {"word": {"type": "string", "required": false, "default": "abc"}},
            "policy": {"on_expression_error": "false", "on_node_failure": "halt"},
        }),
    );
    let store = Store::open_in_memory().unwrap();
    let (report, record) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::Failed, "{report:#?}");
    assert_eq!(
        record_node(&record, "undo")["status"],
        "succeeded",
        "{record:#}"
    );
    assert_eq!(rt062_warnings_of(&record, "undo"), 1, "{record:#}");
}

#[tokio::test]
async fn under_false_a_light_map_item_input_yields_false_with_rt062() {
    // DIGEST §2.6 on a map's light path (a body of one expression decision): the item's
    // input error is recorded, not dropped by the fast path.
    let body = json!({"entrypoints": ["pick"], "nodes": {"pick": {
        "type": "decision", "description": "pick",
        "inputs": {"w": {"type": "boolean", "from": "int(params.word) > 1"}},
        "decision": {"evaluator": "expression", "branches": [
            {"label": "no", "description": "w is false", "when": "inputs.w == false"},
            {"label": "yes", "description": "w is true", "when": "inputs.w == true"}
        ]}
    }}});
    let doc = doc(
        json!({"a": {"type": "map", "description": "each", "map": {
            "over": "[1, 2]", "as": "x", "max_items": 10,
            "collect": {"picks": "nodes.pick.outputs.decision"},
            "body": body,
        }, "outputs": {"picks": {"type": "array"}}}}),
        json!({
            "params": {"word": {"type": "string", "required": false, "default": "abc"}},
            "policy": {"on_expression_error": "false"},
        }),
    );
    let store = Store::open_in_memory().unwrap();
    let (report, record) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(
        record_node(&record, "a")["outputs"]["picks"],
        json!(["no", "no"]),
        "{record:#}"
    );
    let warned = record["diagnostics"].as_array().map_or(0, |d| {
        d.iter()
            .filter(|d| d["code"] == "RT062" && d["severity"] == "warning")
            .count()
    });
    assert!(warned >= 1, "{record:#}");
}
