//! Fuzz target: the whole reader on arbitrary YAML — load, validate, levels, plan — must
//! never panic or hang, and every finding must be positioned in the source. The input is
//! prefixed with a valid graph header half of the time so the fuzzer reaches the deeper
//! layers (nodes, edges, expressions) instead of stopping at the schema.

#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_ags::load::{Format, Limits, load_str};

const HEADER: &str = "ags_version: \"1.0\"\nkind: AgenticGraph\nid: fuzz\ntitle: t\nobjective: o\nentrypoints: [a]\n";

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let body = String::from_utf8_lossy(rest);
    let text = if mode & 1 == 1 { format!("{HEADER}{body}") } else { body.into_owned() };
    let limits = Limits {
        max_alias_nodes: 10_000,
        ..Limits::default()
    };
    let loaded = load_str("fuzz.yaml", &text, Format::Yaml, &limits);
    let Some(doc) = loaded.document else { return };
    let findings = weft_ags::validate::validate_document(&doc);
    assert!(findings.iter().all(|f| f.line.is_some() && f.column.is_some()));
    if let Some(root) = doc.value.as_object() {
        let _ = weft_ags::levels::detect(root);
        let _ = weft_ags::levels::refuse_above(root, 1);
        let _ = weft_ags::plan::plan(root);
    }
});
