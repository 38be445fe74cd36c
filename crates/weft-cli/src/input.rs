//! Reading one document for a command: load, then (optionally) validate, with every finding
//! positioned in the source.

use std::path::Path;
use weft_ags::load::{Document, Limits, read_file};
use weft_ags::{Code, Finding};

/// A document as a command sees it.
pub struct Input {
    /// The path as given on the command line.
    pub path: String,
    /// The parsed document, when it could be loaded.
    pub document: Option<Document>,
    /// Loader findings, then validator findings.
    pub findings: Vec<Finding>,
}

impl Input {
    /// Does any finding have error severity?
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(Finding::is_error)
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
        },
        Err(e) => Input {
            path: shown.clone(),
            document: None,
            findings: vec![
                Finding::new(Code::AG001, "", format!("cannot read {shown}: {e}"))
                    .help("check the path and its permissions"),
            ],
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
