//! Load time of a ~1 MB document in both formats. Ignored by default; run with
//! `cargo test --release -p weft-ags --test load_perf -- --ignored --nocapture`.
#![allow(
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "a timing test: it reads the clock"
)]

use serde_json::{Map, Value, json};
use std::time::Instant;
use weft_ags::load::{Format, Limits, load_str, locate, to_json_pretty, to_yaml};
use weft_ags::{Code, Finding};

fn big_graph() -> Value {
    let mut nodes = Map::new();
    for i in 0..2500 {
        nodes.insert(
            format!("node_{i}"),
            json!({
                "type": "task",
                "description": format!("Step {i}: fetch the inputs, run the checks and report"),
                "depends_on": [format!("node_{}", i.max(1) - 1)],
                "intelligence": {"tier": "standard", "rationale": "needs judgement"},
                "inputs": {"repo": {"from": "${{ params.repo }}"}, "n": {"value": i}},
                "outputs": {"report": {"type": "string"}, "score": {"type": "number"}},
                "x-meta": {"weight": 0.5, "tags": ["a", "b", "c"]},
            }),
        );
    }
    json!({"ags_version": "1.0", "name": "big", "nodes": nodes})
}

#[test]
#[ignore = "timing; run in release"]
fn one_megabyte_load_time() {
    let v = big_graph();
    for (format, text) in [
        (Format::Yaml, to_yaml(&v)),
        (Format::Json, to_json_pretty(&v)),
    ] {
        let limits = Limits::default();
        let _ = load_str("warm", &text, format, &limits);
        let runs = 10;
        let start = Instant::now();
        for _ in 0..runs {
            let loaded = load_str("big", &text, format, &limits);
            assert!(loaded.findings.is_empty());
        }
        let per = start.elapsed() / runs;
        let doc = load_str("big", &text, format, &limits).document.unwrap();
        assert_eq!(doc.value, v);
        let mut findings: Vec<Finding> = (0..100)
            .map(|i| Finding::new(Code::AG113, format!("/nodes/node_{}/inputs/n", i * 20), "x"))
            .collect();
        let start = Instant::now();
        locate(&doc.source, &mut findings);
        let located = start.elapsed();
        println!(
            "{format:?}: {} bytes, load {per:?}, locate 100 findings {located:?}",
            text.len()
        );
    }
}
