//! Whole blocks: parsing into typed structs, `mode` with required/advisory mixes, the
//! `human`, `external` and `llm_judge` kinds, `cheapest_first` short-circuiting, feedback
//! text and the serialized verdict.

mod common;

use common::Fixture;
use serde_json::{Value, json};
use weft_criteria::{
    BlockError, CriteriaEnv, HumanAnswer, HumanPort, HumanRequest, Kind, Outcome, Severity,
    SuccessBlock, evaluate, feedback,
};

fn expr(id: &str, value: bool, severity: &str) -> Value {
    json!({"id": id, "kind": "expression", "expr": value.to_string(),
           "description": format!("{id} holds"), "severity": severity})
}

fn outcomes(v: &weft_criteria::Verdict) -> Vec<Outcome> {
    v.results.iter().map(|r| r.outcome).collect()
}

#[test]
fn parsing_defaults_and_extensions() {
    let block = SuccessBlock::from_value(&json!({
        "criteria": [{"id": "a", "kind": "command", "run": "true", "description": "d",
                      "x-acme-owner": "qa", "pattern": "irrelevant"}],
        "x-note": 1
    }))
    .unwrap();
    let c = &block.criteria[0];
    assert_eq!(c.severity, Severity::Required);
    assert!(c.record_evidence);
    assert_eq!(c.kind, Kind::Command);
    assert_eq!(block.mode, weft_criteria::Mode::All);
    assert_eq!(
        block.evaluation_order,
        weft_criteria::EvaluationOrder::Declared
    );
}

#[test]
fn odd_blocks_are_typed_errors() {
    let d = "description";
    let cases = [
        (json!({"criteria": []}), "at least one criterion"),
        (json!({"criteria": "x"}), "malformed"),
        (json!(null), "malformed"),
        (
            json!({"criteria": [{"id": "a", "kind": "teleport", d: "x"}]}),
            "malformed",
        ),
        (
            json!({"criteria": [{"id": "a", "kind": "command", d: "x"}]}),
            "needs 'run'",
        ),
        (
            json!({"criteria": [{"id": "a", "kind": "json_schema", "output": "o", d: "x"}]}),
            "schema|schema_ref",
        ),
        (
            json!({"criteria": [{"id": "a", "kind": "regex", "pattern": "p", d: "x"}]}),
            "output|target",
        ),
        (
            json!({"mode": "n_of", "criteria": [expr("a", true, "required")]}),
            "count",
        ),
        (
            json!({"criteria": [expr("a", true, "required"), expr("a", true, "required")]}),
            "duplicate",
        ),
        (
            json!({"criteria": [{"id": "a", "kind": "regex", "pattern": "p", "output": "o",
                              "flags": "g", d: "x"}]}),
            "flag",
        ),
        (
            json!({"criteria": [{"id": "a", "kind": "command", "run": "true",
                              "timeout_seconds": 0, d: "x"}]}),
            "timeout",
        ),
    ];
    for (value, needle) in cases {
        let err: BlockError = SuccessBlock::from_value(&value).unwrap_err();
        assert!(err.to_string().contains(needle), "{value}: {err}");
    }
}

#[test]
fn mode_all_gates_on_required_only() {
    let f = Fixture::new();
    let v =
        f.eval(json!({"criteria": [expr("a", true, "required"), expr("b", false, "advisory")]}));
    assert!(v.passed);
    assert_eq!(outcomes(&v), [Outcome::Passed, Outcome::Failed]);
    let v =
        f.eval(json!({"criteria": [expr("a", false, "required"), expr("b", true, "advisory")]}));
    assert!(!v.passed);
    // Only advisory criteria: nothing gates, the block passes.
    let v = f.eval(json!({"criteria": [expr("a", false, "advisory")]}));
    assert!(v.passed);
}

#[test]
fn mode_any_and_n_of() {
    let f = Fixture::new();
    let v = f.eval(json!({"mode": "any", "criteria": [
        expr("a", false, "required"), expr("b", true, "required")]}));
    assert!(v.passed);
    // An advisory pass does not count toward `any`.
    let v = f.eval(json!({"mode": "any", "criteria": [
        expr("a", false, "required"), expr("b", true, "advisory")]}));
    assert!(!v.passed);
    let three = |x, y, z| {
        json!({"mode": "n_of", "count": 2, "criteria": [
        expr("a", x, "required"), expr("b", y, "required"), expr("c", z, "required"),
        expr("d", true, "advisory")]})
    };
    assert!(f.eval(three(true, false, true)).passed);
    assert!(!f.eval(three(true, false, false)).passed);
    // A count above the number of required criteria can never be met.
    let v = f.eval(json!({"mode": "n_of", "count": 3, "criteria": [
        expr("a", true, "required"), expr("b", true, "required"), expr("c", true, "advisory")]}));
    assert!(!v.passed);
}

#[test]
fn judge_errors_gate_like_failures() {
    let f = Fixture::new();
    // No scripted answer: the judge errs, the required criterion fails closed.
    let v = f.eval(json!({"criteria": [
        {"id": "j", "kind": "llm_judge", "rubric": "good?", "description": "judged good"}]}));
    assert!(!v.passed);
    assert_eq!(outcomes(&v), [Outcome::Error]);
    let v = f.eval(json!({"criteria": [expr("a", true, "required"),
        {"id": "j", "kind": "llm_judge", "rubric": "good?", "description": "d",
         "severity": "advisory"}]}));
    assert!(v.passed, "an advisory llm_judge does not block");
    // The engine's stand-in where no model exists fails closed too.
    let env = CriteriaEnv {
        judge: &weft_criteria::NoJudge,
        ..f.env()
    };
    let block = SuccessBlock::from_value(&json!({"criteria": [
        {"id": "j", "kind": "llm_judge", "rubric": "good?", "description": "d"}]}))
    .unwrap();
    let v = common::runtime().block_on(evaluate(&block, &env));
    assert_eq!(outcomes(&v), [Outcome::Error]);
}

#[test]
fn llm_judge_takes_the_median_of_its_samples() {
    let mut f = Fixture::new();
    f.outputs = json!({"summary": "short"});
    f.judge = weft_criteria::doubles::MapJudge::default()
        .with("pass", vec![Ok(0.9), Ok(0.7), Ok(0.85)])
        .with("fail", vec![Ok(0.9), Ok(0.5), Ok(0.6)])
        .with("even", vec![Ok(0.7), Ok(0.9)]);
    let judge = |id: &str, extra: Value| {
        let mut c = json!({"id": id, "kind": "llm_judge", "description": format!("{id} judged"),
            "rubric": "Is ${{ params.name }} summarised in ${{ params.n }} words?",
            "inputs": ["params.name", "params.n + 1"], "samples": 3});
        c.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        c
    };
    let v = f.eval(json!({"criteria": [judge("pass", json!({}))]}));
    assert!(v.passed);
    let e = &v.results[0].evidence;
    assert_eq!(e.scores, [0.9, 0.7, 0.85]);
    assert_eq!(e.judged_by.len(), 3);
    assert_eq!(
        e.detail.as_deref(),
        Some("scripted sample 3"),
        "the median sample explains"
    );
    assert!(e.summary.contains("median score 0.85"), "{}", e.summary);
    // The judge saw the rendered rubric, the evaluated inputs and the outputs, per sample.
    let seen = f.judge.requests();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].rubric, "Is weft summarised in 3 words?");
    assert_eq!(seen[0].inputs, [json!("weft"), json!(4)]);
    assert_eq!(seen[0].outputs, json!({"summary": "short"}));
    assert_eq!(
        seen.iter()
            .map(|r| (r.sample, r.samples))
            .collect::<Vec<_>>(),
        [(1, 3), (2, 3), (3, 3)]
    );
    // Median 0.6 < 0.8: failed, with every score as evidence; a lower threshold passes it.
    let v = f.eval(json!({"criteria": [judge("fail", json!({}))]}));
    assert_eq!(outcomes(&v), [Outcome::Failed]);
    assert_eq!(v.results[0].evidence.scores, [0.9, 0.5, 0.6]);
    let v = f.eval(json!({"criteria": [judge("fail", json!({"threshold": 0.6}))]}));
    assert!(v.passed);
    // An even count takes the mean of the two middle scores: 0.8 reaches 0.8.
    let v = f.eval(json!({"criteria": [judge("even", json!({"samples": 2}))]}));
    assert!(v.passed, "{:?}", v.results[0].evidence);
}

#[test]
fn llm_judge_failures_are_errors_with_evidence() {
    let mut f = Fixture::new();
    f.judge = weft_criteria::doubles::MapJudge::default()
        .with("range", vec![Ok(0.9), Ok(1.5)])
        .with("fails", vec![Ok(0.9), Err("provider said 529".into())]);
    let c = |id: &str| {
        json!({"id": id, "kind": "llm_judge", "rubric": "ok?",
        "description": "d", "samples": 3})
    };
    let v = f.eval(json!({"criteria": [c("range")]}));
    assert_eq!(outcomes(&v), [Outcome::Error]);
    assert!(v.results[0].evidence.summary.contains("outside 0–1"));
    assert_eq!(v.results[0].evidence.scores, [0.9]);
    let v = f.eval(json!({"criteria": [c("fails")]}));
    assert_eq!(outcomes(&v), [Outcome::Error]);
    assert!(v.results[0].evidence.summary.contains("provider said 529"));
    // A rubric or an input that does not evaluate never reaches the judge.
    let v = f.eval(
        json!({"criteria": [{"id": "x", "kind": "llm_judge", "description": "d",
        "rubric": "ok?", "inputs": ["params.n +"]}]}),
    );
    assert_eq!(outcomes(&v), [Outcome::Error]);
    assert!(v.results[0].evidence.expression_error.is_some());
    // Samples and threshold out of range refuse the block before anything runs.
    for bad in [
        json!({"samples": 10}),
        json!({"samples": 0}),
        json!({"threshold": 1.5}),
    ] {
        let mut crit = json!({"id": "b", "kind": "llm_judge", "rubric": "ok?", "description": "d"});
        crit.as_object_mut()
            .unwrap()
            .extend(bad.as_object().unwrap().clone());
        let err = SuccessBlock::from_value(&json!({"criteria": [crit]})).unwrap_err();
        assert!(matches!(err, BlockError::Invalid { .. }), "{bad}: {err}");
    }
}

#[test]
fn external_checkers_fail_closed() {
    let mut f = Fixture::new();
    f.checkers = f
        .checkers
        .clone()
        .with("lint", true, "0 warnings")
        .with("sec", false, "CVE-1");
    let check = |name: &str| {
        json!({"criteria": [
        {"id": "x", "kind": "external", "check": name, "description": "d", "params": {"k": 1}}]})
    };
    let v = f.eval(check("lint"));
    assert!(v.passed);
    assert_eq!(v.results[0].evidence.detail.as_deref(), Some("0 warnings"));
    let v = f.eval(check("sec"));
    assert!(!v.passed);
    assert_eq!(v.results[0].outcome, Outcome::Failed);
    let v = f.eval(check("unknown"));
    assert!(!v.passed);
    assert_eq!(v.results[0].outcome, Outcome::Error);
    assert!(v.results[0].evidence.summary.contains("fails closed"));
}

/// A port that records the rendered requests and answers approved.
#[derive(Default)]
struct Recording(std::sync::Mutex<Vec<HumanRequest>>);

impl HumanPort for Recording {
    fn ask(&self, request: &HumanRequest) -> HumanAnswer {
        if let Ok(mut asked) = self.0.lock() {
            asked.push(request.clone());
        }
        HumanAnswer::Approved {
            reviewer: Some("ana".into()),
            comment: None,
        }
    }
}

#[test]
fn human_prompts_are_rendered() {
    let f = Fixture::new();
    let port = Recording::default();
    let env = CriteriaEnv {
        human: &port,
        ..f.env()
    };
    let block = SuccessBlock::from_value(&json!({"criteria": [{"id": "h", "kind": "human",
        "prompt": "Ship ${{ params.name }} v${{ params.n }}?", "roles": ["lead"],
        "description": "a lead approves"}]}))
    .unwrap();
    let v = common::runtime().block_on(evaluate(&block, &env));
    assert!(v.passed);
    assert_eq!(v.results[0].evidence.reviewer.as_deref(), Some("ana"));
    let asked = port.0.lock().unwrap();
    assert_eq!(asked[0].prompt, "Ship weft v3?");
    assert_eq!(asked[0].roles, ["lead"]);
    assert_eq!(asked[0].criterion_id, "h");
}

#[test]
fn human_answers_and_pending() {
    let mut f = Fixture::new();
    let human = |id: &str, severity: &str| {
        json!({"id": id, "kind": "human", "prompt": "ok?",
        "description": "approved", "severity": severity})
    };
    f.human = f.human.clone().with(
        "no",
        HumanAnswer::Rejected {
            reviewer: Some("bo".into()),
            comment: Some("missing tests".into()),
        },
    );
    // `pending` is unanswered: the verdict waits.
    let v =
        f.eval(json!({"criteria": [expr("a", true, "required"), human("pending", "required")]}));
    assert!(!v.passed);
    assert!(v.pending_human);
    assert_eq!(outcomes(&v), [Outcome::Passed, Outcome::Pending]);
    // Nothing to wait for when the outcome is already fixed.
    let v =
        f.eval(json!({"criteria": [expr("a", false, "required"), human("pending", "required")]}));
    assert!(!v.passed && !v.pending_human);
    let v = f.eval(
        json!({"mode": "any", "criteria": [expr("a", true, "required"),
        human("pending", "required")]}),
    );
    assert!(v.passed && !v.pending_human);
    // An advisory question never holds the node.
    let v =
        f.eval(json!({"criteria": [expr("a", true, "required"), human("pending", "advisory")]}));
    assert!(v.passed && !v.pending_human);
    let v = f.eval(json!({"criteria": [human("no", "required")]}));
    assert!(!v.passed && !v.pending_human);
    assert_eq!(
        v.results[0].evidence.detail.as_deref(),
        Some("missing tests")
    );
    let v = f.eval(
        json!({"criteria": [{"id": "h", "kind": "human", "prompt": "${{ nope.x }}",
        "description": "d"}]}),
    );
    assert_eq!(v.results[0].outcome, Outcome::Error);
    assert!(v.results[0].evidence.expression_error.is_some());
}

#[test]
fn declared_order_evaluates_everything() {
    let f = Fixture::new();
    let v = f.eval(json!({"criteria": [
        expr("a", false, "required"),
        {"id": "b", "kind": "command", "run": "touch ran", "description": "d"}]}));
    assert!(!v.passed);
    assert_eq!(outcomes(&v), [Outcome::Failed, Outcome::Passed]);
    assert!(f.root().join("ran").exists());
}

#[test]
fn cheapest_first_skips_only_once_fixed() {
    let mut f = Fixture::new();
    f.outputs = json!({"report": ""});
    // Declared order puts the command first; cheapest_first runs artifact_present first,
    // sees the `all` outcome fixed and never starts the command. The advisory regex
    // still runs.
    let v = f.eval(json!({"evaluation_order": "cheapest_first", "criteria": [
        {"id": "cmd", "kind": "command", "run": "touch ran", "description": "d"},
        {"id": "adv", "kind": "regex", "output": "report", "pattern": "x", "description": "d",
         "severity": "advisory"},
        {"id": "art", "kind": "artifact_present", "output": "report", "description": "d"}]}));
    assert!(!v.passed);
    assert_eq!(
        outcomes(&v),
        [Outcome::NotEvaluated, Outcome::Failed, Outcome::Failed]
    );
    assert!(!f.root().join("ran").exists());
    assert_eq!(v.results[0].duration_ms, 0);
    assert!(v.results[0].evidence.summary.contains("not evaluated"));

    // Not fixed yet: everything runs.
    f.outputs = json!({"report": "x"});
    let v = f.eval(json!({"evaluation_order": "cheapest_first", "criteria": [
        {"id": "cmd", "kind": "command", "run": "touch ran", "description": "d"},
        {"id": "art", "kind": "artifact_present", "output": "report", "description": "d"}]}));
    assert!(v.passed);
    assert_eq!(outcomes(&v), [Outcome::Passed, Outcome::Passed]);
    assert!(f.root().join("ran").exists());

    // `any`: the first required pass fixes it.
    let v = f.eval(
        json!({"mode": "any", "evaluation_order": "cheapest_first", "criteria": [
        {"id": "h", "kind": "human", "prompt": "?", "description": "d"},
        expr("e", true, "required")]}),
    );
    assert!(v.passed && !v.pending_human);
    assert_eq!(outcomes(&v), [Outcome::NotEvaluated, Outcome::Passed]);

    // `n_of`: stops when the remaining criteria can no longer reach the count.
    let v = f.eval(
        json!({"mode": "n_of", "count": 2, "evaluation_order": "cheapest_first",
        "criteria": [expr("a", false, "required"), expr("b", false, "required"),
        {"id": "c", "kind": "command", "run": "true", "description": "d"}]}),
    );
    assert!(!v.passed);
    assert_eq!(
        outcomes(&v),
        [Outcome::Failed, Outcome::Failed, Outcome::NotEvaluated]
    );
}

#[test]
fn feedback_lists_failed_required_criteria_with_evidence() {
    let mut f = Fixture::new();
    f.outputs = json!({"doc": {"age": "x"}});
    let block = SuccessBlock::from_value(&json!({"criteria": [
        {"id": "tests", "kind": "command", "description": "All unit tests pass",
         "run": "echo '2 passed, 1 failed'; echo 'assert x == 1' >&2; exit 1"},
        {"id": "shape", "kind": "json_schema", "output": "doc", "description": "doc is a person",
         "schema": {"type": "object", "properties": {"age": {"type": "integer"}}}},
        {"id": "fine", "kind": "expression", "expr": "true", "description": "always fine"},
        {"id": "style", "kind": "expression", "expr": "false", "description": "nice style",
         "severity": "advisory"},
        {"id": "typo", "kind": "expression", "expr": "params.n", "description": "n is a flag"}
    ]}))
    .unwrap();
    let v = f.eval_block(&block);
    let text = feedback(&v, &block);
    assert!(
        text.contains("1. All unit tests pass [tests, command, failed]"),
        "{text}"
    );
    assert!(text.contains("exit code 1, expected 0"), "{text}");
    assert!(text.contains("| 2 passed, 1 failed"), "{text}");
    assert!(text.contains("stderr:\n   | assert x == 1"), "{text}");
    assert!(
        text.contains("2. doc is a person [shape, json_schema, failed]"),
        "{text}"
    );
    assert!(text.contains("at /age:"), "{text}");
    assert!(
        text.contains("3. n is a flag [typo, expression, could not be checked]"),
        "{text}"
    );
    assert!(text.contains("Expression error:"), "{text}");
    assert!(
        !text.contains("always fine") && !text.contains("nice style"),
        "{text}"
    );

    let ok = SuccessBlock::from_value(&json!({"criteria": [expr("a", true, "required")]})).unwrap();
    assert_eq!(feedback(&f.eval_block(&ok), &ok), "");
}

#[test]
fn feedback_cuts_long_streams() {
    let f = Fixture::new();
    let block = SuccessBlock::from_value(&json!({"criteria": [{"id": "c", "kind": "command",
        "run": "head -c 100000 /dev/zero | tr '\\0' b; exit 1", "description": "quiet"}]}))
    .unwrap();
    let text = feedback(&f.eval_block(&block), &block);
    assert!(
        text.contains("stdout (first part of 100000 bytes):"),
        "{}",
        &text[..300]
    );
    assert!(text.len() < 6000);
}

#[test]
fn verdict_serializes_with_a_format_version() {
    let f = Fixture::new();
    let v = f.eval(json!({"evaluation_order": "cheapest_first", "criteria": [
        expr("a", false, "required"),
        {"id": "c", "kind": "command", "run": "true", "description": "d"}]}));
    let value = serde_json::to_value(&v).unwrap();
    assert_eq!(value["format"], 1);
    assert_eq!(value["results"][0]["outcome"], "failed");
    assert_eq!(value["results"][1]["outcome"], "not_evaluated");
    assert_eq!(value["results"][1]["kind"], "command");
    assert_eq!(value["results"][0]["severity"], "required");
    assert!(value["results"][0]["evidence"].get("stdout").is_none());
    let back: weft_criteria::Verdict = serde_json::from_value(value).unwrap();
    assert_eq!(back, v);
}

#[test]
fn the_evaluation_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let f = Fixture::new();
    let block =
        SuccessBlock::from_value(&json!({"criteria": [expr("a", true, "required")]})).unwrap();
    let env = f.env();
    let fut = evaluate(&block, &env);
    assert_send(&fut);
    // And it runs on a multi-threaded runtime.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    assert!(rt.block_on(fut).passed);
}

#[test]
fn hand_built_blocks_without_fields_do_not_panic() {
    let f = Fixture::new();
    let mut block =
        SuccessBlock::from_value(&json!({"criteria": [expr("a", true, "required")]})).unwrap();
    for kind in [
        Kind::Command,
        Kind::FileExists,
        Kind::ArtifactPresent,
        Kind::JsonSchema,
        Kind::Regex,
        Kind::Human,
        Kind::External,
    ] {
        block.criteria[0].kind = kind;
        let v = f.eval_block(&block);
        assert_eq!(v.results[0].outcome, Outcome::Error, "{kind:?}");
    }
    // `n_of` without a count fails closed.
    block.criteria[0].kind = Kind::Expression;
    block.mode = weft_criteria::Mode::NOf;
    assert!(!f.eval_block(&block).passed);
}
