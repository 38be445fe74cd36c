//! The run's event vocabulary, v1 ([`EVENT_FORMAT`]; `docs/engine.md`), its mapping onto the
//! store (`kind` + JSON payload) and onto scheduler events, and [`replay`].
//!
//! Rule: the engine appends an event to the store *before* it applies it to the scheduler,
//! so a run's state is always a fold over its log.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use weft_core::{Event, Options, Outcome, Scheduler, WorkGraph};
use weft_store::{EventRecord, NewEvent};

use crate::agent::{Route, Usage};

/// Version of the event vocabulary written in `run_started.v`.
pub const EVENT_FORMAT: u32 = 1;

/// How a node ended, as logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeOutcome {
    Succeeded,
    Failed,
    Blocked,
    Skipped,
    Cancelled,
}

impl NodeOutcome {
    /// The scheduler's outcome.
    pub fn core(self) -> Outcome {
        match self {
            NodeOutcome::Succeeded => Outcome::Succeeded,
            NodeOutcome::Failed => Outcome::Failed,
            NodeOutcome::Blocked => Outcome::Blocked,
            NodeOutcome::Skipped => Outcome::Skipped,
            NodeOutcome::Cancelled => Outcome::Cancelled,
        }
    }

    /// The lowercase name (`succeeded`, …), as AGX sees it in `nodes.<id>.status`.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeOutcome::Succeeded => "succeeded",
            NodeOutcome::Failed => "failed",
            NodeOutcome::Blocked => "blocked",
            NodeOutcome::Skipped => "skipped",
            NodeOutcome::Cancelled => "cancelled",
        }
    }
}

/// One event of a run's log. `node` fields are node ids of the root scope; guard edges are
/// effective-edge indices of that scope.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunEvent {
    /// The run began (scheduler: `Begin`).
    RunStarted {
        /// [`EVENT_FORMAT`].
        v: u32,
        graph_digest: String,
        /// The bound params (defaults applied).
        params: Value,
        /// The scheduler options the run used (a replay needs them).
        max_parallel: usize,
        /// `halt`, `isolate` or `continue`.
        on_node_failure: String,
        /// The document as run, so the run record can be built from the log alone (its
        /// digest is `graph_digest`). `null` in logs written before this member existed.
        #[serde(default, skip_serializing_if = "Value::is_null")]
        graph: Value,
        /// Who started the run (`RunOptions::started_by`; v1 addition), when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started_by: Option<String>,
        /// Warnings found before the run began, e.g. a planner worst case over
        /// `max_node_executions` (v1 addition).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
        /// The local `subgraph.ref` children loaded and checked before the run (v1
        /// addition): a resume without the document's file still has them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        refs: Vec<crate::refs::LoggedRef>,
    },
    /// A node's `when` was evaluated (scheduler: `WhenResolved`).
    NodeWhen {
        node: String,
        value: bool,
        /// The AGX evaluation error, when the value is `false` because of one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// An attempt of a node began (informational: not a scheduler event).
    NodeStarted {
        node: String,
        attempt: u32,
        /// The resolved inputs, on the first attempt only (retries reuse them), without
        /// those declared `redact: true`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        inputs: Option<Value>,
        /// The backoff pause before this attempt, in ms (retries only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delay_ms: Option<u64>,
        /// Why the previous attempt failed (`class: message`), on retries only (v1
        /// addition).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        previous_failure: Option<String>,
        /// The routing decision of a model attempt (the record's `attempts[].routed`;
        /// v1 addition).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        routed: Option<Route>,
    },
    /// A node reached its outcome (scheduler: `Settled`).
    NodeFinished {
        node: String,
        outcome: NodeOutcome,
        /// The outputs of the last attempt (an object), less those declared `redact: true`.
        outputs: Value,
        /// The names of the produced outputs left out of `outputs` (`redact: true`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        redacted: Vec<String>,
        /// The criteria verdict of the last attempt (`weft_criteria::Verdict`), if any.
        verdict: Option<Value>,
        /// Values of the outgoing guards the outcome needs: `[edge, value]`.
        guards: Vec<(usize, bool)>,
        attempts: u32,
        /// Why the node did not succeed, in one line.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The failure-ladder rung that absorbed the failure after the retries
        /// (`fallback[i]:<strategy>`, `timeout_action:<action>`), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        absorbed_by: Option<String>,
        /// The failure that rung absorbed, as `error` would have said it (`class: message`,
        /// a command's message ending with its last stderr lines), so a node that succeeded
        /// by a fallback still says what failed (v1 addition).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        absorbed_failure: Option<String>,
        /// What the node's attempts spent in all (absent when nothing: `exec` nodes; v1
        /// addition).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// What each attempt spent, in order, when any spent something (v1 addition).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attempt_usage: Vec<Usage>,
        /// Warnings of the last attempt, e.g. `RT022` (v1 addition).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
    },
    /// On resume: an attempt that was `node_started` but never `node_finished` (the process
    /// stopped while it ran) is given up; the node runs again as attempt `attempt + 1`
    /// (informational: not a scheduler event).
    NodeAbandoned {
        node: String,
        /// The abandoned attempt.
        attempt: u32,
        /// Why it may run again: `retry_uncertain` or `idempotent`.
        reason: String,
    },
    /// On resume with `retry_nodes`: the node's earlier `node_finished` (failed or blocked)
    /// no longer counts; the node runs again (informational for the scheduler: a replay
    /// skips the superseded `node_finished`, see [`superseded`]).
    NodeReset { node: String },
    /// A `gate` node with `mode: notify` told its audience and succeeds at once
    /// (informational: not a scheduler event; its `node_finished` follows).
    GateNotified {
        node: String,
        /// `gate.roles`, as declared.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        roles: Vec<String>,
        /// `gate.prompt`, the template as declared (not rendered yet); for a checkpoint,
        /// rendered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt: Option<String>,
        /// For an advisory or `notify` human checkpoint of a task: its stage (`at`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stage: Option<String>,
        /// For a checkpoint: its `id` (else `human[<i>]`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkpoint: Option<String>,
    },
    /// A node waits on a person (a blocking gate, a `human_takeover` fallback, an
    /// escalation to a human): scheduler `AwaitingHuman` (`docs/engine.md` §3c).
    GateWaiting(Box<crate::wait::Waiting>),
    /// Inbox kind: a person decided on a waiting node (written by `weft approve|reject|provide`,
    /// not by the driver): scheduler `HumanResumed`.
    HumanDecision(crate::wait::Decision),
    /// A waiting node's deadline passed (`action`: the effective `on_timeout`); scheduler
    /// `HumanResumed` unless the action keeps it waiting (`hold`, `escalate`).
    HumanTimeout { node: String, action: String },
    /// Inbox kind: someone changed the live run's graph (`weft_engine::mutation::submit`):
    /// scheduler `Mutate`; one the scheduler refuses where the log has it changes nothing
    /// (v1 addition; its payload has its own version, `v`).
    GraphMutated {
        /// [`crate::graph_change::MUTATION_FORMAT`].
        v: u32,
        actor: String,
        mutation: crate::graph_change::GraphMutation,
    },
    /// Inbox kind: someone asked the run to stop (`weft cancel`): scheduler `Cancel`.
    CancelRequested {
        actor: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// The edits an isolated attempt made in its own copy of the project, as a unified diff
    /// (informational: not a scheduler event; v1 addition, `docs/engine.md` §3n).
    NodePatch {
        node: String,
        attempt: u32,
        /// Merged into the project (a successful attempt), or recorded only.
        applied: bool,
        /// The changed paths, relative to the project.
        files: Vec<String>,
        /// The unified diff.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        diff: String,
        /// Why a successful attempt's edits were not merged (a conflict).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A side-effecting tool call of an agent attempt returned: its journal entry, appended
    /// before the model sees the result, so a resumed attempt answers the same call slot from
    /// the log instead of doing the effect again (informational: not a scheduler event; v1
    /// addition, `docs/engine.md` §3p).
    ToolEffect(Box<crate::agent::journal::ToolEffect>),
    /// A tool call of an agent attempt was decided by the policy (allow, ask or deny, with
    /// the layer or rule), appended before the decision takes effect, so every refusal is
    /// on the record and in the audit trail (informational: not a scheduler event; v1
    /// addition, `docs/engine.md` §3p).
    PolicyDecision(Box<crate::agent::journal::PolicyDecision>),
    /// What attempt `attempt` of `node` has spent so far, logged when the node waits on a
    /// person before it finishes (an escalation, a takeover, a tool approval), so a resumed
    /// run counts it once and budgets still hold; `node_finished` later carries the node's
    /// whole spend, this part included (informational; v1 addition).
    AttemptSpent {
        node: String,
        attempt: u32,
        usage: Usage,
    },
    /// A failed or cancelled run undoes the side effects of a succeeded node: its
    /// `failure.compensation` node runs (informational: not a scheduler event; v1 addition).
    CompensationStarted {
        /// The compensation node that runs.
        node: String,
        /// The succeeded node whose effects it undoes.
        compensates: String,
    },
    /// A compensation ended (informational; v1 addition).
    CompensationFinished {
        node: String,
        compensates: String,
        /// `succeeded` or `failed` (a compensation is one attempt: no retries, no ladder).
        outcome: NodeOutcome,
        /// The compensation's outputs, less those declared `redact: true`.
        #[serde(default, skip_serializing_if = "Value::is_null")]
        outputs: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// What the compensation raised without failing: an `RT062` input that
        /// `on_expression_error: false` evaluated as false (DIGEST §2.6), its attempt's
        /// warnings.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
    },
    /// The run ended.
    RunFinished {
        /// `succeeded`, `failed` or `partial`.
        status: String,
        /// The bound graph outputs, less those declared `redact: true`.
        outputs: Value,
        /// The names of the bound outputs left out of `outputs` (`redact: true`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        redacted: Vec<String>,
        /// Why the run did not succeed, when it did not.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasons: Vec<String>,
        /// The verdict of the graph's `success` block (`weft_criteria::Verdict`), when the
        /// graph has one: the run record's `graph_success`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        graph_verdict: Option<Value>,
    },
}

/// An event that could not be read back or replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("event {seq}: cannot decode `{kind}`: {message}")]
    Decode {
        seq: u64,
        kind: String,
        message: String,
    },
    #[error("event {seq}: unknown node `{node}`")]
    UnknownNode { seq: u64, node: String },
    #[error("event {seq}: the scheduler refused it: {error}")]
    Protocol {
        seq: u64,
        error: weft_core::ProtocolError,
    },
}

/// The store kind of [`RunEvent::GraphMutated`].
const GRAPH_MUTATED: &str = "graph_mutated";

/// The payload of a `graph_mutated` event, read on its own ([`RunEvent::from_text`]).
#[derive(Deserialize)]
struct GraphMutatedPayload {
    v: u32,
    actor: String,
    mutation: crate::graph_change::GraphMutation,
}

impl RunEvent {
    /// Is this a kind that processes other than the driver may append (the inbox,
    /// `docs/engine.md` §2c)?
    pub fn is_inbox(&self) -> bool {
        matches!(
            self,
            RunEvent::HumanDecision(_)
                | RunEvent::CancelRequested { .. }
                | RunEvent::GraphMutated { .. }
        )
    }

    /// The store kind (`run_started`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            RunEvent::RunStarted { .. } => "run_started",
            RunEvent::NodeWhen { .. } => "node_when",
            RunEvent::NodeStarted { .. } => "node_started",
            RunEvent::NodeFinished { .. } => "node_finished",
            RunEvent::RunFinished { .. } => "run_finished",
            RunEvent::NodeAbandoned { .. } => "node_abandoned",
            RunEvent::NodeReset { .. } => "node_reset",
            RunEvent::GateNotified { .. } => "gate_notified",
            RunEvent::GateWaiting(_) => "gate_waiting",
            RunEvent::HumanDecision(_) => "human_decision",
            RunEvent::HumanTimeout { .. } => "human_timeout",
            RunEvent::CancelRequested { .. } => "cancel_requested",
            RunEvent::GraphMutated { .. } => GRAPH_MUTATED,
            RunEvent::NodePatch { .. } => "node_patch",
            RunEvent::ToolEffect(_) => "tool_effect",
            RunEvent::PolicyDecision(_) => "policy_decision",
            RunEvent::AttemptSpent { .. } => "attempt_spent",
            RunEvent::CompensationStarted { .. } => "compensation_started",
            RunEvent::CompensationFinished { .. } => "compensation_finished",
        }
    }

    /// The store form: `kind` apart, the other members as the payload, serialised straight
    /// to compact JSON text (a value tree would be built only to be serialised again).
    pub fn to_new_event(&self, recorded_at_ms: i64) -> Result<NewEvent, crate::EngineError> {
        let kind = self.kind();
        let encode = |source| crate::EngineError::Encode { kind, source };
        let payload = with_scratch(|buf| {
            serde_json::to_writer(&mut *buf, self)?;
            // serde_json writes UTF-8; the check is a fast scan.
            Ok(std::str::from_utf8(buf)
                .ok()
                .and_then(|text| untagged(text, kind)))
        })
        .map_err(encode)?;
        match payload {
            Some(payload) => Ok(NewEvent::from_json(kind, payload, recorded_at_ms)),
            // Not reached with serde's internally tagged form (the tag is written first);
            // the value route stays correct whatever the serialiser does.
            None => {
                let payload = self.payload().map_err(encode)?;
                Ok(NewEvent::new(kind, payload, recorded_at_ms))
            }
        }
    }

    /// The stored payload as a value: every member but `kind` (for observers that need
    /// the value, such as the audit trail and `--jsonl`).
    pub fn payload(&self) -> Result<Value, serde_json::Error> {
        let mut payload = match serde_json::to_value(self)? {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        payload.shift_remove("kind");
        Ok(Value::Object(payload))
    }

    /// Reads a stored event back.
    pub fn from_record(record: &EventRecord) -> Result<RunEvent, ReplayError> {
        Self::decode(record.seq, &record.kind, record.payload.clone())
    }

    /// [`RunEvent::from_record`] without copying the payload: it is moved out of `record`
    /// (left `null`). A resume decodes a whole log this way (`run_started` holds the
    /// document, the largest value of a log).
    pub fn take_from_record(record: &mut EventRecord) -> Result<RunEvent, ReplayError> {
        let payload = std::mem::take(&mut record.payload);
        Self::decode(record.seq, &record.kind, payload)
    }

    /// Decodes a stored event straight from its payload text ([`weft_store::EventLog::read_raw`]),
    /// without a value tree in between: the payload with `"kind":…` put first is serde's
    /// internally tagged form. The same event as [`RunEvent::from_record`] of the parsed
    /// payload.
    pub fn from_text(seq: u64, kind: &str, payload: &str) -> Result<RunEvent, ReplayError> {
        let error = |message: String| ReplayError::Decode {
            seq,
            kind: kind.to_owned(),
            message,
        };
        let Some(members) = payload.trim_start().strip_prefix('{') else {
            // Not an object: decoded the long way, like a parsed payload.
            let value = serde_json::from_str(payload).map_err(|e| error(e.to_string()))?;
            return Self::decode(seq, kind, value);
        };
        if kind == GRAPH_MUTATED {
            // Read as a plain struct: the enum's tag would have serde copy the whole
            // payload (a plan of thousands of nodes) into a buffer before reading it.
            let GraphMutatedPayload { v, actor, mutation } =
                serde_json::from_str(payload).map_err(|e| error(e.to_string()))?;
            return Ok(RunEvent::GraphMutated { v, actor, mutation });
        }
        let tag = serde_json::to_string(kind).map_err(|e| error(e.to_string()))?;
        let mut text = String::with_capacity(payload.len() + tag.len() + 10);
        text.push_str("{\"kind\":");
        text.push_str(&tag);
        if !members.trim_start().starts_with('}') {
            text.push(',');
        }
        text.push_str(members);
        serde_json::from_str(&text).map_err(|e| error(e.to_string()))
    }

    pub(crate) fn decode(seq: u64, kind: &str, payload: Value) -> Result<RunEvent, ReplayError> {
        let mut object = Map::new();
        object.insert("kind".into(), Value::String(kind.to_owned()));
        if let Value::Object(m) = payload {
            object.extend(m);
        }
        serde_json::from_value(Value::Object(object)).map_err(|e| ReplayError::Decode {
            seq,
            kind: kind.to_owned(),
            message: e.to_string(),
        })
    }

    /// The scheduler event this log event stands for, if any (`node_started` and
    /// `run_finished` are records only). `None` in the error slot means the node id is
    /// unknown to `graph`.
    pub fn to_scheduler(&self, graph: &WorkGraph) -> Result<Option<Event>, String> {
        let find = |id: &str| graph.find(id).ok_or_else(|| id.to_string());
        // A wait for a graph-level `human` criterion names no node (`run/signoff.rs`).
        let signoff = |id: &str| crate::wait::criterion_of(id).is_some();
        Ok(match self {
            RunEvent::GateWaiting(w) if signoff(&w.node) => None,
            RunEvent::HumanDecision(d) if signoff(&d.node) => None,
            RunEvent::HumanTimeout { node, .. } if signoff(node) => None,
            RunEvent::RunStarted { .. } => Some(Event::Begin),
            RunEvent::NodeWhen { node, value, .. } => Some(Event::WhenResolved {
                node: find(node)?,
                value: *value,
            }),
            RunEvent::NodeFinished {
                node,
                outcome,
                guards,
                ..
            } => Some(Event::Settled {
                node: find(node)?,
                outcome: outcome.core(),
                guards: guards.clone(),
            }),
            RunEvent::GateWaiting(w) => Some(Event::AwaitingHuman {
                node: find(&w.node)?,
            }),
            RunEvent::HumanDecision(d) => Some(Event::HumanResumed {
                node: find(&d.node)?,
            }),
            RunEvent::HumanTimeout { node, action } => crate::wait::timeout_resumes(action)
                .then_some(Event::HumanResumed { node: find(node)? }),
            RunEvent::CancelRequested { .. } => Some(Event::Cancel),
            // An id that names no node is a refused mutation: nothing to apply.
            RunEvent::GraphMutated { mutation, .. } => mutation.to_event(graph).ok(),
            RunEvent::NodeStarted { .. }
            | RunEvent::NodeAbandoned { .. }
            | RunEvent::NodeReset { .. }
            | RunEvent::GateNotified { .. }
            | RunEvent::NodePatch { .. }
            | RunEvent::ToolEffect(_)
            | RunEvent::PolicyDecision(_)
            | RunEvent::AttemptSpent { .. }
            | RunEvent::CompensationStarted { .. }
            | RunEvent::CompensationFinished { .. }
            | RunEvent::RunFinished { .. } => None,
        })
    }
}

/// `{"kind":"<kind>",…}` (serde's internally tagged form: the tag comes first) without
/// the tag member, as a new string of its exact size; `None` when it does not start that way.
fn untagged(text: &str, kind: &str) -> Option<String> {
    const OPEN: &str = "{\"kind\":\"";
    let tag_end = OPEN.len() + kind.len() + 1;
    let tagged = text.starts_with(OPEN)
        && text.get(OPEN.len()..tag_end - 1) == Some(kind)
        && text.as_bytes().get(tag_end - 1) == Some(&b'"');
    // `{"kind":"k",` + rest → `{` + rest; `{"kind":"k"}` → `{}`
    let rest = match text.as_bytes().get(tag_end) {
        Some(b',') if tagged => text.get(tag_end + 1..)?,
        Some(b'}') if tagged => text.get(tag_end..)?,
        _ => return None,
    };
    let mut out = String::with_capacity(rest.len() + 1);
    out.push('{');
    out.push_str(rest);
    Some(out)
}

thread_local! {
    /// The text an event is serialised into before its payload is copied out at its exact
    /// size: grown once per thread, not per event by doubling into fresh memory (a
    /// `run_started` holds the whole document).
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A scratch buffer larger than this is not kept after use.
const SCRATCH_KEEP: usize = 4 << 20;

/// Runs `f` on this thread's cleared scratch buffer (a fresh one if it is in use).
fn with_scratch<T>(f: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            let out = f(&mut buf);
            if buf.capacity() > SCRATCH_KEEP {
                *buf = Vec::new();
            }
            out
        }
        Err(_) => f(&mut Vec::new()),
    })
}

/// The scheduler options recorded in a `run_started` event.
pub fn recorded_options(event: &RunEvent) -> Option<Options> {
    match event {
        RunEvent::RunStarted {
            max_parallel,
            on_node_failure,
            ..
        } => Some(Options {
            max_parallel: *max_parallel,
            on_node_failure: match on_node_failure.as_str() {
                "halt" => weft_core::FailurePolicy::Halt,
                "continue" => weft_core::FailurePolicy::Continue,
                _ => weft_core::FailurePolicy::Isolate,
            },
        }),
        _ => None,
    }
}

/// The positions in `events` of the `node_finished` events a later `node_reset` of the same
/// node supersedes: a replay skips them.
pub fn superseded<'a>(
    events: impl IntoIterator<Item = &'a RunEvent>,
) -> std::collections::BTreeSet<usize> {
    let mut out = std::collections::BTreeSet::new();
    let mut last_finished: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut run_finished = None;
    for (i, e) in events.into_iter().enumerate() {
        match e {
            RunEvent::NodeFinished { node, .. } => {
                last_finished.insert(node, i);
            }
            RunEvent::RunFinished { .. } => run_finished = Some(i),
            RunEvent::NodeReset { node } => {
                if let Some(j) = last_finished.remove(node.as_str()) {
                    out.insert(j);
                }
                // A reset after the end reopens the run (`resume_failed` of a finished
                // run): its `run_finished` no longer counts either.
                out.extend(run_finished.take());
            }
            _ => {}
        }
    }
    out
}

/// The status of the run's `run_finished`, unless a later `node_reset` reopened it
/// ([`superseded`]): `None` while the run is unfinished.
pub fn finished_status(events: &[RunEvent]) -> Option<&str> {
    let skip = superseded(events);
    events.iter().enumerate().rev().find_map(|(i, e)| match e {
        RunEvent::RunFinished { status, .. } if !skip.contains(&i) => Some(status.as_str()),
        _ => None,
    })
}

/// Rebuilds a run's scheduler: applies the stored events, in order, to a fresh scheduler
/// over `graph`, skipping the events a `node_reset` supersedes. The actions
/// are dropped (they were carried out the first time).
pub fn replay(
    graph: WorkGraph,
    options: Options,
    records: &[EventRecord],
) -> Result<Scheduler, ReplayError> {
    // A fragment instance's events (`scope`) are its own scheduler's, not the root's.
    replay_scope(graph, options, &crate::run_log::root_records(records))
}

/// [`replay`] of the events of one scope instance (all of `records`, whatever their
/// `scope`): a fragment instance's scheduler over its fragment's graph.
pub fn replay_scope(
    graph: WorkGraph,
    options: Options,
    records: &[EventRecord],
) -> Result<Scheduler, ReplayError> {
    let events = records
        .iter()
        .map(RunEvent::from_record)
        .collect::<Result<Vec<_>, _>>()?;
    replay_decoded(
        graph,
        options,
        records.iter().map(|r| r.seq).zip(events.iter()),
    )
}

/// [`replay_scope`] of events already decoded, each with its seq: a reader that holds the
/// decoded log (the run record) replays it without decoding (and copying) it again.
pub(crate) fn replay_decoded<'a>(
    graph: WorkGraph,
    options: Options,
    events: impl Iterator<Item = (u64, &'a RunEvent)> + Clone,
) -> Result<Scheduler, ReplayError> {
    let mut scheduler = Scheduler::new(graph, options);
    let skip = superseded(events.clone().map(|(_, e)| e));
    for (i, (seq, event)) in events.enumerate() {
        if skip.contains(&i) {
            continue;
        }
        let mapped = event
            .to_scheduler(scheduler.graph())
            .map_err(|node| ReplayError::UnknownNode { seq, node })?;
        // An inbox event that landed after the scope finished changes nothing (the driver
        // ignores it the same way).
        if event.is_inbox() && scheduler.is_finished() {
            continue;
        }
        if let Some(e) = mapped {
            apply_logged(&mut scheduler, event, &e)
                .map_err(|error| ReplayError::Protocol { seq, error })?;
        }
    }
    Ok(scheduler)
}

/// Applies the scheduler event of a logged event. A refused `graph_mutated` changes nothing
/// and is not an error: the driver, a resume and a replay refuse it alike.
pub(crate) fn apply_logged(
    sched: &mut weft_core::Scheduler,
    logged: &RunEvent,
    event: &weft_core::Event,
) -> Result<Vec<weft_core::Action>, weft_core::ProtocolError> {
    match sched.apply(event) {
        Err(_) if matches!(logged, RunEvent::GraphMutated { .. }) => Ok(Vec::new()),
        result => result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn store_form_round_trips() {
        let events = [
            RunEvent::RunStarted {
                v: EVENT_FORMAT,
                graph_digest: "sha256:00".into(),
                params: json!({"n": 1}),
                max_parallel: 2,
                on_node_failure: "isolate".into(),
                graph: json!({"id": "g"}),
                started_by: Some("alice".into()),
                warnings: vec!["w".into()],
                refs: Vec::new(),
            },
            RunEvent::NodeWhen {
                node: "a".into(),
                value: false,
                error: Some("boom".into()),
            },
            RunEvent::NodeStarted {
                node: "a".into(),
                attempt: 2,
                inputs: Some(json!({"x": 1})),
                delay_ms: Some(1500),
                previous_failure: None,
                routed: Some(Route {
                    requested_tier: "standard".into(),
                    effective_tier: "advanced".into(),
                    provider: "p".into(),
                    model: "m".into(),
                    downgraded: false,
                    reason: None,
                }),
            },
            RunEvent::NodeFinished {
                node: "a".into(),
                outcome: NodeOutcome::Failed,
                outputs: json!({}),
                redacted: vec!["token".into()],
                verdict: None,
                guards: vec![(3, true)],
                attempts: 2,
                error: Some("exit 1".into()),
                absorbed_by: Some("fallback[0]:skip".into()),
                absorbed_failure: Some("tool_error: exit code 1".into()),
                usage: Some(Usage {
                    agent_steps: 2,
                    tool_calls: 1,
                    input_tokens: 10,
                    output_tokens: 4,
                    cost_usd: 0.5,
                    estimated_turns: 0,
                }),
                attempt_usage: vec![Usage::default()],
                warnings: vec!["RT022: x".into()],
            },
            RunEvent::RunFinished {
                status: "partial".into(),
                outputs: json!({}),
                redacted: Vec::new(),
                reasons: vec!["x".into()],
                graph_verdict: Some(json!({"passed": true, "results": []})),
            },
        ];
        for (i, e) in events.iter().enumerate() {
            let stored = e.to_new_event(5).unwrap();
            // Straight from the stored text, as a resume reads it.
            let text = stored.payload.text();
            assert_eq!(
                &RunEvent::from_text(i as u64 + 1, &stored.kind, &text).unwrap(),
                e
            );
            let payload = stored.payload.to_value().unwrap();
            assert!(payload.get("kind").is_none());
            assert_eq!(payload, e.payload().unwrap());
            let record = EventRecord {
                run_id: "r".into(),
                seq: i as u64 + 1,
                kind: stored.kind,
                payload,
                recorded_at_ms: 5,
            };
            assert_eq!(&RunEvent::from_record(&record).unwrap(), e);
        }
        assert_eq!(events[3].payload().unwrap()["guards"], json!([[3, true]]));
    }

    #[test]
    fn text_decoding_reads_what_the_value_route_reads() {
        // A fragment instance's `scope` member is not part of the event; an empty payload
        // and one with spaces are objects all the same.
        let reset = RunEvent::NodeReset { node: "a".into() };
        for text in [r#"{"node":"a","scope":"m[0]"}"#, r#" { "node" : "a" } "#] {
            assert_eq!(RunEvent::from_text(1, "node_reset", text).unwrap(), reset);
        }
        let cancel = RunEvent::from_text(2, "cancel_requested", "{}");
        let value = RunEvent::decode(2, "cancel_requested", json!({}));
        assert_eq!(cancel.is_ok(), value.is_ok());
        // An unknown kind and a payload that is not JSON are decode errors naming the seq.
        for (kind, text) in [("no_such_kind", "{}"), ("node_reset", "{\"node\":")] {
            match RunEvent::from_text(7, kind, text) {
                Err(ReplayError::Decode { seq: 7, .. }) => {}
                other => panic!("{kind} {text}: {other:?}"),
            }
        }
    }

    #[test]
    fn untagged_removes_only_a_leading_tag_of_the_right_kind() {
        let ok = |t: &str, k: &str| untagged(t, k);
        assert_eq!(
            ok(r#"{"kind":"a","x":1}"#, "a"),
            Some(r#"{"x":1}"#.to_owned())
        );
        assert_eq!(ok(r#"{"kind":"a"}"#, "a"), Some("{}".to_owned()));
        // Another kind, a longer kind with the same prefix, or a tag not first: left alone.
        for (text, kind) in [
            (r#"{"kind":"b","x":1}"#, "a"),
            (r#"{"kind":"ab","x":1}"#, "a"),
            (r#"{"x":1,"kind":"a"}"#, "a"),
            (r#"{"kind":"a""#, "a"),
        ] {
            assert_eq!(ok(text, kind), None);
        }
    }
}
