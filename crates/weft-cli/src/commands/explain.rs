//! `weft explain CODE`: the code's section of docs/diagnostics.md, embedded at build time so
//! the documentation and the binary cannot drift (a test checks every code has a section),
//! rendered for a terminal (`render::markdown`: no raw `###` or `**`).

use std::io::Write;
use std::process::ExitCode;
use weft_ags::Code;

const DIAGNOSTICS: &str = include_str!("../../../../docs/diagnostics.md");

/// The `### CODE` section of docs/diagnostics.md, if present.
pub fn section(code: Code) -> Option<&'static str> {
    let heading = format!("### {}", code.as_str());
    let start = DIAGNOSTICS.find(&heading)?;
    let rest = &DIAGNOSTICS[start..];
    let end = rest[heading.len()..]
        .find("\n### ")
        .or_else(|| rest[heading.len()..].find("\n## "))
        .map(|i| i + heading.len())
        .unwrap_or(rest.len());
    Some(rest[..end].trim_end())
}

pub fn run(code: &str) -> anyhow::Result<ExitCode> {
    let Some(parsed) = Code::parse(&code.to_ascii_uppercase()) else {
        anstream::eprintln!("error: unknown code '{code}'; codes look like AG111 or WF906");
        return Ok(ExitCode::from(2));
    };
    let text = section(parsed).unwrap_or(parsed.title());
    let text = crate::render::markdown::for_terminal(text);
    writeln!(anstream::stdout(), "{text}")?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_documented() {
        let missing: Vec<&str> = Code::ALL
            .iter()
            .filter(|c| section(**c).is_none())
            .map(|c| c.as_str())
            .collect();
        assert!(missing.is_empty(), "docs/diagnostics.md lacks: {missing:?}");
    }
}
