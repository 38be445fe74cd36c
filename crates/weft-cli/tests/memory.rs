//! `weft memory` through the real binary: ingest (a malformed line refused with its number,
//! nothing staged), promote/reject with who and why, query (text and the JSON shape), merge
//! and unmerge (exact restoration), stats and both exports.
#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

use std::path::Path;

use serde_json::Value;
use weft_test_support::cli::{Out, weft};

/// `weft memory ARGS` in `dir`, to completion.
fn call(dir: &Path, args: &[&str]) -> Out {
    Out::of(weft(dir).arg("memory").args(args).output().unwrap())
}

const CANDIDATES: &str = r#"{"subject":"Journal of Psychotherapy Integration","predicate":"published by","object":"APA","source":"musique","chunk":"p6","extractor":"gpt/1","run":"r1"}
{"subject":"American Psychological Association","predicate":"first president","object":"G. Stanley Hall","source":"musique","chunk":"p10","extractor":"gpt/1"}

{"subject":"G. Stanley Hall","predicate":"born in","object":"Ashfield","source":"musique","chunk":"p11"}
{"subject":"Ashfield","predicate":"is","object":"ashfield","source":"musique","chunk":"p12"}
"#;

#[test]
fn a_malformed_line_is_refused_by_number_and_nothing_is_staged() {
    let dir = tempfile::tempdir().unwrap();
    let bad = CANDIDATES.replace(r#""object":"Ashfield""#, r#""object":17"#);
    std::fs::write(dir.path().join("c.jsonl"), bad).unwrap();
    let out = call(dir.path(), &["ingest", "c.jsonl"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("line 4"), "{}", out.stderr);
    assert!(
        out.stderr.contains("`object` must be a string"),
        "{}",
        out.stderr
    );
    let stats = call(dir.path(), &["stats", "--json"]);
    let stats: Value = serde_json::from_str(&stats.stdout).unwrap();
    assert_eq!(stats["candidates_staged"], 0);
    assert_eq!(stats["candidates_rejected"], 0);
}

#[test]
fn ingest_promote_query_merge_unmerge_and_export() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("c.jsonl"), CANDIDATES).unwrap();
    let out = call(d, &["ingest", "c.jsonl"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("staged 3 candidate(s)"),
        "{}",
        out.stdout
    );
    // The self-loop on line 5 (after a blank line) is rejected with its line and reason.
    assert!(
        out.stdout.contains(
            "rejected line 5 (candidate 4): the subject and the object are the same entity"
        ),
        "{}",
        out.stdout
    );
    assert!(d.join(".weft/memory.db").exists());

    let out = call(d, &["promote", "1", "2"]);
    assert_eq!(out.code, 2, "--as is required");
    let out = call(
        d,
        &[
            "promote",
            "--all",
            "--as",
            "alice",
            "--why",
            "read the passages",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.lines().count(), 3, "{}", out.stdout);
    let out = call(d, &["reject", "3", "--as", "bob", "--why", "wrong Hall"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "3: rejected");
    let out = call(d, &["promote", "99", "--as", "alice"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("no candidate 99"), "{}", out.stderr);

    let query = [
        "query",
        "--seed",
        "Journal of Psychotherapy Integration",
        "--hops",
        "2",
        "--max-edges",
        "500",
        "--tokens",
        "2000",
        "--json",
    ];
    let before: Value = serde_json::from_str(&call(d, &query).stdout).unwrap();
    assert_eq!(
        before["edges"].as_array().unwrap().len(),
        1,
        "APA is not yet the association: {before}"
    );
    let edge = &before["edges"][0];
    assert_eq!(edge["subject"], "Journal of Psychotherapy Integration");
    assert_eq!(edge["predicate"], "published by");
    assert_eq!(edge["object"], "APA");
    assert_eq!(edge["provenance"], 1);
    assert!(before["tokens"].as_u64().unwrap() > 0);

    let merged = call(
        d,
        &[
            "merge",
            "APA",
            "American Psychological Association",
            "--evidence",
            "acronym",
            "--as",
            "alice",
            "--json",
        ],
    );
    assert_eq!(merged.code, 0, "{}", merged.stderr);
    let merged: Value = serde_json::from_str(&merged.stdout).unwrap();
    let merge_id = merged["merge_id"].as_i64().unwrap();
    let after: Value = serde_json::from_str(&call(d, &query).stdout).unwrap();
    let objects: Vec<&str> = after["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["object"].as_str().unwrap())
        .collect();
    assert_eq!(
        objects,
        ["American Psychological Association", "G. Stanley Hall"]
    );
    let text = call(d, &["query", "--seed", "APA", "--hops", "1"]);
    assert!(
        text.stdout.contains(
            "American Psychological Association | first president | G. Stanley Hall [p:2]"
        ),
        "{}",
        text.stdout
    );

    let out = call(d, &["unmerge", &merge_id.to_string(), "--as", "alice"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let restored: Value = serde_json::from_str(&call(d, &query).stdout).unwrap();
    assert_eq!(restored["edges"], before["edges"]);
    assert_eq!(call(d, &["unmerge", &merge_id.to_string()]).code, 1);

    let stats: Value = serde_json::from_str(&call(d, &["stats", "--json"]).stdout).unwrap();
    assert_eq!(stats["triples_current"], 2);
    assert_eq!(stats["triples_closed"], 1);
    assert_eq!(stats["merges_undone"], 1);

    let nquads = call(d, &["export", "--format", "nquads"]);
    assert_eq!(nquads.code, 0, "{}", nquads.stderr);
    assert!(
        nquads.stdout.contains("<weft:predicate/published%20by>"),
        "{}",
        nquads.stdout
    );
    assert!(
        nquads.stdout.contains("<weft:provenance/1> ."),
        "{}",
        nquads.stdout
    );
    assert_eq!(
        nquads
            .stdout
            .lines()
            .filter(|l| l.contains("<weft:provenance/"))
            .count(),
        2
    );
    let md = call(d, &["export", "--format", "markdown", "--out", "notes"]);
    assert_eq!(md.code, 0, "{}", md.stderr);
    let page =
        std::fs::read_to_string(d.join("notes/Journal of Psychotherapy Integration.md")).unwrap();
    assert!(page.contains("- published by [[APA]]"), "{page}");
    let hall = std::fs::read_to_string(d.join("notes/G. Stanley Hall.md")).unwrap();
    assert!(
        hall.contains("born in [[Ashfield]]") && hall.contains("(retired)"),
        "{hall}"
    );
}
