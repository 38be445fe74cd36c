//! `weft status [RUN]`: a stored run's status and node states (without RUN, the store's
//! latest run), read from its run record (so from the event log, never from a live process). `--json` prints
//! `{run_id, status, started_at, finished_at?, nodes: [{id, status, attempts, refused_calls?}], waiting?,
//! suspended?}` (`waiting`: the `gate_waiting` payloads of the nodes that wait on a person;
//! `suspended: true` when no driver runs it and `weft resume` continues it).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde_json::{Value, json};

use super::record::open_store;

pub fn run(run_id: Option<&str>, db: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let Some(store) = open_store(db)? else {
        return Ok(ExitCode::from(1));
    };
    let Some(run_id) = super::record::run_or_latest(&*store, run_id, db)? else {
        return Ok(ExitCode::from(1));
    };
    render(&*store, &run_id, db, json)
}

/// Prints the status of `run_id` as read from `store` now (`--watch` calls it again).
pub fn render(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    db: &Path,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let record = match weft_engine::record::record_of(store, run_id) {
        Ok(r) => r,
        Err(e) => {
            writeln!(anstream::stderr(), "error: {e}")?;
            return Ok(ExitCode::from(1));
        }
    };
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let nodes: Vec<Value> = record
        .get("nodes")
        .and_then(Value::as_array)
        .map(|ns| {
            ns.iter()
                .map(|n| {
                    let attempts = n
                        .get("attempts")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    // Inside a loop, map or subgraph: the node's address.
                    let id = n
                        .get("scope_path")
                        .map_or_else(|| text(n, "node_id"), |_| text(n, "scope_path"));
                    let mut line =
                        json!({"id": id, "status": text(n, "status"), "attempts": attempts});
                    // Tool calls the policy refused or held: a success after refusals says so.
                    let refused = n
                        .get("x-weft-refused_calls")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    if refused > 0 {
                        line["refused_calls"] = json!(refused);
                    }
                    line
                })
                .collect()
        })
        .unwrap_or_default();
    // What waits on a person right now (open waits of the log).
    let waiting: Vec<weft_engine::human::Waiting> = weft_engine::human::waits_of(store, run_id)
        .map(|ws| {
            ws.into_iter()
                .filter(|w| w.is_open())
                .map(|w| w.waiting)
                .collect()
        })
        .unwrap_or_default();
    // Suspended with nothing waiting: the decisions the run waited for are recorded, and
    // only a resume applies them (no driver is running it).
    let suspended = {
        store
            .get_run(run_id)
            .ok()
            .flatten()
            .is_some_and(|r| r.status == weft_store::RunStatus::Suspended)
    };
    let decided = suspended && waiting.is_empty() && text(&record, "status") == "running";
    let mut out = anstream::stdout();
    if json {
        let mut s = json!({
            "run_id": run_id,
            "status": text(&record, "status"),
            "started_at": text(&record, "started_at"),
            "nodes": nodes,
        });
        if let Value::Object(m) = &mut s {
            if let Some(f) = record.get("finished_at") {
                m.insert("finished_at".into(), f.clone());
            }
            if !waiting.is_empty() {
                m.insert("waiting".into(), serde_json::to_value(&waiting)?);
            }
            if suspended {
                m.insert("suspended".into(), Value::Bool(true));
            }
        }
        writeln!(out, "{s}")?;
    } else {
        writeln!(out, "run_id: {run_id}")?;
        // Columns as wide as their longest entry (`awaiting_human` is 14), at least 24 / 10.
        let width = |k: &str, min: usize| {
            nodes
                .iter()
                .map(|n| text(n, k).chars().count())
                .max()
                .unwrap_or(0)
                .max(min)
        };
        let (id_width, status_width) = (width("id", 24), width("status", 10));
        for n in &nodes {
            let refused = match n.get("refused_calls").and_then(Value::as_u64) {
                Some(1) => ", 1 tool call refused".to_string(),
                Some(k) => format!(", {k} tool calls refused"),
                None => String::new(),
            };
            writeln!(
                out,
                "  {:<id_width$} {:<status_width$} attempts {}{refused}",
                text(n, "id"),
                text(n, "status"),
                n["attempts"]
            )?;
        }
        writeln!(out, "status: {}", text(&record, "status"))?;
        if decided {
            writeln!(
                out,
                "suspended: the decisions it waited for are recorded; `weft resume {run_id}` applies them"
            )?;
        }
        if !waiting.is_empty() {
            super::waiting::print(&mut out, run_id, db, &waiting)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
