//! Combining criteria: cost classes, the evaluation plan and the short-circuit rule.
//!
//! Sans-IO on purpose: [`Plan`] says which criterion to evaluate next and is told each
//! outcome, so the rule "stop only when the outcome is fixed" is tested on its own with any
//! fake costs and outcomes, apart from the processes and files the real checks touch.
//!
//! Gating looks at required criteria only, each being *pass* (`passed`), *fail* (`failed`,
//! `error`, `unsupported`) or *unknown* (`pending`, or not evaluated yet). The block is
//! decided when every way of filling in the unknowns gives the same answer:
//!
//! - `all`: fails on the first fail; passes when no unknown is left.
//! - `any`: passes on the first pass; fails when no unknown is left.
//! - `n_of`: passes when passes ≥ count; fails when passes + unknowns < count.
//!
//! A block with no required criterion passes in every mode: advisory criteria never gate.

use crate::model::{EvaluationOrder, Kind, Mode, Severity};
use crate::verdict::Outcome;

/// Relative cost of a kind, for `cheapest_first`; lower runs first. Ties keep declared order.
///
/// `artifact_present` < `expression` < `regex` < `json_schema` < `file_exists` < `external`
/// < `command` < `human` = `llm_judge`: in-memory checks, then file system, then other
/// programs, then people and models.
pub fn cost_class(kind: Kind) -> u8 {
    match kind {
        Kind::ArtifactPresent => 0,
        Kind::Expression => 1,
        Kind::Regex => 2,
        Kind::JsonSchema => 3,
        Kind::FileExists => 4,
        Kind::External => 5,
        Kind::Command => 6,
        Kind::Human | Kind::LlmJudge => 7,
    }
}

/// The gating state of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Passes whatever the unknowns turn out to be.
    Pass,
    /// Fails whatever the unknowns turn out to be.
    Fail,
    /// Depends on unknowns.
    Open,
}

/// Tallies of required criteria.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Required criteria that passed.
    pub pass: usize,
    /// Required criteria that failed, errored or are unsupported.
    pub fail: usize,
    /// Required criteria pending or not evaluated (yet).
    pub unknown: usize,
}

impl Tally {
    /// Counts one required outcome; `NotEvaluated` counts as unknown.
    pub fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Passed => self.pass += 1,
            Outcome::Failed | Outcome::Error | Outcome::Unsupported => self.fail += 1,
            Outcome::Pending | Outcome::NotEvaluated => self.unknown += 1,
        }
    }
}

/// Decides a block from its tally.
pub fn decide(mode: Mode, count: u64, tally: Tally) -> Decision {
    let total = tally.pass + tally.fail + tally.unknown;
    if total == 0 {
        return Decision::Pass;
    }
    let (pass, unknown) = (tally.pass as u64, tally.unknown as u64);
    let (passes_at_least, passes_at_most) = (pass, pass + unknown);
    let need = match mode {
        Mode::All => total as u64,
        Mode::Any => 1,
        Mode::NOf => count.max(1),
    };
    if passes_at_least >= need {
        Decision::Pass
    } else if passes_at_most < need {
        Decision::Fail
    } else {
        Decision::Open
    }
}

/// The evaluation plan of one block: the order, and what is left once the outcome is fixed.
#[derive(Clone, Debug)]
pub struct Plan {
    mode: Mode,
    count: u64,
    short_circuit: bool,
    severities: Vec<Severity>,
    order: Vec<usize>,
    next: usize,
    outcomes: Vec<Option<Outcome>>,
}

impl Plan {
    /// A plan over criteria given as `(kind cost, severity)` in declared order.
    ///
    /// With `declared`, every criterion is evaluated in order, so all evidence is recorded.
    /// With `cheapest_first`, criteria run by ascending cost (stable), and once the
    /// required criteria fix the outcome the remaining *required* ones are skipped; the
    /// remaining advisory ones still run (they are recorded for the reader, and skipping
    /// them would hide a warning).
    pub fn new(
        mode: Mode,
        count: Option<u64>,
        order: EvaluationOrder,
        criteria: &[(u8, Severity)],
    ) -> Plan {
        let mut indices: Vec<usize> = (0..criteria.len()).collect();
        let short_circuit = order == EvaluationOrder::CheapestFirst;
        if short_circuit {
            indices.sort_by_key(|&i| criteria.get(i).map_or(u8::MAX, |c| c.0));
        }
        Plan {
            mode,
            count: count.unwrap_or(1),
            short_circuit,
            severities: criteria.iter().map(|c| c.1).collect(),
            order: indices,
            next: 0,
            outcomes: vec![None; criteria.len()],
        }
    }

    /// The gating state given the outcomes so far (unevaluated criteria are unknown).
    pub fn decision(&self) -> Decision {
        let mut tally = Tally::default();
        for (i, severity) in self.severities.iter().enumerate() {
            if *severity == Severity::Required {
                tally.add(
                    self.outcomes
                        .get(i)
                        .copied()
                        .flatten()
                        .unwrap_or(Outcome::NotEvaluated),
                );
            }
        }
        decide(self.mode, self.count, tally)
    }

    /// The next criterion (declared index) to evaluate, or `None` when done.
    pub fn next_index(&mut self) -> Option<usize> {
        while let Some(&i) = self.order.get(self.next) {
            self.next += 1;
            let required = self.severities.get(i) == Some(&Severity::Required);
            if self.short_circuit && required && self.decision() != Decision::Open {
                continue;
            }
            return Some(i);
        }
        None
    }

    /// Records the outcome of criterion `index`.
    pub fn record(&mut self, index: usize, outcome: Outcome) {
        if let Some(slot) = self.outcomes.get_mut(index) {
            *slot = Some(outcome);
        }
    }

    /// The final outcomes in declared order; skipped criteria are `NotEvaluated`.
    pub fn outcomes(&self) -> Vec<Outcome> {
        self.outcomes
            .iter()
            .map(|o| o.unwrap_or(Outcome::NotEvaluated))
            .collect()
    }

    /// `(passed, pending_human)` for the verdict: `pending_human` when the block is still
    /// open, which can only be because a required criterion is pending (every other
    /// required criterion has a definite outcome by then).
    pub fn finish(&self) -> (bool, bool) {
        match self.decision() {
            Decision::Pass => (true, false),
            Decision::Fail => (false, false),
            Decision::Open => (false, true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_classes_follow_the_documented_order() {
        let order = [
            Kind::ArtifactPresent,
            Kind::Expression,
            Kind::Regex,
            Kind::JsonSchema,
            Kind::FileExists,
            Kind::External,
            Kind::Command,
            Kind::Human,
        ];
        assert!(
            order
                .windows(2)
                .all(|w| cost_class(w[0]) < cost_class(w[1]))
        );
        assert_eq!(cost_class(Kind::Human), cost_class(Kind::LlmJudge));
    }

    #[test]
    fn decisions() {
        let t = |pass, fail, unknown| Tally {
            pass,
            fail,
            unknown,
        };
        assert_eq!(decide(Mode::All, 1, t(0, 0, 0)), Decision::Pass);
        assert_eq!(decide(Mode::Any, 1, t(0, 0, 0)), Decision::Pass);
        assert_eq!(decide(Mode::All, 1, t(2, 1, 3)), Decision::Fail);
        assert_eq!(decide(Mode::All, 1, t(2, 0, 1)), Decision::Open);
        assert_eq!(decide(Mode::Any, 1, t(1, 5, 5)), Decision::Pass);
        assert_eq!(decide(Mode::Any, 1, t(0, 5, 1)), Decision::Open);
        assert_eq!(decide(Mode::NOf, 2, t(1, 1, 1)), Decision::Open);
        assert_eq!(decide(Mode::NOf, 2, t(1, 2, 0)), Decision::Fail);
        assert_eq!(decide(Mode::NOf, 5, t(3, 0, 0)), Decision::Fail);
    }
}
