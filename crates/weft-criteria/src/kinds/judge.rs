//! `llm_judge`: a model scores the outputs against the rubric through [`crate::JudgePort`],
//! `samples` times; the criterion passes when the median score reaches `threshold`.
//!
//! Everything that can go wrong is a result, never a panic: a rubric or input expression
//! that does not evaluate, a judge that fails or answers a score outside 0–1, are each an
//! `Error` outcome with the evidence. Samples are taken one after another, not in parallel:
//! a judge is a model call with a cost, and the budget checks before each call must see the
//! previous one's spend.

use weft_agx::{parse, parse_template, render};

use super::memory::expression_failure;
use super::{error, field};
use crate::env::{CriteriaEnv, JudgeRequest};
use crate::model::{Criterion, DEFAULT_JUDGE_THRESHOLD, MAX_JUDGE_SAMPLES};
use crate::verdict::{Evidence, Outcome};

/// Evaluates an `llm_judge` criterion.
pub async fn check(c: &Criterion, env: &CriteriaEnv<'_>) -> (Outcome, Evidence) {
    let template = match field(c.rubric.as_deref(), "rubric", c) {
        Ok(t) => t,
        Err(e) => return *e,
    };
    let rubric = match parse_template(template)
        .map_err(|e| e.to_string())
        .and_then(|t| render(&t, env.context).map_err(|e| e.to_string()))
    {
        Ok(r) => r,
        Err(e) => return expression_failure("rubric cannot be rendered", e),
    };
    let mut inputs = Vec::with_capacity(c.inputs.len());
    for expr in &c.inputs {
        match parse(expr)
            .map_err(|e| e.to_string())
            .and_then(|x| weft_agx::eval(&x, env.context).map_err(|e| e.to_string()))
        {
            Ok(v) => inputs.push(v),
            Err(e) => return expression_failure(&format!("judge input `{expr}`"), e),
        }
    }
    let threshold = c.threshold.unwrap_or(DEFAULT_JUDGE_THRESHOLD);
    let samples = match c.samples.unwrap_or(1) {
        n if (1..=u64::from(MAX_JUDGE_SAMPLES)).contains(&n) => n as u32,
        n => return error(format!("samples must be 1–{MAX_JUDGE_SAMPLES}, got {n}")),
    };
    let mut scores = Vec::with_capacity(samples as usize);
    let mut reasons = Vec::with_capacity(samples as usize);
    let mut judged_by = Vec::new();
    for sample in 1..=samples {
        let request = JudgeRequest {
            criterion_id: c.id.clone(),
            description: c.description.clone(),
            rubric: rubric.clone(),
            inputs: inputs.clone(),
            outputs: env.outputs.clone(),
            sample,
            samples,
            judge_intelligence: c.judge_intelligence.clone(),
        };
        let answer = match env.judge.judge(&request).await {
            Ok(a) => a,
            Err(e) => {
                return (
                    Outcome::Error,
                    Evidence {
                        summary: format!("judge sample {sample} of {samples} failed: {e}"),
                        scores,
                        judged_by,
                        ..Evidence::default()
                    },
                );
            }
        };
        if !(0.0..=1.0).contains(&answer.score) {
            return (
                Outcome::Error,
                Evidence {
                    summary: format!(
                        "judge sample {sample} of {samples} answered score {}, outside 0–1",
                        answer.score
                    ),
                    scores,
                    judged_by,
                    ..Evidence::default()
                },
            );
        }
        scores.push(answer.score);
        reasons.push(answer.reasoning);
        judged_by.extend(answer.judged_by);
    }
    let (median, at) = median(&scores);
    let passed = median >= threshold;
    (
        if passed {
            Outcome::Passed
        } else {
            Outcome::Failed
        },
        Evidence {
            summary: format!(
                "median score {median} of {samples} sample(s) is {} the threshold {threshold}",
                if passed { "at or above" } else { "below" }
            ),
            detail: reasons.get(at).cloned().flatten(),
            scores,
            judged_by,
            ..Evidence::default()
        },
    )
}

/// The median of non-empty `scores` (the mean of the two middle ones for an even count),
/// and the index of the sample whose reasoning explains it (the lower middle one).
fn median(scores: &[f64]) -> (f64, usize) {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let n = order.len();
    let lower = order[(n - 1) / 2];
    if n % 2 == 1 {
        (scores[lower], lower)
    } else {
        let upper = order[n / 2];
        ((scores[lower] + scores[upper]) / 2.0, lower)
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[0.9, 0.1, 0.5]), (0.5, 2));
        assert_eq!(median(&[0.2]), (0.2, 0));
        let (m, at) = median(&[0.9, 0.1, 0.5, 0.7]);
        assert!((m - 0.6).abs() < 1e-12);
        assert_eq!(at, 2);
    }
}
