//! The [`Fetcher`] port `http_fetch` reads URLs through (this crate has no HTTP client; the
//! agents crate implements it): vocabulary the call's environment (`env`) and the tool
//! (`fetch`, which re-exports it) share, below both.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// What to fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchRequest {
    /// `GET` or `HEAD`.
    pub method: String,
    pub url: String,
    /// Bytes of body kept (the rest is not read).
    pub max_bytes: u64,
    pub timeout: Duration,
}

/// What came back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchResponse {
    pub status: u16,
    pub content_type: Option<String>,
    /// A redirect's target (never followed).
    pub location: Option<String>,
    /// The body, decoded as UTF-8 (lossy), at most `max_bytes`.
    pub body: String,
    /// The body was longer than `max_bytes`.
    pub truncated: bool,
}

/// A fetch in flight: the response, or why there is none.
pub type FetchFuture<'a> = Pin<Box<dyn Future<Output = Result<FetchResponse, String>> + Send + 'a>>;

/// Reads URLs without following redirects.
pub trait Fetcher: Send + Sync {
    fn fetch<'a>(&'a self, request: &'a FetchRequest) -> FetchFuture<'a>;
}
