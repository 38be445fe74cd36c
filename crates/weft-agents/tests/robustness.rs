//! The providers' failure behaviour over real HTTP on 127.0.0.1 (the loopback test double):
//! time limits, 429 with `retry-after` (bounded), 5xx backoff (bounded), auth failures,
//! truncated streams, cancellation mid-stream, and keys that never show.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::loopback::{Framing, Loopback, Reply, fixture, sse_cut, sse_events};
use tokio_util::sync::CancellationToken;
use weft_agents::openai::OpenAi;
use weft_agents::{
    ChatRequest, FailureClass, HttpSettings, Message, Provider, ProviderConfig, ProviderKind,
    RetryPolicy, Secret, chat_until_cancelled,
};

fn settings(timeout: Duration, max_attempts: u32) -> HttpSettings {
    HttpSettings {
        timeout,
        connect_timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            max_attempts,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(5),
            max_retry_after: Duration::from_secs(2),
        },
        max_body_bytes: weft_agents::DEFAULT_MAX_BODY_BYTES,
    }
}

fn provider(kind: ProviderKind, server: &Loopback, http: HttpSettings) -> Arc<dyn Provider> {
    let mut config = ProviderConfig::new("test", kind, &server.base_url);
    config.http = http;
    config.build().expect("provider")
}

fn request(stream: bool) -> ChatRequest {
    let mut r = ChatRequest::new("m", vec![Message::user("hi")]);
    r.stream = stream;
    r
}

const OK: &str = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"fine"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;

#[tokio::test]
async fn rate_limits_honour_retry_after_then_succeed() {
    let server = Loopback::start(vec![
        Reply::json(429, r#"{"error":{"message":"slow down"}}"#).with_header("retry-after", "0"),
        Reply::json(200, OK),
    ])
    .await;
    let p = provider(
        ProviderKind::OpenAi,
        &server,
        settings(Duration::from_secs(20), 3),
    );
    let answer = p
        .chat(&request(false))
        .await
        .expect("answer after the retry");
    assert_eq!(answer.text, "fine");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_retry_after_beyond_the_bound_fails_at_once() {
    let server = Loopback::start(vec![
        Reply::json(429, r#"{"error":{"message":"come back in an hour"}}"#)
            .with_header("retry-after", "3600"),
        Reply::json(200, OK),
    ])
    .await;
    let p = provider(
        ProviderKind::OpenAi,
        &server,
        settings(Duration::from_secs(20), 3),
    );
    let e = p.chat(&request(false)).await.unwrap_err();
    assert_eq!(e.class, FailureClass::Transient);
    assert!(
        e.message.contains("HTTP 429") && e.message.contains("retry-after 3600"),
        "{e}"
    );
    assert!(
        e.evidence
            .as_deref()
            .unwrap_or_default()
            .contains("an hour"),
        "{e}"
    );
    assert_eq!(server.requests().len(), 1, "no second send");
}

#[tokio::test]
async fn a_retry_after_too_large_for_a_duration_fails_at_once_without_a_panic() {
    for huge in ["1e300", "1.7976931348623157e308", "99999999999999999999999"] {
        let server = Loopback::start(vec![
            Reply::json(429, r#"{"error":{"message":"never"}}"#).with_header("retry-after", huge),
            Reply::json(200, OK),
        ])
        .await;
        let p = provider(
            ProviderKind::OpenAi,
            &server,
            settings(Duration::from_secs(20), 3),
        );
        let e = p.chat(&request(false)).await.unwrap_err();
        assert_eq!(e.class, FailureClass::Transient, "{huge}: {e}");
        assert!(e.message.contains("is beyond the"), "{huge}: {e}");
        assert_eq!(server.requests().len(), 1, "{huge}: no second send");
    }
}

#[tokio::test]
async fn an_answer_over_the_body_cap_is_a_model_error_that_names_the_limit() {
    let big = format!(
        r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":"{}"}},"finish_reason":"stop"}}]}}"#,
        "x".repeat(64 * 1024)
    );
    for stream in [false, true] {
        let reply = if stream {
            let chunk = format!(
                r#"{{"choices":[{{"index":0,"delta":{{"content":"{}"}}}}]}}"#,
                "y".repeat(8 * 1024)
            );
            let mut events: Vec<String> = (0..16).map(|_| format!("data: {chunk}\n\n")).collect();
            events.push("data: [DONE]\n\n".into());
            Reply::Sse {
                events,
                framing: Framing::Chunked,
                cut_after: None,
            }
        } else {
            Reply::json(200, big.clone())
        };
        let server = Loopback::start(vec![reply]).await;
        let mut http = settings(Duration::from_secs(20), 1);
        http.max_body_bytes = 32 * 1024;
        let p = provider(ProviderKind::OpenAi, &server, http);
        let e = p.chat(&request(stream)).await.unwrap_err();
        assert_eq!(e.class, FailureClass::ModelError, "stream {stream}: {e}");
        assert!(
            e.message.contains("32768 bytes") && e.message.contains("max_body_bytes"),
            "stream {stream}: {e}"
        );
    }
}

#[tokio::test]
async fn server_errors_back_off_and_retry_a_bounded_number_of_times() {
    let server = Loopback::start(vec![
        Reply::json(500, "{}"),
        Reply::json(503, "{}"),
        Reply::json(200, OK),
    ])
    .await;
    let p = provider(
        ProviderKind::OpenAi,
        &server,
        settings(Duration::from_secs(20), 3),
    );
    assert_eq!(
        p.chat(&request(false)).await.expect("third time").text,
        "fine"
    );
    assert_eq!(server.requests().len(), 3);

    let server = Loopback::start(vec![
        Reply::json(502, "bad gateway one"),
        Reply::json(502, "bad gateway two"),
        Reply::json(200, OK),
    ])
    .await;
    let p = provider(
        ProviderKind::Anthropic,
        &server,
        settings(Duration::from_secs(20), 2),
    );
    let e = p.chat(&request(false)).await.unwrap_err();
    assert_eq!(e.class, FailureClass::Transient);
    assert!(e.message.contains("gave up after 2 attempt(s)"), "{e}");
    assert_eq!(e.evidence.as_deref(), Some("bad gateway two"));
    assert_eq!(
        server.requests().len(),
        2,
        "bounded: the 200 is never asked for"
    );
}

#[tokio::test]
async fn auth_and_request_errors_are_not_retried() {
    let server = Loopback::start(vec![
        Reply::json(401, r#"{"error":{"message":"bad key"}}"#),
        Reply::json(400, r#"{"error":{"message":"bad request"}}"#),
    ])
    .await;
    let p = provider(
        ProviderKind::OpenAi,
        &server,
        settings(Duration::from_secs(20), 3),
    );
    let e = p.chat(&request(false)).await.unwrap_err();
    assert_eq!(e.class, FailureClass::PermissionDenied, "{e}");
    let e = p.chat(&request(false)).await.unwrap_err();
    assert_eq!(e.class, FailureClass::ModelError, "{e}");
    assert!(
        e.evidence
            .as_deref()
            .unwrap_or_default()
            .contains("bad request")
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let server = Loopback::start(vec![Reply::Hang]).await;
    let p = provider(
        ProviderKind::OpenAi,
        &server,
        settings(Duration::from_millis(300), 1),
    );
    let e = p.chat(&request(false)).await.unwrap_err();
    assert_eq!(e.class, FailureClass::Timeout, "{e}");
}

#[tokio::test]
async fn a_stream_that_stalls_times_out() {
    let server = Loopback::start(vec![Reply::Stall {
        events: sse_events("anthropic_tool_use.sse"),
    }])
    .await;
    let p = provider(
        ProviderKind::Anthropic,
        &server,
        settings(Duration::from_millis(300), 1),
    );
    let e = p.chat(&request(true)).await.unwrap_err();
    assert_eq!(e.class, FailureClass::Timeout, "{e}");
    assert!(e.message.contains("1 events read"), "{e}");
}

#[tokio::test]
async fn truncated_streams_are_transient_failures_with_the_last_events_as_evidence() {
    let cases = [
        (
            ProviderKind::OpenAi,
            "openai_tool_call.sse",
            Framing::Close,
            4,
        ),
        (
            ProviderKind::OpenAi,
            "openai_tool_call.sse",
            Framing::Chunked,
            7,
        ),
        (
            ProviderKind::Anthropic,
            "anthropic_tool_use.sse",
            Framing::Close,
            9,
        ),
        (
            ProviderKind::Anthropic,
            "anthropic_tool_use.sse",
            Framing::Fragments(6),
            12,
        ),
    ];
    for (kind, name, framing, after) in cases {
        let server = Loopback::start(vec![sse_cut(name, framing, after)]).await;
        let p = provider(kind, &server, settings(Duration::from_secs(20), 3));
        let e = p.chat(&request(true)).await.unwrap_err();
        let case = format!("{name} {framing:?} cut after {after}");
        assert_eq!(e.class, FailureClass::Transient, "{case}: {e}");
        assert!(
            e.message.contains("cut before its terminal event"),
            "{case}: {e}"
        );
        assert!(!e.evidence.unwrap_or_default().is_empty(), "{case}");
        assert_eq!(
            server.requests().len(),
            1,
            "{case}: a started answer is not re-sent"
        );
    }
}

#[tokio::test]
async fn cancelling_mid_stream_stops_reading_and_closes_the_connection() {
    let server = Loopback::start(vec![Reply::Stall {
        events: sse_events("openai_tool_call.sse"),
    }])
    .await;
    let p = provider(
        ProviderKind::OpenAi,
        &server,
        settings(Duration::from_secs(60), 1),
    );
    let cancel = CancellationToken::new();
    let req = request(true);
    let call = chat_until_cancelled(p.as_ref(), &req, &cancel);
    let cancel_after_first_event = async {
        server.stalled().await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(call, cancel_after_first_event);
    let e = result.unwrap_err();
    assert_eq!(e.class, FailureClass::Cancelled, "{e}");
    // The attempt fails `transient` (it may run again); the class itself says what happened.
    assert_eq!(e.class.as_str(), "cancelled");
    assert_eq!(e.attempt_class(), FailureClass::Transient);
    // The server sees the connection close (a generous bound: this is not a timing test).
    tokio::time::timeout(Duration::from_secs(30), server.disconnected())
        .await
        .expect("the client closed the connection");
}

#[tokio::test]
async fn dropping_the_future_mid_stream_closes_the_connection() {
    let server = Loopback::start(vec![Reply::Stall {
        events: sse_events("anthropic_tool_use.sse"),
    }])
    .await;
    let p = provider(
        ProviderKind::Anthropic,
        &server,
        settings(Duration::from_secs(60), 1),
    );
    let req = request(true);
    tokio::select! {
        _ = p.chat(&req) => panic!("a stalled stream cannot finish"),
        () = server.stalled() => {} // the chat future is dropped here
    }
    tokio::time::timeout(Duration::from_secs(30), server.disconnected())
        .await
        .expect("the client closed the connection");
}

const KEY: &str = "sk-weft-test-0123456789-SECRET";

#[tokio::test]
async fn a_key_never_shows_in_errors_or_debug_output() {
    let server = Loopback::start(vec![Reply::EchoHeaders401, Reply::json(200, OK)]).await;
    let config = ProviderConfig::new("echo", ProviderKind::OpenAi, &server.base_url);
    let p = OpenAi::new(&config, Some(Secret::new(KEY))).expect("provider");
    let e = p.chat(&request(false)).await.unwrap_err();
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str()),
        "the key is sent"
    );
    assert_eq!(e.class, FailureClass::PermissionDenied);
    assert!(
        e.evidence
            .as_deref()
            .unwrap_or_default()
            .contains("Bearer ***"),
        "the echoed header is kept, redacted: {e}"
    );
    for shown in [format!("{e}"), format!("{e:?}"), format!("{p:?}")] {
        assert!(!shown.contains(KEY), "{shown}");
    }
    let answer = p.chat(&request(false)).await.expect("answer");
    let recorded = serde_json::to_string(&answer).expect("json");
    assert!(!recorded.contains(KEY));
}

/// The key is read from the environment variable the config names. The variable is set for
/// a child run of this test binary (tests cannot set the environment of their own process).
#[tokio::test]
async fn the_key_comes_from_the_named_environment_variable() {
    const VAR: &str = "WEFT_AGENTS_TEST_API_KEY";
    if std::env::var_os(VAR).is_none() {
        let exe = std::env::current_exe().expect("test binary");
        let out = tokio::process::Command::new(exe)
            .args([
                "the_key_comes_from_the_named_environment_variable",
                "--exact",
            ])
            .env(VAR, KEY)
            .output()
            .await
            .expect("child test run");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("1 passed"), "{stdout}");
        return;
    }
    let server = Loopback::start(vec![Reply::json(200, fixture("anthropic_tool_use.json"))]).await;
    let mut config = ProviderConfig::new("env", ProviderKind::Anthropic, &server.base_url);
    config.api_key_env = Some(VAR.into());
    let p = config.build().expect("provider");
    p.chat(&request(false)).await.expect("answer");
    assert_eq!(server.requests()[0].header("x-api-key"), Some(KEY));

    config.api_key_env = Some("WEFT_AGENTS_TEST_UNSET_KEY".into());
    let e = config.build().err().expect("no key, no provider");
    assert_eq!(e.class, FailureClass::PermissionDenied);
    assert!(
        e.message.contains("WEFT_AGENTS_TEST_UNSET_KEY is not set"),
        "{e}"
    );
}
