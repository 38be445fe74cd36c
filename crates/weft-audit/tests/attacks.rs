//! Every tampering the issue lists, against a 100-entry chain: each must fail at the right
//! line with the right problem, and a clean chain must pass.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;

use common::{build, lines, verify_file, write_lines};
use serde_json::Value;
use weft_audit::{AnchorMatch, AuditError, GENESIS, LineProblem, encode_line};

fn problem_at(err: AuditError) -> (u64, LineProblem) {
    match err {
        AuditError::Line { line, problem } => (line, problem),
        other => panic!("expected a line error, got {other}"),
    }
}

#[test]
fn a_clean_chain_verifies() {
    let log = build(100);
    let report = verify_file(&log.path, None).unwrap();
    assert_eq!(report.lines, 100);
    assert_eq!(report.last_seq, 100);
    assert_eq!(report.last_hash, log.receipts[99].hash);
    assert_eq!(report.anchor, None);
}

#[test]
fn an_edited_entry_is_a_hash_mismatch_on_its_line() {
    let log = build(100);
    let mut l = lines(&log.path);
    assert!(l[41].contains("\"passed\":true"));
    l[41] = l[41].replace("\"passed\":true", "\"passed\":false");
    write_lines(&log.path, &l);
    let (line, problem) = problem_at(verify_file(&log.path, None).unwrap_err());
    assert_eq!(line, 42);
    assert!(
        matches!(problem, LineProblem::HashMismatch { .. }),
        "{problem}"
    );
}

#[test]
fn an_edited_entry_with_a_recomputed_hash_breaks_the_next_link() {
    let log = build(100);
    let mut l = lines(&log.path);
    let mut value: Value = serde_json::from_str(&l[41]).unwrap();
    value["entry"]["data"]["passed"] = Value::Bool(false);
    let (forged, _) = encode_line(42, &log.receipts[40].hash, &value["entry"]);
    l[41] = forged;
    write_lines(&log.path, &l);
    let (line, problem) = problem_at(verify_file(&log.path, None).unwrap_err());
    assert_eq!(line, 43);
    assert!(
        matches!(problem, LineProblem::PrevMismatch { .. }),
        "{problem}"
    );
}

#[test]
fn a_deleted_line_is_a_seq_gap() {
    let log = build(100);
    let mut l = lines(&log.path);
    l.remove(49);
    write_lines(&log.path, &l);
    let (line, problem) = problem_at(verify_file(&log.path, None).unwrap_err());
    assert_eq!(
        (line, problem),
        (
            50,
            LineProblem::SeqMismatch {
                expected: 50,
                found: 51
            }
        )
    );
}

#[test]
fn a_forged_insertion_is_caught_at_the_line_it_displaces() {
    let log = build(100);
    let mut l = lines(&log.path);
    let forged: Value = serde_json::to_value(common::entry(999)).unwrap();
    let (line, _) = encode_line(30, &log.receipts[28].hash, &forged);
    l.insert(29, line);
    write_lines(&log.path, &l);
    let (line, problem) = problem_at(verify_file(&log.path, None).unwrap_err());
    assert_eq!(
        (line, problem),
        (
            31,
            LineProblem::SeqMismatch {
                expected: 31,
                found: 30
            }
        )
    );
}

#[test]
fn a_duplicated_line_is_caught() {
    let log = build(100);
    let mut l = lines(&log.path);
    l.insert(10, l[9].clone());
    write_lines(&log.path, &l);
    let (line, problem) = problem_at(verify_file(&log.path, None).unwrap_err());
    assert_eq!(
        (line, problem),
        (
            11,
            LineProblem::SeqMismatch {
                expected: 11,
                found: 10
            }
        )
    );
}

#[test]
fn swapped_lines_are_caught_at_the_first() {
    let log = build(100);
    let mut l = lines(&log.path);
    l.swap(59, 60);
    write_lines(&log.path, &l);
    let (line, problem) = problem_at(verify_file(&log.path, None).unwrap_err());
    assert_eq!(
        (line, problem),
        (
            60,
            LineProblem::SeqMismatch {
                expected: 60,
                found: 61
            }
        )
    );
}

#[test]
fn swapped_and_renumbered_lines_break_the_prev_link() {
    let log = build(100);
    let mut l = lines(&log.path);
    let a: Value = serde_json::from_str(&l[59]).unwrap();
    let b: Value = serde_json::from_str(&l[60]).unwrap();
    // Renumber and relink the swapped pair; only the line after them can tell.
    let (first, h) = encode_line(60, &log.receipts[58].hash, &b["entry"]);
    let (second, _) = encode_line(61, &h, &a["entry"]);
    l[59] = first;
    l[60] = second;
    write_lines(&log.path, &l);
    let (line, problem) = problem_at(verify_file(&log.path, None).unwrap_err());
    assert_eq!(line, 62);
    assert!(
        matches!(problem, LineProblem::PrevMismatch { .. }),
        "{problem}"
    );
}

#[test]
fn tail_truncation_needs_an_anchor() {
    let log = build(100);
    let l = lines(&log.path);
    write_lines(&log.path, &l[..90]);
    // Without an anchor a shorter chain is a valid chain.
    assert_eq!(verify_file(&log.path, None).unwrap().lines, 90);
    let head = &log.receipts[99].hash;
    match verify_file(&log.path, Some(head)).unwrap_err() {
        AuditError::AnchorNotFound { lines, .. } => assert_eq!(lines, 90),
        other => panic!("{other}"),
    }
    let at = verify_file(&log.path, Some(&log.receipts[89].hash)).unwrap();
    assert_eq!(
        at.anchor,
        Some(AnchorMatch {
            seq: 90,
            at_end: true
        })
    );
    let mid = verify_file(&log.path, Some(&log.receipts[49].hash.to_uppercase())).unwrap();
    assert_eq!(
        mid.anchor,
        Some(AnchorMatch {
            seq: 50,
            at_end: false
        })
    );
}

#[test]
fn appended_garbage_is_caught() {
    let log = build(100);
    let mut l = lines(&log.path);
    l.push("not json\n".into());
    write_lines(&log.path, &l);
    let (line, problem) = problem_at(verify_file(&log.path, None).unwrap_err());
    assert_eq!(line, 101);
    assert!(matches!(problem, LineProblem::Malformed(_)), "{problem}");

    l.pop();
    l.push("{".into());
    write_lines(&log.path, &l);
    let (line, problem) = problem_at(verify_file(&log.path, None).unwrap_err());
    assert_eq!((line, problem), (101, LineProblem::Incomplete));

    l.pop();
    l.push("\n".into());
    write_lines(&log.path, &l);
    let (line, problem) = problem_at(verify_file(&log.path, None).unwrap_err());
    assert_eq!(line, 101);
    assert!(matches!(problem, LineProblem::Malformed(_)), "{problem}");
}

#[test]
fn reformatted_lines_and_newer_versions_are_named() {
    let log = build(3);
    let mut l = lines(&log.path);
    l[1] = l[1].replacen(",\"prev\"", ", \"prev\"", 1);
    write_lines(&log.path, &l);
    let (line, problem) = problem_at(verify_file(&log.path, None).unwrap_err());
    assert_eq!((line, problem), (2, LineProblem::NotCanonical));

    let mut l = lines(&log.path);
    l[1] = l[1]
        .replacen(", \"prev\"", ",\"prev\"", 1)
        .replace("\"v\":1}", "\"v\":2}");
    write_lines(&log.path, &l);
    let (line, problem) = problem_at(verify_file(&log.path, None).unwrap_err());
    assert_eq!(
        (line, problem),
        (2, LineProblem::Version { found: "2".into() })
    );
}

#[test]
fn an_empty_log_is_the_genesis_chain() {
    let report = weft_audit::verify(&b""[..], Some(GENESIS)).unwrap();
    assert_eq!((report.lines, report.last_hash.as_str()), (0, GENESIS));
    assert_eq!(
        report.anchor,
        Some(AnchorMatch {
            seq: 0,
            at_end: true
        })
    );
    assert!(matches!(
        weft_audit::verify(&b""[..], Some("abc")),
        Err(AuditError::BadAnchor(_))
    ));
}
