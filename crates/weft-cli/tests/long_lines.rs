//! Findings on minified documents (the whole graph on one line, as tools and models emit
//! it): each excerpt is a window around the column with the caret on the right character,
//! multibyte text included, and repeated advice is shown once with a count and the first
//! locations, while errors are each shown and `--json` keeps every finding.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use assert_cmd::Command;
use serde_json::{Map, Value, json};
use std::path::Path;

/// A chain of `n` tasks on one line: each reads its predecessor's output (so nothing but
/// the brief draws advice), each brief is two words (WF901 on every node), titles hold
/// multibyte text, and the nodes named in `ghosts` depend on a node that does not exist.
fn minified(n: usize, ghosts: &[usize]) -> String {
    let mut nodes = Map::new();
    for i in 0..n {
        let mut node = json!({
            "title": format!("Étape {i} — 日本"),
            "description": format!("Step {i}."),
            "outputs": {"report": {"type": "markdown", "description": "The report."}},
        });
        if i > 0 {
            node["depends_on"] = json!([format!("n{}", i - 1)]);
            node["inputs"] = json!({"up": {"type": "markdown", "description": "Upstream.",
                "from": format!("nodes.n{}.outputs.report", i - 1)}});
        }
        if ghosts.contains(&i) {
            node["depends_on"]
                .as_array_mut()
                .unwrap()
                .push(json!(format!("ghost{i}")));
        }
        nodes.insert(format!("n{i}"), node);
    }
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t/minified", "title": "Minified",
        "objective": "Exercise findings on one long line.",
        "constraints": {"max_cost_usd": 10},
        "entrypoints": ["n0"],
        "nodes": Value::Object(nodes),
        "outputs": {"final": {"type": "markdown", "description": "The last report.",
            "from": format!("nodes.n{}.outputs.report", n - 1)}},
    });
    let text = doc.to_string();
    assert!(!text.contains('\n'));
    text
}

fn validate(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .arg("validate")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
    )
}

/// The excerpt line of each finding of `code`, and the shown text from its caret on.
fn carets(text: &str, code: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !l.contains(&format!("[{code}]")) {
            continue;
        }
        // headline, -->, blank gutter, source, caret
        let source = lines[i + 3];
        let caret = lines[i + 4];
        let shown = source.split_once(" | ").unwrap().1;
        let pad = caret.split_once(" | ").unwrap().1;
        assert!(pad.ends_with('^'), "{caret}");
        let from_caret = shown.chars().skip(pad.chars().count() - 1).collect();
        out.push((shown.to_string(), from_caret));
    }
    out
}

#[test]
fn excerpts_of_a_one_line_document_are_windows_with_the_caret_on_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let text = minified(60, &[30, 45]);
    assert!(text.len() > 10_000, "one long line");
    std::fs::write(dir.path().join("min.agraph.json"), &text).unwrap();
    let (code, out) = validate(dir.path(), &["min.agraph.json"]);
    assert_eq!(code, 1, "{out}");

    // Both errors are shown, each with a window: cut on both sides, at most 120 characters,
    // the caret on the first character of the unknown node's name in the source.
    let errors = carets(&out, "AG114");
    assert_eq!(errors.len(), 2, "{out}");
    for ((shown, from_caret), ghost) in errors.iter().zip(["ghost30", "ghost45"]) {
        assert!(shown.starts_with('…') && shown.ends_with('…'), "{shown}");
        assert_eq!(shown.chars().count(), 120, "{shown}");
        assert!(
            from_caret.starts_with(&format!("\"{ghost}\"]")),
            "{shown} / {from_caret}"
        );
    }
    for line in out.lines().filter(|l| l.contains("--> min.agraph.json:1:")) {
        let col: usize = line
            .split(':')
            .nth(2)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(col > 120, "the findings are deep into the line: {line}");
    }
    // The shown advice points at its node's brief.
    let advice = carets(&out, "WF901");
    assert_eq!(advice.len(), 1, "{out}");
    assert!(advice[0].1.starts_with("\"description\""), "{advice:?}");
    // No line of the report carries the whole document.
    assert!(out.lines().all(|l| l.chars().count() < 300), "{out}");
}

#[test]
fn repeated_advice_is_shown_once_with_a_count_and_the_first_locations() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("min.agraph.json"), minified(60, &[30, 45])).unwrap();
    let (_, out) = validate(dir.path(), &["min.agraph.json"]);
    assert_eq!(out.matches("advice[WF901]").count(), 1, "{out}");
    assert_eq!(
        out.matches("error[AG114]").count(),
        2,
        "errors are never grouped: {out}"
    );
    let note = out
        .lines()
        .find(|l| l.contains("= note:"))
        .unwrap_or_else(|| panic!("no note in {out}"));
    assert!(
        note.contains("59 more advice like this (WF901), at 1:"),
        "{note}"
    );
    assert!(note.contains("(/nodes/n1/description)"), "{note}");
    assert!(note.contains("(/nodes/n3/description)"), "{note}");
    assert!(!note.contains("(/nodes/n4/description)"), "{note}");
    assert!(note.contains("and 56 more; `--json` lists each"), "{note}");
    assert!(
        out.contains("FAIL min.agraph.json (2 errors, 0 warnings, 61 advice)"),
        "{out}"
    );

    // --json keeps every finding.
    let (_, json) = validate(dir.path(), &["--json", "min.agraph.json"]);
    let report: Value = serde_json::from_str(&json).unwrap();
    let findings = report["documents"][0]["findings"].as_array().unwrap();
    let advice = findings.iter().filter(|f| f["code"] == "WF901").count();
    assert_eq!(advice, 60);
}

#[test]
fn a_few_repeats_are_each_shown() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("min.agraph.json"), minified(3, &[])).unwrap();
    let (code, out) = validate(dir.path(), &["min.agraph.json"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("advice[WF901]").count(), 3, "{out}");
    assert!(!out.contains("= note:"), "{out}");
}
