//! The HTTP transport both providers share: one `reqwest` client (rustls with `ring`), a
//! per-request time limit that covers the whole exchange (sending, headers and every byte of
//! the body or stream), bounded retries of rate limits (`429`, honouring `retry-after`),
//! server errors (`5xx`) and connection failures, and the SSE reader with truncation
//! detection. Nothing here sees a key except the header value it is handed.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use reqwest::StatusCode;
use serde_json::Value;
use tokio::time::Instant;

use crate::error::{FailureClass, ProviderError};

/// Time limits and retries of one provider.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpSettings {
    /// The limit of one HTTP exchange, from sending to the last byte of the answer.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub retry: RetryPolicy,
}

impl Default for HttpSettings {
    fn default() -> HttpSettings {
        HttpSettings {
            timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
        }
    }
}

/// Bounded retries before any byte of an answer was read (an answer that has started is
/// never retried here: the engine's retry ladder owns that).
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Sends in all, the first included.
    pub max_attempts: u32,
    /// The wait before the second send; doubled per send, capped by `max_backoff`.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// The longest `retry-after` honoured; a longer one fails at once (`transient`).
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed send `n` (1-based).
    fn backoff(&self, n: u32) -> Duration {
        let factor = 2u32.saturating_pow(n.saturating_sub(1));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

/// Installs `ring` as the process's rustls crypto provider (once; a provider installed
/// earlier by the embedding program is kept).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A successful answer, with the deadline its body must be read by.
pub(crate) struct Answer {
    pub response: reqwest::Response,
    pub deadline: Instant,
}

/// The shared HTTP client of one provider.
#[derive(Clone, Debug)]
pub(crate) struct Transport {
    client: reqwest::Client,
    settings: HttpSettings,
}

impl Transport {
    pub fn new(settings: HttpSettings) -> Result<Transport, ProviderError> {
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .build()
            .map_err(|e| {
                ProviderError::new(
                    FailureClass::ModelError,
                    format!("cannot build the HTTP client: {e}"),
                )
            })?;
        Ok(Transport { client, settings })
    }

    /// Posts `body` as JSON with `headers`, retrying per the policy, and returns the first
    /// `2xx` answer.
    pub async fn post(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: &Value,
    ) -> Result<Answer, ProviderError> {
        let policy = &self.settings.retry;
        let mut n = 0;
        loop {
            n += 1;
            let deadline = Instant::now() + self.settings.timeout;
            let mut request = self.client.post(url).json(body);
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            let sent = tokio::time::timeout_at(deadline, request.send()).await;
            let (wait, failure) = match sent {
                Err(_) => return Err(self.timed_out(url)),
                Ok(Err(e)) if e.is_timeout() => return Err(self.timed_out(url)),
                Ok(Err(e)) => (
                    None,
                    ProviderError::new(
                        FailureClass::Transient,
                        format!("POST {url}: {}", error_chain(&e)),
                    ),
                ),
                Ok(Ok(response)) if response.status().is_success() => {
                    return Ok(Answer { response, deadline });
                }
                Ok(Ok(response)) => {
                    let status = response.status();
                    let retry_after = retry_after(&response);
                    let text = tokio::time::timeout_at(deadline, response.text())
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .unwrap_or_default();
                    let failure = status_failure(url, status, text);
                    if !retryable(status) {
                        return Err(failure);
                    }
                    if let Some(after) = retry_after
                        && after > policy.max_retry_after
                    {
                        return Err(ProviderError {
                            message: format!(
                                "{}; retry-after {} s is beyond the {} s this provider waits",
                                failure.message,
                                after.as_secs(),
                                policy.max_retry_after.as_secs()
                            ),
                            ..failure
                        });
                    }
                    (retry_after, failure)
                }
            };
            if n >= policy.max_attempts {
                return Err(ProviderError {
                    message: format!("{} (gave up after {n} attempt(s))", failure.message),
                    ..failure
                });
            }
            tokio::time::sleep(wait.unwrap_or_else(|| policy.backoff(n))).await;
        }
    }

    fn timed_out(&self, url: &str) -> ProviderError {
        ProviderError::new(
            FailureClass::Timeout,
            format!(
                "POST {url}: no complete answer within {} s",
                self.settings.timeout.as_secs_f64()
            ),
        )
    }
}

/// Reads a whole JSON body by the deadline.
pub(crate) async fn read_json(answer: Answer, url: &str) -> Result<Value, ProviderError> {
    let text = tokio::time::timeout_at(answer.deadline, answer.response.text())
        .await
        .map_err(|_| {
            ProviderError::new(
                FailureClass::Timeout,
                format!("POST {url}: the body did not arrive in time"),
            )
        })?
        .map_err(|e| {
            ProviderError::new(
                FailureClass::Transient,
                format!("POST {url}: the body was cut: {}", error_chain(&e)),
            )
        })?;
    serde_json::from_str(&text).map_err(|e| {
        ProviderError::new(
            FailureClass::ModelError,
            format!("POST {url}: the answer is not JSON: {e}"),
        )
        .with_evidence(text)
    })
}

/// What a stream consumer says after an event.
pub(crate) enum Flow {
    Continue,
    /// The terminal event was read: stop reading.
    Done,
}

/// Reads server-sent events by the deadline, handing each (`event`, `data`) to `on_event`
/// until it says [`Flow::Done`]. A stream that ends (or breaks) before that is a `transient`
/// failure whose evidence is the last events read.
pub(crate) async fn read_events(
    answer: Answer,
    url: &str,
    mut on_event: impl FnMut(&str, &str) -> Result<Flow, ProviderError>,
) -> Result<(), ProviderError> {
    let mut events = answer.response.bytes_stream().eventsource();
    let mut count = 0usize;
    let mut recent: Vec<String> = Vec::new();
    loop {
        let next = tokio::time::timeout_at(answer.deadline, events.next())
            .await
            .map_err(|_| {
                ProviderError::new(
                    FailureClass::Timeout,
                    format!("POST {url}: the stream did not finish in time ({count} events read)"),
                )
            })?;
        let cut = |why: String, recent: &[String]| {
            ProviderError::new(
                FailureClass::Transient,
                format!("POST {url}: the stream was cut before its terminal event after {count} events: {why}"),
            )
            .with_evidence(recent.join("\n"))
        };
        match next {
            None => return Err(cut("the connection closed".into(), &recent)),
            Some(Err(e)) => return Err(cut(e.to_string(), &recent)),
            Some(Ok(event)) => {
                count += 1;
                if recent.len() == 4 {
                    recent.remove(0);
                }
                recent.push(format!("{}: {}", event.event, event.data));
                if let Flow::Done = on_event(&event.event, &event.data)? {
                    return Ok(());
                }
            }
        }
    }
}

fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error()
}

fn status_failure(url: &str, status: StatusCode, body: String) -> ProviderError {
    let class = if retryable(status) {
        FailureClass::Transient
    } else if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        FailureClass::PermissionDenied
    } else {
        FailureClass::ModelError
    };
    ProviderError::new(class, format!("POST {url}: HTTP {}", status.as_u16())).with_evidence(body)
}

/// `retry-after` in seconds (the HTTP-date form is not honoured: the backoff applies).
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response.headers().get(reqwest::header::RETRY_AFTER)?;
    let secs: f64 = value.to_str().ok()?.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

/// An error and its sources on one line (reqwest's own message is often just "error
/// sending request").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let p = RetryPolicy {
            max_attempts: 9,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            max_retry_after: Duration::from_secs(1),
        };
        assert_eq!(p.backoff(1), Duration::from_millis(100));
        assert_eq!(p.backoff(2), Duration::from_millis(200));
        assert_eq!(p.backoff(3), Duration::from_millis(350));
        assert_eq!(p.backoff(40), Duration::from_millis(350));
    }
}
