//! load + validate + plan on the generated graphs (issue targets on the 2-core machine:
//! 10k chain ≤ 20 ms, 10×1000 layers with 100k edges ≤ 50 ms). Run with
//! `cargo bench -p weft-bench`; `scripts/bench.sh` records the results in docs/BENCHMARKS.md.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use weft_ags::load::{Format, Limits, load_str};

fn read_validate_plan(text: &str, format: Format) -> usize {
    let limits = Limits {
        max_bytes: 64 << 20,
        ..Limits::default()
    };
    let loaded = load_str("bench", text, format, &limits);
    let Some(doc) = loaded.document else {
        return loaded.findings.len();
    };
    let findings = weft_ags::validate::validate(&doc.value);
    let plan = doc.value.as_object().map(weft_ags::plan::plan);
    findings.len() + plan.map_or(0, |p| p.worst_case_executions as usize)
}

fn bench(c: &mut Criterion) {
    let chain = serde_json::to_string(&weft_bench::chain(10_000)).unwrap_or_default();
    let layered =
        serde_json::to_string(&weft_bench::layered(10, 1000, 100_000)).unwrap_or_default();
    let chain_yaml = weft_ags::load::to_yaml(&weft_bench::chain(10_000));
    let (faulty, _) = weft_bench::faulty(10_000);
    let mut g = c.benchmark_group("reader");
    g.sample_size(20).measurement_time(Duration::from_secs(6));
    g.bench_function("chain-10k/json", |b| {
        b.iter(|| read_validate_plan(black_box(&chain), Format::Json))
    });
    g.bench_function("chain-10k/yaml", |b| {
        b.iter(|| read_validate_plan(black_box(&chain_yaml), Format::Yaml))
    });
    g.bench_function("layered-10x1000-100k-edges/json", |b| {
        b.iter(|| read_validate_plan(black_box(&layered), Format::Json))
    });
    g.bench_function("faulty-10k/yaml", |b| {
        b.iter(|| read_validate_plan(black_box(&faulty), Format::Yaml))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
