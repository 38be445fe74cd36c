//! Times each phase of the reader on the generated graphs, to see where time goes:
//! `cargo run --release -p weft-bench --example phases`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use std::time::Instant;
use weft_ags::load::{Format, Limits, load_str};

fn main() {
    let limits = Limits {
        max_bytes: 64 << 20,
        ..Limits::default()
    };
    let cases = [
        (
            "chain-10k/json",
            serde_json::to_string(&weft_bench::chain(10_000)).unwrap_or_default(),
            Format::Json,
        ),
        (
            "chain-dataflow-10k/json",
            serde_json::to_string(&weft_bench::chain_dataflow(10_000)).unwrap_or_default(),
            Format::Json,
        ),
        (
            "layered-100k/json",
            serde_json::to_string(&weft_bench::layered(10, 1000, 100_000)).unwrap_or_default(),
            Format::Json,
        ),
        (
            "short-briefs-10k/min",
            weft_bench::minified(&weft_bench::chain_short_briefs(10_000)),
            Format::Json,
        ),
        (
            "chain-10k/yaml",
            weft_ags::load::to_yaml(&weft_bench::chain(10_000)),
            Format::Yaml,
        ),
    ];
    for (name, text, format) in cases {
        for _ in 0..2 {
            let t0 = Instant::now();
            let loaded = load_str(name, &text, format, &limits);
            let t1 = Instant::now();
            let Some(doc) = loaded.document else { continue };
            let mut findings = weft_ags::validate::validate(&doc.value);
            let t2 = Instant::now();
            weft_ags::load::locate(&doc.source, &mut findings);
            let t_locate = Instant::now();
            let plan = doc.value.as_object().map(weft_ags::plan::plan);
            let t3 = Instant::now();
            println!(
                "{name:20} {:>8} bytes  load {:>7.1} ms  validate {:>7.1} ms  locate {:>6.1} ms  plan {:>7.1} ms  ({} findings, {} executions)",
                text.len(),
                (t1 - t0).as_secs_f64() * 1e3,
                (t2 - t1).as_secs_f64() * 1e3,
                (t_locate - t2).as_secs_f64() * 1e3,
                (t3 - t_locate).as_secs_f64() * 1e3,
                findings.len(),
                plan.map_or(0, |p| p.worst_case_executions)
            );
        }
    }
}
