//! A loopback OpenAI-compatible provider for tests that run the `weft` binary (a named test
//! double: the exact wire format, scripted answers in order, one connection per request, on
//! a thread of its own so a blocking test can drive it), and the chat completions it
//! answers with. The async double with SSE and Anthropic is [`crate::loopback`].

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test double: a panic here is a failed test with its message"
)]

use std::io::{BufRead, BufReader, Read, Write as _};
use std::sync::{Arc, Mutex};

/// One scripted answer.
pub enum Answer {
    /// This body, `200 OK`.
    Body(String),
    /// Read the request and answer nothing until the client goes away (the process that
    /// asked is killed meanwhile).
    Hang,
    /// Any status, extra headers and body: a provider that rate-limits, errs or lies.
    Raw {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

/// An OpenAI-compatible chat completion answering with text, with `usage` as given
/// (`None`: no usage member at all).
pub fn text_answer(text: &str, usage: Option<serde_json::Value>) -> String {
    let mut v = serde_json::json!({"id": "c", "object": "chat.completion", "model": "mid",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": text}}]});
    if let Some(u) = usage {
        v["usage"] = u;
    }
    v.to_string()
}

/// A chat completion with one tool call and `usage` as given (`None`: none at all).
pub fn tool_call_with_usage(
    name: &str,
    arguments: serde_json::Value,
    usage: Option<serde_json::Value>,
) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&tool_call(name, arguments)).unwrap();
    match usage {
        Some(u) => v["usage"] = u,
        None => {
            v.as_object_mut().unwrap().remove("usage");
        }
    }
    v.to_string()
}

/// An OpenAI-compatible chat completion answering with one tool call.
pub fn tool_call(name: &str, arguments: serde_json::Value) -> String {
    serde_json::json!({"id": "c", "object": "chat.completion", "model": "mid",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
            "content": "", "tool_calls": [{"id": format!("call_{name}"), "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    .to_string()
}

/// Serves `answers` in order; returns its port and the request bodies seen.
pub fn scripted_provider(answers: Vec<String>) -> (u16, Arc<Mutex<Vec<String>>>) {
    scripted(answers.into_iter().map(Answer::Body).collect())
}

/// [`scripted_provider`] with answers that may hang.
pub fn scripted(answers: Vec<Answer>) -> (u16, Arc<Mutex<Vec<String>>>) {
    let count = answers.len();
    let answers = Mutex::new(answers.into_iter());
    serve(count, move |_| {
        answers.lock().unwrap().next().unwrap_or(Answer::Hang)
    })
}

/// Answers each request by what `answer` makes of its body, on a thread per connection (for
/// nodes that ask at the same time); returns its port and the request bodies seen.
pub fn responding(
    answer: impl Fn(&str) -> String + Send + Sync + 'static,
) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let (log, answer) = (Arc::clone(&log), Arc::clone(&answer));
            std::thread::spawn(move || {
                let body = read_request(&stream);
                log.lock().unwrap().push(body.clone());
                respond(stream, &answer(&body));
            });
        }
    });
    (port, seen)
}

/// The body of the HTTP request on `stream`.
fn read_request(stream: &std::net::TcpStream) -> String {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    String::from_utf8_lossy(&body).into_owned()
}

fn respond(mut out: std::net::TcpStream, answer: &str) {
    let _ = write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
        answer.len()
    );
}

fn respond_raw(
    mut out: std::net::TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &str,
) {
    let mut head = format!(
        "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let _ = write!(out, "{head}\r\n{body}");
}

/// Serves `count` requests one connection at a time, each answered by `answer`.
fn serve(
    count: usize,
    answer: impl Fn(&str) -> Answer + Send + 'static,
) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for _ in 0..count {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            let body = read_request(&stream);
            log.lock().unwrap().push(body.clone());
            match answer(&body) {
                Answer::Body(text) => respond(stream, &text),
                Answer::Raw {
                    status,
                    headers,
                    body,
                } => respond_raw(stream, status, &headers, &body),
                // Until the client's end closes (its process died).
                Answer::Hang => {
                    let _ = BufReader::new(stream).read_to_end(&mut Vec::new());
                }
            }
        }
    });
    (port, seen)
}
