//! `weft convert --to json|yaml`: lossless, order- and `x-`-preserving conversion.

use crate::input::load;
use crate::render::findings;
use anyhow::Context;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Output format of `weft convert`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Target {
    Json,
    Yaml,
}

pub fn run(
    file: &Path,
    to: Target,
    output: Option<&Path>,
    max_bytes: usize,
) -> anyhow::Result<ExitCode> {
    let input = load(file, max_bytes);
    let Some(doc) = input
        .document
        .as_ref()
        .filter(|_| input.findings.is_empty())
    else {
        // Converting a document with loader findings would silently drop data.
        write!(anstream::stderr(), "{}", findings::human(&input))?;
        return Ok(ExitCode::from(1));
    };
    let text = match to {
        Target::Json => weft_ags::load::to_json_pretty(&doc.value),
        Target::Yaml => weft_ags::load::to_yaml(&doc.value),
    };
    match output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => write!(std::io::stdout(), "{text}")?,
    }
    Ok(ExitCode::SUCCESS)
}
