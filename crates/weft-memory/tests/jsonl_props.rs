//! The JSONL candidate reader is fed untrusted files: it must never panic, must read back
//! what well-formed lines say, and must name the exact line of the first malformed one.

#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

use proptest::prelude::*;
use serde_json::json;
use weft_memory::{MemoryError, parse_jsonl};

fn good_line() -> impl Strategy<Value = (String, String, String, String, Option<i64>)> {
    (
        ".{1,20}",
        ".{1,12}",
        ".{1,20}",
        "[a-z0-9/._-]{1,10}",
        proptest::option::of(any::<i64>()),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_text_never_panics(input in ".{0,400}") {
        let _ = parse_jsonl(&input);
    }

    #[test]
    fn arbitrary_json_objects_never_panic(value in proptest::collection::btree_map("[a-z_]{1,10}", any::<i32>(), 0..6)) {
        let line = serde_json::to_string(&value).unwrap();
        let _ = parse_jsonl(&line);
    }

    #[test]
    fn good_lines_read_back_and_a_bad_line_is_named(
        lines in proptest::collection::vec(good_line(), 1..20),
        bad_at in any::<prop::sample::Index>(),
        bad_kind in 0..4usize,
    ) {
        let mut text: Vec<String> = lines
            .iter()
            .map(|(s, p, o, src, from)| {
                json!({"subject": s, "predicate": p, "object": o, "source": src, "valid_from": from}).to_string()
            })
            .collect();
        let parsed = parse_jsonl(&text.join("\n")).unwrap();
        prop_assert_eq!(parsed.len(), lines.len());
        for ((line, candidate), (i, (s, p, o, src, from))) in parsed.iter().zip(lines.iter().enumerate()) {
            prop_assert_eq!(*line, i + 1);
            prop_assert_eq!(&candidate.subject, s);
            prop_assert_eq!(&candidate.predicate, p);
            prop_assert_eq!(&candidate.object, o);
            prop_assert_eq!(&candidate.provenance.source, src);
            prop_assert_eq!(candidate.valid_from, *from);
        }
        let bad = match bad_kind {
            0 => "{\"subject\": \"a\"".to_string(),
            1 => json!({"subject": "a", "predicate": "p", "object": ["x"], "source": "s"}).to_string(),
            2 => json!({"subject": "a", "predicate": "p", "object": "o"}).to_string(),
            _ => json!(["a", "p", "o"]).to_string(),
        };
        let at = bad_at.index(text.len() + 1);
        text.insert(at, bad);
        match parse_jsonl(&text.join("\n")) {
            Err(MemoryError::MalformedLine { line, .. }) => prop_assert_eq!(line, at + 1),
            other => prop_assert!(false, "expected line {} to be refused, got {:?}", at + 1, other),
        }
    }
}
