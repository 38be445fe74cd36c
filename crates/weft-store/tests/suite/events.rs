//! `EventLog` suite.

use serde_json::{Value, json};
use weft_store::{EventLog, NewEvent, RunTable, StoreError};

use super::{create_runs, numbered};

fn payload_ns<S: EventLog + ?Sized>(store: &S, run: &str) -> Vec<u64> {
    let events = store.read(run, 1, usize::MAX).unwrap();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1, "gap in {run}");
        assert_eq!(e.run_id, run);
    }
    events
        .iter()
        .map(|e| e.payload["n"].as_u64().unwrap())
        .collect()
}

pub fn append_assigns_gap_free_seqs<S: RunTable + EventLog + ?Sized>(store: &S) {
    create_runs(store, &["r1"]);
    assert_eq!(store.last_seq("r1").unwrap(), 0);
    assert_eq!(store.append("r1", &numbered(1, 1)).unwrap(), [1]);
    assert_eq!(store.append("r1", &numbered(2, 3)).unwrap(), [2, 3, 4]);
    assert_eq!(store.last_seq("r1").unwrap(), 4);
    assert_eq!(payload_ns(store, "r1"), [1, 2, 3, 4]);
}

pub fn empty_append_writes_nothing<S: RunTable + EventLog + ?Sized>(store: &S) {
    create_runs(store, &["r1"]);
    assert!(store.append("r1", &[]).unwrap().is_empty());
    assert_eq!(store.last_seq("r1").unwrap(), 0);
}

pub fn logs_are_per_run<S: RunTable + EventLog + ?Sized>(store: &S) {
    create_runs(store, &["a", "b"]);
    store.append("a", &numbered(1, 2)).unwrap();
    assert_eq!(store.append("b", &numbered(1, 1)).unwrap(), [1]);
    assert_eq!(store.append("a", &numbered(3, 1)).unwrap(), [3]);
    assert_eq!(payload_ns(store, "a"), [1, 2, 3]);
    assert_eq!(payload_ns(store, "b"), [1]);
}

pub fn unknown_run_is_an_error<S: RunTable + EventLog + ?Sized>(store: &S) {
    let unknown =
        |err: StoreError| matches!(err, StoreError::UnknownRun { ref run_id } if run_id == "nope");
    assert!(unknown(store.append("nope", &numbered(1, 1)).unwrap_err()));
    assert!(unknown(
        store
            .append_expecting("nope", 0, &numbered(1, 1))
            .unwrap_err()
    ));
    assert!(unknown(store.read("nope", 1, 10).unwrap_err()));
    assert!(unknown(store.last_seq("nope").unwrap_err()));
}

pub fn read_from_and_limit<S: RunTable + EventLog + ?Sized>(store: &S) {
    create_runs(store, &["r1"]);
    store.append("r1", &numbered(1, 10)).unwrap();
    let seqs = |from, limit| -> Vec<u64> {
        store
            .read("r1", from, limit)
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect()
    };
    assert_eq!(seqs(4, 3), [4, 5, 6]);
    assert_eq!(seqs(0, 2), [1, 2]);
    assert_eq!(seqs(9, 100), [9, 10]);
    assert!(seqs(11, 100).is_empty());
    assert!(seqs(u64::MAX, 100).is_empty());
    assert!(seqs(1, 0).is_empty());
    let e = &store.read("r1", 7, 1).unwrap()[0];
    assert_eq!((e.kind.as_str(), e.recorded_at_ms), ("step", 7));
}

pub fn append_expecting_detects_conflicts<S: RunTable + EventLog + ?Sized>(store: &S) {
    create_runs(store, &["r1"]);
    assert_eq!(
        store.append_expecting("r1", 0, &numbered(1, 2)).unwrap(),
        [1, 2]
    );
    // A writer that still believes the log is empty loses, and writes nothing.
    let err = store
        .append_expecting("r1", 0, &numbered(99, 3))
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert!(
        matches!(
            err,
            StoreError::SequenceConflict {
                expected: 0,
                actual: 2,
                ..
            }
        ),
        "{err}"
    );
    // Expecting the future is a conflict too.
    assert!(
        store
            .append_expecting("r1", 5, &numbered(99, 1))
            .unwrap_err()
            .is_conflict()
    );
    assert_eq!(
        store.append_expecting("r1", 2, &numbered(3, 1)).unwrap(),
        [3]
    );
    assert_eq!(payload_ns(store, "r1"), [1, 2, 3]);
}

/// Many threads appending to one run with plain `append`: each batch stays contiguous and
/// the log is gap-free.
pub fn concurrent_appends_stay_contiguous<S: RunTable + EventLog + ?Sized>(store: &S) {
    create_runs(store, &["r1"]);
    const THREADS: u64 = 6;
    const ROUNDS: u64 = 15;
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            scope.spawn(move || {
                for i in 0..ROUNDS {
                    let batch: Vec<_> = (0..3)
                        .map(|j| NewEvent::new("step", json!({"t": t, "i": i, "j": j}), 0))
                        .collect();
                    let seqs = store.append("r1", &batch).unwrap();
                    assert_eq!(seqs[2], seqs[0] + 2, "batch split");
                }
            });
        }
    });
    let events = store.read("r1", 1, usize::MAX).unwrap();
    assert_eq!(events.len() as u64, THREADS * ROUNDS * 3);
    for (k, chunk) in events.chunks(3).enumerate() {
        assert_eq!(chunk[0].seq, k as u64 * 3 + 1);
        let t = &chunk[0].payload["t"];
        assert!(
            chunk.iter().all(|e| &e.payload["t"] == t),
            "interleaved batch"
        );
    }
}

/// Workers that read-then-`append_expecting` with retry on conflict: every intended event
/// lands exactly once and the payload numbering equals the seq (no interleaving).
pub fn optimistic_workers_never_interleave<S: RunTable + EventLog + ?Sized>(store: &S) {
    create_runs(store, &["r1"]);
    const WORKERS: usize = 4;
    const PER_WORKER: usize = 12;
    let conflicts = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                let mut done = 0;
                while done < PER_WORKER {
                    let last = store.last_seq("r1").unwrap();
                    match store.append_expecting("r1", last, &numbered(last + 1, 2)) {
                        Ok(seqs) => {
                            assert_eq!(seqs, [last + 1, last + 2]);
                            done += 1;
                        }
                        Err(e) if e.is_conflict() => {
                            conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
    });
    let ns = payload_ns(store, "r1");
    assert_eq!(ns.len(), WORKERS * PER_WORKER * 2);
    assert!(
        ns.iter().zip(1..).all(|(n, seq)| *n == seq),
        "payload n != seq"
    );
}

/// A payload handed over as JSON text (the engine's form) reads back as the same value,
/// key order kept; text that is not JSON is refused when read, never silently dropped.
pub fn text_payloads_read_back_as_values<S: RunTable + EventLog + ?Sized>(store: &S) {
    create_runs(store, &["r1"]);
    let text = r#"{"zeta":1,"alpha":{"y":[3,2,1]},"s":"é \" 🦀"}"#;
    let events = [
        NewEvent::from_json("k", text.to_owned(), 7),
        NewEvent::new("k", json!({"v": 2}), 8),
    ];
    store.append("r1", &events).unwrap();
    let back = store.read("r1", 1, usize::MAX).unwrap();
    assert_eq!(back.len(), 2);
    assert_eq!(back[0].payload.to_string(), text);
    assert_eq!(back[0].payload["s"], json!("é \" 🦀"));
    assert_eq!((back[1].seq, back[1].payload.clone()), (2, json!({"v": 2})));
}

/// `read_raw` hands over each payload as the stored text, the same events `read` parses,
/// from `from_seq` and up to `limit`; an unknown run is an error.
pub fn raw_reads_give_the_stored_text<S: RunTable + EventLog + ?Sized>(store: &S) {
    create_runs(store, &["r1"]);
    let text = r#"{"zeta":1,"alpha":{"y":[3,2,1]},"s":"é \" 🦀"}"#;
    let events = [
        NewEvent::from_json("k", text.to_owned(), 7),
        NewEvent::new("v", json!({"v": 2}), 8),
        NewEvent::new("w", json!({"w": 3}), 9),
    ];
    store.append("r1", &events).unwrap();
    let raw = store.read_raw("r1", 1, usize::MAX).unwrap();
    let parsed = store.read("r1", 1, usize::MAX).unwrap();
    assert_eq!(raw.len(), 3);
    assert_eq!(raw[0].payload, text);
    assert_eq!(
        (raw[1].payload.as_str(), raw[1].kind.as_str()),
        (r#"{"v":2}"#, "v")
    );
    for (r, p) in raw.iter().zip(&parsed) {
        assert_eq!(
            (r.seq, &r.kind, r.recorded_at_ms),
            (p.seq, &p.kind, p.recorded_at_ms)
        );
        assert_eq!(
            serde_json::from_str::<Value>(&r.payload).unwrap(),
            p.payload
        );
    }
    let window = store.read_raw("r1", 2, 1).unwrap();
    assert_eq!(window.iter().map(|r| r.seq).collect::<Vec<_>>(), [2]);
    assert!(store.read_raw("r1", 4, 10).unwrap().is_empty());
    assert!(store.read_raw("nope", 1, 10).is_err());
}

pub fn payload_round_trips<S: RunTable + EventLog + ?Sized>(store: &S) {
    create_runs(store, &["r1"]);
    let big = "weft ".repeat(1 << 20); // 5 MiB string
    let payloads = [
        // Key order is kept as inserted (serde_json `preserve_order`), not sorted.
        json!({"zeta": 1, "alpha": {"y": [3, 2, 1], "b": null}, "mid": true}),
        json!("unicode: é ß 日本語 🦀 \u{0301}combining \u{0000} nul \"quotes\" \\ back"),
        json!({"numbers": [0, -1, u64::MAX, i64::MIN, 0.1, 1e300, -2.5e-10]}),
        json!([]),
        json!(null),
        json!({"big": big, "after": "tail"}),
    ];
    let events: Vec<_> = payloads
        .iter()
        .map(|p| NewEvent::new("kind ✓", p.clone(), -5))
        .collect();
    store.append("r1", &events).unwrap();
    let back = store.read("r1", 1, usize::MAX).unwrap();
    assert_eq!(back.len(), payloads.len());
    for (event, payload) in back.iter().zip(&payloads) {
        assert_eq!(&event.payload, payload);
        // Equality of `Value` ignores key order; compare the text too.
        assert_eq!(event.payload.to_string(), payload.to_string());
        assert_eq!((event.kind.as_str(), event.recorded_at_ms), ("kind ✓", -5));
    }
    let keys: Vec<_> = match &back[0].payload {
        Value::Object(map) => map.keys().cloned().collect(),
        other => panic!("{other}"),
    };
    assert_eq!(keys, ["zeta", "alpha", "mid"]);
}
