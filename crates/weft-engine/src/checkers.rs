//! `external` success criteria (DIGEST §1.12): checkers the harness registers by name. A
//! criterion naming a checker that is not registered fails closed (never skipped, never
//! passed: `weft-criteria` reports it as an error). The registry is
//! [`crate::RunOptions::checkers`]; it is empty unless the embedding program registers
//! checkers (the CLI registers none).
//!
//! ```
//! use std::sync::Arc;
//! use weft_criteria::{CheckFuture, ExternalVerdict};
//! use weft_engine::checkers::{Checker, CheckerRegistry};
//!
//! struct Always;
//! impl Checker for Always {
//!     fn check<'a>(&'a self, _params: &'a serde_json::Map<String, serde_json::Value>) -> CheckFuture<'a> {
//!         Box::pin(async { ExternalVerdict { passed: true, detail: "always".into() } })
//!     }
//! }
//! let mut checkers = CheckerRegistry::default();
//! checkers.register("always", Arc::new(Always));
//! assert_eq!(checkers.names(), ["always"]);
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};
use weft_criteria::{CheckFuture, ExternalCheckers};

/// One named check: its `params` from the criterion in, a verdict with evidence out. The
/// criterion's `timeout_seconds` (or the default limit) bounds it.
pub trait Checker: Send + Sync {
    fn check<'a>(&'a self, params: &'a Map<String, Value>) -> CheckFuture<'a>;
}

/// The checkers a run may use, by name.
#[derive(Clone, Default)]
pub struct CheckerRegistry {
    checkers: BTreeMap<String, Arc<dyn Checker>>,
}

impl std::fmt::Debug for CheckerRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckerRegistry")
            .field("checkers", &self.names())
            .finish()
    }
}

impl CheckerRegistry {
    /// Adds (or replaces) the checker called `name`.
    pub fn register(&mut self, name: impl Into<String>, checker: Arc<dyn Checker>) {
        self.checkers.insert(name.into(), checker);
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.checkers.keys().map(String::as_str).collect()
    }
}

impl ExternalCheckers for CheckerRegistry {
    fn check<'a>(
        &'a self,
        name: &'a str,
        params: &'a Map<String, Value>,
    ) -> Option<CheckFuture<'a>> {
        self.checkers.get(name).map(|c| c.check(params))
    }
}
