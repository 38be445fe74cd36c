//! `weft digest`: the graph_digest alone on stdout, so scripts can use it directly.

use crate::input::load;
use crate::render::findings;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

pub fn run(file: &Path, max_bytes: usize) -> anyhow::Result<ExitCode> {
    let input = load(file, max_bytes);
    // Any loader finding (a duplicate key, a dropped tag) means the data is ambiguous, and
    // a digest of ambiguous data would pin the wrong thing.
    match &input.document {
        Some(doc) if input.findings.is_empty() => {
            writeln!(
                anstream::stdout(),
                "{}",
                weft_ags::digest::graph_digest(&doc.value)
            )?;
            Ok(ExitCode::SUCCESS)
        }
        _ => {
            write!(anstream::stderr(), "{}", findings::human(&input))?;
            Ok(ExitCode::from(1))
        }
    }
}
