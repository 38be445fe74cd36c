//! [`HttpFetcher`]: the `http_fetch` tool's client (`weft_tools::Fetcher`) over reqwest with
//! rustls. Redirects are never followed (the tool returns them; each URL is decided by the
//! policy on its own), the body is read up to the cap and the rest left unread, and every
//! request has a time limit.

use futures_util::StreamExt;
use weft_tools::{FetchFuture, FetchRequest, FetchResponse, Fetcher};

/// Fetches URLs for `http_fetch`.
#[derive(Clone, Debug)]
pub struct HttpFetcher {
    client: reqwest::Client,
}

impl HttpFetcher {
    /// A client that follows no redirect.
    pub fn new() -> Result<HttpFetcher, String> {
        crate::http::install_crypto_provider();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(HttpFetcher { client })
    }

    async fn get(&self, r: &FetchRequest) -> Result<FetchResponse, String> {
        let method = match r.method.as_str() {
            "HEAD" => reqwest::Method::HEAD,
            _ => reqwest::Method::GET,
        };
        let response = self
            .client
            .request(method, &r.url)
            .timeout(r.timeout)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let header = |name: reqwest::header::HeaderName| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let status = response.status().as_u16();
        let content_type = header(reqwest::header::CONTENT_TYPE);
        let location = header(reqwest::header::LOCATION);
        let cap = usize::try_from(r.max_bytes).unwrap_or(usize::MAX);
        let mut body = Vec::new();
        let mut truncated = false;
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| e.to_string())?;
            let room = cap.saturating_sub(body.len());
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok(FetchResponse {
            status,
            content_type,
            location,
            body: String::from_utf8_lossy(&body).into_owned(),
            truncated,
        })
    }
}

impl Fetcher for HttpFetcher {
    fn fetch<'a>(&'a self, request: &'a FetchRequest) -> FetchFuture<'a> {
        Box::pin(self.get(request))
    }
}
