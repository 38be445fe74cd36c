//! Fuzz target: the YAML loader must survive arbitrary input without panicking or hanging.
//!
//! Whatever loads must also survive `locate` (on a pointer into the value and one outside
//! it) and round-trip through `to_yaml` and `to_json_pretty` to an equal value with the
//! same digest.

#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_ags::load::{Format, Limits, load_str, locate, to_json_pretty, to_yaml};
use weft_ags::{Code, Finding};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let limits = Limits {
        max_alias_nodes: 10_000,
        ..Limits::default()
    };
    let loaded = load_str("fuzz.yaml", &text, Format::Yaml, &limits);
    assert!(loaded.document.is_some() || !loaded.findings.is_empty());
    assert!(
        loaded
            .findings
            .iter()
            .all(|f| f.line.is_some() && f.column.is_some())
    );
    let Some(doc) = loaded.document else { return };
    let first_key = doc
        .value
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .unwrap_or_default();
    let mut findings = vec![
        Finding::new(
            Code::AG003,
            weft_ags::diagnostic::pointer_push("", &first_key),
            "x",
        ),
        Finding::new(Code::AG003, "/no/such/0/thing", "x"),
    ];
    locate(&doc.source, &mut findings);
    assert!(findings.iter().all(|f| f.line.is_some()));

    let digest = weft_ags::digest::graph_digest(&doc.value);
    for (text, format) in [
        (to_yaml(&doc.value), Format::Yaml),
        (to_json_pretty(&doc.value), Format::Json),
    ] {
        let again = load_str("again", &text, format, &Limits::default());
        let value = again.document.map(|d| d.value);
        assert_eq!(value.as_ref(), Some(&doc.value), "{text}");
        assert_eq!(
            value.map(|v| weft_ags::digest::graph_digest(&v)),
            Some(digest.clone())
        );
    }
});
