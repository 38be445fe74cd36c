//! The discovery loop: dedupe against seen keys, verification, K dry rounds, the budget,
//! and resume after `kill -9` by reloading the store (the child is this test binary
//! re-invoked with `WEFT_MEMORY_LOOP_CHILD` set, running `loop_child`, a no-op otherwise).

#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use weft_memory::{DiscoveryLoop, Finder, LoopState, Memory, Proposal, Verifier};

const ITEMS: usize = 40;
const PER_ROUND: usize = 4;

/// Proposes the next few items after those already seen, plus two it proposed before: a
/// function of the stored state only, like a finder that is asked "what else?".
struct Sequence;

impl Finder for Sequence {
    fn find(&mut self, state: &LoopState) -> Vec<Proposal> {
        let next = state.seen.len();
        let mut keys: Vec<usize> = (next..(next + PER_ROUND).min(ITEMS)).collect();
        keys.extend([0, next.saturating_sub(1)]);
        keys.into_iter()
            .map(|k| Proposal {
                key: format!("item-{k:03}"),
                candidate: common::cand(
                    &format!("item {k}"),
                    "follows",
                    &format!("item {}", k + 1),
                    &format!("c{k}"),
                ),
                cost: 1,
            })
            .collect()
    }
}

/// Confirms every item but multiples of five.
struct NotFives;

impl Verifier for NotFives {
    fn verify(&mut self, proposal: &Proposal) -> Option<String> {
        let k: usize = proposal.key.trim_start_matches("item-").parse().ok()?;
        (!k.is_multiple_of(5)).then(|| "checker".to_string())
    }
}

fn run_loop(memory: &Memory, budget: u64, mut after_round: impl FnMut(&LoopState)) -> LoopState {
    let mut discovery = DiscoveryLoop::open(memory, "run-7", 2, budget).unwrap();
    while !discovery.state().done {
        // Time comes from the stored state, so a resumed loop writes what an unbroken one would.
        let at = i64::from(discovery.state().rounds) + 1;
        let state = discovery
            .round(&mut [&mut Sequence], &mut NotFives, at)
            .unwrap()
            .clone();
        after_round(&state);
    }
    discovery.state().clone()
}

fn open(path: &Path) -> Memory {
    Memory::open(path, common::config()).unwrap()
}

#[test]
fn a_loop_dedupes_verifies_and_stops_after_k_dry_rounds() {
    let t = common::store();
    let state = run_loop(&t.memory, 1_000, |_| {});
    assert!(state.done);
    assert_eq!(state.seen.len(), ITEMS);
    assert_eq!(state.confirmed.len(), ITEMS - ITEMS / 5);
    assert_eq!(
        state.rounds,
        (ITEMS / PER_ROUND) as u32 + 2,
        "ten finding rounds, two dry"
    );
    assert_eq!(state.dry_rounds, 2);
    assert_eq!(
        t.memory.graph().current_edges(),
        ITEMS - ITEMS / 5,
        "each fact once"
    );
    let decided = t.memory.provenance(1).unwrap();
    assert_eq!(decided.status, "promoted");
    // Done is stored: reopening does not start over.
    let again = DiscoveryLoop::open(&t.memory, "run-7", 2, 1_000).unwrap();
    assert_eq!(again.state(), &state);
}

#[test]
fn the_budget_stops_a_loop() {
    let t = common::store();
    let state = run_loop(&t.memory, 13, |_| {});
    assert!(state.done);
    assert_eq!(
        state.rounds, 3,
        "six proposals per round: the third round passes 13"
    );
    assert!(state.budget_used >= 13);
    assert_eq!(state.seen.len(), 3 * PER_ROUND);
}

#[test]
fn loop_child() {
    let Ok(path) = std::env::var("WEFT_MEMORY_LOOP_CHILD") else {
        return;
    };
    let memory = open(Path::new(&path));
    let mut out = std::io::stdout();
    run_loop(&memory, 1_000, |state| {
        writeln!(out, "round {}", state.rounds).unwrap();
        out.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(40));
    });
    writeln!(out, "finished").unwrap();
}

#[test]
fn a_loop_killed_with_sigkill_resumes_from_the_store_and_ends_where_an_unbroken_one_does() {
    let dir = tempfile::tempdir().unwrap();
    let unbroken = open(&dir.path().join("unbroken.db"));
    let expected = run_loop(&unbroken, 1_000, |_| {});
    let expected_hash = unbroken.store_hash().unwrap();
    drop(unbroken);

    let killed_db = dir.path().join("killed.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "loop_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("WEFT_MEMORY_LOOP_CHILD", &killed_db)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut rounds_seen = 0;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(n) = line.strip_prefix("round ") {
            rounds_seen = n.trim().parse().unwrap();
            if rounds_seen == 4 {
                break;
            }
        }
    }
    assert_eq!(rounds_seen, 4, "the child ran four rounds before the kill");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let memory = open(&killed_db);
    let resumed_from = DiscoveryLoop::open(&memory, "run-7", 2, 1_000)
        .unwrap()
        .state()
        .clone();
    assert!(!resumed_from.done);
    assert!(
        resumed_from.rounds >= 4,
        "the rounds the child reported are in the store"
    );
    assert_eq!(
        resumed_from.seen.len(),
        resumed_from.rounds as usize * PER_ROUND
    );
    let finished = run_loop(&memory, 1_000, |_| {});
    assert_eq!(finished, expected);
    assert_eq!(
        memory.store_hash().unwrap(),
        expected_hash,
        "byte-identical to the unbroken loop"
    );
}
