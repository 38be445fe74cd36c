//! W10's weft side (`weft_bench::agent_loop`) against an in-test loopback server speaking the
//! wire format of `bench/agent-loop/mock_llm.py` (keep-alive HTTP/1.1, OpenAI chat
//! completions; a user turn gets one `lookup` call on its last word, a tool result gets
//! `FINAL: <result>`): a handful of real runs through the engine complete, on both stores,
//! each checked by the benchmark's own check; a wrong final answer is counted as an error.
//! No timing is asserted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use weft_bench::agent_loop::{Bench, MOCK_KEY, StoreMode, drive};

/// What the mock saw, and whether it spoils its final answers.
#[derive(Default)]
struct Mock {
    completions: AtomicU64,
    /// Requests that offered the `lookup` tool.
    offered_lookup: AtomicU64,
    /// Keys the `lookup` calls were made with (the last word of the user turn).
    keys: std::sync::Mutex<Vec<String>>,
    spoil: bool,
}

impl Mock {
    /// The mock's answer to one request body (`mock_llm.py`'s `decide`).
    fn answer(&self, request: &Value) -> Value {
        self.completions.fetch_add(1, Ordering::Relaxed);
        let tools = request["tools"].as_array().cloned().unwrap_or_default();
        if tools.iter().any(|t| t["function"]["name"] == "lookup") {
            self.offered_lookup.fetch_add(1, Ordering::Relaxed);
        }
        let messages = request["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().cloned().unwrap_or(Value::Null);
        let message = if last["role"] == "user" {
            let text = last["content"].as_str().unwrap_or("");
            let key = text
                .split_whitespace()
                .last()
                .unwrap_or("default")
                .to_owned();
            self.keys.lock().unwrap().push(key.clone());
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                "type": "function", "function": {"name": "lookup",
                "arguments": json!({"key": key}).to_string()}}]})
        } else {
            let tool = messages
                .iter()
                .rev()
                .find(|m| m["role"] == "tool")
                .and_then(|m| m["content"].as_str())
                .unwrap_or("");
            let prefix = if self.spoil { "SPOILED: " } else { "FINAL: " };
            json!({"role": "assistant", "content": format!("{prefix}{tool}")})
        };
        json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "mock",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 60, "completion_tokens": 17, "total_tokens": 77}})
    }
}

/// Serves one keep-alive connection: Content-Length requests in, JSON answers out.
async fn serve(mock: Arc<Mock>, mut socket: TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let (head_end, length) = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                break (end + 4, length);
            }
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        while buf.len() < head_end + length {
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let request: Value = serde_json::from_slice(&buf[head_end..head_end + length]).unwrap();
        buf.drain(..head_end + length);
        let body = mock.answer(&request).to_string();
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: keep-alive\r\n\r\n{body}",
            body.len()
        );
        if socket.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Starts the mock on a free loopback port; its base URL (`…/v1`).
async fn start(mock: Arc<Mock>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(serve(Arc::clone(&mock), socket));
        }
    });
    format!("http://127.0.0.1:{port}/v1")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn agent_loop_runs_complete_and_check_out_on_both_stores() {
    let rt = runtime();
    let local = tokio::task::LocalSet::new();
    let mock = Arc::new(Mock::default());
    let url = local.block_on(&rt, start(Arc::clone(&mock)));
    let scratch = tempfile::tempdir().unwrap();
    let project = scratch.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let modes = [
        StoreMode::Ephemeral,
        StoreMode::Sqlite(scratch.path().to_path_buf()),
    ];
    for mode in modes {
        let bench = Rc::new(Bench::new(&url, &mode, &project).unwrap());
        let driven = local.block_on(&rt, drive(Rc::clone(&bench), 6, 3, 0));
        assert_eq!(
            (driven.ok, driven.errors),
            (6, 0),
            "{mode:?}: {:?}",
            driven.first_error
        );
        assert_eq!(driven.latencies.len(), 6);
        assert_eq!(bench.lookup.calls.load(Ordering::Relaxed), 6, "{mode:?}");
    }
    assert!(scratch.path().join(".weft/weft.db").is_file());
    // Two model calls per run, each offering `lookup`; every call looked up the mock's key.
    assert_eq!(mock.completions.load(Ordering::Relaxed), 24);
    assert_eq!(mock.offered_lookup.load(Ordering::Relaxed), 24);
    let keys = mock.keys.lock().unwrap().clone();
    assert_eq!(keys.len(), 12);
    assert!(keys.iter().all(|k| k == MOCK_KEY), "{keys:?}");
}

#[test]
fn a_wrong_final_answer_is_counted_as_an_error() {
    let rt = runtime();
    let local = tokio::task::LocalSet::new();
    let mock = Arc::new(Mock {
        spoil: true,
        ..Mock::default()
    });
    let url = local.block_on(&rt, start(mock));
    let scratch = tempfile::tempdir().unwrap();
    let bench = Rc::new(Bench::new(&url, &StoreMode::Ephemeral, scratch.path()).unwrap());
    let driven = local.block_on(&rt, drive(bench, 2, 2, 0));
    assert_eq!((driven.ok, driven.errors), (0, 2));
    let error = driven.first_error.unwrap();
    assert!(error.contains("SPOILED: value-s"), "{error}");
}
