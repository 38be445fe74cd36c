//! Level 3 (loops, maps, subgraphs, `llm_judge`, `external`, compensation, run records,
//! checkpointing and resumption, extension negotiation), through the real `weft` binary on
//! real SQLite stores and real processes. Each check returns `Err(why)`; the tokens:
//!
//! - `level-3-loop-map-subgraph`: a `loop` (`until`, `carry`, `collect`, `loop.iteration`),
//!   a `map` (`max_parallel`, `collect` in input order with `null` for a failed item under
//!   `on_item_failure: continue`) and `subgraph`s by `use`, `inline` and local `ref` pinned by
//!   `integrity` and `expected_id` in one run; RT021 (`max_iterations` without the
//!   condition), RT026 (over `max_items`), RT051 (a wrong `integrity` refuses the run before
//!   anything is created); an `llm_judge` criterion (median of three samples, the judge
//!   routed at `judge_intelligence`), an `external` criterion with no registered checker
//!   failing closed, `failure.compensation` undoing a failed run, a run suspended on a
//!   person after its loop and resumed without the loop running again, and the record's
//!   `harness.supported_features` naming the `x-` keys weft understands.
//! - `run-record-schema`: the record of every run above (succeeded, failed, partial,
//!   refused-before-creation excepted), and each subgraph child's own record, validates
//!   against `agentic-graph-run-1.0.schema.json` (checked inside [`record`]), and a child's
//!   record names its parent.
//!
//! The shipped level-3 examples run end to end in `tests/shipped_examples/` (they need the
//! real `pytest` and `mkdocs`).

use serde_json::{Value, json};

use super::execution::{Check, node, project, record, run_id, run_json, weft};

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// An `exec` node: `python3` reads the inputs (JSON on stdin) as `i` and prints `expr`.
fn py(expr: &str, inputs: Value, outputs: Value) -> Value {
    json!({"title": "t", "description": "d", "inputs": inputs, "outputs": outputs,
           "x-weft-exec": {"run": format!(
               "python3 -c 'import json,sys; i=json.load(sys.stdin); print(json.dumps({expr}))'")}})
}

fn int(description: &str) -> Value {
    json!({"type": "integer", "description": description})
}

fn graph(id: &str, nodes: Value, entrypoints: &[&str]) -> Value {
    json!({"ags_version": "1.0", "kind": "AgenticGraph", "id": id, "version": "1.0.0",
           "title": "t", "objective": "o", "description": "d", "requires_conformance": 3,
           "entrypoints": entrypoints, "nodes": nodes})
}

/// The child a `ref` points at: doubles `n`.
fn child() -> Value {
    let mut g = graph(
        "conformance/child",
        json!({"d": py("dict(d=2*i[\"n\"])",
            json!({"n": {"type": "integer", "description": "n", "from": "params.n"}}),
            json!({"d": int("d")}))}),
        &["d"],
    );
    g["requires_conformance"] = json!(1);
    g["params"] = json!({"n": {"type": "integer", "description": "n", "required": true}});
    g["outputs"] =
        json!({"d": {"type": "integer", "description": "d", "from": "nodes.d.outputs.d"}});
    g
}

/// A loop, a map and three subgraphs in one run.
fn composed(integrity: &str) -> Value {
    let step = py(
        "dict(n=i[\"start\"]+1, it=i[\"it\"])",
        json!({"start": {"type": "integer", "description": "s", "from": "params.start"},
               "it": {"type": "integer", "description": "it", "from": "loop.iteration"}}),
        json!({"n": int("n"), "it": int("it")}),
    );
    let square = py(
        "dict(sq=i[\"x\"]*i[\"x\"]) if i[\"x\"] != 2 else sys.exit(1)",
        json!({"x": {"type": "integer", "description": "x", "from": "x"}}),
        json!({"sq": int("sq")}),
    );
    let double = json!({"params": {"n": {"type": "integer", "description": "n"}},
        "entrypoints": ["d"],
        "nodes": {"d": py("dict(d=2*i[\"n\"])",
            json!({"n": {"type": "integer", "description": "n", "from": "params.n"}}),
            json!({"d": int("d")}))},
        "outputs": {"d": {"type": "integer", "description": "d", "from": "nodes.d.outputs.d"}}});
    let mut g = graph(
        "conformance/level3",
        json!({
            "count": {"type": "loop", "title": "t", "description": "d", "loop": {
                "mode": "until", "condition": "nodes.step.outputs.n >= 3", "max_iterations": 5,
                "carry": {"n": "start"},
                "collect": {"n": "nodes.step.outputs.n", "it": "nodes.step.outputs.it"},
                "body": {"params": {"start": {"type": "integer", "description": "s",
                            "required": false, "default": 0}},
                         "entrypoints": ["step"], "nodes": {"step": step}}},
                "outputs": {"n": int("n"), "it": int("it")}},
            "fan": {"type": "map", "title": "t", "description": "d", "depends_on": ["count"],
                "map": {"over": "params.xs", "as": "x", "max_items": 10, "max_parallel": 2,
                    "on_item_failure": "continue", "collect": {"sq": "nodes.sq.outputs.sq"},
                    "body": {"entrypoints": ["sq"], "nodes": {"sq": square}}}},
            "by_use": {"type": "subgraph", "title": "t", "description": "d",
                "depends_on": ["count"],
                "subgraph": {"use": "double", "params": {"n": "nodes.count.outputs.n"}},
                "outputs": {"d": int("d")}},
            "by_inline": {"type": "subgraph", "title": "t", "description": "d",
                "depends_on": ["by_use"],
                "subgraph": {"inline": double, "params": {"n": "nodes.by_use.outputs.d"}},
                "outputs": {"d": int("d")}},
            "by_ref": {"type": "subgraph", "title": "t", "description": "d",
                "depends_on": ["by_inline"],
                "subgraph": {"ref": {"uri": "./child.agraph.json", "integrity": integrity,
                                     "expected_id": "conformance/child"},
                             "params": {"n": "nodes.by_inline.outputs.d"}},
                "outputs": {"d": int("d")}},
        }),
        &["count"],
    );
    g["params"] = json!({"xs": {"type": "array", "description": "xs", "required": false,
                                "default": [1, 2, 3]}});
    g["subgraphs"] = json!({"double": double});
    g["outputs"] = json!({
        "n": {"type": "integer", "description": "n", "from": "nodes.count.outputs.n"},
        "sq": {"type": "array", "description": "sq", "from": "nodes.fan.outputs.sq"},
        "d": {"type": "integer", "description": "d", "from": "nodes.by_ref.outputs.d"}});
    g
}

fn digest(dir: &std::path::Path, file: &str) -> Result<String, String> {
    let out = weft(dir, &["digest", file])?;
    ensure!(out.code == 0, "weft digest {file}: {}", out.stderr);
    Ok(out.stdout.trim().to_string())
}

/// The loop, the map and the three subgraphs, and the records of the run and its children.
fn loop_map_subgraph(records: &mut Vec<String>) -> Check {
    let child = child().to_string();
    let dir = project(&[("child.agraph.json", &child)])?;
    let d = dir.path();
    let integrity = digest(d, "child.agraph.json")?;
    std::fs::write(d.join("g.json"), composed(&integrity).to_string())
        .map_err(|e| e.to_string())?;
    let report = run_json(d, &["run", "g.json"], 0)?;
    ensure!(report["status"] == "succeeded", "{report}");
    let run = run_id(&report)?;
    let rec = record(d, &run)?;
    records.push(run.clone());
    ensure!(
        rec["outputs"] == json!({"n": 3, "sq": [1, null, 9], "d": 24}),
        "outputs: {}",
        rec["outputs"]
    );
    let count = node(&rec, "count")?;
    ensure!(count["iterations"] == 3, "loop: {count}");
    ensure!(count["outputs"]["it"] == 3, "loop.iteration: {count}");
    let fan = node(&rec, "fan")?;
    ensure!(
        fan["items"] == 3 && fan["status"] == "succeeded",
        "map: {fan}"
    );
    let scoped = |address: &str| {
        rec["nodes"]
            .as_array()
            .and_then(|n| n.iter().find(|n| n["scope_path"] == address))
            .cloned()
            .unwrap_or(Value::Null)
    };
    ensure!(
        scoped("fan[1].sq")["status"] == "failed",
        "item 1: {}",
        scoped("fan[1].sq")
    );
    ensure!(
        scoped("count[2].step")["inputs"]["start"] == 2,
        "carry: {}",
        scoped("count[2].step")
    );
    for sub in ["by_use", "by_inline", "by_ref"] {
        let n = node(&rec, sub)?;
        let child_id = n["child_run_id"]
            .as_str()
            .ok_or_else(|| format!("{sub}: no child_run_id: {n}"))?;
        let child = record(d, child_id)?;
        records.push(child_id.to_string());
        ensure!(child["parent_run_id"] == run.as_str(), "{sub}: {child}");
        ensure!(child["status"] == "succeeded", "{sub}: {child}");
    }
    let features = &rec["harness"]["supported_features"];
    for f in [
        "loop",
        "map",
        "subgraph-ref",
        "x-weft-exec",
        "x-weft-forbid-timeout-approve",
    ] {
        ensure!(
            features
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x == f)),
            "supported_features lacks {f}: {features}"
        );
    }
    ensure!(
        rec["harness"]["conformance_level"] == 3,
        "{}",
        rec["harness"]
    );
    // A wrong pin refuses the run before anything is created.
    let wrong = composed("sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    std::fs::write(d.join("wrong.json"), wrong.to_string()).map_err(|e| e.to_string())?;
    let refused = run_json(d, &["run", "wrong.json"], 1)?;
    ensure!(
        refused["status"] == "refused"
            && refused["error"]
                .as_str()
                .is_some_and(|e| e.contains("RT051")),
        "{refused}"
    );
    Ok(())
}

/// RT021 and RT026: the bounds fail the node, they do not truncate or loop on.
fn bounds(records: &mut Vec<String>) -> Check {
    let dir = project(&[])?;
    let d = dir.path();
    let mut g = composed("unused");
    let nodes = g["nodes"].as_object_mut().ok_or("nodes")?;
    nodes.retain(|k, _| k == "count" || k == "fan");
    nodes["count"]["loop"]["condition"] = json!("nodes.step.outputs.n >= 99");
    nodes["fan"]["map"]["max_items"] = json!(2);
    nodes["fan"]["depends_on"] = json!([]);
    g["entrypoints"] = json!(["count", "fan"]);
    g["outputs"] = json!({});
    std::fs::write(d.join("g.json"), g.to_string()).map_err(|e| e.to_string())?;
    let out = weft(d, &["run", "g.json", "--json"])?;
    let report = out.json()?;
    let run = run_id(&report)?;
    let rec = record(d, &run)?;
    records.push(run);
    let count = node(&rec, "count")?;
    ensure!(
        count["status"] == "failed" && count["iterations"] == 5,
        "loop: {count}"
    );
    ensure!(count.to_string().contains("RT021"), "loop: {count}");
    let fan = node(&rec, "fan")?;
    ensure!(fan["status"] == "failed", "map: {fan}");
    ensure!(fan.to_string().contains("RT026"), "map: {fan}");
    ensure!(report["status"] != "succeeded", "{report}");
    Ok(())
}

/// `llm_judge` (three samples, median), `external` failing closed, compensation.
fn criteria_and_compensation(records: &mut Vec<String>) -> Check {
    let mut judged = py("dict()", json!({}), json!({}));
    judged.as_object_mut().ok_or("node")?.remove("x-weft-exec");
    judged["outputs"] = json!({"text": {"type": "text", "description": "t"}});
    judged["success"] = json!({"criteria": [{"id": "good", "kind": "llm_judge",
        "description": "good", "rubric": "Is it good?", "threshold": 0.7, "samples": 3,
        "judge_intelligence": {"tier": "advanced"}}]});
    judged["intelligence"] = json!({"tier": "standard"});
    let mut checked = py("dict()", json!({}), json!({}));
    checked["depends_on"] = json!(["judged"]);
    checked["success"] = json!({"criteria": [{"id": "ext", "kind": "external",
        "description": "e", "check": "no-such-checker"}]});
    checked["failure"] = json!({"compensation": "undo_judged"});
    let mut undo = py("dict()", json!({}), json!({}));
    undo["x-weft-exec"] = json!({"run": "touch undone"});
    let mut judged_node = judged.clone();
    judged_node["failure"] = json!({"compensation": "undo_judged"});
    let mut g = graph(
        "conformance/criteria",
        json!({"judged": judged_node, "checked": checked, "undo_judged": undo}),
        &["judged"],
    );
    g["policy"] = json!({"on_node_failure": "halt"});
    let turn = |args: Value| json!({"turns": [{"tool_calls": [{"name": "emit_output", "arguments": args}]}]});
    let cassette = json!({"format": "weft-cassette/1",
        "models": [{"tier": "standard", "model": "producer"}, {"tier": "advanced", "model": "judge"}],
        "nodes": {
            "judged": {"attempts": [turn(json!({"text": "fine"}))]},
            "judged/judge/good": {"attempts": [
                turn(json!({"score": 0.9, "reasoning": "r"})),
                turn(json!({"score": 0.2, "reasoning": "r"})),
                turn(json!({"score": 0.8, "reasoning": "r"}))]}}});
    let dir = project(&[
        ("g.json", &g.to_string()),
        ("c.json", &cassette.to_string()),
    ])?;
    let d = dir.path();
    let out = weft(d, &["run", "g.json", "--cassette", "c.json", "--json"])?;
    let report = out.json()?;
    ensure!(report["status"] == "failed", "{report}");
    let run = run_id(&report)?;
    let rec = record(d, &run)?;
    records.push(run.clone());
    let judged = node(&rec, "judged")?;
    ensure!(judged["status"] == "succeeded", "judge: {judged}");
    let result = &judged["attempts"][0]["success"]["results"][0];
    ensure!(result["passed"] == true, "judge: {result}");
    // The judge was routed at its own tier: the log names its model, not the producer's.
    let events = weft(d, &["events", &run])?;
    let verdict = events
        .stdout
        .lines()
        .find(|l| l.contains("\"node_finished\"") && l.contains("\"judged\""))
        .unwrap_or_default();
    ensure!(
        verdict.contains("judged_by") && verdict.contains("cassette/judge"),
        "the judge's model is not named: {verdict}"
    );
    let checked = node(&rec, "checked")?;
    ensure!(checked["status"] == "failed", "external: {checked}");
    ensure!(d.join("undone").is_file(), "the compensation did not run");
    ensure!(
        rec["x-weft-compensations"]
            .as_array()
            .is_some_and(|c| c.len() == 1),
        "compensations: {}",
        rec["x-weft-compensations"]
    );
    Ok(())
}

/// A run suspended on a person after its loop, resumed: the loop is not run again.
fn resume_after_loop(records: &mut Vec<String>) -> Check {
    let dir = project(&[])?;
    let d = dir.path();
    let mut g = composed("unused");
    let nodes = g["nodes"].as_object_mut().ok_or("nodes")?;
    nodes.retain(|k, _| k == "count");
    nodes.insert(
        "approve".into(),
        json!({"type": "gate", "title": "t", "description": "d", "depends_on": ["count"],
               "gate": {"mode": "approve", "prompt": "n is ${{ nodes.count.outputs.n }}"}}),
    );
    g["outputs"] =
        json!({"n": {"type": "integer", "description": "n", "from": "nodes.count.outputs.n"}});
    std::fs::write(d.join("g.json"), g.to_string()).map_err(|e| e.to_string())?;
    let waiting = run_json(d, &["run", "g.json"], 3)?;
    let run = run_id(&waiting)?;
    let approve = weft(d, &["approve", &run, "approve", "--as", "carol"])?;
    ensure!(approve.code == 0, "approve: {}", approve.stderr);
    let done = run_json(d, &["resume", &run], 0)?;
    ensure!(done["status"] == "succeeded", "{done}");
    let events = weft(d, &["events", &run])?;
    let starts = events
        .stdout
        .lines()
        .filter(|l| l.contains("\"node_started\"") && l.contains("\"step\""))
        .count();
    ensure!(
        starts == 3,
        "the loop's steps started {starts} times, not 3"
    );
    let rec = record(d, &run)?;
    records.push(run);
    ensure!(rec["outputs"]["n"] == 3, "{}", rec["outputs"]);
    Ok(())
}

/// Named checks, as a token takes them.
type Checks = Vec<(&'static str, Check)>;

/// The checks behind `level-3-loop-map-subgraph` and `run-record-schema`.
pub(super) fn level3() -> (Checks, Checks) {
    let mut records = Vec::new();
    let features = vec![
        (
            "loop, map, use, inline, ref with integrity",
            loop_map_subgraph(&mut records),
        ),
        ("RT021 and RT026", bounds(&mut records)),
        (
            "llm_judge, external, compensation",
            criteria_and_compensation(&mut records),
        ),
        ("resume after a loop", resume_after_loop(&mut records)),
    ];
    // `record` validated each of them against the schema; every run of every check above
    // produced its record, children included.
    let schema = vec![(
        "every run record and child record validates",
        if records.len() >= 7 {
            Ok(())
        } else {
            Err(format!(
                "only {} records were produced and validated",
                records.len()
            ))
        },
    )];
    (features, schema)
}
