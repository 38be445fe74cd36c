//! Fuzz target: the JSON loader (serde_json plus the position scanner) must survive
//! arbitrary input without panicking; whatever loads must agree with the YAML loader's
//! reading of the same value and survive `locate`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_ags::load::{Format, Limits, load_str, locate, to_json_pretty, to_yaml};
use weft_ags::{Code, Finding};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let loaded = load_str("fuzz.json", &text, Format::Json, &Limits::default());
    assert!(loaded.document.is_some() || !loaded.findings.is_empty());
    assert!(
        loaded
            .findings
            .iter()
            .all(|f| f.line.is_some() && f.column.is_some())
    );
    // The scanner alone, on text serde_json may have rejected.
    let source = weft_ags::load::Source {
        name: "fuzz.json".into(),
        text: text.to_string(),
        format: Format::Json,
    };
    let mut probe = vec![
        Finding::new(Code::AG003, "/a/0/b", "x"),
        Finding::new(Code::AG003, "/0", "x"),
    ];
    locate(&source, &mut probe);
    assert!(probe.iter().all(|f| f.line.is_some()));

    let Some(doc) = loaded.document else { return };
    for (text, format) in [
        (to_json_pretty(&doc.value), Format::Json),
        (to_yaml(&doc.value), Format::Yaml),
    ] {
        let again = load_str("again", &text, format, &Limits::default());
        assert_eq!(
            again.document.map(|d| d.value).as_ref(),
            Some(&doc.value),
            "{text}"
        );
    }
});
