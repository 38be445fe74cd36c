//! Both wire formats over real HTTP on 127.0.0.1 against the loopback test double: request
//! shapes (tools, tool choice, `content: ""` beside tool calls, headers), JSON answers, and
//! recorded SSE streams replayed whole, chunked and in fragments that split events.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::loopback::{Framing, Loopback, Reply, fixture, sse};
use weft_agents::{
    ChatRequest, FailureClass, FinishReason, HttpSettings, Message, Provider, ProviderConfig,
    ProviderKind, RetryPolicy, ToolCall, ToolChoice, ToolDef,
};

fn settings() -> HttpSettings {
    HttpSettings {
        timeout: Duration::from_secs(20),
        connect_timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(5),
            max_retry_after: Duration::from_secs(2),
        },
        max_body_bytes: weft_agents::DEFAULT_MAX_BODY_BYTES,
    }
}

fn provider(kind: ProviderKind, server: &Loopback) -> Arc<dyn Provider> {
    let mut config = ProviderConfig::new("test", kind, &server.base_url);
    config.http = settings();
    config.build().expect("provider")
}

fn weather_request(stream: bool) -> ChatRequest {
    let mut r = ChatRequest::new(
        "test-model",
        vec![
            Message::system("You answer with tools."),
            Message::user("What is the weather in Paris?"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_0".into(),
                    name: "get_weather".into(),
                    arguments: json!({"city": "Lyon"}),
                }],
            },
            Message::Tool {
                call_id: "call_0".into(),
                content: "12 C".into(),
                is_error: false,
            },
        ],
    );
    r.tools = vec![ToolDef {
        name: "get_weather".into(),
        description: "The weather in a city".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    }];
    r.tool_choice = ToolChoice::Named("get_weather".into());
    r.max_tokens = 64;
    r.temperature = Some(0.0);
    r.stream = stream;
    r
}

#[tokio::test]
async fn openai_json_answer_and_the_request_it_sent() {
    let server = Loopback::start(vec![Reply::json(200, fixture("openai_tool_call.json"))]).await;
    let answer = provider(ProviderKind::OpenAi, &server)
        .chat(&weather_request(false))
        .await
        .expect("answer");
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(answer.tool_calls.len(), 1);
    assert_eq!(answer.tool_calls[0].name, "get_weather");
    assert_eq!(answer.tool_calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(
        (answer.usage.input_tokens, answer.usage.output_tokens),
        (30, 8)
    );

    let sent = &server.requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        sent.header("authorization"),
        None,
        "no key configured, none sent"
    );
    let body = sent.json();
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
    assert_eq!(
        body["tools"][0]["function"]["parameters"]["required"],
        json!(["city"])
    );
    let assistant = &body["messages"][2];
    assert_eq!(
        assistant["content"],
        json!(""),
        "never null beside tool calls"
    );
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        json!("{\"city\":\"Lyon\"}")
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_0", "content": "12 C"})
    );
    assert_eq!(body["max_tokens"], json!(64));
    assert!(body.get("stream").is_none());
}

#[tokio::test]
async fn openai_stream_assembles_tool_calls_fragmented_by_index() {
    for framing in [Framing::Close, Framing::Chunked, Framing::Fragments(7)] {
        let server = Loopback::start(vec![sse("openai_tool_call.sse", framing)]).await;
        let answer = provider(ProviderKind::OpenAi, &server)
            .chat(&weather_request(true))
            .await
            .unwrap_or_else(|e| panic!("{framing:?}: {e}"));
        let calls: Vec<(&str, &str, serde_json::Value)> = answer
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.clone()))
            .collect();
        assert_eq!(
            calls,
            vec![
                ("call_a", "get_weather", json!({"city": "Paris"})),
                ("call_b", "get_time", json!({"zone": "CET"})),
            ],
            "{framing:?}"
        );
        assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
        assert_eq!(
            (answer.usage.input_tokens, answer.usage.output_tokens),
            (82, 31)
        );
        let body = server.requests()[0].json();
        assert_eq!(body["stream"], json!(true));
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
    }
}

#[tokio::test]
async fn openai_stream_of_text() {
    let server = Loopback::start(vec![sse("openai_text.sse", Framing::Fragments(3))]).await;
    let mut request = ChatRequest::new("m", vec![Message::user("hi")]);
    request.stream = true;
    let answer = provider(ProviderKind::OpenAi, &server)
        .chat(&request)
        .await
        .expect("answer");
    assert_eq!(answer.text, "Hello, world");
    assert!(answer.tool_calls.is_empty());
    assert_eq!(answer.finish_reason, FinishReason::Length);
    assert_eq!(answer.usage.output_tokens, 4);
    let body = server.requests()[0].json();
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
}

#[tokio::test]
async fn anthropic_json_answer_and_the_request_it_sent() {
    let server = Loopback::start(vec![Reply::json(200, fixture("anthropic_tool_use.json"))]).await;
    let answer = provider(ProviderKind::Anthropic, &server)
        .chat(&weather_request(false))
        .await
        .expect("answer");
    assert_eq!(answer.text, "Checking.");
    assert_eq!(answer.tool_calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        (answer.usage.input_tokens, answer.usage.output_tokens),
        (120, 25)
    );

    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    let body = sent.json();
    assert_eq!(body["system"], json!("You answer with tools."));
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "get_weather"})
    );
    assert_eq!(
        body["tools"][0]["input_schema"]["required"],
        json!(["city"])
    );
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(body["messages"][1]["content"][0]["type"], json!("tool_use"));
    assert_eq!(
        body["messages"][1]["content"][0]["input"],
        json!({"city": "Lyon"})
    );
    assert_eq!(
        body["messages"][2]["content"][0]["type"],
        json!("tool_result")
    );
    assert_eq!(
        body["messages"][2]["content"][0]["tool_use_id"],
        json!("call_0")
    );
}

#[tokio::test]
async fn anthropic_stream_accumulates_input_json_per_block() {
    for framing in [Framing::Close, Framing::Chunked, Framing::Fragments(5)] {
        let server = Loopback::start(vec![sse("anthropic_tool_use.sse", framing)]).await;
        let answer = provider(ProviderKind::Anthropic, &server)
            .chat(&weather_request(true))
            .await
            .unwrap_or_else(|e| panic!("{framing:?}: {e}"));
        assert_eq!(answer.text, "Let me check the weather.", "{framing:?}");
        assert_eq!(answer.tool_calls.len(), 1);
        assert_eq!(answer.tool_calls[0].id, "toolu_01");
        assert_eq!(
            answer.tool_calls[0].arguments,
            json!({"city": "San Francisco", "unit": "celsius"})
        );
        assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
        assert_eq!(
            (answer.usage.input_tokens, answer.usage.output_tokens),
            (472, 89)
        );
        assert_eq!(server.requests()[0].json()["stream"], json!(true));
    }
}

#[tokio::test]
async fn anthropic_error_event_is_classified_with_evidence() {
    let server = Loopback::start(vec![sse("anthropic_error.sse", Framing::Chunked)]).await;
    let e = provider(ProviderKind::Anthropic, &server)
        .chat(&weather_request(true))
        .await
        .unwrap_err();
    assert_eq!(
        e.class,
        FailureClass::Transient,
        "overloaded is worth a retry: {e}"
    );
    assert!(e.message.contains("overloaded_error"), "{e}");
    assert!(
        e.evidence
            .as_deref()
            .unwrap_or_default()
            .contains("Overloaded"),
        "{e}"
    );
}

#[tokio::test]
async fn malformed_tool_arguments_are_a_model_error_with_the_raw_text() {
    let server =
        Loopback::start(vec![Reply::json(200, fixture("openai_bad_arguments.json"))]).await;
    let e = provider(ProviderKind::OpenAi, &server)
        .chat(&weather_request(false))
        .await
        .unwrap_err();
    assert_eq!(e.class, FailureClass::ModelError);
    assert_eq!(e.evidence.as_deref(), Some("{\"city\": \"Par"));

    let server = Loopback::start(vec![sse(
        "anthropic_bad_arguments.sse",
        Framing::Fragments(4),
    )])
    .await;
    let e = provider(ProviderKind::Anthropic, &server)
        .chat(&weather_request(true))
        .await
        .unwrap_err();
    assert_eq!(e.class, FailureClass::ModelError);
    assert!(e.message.contains("get_weather"), "{e}");
    assert_eq!(e.evidence.as_deref(), Some("{\"city\": "));
}
