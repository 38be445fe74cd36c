//! `weft plan`: validate, then show how the graph would run.

use crate::input::load_and_validate;
use crate::render::findings;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

pub fn run(file: &Path, json: bool, max_bytes: usize) -> anyhow::Result<ExitCode> {
    let input = load_and_validate(file, max_bytes);
    let root = input.document.as_ref().and_then(|d| d.value.as_object());
    let (Some(root), false) = (root, input.has_errors()) else {
        // Never plan a document with errors: the plan would describe a graph that cannot run.
        write!(anstream::stderr(), "{}", findings::human(&input))?;
        anstream::eprintln!("error: {} has errors; fix them before planning", input.path);
        return Ok(ExitCode::from(1));
    };
    let plan = weft_ags::plan::plan(root);
    let digest = input
        .document
        .as_ref()
        .map(|d| weft_ags::digest::graph_digest(&d.value))
        .unwrap_or_default();
    let mut stdout = std::io::stdout().lock();
    if json {
        let mut value = serde_json::to_value(&plan)?;
        if let Some(obj) = value.as_object_mut() {
            obj.insert("graph_digest".into(), serde_json::Value::String(digest));
            obj.insert("findings".into(), serde_json::to_value(&input.findings)?);
        }
        writeln!(stdout, "{}", serde_json::to_string_pretty(&value)?)?;
    } else {
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        write!(
            stdout,
            "{}",
            crate::plan_view::render(&plan, &digest, color)
        )?;
        if !input.findings.is_empty() {
            // Finish the plan before advice goes to stderr, so the two never interleave.
            stdout.flush()?;
            drop(stdout);
            write!(anstream::stderr(), "{}", findings::human(&input))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
