//! The validator's findings as feedback for the model: which must be fixed (errors and
//! warnings: the document must be clean under `--strict`; weft's WF9xx advice is not
//! required), grouped by the node their pointer is under (else the graph), each rendered
//! with its code, pointer, message and help.

use std::collections::BTreeMap;

use weft_ags::{Finding, Severity};

/// A finding `--strict` fails on.
pub fn blocking(f: &Finding) -> bool {
    matches!(f.severity, Severity::Error | Severity::Warning)
}

/// The findings to fix: by node id, and the graph's own (`None`).
pub fn by_node(findings: &[Finding]) -> BTreeMap<Option<String>, Vec<&Finding>> {
    let mut out: BTreeMap<Option<String>, Vec<&Finding>> = BTreeMap::new();
    for f in findings.iter().filter(|f| blocking(f)) {
        out.entry(node_of(&f.pointer)).or_default().push(f);
    }
    out
}

/// The node id a JSON pointer is under (`/nodes/<id>/…`), unescaped.
fn node_of(pointer: &str) -> Option<String> {
    let rest = pointer.strip_prefix("/nodes/")?;
    let id = rest.split('/').next()?;
    Some(id.replace("~1", "/").replace("~0", "~"))
}

/// One line per finding: `- AG123 at /pointer: message (help: …)`.
pub fn render(findings: &[&Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            let help = f
                .help
                .as_deref()
                .map(|h| format!(" (help: {h})"))
                .unwrap_or_default();
            format!(
                "- {} at {}: {}{help}",
                f.code.as_str(),
                if f.pointer.is_empty() {
                    "/"
                } else {
                    &f.pointer
                },
                f.message
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_ags::Code;

    #[test]
    fn findings_are_grouped_under_their_node_and_advice_is_left_out() {
        let findings = vec![
            Finding::new(Code::AG001, "/nodes/a~1b/title", "missing title"),
            Finding::new(Code::AG908, "", "no cost"),
            Finding::new(Code::WF901, "/nodes/c", "under-specified"),
        ];
        let groups = by_node(&findings);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[&Some("a/b".to_string())][0].code, Code::AG001);
        let graph = render(&groups[&None]);
        assert!(graph.starts_with("- AG908 at /: no cost"), "{graph}");
    }
}
