//! Findings as rustc-style text (`error[AG114]: …` with the source line and a caret) and
//! as the `{"documents":[…]}` JSON contract of `weft validate --json`.

use super::snippet;
use crate::input::{Input, is_refusal};
use anstyle::{AnsiColor, Style};
use serde::Serialize;
use std::collections::HashMap;
use weft_ags::load::TextIndex;
use weft_ags::{Code, Finding, Severity};

const ERROR: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default().bold();
const INFO: Style = AnsiColor::Cyan.on_default().bold();
const REFUSAL: Style = AnsiColor::Magenta.on_default().bold();
const DIM: Style = AnsiColor::Blue.on_default().bold();
const BOLD: Style = Style::new().bold();

fn style_of(sev: Severity) -> Style {
    match sev {
        Severity::Error => ERROR,
        Severity::Warning => WARNING,
        Severity::Refusal => REFUSAL,
        Severity::Info => INFO,
    }
}

/// Advice of one shape (same code, same message but for names and numbers) printed in full
/// before the rest of its group is summarised in a note.
const GROUP_FROM: usize = 4;

/// Locations a group's note lists after its first finding.
const GROUP_LOCATIONS: usize = 3;

/// Renders every finding of one document, with the offending source line when known (a
/// window of it on a long line: `super::snippet`). Repeated advice (warnings and advice of
/// one shape, [`GROUP_FROM`] or more) is shown once, with a note that counts the rest and
/// lists the first few locations; errors and refusals are each shown.
pub fn human(input: &Input) -> String {
    // One index per document: looking each finding's line up by scanning from the top
    // would make rendering quadratic on documents with thousands of findings.
    let index = input
        .document
        .as_ref()
        .map(|d| TextIndex::new(&d.source.text));
    let groups = Groups::of(&input.findings);
    let mut out = String::new();
    for (i, f) in input.findings.iter().enumerate() {
        let rest = match groups.role(i) {
            Role::Alone => None,
            Role::Leads(rest) => Some(rest),
            Role::Follows => continue,
        };
        finding(&mut out, input, index.as_ref(), f);
        if let Some(rest) = rest {
            group_note(&mut out, input, f, rest);
        }
        out.push('\n');
    }
    for r in &input.references {
        let (label, style) = if is_refusal(r) {
            ("refusal", REFUSAL)
        } else {
            ("error", ERROR)
        };
        let code = r
            .code
            .as_deref()
            .map_or(String::new(), |c| format!("[{c}]"));
        out.push_str(&format!(
            "{style}{label}{code}{style:#}{BOLD}: {}{BOLD:#}\n",
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

/// One finding: the headline, the location, the excerpt with its caret, the help.
fn finding(out: &mut String, input: &Input, index: Option<&TextIndex<'_>>, f: &Finding) {
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
    if let (Some(line), Some(col), Some(index)) = (f.line, f.column, index)
        && let (Some(src), Some(start), Some(at)) = (
            index.line(line),
            index.line_start(line),
            index.byte_of(line, col),
        )
    {
        let shown = snippet::excerpt(src, at - start);
        let num = line.to_string();
        let pad = " ".repeat(num.len());
        out.push_str(&format!("  {DIM}{pad} |{DIM:#}\n"));
        out.push_str(&format!("  {DIM}{num} |{DIM:#} {}\n", shown.text));
        out.push_str(&format!(
            "  {DIM}{pad} |{DIM:#} {}{s}^{s:#}\n",
            shown.caret_pad
        ));
    }
    if let Some(help) = &f.help {
        out.push_str(&format!("  {DIM}= help:{DIM:#} {help}\n"));
    }
}

/// The note under the first finding of a group: how many more, and where the first few are.
fn group_note(out: &mut String, input: &Input, first: &Finding, rest: &[usize]) {
    let at: Vec<String> = rest
        .iter()
        .take(GROUP_LOCATIONS)
        .filter_map(|&i| input.findings.get(i))
        .map(|f| {
            let pointer = if f.pointer.is_empty() {
                String::new()
            } else {
                format!(" ({})", f.pointer)
            };
            match (f.line, f.column) {
                (Some(l), Some(c)) => format!("{l}:{c}{pointer}"),
                _ => pointer.trim_start().to_string(),
            }
        })
        .collect();
    let more = rest.len().saturating_sub(at.len());
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    let kind = match first.severity {
        Severity::Info => "advice",
        _ => "warnings",
    };
    out.push_str(&format!(
        "  {DIM}= note:{DIM:#} {} more {kind} like this ({}), at {}{tail}; `--json` lists each\n",
        rest.len(),
        first.code,
        at.join(", ")
    ));
}

/// How a finding takes part in the grouping of repeated advice.
enum Role<'g> {
    /// Printed on its own.
    Alone,
    /// The first of a group: printed, then a note about the rest (indices into findings).
    Leads(&'g [usize]),
    /// Summarised in its group's note.
    Follows,
}

/// Groups of repeated advice: findings of one code whose messages differ only in quoted
/// names and numbers, [`GROUP_FROM`] or more of them. Errors and refusals never group.
struct Groups {
    /// Per finding: the index of its group in `members`, when it belongs to one.
    group_of: Vec<Option<usize>>,
    /// Per group: its findings, in order.
    members: Vec<Vec<usize>>,
}

impl Groups {
    fn of(findings: &[Finding]) -> Groups {
        let mut by_shape: HashMap<(Code, String), usize> = HashMap::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut group_of = vec![None; findings.len()];
        for (i, f) in findings.iter().enumerate() {
            if !matches!(f.severity, Severity::Warning | Severity::Info) {
                continue;
            }
            let next = members.len();
            let g = *by_shape.entry((f.code, shape(&f.message))).or_insert(next);
            if g == next {
                members.push(Vec::new());
            }
            if let Some(m) = members.get_mut(g) {
                m.push(i);
            }
            if let Some(slot) = group_of.get_mut(i) {
                *slot = Some(g);
            }
        }
        Groups { group_of, members }
    }

    fn role(&self, i: usize) -> Role<'_> {
        let Some(m) = self
            .group_of
            .get(i)
            .copied()
            .flatten()
            .and_then(|g| self.members.get(g))
        else {
            return Role::Alone;
        };
        match m.split_first() {
            Some((_, rest)) if m.len() >= GROUP_FROM => {
                if m.first() == Some(&i) {
                    Role::Leads(rest)
                } else {
                    Role::Follows
                }
            }
            _ => Role::Alone,
        }
    }
}

/// A message with what differs between findings of one kind blanked: text in quotes
/// (`'…'`, `` `…` ``, `"…"`) and runs of digits.
fn shape(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut quote: Option<char> = None;
    let mut in_digits = false;
    for c in message.chars() {
        if let Some(q) = quote {
            if c == q {
                out.push(c);
                quote = None;
            }
            continue;
        }
        if matches!(c, '\'' | '`' | '"') {
            out.push(c);
            out.push('_');
            quote = Some(c);
            in_digits = false;
        } else if c.is_ascii_digit() {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

/// Counts by severity.
#[derive(Default, Clone, Copy)]
pub struct Tally {
    pub errors: usize,
    pub warnings: usize,
    pub advice: usize,
    /// weft's refusals (WF1xx): the document is valid AGS, weft will not run it.
    pub refusals: usize,
}

impl Tally {
    pub fn of(findings: &[Finding]) -> Tally {
        let mut t = Tally::default();
        for f in findings {
            match f.severity {
                Severity::Error => t.errors += 1,
                Severity::Warning => t.warnings += 1,
                Severity::Info => t.advice += 1,
                Severity::Refusal => t.refusals += 1,
            }
        }
        t
    }

    /// The findings of a document, plus its reference problems (errors and refusals).
    pub fn of_input(input: &Input) -> Tally {
        let mut t = Tally::of(&input.findings);
        let refused = input.references.iter().filter(|r| is_refusal(r)).count();
        t.refusals += refused;
        t.errors += input.references.len() - refused;
        t
    }

    pub fn add(&mut self, other: Tally) {
        self.errors += other.errors;
        self.warnings += other.warnings;
        self.advice += other.advice;
        self.refusals += other.refusals;
    }

    /// `2 errors, 1 warning, 3 advice, 1 refusal`
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
        if self.refusals > 0 {
            parts.push(plural(self.refusals, "refusal"));
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
    /// The spec's verdict: no error (weft's refusals aside).
    valid: bool,
    /// Valid, and nothing weft refuses: `weft run` would take it.
    runnable: bool,
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
    /// `error`, or `refusal` for weft's own (WF1xx).
    severity: &'static str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    help: Option<&'a str>,
}

/// The `--json` report: `{"documents":[{"path","ok","valid","runnable","findings":[…]}]}`,
/// written to `out` as it is serialised (10,000 findings are 3.9 MB of text: not built as
/// one string first), then a newline.
pub fn write_json(inputs: &[(Input, bool)], out: &mut impl std::io::Write) -> std::io::Result<()> {
    let report = JsonReport {
        documents: inputs
            .iter()
            .map(|(input, ok)| JsonDocument {
                path: &input.path,
                ok: *ok,
                valid: input.is_valid(),
                runnable: input.is_valid() && input.refusal_codes().is_empty(),
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
                        severity: if is_refusal(r) {
                            Severity::Refusal.as_str()
                        } else {
                            Severity::Error.as_str()
                        },
                        message: &r.message,
                        help: r.help.as_deref(),
                    })
                    .collect(),
            })
            .collect(),
    };
    serde_json::to_writer_pretty(&mut *out, &report)?;
    writeln!(out)
}
