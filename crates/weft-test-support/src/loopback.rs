//! The loopback model server: a named test double (docs/agents.md, "Test doubles"), shared
//! by the provider and agent tests of `weft-agents` and the CLI's. A tiny
//! HTTP/1.1 responder on 127.0.0.1 that records every request and answers with the next
//! queued [`Reply`]: a JSON body, or a recorded SSE fixture replayed exactly in its wire
//! format (close-delimited, chunked, or chunked in small fragments that split events), cut
//! short, or stalled after its first event. One request per connection (`connection:
//! close`), so every exchange is real HTTP over TCP.

#![allow(
    clippy::expect_used,
    reason = "a test double: a panic here is a failed test with its message"
)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("the request body is JSON")
    }
}

/// How an SSE body is framed on the wire.
#[derive(Clone, Copy, Debug)]
pub enum Framing {
    /// No length: the body ends when the connection closes.
    Close,
    /// `transfer-encoding: chunked`, one chunk per event.
    Chunked,
    /// Chunked, in chunks of this many bytes (events and lines split across chunks).
    Fragments(usize),
}

/// One answer.
#[derive(Clone, Debug)]
pub enum Reply {
    Json {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// The events of an SSE fixture; `cut_after: Some(n)` closes the connection after `n`
    /// events (for chunked framing, without the terminating chunk).
    Sse {
        events: Vec<String>,
        framing: Framing,
        cut_after: Option<usize>,
    },
    /// The status line, the SSE headers and the first event, then nothing more until the
    /// client goes away (which the server reports, see [`Loopback::disconnected`]).
    Stall { events: Vec<String> },
    /// Reads the request and never answers.
    Hang,
    /// Answers with the request's headers as the body of a 401 (a server that echoes what it
    /// was sent, for the redaction tests).
    EchoHeaders401,
}

impl Reply {
    pub fn json(status: u16, body: impl Into<String>) -> Reply {
        Reply::Json {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    pub fn with_header(self, name: &str, value: &str) -> Reply {
        match self {
            Reply::Json {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.to_string(), value.to_string()));
                Reply::Json {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }

    /// The SSE `events` ([`sse_events_of`] splits a recorded stream), framed as `framing`.
    pub fn sse(events: Vec<String>, framing: Framing) -> Reply {
        Reply::Sse {
            events,
            framing,
            cut_after: None,
        }
    }

    /// [`Reply::sse`] cut after `after` events.
    pub fn sse_cut(events: Vec<String>, framing: Framing, after: usize) -> Reply {
        Reply::Sse {
            events,
            framing,
            cut_after: Some(after),
        }
    }
}

/// The events of an SSE stream's text, each with its terminating blank line, exactly as
/// written.
pub fn sse_events_of(text: &str) -> Vec<String> {
    text.split_inclusive("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// A running loopback server.
pub struct Loopback {
    pub base_url: String,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stalled: tokio::sync::Mutex<mpsc::UnboundedReceiver<()>>,
    disconnects: tokio::sync::Mutex<mpsc::UnboundedReceiver<()>>,
}

impl Loopback {
    /// Starts a server answering with `replies` in order (a 500 once they run out).
    pub async fn start(replies: Vec<Reply>) -> Loopback {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (stalled_tx, stalled) = mpsc::unbounded_channel();
        let (gone_tx, disconnects) = mpsc::unbounded_channel();
        let (r, q) = (replies.clone(), requests.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (r, q) = (r.clone(), q.clone());
                let (stalled_tx, gone_tx) = (stalled_tx.clone(), gone_tx.clone());
                tokio::spawn(async move {
                    serve(socket, r, q, stalled_tx, gone_tx).await;
                });
            }
        });
        Loopback {
            base_url: format!("http://{addr}"),
            replies,
            requests,
            stalled: tokio::sync::Mutex::new(stalled),
            disconnects: tokio::sync::Mutex::new(disconnects),
        }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }

    /// Queues more replies.
    pub fn push(&self, reply: Reply) {
        self.replies.lock().expect("lock").push_back(reply);
    }

    /// Waits until a [`Reply::Stall`] has sent its first event.
    pub async fn stalled(&self) {
        let _ = self.stalled.lock().await.recv().await;
    }

    /// Waits until the client closed a stalled connection.
    pub async fn disconnected(&self) {
        let _ = self.disconnects.lock().await.recv().await;
    }
}

async fn serve(
    mut socket: TcpStream,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stalled: mpsc::UnboundedSender<()>,
    gone: mpsc::UnboundedSender<()>,
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    requests.lock().expect("lock").push(request.clone());
    let reply = replies.lock().expect("lock").pop_front();
    let reply = reply.unwrap_or_else(|| Reply::json(500, r#"{"error":"no reply queued"}"#));
    match reply {
        Reply::Json {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (n, v) in headers {
                head.push_str(&format!("{n}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
        }
        Reply::EchoHeaders401 => {
            let body: String = request
                .headers
                .iter()
                .map(|(n, v)| format!("{n}: {v}\n"))
                .collect();
            let head = format!(
                "HTTP/1.1 401 X\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
        }
        Reply::Sse {
            events,
            framing,
            cut_after,
        } => write_sse(&mut socket, &events, framing, cut_after).await,
        Reply::Stall { events } => {
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            let _ = socket.write_all(head.as_bytes()).await;
            if let Some(first) = events.first() {
                let _ = socket.write_all(first.as_bytes()).await;
            }
            let _ = socket.flush().await;
            let _ = stalled.send(());
            // Read until the client closes its end: that is how a cancelled read shows.
            let mut buf = [0u8; 256];
            while let Ok(n) = socket.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
            let _ = gone.send(());
        }
        Reply::Hang => {
            let mut buf = [0u8; 256];
            while let Ok(n) = socket.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        }
    }
    let _ = socket.shutdown().await;
}

async fn write_sse(
    socket: &mut TcpStream,
    events: &[String],
    framing: Framing,
    cut_after: Option<usize>,
) {
    let chunked = !matches!(framing, Framing::Close);
    let mut head = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n",
    );
    if chunked {
        head.push_str("transfer-encoding: chunked\r\n");
    }
    head.push_str("\r\n");
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let sent = &events[..cut_after.unwrap_or(events.len()).min(events.len())];
    let pieces: Vec<Vec<u8>> = match framing {
        Framing::Close | Framing::Chunked => sent.iter().map(|e| e.as_bytes().to_vec()).collect(),
        Framing::Fragments(n) => sent
            .concat()
            .into_bytes()
            .chunks(n.max(1))
            .map(<[u8]>::to_vec)
            .collect(),
    };
    for piece in pieces {
        let ok = if chunked {
            let mut frame = format!("{:x}\r\n", piece.len()).into_bytes();
            frame.extend_from_slice(&piece);
            frame.extend_from_slice(b"\r\n");
            socket.write_all(&frame).await
        } else {
            socket.write_all(&piece).await
        };
        if ok.is_err() || socket.flush().await.is_err() {
            return;
        }
        // Let each piece leave as its own TCP segment, so the client sees real fragments.
        tokio::task::yield_now().await;
    }
    if chunked && cut_after.is_none() {
        let _ = socket.write_all(b"0\r\n\r\n").await;
    }
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Recorded {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).to_string(),
    })
}
