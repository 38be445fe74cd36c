//! Entity merges and their undo. A merge re-points the alias keys and the edges of one
//! entity to another and records exactly what it moved; undoing it puts those back.

use rusqlite::{OptionalExtension, params};

use super::ctx::Ctx;
use crate::error::{MemoryError, Result, SqliteContext};
use crate::graph::NONE;
use crate::model::{MergeReport, Millis};
use crate::normalize::entity_key;

fn entity_named(ctx: &Ctx<'_>, name: &str) -> Result<u32> {
    ctx.resolve_key(&entity_key(name))
        .ok_or_else(|| MemoryError::NotFound(format!("no entity named `{name}`")))
}

/// Merges the entity `alias` names into the one `canonical` names.
pub(crate) fn merge(
    ctx: &mut Ctx<'_>,
    alias: &str,
    canonical: &str,
    evidence: &str,
    who: &str,
    at: Millis,
) -> Result<MergeReport> {
    let from = entity_named(ctx, alias)?;
    let into = entity_named(ctx, canonical)?;
    if from == into {
        return Err(MemoryError::Refused(format!(
            "`{alias}` and `{canonical}` are already the same entity"
        )));
    }
    let edges = ctx.edges_touching(from);
    let flagged = edges.len() > ctx.config.review_threshold();
    ctx.tx
        .prepare_cached(
            "INSERT INTO merges (alias_entity, canonical_entity, evidence, by_whom, at, moved_edges, flagged) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .and_then(|mut s| s.execute(params![from, into, evidence, who, at, edges.len() as i64, flagged]))
        .ctx("recording a merge")?;
    let merge_id = ctx.tx.last_insert_rowid();
    let keys: Vec<String> = ctx
        .tx
        .prepare_cached("SELECT alias FROM aliases WHERE entity = ?1 ORDER BY alias")
        .and_then(|mut s| s.query_map([from], |r| r.get(0))?.collect())
        .ctx("reading aliases")?;
    for key in &keys {
        ctx.tx
            .prepare_cached(
                "INSERT INTO merge_aliases (merge_id, alias, old_entity) VALUES (?1, ?2, ?3)",
            )
            .and_then(|mut s| s.execute(params![merge_id, key, from]))
            .ctx("recording a moved alias")?;
        ctx.set_alias(key.clone(), into);
    }
    ctx.tx
        .prepare_cached("UPDATE aliases SET entity = ?2 WHERE entity = ?1")
        .and_then(|mut s| s.execute(params![from, into]))
        .ctx("moving aliases")?;
    for &edge in &edges {
        let Some(rec) = ctx.edge(edge) else { continue };
        let s = if rec.s == from { into } else { rec.s };
        let o = if rec.o == from { into } else { rec.o };
        ctx.tx
            .prepare_cached(
                "INSERT INTO merge_edges (merge_id, triple_id, old_subject, old_object) VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut st| st.execute(params![merge_id, edge, rec.s, rec.o]))
            .ctx("recording a moved edge")?;
        ctx.tx
            .prepare_cached("UPDATE triples SET subject = ?2, object = ?3 WHERE id = ?1")
            .and_then(|mut st| st.execute(params![edge, s, o]))
            .ctx("moving an edge")?;
        ctx.move_edge(edge, s, o);
    }
    ctx.tx
        .prepare_cached("UPDATE entities SET merged_into = ?2 WHERE id = ?1")
        .and_then(|mut s| s.execute(params![from, into]))
        .ctx("marking the merged entity")?;
    ctx.set_merged(from, into);
    Ok(MergeReport {
        merge_id,
        alias_entity: i64::from(from),
        canonical_entity: i64::from(into),
        moved_edges: edges.len(),
        moved_aliases: keys.len(),
        flagged_for_review: flagged,
    })
}

/// Undoes a merge: its aliases and edges go back exactly where they were. Refused while a
/// later merge that involves either entity is still in force (undo that one first), since
/// that merge recorded positions this undo would overwrite.
pub(crate) fn unmerge(
    ctx: &mut Ctx<'_>,
    merge_id: i64,
    who: &str,
    at: Millis,
) -> Result<MergeReport> {
    let row: Option<(u32, u32, Option<Millis>, bool)> = ctx
        .tx
        .prepare_cached(
            "SELECT alias_entity, canonical_entity, undone_at, flagged FROM merges WHERE id = ?1",
        )
        .and_then(|mut s| {
            s.query_row([merge_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()
        })
        .ctx("reading a merge")?;
    let Some((from, into, undone, flagged)) = row else {
        return Err(MemoryError::NotFound(format!("no merge {merge_id}")));
    };
    if undone.is_some() {
        return Err(MemoryError::Refused(format!(
            "merge {merge_id} is already undone"
        )));
    }
    let later: Option<i64> = ctx
        .tx
        .prepare_cached(
            "SELECT id FROM merges WHERE id > ?1 AND undone_at IS NULL AND \
             (alias_entity IN (?2, ?3) OR canonical_entity IN (?2, ?3)) ORDER BY id DESC LIMIT 1",
        )
        .and_then(|mut s| {
            s.query_row(params![merge_id, from, into], |r| r.get(0))
                .optional()
        })
        .ctx("reading later merges")?;
    if let Some(later) = later {
        return Err(MemoryError::Refused(format!(
            "merge {later} (later, still in force) involves the same entities; undo it first"
        )));
    }
    let aliases: Vec<(String, u32)> = ctx
        .tx
        .prepare_cached(
            "SELECT alias, old_entity FROM merge_aliases WHERE merge_id = ?1 ORDER BY alias",
        )
        .and_then(|mut s| {
            s.query_map([merge_id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
        .ctx("reading moved aliases")?;
    for (key, old) in &aliases {
        ctx.tx
            .prepare_cached("UPDATE aliases SET entity = ?2 WHERE alias = ?1")
            .and_then(|mut s| s.execute(params![key, old]))
            .ctx("restoring an alias")?;
        ctx.set_alias(key.clone(), *old);
    }
    let edges: Vec<(u32, u32, u32)> = ctx
        .tx
        .prepare_cached(
            "SELECT triple_id, old_subject, old_object FROM merge_edges WHERE merge_id = ?1 ORDER BY triple_id",
        )
        .and_then(|mut s| s.query_map([merge_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect())
        .ctx("reading moved edges")?;
    for &(edge, s, o) in &edges {
        ctx.tx
            .prepare_cached("UPDATE triples SET subject = ?2, object = ?3 WHERE id = ?1")
            .and_then(|mut st| st.execute(params![edge, s, o]))
            .ctx("restoring an edge")?;
        ctx.move_edge(edge, s, o);
    }
    ctx.tx
        .prepare_cached("UPDATE entities SET merged_into = NULL WHERE id = ?1")
        .and_then(|mut s| s.execute([from]))
        .ctx("restoring the merged entity")?;
    ctx.set_merged(from, NONE);
    ctx.tx
        .prepare_cached("UPDATE merges SET undone_at = ?2, undone_by = ?3 WHERE id = ?1")
        .and_then(|mut s| s.execute(params![merge_id, at, who]))
        .ctx("marking the merge undone")?;
    Ok(MergeReport {
        merge_id,
        alias_entity: i64::from(from),
        canonical_entity: i64::from(into),
        moved_edges: edges.len(),
        moved_aliases: aliases.len(),
        flagged_for_review: flagged,
    })
}
