//! `weft run --dry-run`: load, validate, load the local subgraph references, check every
//! node and bind the params as a run would, and plan (order, parallel groups, worst case)
//! for the engine's level; print what would run. No store is opened or created and nothing
//! runs. Exit 0 when the run would start, 1 when it would be refused (every reason printed,
//! with its code).

use std::io::{IsTerminal as _, Write};
use std::path::Path;
use std::process::ExitCode;

use serde_json::json;
use weft_engine::{EngineError, RunOptions};

pub fn run(file: &Path, options: &RunOptions, json: bool) -> anyhow::Result<ExitCode> {
    let checked = weft_engine::load_document(file).and_then(|doc| {
        // The children a run would load, checked as a run checks them (WF1xx, RT051, ...):
        // without them a dry run would pass a document the run refuses.
        let mut options = options.clone();
        options.refs = local_refs(file, &options.project_dir)?;
        let dry = weft_engine::dry_run(&doc, &options)?;
        Ok((doc, dry))
    });
    let mut out = anstream::stdout();
    let (doc, dry) = match checked {
        Ok(x) => x,
        Err(e) => {
            let reasons = match e {
                EngineError::Refused(r) | EngineError::Invalid(r) => r,
                other => vec![other.to_string()],
            };
            if json {
                let obj = json!({"dry_run": true, "run_id": null, "status": "refused",
                                 "refusals": reasons});
                writeln!(out, "{obj}")?;
            } else {
                writeln!(out, "dry run: the run would be refused:")?;
                for r in &reasons {
                    writeln!(out, "  {r}")?;
                }
            }
            return Ok(ExitCode::from(1));
        }
    };
    let plan = doc
        .as_object()
        .map(|root| weft_ags::plan::plan_for(root, super::plan::engine_harness()));
    let root = plan.as_ref().and_then(|p| p.scopes.first());
    if json {
        let obj = json!({
            "dry_run": true,
            "run_id": null,
            "status": "would_run",
            "graph_digest": dry.graph_digest,
            "params": dry.params,
            "max_parallel": dry.max_parallel,
            "on_node_failure": dry.on_node_failure,
            "order": root.and_then(|s| s.order.clone()),
            "parallel_groups": root.map(|s| s.parallel_groups.clone()),
            "worst_case_executions": plan.as_ref().map(|p| p.worst_case_executions),
            "refusals": [],
        });
        writeln!(out, "{obj}")?;
    } else {
        writeln!(out, "dry run: nothing was run and nothing was written")?;
        if let Some(order) = root.and_then(|s| s.order.as_ref()) {
            writeln!(out, "would run: {}", order.join(" → "))?;
        }
        writeln!(
            out,
            "max parallel: {} · on node failure: {}",
            dry.max_parallel, dry.on_node_failure
        )?;
        writeln!(out, "params: {}", dry.params)?;
        if let Some(plan) = &plan {
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            write!(
                out,
                "{}",
                // A run that would start is refused nothing: the note stays empty unless the
                // plan finds features above the engine's level (then the run was refused).
                crate::plan_view::render(plan, &dry.graph_digest, color, &[])
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The local `subgraph.ref` children of `file`, loaded and checked as `weft run` does, with
/// the project directory as the boundary; every problem refuses the run.
fn local_refs(
    file: &Path,
    project_dir: &Path,
) -> Result<Vec<weft_engine::refs::ChildRef>, EngineError> {
    let loaded = weft_ags::load::read_file(file, &weft_ags::load::Limits::default())
        .map_err(|e| EngineError::Read(format!("{}: {e}", file.display())))?;
    let Some(document) = loaded.document else {
        return Err(EngineError::Read(format!(
            "{}: no document",
            file.display()
        )));
    };
    let boundary = if project_dir.as_os_str().is_empty() {
        file.parent().unwrap_or(Path::new(".")).to_path_buf()
    } else {
        project_dir.to_path_buf()
    };
    weft_engine::refs::load_refs(
        file,
        &document,
        &weft_engine::refs::RefOptions::new(boundary),
    )
    .map_err(|problems| EngineError::Refused(problems.iter().map(ToString::to_string).collect()))
}
