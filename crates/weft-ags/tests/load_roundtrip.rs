//! Properties: YAML -> JSON -> YAML is lossless and digest-stable (shared examples and
//! generated values), and the loader never panics on arbitrary input.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "tests: a panic is a failure with a message; tests may time and write files"
)]

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::path::Path;
use weft_ags::digest::graph_digest;
use weft_ags::load::{Format, Limits, load_str, read_file, to_json_pretty, to_yaml};

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/ags");

fn reload(text: &str, format: Format) -> Value {
    let loaded = load_str("t", text, format, &Limits::default());
    assert!(
        loaded.findings.is_empty(),
        "{:#?}\n--- text ---\n{text}",
        loaded.findings
    );
    loaded.document.expect("document").value
}

fn assert_round_trips(v: &Value) {
    let yaml = to_yaml(v);
    assert_eq!(&reload(&yaml, Format::Yaml), v, "YAML:\n{yaml}");
    let json = to_json_pretty(v);
    assert!(json.ends_with("}\n"));
    assert_eq!(&reload(&json, Format::Json), v, "JSON:\n{json}");
    // JSON text read as YAML (YAML 1.2 is a JSON superset for such documents).
    assert_eq!(graph_digest(&reload(&yaml, Format::Yaml)), graph_digest(v));
}

#[test]
fn shared_examples_round_trip() {
    let dir = Path::new(SHARED).join("examples");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let loaded = read_file(&path, &Limits::default()).unwrap();
        assert!(loaded.findings.is_empty(), "{}", path.display());
        let v = loaded.document.expect("document").value;
        let digest = graph_digest(&v);
        assert_round_trips(&v);
        let again = reload(
            &to_yaml(&reload(&to_json_pretty(&v), Format::Json)),
            Format::Yaml,
        );
        assert_eq!(graph_digest(&again), digest, "{}", path.display());
        n += 1;
    }
    assert!(n >= 6);
}

#[test]
fn nasty_strings_round_trip() {
    let nasty = [
        "yes",
        "No",
        "on",
        "OFF",
        "y",
        "null",
        "Null",
        "~",
        "",
        "true",
        "1.0",
        "017",
        "0o17",
        "0x1F",
        "1_000",
        "1:20",
        ".inf",
        "-.inf",
        ".nan",
        "1e400",
        "2026-08-28T00:00:00Z",
        " lead",
        "trail ",
        "a: b",
        "a:b",
        "#x",
        "a #b",
        "- a",
        "-",
        "---",
        "...",
        "? x",
        "|",
        ">",
        "&a",
        "*a",
        "!t",
        "%YAML",
        "@x",
        "`x",
        "'q'",
        "\"q\"",
        "\\",
        "a\nb",
        "a\n",
        "a\n\n",
        "\n",
        "\na",
        "  indented\nnext",
        "a\n  b\n",
        "tab\there",
        "cr\r\nlf",
        "\u{85}",
        "\u{2028}",
        "\u{feff}x",
        "\u{0}\u{1}\u{7f}\u{9f}",
        "é ü 漢字 😀",
        "{a: 1}",
        "[1, 2]",
        "a, b",
        "trailing space \nline",
        "x\n \ny",
        "\u{a0}nbsp",
    ];
    let mut map = Map::new();
    for (i, s) in nasty.iter().enumerate() {
        map.insert((*s).to_owned(), json!(s));
        map.insert(format!("k{i}"), json!([s, {"in": s}]));
    }
    map.insert("k".repeat(1500), json!({"long": "k".repeat(3000)}));
    map.insert(
        "nested".into(),
        json!([[[]], [{}], [[1, [2, {"a": [3]}]]], {"x": [{}]}]),
    );
    map.insert(
        "numbers".into(),
        json!([
            0,
            -0.0,
            1e21,
            1e-7,
            5e-324,
            1.7976931348623157e308,
            i64::MIN,
            u64::MAX,
            0.1
        ]),
    );
    assert_round_trips(&Value::Object(map));
}

fn nasty_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,12}",
        "[ -~]{0,10}",
        prop::sample::select(vec![
            "yes", "null", "~", "", "1.0", "0x1F", " a", "a ", ": ", "#", "- ", "a\nb", "a\n",
            "\n", "---", "\t", "\u{85}", "\u{2028}", "\u{feff}", "\"", "\\", "'", "017", ".inf",
            "x-ext", "nodes",
        ])
        .prop_map(str::to_owned),
        prop::collection::vec(
            prop::sample::select(vec![
                "a", " ", "\n", ":", "#", "-", "'", "\"", "1", ".", "é"
            ]),
            0..8
        )
        .prop_map(|parts| parts.concat()),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop::num::f64::NORMAL
            .prop_union(prop::num::f64::SUBNORMAL)
            .or(prop::num::f64::ZERO)
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        nasty_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((nasty_string(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = Value> {
    prop::collection::vec((nasty_string(), value()), 0..6)
        .prop_map(|entries| Value::Object(entries.into_iter().collect()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_values_round_trip(v in object()) {
        assert_round_trips(&v);
    }

    #[test]
    fn loader_never_panics_on_strings(s in "\\PC{0,200}") {
        for format in [Format::Yaml, Format::Json] {
            let loaded = load_str("t", &s, format, &Limits::default());
            prop_assert!(loaded.document.is_some() || !loaded.findings.is_empty());
        }
    }

    #[test]
    fn loader_never_panics_on_yamlish_soup(parts in prop::collection::vec(prop::sample::select(vec![
        "a", ": ", "- ", "\n", "  ", "[", "]", "{", "}", ",", "&x ", "*x", "!!str ", "!t ", "'", "\"",
        "? ", "|", ">", "#", "---\n", "...\n", "~", "1", ".inf", "\t", "\\", "%YAML 1.2\n", "<<",
    ]), 0..60)) {
        let text = parts.concat();
        for format in [Format::Yaml, Format::Json] {
            let loaded = load_str("t", &text, format, &Limits::default());
            if let Some(doc) = &loaded.document {
                // Whatever loads also survives a round trip.
                let y = to_yaml(&doc.value);
                let again = load_str("t", &y, Format::Yaml, &Limits::default());
                prop_assert_eq!(again.document.map(|d| d.value), Some(doc.value.clone()), "{}", y);
            }
        }
    }

    #[test]
    fn loader_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let text = String::from_utf8_lossy(&bytes);
        for format in [Format::Yaml, Format::Json] {
            let _ = load_str("t", &text, format, &Limits::default());
        }
    }
}
