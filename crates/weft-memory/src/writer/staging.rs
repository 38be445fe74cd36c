//! Staging and promotion: candidates land staged; a claim (the candidates sharing a group
//! key) becomes canonical by a verifier majority or a person's decision, both recorded.

use rusqlite::{OptionalExtension, params};

use super::ctx::Ctx;
use crate::error::{MemoryError, Result, SqliteContext};
use crate::graph::EdgeRec;
use crate::model::{
    CandidateStatus, IngestReport, Millis, NewCandidate, Outcome, Verdict, group_hash,
};
use crate::normalize::predicate_key;

/// Stages a batch of candidates; the ontology's refusals are kept as rejected rows with
/// their reason (never as facts).
pub(crate) fn ingest(
    ctx: &mut Ctx<'_>,
    batch: &[NewCandidate],
    at: Millis,
) -> Result<IngestReport> {
    let mut report = IngestReport::default();
    let mut insert = ctx
        .tx
        .prepare_cached(
            "INSERT INTO candidates (group_key, subject, predicate, object, source, chunk, \
             extractor, run_id, observed_at, valid_from, valid_to, status, reason, decided_at, \
             group_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        )
        .ctx("preparing the candidate insert")?;
    for (index, candidate) in batch.iter().enumerate() {
        let keys = candidate.keys();
        let violation = ctx.config.ontology.violation_with(candidate, &keys);
        let group = candidate.group_key(&keys);
        let status = if violation.is_some() {
            CandidateStatus::Rejected
        } else {
            CandidateStatus::Staged
        };
        let p = &candidate.provenance;
        insert
            .execute(params![
                group,
                candidate.subject,
                candidate.predicate,
                candidate.object,
                p.source,
                p.chunk,
                p.extractor,
                p.run_id,
                at,
                candidate.valid_from,
                candidate.valid_to,
                status.as_str(),
                violation,
                violation.as_ref().map(|_| at),
                group_hash(&group),
            ])
            .ctx("staging a candidate")?;
        let id = ctx.tx.last_insert_rowid();
        match violation {
            Some(reason) => report.rejected.push((index, id, reason)),
            None => report.staged.push(id),
        }
    }
    Ok(report)
}

fn group_of(ctx: &Ctx<'_>, candidate: i64) -> Result<(String, String)> {
    ctx.tx
        .prepare_cached("SELECT group_key, status FROM candidates WHERE id = ?1")
        .and_then(|mut s| {
            s.query_row([candidate], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()
        })
        .ctx("reading a candidate")?
        .ok_or_else(|| MemoryError::NotFound(format!("no candidate {candidate}")))
}

/// Records a verifier's vote on a candidate's claim and applies the k-of-n rule.
pub(crate) fn vote(
    ctx: &mut Ctx<'_>,
    candidate: i64,
    verifier: &str,
    approve: bool,
    reason: &str,
    at: Millis,
) -> Result<Outcome> {
    let (group, _) = group_of(ctx, candidate)?;
    ctx.tx
        .prepare_cached(
            "INSERT INTO votes (group_key, verifier, approve, reason, at) VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (group_key, verifier) DO UPDATE SET approve = ?3, reason = ?4, at = ?5",
        )
        .and_then(|mut s| s.execute(params![group, verifier, approve, reason, at]))
        .ctx("recording a vote")?;
    let (approvals, rejections, approvers): (u32, u32, String) = ctx
        .tx
        .prepare_cached(
            "SELECT COALESCE(SUM(approve), 0), COALESCE(SUM(1 - approve), 0), \
             COALESCE(GROUP_CONCAT(CASE WHEN approve THEN verifier END, ', '), '') \
             FROM (SELECT * FROM votes WHERE group_key = ?1 ORDER BY verifier)",
        )
        .and_then(|mut s| s.query_row([&group], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))))
        .ctx("counting votes")?;
    let policy = ctx.config.promotion;
    let staged = has_staged(ctx, &group)?;
    if staged && approvals >= policy.k {
        let why = format!(
            "{approvals} of {} verifiers approved ({approvers})",
            policy.n
        );
        record_decision(ctx, &group, Verdict::Promote, "verifiers", &why, at)?;
        let triple = promote_group(ctx, &group, at)?;
        return Ok(Outcome::Promoted { triple });
    }
    if staged && rejections > policy.n.saturating_sub(policy.k) {
        let why = format!(
            "{rejections} of {} verifiers rejected; {} approvals can no longer be reached",
            policy.n, policy.k
        );
        record_decision(ctx, &group, Verdict::Reject, "verifiers", &why, at)?;
        reject_group(ctx, &group, &why, at)?;
        return Ok(Outcome::Rejected);
    }
    current_outcome(ctx, &group, approvals, rejections)
}

fn current_outcome(ctx: &Ctx<'_>, group: &str, approvals: u32, rejections: u32) -> Result<Outcome> {
    if let Some(triple) = live_triple(ctx, group)? {
        return Ok(Outcome::Promoted { triple });
    }
    if has_staged(ctx, group)? {
        Ok(Outcome::Pending {
            approvals,
            rejections,
        })
    } else {
        Ok(Outcome::Rejected)
    }
}

/// A person's decision on candidates (their claims): promote or reject, with who and why.
/// Rejecting a claim that is already canonical retires its edge (kept, no longer current).
pub(crate) fn decide(
    ctx: &mut Ctx<'_>,
    candidates: &[i64],
    verdict: Verdict,
    who: &str,
    why: &str,
    at: Millis,
) -> Result<Vec<(i64, Outcome)>> {
    if who.trim().is_empty() {
        return Err(MemoryError::Refused(
            "a decision needs who made it (--as WHO)".to_string(),
        ));
    }
    let mut outcomes = Vec::with_capacity(candidates.len());
    for &candidate in candidates {
        let (group, _) = group_of(ctx, candidate)?;
        record_decision(ctx, &group, verdict, who, why, at)?;
        let outcome = match verdict {
            Verdict::Promote => Outcome::Promoted {
                triple: promote_group(ctx, &group, at)?,
            },
            Verdict::Reject => {
                if let Some(triple) = live_triple(ctx, &group)? {
                    retire(ctx, triple, at)?;
                }
                let reason = format!("rejected by {who}: {why}");
                ctx.tx
                    .prepare_cached(
                        "UPDATE candidates SET status = 'rejected', reason = ?2, decided_at = ?3 \
                         WHERE group_hash = ?4 AND group_key = ?1",
                    )
                    .and_then(|mut s| s.execute(params![group, reason, at, group_hash(&group)]))
                    .ctx("rejecting candidates")?;
                Outcome::Rejected
            }
        };
        outcomes.push((candidate, outcome));
    }
    Ok(outcomes)
}

/// Every staged claim, decided at once (`promote --all`). Returns (first candidate, outcome)
/// per claim.
pub(crate) fn decide_all(
    ctx: &mut Ctx<'_>,
    verdict: Verdict,
    who: &str,
    why: &str,
    at: Millis,
) -> Result<Vec<(i64, Outcome)>> {
    let firsts: Vec<i64> = ctx
        .tx
        .prepare(
            "SELECT MIN(id) FROM candidates WHERE status = 'staged' GROUP BY group_key ORDER BY MIN(id)",
        )
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .ctx("listing staged claims")?;
    decide(ctx, &firsts, verdict, who, why, at)
}

fn record_decision(
    ctx: &Ctx<'_>,
    group: &str,
    verdict: Verdict,
    who: &str,
    why: &str,
    at: Millis,
) -> Result<()> {
    let verdict = match verdict {
        Verdict::Promote => "promote",
        Verdict::Reject => "reject",
    };
    ctx.tx
        .prepare_cached(
            "INSERT INTO decisions (group_key, verdict, by_whom, why, at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .and_then(|mut s| s.execute(params![group, verdict, who, why, at]))
        .ctx("recording a decision")?;
    Ok(())
}

fn has_staged(ctx: &Ctx<'_>, group: &str) -> Result<bool> {
    ctx.tx
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM candidates WHERE group_hash = ?2 AND group_key = ?1 \
             AND status = 'staged')",
        )
        .and_then(|mut s| s.query_row(params![group, group_hash(group)], |r| r.get(0)))
        .ctx("reading a claim")
}

fn live_triple(ctx: &Ctx<'_>, group: &str) -> Result<Option<i64>> {
    ctx.tx
        .prepare_cached(
            "SELECT id FROM triples WHERE group_hash = ?2 AND group_key = ?1 AND retired_at IS NULL \
             ORDER BY id LIMIT 1",
        )
        .and_then(|mut s| s.query_row(params![group, group_hash(group)], |r| r.get(0)).optional())
        .ctx("reading a claim's edge")
}

struct ClaimRow {
    provenance: i64,
    subject: String,
    predicate: String,
    object: String,
    source: String,
    chunk: String,
    valid_from: Option<Millis>,
    valid_to: Option<Millis>,
}

/// Makes a claim canonical: resolves its names to entities, inserts the edge (or finds the
/// one promoted earlier), applies the contradiction rule, and marks its candidates promoted.
pub(crate) fn promote_group(ctx: &mut Ctx<'_>, group: &str, at: Millis) -> Result<i64> {
    let triple = match live_triple(ctx, group)? {
        Some(existing) => existing,
        None => insert_triple(ctx, group, at)?,
    };
    ctx.tx
        .prepare_cached(
            "UPDATE candidates SET status = 'promoted', triple_id = ?2, decided_at = ?3, reason = NULL \
             WHERE group_hash = ?4 AND group_key = ?1 AND status != 'promoted'",
        )
        .and_then(|mut s| s.execute(params![group, triple, at, group_hash(group)]))
        .ctx("promoting candidates")?;
    Ok(triple)
}

fn insert_triple(ctx: &mut Ctx<'_>, group: &str, at: Millis) -> Result<i64> {
    // The claim's first candidate is its provenance; a rejected claim a person promotes
    // anyway has only rejected rows, so those count too.
    let row = ctx
        .tx
        .prepare_cached(
            "SELECT id, subject, predicate, object, source, chunk, valid_from, valid_to \
             FROM candidates WHERE group_hash = ?2 AND group_key = ?1 \
             ORDER BY status != 'staged', id LIMIT 1",
        )
        .and_then(|mut s| {
            s.query_row(params![group, group_hash(group)], |r| {
                Ok(ClaimRow {
                    provenance: r.get(0)?,
                    subject: r.get(1)?,
                    predicate: r.get(2)?,
                    object: r.get(3)?,
                    source: r.get(4)?,
                    chunk: r.get(5)?,
                    valid_from: r.get(6)?,
                    valid_to: r.get(7)?,
                })
            })
            .optional()
        })
        .ctx("reading a claim")?
        .ok_or_else(|| MemoryError::NotFound(format!("no candidates for claim {group:?}")))?;
    let candidate = crate::model::NewCandidate {
        subject: row.subject.clone(),
        predicate: row.predicate.clone(),
        object: row.object.clone(),
        provenance: crate::model::Provenance {
            source: row.source.clone(),
            chunk: row.chunk.clone(),
            extractor: String::new(),
            run_id: String::new(),
        },
        valid_from: row.valid_from,
        valid_to: row.valid_to,
    };
    // A person may promote a claim the verifiers rejected, never one the ontology refuses.
    if let Some(reason) = ctx.config.ontology.violation(&candidate) {
        return Err(MemoryError::Refused(format!(
            "candidate {} cannot become a fact: {reason}",
            row.provenance
        )));
    }
    let s = ctx.entity_for(&row.subject, at)?;
    let o = ctx.entity_for(&row.object, at)?;
    let p = ctx.predicate_for(&row.predicate)?;
    let chunk = ctx.chunk_for(&row.source, &row.chunk)?;
    let id = ctx.edge_count();
    // Contradictions: for a functional predicate, the fact that began later stands; the
    // other one's validity is closed where the later one began (never deleted).
    let mut valid_to = row.valid_to;
    let mut closed_by: Option<i64> = None;
    if ctx
        .config
        .ontology
        .functional
        .contains(&predicate_key(&row.predicate))
    {
        for old in ctx.current_with(s, p) {
            let Some(old_rec) = ctx.edge(old) else {
                continue;
            };
            if old_rec.o == o {
                continue;
            }
            let old_from: Option<Millis> = ctx
                .tx
                .prepare_cached("SELECT valid_from FROM triples WHERE id = ?1")
                .and_then(|mut st| st.query_row([old], |r| r.get(0)))
                .ctx("reading a contradicted fact")?;
            let new_from = row.valid_from.unwrap_or(at);
            if old_from.unwrap_or(Millis::MIN) <= new_from {
                ctx.tx
                    .prepare_cached(
                        "UPDATE triples SET valid_to = ?2, closed_by = ?3 WHERE id = ?1",
                    )
                    .and_then(|mut st| st.execute(params![old, new_from, id]))
                    .ctx("closing a contradicted fact")?;
                ctx.make_uncurrent(old);
            } else {
                // The incoming fact is the older one: it is stored closed.
                valid_to = Some(old_from.unwrap_or(new_from));
                closed_by = Some(i64::from(old));
            }
        }
    }
    ctx.tx
        .prepare_cached(
            "INSERT INTO triples (id, subject, predicate, object, provenance, group_key, valid_from, \
             valid_to, learned_at, retired_at, closed_by, group_hash, chunk) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, NULL, ?10, ?11, ?12)",
        )
        .and_then(|mut st| {
            st.execute(params![
                id,
                s,
                p,
                o,
                row.provenance,
                group,
                row.valid_from,
                valid_to,
                at,
                closed_by,
                group_hash(group),
                chunk
            ])
        })
        .ctx("inserting a fact")?;
    let current = valid_to.is_none();
    ctx.push_edge(
        id,
        EdgeRec {
            s,
            p,
            o,
            chunk,
            provenance: row.provenance,
            current,
        },
    );
    Ok(i64::from(id))
}

fn reject_group(ctx: &Ctx<'_>, group: &str, reason: &str, at: Millis) -> Result<()> {
    ctx.tx
        .prepare_cached(
            "UPDATE candidates SET status = 'rejected', reason = ?2, decided_at = ?3 \
             WHERE group_hash = ?4 AND group_key = ?1 AND status = 'staged'",
        )
        .and_then(|mut s| s.execute(params![group, reason, at, group_hash(group)]))
        .ctx("rejecting candidates")?;
    Ok(())
}

fn retire(ctx: &mut Ctx<'_>, triple: i64, at: Millis) -> Result<()> {
    ctx.tx
        .prepare_cached("UPDATE triples SET retired_at = ?2 WHERE id = ?1")
        .and_then(|mut s| s.execute(params![triple, at]))
        .ctx("retiring a fact")?;
    let id = u32::try_from(triple).map_err(|_| MemoryError::Capacity("edges"))?;
    ctx.make_uncurrent(id);
    Ok(())
}
