//! Property tests for the short-circuit rule.
//!
//! 1. The sans-IO [`Plan`] driven by a deterministic fake-cost harness (random costs,
//!    severities and outcomes) against a brute-force oracle: a criterion is `not_evaluated`
//!    exactly when the required outcomes seen before it (in cost order) already fix the
//!    block, and both orders give the same `(passed, pending_human)`.
//! 2. The real evaluator over random blocks of real criteria: `cheapest_first` gives the
//!    verdict of `declared`, differing only in `not_evaluated` required criteria.

#![allow(
    clippy::unwrap_used,
    reason = "a panic in a test helper is a test failure with a message"
)]

mod common;

use common::Fixture;
use proptest::prelude::*;
use serde_json::{Value, json};
use weft_criteria::{
    EvaluationOrder, HumanAnswer, Mode, Outcome, Plan, Severity, SuccessBlock, Verdict,
};

/// Every way of filling in the unknowns (pending or not yet seen) gives the same answer?
fn oracle(mode: Mode, count: u64, known: &[Outcome], unseen: usize) -> Option<bool> {
    let passes = known.iter().filter(|o| **o == Outcome::Passed).count();
    let unknown = unseen + known.iter().filter(|o| **o == Outcome::Pending).count();
    let total = known.len() + unseen;
    let gate = |p: usize| match mode {
        _ if total == 0 => true,
        Mode::All => p == total,
        Mode::Any => p >= 1,
        Mode::NOf => p as u64 >= count,
    };
    let answers: Vec<bool> = (0..=unknown).map(|extra| gate(passes + extra)).collect();
    if answers.iter().all(|a| *a == answers[0]) {
        Some(answers[0])
    } else {
        None
    }
}

fn arb_outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        3 => Just(Outcome::Passed),
        3 => Just(Outcome::Failed),
        1 => Just(Outcome::Error),
        1 => Just(Outcome::Pending),
        1 => Just(Outcome::Unsupported),
    ]
}

fn arb_severity() -> impl Strategy<Value = Severity> {
    prop_oneof![3 => Just(Severity::Required), 1 => Just(Severity::Advisory)]
}

fn arb_mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::All), Just(Mode::Any), Just(Mode::NOf)]
}

/// Runs a plan, answering each criterion with its fake outcome; returns the evaluation
/// sequence, the final outcomes and `(passed, pending_human)`.
fn drive(
    mode: Mode,
    count: u64,
    order: EvaluationOrder,
    fake: &[(u8, Severity, Outcome)],
) -> (Vec<usize>, Vec<Outcome>, (bool, bool)) {
    let costs: Vec<(u8, Severity)> = fake.iter().map(|f| (f.0, f.1)).collect();
    let mut plan = Plan::new(mode, Some(count), order, &costs);
    let mut sequence = Vec::new();
    while let Some(i) = plan.next_index() {
        sequence.push(i);
        plan.record(i, fake[i].2);
    }
    (sequence, plan.outcomes(), plan.finish())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn plan_skips_exactly_when_fixed(
        fake in prop::collection::vec((0u8..5, arb_severity(), arb_outcome()), 1..9),
        mode in arb_mode(),
        count_seed in 1u64..10,
    ) {
        let count = 1 + count_seed % (fake.len() as u64 + 1);
        let (seq, declared, declared_final) = drive(mode, count, EvaluationOrder::Declared, &fake);
        prop_assert_eq!(seq, (0..fake.len()).collect::<Vec<_>>());
        prop_assert!(declared.iter().zip(&fake).all(|(o, f)| *o == f.2));

        let (seq, cheap, cheap_final) = drive(mode, count, EvaluationOrder::CheapestFirst, &fake);
        prop_assert_eq!(cheap_final, declared_final);
        // The oracle's final answer.
        let required: Vec<Outcome> = fake.iter().filter(|f| f.1 == Severity::Required)
            .map(|f| f.2).collect();
        let expected = match oracle(mode, count, &required, 0) {
            Some(p) => (p, false),
            None => (false, true),
        };
        prop_assert_eq!(declared_final, expected);
        // Evaluated in ascending cost, ties in declared order.
        let mut sorted: Vec<usize> = (0..fake.len()).collect();
        sorted.sort_by_key(|&i| fake[i].0);
        let evaluated_in_cost_order: Vec<usize> =
            sorted.iter().copied().filter(|i| seq.contains(i)).collect();
        prop_assert_eq!(&seq, &evaluated_in_cost_order);
        // Skipped exactly when the required outcomes before it fixed the block.
        let mut seen: Vec<Outcome> = Vec::new();
        let total_required = required.len();
        for &i in &sorted {
            let (_, severity, outcome) = fake[i];
            if severity == Severity::Advisory {
                prop_assert_eq!(cheap[i], outcome, "advisory criteria always run");
                continue;
            }
            let fixed = oracle(mode, count, &seen, total_required - seen.len()).is_some();
            if fixed {
                prop_assert_eq!(cheap[i], Outcome::NotEvaluated);
            } else {
                prop_assert_eq!(cheap[i], outcome);
                seen.push(outcome);
            }
        }
    }
}

/// A real criterion whose outcome the fixture decides.
#[derive(Clone, Debug)]
enum Spec {
    Artifact(bool),
    Expr(u8),
    Regex(bool),
    Human(u8),
    External(u8),
    Judge,
}

fn arb_spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        any::<bool>().prop_map(Spec::Artifact),
        (0u8..3).prop_map(Spec::Expr),
        any::<bool>().prop_map(Spec::Regex),
        (0u8..3).prop_map(Spec::Human),
        (0u8..3).prop_map(Spec::External),
        Just(Spec::Judge),
    ]
}

/// `expression` sources: true, false, an evaluation error.
const EXPRS: [&str; 3] = ["true", "false", "params.n"];
/// `external` checkers: passing, failing, unregistered.
const CHECKS: [&str; 3] = ["pass", "fail", "unregistered"];

fn criterion(i: usize, spec: &Spec, severity: Severity) -> Value {
    let id = format!("c{i}");
    let mut c = match spec {
        Spec::Artifact(ok) => json!({"kind": "artifact_present",
            "output": if *ok { "present" } else { "absent" }}),
        Spec::Expr(v) => json!({"kind": "expression",
            "expr": EXPRS[*v as usize]}),
        Spec::Regex(ok) => json!({"kind": "regex", "output": "present",
            "pattern": if *ok { "^yes$" } else { "^no$" }}),
        Spec::Human(_) => json!({"kind": "human", "prompt": "ok?"}),
        Spec::External(v) => json!({"kind": "external",
            "check": CHECKS[*v as usize]}),
        Spec::Judge => json!({"kind": "llm_judge", "rubric": "good?"}),
    };
    let obj = c.as_object_mut().unwrap();
    obj.insert("id".into(), json!(id));
    obj.insert("description".into(), json!(format!("criterion {i}")));
    obj.insert(
        "severity".into(),
        json!(match severity {
            Severity::Required => "required",
            Severity::Advisory => "advisory",
        }),
    );
    c
}

fn run(f: &Fixture, block: &Value) -> Verdict {
    f.eval_block(&SuccessBlock::from_value(block).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn cheapest_first_gives_the_declared_verdict(
        specs in prop::collection::vec((arb_spec(), arb_severity()), 1..8),
        mode in arb_mode(),
        count_seed in 1u64..10,
    ) {
        let mut f = Fixture::new();
        f.outputs = json!({"present": "yes"});
        f.checkers = f.checkers.clone().with("pass", true, "ok").with("fail", false, "no");
        for (i, (spec, _)) in specs.iter().enumerate() {
            if let Spec::Human(v) = spec {
                let answer = match v {
                    0 => HumanAnswer::Approved { reviewer: None, comment: None },
                    1 => HumanAnswer::Rejected { reviewer: None, comment: None },
                    _ => HumanAnswer::Pending,
                };
                f.human = f.human.clone().with(format!("c{i}"), answer);
            }
        }
        let criteria: Vec<Value> = specs.iter().enumerate()
            .map(|(i, (spec, severity))| criterion(i, spec, *severity)).collect();
        let count = 1 + count_seed % (specs.len() as u64 + 1);
        let mode_name = match mode { Mode::All => "all", Mode::Any => "any", Mode::NOf => "n_of" };
        let block = |order: &str| json!({"mode": mode_name, "count": count,
            "evaluation_order": order, "criteria": criteria});
        let declared = run(&f, &block("declared"));
        let cheap = run(&f, &block("cheapest_first"));
        prop_assert_eq!(declared.passed, cheap.passed);
        prop_assert_eq!(declared.pending_human, cheap.pending_human);
        prop_assert!(declared.results.iter().all(|r| r.outcome != Outcome::NotEvaluated));
        for (d, c) in declared.results.iter().zip(&cheap.results) {
            prop_assert_eq!(&d.id, &c.id);
            if c.outcome == Outcome::NotEvaluated {
                prop_assert_eq!(c.severity, Severity::Required);
            } else {
                prop_assert_eq!(d.outcome, c.outcome);
                prop_assert_eq!(&d.evidence, &c.evidence);
            }
        }
    }
}
