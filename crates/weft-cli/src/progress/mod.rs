//! What `weft run` and `weft resume` print while the run runs (`docs/cli.md`): the output
//! mode chosen from the flags and the terminal, and the observers that print it.
//!
//! - the live view's state is the run view (`weft_host::view::RunView`): the engine's one
//!   typed fold of a run's events, which `weft status` and the run record share.
//! - `render.rs`: pure renderings (one line per event; the live view of a snapshot).
//! - `sinks.rs`: the observers (`--jsonl`, plain lines, the live view).
//! - `story.rs`: what failed, what weft did instead and why the run's status is what it is,
//!   in words (the fallback lines and the notes after a run's table).

mod render;
mod sinks;
pub mod story;

use std::io::IsTerminal as _;
use std::sync::Arc;

use weft_engine::RunObserver;
use weft_store::EventRecord;

pub use sinks::Ticker;

/// How a run is shown on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `--jsonl`: each event as one JSON line, nothing else.
    Jsonl,
    /// `--json`: nothing while it runs, one final object.
    Json,
    /// A terminal: the live view, then the summary.
    Live,
    /// Not a terminal: one line per event, then the summary.
    Lines,
}

impl Mode {
    pub fn from_flags(json: bool, jsonl: bool) -> Mode {
        if jsonl {
            Mode::Jsonl
        } else if json {
            Mode::Json
        } else if std::io::stdout().is_terminal() {
            Mode::Live
        } else {
            Mode::Lines
        }
    }
}

/// The observer that prints `mode` (none for `--json`), and the live view's ticker to keep
/// alive while the run runs. `seed`: events already in the log (resume).
pub fn observer(
    mode: Mode,
    run_id: Option<&str>,
    seed: &[EventRecord],
) -> (Option<Arc<dyn RunObserver>>, Option<Ticker>) {
    match mode {
        Mode::Jsonl => (Some(Arc::new(sinks::Jsonl)), None),
        Mode::Json => (None, None),
        Mode::Lines => (Some(Arc::new(sinks::Lines::default())), None),
        Mode::Live => {
            let color = std::env::var_os("NO_COLOR").is_none();
            let (live, ticker) = sinks::Live::start(run_id, seed, color);
            (Some(Arc::new(live)), Some(ticker))
        }
    }
}
