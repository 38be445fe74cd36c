//! YAML loading: the 1.2 core scalar table, every rejection with its code and position,
//! limits, duplicate-key recovery and `locate`.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "tests: a panic is a failure with a message; tests may time and write files"
)]

use serde_json::{Value, json};
use weft_ags::load::{Format, Limits, Loaded, load_str, locate};
use weft_ags::{Code, Finding};

fn load(text: &str) -> Loaded {
    load_str("t.yaml", text, Format::Yaml, &Limits::default())
}

fn value(text: &str) -> Value {
    let loaded = load(text);
    assert!(loaded.findings.is_empty(), "{:#?}", loaded.findings);
    loaded.document.expect("document").value
}

/// The single finding of `text`, which must be fatal or not as `fatal` says.
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
fn core_schema_scalars() {
    let v = value(
        "yes: yes\non: on\nn: n\noff: Off\nnull1: null\nnull2: Null\nnull3: ~\nempty:\n\
         t: true\nf: FALSE\ndec: 017\noct: 0o17\nhex: 0x1F\nneg: -12\nplus: +7\n\
         under: 1_000\nsexa: 1:20\nts: 2026-08-28T00:00:00Z\ndate: 2026-08-28\n\
         f1: 1.5\nf2: .5\nf3: 1e3\nf4: -2.\nver: 1.0\nquoted: \"017\"\nsingle: 'true'\n\
         big: 18446744073709551615\nsmall: -9223372036854775808\n",
    );
    let expected = json!({
        "yes": "yes", "on": "on", "n": "n", "off": "Off",
        "null1": null, "null2": null, "null3": null, "empty": null,
        "t": true, "f": false, "dec": 17, "oct": 15, "hex": 31, "neg": -12, "plus": 7,
        "under": "1_000", "sexa": "1:20", "ts": "2026-08-28T00:00:00Z", "date": "2026-08-28",
        "f1": 1.5, "f2": 0.5, "f3": 1000.0, "f4": -2.0, "ver": 1.0,
        "quoted": "017", "single": "true",
        "big": 18446744073709551615u64, "small": -9223372036854775808i64,
    });
    assert_eq!(v, expected);
    // Integers stay integers and floats floats (this is what JSON gives for the same text).
    assert!(v["dec"].is_u64() && v["f3"].is_f64() && v["ver"].is_f64());
}

#[test]
fn core_tags_are_honoured() {
    let v = value(
        "a: !!str 17\nb: !!int \"17\"\nc: !!float 1\nd: !!bool true\ne: !!null ''\n\
         f: !!map {x: 1}\ng: !!seq [1]\nh: ! 12\ni: !<tag:yaml.org,2002:str> 3\n",
    );
    assert_eq!(
        v,
        json!({"a": "17", "b": 17, "c": 1.0, "d": true, "e": null, "f": {"x": 1}, "g": [1], "h": "12", "i": "3"})
    );
}

#[test]
fn custom_tag_is_recoverable() {
    let loaded = load("a: 1\nb: !foo bar\n");
    assert_eq!(loaded.findings.len(), 1);
    let f = &loaded.findings[0];
    assert_eq!(f.code, Code::AG001);
    assert_eq!(f.message, "custom tag '!foo' is not allowed");
    assert!(f.help.is_some());
    assert_eq!(f.pointer, "/b");
    assert_eq!(pos(f), (2, 4));
    assert_eq!(
        loaded.document.expect("kept").value,
        json!({"a": 1, "b": "bar"})
    );

    let f = only("a: !!binary aGVsbG8=\n", false);
    assert!(f.message.contains("'!!binary'"), "{}", f.message);
    let f = only("a: !!int abc\n", false);
    assert!(f.message.contains("not a valid !!int"), "{}", f.message);
    let f = only("a: !!seq x\n", false);
    assert!(f.message.contains("does not fit"), "{}", f.message);
}

#[test]
fn non_finite_and_out_of_range_numbers_are_rejected() {
    for (text, col) in [
        ("a: .inf\n", 4),
        ("a: -.Inf\n", 4),
        ("a: .NaN\n", 4),
        ("a: 1e400\n", 4),
        ("a: !!float .inf\n", 4),
    ] {
        let f = only(text, true);
        assert_eq!(f.code, Code::AG001);
        assert!(
            f.message.contains("not a finite number"),
            "{text}: {}",
            f.message
        );
        assert_eq!(pos(&f), (1, col), "{text}");
        assert_eq!(f.pointer, "/a");
    }
    let f = only("x:\n  - 18446744073709551616\n", true);
    assert!(f.message.contains("out of range"), "{}", f.message);
    assert_eq!((f.pointer.as_str(), pos(&f)), ("/x/0", (2, 5)));
    let f = only("a: -9223372036854775809\n", true);
    assert!(f.message.contains("out of range"));
    // Quoted, they are strings.
    assert_eq!(value("a: '.inf'\n"), json!({"a": ".inf"}));
}

#[test]
fn all_number_errors_are_reported_in_one_pass() {
    let loaded = load("a: .inf\nb: .nan\nc: 99999999999999999999\n");
    assert!(loaded.document.is_none());
    assert_eq!(loaded.findings.len(), 3);
}

#[test]
fn non_string_keys_are_skipped() {
    let loaded = load("a: 1\n1: x\ntrue: y\nnull: z\n[1, 2]: w\n{k: v}: u\nb: 2\n");
    let lines: Vec<(u32, u32)> = loaded.findings.iter().map(pos).collect();
    assert_eq!(lines, [(2, 1), (3, 1), (4, 1), (5, 1), (6, 1)]);
    for f in &loaded.findings {
        assert_eq!(f.code, Code::AG001);
        assert!(
            f.message.starts_with("mapping keys must be strings"),
            "{}",
            f.message
        );
        assert_eq!(f.pointer, "");
    }
    assert_eq!(
        loaded.document.expect("kept").value,
        json!({"a": 1, "b": 2})
    );
    // Quoted or tagged keys are strings.
    assert_eq!(value("'1': x\n!!str 2: y\n"), json!({"1": "x", "2": "y"}));
}

#[test]
fn merge_key_is_an_ordinary_key() {
    let v = value("base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\n");
    assert_eq!(v, json!({"base": {"x": 1}, "c": {"<<": {"x": 1}, "y": 2}}));
}

#[test]
fn aliases_are_expanded() {
    let v = value(
        "d: &d\n  tier: standard\n  retries: [1, 2]\nn:\n  a: *d\n  b: *d\n&k key: 1\nother:\n  *k : 2\n",
    );
    assert_eq!(v["n"]["a"], json!({"tier": "standard", "retries": [1, 2]}));
    assert_eq!(v["n"]["a"], v["n"]["b"]);
    assert_eq!(v["other"], json!({"key": 2}));
}

#[test]
fn alias_bomb_fails_fast() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..30 {
        let prev = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
        ));
    }
    let start = std::time::Instant::now();
    let f = only(&text, true);
    assert!(start.elapsed().as_secs() < 2, "took {:?}", start.elapsed());
    assert_eq!(f.code, Code::AG001);
    assert!(f.message.contains("alias expansion"), "{}", f.message);
    assert!(f.line.is_some());
    // A small budget trips on a small reuse.
    let limits = Limits {
        max_alias_nodes: 3,
        ..Limits::default()
    };
    let loaded = load_str("t", "a: &a [1, 2]\nb: *a\nc: *a\n", Format::Yaml, &limits);
    assert!(loaded.document.is_none());
    assert_eq!(pos(&loaded.findings[0]), (3, 4));
}

#[test]
fn deep_nesting_is_rejected() {
    let deep = format!("a: {}{}\n", "[".repeat(200), "]".repeat(200));
    let f = only(&deep, true);
    assert_eq!(f.code, Code::AG001);
    assert!(
        f.message.contains("deeper than the limit of 128"),
        "{}",
        f.message
    );
    assert_eq!(pos(&f), (1, 4 + 127));
    // Exactly at the limit is fine: root + 127 levels.
    let ok = format!("a: {}{}\n", "[".repeat(127), "]".repeat(127));
    assert!(load(&ok).document.is_some());
    // Block nesting too.
    let mut block = String::new();
    for i in 0..130 {
        block.push_str(&" ".repeat(i));
        block.push_str("k:\n");
    }
    assert!(load(&block).document.is_none());
    // Aliases cannot be used to go deeper.
    let limits = Limits {
        max_depth: 4,
        ..Limits::default()
    };
    let text = "a: &a [[1]]\nb: [[*a]]\n";
    let loaded = load_str("t", text, Format::Yaml, &limits);
    assert!(loaded.document.is_none());
    assert_eq!(pos(&loaded.findings[0]), (2, 6));
    // Thousands of open brackets neither overflow the stack nor take long.
    let huge = format!("a: {}", "[".repeat(100_000));
    assert!(load(&huge).document.is_none());
}

#[test]
fn empty_documents_are_rejected() {
    for text in ["", "\n\n", "# only a comment\n", "---\n", "--- # c\n...\n"] {
        let f = only(text, true);
        assert_eq!(f.code, Code::AG001);
        assert_eq!(f.message, "document is empty", "{text:?}");
        assert_eq!(pos(&f), (1, 1));
    }
}

#[test]
fn root_must_be_an_object() {
    for (text, at) in [
        ("- a\n- b\n", (1, 1)),
        ("just text\n", (1, 1)),
        ("~\n", (1, 1)),
        ("\n\n  42\n", (3, 3)),
    ] {
        let f = only(text, true);
        assert!(
            f.message.starts_with("document root must be an object"),
            "{}",
            f.message
        );
        assert_eq!(pos(&f), at, "{text:?}");
        assert_eq!(f.pointer, "");
    }
}

#[test]
fn more_than_one_document_is_rejected() {
    let f = only("a: 1\n---\nb: 2\n", true);
    assert_eq!(f.code, Code::AG001);
    assert!(f.message.contains("more than one YAML document"));
    assert_eq!(pos(&f), (2, 1));
    // An explicit start and end of one document are fine.
    assert_eq!(value("---\na: 1\n...\n"), json!({"a": 1}));
}

#[test]
fn syntax_errors_carry_saphyr_message_and_position() {
    let f = only("a: 1\nb: [1, 2\nc: 3\n", true);
    assert_eq!(f.code, Code::AG001);
    assert!(
        f.message.starts_with("YAML syntax error: "),
        "{}",
        f.message
    );
    assert!(f.help.is_some());
    assert!(f.line.is_some() && f.column.is_some());
    let f = only("a: 'unterminated\n", true);
    assert!(f.message.starts_with("YAML syntax error"));
    let f = only("a: b: c\n", true);
    assert_eq!(pos(&f), (1, 5));
}

#[test]
fn bom_is_rejected() {
    let f = only("\u{feff}a: 1\n", true);
    assert_eq!(f.code, Code::AG001);
    assert!(f.message.contains("byte order mark"));
    assert!(f.help.as_deref().is_some_and(|h| h.contains("without")));
    assert_eq!(pos(&f), (1, 1));
}

#[test]
fn size_limit_is_checked_first() {
    let limits = Limits {
        max_bytes: 10,
        ..Limits::default()
    };
    let loaded = load_str("t", "a: 1234567890\n", Format::Yaml, &limits);
    let f = &loaded.findings[0];
    assert!(loaded.document.is_none());
    assert!(
        f.message.contains("14 bytes") && f.message.contains("limit of 10"),
        "{}",
        f.message
    );
    assert!(f.help.as_deref().is_some_and(|h| h.contains("--max-bytes")));
}

#[test]
fn duplicate_keys_keep_the_first_and_report_each() {
    let text = "nodes:\n  a:\n    type: task\n  b: {}\n  a:\n    type: gate\n  a: 3\nx: 1\nx: 2\n";
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
                (5, 3),
                "duplicate key 'a' (first defined at line 2, column 3)"
            ),
            (
                Code::AG005,
                "/nodes/a",
                (7, 3),
                "duplicate key 'a' (first defined at line 2, column 3)"
            ),
            (
                Code::AG005,
                "/x",
                (9, 1),
                "duplicate key 'x' (first defined at line 8, column 1)"
            ),
        ]
    );
    assert_eq!(
        loaded.findings[0].help.as_deref(),
        Some("remove or rename one of the two entries")
    );
    // Quoting does not make a different key.
    let f = only("a: 1\n'a': 2\n", false);
    assert_eq!(f.code, Code::AG005);
}

#[test]
fn order_of_nodes_and_extension_keys_is_kept() {
    let v = value(
        "x-zeta: 1\nags_version: '1.0'\nnodes:\n  zz: {}\n  aa: {x-b: 1, x-a: 2}\n  mm: {}\nx-alpha: true\n",
    );
    let top: Vec<&String> = v.as_object().expect("object").keys().collect();
    assert_eq!(top, ["x-zeta", "ags_version", "nodes", "x-alpha"]);
    let nodes: Vec<&String> = v["nodes"].as_object().expect("object").keys().collect();
    assert_eq!(nodes, ["zz", "aa", "mm"]);
    let ext: Vec<&String> = v["nodes"]["aa"]
        .as_object()
        .expect("object")
        .keys()
        .collect();
    assert_eq!(ext, ["x-b", "x-a"]);
}

#[test]
fn locate_finds_keys_and_items() {
    let text = "ags_version: '1.0'\nnodes:\n  fetch:\n    type: task\n    outputs:\n      - name: a\n      -   b\n  \"say: hi\": {}\nlist: [x, {k: v}]\n";
    let doc = load(text).document.expect("doc");
    let mut findings: Vec<Finding> = [
        "",
        "/nodes",
        "/nodes/fetch/type",
        "/nodes/fetch/outputs/0",
        "/nodes/fetch/outputs/0/name",
        "/nodes/fetch/outputs/1",
        "/nodes/say: hi",
        "/nodes/fetch/missing/deeper",
        "/list/1/k",
        "/list/5",
        "/nope",
    ]
    .iter()
    .map(|p| Finding::new(Code::AG003, *p, "x"))
    .collect();
    findings.push(Finding::new(Code::AG003, "/nodes", "kept").at(99, 9));
    locate(&doc.source, &mut findings);
    let got: Vec<(u32, u32)> = findings.iter().map(pos).collect();
    assert_eq!(
        got,
        [
            (1, 1),
            (2, 1),
            (4, 5),
            (6, 9),
            (6, 9),
            (7, 11),
            (8, 3),
            (3, 3),
            (9, 12),
            (9, 1),
            (1, 1),
            (99, 9),
        ]
    );
}

#[test]
fn locate_uses_the_first_of_duplicate_keys() {
    let text = "a: 1\nb:\n  c: 1\nb:\n  c: 2\n";
    let loaded = load(text);
    let doc = loaded.document.expect("doc");
    let mut f = vec![Finding::new(Code::AG003, "/b/c", "x")];
    locate(&doc.source, &mut f);
    assert_eq!(pos(&f[0]), (3, 3));
}

#[test]
fn positions_count_characters_not_bytes() {
    let loaded = load("é: 1\n\"ü\": !x 2\n");
    assert_eq!(pos(&loaded.findings[0]), (2, 6));
}
