//! The discovery-loop helper: finders propose facts, proposals already seen are dropped,
//! a verifier checks the rest, confirmed ones become canonical — round after round until K
//! rounds in a row confirm nothing or the budget is spent. The loop's state (seen keys,
//! confirmed triple ids, counters, run id) lives in the store; resuming reloads it, never a
//! conversation.

use std::collections::BTreeSet;

use crate::error::Result;
use crate::memory::Memory;
use crate::model::{LoopState, Millis, NewCandidate, RoundInput};
use crate::writer::discovery;

/// A finder's proposal: a dedupe key (what makes two proposals the same), the candidate,
/// and what finding it cost (in the budget's unit: calls, tokens...).
#[derive(Debug, Clone)]
pub struct Proposal {
    pub key: String,
    pub candidate: NewCandidate,
    pub cost: u64,
}

/// Proposes facts given the loop's state.
pub trait Finder {
    fn find(&mut self, state: &LoopState) -> Vec<Proposal>;
}

/// Checks a proposal; `Some(name)` confirms it (the name is recorded as who decided).
pub trait Verifier {
    fn verify(&mut self, proposal: &Proposal) -> Option<String>;
}

/// A discovery loop bound to a store.
pub struct DiscoveryLoop {
    memory: Memory,
    state: LoopState,
}

impl DiscoveryLoop {
    /// Opens the loop of `run_id`, creating it with these limits on first use; an existing
    /// loop keeps its stored limits and state.
    pub fn open(
        memory: &Memory,
        run_id: &str,
        dry_rounds_to_stop: u32,
        budget_max: u64,
    ) -> Result<Self> {
        let run = run_id.to_string();
        let state =
            memory.write(move |ctx| discovery::open(ctx, &run, dry_rounds_to_stop, budget_max))?;
        Ok(DiscoveryLoop {
            memory: memory.clone(),
            state,
        })
    }

    pub fn state(&self) -> &LoopState {
        &self.state
    }

    /// Runs one round: every finder, dedupe against seen keys (and within the round),
    /// verify, then one transaction for the round's facts and state.
    pub fn round(
        &mut self,
        finders: &mut [&mut dyn Finder],
        verifier: &mut dyn Verifier,
        at: Millis,
    ) -> Result<&LoopState> {
        let mut seen: BTreeSet<String> = self.state.seen.iter().cloned().collect();
        let mut input = RoundInput {
            run_id: self.state.run_id.clone(),
            new_keys: Vec::new(),
            confirmed: Vec::new(),
            spent: 0,
        };
        for finder in finders.iter_mut() {
            for proposal in finder.find(&self.state) {
                input.spent = input.spent.saturating_add(proposal.cost);
                if !seen.insert(proposal.key.clone()) {
                    continue;
                }
                input.new_keys.push(proposal.key.clone());
                if let Some(verifier_name) = verifier.verify(&proposal) {
                    input.confirmed.push((proposal.candidate, verifier_name));
                }
            }
        }
        self.state = self
            .memory
            .write(move |ctx| discovery::commit_round(ctx, input, at))?;
        Ok(&self.state)
    }

    /// Runs rounds until the loop is done; `at` gives each round's time.
    pub fn run(
        &mut self,
        finders: &mut [&mut dyn Finder],
        verifier: &mut dyn Verifier,
        at: &mut dyn FnMut() -> Millis,
    ) -> Result<&LoopState> {
        while !self.state.done {
            let now = at();
            self.round(finders, verifier, now)?;
        }
        Ok(&self.state)
    }
}
