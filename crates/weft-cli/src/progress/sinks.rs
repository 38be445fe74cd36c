//! The observers `weft run` and `weft resume` print through: `--jsonl` (each event as one
//! JSON line), plain lines (stdout not a terminal), and the live view redrawn in place (a
//! terminal). They never stop a run: a failed write to stdout (a closed pipe) is ignored.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use weft_engine::{ObserveError, Observed, RunObserver};
use weft_store::EventRecord;

use super::render;
use weft_host::view::RunView;

/// The event as stored: kind and payload value (with `scope` inside a fragment instance).
fn store_form(seen: &Observed<'_>) -> Result<(&'static str, serde_json::Value), ObserveError> {
    seen.stored().map_err(|e| ObserveError::new("progress", e))
}

/// `--jsonl`: `{"run_id","seq","kind","payload","recorded_at_ms"}` per event, flushed.
#[derive(Debug, Default)]
pub struct Jsonl;

impl RunObserver for Jsonl {
    fn on_event(&self, seen: &Observed<'_>) -> Result<(), ObserveError> {
        let (kind, payload) = store_form(seen)?;
        let line = serde_json::json!({
            "run_id": seen.run_id,
            "seq": seen.seq,
            "kind": kind,
            "payload": payload,
            "recorded_at_ms": seen.recorded_at_ms,
        });
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
        Ok(())
    }
}

/// Plain lines: `run_id: …` once, then one [`render::event_line`] per event.
#[derive(Debug, Default)]
pub struct Lines {
    announced: AtomicBool,
    /// The fallback steps of the document as run (`story::fallback_view` of
    /// `run_started.graph`), for the lines that name the alternate or the criteria relaxed.
    graph: Mutex<Option<serde_json::Value>>,
}

impl RunObserver for Lines {
    fn on_event(&self, seen: &Observed<'_>) -> Result<(), ObserveError> {
        let (kind, payload) = store_form(seen)?;
        let mut out = std::io::stdout().lock();
        if !self.announced.swap(true, Ordering::Relaxed) {
            let _ = writeln!(out, "run_id: {}", seen.run_id);
        }
        let mut graph = self.graph.lock().unwrap_or_else(|p| p.into_inner());
        if kind == "run_started" && payload.get("scope").is_none() {
            *graph = payload.get("graph").map(super::story::fallback_view);
        }
        let line = render::event_line(
            seen.run_id,
            kind,
            &payload,
            seen.recorded_at_ms,
            graph.as_ref(),
        );
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
        Ok(())
    }
}

#[derive(Debug)]
struct LiveState {
    snapshot: Option<RunView>,
    /// Lines drawn last time, to move back over.
    drawn: usize,
}

#[derive(Debug)]
struct LiveInner {
    state: Mutex<LiveState>,
    color: bool,
    stop: AtomicBool,
}

impl LiveInner {
    fn redraw(&self) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let Some(snapshot) = &st.snapshot else {
            return;
        };
        let lines = render::view(snapshot, now_ms(), self.color);
        let mut out = std::io::stdout().lock();
        let mut buf = String::new();
        if st.drawn > 0 {
            // Back to the first line of the last drawing, and clear everything below.
            buf.push_str(&format!("\x1b[{}A\r\x1b[J", st.drawn));
        }
        for l in &lines {
            buf.push_str(l);
            buf.push('\n');
        }
        let _ = out.write_all(buf.as_bytes()).and_then(|()| out.flush());
        st.drawn = lines.len();
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The live view: redrawn after every event and, for the elapsed time, a few times a second
/// by a ticker thread that [`Live::start`] returns (stop it by dropping it).
#[derive(Debug, Clone)]
pub struct Live {
    inner: Arc<LiveInner>,
}

/// Stops the live view's ticker when dropped, after a last redraw.
#[derive(Debug)]
pub struct Ticker {
    inner: Arc<LiveInner>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.inner.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.inner.redraw();
    }
}

impl Live {
    /// A live view; `seed` are events already in the log (a resumed run), folded in
    /// without drawing.
    pub fn start(run_id: Option<&str>, seed: &[EventRecord], color: bool) -> (Live, Ticker) {
        let snapshot = run_id.map(|id| {
            let mut s = RunView::new(id);
            for r in seed {
                s.apply_record(r);
            }
            s
        });
        let inner = Arc::new(LiveInner {
            state: Mutex::new(LiveState { snapshot, drawn: 0 }),
            color,
            stop: AtomicBool::new(false),
        });
        let ticking = Arc::clone(&inner);
        let thread = std::thread::Builder::new()
            .name("weft-live-view".into())
            .spawn(move || {
                while !ticking.stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(250));
                    ticking.redraw();
                }
            })
            .ok();
        (
            Live {
                inner: Arc::clone(&inner),
            },
            Ticker { inner, thread },
        )
    }
}

impl RunObserver for Live {
    fn on_event(&self, seen: &Observed<'_>) -> Result<(), ObserveError> {
        {
            let mut st = self.inner.state.lock().unwrap_or_else(|p| p.into_inner());
            st.snapshot
                .get_or_insert_with(|| RunView::new(seen.run_id))
                .apply(seen.scope, seen.event, seen.recorded_at_ms);
        }
        self.inner.redraw();
        Ok(())
    }
}
