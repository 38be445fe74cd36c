//! Watching a run as it happens: the [`RunObserver`] hook.
//!
//! The driver calls every observer of [`crate::RunOptions::observers`] right after an event
//! is durably appended to the store and before the driver acts on it, with the event's
//! `seq` and recorded time. Observers see exactly the log, in log order, once per event:
//! the CLI's progress views and `--jsonl` stream, and the audit trail ([`crate::audit`]),
//! are observers. An observer that fails stops the run (fail closed: the event is in the
//! log, so the run can be resumed once the cause is fixed); observers that must never stop
//! a run (a progress view) swallow their own errors.

use std::fmt;

use crate::events::RunEvent;

/// One appended event, as an observer sees it.
#[derive(Clone, Copy, Debug)]
pub struct Observed<'a> {
    pub run_id: &'a str,
    /// The event's position in the run's log (1-based, gap-free).
    pub seq: u64,
    /// The time the driver recorded with the event (ms since the Unix epoch).
    pub recorded_at_ms: i64,
    pub event: &'a RunEvent,
    /// The fragment instance that wrote it (its `scope` member, v1 addition); `None` for
    /// the root scope.
    pub scope: Option<&'a str>,
}

impl Observed<'_> {
    /// The event as stored: its kind and payload (with `scope` inside a fragment
    /// instance), as a value.
    pub fn stored(&self) -> Result<(&'static str, serde_json::Value), serde_json::Error> {
        let mut payload = self.event.payload()?;
        if let (Some(scope), serde_json::Value::Object(p)) = (self.scope, &mut payload) {
            p.insert(
                crate::run_log::SCOPE_MEMBER.into(),
                serde_json::Value::String(scope.to_string()),
            );
        }
        Ok((self.event.kind(), payload))
    }
}

pub use crate::error::ObserveError;

/// Sees every event of a run right after it is durably appended. Called on the driver's
/// thread, inline: keep it short (a write, a redraw), never block on the run itself; work
/// that waits on IO (files, a store over the network) goes to a thread of the observer's
/// own, and [`RunObserver::drained`] tells the run when it is done.
pub trait RunObserver: Send + Sync + fmt::Debug {
    fn on_event(&self, event: &Observed<'_>) -> Result<(), ObserveError>;

    /// The observer's work for the events it has seen, done (and its first failure, if
    /// any): awaited by the run on every way out, before it returns, so that what the
    /// observer writes is complete when the run is. `None` (the default): nothing pending.
    fn drained(&self) -> Option<Drained> {
        None
    }
}

/// What [`RunObserver::drained`] gives: resolves once the observer's pending work is done.
pub type Drained =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), ObserveError>> + Send>>;

/// Awaits every observer's pending work; the first failure is returned (all are awaited).
pub(crate) async fn drain(
    observers: &[std::sync::Arc<dyn RunObserver>],
) -> Result<(), ObserveError> {
    let mut first = Ok(());
    for pending in observers.iter().filter_map(|o| o.drained()) {
        let done = pending.await;
        if first.is_ok() {
            first = done;
        }
    }
    first
}

/// A run's outcome once its observers are drained: an observer's failure fails a run that
/// had not failed already.
pub(crate) async fn drained<T>(
    observers: &[std::sync::Arc<dyn RunObserver>],
    outcome: Result<T, crate::EngineError>,
) -> Result<T, crate::EngineError> {
    let drained = drain(observers).await;
    match (outcome, drained) {
        (Ok(_), Err(e)) => Err(e.into()),
        (outcome, _) => outcome,
    }
}

/// Calls each observer in order; the first error stops the others and is returned.
pub(crate) fn notify(
    observers: &[std::sync::Arc<dyn RunObserver>],
    event: &Observed<'_>,
) -> Result<(), ObserveError> {
    observers.iter().try_for_each(|o| o.on_event(event))
}

/// A test double: keeps every observed `(seq, kind)` in order.
#[derive(Debug, Default)]
pub struct RecordingObserver {
    seen: std::sync::Mutex<Vec<(u64, String)>>,
}

impl RecordingObserver {
    /// What was observed so far.
    pub fn seen(&self) -> Vec<(u64, String)> {
        self.seen
            .lock()
            .map(|s| s.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }
}

impl RunObserver for RecordingObserver {
    fn on_event(&self, event: &Observed<'_>) -> Result<(), ObserveError> {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.push((event.seq, event.event.kind().to_string()));
        Ok(())
    }
}
