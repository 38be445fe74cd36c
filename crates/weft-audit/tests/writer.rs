//! `AuditWriter`: reopening continues the chain, a broken log is never appended to, two
//! writers on one file are serialised by the lock, and secrets are redacted before hashing.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;

use common::{build, entry, lines, verify_file, write_lines};
use weft_audit::{AuditError, AuditWriter, Entry, GENESIS, Kind, LineProblem, REDACTED};

#[test]
fn reopening_continues_the_chain() {
    let log = build(100);
    let mut w = AuditWriter::open(&log.path).unwrap();
    assert_eq!(w.head(), &log.receipts[99]);
    let r = w.append(&entry(101)).unwrap();
    w.sync().unwrap();
    assert_eq!(r.seq, 101);
    let l = lines(&log.path);
    assert!(l[100].contains(&format!("\"prev\":\"{}\"", log.receipts[99].hash)));
    let report = verify_file(&log.path, Some(&log.receipts[99].hash)).unwrap();
    assert_eq!((report.lines, report.last_hash), (101, r.hash));
}

#[test]
fn a_new_log_starts_at_genesis() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.jsonl");
    let mut w = AuditWriter::open(&path).unwrap();
    assert_eq!((w.head().seq, w.head().hash.as_str()), (0, GENESIS));
    let receipts = w
        .append_all(&[
            Entry::new(Kind::RunStarted, "r", 1),
            Entry::node_started("r", 2, "a", "openai/gpt"),
            Entry::policy_decision("r", 3, "fs.write", "ask", "rules[0]"),
            Entry::approval("r", 4, "alice", "a", true),
            Entry::criterion_verdict("r", 5, "a", "c1", false),
            Entry::new(Kind::RunFinished, "r", 6).with("status", "failed"),
        ])
        .unwrap();
    assert_eq!(
        receipts.iter().map(|r| r.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6]
    );
    assert!(lines(&path)[0].contains(&format!("\"prev\":\"{GENESIS}\"")));
    assert_eq!(
        verify_file(&path, None).unwrap().last_hash,
        receipts[5].hash
    );
}

#[test]
fn a_broken_log_is_never_appended_to() {
    let log = build(10);
    let mut l = lines(&log.path);
    l.remove(4);
    write_lines(&log.path, &l);
    match AuditWriter::open(&log.path).unwrap_err() {
        AuditError::Line { line: 5, problem } => {
            assert!(matches!(problem, LineProblem::SeqMismatch { .. }));
        }
        other => panic!("{other}"),
    }
}

#[test]
fn truncation_under_an_open_writer_is_refused() {
    let log = build(10);
    let mut w = AuditWriter::open(&log.path).unwrap();
    write_lines(&log.path, &lines(&log.path)[..5]);
    assert!(matches!(
        w.append(&entry(11)),
        Err(AuditError::Shrunk { .. })
    ));
}

#[test]
fn two_writers_on_one_file_keep_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let handles: Vec<_> = (0..2u64)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut w = AuditWriter::open(&path).unwrap();
                (0..50)
                    .map(|i| w.append(&entry(t * 1000 + i)).unwrap().seq)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut seqs: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=100).collect::<Vec<_>>());
    let report = verify_file(&path, None).unwrap();
    assert_eq!(report.lines, 100);
}

#[test]
fn secrets_are_redacted_before_hashing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut w = AuditWriter::open(&path)
        .unwrap()
        .with_secret_fields(["x-session"]);
    let e = Entry::new(Kind::PolicyDecision, "r", 1)
        .with("api_key", "sk-live-123")
        .with(
            "headers",
            serde_json::json!({"Authorization": "Bearer t", "X-Session": "s1"}),
        )
        .with("tokens_used", 42);
    w.append(&e).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    for secret in ["sk-live-123", "Bearer t", "s1\""] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
    assert_eq!(text.matches(REDACTED).count(), 3, "{text}");
    assert!(text.contains("\"tokens_used\":42"));
    verify_file(&path, None).unwrap();
}

#[test]
fn edge_numbers_round_trip_and_deep_entries_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut w = AuditWriter::open(&path).unwrap();
    let numbers = serde_json::json!([u64::MAX, i64::MIN, 1e21, 5e-324, 0.1, -0.0, 1e-7, 123.456]);
    w.append(&Entry::new(Kind::RunFinished, "r", u64::MAX).with("n", numbers))
        .unwrap();
    let mut deep = serde_json::json!(1);
    for _ in 0..100 {
        deep = serde_json::json!([deep]);
    }
    let refused = w.append(&Entry::new(Kind::RunFinished, "r", 2).with("deep", deep));
    assert!(matches!(refused, Err(AuditError::Entry(_))));
    drop(w);
    assert_eq!(verify_file(&path, None).unwrap().lines, 1);
    assert_eq!(AuditWriter::open(&path).unwrap().head().seq, 1);
}
