//! weft's AGS conformance result, `conformance/weft.json` (`ags.conformance-result.v1`),
//! produced by running the checks behind each token here, against the corpus read straight
//! from `../shared/ags`. A token is listed as passed only if every check behind it ran and
//! passed in this run; the claimed level is the highest one whose required tokens all
//! passed (the verifier's table: every level `all-valid-fixtures`, `all-invalid-diagnostics`,
//! `rfc8785-digests`; level 1 adds `level-1-execution`; level 2 `level-2-decisions-and-joins`;
//! level 3 `level-3-loop-map-subgraph` and `run-record-schema`).
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "tests: a panic is a failure with a message; this test reads the corpus, writes the result file and stamps it"
)]

mod execution;
mod level0;
mod level3;

use std::path::{Path, PathBuf};

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/ags")
}

/// The tokens each level requires on top of the levels below it.
const REQUIRED: [&[&str]; 4] = [
    &[
        "all-valid-fixtures",
        "all-invalid-diagnostics",
        "rfc8785-digests",
    ],
    &["level-1-execution"],
    &["level-2-decisions-and-joins"],
    &["level-3-loop-map-subgraph", "run-record-schema"],
];

/// The highest level whose required tokens (and those of every level below) all passed.
fn claimed_level(passed: &[&str]) -> Option<u8> {
    let mut level = None;
    for (n, tokens) in REQUIRED.iter().enumerate() {
        if !tokens.iter().all(|t| passed.contains(t)) {
            break;
        }
        level = u8::try_from(n).ok();
    }
    level
}

#[test]
fn the_claimed_level_needs_every_token_below_it() {
    assert_eq!(claimed_level(&[]), None);
    let l0 = REQUIRED[0].to_vec();
    assert_eq!(claimed_level(&l0), Some(0));
    let mut l2_without_l1 = l0.clone();
    l2_without_l1.push("level-2-decisions-and-joins");
    assert_eq!(claimed_level(&l2_without_l1), Some(0));
    let mut l2 = l2_without_l1;
    l2.push("level-1-execution");
    assert_eq!(claimed_level(&l2), Some(2));
    let mut l3_without_schema = l2.clone();
    l3_without_schema.push("level-3-loop-map-subgraph");
    assert_eq!(claimed_level(&l3_without_schema), Some(2));
    l3_without_schema.push("run-record-schema");
    assert_eq!(claimed_level(&l3_without_schema), Some(3));
}

/// A token passes when every check behind it does; each failure is printed.
fn token(
    name: &'static str,
    checks: Vec<(&'static str, Result<(), String>)>,
) -> (&'static str, bool) {
    let mut ok = true;
    for (check, result) in checks {
        if let Err(why) = result {
            eprintln!("{name}: {check}: {why}");
            ok = false;
        }
    }
    (name, ok)
}

#[test]
fn conformance_result() {
    let mut checks = level0::checks();
    checks.push(token("level-1-execution", execution::level1()));
    checks.push(token("level-2-decisions-and-joins", execution::level2()));
    let (level3, records) = level3::level3();
    checks.push(token("level-3-loop-map-subgraph", level3));
    checks.push(token("run-record-schema", records));
    let passed: Vec<&str> = checks.iter().filter(|c| c.1).map(|c| c.0).collect();
    let failed: Vec<&str> = checks.iter().filter(|c| !c.1).map(|c| c.0).collect();
    let level = claimed_level(&passed).expect("level 0 must hold");
    // Run records claim what this file proves, no more and no less.
    assert_eq!(
        level,
        weft_engine::record::CONFORMANCE_LEVEL,
        "run records claim level {}, the checks prove {level}",
        weft_engine::record::CONFORMANCE_LEVEL
    );
    write_result(level, &passed, &failed);
    assert!(failed.is_empty(), "failed: {failed:?}");
}

/// Writes `conformance/weft.json` when its verdict changed (so the file only moves when the
/// results do), and validates it against the published result schema.
fn write_result(level: u8, passed: &[&str], failed: &[&str]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/weft.json");
    let verdict = serde_json::json!({
        "schema": "ags.conformance-result.v1",
        "ags_version": "1.0",
        "maintenance_release": "1.0.1",
        "implementation": "weft",
        "implementation_version": env!("CARGO_PKG_VERSION"),
        "level": level,
        // The corpus is the one published with agentic-graph-spec 1.0.4, whose results in
        // conformance/results/ name this fixture revision.
        "fixture_revision": "f180a4dbd07911f90dd0821f531d7ccd51bb0764",
        "passed": passed,
        "failed": failed,
        "notes": [
            "Produced by crates/weft-cli/tests/conformance/ from ../shared/ags (sdist agentic-graph-spec 1.0.4).",
        ],
    });
    let existing: Option<serde_json::Value> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let same = existing.as_ref().is_some_and(|e| {
        let mut e = e.clone();
        e.as_object_mut().unwrap().remove("generated_at");
        e == verdict
    });
    let result = if same {
        existing.unwrap()
    } else {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        let mut v = verdict;
        v["generated_at"] = weft_engine::record::rfc3339_ms(i64::try_from(now_ms).unwrap()).into();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap() + "\n").unwrap();
        v
    };
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(shared().join("conformance/result.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&result)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "result file invalid: {errors:?}");
}
