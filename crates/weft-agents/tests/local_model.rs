//! A real model on loopback: SmolLM2-135M-Instruct served by node-llama-cpp through
//! `scripts/local-llm/shim.mjs` (1 thread, temperature 0), reached through the OpenAI
//! provider and the model agent. Forced tool choice; structure only, never the text: a call
//! was made, its arguments validate against the tool schema, usage was recorded.
//!
//! A second test runs a small graph through the engine (a model node on the local model,
//! then a command node that reads its output), with the model agent built from a
//! `weft.toml` routing profile.
//!
//! The model is installed on first use (`scripts/local-llm/install.sh`, through
//! `weft_test_support`); when it cannot be, the test fails and says why (never a skip).
//! docs/agents.md, "Local model".

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use weft_agents::{
    ChatRequest, FinishReason, HttpSettings, LoopSettings, Message, ModelAgent, Provider,
    ProviderConfig, ProviderKind, RoutingProfile, ToolChoice, ToolDef,
};
use weft_engine::agent::{Agent, AgentRequest, Limits, Model, OutputDecl, Route, Tier};
use weft_engine::{FinalStatus, RunOptions, run_document};

const MODEL_FILE: &str = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

/// `$WEFT_LOCAL_LLM`, else `~/.cache/weft/local-llm`, installed if missing.
fn cache_dir() -> PathBuf {
    weft_test_support::local_model()
}

/// The installed pieces, or a failure that says how to install them.
fn installed(cache: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let node = cache.join("node");
    let server = cache.join("server");
    let model = cache.join(MODEL_FILE);
    for (what, path) in [
        ("node (>= 20)", &node),
        (
            "node-llama-cpp",
            &server.join("node_modules/node-llama-cpp/package.json"),
        ),
        ("the SmolLM2 model", &model),
    ] {
        assert!(
            path.exists(),
            "the local model is not installed: {what} is missing at {}. Run scripts/local-llm/install.sh \
             (set WEFT_LOCAL_LLM to use another cache than $HOME/.cache/weft/local-llm)",
            path.display()
        );
    }
    // Run this checkout's shim, from where node-llama-cpp resolves.
    let shim = server.join("shim.mjs");
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/local-llm/shim.mjs");
    let wanted = std::fs::read(&source).expect("scripts/local-llm/shim.mjs");
    if std::fs::read(&shim).ok().as_deref() != Some(wanted.as_slice()) {
        std::fs::write(&shim, wanted).expect("copy the shim");
    }
    (node, shim, model)
}

/// Starts the shim on a free loopback port and waits for `/health`.
async fn start_shim() -> (tokio::process::Child, String) {
    let (node, shim, model) = installed(&cache_dir());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(node)
        .arg(&shim)
        .arg(&model)
        .arg(port.to_string())
        .env("THREADS", "1")
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the shim");
    let base = format!("http://127.0.0.1:{port}");
    weft_agents::install_crypto_provider();
    let client = reqwest::Client::new();
    for _ in 0..240 {
        if let Ok(r) = client.get(format!("{base}/health")).send().await
            && r.status().is_success()
        {
            return (child, base);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("the local model server did not become healthy at {base} within 120 s");
}

fn provider(base: &str) -> Arc<dyn Provider> {
    let mut config = ProviderConfig::new("local", ProviderKind::OpenAi, base);
    config.http = HttpSettings {
        timeout: Duration::from_secs(240),
        ..HttpSettings::default()
    };
    config.build().unwrap()
}

fn weather_tool() -> ToolDef {
    ToolDef {
        name: "get_weather".into(),
        description: "Get the current weather for a city".into(),
        parameters: json!({
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_model_makes_a_forced_tool_call_through_the_provider_and_the_agent() {
    let (_server, base) = start_shim().await;
    let p = provider(&base);

    for stream in [false, true] {
        let mut request = ChatRequest::new(
            "smollm2",
            vec![Message::user(
                "What is the weather in Paris? Use the get_weather tool.",
            )],
        );
        request.tools = vec![weather_tool()];
        request.tool_choice = ToolChoice::Named("get_weather".into());
        request.max_tokens = 64;
        request.temperature = Some(0.0);
        request.stream = stream;
        let answer = p.chat(&request).await.expect("an answer");
        assert_eq!(
            answer.finish_reason,
            FinishReason::ToolCalls,
            "stream={stream}"
        );
        assert_eq!(answer.tool_calls.len(), 1, "stream={stream}");
        let call = &answer.tool_calls[0];
        assert_eq!(call.name, "get_weather");
        weft_engine::typing::check_schema(&weather_tool().parameters, &call.arguments)
            .unwrap_or_else(|e| panic!("stream={stream}: {e}: {}", call.arguments));
        assert!(
            answer.usage.input_tokens > 0 && answer.usage.output_tokens > 0,
            "{:?}",
            answer.usage
        );
    }

    let agent = ModelAgent::new(LoopSettings {
        max_tokens_per_turn: 64,
        ..LoopSettings::default()
    })
    .with_provider(p)
    .with_model(
        Model {
            tier: Tier::Minimal,
            model: "smollm2".into(),
            provider: "local".into(),
            context_tokens: Some(4096),
        },
        None,
    );
    let request = AgentRequest {
        node: "capital".into(),
        attempt: 1,
        inputs: json!({"country": "France"}),
        brief: Some("Name the capital city of the country.".into()),
        guidance: Default::default(),
        outputs: vec![OutputDecl {
            name: "city".into(),
            required: true,
            type_name: Some("string".into()),
        }],
        decision_labels: vec![],
        decision_default: None,
        feedback: None,
        route: Some(Route {
            requested_tier: "minimal".into(),
            effective_tier: "minimal".into(),
            provider: "local".into(),
            model: "smollm2".into(),
            downgraded: false,
            reason: None,
        }),
        limits: Limits::wall_clock(Duration::from_secs(300)),
        workspace: PathBuf::from("."),
        config: Value::Null,
        approvals: Vec::new(),
        journal: Default::default(),
    };
    let result = agent.run(&request).await;
    assert!(result.failure.is_none(), "{:?}", result.failure);
    assert!(
        result.outputs.get("city").is_some_and(Value::is_string),
        "{:?}",
        result.outputs
    );
    assert!(result.usage.agent_steps >= 1);
    assert!(result.usage.input_tokens > 0 && result.usage.output_tokens > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graph_runs_end_to_end_on_the_local_model_routed_by_weft_toml() {
    let (_server, base) = start_shim().await;
    let profile = RoutingProfile::parse(&format!(
        r#"
[providers.local]
kind = "openai"
base_url = "{base}"
timeout_seconds = 240

[tiers.minimal]
provider = "local"
model = "smollm2"
context_tokens = 4096
input_price_per_million = 1.0
output_price_per_million = 2.0
"#
    ))
    .unwrap();
    let registry = profile
        .registry(LoopSettings {
            max_tokens_per_turn: 64,
            ..LoopSettings::default()
        })
        .unwrap();
    let doc = json!({"id": "capital", "entrypoints": ["answer"], "nodes": {
        "answer": {
            "description": "Name the capital city of the country.",
            "intelligence": {"tier": "minimal"},
            "inputs": {"country": {"type": "string", "description": "A country", "value": "France"}},
            "outputs": {"city": {"type": "string", "description": "Its capital city"}}
        },
        "show": {
            "description": "Write the answer to a file.",
            "depends_on": ["answer"],
            "inputs": {"city": {"type": "string", "description": "The city", "from": "nodes.answer.outputs.city"}},
            "x-weft-exec": {"run": "cat > seen.json"}
        }
    }});
    let dir = tempfile::tempdir().unwrap();
    let store = weft_store::Store::open_in_memory().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        agents: Some(Arc::new(registry)),
        ..RunOptions::default()
    };
    let report = run_document(&doc, &store, &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:?}");
    assert!(report.usage.agent_steps >= 1, "{:?}", report.usage);
    assert!(report.usage.input_tokens > 0 && report.usage.output_tokens > 0);
    assert!(
        report.usage.cost_usd > 0.0,
        "priced by the profile: {:?}",
        report.usage
    );
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("seen.json")).unwrap())
            .unwrap();
    assert!(seen["city"].is_string(), "{seen}");
}

/// `weft generate`'s loop on the real model: forced `draft_skeleton` and `draft_node` calls
/// (at most two nodes, no repair round). Structure only: a draft came back and was
/// validated, whatever its validity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_model_drafts_a_graph_that_weft_validates() {
    use weft_agents::generate::{GenerateSettings, generate};
    let (_server, base) = start_shim().await;
    let p = provider(&base);
    let settings = GenerateSettings {
        max_rounds: 0,
        max_tokens: 768,
        temperature: Some(0.0),
        max_nodes: 2,
    };
    let g = generate(
        p.as_ref(),
        "smollm2",
        "Summarise a support ticket.",
        &settings,
    )
    .await
    .expect("the model answered the forced calls");
    assert!(g.stopped.is_none(), "{:?}", g.stopped);
    assert!(g.calls >= 1 && g.calls <= 3, "{} calls", g.calls);
    assert!(g.usage.input_tokens > 0 && g.usage.output_tokens > 0);
    assert_eq!(g.document["ags_version"], "1.0");
    assert!(g.document["nodes"].is_object(), "{}", g.document);
    // Validated once, and the findings are the validator's for this very document.
    assert_eq!(g.blocking_per_draft.len(), 1);
    assert_eq!(
        g.findings.len(),
        weft_ags::validate::validate(&g.document).len()
    );
    assert_eq!(g.clean, g.blocking_per_draft[0] == 0);
}
