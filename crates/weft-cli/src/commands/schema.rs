//! `weft schema`: the JSON Schemas weft embeds (AGS 1.0.1, Apache-2.0).

use std::io::Write;
use std::process::ExitCode;

const RUN_RECORD_SCHEMA: &str =
    include_str!("../../../weft-ags/schema/agentic-graph-run-1.0.schema.json");

pub fn run(run_record: bool) -> anyhow::Result<ExitCode> {
    let text = if run_record {
        RUN_RECORD_SCHEMA
    } else {
        weft_ags::validate::GRAPH_SCHEMA
    };
    write!(std::io::stdout(), "{text}")?;
    Ok(ExitCode::SUCCESS)
}
