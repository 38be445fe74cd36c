//! Findings as rustc-style text (`error[AG114]: …` with the source line and a caret) and
//! as the `{"documents":[…]}` JSON contract of `weft validate --json`.

use crate::input::Input;
use anstyle::{AnsiColor, Style};
use serde::Serialize;
use weft_ags::{Finding, Severity};

const ERROR: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default().bold();
const INFO: Style = AnsiColor::Cyan.on_default().bold();
const DIM: Style = AnsiColor::Blue.on_default().bold();
const BOLD: Style = Style::new().bold();

fn style_of(sev: Severity) -> Style {
    match sev {
        Severity::Error => ERROR,
        Severity::Warning => WARNING,
        Severity::Info => INFO,
    }
}

/// Renders every finding of one document, with the offending source line when known.
pub fn human(input: &Input) -> String {
    let source = input.document.as_ref().map(|d| d.source.text.as_str());
    // Line starts once per document: looking each finding's line up by scanning from the
    // top would make rendering quadratic on documents with thousands of findings.
    let line_starts: Vec<usize> = source
        .map(|t| {
            std::iter::once(0)
                .chain(t.match_indices('\n').map(|(i, _)| i + 1))
                .collect()
        })
        .unwrap_or_default();
    let line_text = |line: u32| -> Option<&str> {
        let text = source?;
        let start = *line_starts.get((line as usize).checked_sub(1)?)?;
        let end = line_starts
            .get(line as usize)
            .map_or(text.len(), |&e| e.saturating_sub(1));
        text.get(start..end)
    };
    let mut out = String::new();
    for f in &input.findings {
        let s = style_of(f.severity);
        let label = match f.severity {
            Severity::Info => "advice",
            other => other.as_str(),
        };
        out.push_str(&format!(
            "{s}{label}[{}]{s:#}{BOLD}: {}{BOLD:#}\n",
            f.code, f.message
        ));
        let location = match (f.line, f.column) {
            (Some(l), Some(c)) => format!("{}:{l}:{c}", input.path),
            _ => input.path.clone(),
        };
        let pointer = if f.pointer.is_empty() {
            String::new()
        } else {
            format!(" ({})", f.pointer)
        };
        out.push_str(&format!("  {DIM}-->{DIM:#} {location}{pointer}\n"));
        if let (Some(line), Some(col)) = (f.line, f.column)
            && let Some(src) = line_text(line)
        {
            let num = line.to_string();
            let pad = " ".repeat(num.len());
            let caret_pad: String = src
                .chars()
                .take(col.saturating_sub(1) as usize)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            out.push_str(&format!("  {DIM}{pad} |{DIM:#}\n"));
            out.push_str(&format!("  {DIM}{num} |{DIM:#} {}\n", src.trim_end()));
            out.push_str(&format!("  {DIM}{pad} |{DIM:#} {caret_pad}{s}^{s:#}\n"));
        }
        if let Some(help) = &f.help {
            out.push_str(&format!("  {DIM}= help:{DIM:#} {help}\n"));
        }
        out.push('\n');
    }
    for r in &input.references {
        let code = r
            .code
            .as_deref()
            .map_or(String::new(), |c| format!("[{c}]"));
        out.push_str(&format!(
            "{ERROR}error{code}{ERROR:#}{BOLD}: {}{BOLD:#}\n",
            r.message
        ));
        let pointer = if r.pointer.is_empty() {
            String::new()
        } else {
            format!(" ({})", r.pointer)
        };
        out.push_str(&format!(
            "  {DIM}-->{DIM:#} {}:{}:{}{pointer}\n",
            r.file.display(),
            r.line,
            r.column
        ));
        if let Some(help) = &r.help {
            out.push_str(&format!("  {DIM}= help:{DIM:#} {help}\n"));
        }
        out.push('\n');
    }
    out
}

/// Counts by severity.
#[derive(Default, Clone, Copy)]
pub struct Tally {
    pub errors: usize,
    pub warnings: usize,
    pub advice: usize,
}

impl Tally {
    pub fn of(findings: &[Finding]) -> Tally {
        let mut t = Tally::default();
        for f in findings {
            match f.severity {
                Severity::Error => t.errors += 1,
                Severity::Warning => t.warnings += 1,
                Severity::Info => t.advice += 1,
            }
        }
        t
    }

    /// The findings of a document, plus its reference problems (errors).
    pub fn of_input(input: &Input) -> Tally {
        let mut t = Tally::of(&input.findings);
        t.errors += input.references.len();
        t
    }

    pub fn add(&mut self, other: Tally) {
        self.errors += other.errors;
        self.warnings += other.warnings;
        self.advice += other.advice;
    }

    /// `2 errors, 1 warning, 3 advice`
    pub fn describe(&self) -> String {
        let plural = |n: usize, word: &str| {
            if n == 1 {
                format!("{n} {word}")
            } else {
                format!("{n} {word}s")
            }
        };
        let mut parts = vec![
            plural(self.errors, "error"),
            plural(self.warnings, "warning"),
        ];
        if self.advice > 0 {
            parts.push(format!("{} advice", self.advice));
        }
        parts.join(", ")
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    documents: Vec<JsonDocument<'a>>,
}

#[derive(Serialize)]
struct JsonDocument<'a> {
    path: &'a str,
    ok: bool,
    findings: &'a [Finding],
    /// Problems with the documents its `subgraph.ref`s name; omitted when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    references: Vec<JsonReference<'a>>,
}

#[derive(Serialize)]
struct JsonReference<'a> {
    file: String,
    line: u32,
    column: u32,
    pointer: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'a str>,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    help: Option<&'a str>,
}

/// The `--json` report: `{"documents":[{"path","ok","findings":[…]}]}`.
pub fn json(inputs: &[(Input, bool)]) -> String {
    let report = JsonReport {
        documents: inputs
            .iter()
            .map(|(input, ok)| JsonDocument {
                path: &input.path,
                ok: *ok,
                findings: &input.findings,
                references: input
                    .references
                    .iter()
                    .map(|r| JsonReference {
                        file: r.file.display().to_string(),
                        line: r.line,
                        column: r.column,
                        pointer: &r.pointer,
                        code: r.code.as_deref(),
                        message: &r.message,
                        help: r.help.as_deref(),
                    })
                    .collect(),
            })
            .collect(),
    };
    serde_json::to_string_pretty(&report).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
