//! Reading one document for a command: load, then (optionally) validate, with every finding
//! positioned in the source.

use std::path::Path;
use weft_ags::load::{Document, Limits, read_file};
use weft_ags::{Code, Finding};
use weft_engine::refs::{RefOptions, RefProblem, load_refs};

/// A document as a command sees it.
pub struct Input {
    /// The path as given on the command line.
    pub path: String,
    /// The parsed document, when it could be loaded.
    pub document: Option<Document>,
    /// Loader findings, then validator findings.
    pub findings: Vec<Finding>,
    /// Problems with the local documents its `subgraph.ref`s name (each an error), filled
    /// by [`check_references`].
    pub references: Vec<RefProblem>,
}

impl Input {
    /// Does any finding have error severity, or any reference a problem?
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(Finding::is_error) || !self.references.is_empty()
    }
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
    if let Err(problems) = load_refs(file, doc, &RefOptions::new(boundary)) {
        input.references = problems;
    }
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
