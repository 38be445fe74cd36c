//! Shared test fixture: a temporary workspace, outputs, an AGX context and the crate's
//! documented test doubles for the human and external ports.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the helpers"
)]
#![allow(
    clippy::unwrap_used,
    reason = "a panic in a test helper is a test failure with a message"
)]

use std::path::Path;

use serde_json::{Value, json};
use tempfile::TempDir;
use weft_agx::MapContext;
use weft_criteria::doubles::{MapCheckers, MapHumanPort, MapJudge};
use weft_criteria::{CriteriaEnv, CriterionResult, Limits, SuccessBlock, Verdict, evaluate};

pub struct Fixture {
    pub dir: TempDir,
    pub outputs: Value,
    pub ctx: MapContext,
    pub human: MapHumanPort,
    pub checkers: MapCheckers,
    pub judge: MapJudge,
    pub limits: Limits,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture {
            dir: TempDir::new().unwrap(),
            outputs: json!({}),
            ctx: MapContext::from_value(json!({"params": {"n": 3, "name": "weft"}})),
            human: MapHumanPort::default(),
            checkers: MapCheckers::default(),
            judge: MapJudge::default(),
            limits: Limits::default(),
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, contents: &str) {
        let path = self.root().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, contents).unwrap();
    }

    pub fn env(&self) -> CriteriaEnv<'_> {
        CriteriaEnv {
            workspace: self.root(),
            outputs: &self.outputs,
            context: &self.ctx,
            human: &self.human,
            checkers: &self.checkers,
            judge: &self.judge,
            limits: &self.limits,
        }
    }

    pub fn eval_block(&self, block: &SuccessBlock) -> Verdict {
        runtime().block_on(evaluate(block, &self.env()))
    }

    pub fn eval(&self, block: Value) -> Verdict {
        let block = SuccessBlock::from_value(&block).unwrap();
        self.eval_block(&block)
    }

    /// Evaluates a block holding only `criterion` (with a default id and description).
    pub fn one(&self, mut criterion: Value) -> CriterionResult {
        let obj = criterion.as_object_mut().unwrap();
        obj.entry("id").or_insert(json!("c"));
        obj.entry("description").or_insert(json!("the check"));
        let verdict = self.eval(json!({"criteria": [criterion]}));
        verdict.results.into_iter().next().unwrap()
    }
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}
