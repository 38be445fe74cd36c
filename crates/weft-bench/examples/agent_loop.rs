//! W10, weft's side (`docs/BENCHMARKS.md`, run by `bench/agent-loop-vs-langgraph.sh`): N real
//! weft runs of the agent-loop graph of `weft_bench::agent_loop` against the mock LLM at
//! `MOCK_BASE_URL`, closed-loop at a fixed concurrency on one thread; prints one JSON object.
//!
//! ```text
//! agent_loop [--n 1000] [--concurrency 10] [--warmup W] [--store ephemeral|sqlite]
//!            [--delay-ms D] [--json-out FILE]
//! ```
//!
//! `--warmup` runs (default max(20, concurrency)) open the connection pool first; then the
//! timed phase: wall clock, process CPU (`CLOCK_PROCESS_CPUTIME_ID`: user + system of every
//! thread, what `getrusage` reports, so the SQLite writer is counted), CPU-ms per run, e2e
//! latency percentiles, peak RSS (`VmHWM`, the whole process), and the overhead per run as
//! W10 defines it: mean e2e − 2 × the mock's delay (`--delay-ms`, what the mock was started
//! with) − the time spent in the tool; and `e2e_minus_model_ms_per_run`, the same with the
//! model calls' time as the agent measured it (send to parsed answer, so it holds the mock's
//! own time and any queueing) instead of 2 × the delay. With no delay the e2e time is mostly the mock's own
//! work, so `cpu_ms_per_run` is weft's overhead there. `MOCK_PIDS` (comma-separated) adds the
//! mock's CPU over the same window, read from `/proc`; on the SQLite store,
//! `store_commits_per_run` counts its write transactions (one WAL fsync each). Exits 1 unless
//! every run was right.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a benchmark failure with a message"
)]

use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;
use weft_bench::agent_loop::{Bench, StoreMode, drive};

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Args {
    n: u64,
    concurrency: usize,
    warmup: Option<u64>,
    store: String,
    delay_ms: f64,
    json_out: Option<PathBuf>,
}

fn args() -> Args {
    let mut a = Args {
        n: 1000,
        concurrency: 10,
        warmup: None,
        store: "ephemeral".into(),
        delay_ms: 0.0,
        json_out: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .unwrap_or_else(|| panic!("{flag} needs a value (see the module docs)"));
        match flag.as_str() {
            "--n" => a.n = value.parse().expect("--n N"),
            "--concurrency" | "-c" => a.concurrency = value.parse().expect("--concurrency C"),
            "--warmup" => a.warmup = Some(value.parse().expect("--warmup W")),
            "--store" => a.store = value,
            "--delay-ms" => a.delay_ms = value.parse().expect("--delay-ms D"),
            "--json-out" => a.json_out = Some(PathBuf::from(value)),
            _ => panic!("unknown flag {flag} (see the module docs)"),
        }
    }
    a
}

fn cpu_now() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// Peak RSS of this process (`VmHWM`), in MiB.
fn peak_rss_mb() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// CPU seconds of the mock's processes (`MOCK_PIDS`), from `/proc/PID/stat`.
fn mock_cpu_s() -> Option<f64> {
    let pids = std::env::var("MOCK_PIDS").ok()?;
    let ticks = rustix::param::clock_ticks_per_second() as f64;
    let mut total = 0.0;
    for pid in pids.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let ut: f64 = fields.get(11)?.parse().ok()?;
        let st: f64 = fields.get(12)?.parse().ok()?;
        total += (ut + st) / ticks;
    }
    Some(total)
}

/// The `p`th percentile (nearest rank) of sorted milliseconds.
fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn round(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

fn main() {
    let t_start = Instant::now();
    let a = args();
    let base_url = std::env::var("MOCK_BASE_URL")
        .unwrap_or_else(|_| "http://127.0.0.1:8765/v1".into())
        .trim_end_matches('/')
        .to_owned();
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let mode = match a.store.as_str() {
        "ephemeral" => StoreMode::Ephemeral,
        "sqlite" => StoreMode::Sqlite(scratch.path().to_path_buf()),
        other => panic!("--store ephemeral|sqlite, not {other}"),
    };
    let project = scratch.path().join("project");
    std::fs::create_dir_all(&project).expect("the project directory");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let local = tokio::task::LocalSet::new();
    let bench = Rc::new(Bench::new(&base_url, &mode, &project).expect("the W10 setup"));
    let setup_ms = t_start.elapsed().as_secs_f64() * 1e3;

    let warmup = a.warmup.unwrap_or(20.max(a.concurrency as u64));
    let t_first = Instant::now();
    let first = local.block_on(&rt, drive(Rc::clone(&bench), 1, 1, 10_000_000));
    let first_run_ms = t_first.elapsed().as_secs_f64() * 1e3;
    let warm = local.block_on(
        &rt,
        drive(Rc::clone(&bench), warmup, a.concurrency, 10_000_001),
    );
    if let Some(e) = first.first_error.as_ref().or(warm.first_error.as_ref()) {
        eprintln!("warm-up failed: {e}");
    }
    let rss_warm = peak_rss_mb();

    let (tool_calls0, tool_ns0) = (
        bench.lookup.calls.load(Ordering::Relaxed),
        bench.lookup.nanos.load(Ordering::Relaxed),
    );
    let commits0 = bench.commits();
    let model_ns0 = bench.model.nanos.load(Ordering::Relaxed);
    let m0 = mock_cpu_s();
    let (c0, t0) = (cpu_now(), Instant::now());
    let driven = local.block_on(&rt, drive(Rc::clone(&bench), a.n, a.concurrency, 0));
    let (wall, cpu) = (t0.elapsed(), cpu_now().saturating_sub(c0));
    let m1 = mock_cpu_s();
    let commits = bench.commits().zip(commits0).map(|(b, a)| b - a);
    let tool_calls = bench.lookup.calls.load(Ordering::Relaxed) - tool_calls0;
    let model_ms = (bench.model.nanos.load(Ordering::Relaxed) - model_ns0) as f64 / 1e6;
    let tool_ms = (bench.lookup.nanos.load(Ordering::Relaxed) - tool_ns0) as f64 / 1e6;

    let n = a.n.max(1) as f64;
    let mut lat: Vec<f64> = driven
        .latencies
        .iter()
        .map(|d| d.as_secs_f64() * 1e3)
        .collect();
    lat.sort_by(f64::total_cmp);
    let mean = lat.iter().sum::<f64>() / lat.len().max(1) as f64;
    let wall_s = wall.as_secs_f64();
    let cpu_s = cpu.as_secs_f64();
    let out = json!({
        "framework": "weft",
        "store": mode.name(),
        "n": a.n,
        "concurrency": a.concurrency,
        "warmup": warmup,
        "delay_ms": a.delay_ms,
        "base_url": base_url,
        "ok": driven.ok,
        "errors": driven.errors,
        "first_error": driven.first_error,
        "wall_s": round(wall_s),
        "runs_per_s": round(n / wall_s),
        "cpu_s": round(cpu_s),
        "cpu_ms_per_run": round(cpu_s * 1e3 / n),
        "cpu_util": round(cpu_s / wall_s),
        "lat_p50_ms": round(pct(&lat, 50.0)),
        "lat_p90_ms": round(pct(&lat, 90.0)),
        "lat_p99_ms": round(pct(&lat, 99.0)),
        "lat_max_ms": round(lat.last().copied().unwrap_or(f64::NAN)),
        "lat_mean_ms": round(mean),
        "tool_calls": tool_calls,
        "tool_ms_per_run": round(tool_ms / n),
        "overhead_ms_per_run": round(mean - 2.0 * a.delay_ms - tool_ms / n),
        "model_ms_per_run": round(model_ms / n),
        "e2e_minus_model_ms_per_run": round(mean - model_ms / n - tool_ms / n),
        "store_commits_per_run": commits.map(|c| round(c as f64 / n)),
        "peak_rss_mb": peak_rss_mb().map(round),
        "rss_after_warmup_mb": rss_warm.map(round),
        "mock_cpu_s": m0.zip(m1).map(|(a, b)| round(b - a)),
        "setup_ms": round(setup_ms),
        "first_run_ms": round(first_run_ms),
        "allocator": if cfg!(feature = "mimalloc") { "mimalloc" } else { "system" },
    });
    let text = out.to_string();
    println!("{text}");
    if let Some(path) = &a.json_out {
        std::fs::write(path, format!("{text}\n")).expect("writing --json-out");
    }
    if driven.ok != a.n {
        std::process::exit(1);
    }
}
