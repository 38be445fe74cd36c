//! The weft side of the engine workloads W1–W8 (`docs/BENCHMARKS.md`), called once per case
//! by `bench/engine-vs-langgraph.sh`; prints one JSON object per case on stdout.
//!
//! ```text
//! engine_workloads core    SHAPE [REPS]          W1–W3 (a): the pure scheduler alone
//! engine_workloads engine  SHAPE [REPS] [STORE]  W1–W3 (b): run_document on an in-memory
//!                                                SQLite store, or `ephemeral` (no SQL)
//! engine_workloads durable SHAPE DIR [REPS]      W4: run_document on a SQLite file
//! engine_workloads payload N BYTES DIR [REPS]    W5: N exec steps, each emitting BYTES
//! engine_workloads resume  N STOP DIR [REPS]     W7: stop a chain-N after STOP nodes, resume
//! engine_workloads barrier [REPS]                W8: 50 ms and 1 s branches, after_fast
//! engine_workloads map     N [REPS] [STORE] [P]  W3m: a map node over N items → reduce, at
//!                                                most P items started at once (default N)
//! engine_workloads loopmap LxN [REPS] [STORE]    a loop of L iterations of a map over N
//! ```
//!
//! SHAPE is `chain:N`, `layered:WxD`, `tree:N` or `fanout:K` (`weft_bench::workloads`).
//! Each case runs once as a warm-up, then REPS times (default 5); times are medians of the
//! measured runs: wall clock and process CPU time (`CLOCK_PROCESS_CPUTIME_ID`: user +
//! system of every thread, the quantity `getrusage` reports). `peak_rss_kib` is the
//! process's high-water mark (`VmHWM`). Every run checks its work: each node must have run
//! exactly once and settled with the expected output, or the program fails.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a benchmark failure with a message"
)]

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weft_bench::workloads::{DONE_LABEL, Shape, barrier, payload_chain};
use weft_core::{Action, Event, Options, Outcome, Scheduler};
use weft_engine::{
    EngineError, FinalStatus, ObserveError, Observed, ResumeOptions, RunEvent, RunObserver,
    RunOptions, resume_run, run_document, run_owned,
};
use weft_store::{EventRecord, Store};

/// The allocator the `weft` binary ships with (`weft-cli/src/main.rs` says why); the
/// system allocator with `--no-default-features`.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    let reps = |i: usize| -> usize { arg(i).and_then(|s| s.parse().ok()).unwrap_or(5) };
    let shape = |i: usize| -> Res<Shape> {
        arg(i)
            .and_then(Shape::parse)
            .ok_or_else(|| format!("bad or missing SHAPE: {:?}", arg(i)).into())
    };
    let dir = |i: usize| -> Res<PathBuf> {
        let d = PathBuf::from(arg(i).ok_or("missing DIR")?);
        std::fs::create_dir_all(&d)?;
        Ok(d)
    };
    let num = |i: usize| -> Res<usize> { Ok(arg(i).ok_or("missing number")?.parse()?) };
    let out = match arg(0) {
        Some("core") => core(shape(1)?, reps(2)),
        Some("engine") => engine(shape(1)?, reps(2), arg(3) == Some("ephemeral"))?,
        Some("durable") => durable(shape(1)?, &dir(2)?, reps(3))?,
        Some("payload") => payload(num(1)?, num(2)?, &dir(3)?, reps(4))?,
        Some("resume") => resume(num(1)?, num(2)?, &dir(3)?, reps(4))?,
        Some("barrier") => barrier_case(reps(1))?,
        Some("map") => {
            let n = num(1)?;
            let limit = arg(4).and_then(|s| s.parse().ok()).unwrap_or(n);

            let case = if limit == n {
                format!("map:{n}")
            } else {
                format!("map:{n}/{limit}")
            };
            map_case(
                &case,
                &weft_bench::workloads::map_fanout(n, limit),
                n,
                reps(2),
                arg(3) == Some("ephemeral"),
            )
            .map(|mut out| {
                out["max_parallel"] = json!(limit);
                out
            })?
        }
        Some("loopmap") => {
            let (l, n) = arg(1)
                .and_then(|a| a.split_once('x'))
                .and_then(|(l, n)| Some((l.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
                .ok_or("loopmap needs LxN")?;
            map_case(
                &format!("loopmap:{l}x{n}"),
                &weft_bench::workloads::loop_of_maps(l, n),
                l * n,
                reps(2),
                arg(3) == Some("ephemeral"),
            )?
        }
        _ => {
            eprintln!("usage: see the module docs of examples/engine_workloads.rs");
            std::process::exit(2);
        }
    };
    let mut out = out;
    out["peak_rss_kib"] = json!(peak_rss_kib());
    out["allocator"] = json!(if cfg!(feature = "mimalloc") {
        "mimalloc"
    } else {
        "system"
    });
    println!("{out}");
    Ok(())
}

// --- measuring ----------------------------------------------------------------------------

fn cpu_now() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// Wall and CPU time of one call.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration, Duration) {
    let (c0, t0) = (cpu_now(), Instant::now());
    let value = f();
    (value, t0.elapsed(), cpu_now().saturating_sub(c0))
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

/// Medians of the measured runs (the warm-up left out) as a JSON object.
#[derive(Default)]
struct Samples {
    wall_ms: Vec<f64>,
    cpu_ms: Vec<f64>,
    /// The peak RSS of the process's first run (the warm-up) alone: from a reset
    /// high-water mark to the run's end, before its log is read back for the checks; when
    /// the kernel allows the reset.
    run_peak_rss_kib: Option<u64>,
}

impl Samples {
    fn push(&mut self, wall: Duration, cpu: Duration) {
        self.wall_ms.push(wall.as_secs_f64() * 1e3);
        self.cpu_ms.push(cpu.as_secs_f64() * 1e3);
    }

    fn summary(&self, per: usize) -> Value {
        let (wall, cpu) = (median(self.wall_ms.clone()), median(self.cpu_ms.clone()));
        let per = per.max(1) as f64;
        let mut out = json!({
            "runs": self.wall_ms.len(),
            "wall_ms": round(wall, 3),
            "cpu_ms": round(cpu, 3),
            "wall_us_per_node": round(wall * 1e3 / per, 3),
            "cpu_us_per_node": round(cpu * 1e3 / per, 3),
        });
        if let Some(kib) = self.run_peak_rss_kib {
            out["run_peak_rss_kib"] = json!(kib);
        }
        out
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let k = 10f64.powi(digits);
    (x * k).round() / k
}

fn proc_field(file: &str, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

fn peak_rss_kib() -> Option<u64> {
    proc_field("/proc/self/status", "VmHWM:")
}

/// Resets the process's peak RSS (`VmHWM`) to its current RSS (`/proc/self/clear_refs`,
/// Linux ≥ 4.0), so a run's own peak can be read after it; `false` where not allowed.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Bytes this process has handed to `write()` so far (`/proc/self/io` `wchar`).
fn written_bytes() -> u64 {
    proc_field("/proc/self/io", "wchar:").unwrap_or(0)
}

/// The database file and its WAL and shared-memory files, in bytes.
fn db_bytes(db: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .map(|suffix| {
            let mut p = db.as_os_str().to_owned();
            p.push(suffix);
            std::fs::metadata(PathBuf::from(p)).map_or(0, |m| m.len())
        })
        .sum()
}

fn runtime() -> tokio::runtime::Runtime {
    // The CLI's runtime: one thread, like LangGraph's synchronous `invoke`.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn options(project: &Path) -> RunOptions {
    RunOptions {
        project_dir: project.to_path_buf(),
        ..RunOptions::default()
    }
}

fn log_of(store: &dyn weft_store::RunStore, run_id: &str) -> Vec<EventRecord> {
    store.read(run_id, 0, usize::MAX).expect("reading the log")
}

/// The checks every W1–W4 run passes: the run succeeded and each node logged exactly one
/// start and one `node_finished` with the label [`DONE_LABEL`].
fn check_done(shape: Shape, records: &[EventRecord], status: FinalStatus) {
    assert_eq!(status, FinalStatus::Succeeded);
    let mut starts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut done = 0;
    for r in records {
        let node = r.payload["node"].as_str().unwrap_or_default();
        match r.kind.as_str() {
            "node_started" => *starts.entry(node).or_default() += 1,
            "node_finished" => {
                assert_eq!(r.payload["outcome"], "succeeded", "{node}");
                assert_eq!(r.payload["outputs"]["decision"], DONE_LABEL, "{node}");
                done += 1;
            }
            _ => {}
        }
    }
    assert_eq!(done, shape.nodes(), "every node settled once");
    assert_eq!(starts.len(), shape.nodes());
    assert!(starts.values().all(|&n| n == 1), "a node started twice");
}

// --- W1–W3 (a): the pure scheduler --------------------------------------------------------

/// Drives the scheduler alone: `Begin`, then every `Start` is answered by `Settled
/// succeeded` in FIFO order (a shell whose nodes take no time). The work checked: a counter
/// incremented per start, and the final summary.
fn drive_scheduler(graph: weft_core::WorkGraph, nodes: usize) -> usize {
    let mut s = Scheduler::new(
        graph,
        Options {
            max_parallel: nodes,
            ..Options::default()
        },
    );
    let mut ran = 0usize;
    let mut pending: VecDeque<Event> = VecDeque::new();
    let mut actions = s.apply(&Event::Begin).expect("begin");
    loop {
        for action in actions.drain(..) {
            match action {
                Action::Start { node } => {
                    ran += 1;
                    pending.push_back(Event::Settled {
                        node,
                        outcome: Outcome::Succeeded,
                        guards: vec![],
                    });
                }
                Action::EvaluateWhen { node } => {
                    pending.push_back(Event::WhenResolved { node, value: true })
                }
                Action::Skipped { .. } => {}
                Action::Finished { summary } => {
                    assert_eq!(summary.counts.succeeded, nodes);
                    return ran;
                }
            }
        }
        let event = pending.pop_front().expect("the scheduler waits on nothing");
        actions = s.apply(&event).expect("a legal event");
    }
}

fn core(shape: Shape, reps: usize) -> Value {
    let doc = shape.document();
    let graph = weft_engine::adapter::adapt_root(doc.as_object().expect("an object"))
        .expect("the shape adapts")
        .graph;
    let mut samples = Samples::default();
    for rep in 0..=reps {
        let g = graph.clone();
        let (ran, wall, cpu) = timed(|| drive_scheduler(g, shape.nodes()));
        assert_eq!(std::hint::black_box(ran), shape.nodes());
        if rep > 0 {
            samples.push(wall, cpu);
        }
    }
    let mut out = samples.summary(shape.nodes());
    out["case"] = json!(format!("core {}", label(shape)));
    out["nodes"] = json!(shape.nodes());
    out
}

fn label(shape: Shape) -> String {
    match shape {
        Shape::Chain(n) => format!("chain:{n}"),
        Shape::Layered { width, depth } => format!("layered:{width}x{depth}"),
        Shape::Tree { total, .. } => format!("tree:{total}"),
        Shape::FanOut(k) => format!("fanout:{k}"),
    }
}

// --- W1–W3 (b): the engine driver, in-memory store ----------------------------------------

fn engine(shape: Shape, reps: usize, ephemeral: bool) -> Res<Value> {
    let doc = shape.document();
    let (samples, events) = in_memory_runs(&doc, reps, ephemeral, |records, status| {
        check_done(shape, records, status);
    })?;
    let mut out = samples.summary(shape.nodes());
    out["case"] = json!(format!("{} {}", store_kind(ephemeral), label(shape)));
    out["nodes"] = json!(shape.nodes());
    out["events_per_run"] = json!(events);
    Ok(out)
}

fn store_kind(ephemeral: bool) -> &'static str {
    if ephemeral {
        "engine-ephemeral"
    } else {
        "engine"
    }
}

/// `doc` validated, then run once as a warm-up and `reps` times by `run_document` on a fresh
/// in-memory store (SQLite, or the ephemeral log), each run's log checked by `check`; the
/// measured runs' samples and the last run's event count.
fn in_memory_runs(
    doc: &Value,
    reps: usize,
    ephemeral: bool,
    check: impl Fn(&[EventRecord], FinalStatus),
) -> Res<(Samples, usize)> {
    let errors: Vec<String> = weft_ags::validate::validate(doc)
        .iter()
        .filter(|f| f.is_error())
        .map(|f| format!("{} {} {}", f.code.as_str(), f.pointer, f.message))
        .collect();
    assert!(errors.is_empty(), "invalid workload: {errors:?}");
    let project = tempfile::tempdir()?;
    let rt = runtime();
    let mut samples = Samples::default();
    let mut events = 0;
    for rep in 0..=reps {
        let store: weft_store::SharedStore = if ephemeral {
            std::sync::Arc::new(weft_store::EphemeralStore::new())
        } else {
            std::sync::Arc::new(Store::open_in_memory()?)
        };
        let opts = options(project.path());
        let reset = reset_peak_rss();
        // Handed over as `weft run` does (`run_owned`): the copy is made before timing.
        let owned = doc.clone();
        let (report, wall, cpu) = timed(|| rt.block_on(run_owned(owned, &*store, &opts)));
        if reset && rep == 0 {
            // The first run in the process: later ones start where the allocator kept the
            // pages earlier runs and their checks freed.
            samples.run_peak_rss_kib = peak_rss_kib();
        }
        let report = report?;
        let records = log_of(&*store, &report.run_id);
        check(&records, report.status);
        events = records.len();
        if rep > 0 {
            samples.push(wall, cpu);
        }
    }
    Ok((samples, events))
}

// --- W3m: map fan-out, and a loop of maps ------------------------------------------------

/// `doc` (a map, or a loop of maps, over `items` items in all) run by `run_document`; per
/// item = the run's time / `items`. Checked: the run succeeded and exactly `items` body
/// steps settled `succeeded` with [`DONE_LABEL`], each in its own instance.
fn map_case(case: &str, doc: &Value, items: usize, reps: usize, ephemeral: bool) -> Res<Value> {
    let log_bytes = std::cell::Cell::new(0);
    let (samples, events) = in_memory_runs(doc, reps, ephemeral, |records, status| {
        assert_eq!(status, FinalStatus::Succeeded, "{case}");
        log_bytes.set(
            records
                .iter()
                .map(|r| r.kind.len() + r.payload.to_string().len())
                .sum::<usize>(),
        );
        let steps: std::collections::BTreeSet<&str> = records
            .iter()
            .filter(|r| r.kind == "node_finished" && r.payload["node"] == "step")
            .inspect(|r| assert_eq!(r.payload["outputs"]["decision"], DONE_LABEL))
            .filter_map(|r| r.payload["scope"].as_str())
            .collect();
        assert_eq!(steps.len(), items, "{case}: one settled step per item");
    })?;
    let mut out = samples.summary(items);
    out["case"] = json!(format!("{} {case}", store_kind(ephemeral)));
    out["items"] = json!(items);
    out["events_per_run"] = json!(events);
    // What one run leaves in the log (kind + payload JSON), per item: the ephemeral store
    // keeps it in memory, so it is part of the peak RSS.
    out["log_bytes_per_item"] = json!(log_bytes.get() / items.max(1));
    Ok(out)
}

// --- W4: durable mode ---------------------------------------------------------------------

/// What one durable run wrote.
struct Written {
    transactions: u64,
    events: usize,
    /// Database + WAL + shm growth during the run (LangGraph's measure).
    file_growth: u64,
    /// The database file after closing (WAL checkpointed into it), minus before the run.
    footprint: u64,
    /// Bytes handed to `write()` during the run (WAL frames included).
    write_calls_bytes: u64,
    /// Sum of the stored events' kind + payload JSON lengths.
    log_bytes: usize,
    records: Vec<EventRecord>,
}

fn durable_run(
    rt: &tokio::runtime::Runtime,
    doc: &Value,
    db: &Path,
    project: &Path,
) -> Res<(Written, FinalStatus, Duration, Duration)> {
    let store = Store::open(db)?;
    let base_file = std::fs::metadata(db)?.len();
    let before = db_bytes(db);
    let tx0 = store.stats().transactions;
    let w0 = written_bytes();
    let opts = options(project);
    let owned = doc.clone();
    let (report, wall, cpu) = timed(|| rt.block_on(run_owned(owned, &store, &opts)));
    let report = report?;
    let write_calls_bytes = written_bytes() - w0;
    let stats = store.stats();
    let file_growth = db_bytes(db).saturating_sub(before);
    let records = log_of(&store, &report.run_id);
    drop(store);
    let footprint = std::fs::metadata(db)?.len().saturating_sub(base_file);
    let log_bytes = records
        .iter()
        .map(|r| r.kind.len() + r.payload.to_string().len())
        .sum();
    Ok((
        Written {
            transactions: stats.transactions - tx0,
            events: records.len(),
            file_growth,
            footprint,
            write_calls_bytes,
            log_bytes,
            records,
        },
        report.status,
        wall,
        cpu,
    ))
}

fn written_json(w: &Written, steps: usize) -> Value {
    let per = |x: f64| round(x / steps.max(1) as f64, 1);
    json!({
        "commits_per_run": w.transactions,
        "commits_per_step": per(w.transactions as f64),
        "events_per_run": w.events,
        "log_bytes_per_run": w.log_bytes,
        "log_bytes_per_step": per(w.log_bytes as f64),
        "file_growth_per_run": w.file_growth,
        "file_growth_per_step": per(w.file_growth as f64),
        "db_footprint_per_run": w.footprint,
        "write_bytes_per_run": w.write_calls_bytes,
        "write_bytes_per_step": per(w.write_calls_bytes as f64),
    })
}

fn durable(shape: Shape, dir: &Path, reps: usize) -> Res<Value> {
    let doc = shape.document();
    let project = tempfile::tempdir()?;
    let rt = runtime();
    let mut samples = Samples::default();
    let mut last = None;
    for rep in 0..=reps {
        let db = dir.join(format!("w4-{}-{rep}.db", label(shape).replace(':', "-")));
        let (w, status, wall, cpu) = durable_run(&rt, &doc, &db, project.path())?;
        check_done(shape, &w.records, status);
        if rep > 0 {
            samples.push(wall, cpu);
        }
        last = Some(w);
    }
    let mut out = samples.summary(shape.nodes());
    out["case"] = json!(format!("durable {}", label(shape)));
    out["nodes"] = json!(shape.nodes());
    out["written"] = written_json(&last.expect("one run"), shape.nodes());
    Ok(out)
}

// --- W5: state growth ---------------------------------------------------------------------

fn payload(n: usize, bytes: usize, dir: &Path, reps: usize) -> Res<Value> {
    let doc = payload_chain(n, bytes);
    let project = tempfile::tempdir()?;
    let rt = runtime();
    let mut samples = Samples::default();
    let mut last = None;
    for rep in 0..=reps {
        let db = dir.join(format!("w5-{n}-{rep}.db"));
        let (w, status, wall, cpu) = durable_run(&rt, &doc, &db, project.path())?;
        assert_eq!(status, FinalStatus::Succeeded);
        let chunks: Vec<usize> = w
            .records
            .iter()
            .filter(|r| r.kind == "node_finished")
            .map(|r| r.payload["outputs"]["chunk"].as_str().map_or(0, str::len))
            .collect();
        assert_eq!(chunks.len(), n);
        assert!(
            chunks.iter().all(|&c| c == bytes),
            "every step emitted its chunk"
        );
        if rep > 0 {
            samples.push(wall, cpu);
        }
        last = Some(w);
    }
    let mut out = samples.summary(n);
    out["case"] = json!(format!("payload:{n}"));
    out["nodes"] = json!(n);
    out["raw_bytes"] = json!(n * bytes);
    out["written"] = written_json(&last.expect("one run"), n);
    Ok(out)
}

// --- W7: stop and resume ------------------------------------------------------------------

fn copy_db(from: &Path, to: &Path) -> Res<()> {
    for suffix in ["", "-wal"] {
        let (mut f, mut t) = (from.as_os_str().to_owned(), to.as_os_str().to_owned());
        f.push(suffix);
        t.push(suffix);
        let (f, t) = (PathBuf::from(f), PathBuf::from(t));
        let _ = std::fs::remove_file(&t);
        if f.exists() {
            std::fs::copy(&f, &t)?;
        }
    }
    Ok(())
}

/// W7's stopwatch: when (wall instant, process CPU time) the first `node_started` of a
/// resumed run was durable, and its node.
#[derive(Debug, Default)]
struct FirstStart {
    at: OnceLock<(Instant, Duration)>,
    node: OnceLock<String>,
}

impl RunObserver for FirstStart {
    fn on_event(&self, seen: &Observed<'_>) -> Result<(), ObserveError> {
        if let RunEvent::NodeStarted { node, .. } = seen.event
            && self.at.set((Instant::now(), cpu_now())).is_ok()
        {
            let _ = self.node.set(node.clone());
        }
        Ok(())
    }
}

fn resume(n: usize, stop: usize, dir: &Path, reps: usize) -> Res<Value> {
    let shape = Shape::Chain(n);
    let doc = shape.document();
    let project = tempfile::tempdir()?;
    let rt = runtime();
    // The stopped run: `run_started`, then two events per node; the driver stops when it
    // tries to log the start of node `stop`, as if the process had died right there.
    let base = dir.join(format!("w7-{n}-base.db"));
    let _ = std::fs::remove_file(&base);
    let run_id = "w7".to_string();
    {
        let store = Store::open(&base)?;
        let mut opts = options(project.path());
        opts.run_id = Some(run_id.clone());
        opts.stop_after_events = Some(1 + 2 * stop);
        match rt.block_on(run_document(&doc, &store, &opts)) {
            Err(EngineError::Stopped(k)) => assert_eq!(k, 1 + 2 * stop),
            other => panic!("expected the test hook to stop the run, got {other:?}"),
        }
    }
    let resume_opts =
        |stop_after: Option<usize>, observers: Vec<Arc<dyn RunObserver>>| ResumeOptions {
            run: RunOptions {
                stop_after_events: stop_after,
                observers,
                ..options(project.path())
            },
            ..ResumeOptions::default()
        };
    // Time to the first resumed step, the event LangGraph's side is timed to ("until node
    // 500 starts"): open the file, read and replay the log, until node `stop`'s
    // `node_started` is durable — taken when the observer sees it (observers are told after
    // the commit). The hook then stops the driver at its next append.
    let mut first = Samples::default();
    let mut open = Vec::new();
    for rep in 0..=reps {
        let db = dir.join(format!("w7-{n}-{rep}.db"));
        copy_db(&base, &db)?;
        let started = Arc::new(FirstStart::default());
        let observers: Vec<Arc<dyn RunObserver>> = vec![started.clone()];
        let (c0, t0) = (cpu_now(), Instant::now());
        let store = Store::open(&db).expect("opening the stopped run");
        let opened = t0.elapsed();
        let result = rt.block_on(resume_run(
            &store,
            &run_id,
            None,
            &resume_opts(Some(1), observers),
        ));
        assert!(matches!(result, Err(EngineError::Stopped(1))), "{result:?}");
        let (at, cpu) = started
            .at
            .get()
            .copied()
            .expect("the resumed run logged a node_started");
        assert_eq!(
            started.node.get().map(String::as_str),
            Some(format!("c{stop}").as_str())
        );
        if rep > 0 {
            first.push(at.duration_since(t0), cpu.saturating_sub(c0));
            open.push(opened.as_secs_f64() * 1e3);
        }
    }
    // Correctness and the rest of the run: resume a fresh copy to the end.
    let db = dir.join(format!("w7-{n}-full.db"));
    copy_db(&base, &db)?;
    let store = Store::open(&db)?;
    let (report, wall, cpu) = timed(|| {
        rt.block_on(resume_run(
            &store,
            &run_id,
            None,
            &resume_opts(None, Vec::new()),
        ))
    });
    let report = report?;
    assert!(report.resumed);
    assert_eq!(report.status, "succeeded");
    let records = log_of(&store, &run_id);
    check_done(shape, &records, FinalStatus::Succeeded);
    let stopped_at = (1 + 2 * stop) as u64;
    let finished_before: std::collections::BTreeSet<&str> = records
        .iter()
        .filter(|r| r.seq <= stopped_at && r.kind == "node_finished")
        .filter_map(|r| r.payload["node"].as_str())
        .collect();
    let rerun = records
        .iter()
        .filter(|r| r.seq > stopped_at && r.kind == "node_started")
        .filter_map(|r| r.payload["node"].as_str())
        .filter(|id| finished_before.contains(id))
        .count();
    let first_summary = first.summary(1);
    Ok(json!({
        "case": format!("resume chain:{n} at {stop}"),
        "nodes": n,
        "completed_before_stop": finished_before.len(),
        "events_replayed": stopped_at,
        "to_first_step_wall_ms": first_summary["wall_ms"],
        "to_first_step_cpu_ms": first_summary["cpu_ms"],
        "open_ms": round(median(open), 3),
        "rest_of_run_wall_ms": round(wall.as_secs_f64() * 1e3, 3),
        "rest_of_run_cpu_ms": round(cpu.as_secs_f64() * 1e3, 3),
        "completed_nodes_rerun": rerun,
        "runs": reps,
    }))
}

// --- W8: barrier latency ------------------------------------------------------------------

fn barrier_case(reps: usize) -> Res<Value> {
    let doc = barrier();
    let project = tempfile::tempdir()?;
    let rt = runtime();
    let (mut after_fast, mut fast_done, mut slow_done, mut total) =
        (vec![], vec![], vec![], vec![]);
    for rep in 0..=reps {
        let store = Store::open_in_memory()?;
        let (report, wall, _) =
            timed(|| rt.block_on(run_owned(doc.clone(), &store, &options(project.path()))));
        let report = report?;
        assert_eq!(report.status, FinalStatus::Succeeded);
        let records = log_of(&store, &report.run_id);
        let t0 = records[0].recorded_at_ms;
        let at = |kind: &str, node: &str| -> f64 {
            let r = records
                .iter()
                .find(|r| r.kind == kind && r.payload["node"] == node)
                .expect("the event is logged");
            (r.recorded_at_ms - t0) as f64
        };
        if rep > 0 {
            after_fast.push(at("node_started", "after_fast"));
            fast_done.push(at("node_finished", "fast"));
            slow_done.push(at("node_finished", "slow"));
            total.push(wall.as_secs_f64() * 1e3);
        }
    }
    Ok(json!({
        "case": "barrier",
        "runs": reps,
        "after_fast_start_ms": median(after_fast),
        "fast_done_ms": median(fast_done),
        "slow_done_ms": median(slow_done),
        "wall_ms": round(median(total), 1),
    }))
}
