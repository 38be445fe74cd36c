//! `weft status [RUN]`: a stored run's status and node states (without RUN, the store's
//! latest run), read from its log (never from a live process): `weft_host::status_report`,
//! every line of it from the run view (`weft_host::view::RunView`). `--json` prints
//! `{run_id, status, started_at, finished_at?, nodes: [{id, status, attempts, refused_calls?}],
//! usage, waiting?, suspended?}` (`waiting`: the `gate_waiting` payloads of the nodes that wait
//! on a person; `suspended: true` when no driver runs it and `weft resume` continues it).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;
use weft_host::StatusReport;

use super::record::open_store;

pub fn run(run_id: Option<&str>, db: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let Some(store) = open_store(db)? else {
        return Ok(ExitCode::from(1));
    };
    let Some(run_id) = super::record::run_or_latest(&*store, run_id, db)? else {
        return Ok(ExitCode::from(1));
    };
    match weft_host::status_report(&*store, &run_id) {
        Ok(report) => render(&report, db, json),
        Err(e) => {
            writeln!(anstream::stderr(), "error: {e}")?;
            Ok(ExitCode::from(1))
        }
    }
}

/// Prints `report` (`--watch` calls it again at each batch of events).
pub fn render(report: &StatusReport, db: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let run_id = report.run_id.as_str();
    let mut out = anstream::stdout();
    if json {
        writeln!(out, "{}", serde_json::to_string(report)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "run_id: {run_id}")?;
    // Columns as wide as their longest entry (`awaiting_human` is 14), at least 24 / 10.
    let id_width = crate::render::column_width(report.nodes.iter().map(|n| n.id.as_str()), 24);
    let status_width =
        crate::render::column_width(report.nodes.iter().map(|n| n.status.as_str()), 10);
    for n in &report.nodes {
        let refused = match n.refused_calls {
            Some(1) => ", 1 tool call refused".to_string(),
            Some(k) => format!(", {k} tool calls refused"),
            None => String::new(),
        };
        writeln!(
            out,
            "  {:<id_width$} {:<status_width$} attempts {}{refused}",
            n.id, n.status, n.attempts
        )?;
    }
    let count = |k: &str| report.usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    if count("total_tokens") > 0 || count("tool_calls") > 0 {
        writeln!(
            out,
            "usage: {} tokens ({} in, {} out), {} tool calls, ${:.4}",
            count("total_tokens"),
            count("input_tokens"),
            count("output_tokens"),
            count("tool_calls"),
            report
                .usage
                .get("cost_usd")
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
        )?;
    }
    writeln!(out, "status: {}", report.status)?;
    if report.decided() {
        writeln!(
            out,
            "suspended: the decisions it waited for are recorded; `weft resume {run_id}` applies them"
        )?;
    }
    if !report.waiting.is_empty() {
        super::waiting::print(&mut out, run_id, db, &report.waiting)?;
    }
    Ok(ExitCode::SUCCESS)
}
