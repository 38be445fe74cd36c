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
    /// The most bytes one answer may carry (a whole body, a stream's events together, or an
    /// error body); a larger one is a `model_error` that names the limit, read no further.
    pub max_body_bytes: usize,
}

/// The default [`HttpSettings::max_body_bytes`]: 8 MiB, far above any chat answer a context
/// window allows, far below what would hurt the store or the record.
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 << 20;

impl Default for HttpSettings {
    fn default() -> HttpSettings {
        HttpSettings {
            timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
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
    pub max_body_bytes: usize,
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
                    return Ok(Answer {
                        response,
                        deadline,
                        max_body_bytes: self.settings.max_body_bytes,
                    });
                }
                Ok(Ok(response)) => {
                    let status = response.status();
                    let retry_after = retry_after(&response);
                    // Evidence only: what arrives in time and within the cap.
                    let text = read_capped(response, deadline, self.settings.max_body_bytes)
                        .await
                        .unwrap_or_else(|cut| cut.read);
                    let failure = status_failure(url, status, text);
                    if !retryable(status) {
                        return Err(failure);
                    }
                    if let Some(after) = retry_after
                        && after > policy.max_retry_after
                    {
                        let asked = if after == Duration::MAX {
                            "a retry-after longer than any clock holds".to_string()
                        } else {
                            format!("retry-after {} s", after.as_secs())
                        };
                        return Err(ProviderError {
                            message: format!(
                                "{}; {asked} is beyond the {} s this provider waits",
                                failure.message,
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

/// Why a capped read stopped early, with what it had read (kept as evidence).
pub(crate) struct CutBody {
    pub read: String,
    pub why: CutWhy,
}

pub(crate) enum CutWhy {
    Deadline,
    OverCap,
    Broken(String),
}

/// Reads a body by `deadline`, stopping at `cap` bytes: a provider decides how much it
/// sends, weft decides how much it holds.
async fn read_capped(
    mut response: reqwest::Response,
    deadline: Instant,
    cap: usize,
) -> Result<String, CutBody> {
    let mut bytes: Vec<u8> = Vec::new();
    let cut = |bytes: &[u8], why| CutBody {
        read: String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned(),
        why,
    };
    loop {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Err(_) => return Err(cut(&bytes, CutWhy::Deadline)),
            Ok(Err(e)) => return Err(cut(&bytes, CutWhy::Broken(error_chain(&e)))),
            Ok(Ok(None)) => break,
            Ok(Ok(Some(chunk))) => {
                if bytes.len().saturating_add(chunk.len()) > cap {
                    return Err(cut(&bytes, CutWhy::OverCap));
                }
                bytes.extend_from_slice(&chunk);
            }
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The failure of an answer larger than the cap.
pub(crate) fn over_cap(url: &str, cap: usize) -> ProviderError {
    ProviderError::new(
        FailureClass::ModelError,
        format!(
            "POST {url}: the answer is larger than {cap} bytes, the limit of one answer (max_body_bytes in the provider's table of weft.toml)"
        ),
    )
}

/// Reads a whole JSON body by the deadline, within the answer cap.
pub(crate) async fn read_json(answer: Answer, url: &str) -> Result<Value, ProviderError> {
    let cap = answer.max_body_bytes;
    let text = read_capped(answer.response, answer.deadline, cap)
        .await
        .map_err(|cut| match cut.why {
            CutWhy::Deadline => ProviderError::new(
                FailureClass::Timeout,
                format!("POST {url}: the body did not arrive in time"),
            ),
            CutWhy::OverCap => over_cap(url, cap).with_evidence(cut.read),
            CutWhy::Broken(why) => ProviderError::new(
                FailureClass::Transient,
                format!("POST {url}: the body was cut: {why}"),
            )
            .with_evidence(cut.read),
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
    let cap = answer.max_body_bytes;
    let mut events = answer.response.bytes_stream().eventsource();
    let mut count = 0usize;
    let mut held = 0usize;
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
                held = held.saturating_add(event.data.len());
                if held > cap {
                    return Err(over_cap(url, cap).with_evidence(recent.join("\n")));
                }
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
    parse_retry_after(value.to_str().ok()?)
}

/// A `retry-after` value in seconds. Whatever a server sends, this never panics: a number
/// too large for a `Duration` (`1e300`) reads as the longest wait, which is beyond any
/// bound and so fails the request at once; negative, non-finite or non-numeric values are
/// ignored (the backoff applies).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    if !(secs.is_finite() && secs >= 0.0) {
        return None;
    }
    Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
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

    #[test]
    fn retry_after_reads_any_header_value_without_panicking() {
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        // Too large for a Duration: the longest wait, so beyond any bound.
        assert_eq!(parse_retry_after("1e300"), Some(Duration::MAX));
        assert_eq!(
            parse_retry_after("18446744073709551616"),
            Some(Duration::MAX)
        );
        for ignored in [
            "-1",
            "NaN",
            "inf",
            "-inf",
            "",
            "soon",
            "Wed, 21 Oct 2015 07:28:00 GMT",
        ] {
            assert_eq!(parse_retry_after(ignored), None, "{ignored}");
        }
    }
}
