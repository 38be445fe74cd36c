//! JSON loading: strict RFC 8259, rejections with positions, duplicate-key recovery (first
//! wins), limits, `locate`, `Format` selection and `read_file`.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "tests: a panic is a failure with a message; tests may time and write files"
)]

use serde_json::{Value, json};
use std::path::Path;
use weft_ags::load::{Format, Limits, Loaded, load_str, locate, read_file};
use weft_ags::{Code, Finding};

fn load(text: &str) -> Loaded {
    load_str("t.json", text, Format::Json, &Limits::default())
}

fn only(text: &str, fatal: bool) -> Finding {
    let loaded = load(text);
    assert_eq!(loaded.findings.len(), 1, "{:#?}", loaded.findings);
    assert_eq!(loaded.document.is_none(), fatal, "{:#?}", loaded.findings);
    loaded.findings.into_iter().next().expect("one finding")
}

fn pos(f: &Finding) -> (u32, u32) {
    (f.line.expect("line"), f.column.expect("column"))
}

#[test]
fn loads_in_order() {
    let loaded = load(
        r#"{"x-z": 1, "nodes": {"b": {}, "a": {"x-q": [1, 2.5, -0, null, true]}}, "ags_version": "1.0"}"#,
    );
    assert!(loaded.findings.is_empty());
    let v = loaded.document.expect("doc").value;
    let keys: Vec<&String> = v.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["x-z", "nodes", "ags_version"]);
    let nodes: Vec<&String> = v["nodes"].as_object().expect("object").keys().collect();
    assert_eq!(nodes, ["b", "a"]);
    assert_eq!(v["nodes"]["a"]["x-q"][1], json!(2.5));
}

#[test]
fn syntax_errors_have_positions() {
    for (text, at) in [
        ("{\"a\": 1,}", (1, 9)),
        ("{\n  \"a\": 1,\n  \"b\": tru\n}", (3, 11)),
        ("{'a': 1}", (1, 2)),
        ("{\"a\": 1} x", (1, 10)),
        ("{\"é\": 1,,}", (1, 9)),
        ("{\"a\": 1 // c\n}", (1, 9)),
    ] {
        let f = only(text, true);
        assert_eq!(f.code, Code::AG001);
        assert!(
            f.message.starts_with("JSON syntax error: "),
            "{}",
            f.message
        );
        assert!(!f.message.contains(" at line "), "{}", f.message);
        assert!(f.help.is_some());
        assert_eq!(pos(&f), at, "{text:?}: {}", f.message);
    }
    let f = only("{\"a\": 1e400}", true);
    assert!(f.message.contains("out of range"), "{}", f.message);
}

#[test]
fn empty_and_non_object_roots() {
    for text in ["", "  \n\t"] {
        let f = only(text, true);
        assert_eq!(f.message, "document is empty");
        assert_eq!(pos(&f), (1, 1));
    }
    for (text, at) in [("[1]", (1, 1)), ("\n  \"s\"", (2, 3)), ("null", (1, 1))] {
        let f = only(text, true);
        assert!(
            f.message.starts_with("document root must be an object"),
            "{}",
            f.message
        );
        assert_eq!(pos(&f), at);
    }
}

#[test]
fn bom_is_rejected() {
    let f = only("\u{feff}{\"a\": 1}", true);
    assert!(f.message.contains("byte order mark"));
    assert_eq!(pos(&f), (1, 1));
}

#[test]
fn depth_limit() {
    let deep = format!("{{\"a\": {}{}}}", "[".repeat(200), "]".repeat(200));
    let f = only(&deep, true);
    assert!(
        f.message.contains("deeper than the limit of 128"),
        "{}",
        f.message
    );
    assert_eq!(f.line, Some(1));
    let ok = format!("{{\"a\": {}{}}}", "[".repeat(127), "]".repeat(127));
    assert!(load(&ok).document.is_some());
    // A configured limit above the hard ceiling is clamped, not trusted.
    let limits = Limits {
        max_depth: usize::MAX,
        ..Limits::default()
    };
    let huge = format!("{{\"a\": {}{}}}", "[".repeat(50_000), "]".repeat(50_000));
    let loaded = load_str("t", &huge, Format::Json, &limits);
    assert!(loaded.document.is_none());
}

#[test]
fn duplicate_keys_keep_the_first_and_report_each() {
    let text = "{\n  \"nodes\": {\n    \"a\": {\"type\": \"task\"},\n    \"b\": {},\n    \"a\": {\"type\": \"gate\"},\n    \"\\u0061\": 3\n  },\n  \"x\": 1, \"x\": 2\n}\n";
    let loaded = load(text);
    let doc = loaded.document.expect("recoverable");
    assert_eq!(
        doc.value,
        json!({"nodes": {"a": {"type": "task"}, "b": {}}, "x": 1})
    );
    let found: Vec<(Code, &str, (u32, u32), &str)> = loaded
        .findings
        .iter()
        .map(|f| (f.code, f.pointer.as_str(), pos(f), f.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (
                Code::AG005,
                "/nodes/a",
                (5, 5),
                "duplicate key 'a' (first defined at line 3, column 5)"
            ),
            (
                Code::AG005,
                "/nodes/a",
                (6, 5),
                "duplicate key 'a' (first defined at line 3, column 5)"
            ),
            (
                Code::AG005,
                "/x",
                (8, 11),
                "duplicate key 'x' (first defined at line 8, column 3)"
            ),
        ]
    );
    assert_eq!(
        loaded.findings[0].help.as_deref(),
        Some("remove or rename one of the two entries")
    );
}

#[test]
fn duplicates_inside_arrays_and_escaped_keys() {
    let text = r#"{"list": [{"k": 1, "k": 2}, {"k": 3}], "a/b": {"~": 1, "~": 2}}"#;
    let loaded = load(text);
    let ptrs: Vec<&str> = loaded.findings.iter().map(|f| f.pointer.as_str()).collect();
    assert_eq!(ptrs, ["/list/0/k", "/a~1b/~0"]);
    assert_eq!(
        loaded.document.expect("doc").value,
        json!({"list": [{"k": 1}, {"k": 3}], "a/b": {"~": 1}})
    );
}

#[test]
fn locate_finds_keys_and_items() {
    let text = "{\n  \"ags_version\": \"1.0\",\n  \"nodes\": {\n    \"fetch\": {\"type\": \"task\", \"outputs\": [ {\"name\": \"a\"}, \"b\" ]},\n    \"q\\\"x\": 1\n  },\n  \"é\": [1, [2, 3]]\n}";
    let doc = load(text).document.expect("doc");
    let pointers = [
        "",
        "/nodes",
        "/nodes/fetch/type",
        "/nodes/fetch/outputs/0",
        "/nodes/fetch/outputs/0/name",
        "/nodes/fetch/outputs/1",
        "/nodes/q\"x",
        "/nodes/fetch/missing/deeper",
        "/é/1/1",
        "/é/7",
    ];
    let mut findings: Vec<Finding> = pointers
        .iter()
        .map(|p| Finding::new(Code::AG003, *p, "x"))
        .collect();
    locate(&doc.source, &mut findings);
    let got: Vec<(u32, u32)> = findings.iter().map(pos).collect();
    assert_eq!(
        got,
        [
            (1, 1),
            (3, 3),
            (4, 15),
            (4, 44),
            (4, 45),
            (4, 59),
            (5, 5),
            (4, 5),
            (7, 16),
            (7, 3),
        ]
    );
}

#[test]
fn format_selection() {
    assert_eq!(Format::from_path(Path::new("g.agraph.json")), Format::Json);
    assert_eq!(Format::from_path(Path::new("g.agraph.yaml")), Format::Yaml);
    assert_eq!(Format::from_path(Path::new("g.YML")), Format::Yaml);
    assert_eq!(Format::from_path(Path::new("g")), Format::Yaml);
    assert_eq!(Format::from_extension(Path::new("g.txt")), None);
    assert_eq!(Format::sniff("\n  {\"a\": 1}"), Format::Json);
    assert_eq!(Format::sniff("\u{feff}{}"), Format::Json);
    assert_eq!(Format::sniff("a: 1"), Format::Yaml);
    assert_eq!(Format::sniff(""), Format::Yaml);
}

#[test]
fn read_file_checks_size_utf8_and_format() {
    let dir = std::env::temp_dir().join(format!("weft-load-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let big = dir.join("big.agraph.yaml");
    std::fs::write(&big, "a: 1\n".repeat(10)).unwrap();
    let limits = Limits {
        max_bytes: 20,
        ..Limits::default()
    };
    let loaded = read_file(&big, &limits).unwrap();
    assert!(loaded.document.is_none());
    assert!(loaded.findings[0].message.contains("50 bytes"));

    let bad = dir.join("bad.agraph.json");
    std::fs::write(&bad, b"{\"a\": \"x\",\n \"b\": \"\xff\"}").unwrap();
    let loaded = read_file(&bad, &Limits::default()).unwrap();
    let f = &loaded.findings[0];
    assert_eq!(f.code, Code::AG001);
    assert!(
        f.message.contains("not valid UTF-8") && f.message.contains("byte 18"),
        "{}",
        f.message
    );
    assert_eq!(pos(f), (2, 8));

    let sniffed = dir.join("graph");
    std::fs::write(&sniffed, "{\"a\": 1, \"a\": 2}").unwrap();
    let loaded = read_file(&sniffed, &Limits::default()).unwrap();
    let doc = loaded.document.expect("doc");
    assert_eq!(doc.source.format, Format::Json);
    assert_eq!(doc.source.name, sniffed.display().to_string());
    assert_eq!(doc.value, json!({"a": 1}));
    assert_eq!(loaded.findings[0].code, Code::AG005);

    assert!(read_file(&dir.join("missing.json"), &Limits::default()).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn yaml_and_json_agree_on_numbers() {
    let json_text = r#"{"i": 17, "f": 1.0, "e": 1e-7, "n": -3, "u": 18446744073709551615}"#;
    let yaml_text = "i: 17\nf: 1.0\ne: 1e-7\nn: -3\nu: 18446744073709551615\n";
    let j = load(json_text).document.expect("json").value;
    let y = load_str("t.yaml", yaml_text, Format::Yaml, &Limits::default())
        .document
        .expect("yaml")
        .value;
    assert_eq!(j, y);
    let _: &Value = &j;
}
