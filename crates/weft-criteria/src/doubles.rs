//! Test doubles for the engine's ports: [`MapHumanPort`], [`MapCheckers`] and
//! [`MapJudge`] answer from maps. They exist for tests (this crate's and the engine's) and
//! tools; a real engine implements [`HumanPort`], [`ExternalCheckers`] and
//! [`crate::JudgePort`] itself.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::env::{
    CheckFuture, ExternalCheckers, ExternalVerdict, HumanAnswer, HumanPort, HumanRequest,
    JudgeFuture, JudgePort, JudgeRequest, JudgeScore,
};

/// Test double: answers `human` criteria by criterion id; unknown ids are `Pending`.
#[derive(Clone, Debug, Default)]
pub struct MapHumanPort {
    /// Answers by criterion id.
    pub answers: BTreeMap<String, HumanAnswer>,
}

impl MapHumanPort {
    /// Adds an answer for criterion `id`.
    pub fn with(mut self, id: impl Into<String>, answer: HumanAnswer) -> MapHumanPort {
        self.answers.insert(id.into(), answer);
        self
    }
}

impl HumanPort for MapHumanPort {
    fn ask(&self, request: &HumanRequest) -> HumanAnswer {
        self.answers
            .get(&request.criterion_id)
            .cloned()
            .unwrap_or(HumanAnswer::Pending)
    }
}

/// Test double: named checkers with fixed verdicts; any other name is unregistered.
#[derive(Clone, Debug, Default)]
pub struct MapCheckers {
    /// Verdicts by checker name.
    pub verdicts: BTreeMap<String, ExternalVerdict>,
}

impl MapCheckers {
    /// Registers checker `name` answering `passed` with `detail`.
    pub fn with(mut self, name: impl Into<String>, passed: bool, detail: &str) -> MapCheckers {
        self.verdicts.insert(
            name.into(),
            ExternalVerdict {
                passed,
                detail: detail.to_string(),
            },
        );
        self
    }
}

impl ExternalCheckers for MapCheckers {
    fn check<'a>(
        &'a self,
        name: &'a str,
        _params: &'a Map<String, Value>,
    ) -> Option<CheckFuture<'a>> {
        let verdict = self.verdicts.get(name)?.clone();
        Some(Box::pin(async move { verdict }))
    }
}

/// Test double: scripted judge answers per criterion id, sample `n` answering the `n`-th
/// entry (a score, or an error message); a criterion or sample with no entry is an error.
/// Every request is kept, so a test can check what the judge was shown.
#[derive(Debug, Default)]
pub struct MapJudge {
    /// Answers by criterion id, in sample order.
    pub answers: BTreeMap<String, Vec<Result<f64, String>>>,
    /// The requests received, in order.
    pub seen: std::sync::Mutex<Vec<JudgeRequest>>,
}

impl MapJudge {
    /// Scripts the answers of criterion `id`.
    pub fn with(mut self, id: impl Into<String>, answers: Vec<Result<f64, String>>) -> MapJudge {
        self.answers.insert(id.into(), answers);
        self
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<JudgeRequest> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl JudgePort for MapJudge {
    fn judge<'a>(&'a self, request: &'a JudgeRequest) -> JudgeFuture<'a> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(request.clone());
        let index = request.sample.saturating_sub(1) as usize;
        let answer = self
            .answers
            .get(&request.criterion_id)
            .and_then(|a| a.get(index))
            .cloned()
            .unwrap_or_else(|| Err(format!("no scripted answer for sample {}", request.sample)));
        Box::pin(async move {
            answer.map(|score| JudgeScore {
                score,
                reasoning: Some(format!("scripted sample {}", request.sample)),
                judged_by: Some("double/map-judge".into()),
            })
        })
    }
}
