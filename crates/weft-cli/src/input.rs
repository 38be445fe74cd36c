//! Reading one document for a command: load, then (optionally) validate, with every finding
//! positioned in the source.

use std::path::Path;
use weft_ags::load::{Document, Limits, read_file};
use weft_ags::{Code, Finding, Severity};
use weft_engine::refs::{RefOptions, RefProblem, load_refs};

/// A document as a command sees it.
pub struct Input {
    /// The path as given on the command line.
    pub path: String,
    /// The parsed document, when it could be loaded.
    pub document: Option<Document>,
    /// Loader findings, then validator findings.
    pub findings: Vec<Finding>,
    /// Problems with the documents its `subgraph.ref`s name that are positioned in those
    /// documents or are errors (a pin that does not match, a child that is not valid),
    /// filled by [`check_references`]. weft's refusals of this document's own refs (WF1xx)
    /// are findings instead.
    pub references: Vec<RefProblem>,
}

impl Input {
    /// Does any finding have error severity, or any reference an error?
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(Finding::is_error)
            || self.references.iter().any(|r| !is_refusal(r))
    }

    /// Is the document valid AGS (the spec's verdict: no error, weft's refusals aside)?
    pub fn is_valid(&self) -> bool {
        !self.has_errors()
    }

    /// The codes of weft's refusals (WF1xx) of this document and its children, each once.
    pub fn refusal_codes(&self) -> Vec<&str> {
        let mut codes: Vec<&str> = self
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Refusal)
            .map(|f| f.code.as_str())
            .chain(
                self.references
                    .iter()
                    .filter(|r| is_refusal(r))
                    .filter_map(|r| r.code.as_deref()),
            )
            .collect();
        codes.sort_unstable();
        codes.dedup();
        codes
    }
}

/// Is this reference problem weft's refusal (a WF1xx code) rather than an error?
pub fn is_refusal(problem: &RefProblem) -> bool {
    problem
        .code
        .as_deref()
        .and_then(Code::parse)
        .is_some_and(|c| c.severity() == Severity::Refusal)
}

/// Loads and checks the local `subgraph.ref` children of a valid document read from a
/// file (`weft_engine::refs`). The boundary is the current directory when the document is
/// inside it, else the document's own directory: a child may never reach outside it.
pub fn check_references(input: &mut Input, file: &Path) {
    let Some(doc) = &input.document else {
        return;
    };
    if input.path == "-" || input.has_errors() {
        return;
    }
    let absolute = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
    let here = std::env::current_dir().and_then(|d| d.canonicalize()).ok();
    let boundary = match here {
        Some(dir) if absolute.starts_with(&dir) => dir,
        _ => absolute
            .parent()
            .map_or_else(|| Path::new(".").to_path_buf(), Path::to_path_buf),
    };
    let Err(problems) = load_refs(file, doc, &RefOptions::new(boundary)) else {
        return;
    };
    // weft's refusals of this document's own refs are findings of the document, positioned
    // in it; everything else (errors, problems inside a child) stays a reference problem.
    let (own, other): (Vec<RefProblem>, Vec<RefProblem>) = problems
        .into_iter()
        .partition(|p| p.file == file && is_refusal(p));
    for p in own {
        let Some(code) = p.code.as_deref().and_then(Code::parse) else {
            continue;
        };
        let mut finding = Finding::new(code, p.pointer, p.message).at(p.line, p.column);
        finding.help = p.help;
        input.findings.push(finding);
    }
    weft_ags::validate::sort_findings(&mut input.findings);
    input.references = other;
}

/// Loads `path`; an unreadable file becomes an AG001 finding so that it is reported like any
/// other broken document (exit 1), never a crash.
pub fn load(path: &Path, max_bytes: usize) -> Input {
    let limits = Limits {
        max_bytes,
        ..Limits::default()
    };
    let shown = path.display().to_string();
    // `-` is standard input; its format is sniffed from the content.
    let read = if shown == "-" {
        weft_ags::load::read_from("-", std::io::stdin().lock(), None, &limits)
    } else {
        read_file(path, &limits)
    };
    match read {
        Ok(loaded) => Input {
            path: shown,
            document: loaded.document,
            findings: loaded.findings,
            references: Vec::new(),
        },
        Err(e) => Input {
            path: shown.clone(),
            document: None,
            findings: vec![
                Finding::new(Code::AG001, "", format!("cannot read {shown}: {e}"))
                    .help("check the path and its permissions"),
            ],
            references: Vec::new(),
        },
    }
}

/// Loads and validates `path`.
pub fn load_and_validate(path: &Path, max_bytes: usize) -> Input {
    let mut input = load(path, max_bytes);
    if let Some(doc) = &input.document {
        input
            .findings
            .extend(weft_ags::validate::validate_document(doc));
    }
    input
}
