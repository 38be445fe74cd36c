//! RFC 8785 canonical form and `graph_digest`: Appendix C vectors, the YAML and JSON forms
//! of a document agreeing, and ECMAScript number formatting. The verified digests of every
//! shared example (DIGEST §1.1) are checked once, by the conformance check behind the
//! `rfc8785-digests` token (`weft-cli/tests/conformance/level0.rs`).
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "tests: a panic is a failure with a message; tests may time and write files"
)]

use serde_json::{Value, json};
use std::path::Path;
use weft_ags::digest::{canonical_json, graph_digest};
use weft_ags::load::{Limits, read_file};

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/ags");

fn example(name: &str) -> Value {
    let path = Path::new(SHARED).join("examples").join(name);
    let loaded = read_file(&path, &Limits::default()).unwrap();
    assert!(loaded.findings.is_empty(), "{name}: {:#?}", loaded.findings);
    loaded.document.expect("document").value
}

fn jcs(text: &str) -> String {
    canonical_json(&serde_json::from_str(text).unwrap())
}

#[test]
fn appendix_c_vectors() {
    assert_eq!(jcs(r#"{"b":2,"a":1}"#), r#"{"a":1,"b":2}"#);
    assert_eq!(jcs(r#"{"n":1.0}"#), r#"{"n":1}"#);
    assert_eq!(jcs(r#"{"s":"é","z":-0.0}"#), r#"{"s":"é","z":0}"#);
    assert_eq!(
        graph_digest(&json!({"b": 2, "a": 1})),
        "sha256-QyWM/3g/5wNtikMDP4MK38YOwDc4JHNUisdCuIgpJ3c="
    );
}

#[test]
fn library_yaml_and_json_load_to_equal_values() {
    assert_eq!(
        example("library-v1-release.agraph.yaml"),
        example("library-v1-release.agraph.json")
    );
}

#[test]
fn numbers_follow_ecmascript() {
    let cases: &[(Value, &str)] = &[
        (json!(1e21), "1e+21"),
        (json!(1e20), "100000000000000000000"),
        (json!(1e-7), "1e-7"),
        (json!(1e-6), "0.000001"),
        (json!(-0.0), "0"),
        (json!(5e-324), "5e-324"),
        (json!(9007199254740993u64), "9007199254740992"),
        (json!(-9007199254740993i64), "-9007199254740992"),
        (json!(18446744073709551615u64), "18446744073709552000"),
        (json!(0.1), "0.1"),
        (json!(1.5), "1.5"),
        (json!(123456789012345680000.0), "123456789012345680000"),
        (json!(1.7976931348623157e308), "1.7976931348623157e+308"),
        (json!(-1.25e-10), "-1.25e-10"),
        (json!(100), "100"),
    ];
    for (value, expected) in cases {
        assert_eq!(canonical_json(value), *expected, "{value:?}");
    }
}

#[test]
fn strings_sort_by_utf16_and_escape_minimally() {
    // U+E000 sorts before U+1F600 in UTF-16 (0xE000 < 0xD83D is false: 0xD83D < 0xE000).
    let v = json!({"\u{e000}": 1, "\u{1f600}": 2, "a": 3, "B": 4, "": 5});
    assert_eq!(
        canonical_json(&v),
        "{\"\":5,\"B\":4,\"a\":3,\"\u{1f600}\":2,\"\u{e000}\":1}"
    );
    assert_eq!(
        canonical_json(&json!("\u{2028}</script>\t\u{0}")),
        "\"\u{2028}</script>\\t\\u0000\""
    );
    assert_eq!(
        canonical_json(&json!([null, true, false, [], {}])),
        "[null,true,false,[],{}]"
    );
}
