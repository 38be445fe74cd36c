//! `weft runs`: the runs of a store, oldest first, under a header row: id, status, creation
//! time, graph digest.
//! The status is `run_finished.status` when the log ends with it (the store row says
//! `failed` for a `partial` run, store schema v1 having no `partial`), else the row's.
//! `--json` prints `{"runs": [{run_id, status, created_at, graph_digest}]}`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde_json::{Value, json};

use super::record::open_store;

/// Enough for any store this slice produces; paging comes with the multi-run engine.
const LIMIT: usize = 100_000;

pub fn run(db: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let Some(store) = open_store(db)? else {
        return Ok(ExitCode::from(1));
    };
    let mut runs = Vec::new();
    for row in store.list_runs(None, LIMIT)? {
        let last = store.last_seq(&row.id)?;
        let finished = store
            .read(&row.id, last.max(1), 1)?
            .into_iter()
            .find(|e| e.kind == "run_finished")
            .and_then(|e| {
                e.payload
                    .get("status")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            });
        runs.push(json!({
            "run_id": row.id,
            "status": finished.unwrap_or_else(|| row.status.as_str().to_string()),
            "created_at": weft_engine::record::rfc3339_ms(row.created_at_ms),
            "graph_digest": row.graph_digest,
        }));
    }
    let mut out = anstream::stdout();
    if json {
        writeln!(out, "{}", json!({ "runs": runs }))?;
    } else if runs.is_empty() {
        writeln!(out, "no runs in {}", db.display())?;
    } else {
        let f = |r: &Value, k: &str| r[k].as_str().unwrap_or("").to_string();
        let width = |k: &str, header: &str| {
            runs.iter()
                .map(|r| f(r, k).chars().count())
                .chain([header.len()])
                .max()
                .unwrap_or(0)
        };
        let (id_w, status_w, created_w) = (
            width("run_id", "RUN"),
            width("status", "STATUS"),
            width("created_at", "CREATED"),
        );
        writeln!(
            out,
            "{:<id_w$}  {:<status_w$}  {:<created_w$}  GRAPH DIGEST",
            "RUN", "STATUS", "CREATED"
        )?;
        for r in &runs {
            writeln!(
                out,
                "{:<id_w$}  {:<status_w$}  {:<created_w$}  {}",
                f(r, "run_id"),
                f(r, "status"),
                f(r, "created_at"),
                f(r, "graph_digest")
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
