//! W10, weft's side: the agent loop against a mock LLM on loopback (`docs/BENCHMARKS.md`,
//! `bench/agent-loop-vs-langgraph.sh`; the mock and the LangGraph side are in
//! `bench/agent-loop/`).
//!
//! One run is a real weft run through the engine (`run_document`) of a one-node AGS graph:
//! the task node `answer` runs on the model agent ([`weft_agents::ModelAgent`]) over the
//! OpenAI-compatible provider pointed at the mock, and is offered the host tool `lookup`
//! ([`Lookup`], registered through `AgentTools::with_host_tool`, decided by the policy as
//! `custom:call:host/lookup`). The mock answers the first turn with one `lookup` call and the
//! tool result with the final text, which fills the node's one text output
//! (`LoopSettings::text_answer`): two model calls and one tool call per run, as in the
//! LangGraph `create_react_agent` run against the same mock.
//!
//! Every run is checked: it succeeded, its graph output is [`expected_final`], and it spent
//! exactly two model turns and one tool call.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use weft_agents::provider::ChatFuture;
use weft_agents::{AgentTools, ChatRequest, LoopSettings, ModelAgent, Provider, RoutingProfile};
use weft_engine::agent::AgentRegistry;
use weft_engine::{FinalStatus, RunOptions, run_document};
use weft_policy::{Identity, OperatorPolicy};
use weft_store::Store;
use weft_tools::{HostFuture, HostTool, MemoryJournal, ToolError};

/// The host tool's name, as the mock calls it.
pub const TOOL: &str = "lookup";

/// The operator policy of the benchmark: the one host tool is allowed.
pub const POLICY: &str = r#"
[policy]
[[policy.rules]]
decision = "allow"
permission = "custom:call:host/lookup"
"#;

/// The key the mock looks up. The mock takes the last word of the last user message; the
/// last slot of weft's task prompt is its bounds (`- time: N s`), so the word is `s` in every
/// run (the LangGraph side sends a bare `Please look up key k<i>`).
pub const MOCK_KEY: &str = "s";

/// The final text every run must deliver: the mock's `FINAL: ` and the tool's answer.
pub fn expected_final() -> String {
    format!("FINAL: value-{MOCK_KEY}")
}

/// The benchmark's `lookup`: what the peer's `lookup_impl` does (`"value-" + key`), and the
/// time spent in it, so the overhead can leave it out.
#[derive(Debug, Default)]
pub struct Lookup {
    /// Calls made and nanoseconds spent in them.
    pub calls: AtomicU64,
    pub nanos: AtomicU64,
}

impl HostTool for Lookup {
    fn name(&self) -> &str {
        TOOL
    }

    fn description(&self) -> &str {
        "Look up the value stored under a key."
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "additionalProperties": false, "required": ["key"],
            "properties": {"key": {"type": "string"}}})
    }

    fn call<'a>(&'a self, arguments: &'a Value) -> HostFuture<'a> {
        Box::pin(async move {
            let t = Instant::now();
            let key = arguments
                .get("key")
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::tool("no `key`"))?;
            let value = format!("value-{key}");
            let spent = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.calls.fetch_add(1, Ordering::Relaxed);
            self.nanos.fetch_add(spent, Ordering::Relaxed);
            Ok(Value::String(value))
        })
    }
}

/// Time spent in the model's calls as the agent sees them (from sending the request to the
/// parsed answer): the provider the benchmark's agent runs on, wrapped.
pub struct TimedProvider {
    inner: Arc<dyn Provider>,
    pub calls: AtomicU64,
    pub nanos: AtomicU64,
}

impl Provider for TimedProvider {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> ChatFuture<'a> {
        Box::pin(async move {
            let t = Instant::now();
            let answer = self.inner.chat(request).await;
            let spent = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.calls.fetch_add(1, Ordering::Relaxed);
            self.nanos.fetch_add(spent, Ordering::Relaxed);
            answer
        })
    }
}

/// The one-node graph every run runs: the key of run `i` comes in as the param `key`.
pub fn document() -> Value {
    json!({
        "ags_version": "1.0",
        "kind": "AgenticGraph",
        "id": "w10-agent-loop",
        "title": "W10 agent loop",
        "objective": "Look up a key with a tool and answer with its value.",
        "entrypoints": ["answer"],
        "params": {"key": {"type": "string", "description": "The key to look up"}},
        "nodes": {"answer": {
            "type": "task",
            "title": "Answer",
            "description": "Look up the key with the `lookup` tool and answer with its value.",
            "intelligence": {"tier": "standard"},
            "requirements": {"tools": [TOOL], "permissions": ["custom:call:host/lookup"]},
            "inputs": {"key": {"type": "string", "description": "The key", "from": "params.key"}},
            "outputs": {"answer": {"type": "string", "description": "The final answer"}}
        }},
        "outputs": {"answer": {"type": "string", "description": "The final answer",
            "from": "nodes.answer.outputs.answer"}}
    })
}

/// Where runs are logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreMode {
    /// A fresh in-memory event log per run (nothing kept, nothing written).
    Ephemeral,
    /// One durable SQLite store for every run: `.weft/weft.db` under this directory.
    Sqlite(PathBuf),
}

impl StoreMode {
    pub fn name(&self) -> &'static str {
        match self {
            StoreMode::Ephemeral => "ephemeral",
            StoreMode::Sqlite(_) => "sqlite",
        }
    }
}

/// Why the benchmark could not be set up or a run went wrong.
pub type Error = Box<dyn std::error::Error>;

/// What every run shares: the document, the agents (one provider, one pooled HTTP client),
/// the store, the project directory.
pub struct Bench {
    pub document: Value,
    pub agents: Arc<AgentRegistry>,
    pub lookup: Arc<Lookup>,
    /// The model calls, timed.
    pub model: Arc<TimedProvider>,
    store: Option<Store>,
    project: PathBuf,
}

impl Bench {
    /// The benchmark against the OpenAI-compatible server at `base_url` (`…/v1`), logging
    /// runs as `mode` says, with `project` as every run's project directory.
    pub fn new(base_url: &str, mode: &StoreMode, project: &Path) -> Result<Bench, Error> {
        let document = document();
        let errors: Vec<String> = weft_ags::validate::validate(&document)
            .iter()
            .filter(|f| f.is_error())
            .map(|f| format!("{} {} {}", f.code.as_str(), f.pointer, f.message))
            .collect();
        if !errors.is_empty() {
            return Err(format!("the W10 graph is invalid: {errors:?}").into());
        }
        let profile = RoutingProfile::parse(&format!(
            "[providers.mock]\nkind = \"openai\"\nbase_url = \"{base_url}\"\nmax_attempts = 1\n\n\
             [tiers.standard]\nprovider = \"mock\"\nmodel = \"mock\"\n"
        ))?;
        let lookup = Arc::new(Lookup::default());
        let tools = AgentTools::new(
            Arc::new(document.clone()),
            Arc::new(OperatorPolicy::from_toml(POLICY)?),
            Identity {
                subject: "bench".into(),
                session: None,
            },
            Arc::new(MemoryJournal::default()),
            "w10",
        )?
        .with_host_tool(lookup.clone())?;
        let settings = LoopSettings {
            text_answer: true,
            ..LoopSettings::default()
        };
        // What `RoutingProfile::model_agent` builds, with the one provider timed.
        let provider = profile.providers.first().ok_or("no provider")?.build()?;
        let model = Arc::new(TimedProvider {
            inner: provider,
            calls: AtomicU64::new(0),
            nanos: AtomicU64::new(0),
        });
        let mut agent = ModelAgent::new(settings).with_provider(model.clone());
        for t in &profile.tiers {
            agent = agent.with_model(t.model.clone(), t.price);
        }
        let agent = agent.with_tools(tools);
        let mut agents = AgentRegistry::with_defaults(None);
        agents.register(Arc::new(agent));
        agents.set_model_agent(weft_agents::MODEL);
        let store = match mode {
            StoreMode::Ephemeral => None,
            StoreMode::Sqlite(dir) => {
                let weft = dir.join(".weft");
                std::fs::create_dir_all(&weft)?;
                Some(Store::open(weft.join("weft.db"))?)
            }
        };
        Ok(Bench {
            document,
            agents: Arc::new(agents),
            lookup,
            model,
            store,
            project: project.to_path_buf(),
        })
    }

    /// Write transactions the durable store has committed so far (each one fsync of the
    /// WAL); `None` on the ephemeral store.
    pub fn commits(&self) -> Option<u64> {
        self.store.as_ref().map(|s| s.stats().transactions)
    }

    /// Runs the graph once with key `k<i>` and checks what it did.
    pub async fn run(&self, i: u64) -> Result<(), Error> {
        let mut params = Map::new();
        params.insert("key".into(), json!(format!("k{i}")));
        let options = RunOptions {
            params,
            project_dir: self.project.clone(),
            agents: Some(Arc::clone(&self.agents)),
            ..RunOptions::default()
        };
        let report = match &self.store {
            Some(store) => run_document(&self.document, store, &options).await?,
            None => {
                run_document(&self.document, &weft_store::EphemeralStore::new(), &options).await?
            }
        };
        if report.status != FinalStatus::Succeeded {
            let nodes: Vec<_> = report
                .nodes
                .iter()
                .filter_map(|n| n.error.as_deref())
                .collect();
            return Err(format!(
                "run {i}: {:?}: {:?} {nodes:?}",
                report.status, report.reasons
            )
            .into());
        }
        let answer = report.outputs.get("answer").and_then(Value::as_str);
        if answer != Some(expected_final().as_str()) {
            return Err(format!("run {i}: answer {answer:?}").into());
        }
        let (steps, calls) = (report.usage.agent_steps, report.usage.tool_calls);
        if (steps, calls) != (2, 1) {
            return Err(format!("run {i}: {steps} model turns and {calls} tool calls").into());
        }
        Ok(())
    }
}

/// What [`drive`] saw: each run's end-to-end latency, how many were right, the first error.
#[derive(Debug, Default)]
pub struct Driven {
    pub latencies: Vec<Duration>,
    pub ok: u64,
    pub errors: u64,
    pub first_error: Option<String>,
}

/// Runs `n` runs closed-loop with `concurrency` workers on the current thread (like the
/// peer's asyncio workers): each worker starts the next run when its last one ends. Run
/// indices start at `start`. Call inside a `tokio::task::LocalSet`.
pub async fn drive(bench: Rc<Bench>, n: u64, concurrency: usize, start: u64) -> Driven {
    let next = Rc::new(Cell::new(0u64));
    let driven = Rc::new(RefCell::new(Driven::default()));
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (bench, next, driven) = (Rc::clone(&bench), Rc::clone(&next), Rc::clone(&driven));
            tokio::task::spawn_local(async move {
                loop {
                    let j = next.get();
                    if j >= n {
                        break;
                    }
                    next.set(j + 1);
                    let t = Instant::now();
                    let result = bench.run(start + j).await;
                    let mut d = driven.borrow_mut();
                    d.latencies.push(t.elapsed());
                    match result {
                        Ok(()) => d.ok += 1,
                        Err(e) => {
                            d.errors += 1;
                            d.first_error.get_or_insert_with(|| e.to_string());
                        }
                    }
                }
            })
        })
        .collect();
    for w in workers {
        if let Err(e) = w.await {
            let mut d = driven.borrow_mut();
            d.errors += 1;
            d.first_error.get_or_insert_with(|| e.to_string());
        }
    }
    Rc::try_unwrap(driven).map_or_else(
        |rc| std::mem::take(&mut *rc.borrow_mut()),
        RefCell::into_inner,
    )
}
