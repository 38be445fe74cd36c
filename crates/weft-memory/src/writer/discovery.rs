//! One discovery round in one transaction: the new seen keys, the confirmed facts (staged
//! and promoted with the verifier recorded), and the loop's counters. A kill at any moment
//! leaves the loop before or after a whole round.

use rusqlite::{OptionalExtension, params};

use super::ctx::Ctx;
use super::staging;
use crate::error::{MemoryError, Result, SqliteContext};
use crate::model::{LoopState, Millis, Outcome, RoundInput, Verdict};

/// Loads a loop's state, creating it on first use.
pub(crate) fn open(
    ctx: &mut Ctx<'_>,
    run_id: &str,
    dry_rounds_to_stop: u32,
    budget_max: u64,
) -> Result<LoopState> {
    let exists: bool = ctx
        .tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM loops WHERE run_id = ?1)",
            [run_id],
            |r| r.get(0),
        )
        .ctx("reading a discovery loop")?;
    if !exists {
        ctx.tx
            .execute(
                "INSERT INTO loops (run_id, dry_rounds_to_stop, rounds, dry_rounds, budget_max, budget_used, done) \
                 VALUES (?1, ?2, 0, 0, ?3, 0, 0)",
                params![run_id, dry_rounds_to_stop, budget_max as i64],
            )
            .ctx("creating a discovery loop")?;
    }
    load(ctx, run_id)
}

pub(crate) fn load(ctx: &Ctx<'_>, run_id: &str) -> Result<LoopState> {
    let row: Option<(u32, u32, u32, i64, i64, bool)> = ctx
        .tx
        .query_row(
            "SELECT dry_rounds_to_stop, rounds, dry_rounds, budget_max, budget_used, done \
             FROM loops WHERE run_id = ?1",
            [run_id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            },
        )
        .optional()
        .ctx("reading a discovery loop")?;
    let Some((dry_rounds_to_stop, rounds, dry_rounds, budget_max, budget_used, done)) = row else {
        return Err(MemoryError::NotFound(format!(
            "no discovery loop for run `{run_id}`"
        )));
    };
    let seen = ctx
        .tx
        .prepare("SELECT key FROM loop_seen WHERE run_id = ?1 ORDER BY key")
        .and_then(|mut s| s.query_map([run_id], |r| r.get(0))?.collect())
        .ctx("reading seen keys")?;
    let confirmed = ctx
        .tx
        .prepare("SELECT triple_id FROM loop_confirmed WHERE run_id = ?1 ORDER BY triple_id")
        .and_then(|mut s| s.query_map([run_id], |r| r.get(0))?.collect())
        .ctx("reading confirmed triples")?;
    Ok(LoopState {
        run_id: run_id.to_string(),
        dry_rounds_to_stop,
        rounds,
        dry_rounds,
        budget_max: u64::try_from(budget_max).unwrap_or(0),
        budget_used: u64::try_from(budget_used).unwrap_or(0),
        done,
        seen,
        confirmed,
    })
}

/// Applies one round.
pub(crate) fn commit_round(ctx: &mut Ctx<'_>, input: RoundInput, at: Millis) -> Result<LoopState> {
    let before = load(ctx, &input.run_id)?;
    if before.done {
        return Err(MemoryError::Refused(format!(
            "the discovery loop of run `{}` is done",
            input.run_id
        )));
    }
    for key in &input.new_keys {
        ctx.tx
            .prepare_cached("INSERT OR IGNORE INTO loop_seen (run_id, key) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![input.run_id, key]))
            .ctx("recording a seen key")?;
    }
    let mut confirmed_now = 0u32;
    for (candidate, verifier) in input.confirmed {
        let report = staging::ingest(ctx, std::slice::from_ref(&candidate), at)?;
        let Some(&id) = report.staged.first() else {
            continue; // refused by the ontology: recorded as rejected, not a fact
        };
        let why = format!(
            "discovery loop of run {}: confirmed by {verifier}",
            input.run_id
        );
        let outcome = staging::decide(ctx, &[id], Verdict::Promote, &verifier, &why, at)?;
        if let Some((_, Outcome::Promoted { triple })) = outcome.first() {
            let inserted = ctx
                .tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO loop_confirmed (run_id, triple_id) VALUES (?1, ?2)",
                )
                .and_then(|mut s| s.execute(params![input.run_id, triple]))
                .ctx("recording a confirmed triple")?;
            confirmed_now += u32::try_from(inserted).unwrap_or(0);
        }
    }
    let dry_rounds = if confirmed_now == 0 {
        before.dry_rounds + 1
    } else {
        0
    };
    let budget_used = before.budget_used.saturating_add(input.spent);
    let done = dry_rounds >= before.dry_rounds_to_stop || budget_used >= before.budget_max;
    ctx.tx
        .execute(
            "UPDATE loops SET rounds = rounds + 1, dry_rounds = ?2, budget_used = ?3, done = ?4 \
             WHERE run_id = ?1",
            params![input.run_id, dry_rounds, budget_used as i64, done],
        )
        .ctx("updating a discovery loop")?;
    load(ctx, &input.run_id)
}
