//! Provider failures, classified with the one failure class ([`weft_core::FailureClass`],
//! DIGEST §1.16) so the engine's failure ladder can act on them (`retry_on: [transient]` …),
//! each with its evidence.
//!
//! A provider fails with `transient` (connection failures, 429 and 5xx after the bounded
//! retries, a stream cut before its terminal event, an overloaded provider), `model_error`
//! (a 4xx other than auth and rate limits, an `error` event, malformed tool arguments, an
//! unparseable body), `timeout` (the request ran past its limit), `permission_denied` (the
//! credentials were refused, 401/403, or no key was configured) or `cancelled` (the request
//! was dropped before the answer was complete).

use std::fmt;

pub use weft_core::FailureClass;

/// The most evidence a failure carries (bytes of the raw text, cut at a char boundary).
pub const EVIDENCE_LIMIT: usize = 2048;

/// A classified provider failure: what went wrong and the raw material that shows it (a
/// response body, the malformed arguments, the events read before a cut).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ProviderError {
    pub class: FailureClass,
    pub message: String,
    pub evidence: Option<String>,
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(e) = &self.evidence {
            write!(f, " (evidence: {e})")?;
        }
        Ok(())
    }
}

impl ProviderError {
    /// The class the attempt fails with: a cancelled request has no AGS class of its own and
    /// is reported as `transient` (the attempt may run again); every other class as is.
    pub fn attempt_class(&self) -> FailureClass {
        match self.class {
            FailureClass::Cancelled => FailureClass::Transient,
            class => class,
        }
    }

    pub fn new(class: FailureClass, message: impl Into<String>) -> ProviderError {
        ProviderError {
            class,
            message: message.into(),
            evidence: None,
        }
    }

    /// Attaches evidence, cut to [`EVIDENCE_LIMIT`] bytes.
    pub fn with_evidence(mut self, evidence: impl Into<String>) -> ProviderError {
        self.evidence = Some(truncate(evidence.into(), EVIDENCE_LIMIT));
        self
    }

    /// Replaces every occurrence of `secret` in the message and evidence with `***` (a server
    /// that echoes the request must not leak the key into a run record).
    pub fn redacted(mut self, secret: &str) -> ProviderError {
        if !secret.is_empty() {
            self.message = self.message.replace(secret, "***");
            self.evidence = self.evidence.map(|e| e.replace(secret, "***"));
        }
        self
    }
}

/// `s` cut to at most `limit` bytes at a char boundary, with `…` when cut.
pub fn truncate(mut s: String, limit: usize) -> String {
    if s.len() > limit {
        let mut end = limit;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}
