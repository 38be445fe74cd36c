//! The CLI contract, end to end through the real binary: exit codes (0 clean, 1 errors,
//! 2 strict warnings), the `--json` report shape, digests, lossless conversion, planning,
//! and the file-level failures (missing file, size limit). One integration binary.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/ags")
}

fn example(name: &str) -> PathBuf {
    shared().join("examples").join(name)
}

fn weft() -> Command {
    Command::cargo_bin("weft").unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const WARNING_ONLY: &str = r#"ags_version: "1.0"
kind: AgenticGraph
id: t/warn
title: Warning only
objective: Have exactly one advisory.
entrypoints: [a]
nodes:
  a:
    title: A
    description: Summarise the changelog into release notes, one bullet per merged change.
"#;

#[test]
fn clean_documents_exit_0_even_under_strict() {
    let out = weft()
        .args(["validate", "--strict"])
        .arg(example("minimal.agraph.yaml"))
        .arg(example("library-v1-release.agraph.json"))
        .assert()
        .code(0);
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(stdout.contains("OK"), "{stdout}");
    assert!(stdout.contains("2 documents"), "{stdout}");
}

#[test]
fn errors_exit_1_and_name_file_line_column_and_fix() {
    let fixture = shared().join("conformance/invalid/ag114-unknown-dependency.agraph.yaml");
    let out = weft().arg("validate").arg(&fixture).assert().code(1);
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(stdout.contains("error[AG114]"), "{stdout}");
    assert!(
        stdout.contains("ag114-unknown-dependency.agraph.yaml:"),
        "{stdout}"
    );
    assert!(stdout.contains("= help:"), "{stdout}");
    // Not a terminal: no colour codes.
    assert!(!stdout.contains('\u{1b}'), "{stdout}");
}

#[test]
fn warnings_exit_0_normally_and_2_under_strict() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "warn.agraph.yaml", WARNING_ONLY);
    weft().arg("validate").arg(&file).assert().code(0);
    weft()
        .args(["validate", "--strict"])
        .arg(&file)
        .assert()
        .code(2);
}

#[test]
fn json_report_has_the_documented_shape() {
    let fixture = shared().join("conformance/invalid/ag111-cycle.agraph.yaml");
    let out = weft()
        .args(["validate", "--json"])
        .arg(&fixture)
        .arg(example("minimal.agraph.yaml"))
        .assert()
        .code(1);
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let docs = report["documents"].as_array().unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0]["ok"], false);
    assert_eq!(docs[1]["ok"], true);
    let f = docs[0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "AG111")
        .expect("AG111 reported");
    for key in ["code", "severity", "message", "pointer", "line", "column"] {
        assert!(f.get(key).is_some(), "finding lacks {key}: {f}");
    }
    assert_eq!(f["severity"], "error");
    assert!(f["line"].as_u64().unwrap() > 0);
}

#[test]
fn level_refuses_features_above_it_with_ag303() {
    let out = weft()
        .args(["validate", "--level", "1", "--json"])
        .arg(example("test-repair-loop.agraph.yaml"))
        .assert()
        .code(1);
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let messages: Vec<String> = report["documents"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "AG303")
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect();
    assert!(messages.iter().any(|m| m.contains("loop")), "{messages:?}");
    weft()
        .args(["validate", "--level", "3"])
        .arg(example("test-repair-loop.agraph.yaml"))
        .assert()
        .code(0);
}

#[test]
fn digest_prints_the_digest_alone_and_formats_agree() {
    for file in [
        "library-v1-release.agraph.yaml",
        "library-v1-release.agraph.json",
    ] {
        weft()
            .arg("digest")
            .arg(example(file))
            .assert()
            .code(0)
            .stdout("sha256-ZaKZTS3i9OBDZNnKSNF2ZI22BZmOh1CcVNM0VZGDe+A=\n");
    }
}

#[test]
fn convert_round_trips_losslessly_and_keeps_order() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.agraph.json");
    let yaml = dir.path().join("back.agraph.yaml");
    weft()
        .args(["convert", "--to", "json", "-o"])
        .arg(&json)
        .arg(example("docs-site-refresh.agraph.yaml"))
        .assert()
        .code(0);
    weft()
        .args(["convert", "--to", "yaml", "-o"])
        .arg(&yaml)
        .arg(&json)
        .assert()
        .code(0);
    let original = weft()
        .arg("digest")
        .arg(example("docs-site-refresh.agraph.yaml"))
        .output()
        .unwrap()
        .stdout;
    let back = weft().arg("digest").arg(&yaml).output().unwrap().stdout;
    assert_eq!(original, back);
    // Declaration order of nodes survives (it is normative for scheduling).
    let text = std::fs::read_to_string(&json).unwrap();
    let first = text.find("\"inventory_pages\"").unwrap();
    let later = text.find("\"verify_and_publish\":").unwrap();
    assert!(first < later);
}

#[test]
fn convert_refuses_documents_the_loader_had_to_repair() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "dup.agraph.json", r#"{"a": 1, "a": 2}"#);
    let out = weft()
        .args(["convert", "--to", "yaml"])
        .arg(&file)
        .assert()
        .code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("AG005"), "{stderr}");
}

#[test]
fn plan_shows_order_and_json_carries_the_digest() {
    let out = weft()
        .arg("plan")
        .arg(example("library-v1-release.agraph.yaml"))
        .assert()
        .code(0);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("audit_codebase"), "{text}");
    let out = weft()
        .args(["plan", "--json"])
        .arg(example("library-v1-release.agraph.yaml"))
        .assert()
        .code(0);
    let plan: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(
        plan["graph_digest"],
        "sha256-ZaKZTS3i9OBDZNnKSNF2ZI22BZmOh1CcVNM0VZGDe+A="
    );
    assert_eq!(plan["scopes"][0]["order"][0], "audit_codebase");
}

#[test]
fn plan_refuses_documents_with_errors() {
    let fixture = shared().join("conformance/invalid/ag111-cycle.agraph.yaml");
    let out = weft().arg("plan").arg(&fixture).assert().code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("AG111"), "{stderr}");
}

#[test]
fn missing_files_and_oversized_files_are_document_errors() {
    let out = weft()
        .args(["validate", "/nonexistent/x.agraph.yaml"])
        .assert()
        .code(1);
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(stdout.contains("cannot read"), "{stdout}");
    let out = weft()
        .args(["validate", "--max-bytes", "100"])
        .arg(example("minimal.agraph.yaml"))
        .assert()
        .code(1);
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(stdout.contains("AG001"), "{stdout}");
}

#[test]
fn schema_and_explain_print_documentation() {
    let out = weft().arg("schema").assert().code(0);
    let schema: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(schema["title"], "Agentic Graph Specification (AGS) 1.0");
    let out = weft().args(["explain", "ag201"]).assert().code(0);
    assert!(String::from_utf8_lossy(&out.get_output().stdout).contains("AG201"));
    weft().args(["explain", "XX1"]).assert().code(2);
}

#[test]
fn usage_errors_exit_2() {
    weft().args(["validate"]).assert().code(2);
    weft()
        .args(["validate", "--level", "7", "x"])
        .assert()
        .code(2);
}

#[test]
fn directories_expand_to_the_graphs_they_contain() {
    let out = weft()
        .args(["validate", "--json"])
        .arg(shared().join("examples"))
        .assert()
        .code(0);
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let paths: Vec<&str> = report["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths.len(), 6, "{paths:?}");
    assert!(paths.windows(2).all(|w| w[0] < w[1]), "sorted: {paths:?}");
    // The conformance directory holds result files (JSON) that are not graphs: skipped.
    let out = weft()
        .args(["validate", "--json"])
        .arg(shared().join("conformance"))
        .assert()
        .code(1);
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(report["documents"].as_array().unwrap().len(), 20);
}

#[test]
fn standard_input_is_read_with_dash_and_its_format_sniffed() {
    let json = std::fs::read_to_string(example("library-v1-release.agraph.json")).unwrap();
    weft()
        .args(["validate", "--strict", "-"])
        .write_stdin(json.clone())
        .assert()
        .code(0);
    weft()
        .args(["digest", "-"])
        .write_stdin(json)
        .assert()
        .code(0)
        .stdout("sha256-ZaKZTS3i9OBDZNnKSNF2ZI22BZmOh1CcVNM0VZGDe+A=\n");
    let out = weft()
        .args(["validate", "-"])
        .write_stdin("a: 1\na: 2\n")
        .assert()
        .code(1);
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        stdout.contains("AG005") && stdout.contains("-:2:1"),
        "{stdout}"
    );
}

#[test]
fn quiet_prints_only_failing_documents_and_the_total() {
    let fixture = shared().join("conformance/invalid/ag111-cycle.agraph.yaml");
    let out = weft()
        .args(["validate", "--quiet"])
        .arg(example("minimal.agraph.yaml"))
        .arg(&fixture)
        .assert()
        .code(1);
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].starts_with("FAIL") && lines[0].contains("ag111"),
        "{stdout}"
    );
    assert!(lines[1].contains("2 documents"), "{stdout}");
}

#[test]
fn audit_verify_reports_ok_or_the_first_broken_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join(".weft/audit.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let mut writer = weft_audit::AuditWriter::open(&log).unwrap();
    let receipts: Vec<_> = (1..=5)
        .map(|i| {
            let e = weft_audit::Entry::approval("run-1", 1_000 + i, "alice", "deploy", true);
            writer.append(&e).unwrap()
        })
        .collect();
    drop(writer);
    let head = &receipts[4].hash;

    // FILE defaults to .weft/audit.jsonl in the working directory.
    let out = weft()
        .current_dir(dir.path())
        .args(["audit", "verify", "--anchor", head])
        .assert()
        .code(0);
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        stdout.starts_with(&format!("OK: 5 entries, last hash {head}")),
        "{stdout}"
    );

    let out = weft()
        .args(["audit", "verify", "--json"])
        .arg(&log)
        .assert()
        .code(0);
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(
        (report["ok"].as_bool(), report["lines"].as_u64()),
        (Some(true), Some(5))
    );

    // Tamper with line 3 without recomputing anything.
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let tampered = lines[2].replace("\"granted\":true", "\"granted\":false");
    std::fs::write(
        &log,
        [lines[0], lines[1], &tampered, lines[3], lines[4]].concat(),
    )
    .unwrap();
    let out = weft().args(["audit", "verify"]).arg(&log).assert().code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.starts_with(&format!("{}:3: hash mismatch", log.display())),
        "{stderr}"
    );

    // Truncating the tail is only visible against the anchor.
    std::fs::write(&log, [lines[0], lines[1]].concat()).unwrap();
    weft().args(["audit", "verify"]).arg(&log).assert().code(0);
    let out = weft()
        .args(["audit", "verify", "--anchor", head])
        .arg(&log)
        .assert()
        .code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("is not in the chain"), "{stderr}");
    weft()
        .args(["audit", "verify", "--anchor", "nope"])
        .arg(&log)
        .assert()
        .code(2);
}
