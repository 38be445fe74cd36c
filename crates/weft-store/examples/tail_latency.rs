//! How long after its commit another process sees an event through the store's tail.
//!
//! `cargo run --release -p weft-store --example tail_latency [N] [INTERVAL_MS] [--weft PATH]`
//!
//! Two child processes share a database file: a writer appends N events to one run, one
//! every INTERVAL_MS (default 200 events, 20 ms), and notes when each append was called and
//! when it returned (committed and fsynced); a follower tails the run (`Store::tail`, or
//! with `--weft PATH` the real `weft events --follow RUN`) and notes when each event
//! reached it. Printed: the distribution of receipt − return (commit to receipt: the
//! commit is visible before the writer has its answer, so this can be slightly negative)
//! and of receipt − call (an upper bound that includes the commit's fsync), in ms.
//!
//! `... --example tail_latency overhead`: what watching costs the writing process. 8
//! threads append 2,000 events each to 100 runs of one file store, once with nobody
//! watching and once with a `RunWatch` on every run (as 100 live drivers hold while their
//! nodes run): process CPU per append, and the hub thread's CPU (`/proc`, clock ticks).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use weft_store::{EventLog, NewEvent, NewRun, RunTable, Store, TailFrom};

type Error = Box<dyn std::error::Error>;

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("write") => write(&args[1], args[2].parse()?, args[3].parse()?),
        Some("follow") => follow(&args[1], args[2].parse()?),
        Some("overhead") => overhead(),
        _ => measure(&args),
    }
}

/// The writer child: prints `i called_us returned_us` per append.
fn write(db: &str, n: u64, interval_ms: u64) -> Result<(), Error> {
    let store = Store::open(db)?;
    let mut out = std::io::stdout().lock();
    for i in 1..=n {
        std::thread::sleep(Duration::from_millis(interval_ms));
        let called = now_us();
        let event = NewEvent::new("step", serde_json::json!({ "i": i }), called / 1000);
        store.append("r", &[event])?;
        writeln!(out, "{i} {called} {}", now_us())?;
        out.flush()?;
    }
    Ok(())
}

/// The follower child: prints `i received_us` per event.
fn follow(db: &str, n: u64) -> Result<(), Error> {
    let store = Store::open(db)?;
    let mut tail = store.tail(TailFrom::Run {
        run_id: "r".into(),
        after_seq: 0,
    });
    let mut out = std::io::stdout().lock();
    let mut seen = 0;
    while seen < n {
        for tailed in tail.next_batch_blocking()? {
            let at = now_us();
            writeln!(out, "{} {at}", tailed.event.payload["i"])?;
            seen += 1;
        }
        out.flush()?;
    }
    Ok(())
}

fn measure(args: &[String]) -> Result<(), Error> {
    let numbers: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let n = numbers.first().copied().unwrap_or(200);
    let interval = numbers.get(1).copied().unwrap_or(20);
    let weft = args
        .iter()
        .position(|a| a == "--weft")
        .and_then(|i| args.get(i + 1));
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("tail.db");
    let db_text = db.to_string_lossy().into_owned();
    Store::open(&db)?.create_run(&NewRun {
        id: "r".into(),
        graph_digest: "sha256:tail".into(),
        created_at_ms: 0,
    })?;
    let me = std::env::current_exe()?;
    let mut follower = match weft {
        Some(weft) => Command::new(weft)
            .args(["events", "--follow", "r", "--db", &db_text])
            .stdout(Stdio::piped())
            .spawn()?,
        None => Command::new(&me)
            .args(["follow", &db_text, &n.to_string()])
            .stdout(Stdio::piped())
            .spawn()?,
    };
    let follower_out = follower.stdout.take().ok_or("no follower stdout")?;
    let via_weft = weft.is_some();
    // Receipt times: the follower's own, or (for `weft`) when this process read the line.
    let receiver = std::thread::spawn(move || -> Vec<(u64, i64)> {
        BufReader::new(follower_out)
            .lines()
            .map_while(Result::ok)
            .take(usize::try_from(n).unwrap_or(usize::MAX))
            .filter_map(|line| {
                if via_weft {
                    let at = now_us();
                    let v: serde_json::Value = serde_json::from_str(&line).ok()?;
                    Some((v["payload"]["i"].as_u64()?, at))
                } else {
                    let mut parts = line.split(' ');
                    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
                }
            })
            .collect()
    });
    // Let the follower start waiting before the first commit.
    std::thread::sleep(Duration::from_millis(300));
    let writer = Command::new(&me)
        .args(["write", &db_text, &n.to_string(), &interval.to_string()])
        .stdout(Stdio::piped())
        .output()?;
    let received = receiver.join().map_err(|_| "the receiver panicked")?;
    let _ = follower.kill();
    let _ = follower.wait();
    let written: Vec<(u64, i64, i64)> = String::from_utf8(writer.stdout)?
        .lines()
        .filter_map(|l| {
            let mut p = l.split(' ').map(|x| x.parse::<i64>().ok());
            Some((u64::try_from(p.next()??).ok()?, p.next()??, p.next()??))
        })
        .collect();
    let mut from_return = Vec::new();
    let mut from_call = Vec::new();
    for (i, at) in &received {
        if let Some((_, called, returned)) = written.iter().find(|w| w.0 == *i) {
            from_return.push(at - returned);
            from_call.push(at - called);
        }
    }
    println!(
        "follower: {}; {} events, one every {interval} ms; {} received",
        if via_weft {
            "weft events --follow"
        } else {
            "Store::tail"
        },
        n,
        received.len()
    );
    report("receipt - append returned", &mut from_return);
    report("receipt - append called", &mut from_call);
    Ok(())
}

fn report(name: &str, us: &mut [i64]) {
    us.sort_unstable();
    if us.is_empty() {
        println!("{name}: no samples");
        return;
    }
    let at = |q: f64| {
        let i = ((us.len() - 1) as f64 * q).round() as usize;
        us[i] as f64 / 1000.0
    };
    println!(
        "{name} (ms): min {:.2}  p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}",
        at(0.0),
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
}

/// CPU seconds (user + system) of this process, or of its thread named `thread`.
fn cpu_seconds(thread: Option<&str>) -> f64 {
    let stat_of = |dir: &std::path::Path| -> Option<f64> {
        let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let ticks: f64 =
            fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
        Some(ticks / 100.0)
    };
    match thread {
        None => stat_of(std::path::Path::new("/proc/self")).unwrap_or(0.0),
        Some(name) => std::fs::read_dir("/proc/self/task")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name)
            })
            .filter_map(|t| stat_of(&t.path()))
            .fold(0.0, |sum, s| sum + s),
    }
}

fn overhead() -> Result<(), Error> {
    const RUNS: usize = 100;
    const THREADS: usize = 8;
    const PER_THREAD: usize = 2000;
    for watched in [false, true] {
        let dir = tempfile::tempdir()?;
        let store = Store::open(dir.path().join("o.db"))?;
        let ids: Vec<String> = (0..RUNS).map(|i| format!("r{i}")).collect();
        for id in &ids {
            store.create_run(&NewRun {
                id: id.clone(),
                graph_digest: "sha256:o".into(),
                created_at_ms: 0,
            })?;
        }
        let watches: Vec<_> = if watched {
            ids.iter().map(|id| store.watch_run(id)).collect()
        } else {
            Vec::new()
        };
        let cpu = cpu_seconds(None);
        let start = std::time::Instant::now();
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let store = &store;
                let ids = &ids;
                s.spawn(move || {
                    for i in 0..PER_THREAD {
                        let run = &ids[(t * PER_THREAD + i) % RUNS];
                        let event = NewEvent::new("step", serde_json::json!({ "i": i }), 0);
                        if let Err(e) = store.append(run, &[event]) {
                            eprintln!("{e}");
                        }
                    }
                });
            }
        });
        let wall = start.elapsed().as_secs_f64();
        let cpu = cpu_seconds(None) - cpu;
        let hub = cpu_seconds(Some("weft-store-tail"));
        let appends = (THREADS * PER_THREAD) as f64;
        let who = if watched {
            "100 runs watched"
        } else {
            "nobody watching"
        };
        println!(
            "{who}: {appends} appends in {wall:.2} s; process CPU {:.2} us/append; \
             hub thread {hub:.2} s CPU ({:.1} % of the wall time)",
            cpu / appends * 1e6,
            hub / wall * 100.0,
        );
        drop(watches);
    }
    Ok(())
}
