//! Test doubles for the engine's ports: [`MapHumanPort`] and [`MapCheckers`] answer from
//! maps. They exist for tests (this crate's and the engine's) and tools; a real engine
//! implements [`HumanPort`] and [`ExternalCheckers`] itself.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::env::{
    CheckFuture, ExternalCheckers, ExternalVerdict, HumanAnswer, HumanPort, HumanRequest,
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
