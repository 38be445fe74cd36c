//! `weft validate`: every document, every finding, one pass; exit 0 / 1 / 2.

use crate::input::{Input, check_references, load_and_validate};
use crate::render::findings::{self, Tally};
use anstyle::{AnsiColor, Style};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use weft_ags::{Severity, levels};

pub struct Options {
    pub quiet: bool,
    pub strict: bool,
    pub pedantic: bool,
    pub json: bool,
    pub level: Option<u8>,
    pub max_bytes: usize,
    pub files: Vec<PathBuf>,
}

/// Does this document pass under the options? Errors fail it; weft's refusals (a valid
/// document weft will not run) fail it only under `--strict`, like warnings.
fn passes(input: &Input, opts: &Options) -> bool {
    input.is_valid()
        && (input.refusal_codes().is_empty() || !opts.strict)
        && input.findings.iter().all(|f| match f.severity {
            Severity::Error => false,
            Severity::Warning | Severity::Refusal => !opts.strict,
            Severity::Info => !opts.pedantic,
        })
}

/// Files to validate: each argument, with directories expanded (recursively, sorted) to the
/// AGS documents they contain (`*.agraph.yaml`, `*.agraph.yml`, `*.agraph.json`). Unlike
/// the reference validator, other JSON/YAML files in a directory are not taken for graphs.
fn expand(paths: &[PathBuf]) -> Vec<PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            out.push(dir.to_path_buf()); // reported as unreadable by the loader
            return;
        };
        let mut children: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        children.sort();
        for child in children {
            if child.is_dir() {
                walk(&child, out);
            } else if child.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.ends_with(".agraph.yaml")
                    || n.ends_with(".agraph.yml")
                    || n.ends_with(".agraph.json")
            }) {
                out.push(child);
            }
        }
    }
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() != "-" && p.is_dir() {
            walk(p, &mut out);
        } else {
            out.push(p.clone());
        }
    }
    out
}

pub fn run(opts: &Options) -> anyhow::Result<ExitCode> {
    let mut results: Vec<(Input, bool)> = Vec::new();
    for file in &expand(&opts.files) {
        let mut input = load_and_validate(file, opts.max_bytes);
        check_references(&mut input, file);
        if let (Some(level), Some(doc)) = (opts.level, &input.document)
            && let Some(root) = doc.value.as_object()
        {
            let mut refused = levels::refuse_above(root, level);
            weft_ags::load::locate(&doc.source, &mut refused);
            input.findings.extend(refused);
            weft_ags::validate::sort_findings(&mut input.findings);
        }
        let ok = passes(&input, opts);
        results.push((input, ok));
    }
    let mut total = Tally::default();
    for (input, _) in &results {
        total.add(Tally::of_input(input));
    }
    if opts.json {
        // JSON has no colours to strip: written straight to stdout, buffered.
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        findings::write_json(&results, &mut out)?;
        out.flush()?;
    } else {
        let mut stdout = anstream::stdout().lock();
        for (input, ok) in &results {
            let tally = Tally::of_input(input);
            if opts.quiet && *ok {
                continue;
            }
            if !opts.quiet {
                write!(stdout, "{}", findings::human(input))?;
            }
            let (word, style) = if !ok {
                ("FAIL", AnsiColor::Red.on_default().bold())
            } else if tally.warnings + tally.advice + tally.refusals > 0 {
                ("WARN", AnsiColor::Yellow.on_default().bold())
            } else {
                ("OK", AnsiColor::Green.on_default().bold())
            };
            // The spec's verdict and weft's refusal are different facts: say both.
            let refused = input.refusal_codes();
            let verdict = if input.is_valid() && !refused.is_empty() {
                format!(
                    ": valid AGS, but weft will not run it ({})",
                    refused.join(", ")
                )
            } else {
                String::new()
            };
            writeln!(
                stdout,
                "{style}{word}{style:#} {} ({}){verdict}",
                input.path,
                tally.describe()
            )?;
        }
        if results.len() > 1 || opts.quiet {
            let bold = Style::new().bold();
            writeln!(
                stdout,
                "{bold}{} documents{bold:#}: {}",
                results.len(),
                total.describe()
            )?;
        }
    }
    let code = if total.errors > 0 {
        1
    } else if results.iter().any(|(_, ok)| !ok) {
        2
    } else {
        0
    };
    // The process exits next: freeing every parsed value and finding one by one (hundreds
    // of thousands of small allocations on a 10,000-node document) would only delay it.
    std::mem::forget(results);
    Ok(ExitCode::from(code))
}
