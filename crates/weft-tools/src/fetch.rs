//! `http_fetch`: reads a URL through a [`Fetcher`] port (this crate has no HTTP client; the
//! agents crate implements it over its own client). The call is decided as `net:fetch:<url>`
//! like any action; redirects are never followed by the fetcher (a redirect to another host
//! would bypass that decision): the model gets the 3xx status and `location`, and fetching
//! that URL is a new call, decided again.

use std::time::Duration;

use serde_json::{Value, json};

use crate::env::{ToolEnv, ToolError};
pub use crate::fetcher::{FetchFuture, FetchRequest, FetchResponse, Fetcher};

/// Runs a validated, allowed `http_fetch` call.
pub async fn fetch(arguments: &Value, env: &ToolEnv<'_>) -> Result<Value, ToolError> {
    let Some(fetcher) = env.fetcher else {
        return Err(ToolError::blocked(
            "http_fetch has no HTTP client in this run",
        ));
    };
    let url = arguments
        .get("url")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let method = arguments
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("GET")
        .to_owned();
    let max_bytes = arguments
        .get("max_bytes")
        .and_then(Value::as_u64)
        .unwrap_or(env.limits.max_fetch_bytes)
        .min(env.limits.max_fetch_bytes);
    let request = FetchRequest {
        method,
        url,
        max_bytes,
        timeout: Duration::from_secs(env.limits.fetch_seconds),
    };
    let r = fetcher
        .fetch(&request)
        .await
        .map_err(|e| ToolError::tool(format!("{} {}: {e}", request.method, request.url)))?;
    let mut out = json!({"url": request.url, "status": r.status, "body": r.body,
        "truncated": r.truncated});
    if let Some(t) = r.content_type {
        out["content_type"] = json!(t);
    }
    if let Some(l) = r.location {
        out["location"] = json!(l);
    }
    Ok(out)
}
