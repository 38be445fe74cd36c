//! Why the engine stops: [`EngineError`] (a run could not start or carry on) and
//! [`ObserveError`] (an observer refused an event). Vocabulary below every module that
//! returns them, the event format's encoding included; re-exported as
//! `weft_engine::EngineError` and `weft_engine::observe::ObserveError`.

use std::fmt;

use crate::{adapter, agent, timefmt};

/// Why a run could not start or carry on.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot read the document: {0}")]
    Read(String),
    #[error("the document is not valid:\n  {}", .0.join("\n  "))]
    Invalid(Vec<String>),
    #[error("this engine cannot run the document:\n  {}", .0.join("\n  "))]
    Refused(Vec<String>),
    #[error("params: {0}")]
    Params(String),
    #[error(transparent)]
    Cassette(#[from] agent::cassette::CassetteError),
    #[error(transparent)]
    Adapt(#[from] adapter::AdaptError),
    #[error("store: {0}")]
    Store(#[from] weft_store::StoreError),
    #[error("scheduler protocol: {0}")]
    Protocol(#[from] weft_core::ProtocolError),
    #[error("no run `{0}` in the store")]
    UnknownRun(String),
    /// Another live driver holds the run's lease (`docs/engine.md` §2d): it is driven
    /// elsewhere. `weft resume` prints who and exits 5 (`docs/cli.md`).
    #[error(
        "run {} is driven by another process: owner {}, host {}, pid {}, lease until {}",
        .0.run_id, .0.holder.owner, .0.holder.host, .0.holder.pid, timefmt::rfc3339_ms(.0.expires_at_ms)
    )]
    Driven(Box<weft_store::Lease>),
    /// The `stop_after_events` test hook stopped the driver after this many events.
    #[error("stopped after {0} events (test hook)")]
    Stopped(usize),
    /// An observer (the audit trail, …) refused an event; the event is in the log.
    #[error("observer {0}")]
    Observe(#[from] ObserveError),
    /// An event could not be written as JSON (not expected: every event is plain data).
    #[error("cannot encode a `{kind}` event: {source}")]
    Encode {
        kind: &'static str,
        source: serde_json::Error,
    },
    #[error("internal: {0}")]
    Internal(String),
}

/// Why an observer refused an event (it stops the run).
#[derive(Debug, thiserror::Error)]
#[error("{observer}: {message}")]
pub struct ObserveError {
    /// Which observer failed (`audit`, …).
    pub observer: String,
    pub message: String,
}

impl ObserveError {
    pub fn new(observer: impl Into<String>, message: impl fmt::Display) -> Self {
        ObserveError {
            observer: observer.into(),
            message: message.to_string(),
        }
    }
}
