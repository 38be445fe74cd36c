//! The in-memory kinds: `artifact_present`, `regex` (flags, negate, targets, the input cap)
//! and `expression` (true, false, and errors kept apart from false).

mod common;

use common::Fixture;
use serde_json::json;
use weft_criteria::Outcome;

#[test]
fn artifact_present() {
    let mut f = Fixture::new();
    f.outputs = json!({
        "s": "x", "zero": 0, "no": false, "arr": [1], "obj": {"a": 1},
        "empty_s": "", "empty_a": [], "empty_o": {}, "nul": null
    });
    for name in ["s", "zero", "no", "arr", "obj"] {
        let r = f.one(json!({"kind": "artifact_present", "output": name}));
        assert_eq!(r.outcome, Outcome::Passed, "{name}");
    }
    for name in ["empty_s", "empty_a", "empty_o"] {
        let r = f.one(json!({"kind": "artifact_present", "output": name}));
        assert_eq!(r.outcome, Outcome::Failed, "{name}");
        assert!(r.evidence.summary.contains("empty"));
    }
    for name in ["nul", "absent"] {
        let r = f.one(json!({"kind": "artifact_present", "output": name}));
        assert_eq!(r.outcome, Outcome::Failed, "{name}");
        assert!(r.evidence.summary.contains("not produced"));
    }
}

#[test]
fn regex_flags() {
    let mut f = Fixture::new();
    f.outputs = json!({"t": "first line\nSecond Line"});
    let cases = [
        ("second", "", false),
        ("second", "i", true),
        ("^Second", "", false),
        ("^Second", "m", true),
        ("line.Second", "", false),
        ("line.Second", "s", true),
        ("first \\s line", "", false),
        ("first \\s line # comment", "x", true),
        ("LINE.second", "is", true),
        ("^second", "im", true),
    ];
    for (pattern, flags, expected) in cases {
        let r = f.one(json!({"kind": "regex", "output": "t", "pattern": pattern, "flags": flags}));
        let want = if expected {
            Outcome::Passed
        } else {
            Outcome::Failed
        };
        assert_eq!(r.outcome, want, "/{pattern}/{flags}");
    }
}

#[test]
fn regex_negate_targets_and_values() {
    let mut f = Fixture::new();
    f.outputs = json!({"t": "all good", "obj": {"a": 1}, "n": 42});
    let r = f.one(json!({"kind": "regex", "output": "t", "pattern": "error", "negate": true}));
    assert_eq!(r.outcome, Outcome::Passed);
    let r = f.one(json!({"kind": "regex", "output": "t", "pattern": "good", "negate": true}));
    assert_eq!(r.outcome, Outcome::Failed);
    assert_eq!(r.evidence.matched_text.as_deref(), Some("good"));
    // Non-strings are matched as compact JSON.
    let r = f.one(json!({"kind": "regex", "output": "obj", "pattern": "^\\{\"a\":1\\}$"}));
    assert_eq!(r.outcome, Outcome::Passed);
    let r = f.one(json!({"kind": "regex", "output": "n", "pattern": "^42$"}));
    assert_eq!(r.outcome, Outcome::Passed);
    // `target` is an AGX expression.
    let r = f.one(
        json!({"kind": "regex", "target": "upper(params.name) + '-' + str(params.n)",
                         "pattern": "^WEFT-3$"}),
    );
    assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.evidence);
    let r = f.one(json!({"kind": "regex", "target": "params.n / 0", "pattern": "x"}));
    assert_eq!(r.outcome, Outcome::Error);
    assert!(r.evidence.expression_error.is_some());
    let r = f.one(json!({"kind": "regex", "output": "absent", "pattern": "x", "negate": true}));
    assert_eq!(
        r.outcome,
        Outcome::Failed,
        "a missing output never passes, even negated"
    );
    let r = f.one(json!({"kind": "regex", "output": "t", "pattern": "(unclosed"}));
    assert_eq!(r.outcome, Outcome::Error);
}

#[test]
fn regex_input_cap_fails_rather_than_truncating() {
    let mut f = Fixture::new();
    f.outputs = json!({"t": "0123456789A"});
    f.limits.max_regex_input = 10;
    for negate in [false, true] {
        let r = f.one(json!({"kind": "regex", "output": "t", "pattern": "0", "negate": negate}));
        assert_eq!(r.outcome, Outcome::Failed, "negate {negate}");
        assert_eq!(r.evidence.input_bytes, Some(11));
        assert!(r.evidence.summary.contains("over the regex input cap"));
    }
    f.limits.max_regex_input = 11;
    let r = f.one(json!({"kind": "regex", "output": "t", "pattern": "A$"}));
    assert_eq!(r.outcome, Outcome::Passed);
}

#[test]
fn regex_size_limit() {
    let mut f = Fixture::new();
    f.outputs = json!({"t": "x"});
    f.limits.max_regex_size = 1000;
    let r = f.one(json!({"kind": "regex", "output": "t", "pattern": "\\w{1000}"}));
    assert_eq!(r.outcome, Outcome::Error);
}

#[test]
fn expressions_true_false_and_errors() {
    let f = Fixture::new();
    let r = f.one(json!({"kind": "expression", "expr": "params.n > 2"}));
    assert_eq!(r.outcome, Outcome::Passed);
    let r = f.one(json!({"kind": "expression", "expr": "params.n > 5"}));
    assert_eq!(r.outcome, Outcome::Failed);
    assert!(
        r.evidence.expression_error.is_none(),
        "false is not an error"
    );
    for (expr, what) in [
        ("params.n", "non-boolean"),
        ("params.n > 'a'", "type error"),
        ("nope.x == 1", "unknown name"),
        ("params.n >", "parse error"),
    ] {
        let r = f.one(json!({"kind": "expression", "expr": expr}));
        assert_eq!(r.outcome, Outcome::Error, "{what}");
        assert!(r.evidence.expression_error.is_some(), "{what}");
    }
    let verdict = f.eval(json!({"criteria": [
        {"id": "a", "kind": "expression", "expr": "params.n", "description": "d"},
        {"id": "b", "kind": "expression", "expr": "false", "description": "d"},
        {"id": "c", "kind": "expression", "expr": "params.n", "description": "d",
         "record_evidence": false}
    ]}));
    let ids: Vec<&str> = verdict.expression_errors().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        ["a", "c"],
        "record_evidence: false keeps the expression error"
    );
}
