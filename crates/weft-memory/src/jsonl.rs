//! Candidate files: one JSON object per line (blank lines skipped). The whole file is read
//! before anything is stored, so a malformed line is reported with its number and nothing
//! of the file is staged.

use crate::error::MemoryError;
use crate::model::NewCandidate;

/// Parses a JSONL candidate file into (1-based line number, candidate) pairs. Fails on the
/// first malformed line.
pub fn parse_jsonl(input: &str) -> Result<Vec<(usize, NewCandidate)>, MemoryError> {
    let mut candidates = Vec::new();
    for (index, line) in input.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let malformed = |reason: String| MemoryError::MalformedLine {
            line: index + 1,
            reason,
        };
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| malformed(format!("not JSON: {e}")))?;
        candidates.push((
            index + 1,
            NewCandidate::from_json(&value).map_err(malformed)?,
        ));
    }
    Ok(candidates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_the_first_malformed_line_by_number() {
        let input = concat!(
            r#"{"subject":"A","predicate":"p","object":"B","source":"doc"}"#,
            "\n\n",
            r#"{"subject":"A","predicate":"p","object":7,"source":"doc"}"#,
            "\n",
            "not json\n"
        );
        match parse_jsonl(input) {
            Err(MemoryError::MalformedLine { line, reason }) => {
                assert_eq!(line, 3);
                assert!(reason.contains("`object` must be a string"), "{reason}");
            }
            other => panic!("expected a malformed line, got {other:?}"),
        }
    }

    #[test]
    fn reads_provenance_members() {
        let input = r#"{"subject":"A","predicate":"p","object":"B","source":"doc","chunk":"c1","extractor":"x/1","run":"r1","valid_from":5}"#;
        let parsed = parse_jsonl(input).unwrap_or_default();
        assert_eq!(parsed.len(), 1);
        let (line, candidate) = &parsed[0];
        assert_eq!(*line, 1);
        assert_eq!(candidate.provenance.chunk, "c1");
        assert_eq!(candidate.provenance.extractor, "x/1");
        assert_eq!(candidate.provenance.run_id, "r1");
        assert_eq!(candidate.valid_from, Some(5));
        let unknown = r#"{"subject":"A","predicate":"p","object":"B","source":"doc","sorce":"x"}"#;
        assert!(matches!(
            parse_jsonl(unknown),
            Err(MemoryError::MalformedLine { line: 1, .. })
        ));
    }
}
