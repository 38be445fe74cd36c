//! The records the store keeps: runs and the events of their logs.
//!
//! Timestamps are plain fields (milliseconds since the Unix epoch) that the caller fills in:
//! the store never reads the clock, so tests and replays are deterministic.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The lifecycle state of a run, as last set by the engine.
///
/// The store only records it; which transitions are legal is the engine's business.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Created, nothing scheduled yet.
    Pending,
    /// At least one step has been scheduled.
    Running,
    /// Waiting for something outside the run (a human, a timer).
    Suspended,
    /// Finished successfully.
    Succeeded,
    /// Finished with a failure.
    Failed,
    /// Stopped on request.
    Cancelled,
}

impl RunStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [RunStatus; 6] = [
        RunStatus::Pending,
        RunStatus::Running,
        RunStatus::Suspended,
        RunStatus::Succeeded,
        RunStatus::Failed,
        RunStatus::Cancelled,
    ];

    /// The text stored in the `runs.status` column (stable: part of schema v1).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Pending => "pending",
            RunStatus::Running => "running",
            RunStatus::Suspended => "suspended",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// Parses the stored text; `None` for anything else (a corrupt row).
    pub fn parse(text: &str) -> Option<RunStatus> {
        RunStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// What the caller supplies to create a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewRun {
    /// Caller-chosen id (e.g. a UUIDv7 in text form), unique in the store.
    pub id: String,
    /// The `graph_digest` of the plan the run executes.
    pub graph_digest: String,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at_ms: i64,
}

/// A stored run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run id.
    pub id: String,
    /// The `graph_digest` of the plan the run executes.
    pub graph_digest: String,
    /// Last status set.
    pub status: RunStatus,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// Time given with the last status change (the creation time before any).
    pub updated_at_ms: i64,
}

/// An event to append; the store assigns its sequence number.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// Event kind, e.g. `node_started`; the engine defines the vocabulary.
    pub kind: String,
    /// Event body; stored as compact JSON text with object keys in insertion order.
    pub payload: Payload,
    /// When the event was recorded, milliseconds since the Unix epoch.
    pub recorded_at_ms: i64,
}

impl NewEvent {
    /// An event whose body is a JSON value.
    pub fn new(kind: impl Into<String>, payload: Value, recorded_at_ms: i64) -> NewEvent {
        NewEvent {
            kind: kind.into(),
            payload: Payload::Value(payload),
            recorded_at_ms,
        }
    }

    /// An event whose body the caller already serialised: compact JSON text of an object
    /// (the engine writes its typed events straight to text, without building a value tree
    /// that the store would only serialise again).
    pub fn from_json(kind: impl Into<String>, json: String, recorded_at_ms: i64) -> NewEvent {
        NewEvent {
            kind: kind.into(),
            payload: Payload::Json(json),
            recorded_at_ms,
        }
    }
}

/// The body of a [`NewEvent`]: a value, or the same as compact JSON text.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    Value(Value),
    /// Compact JSON text of an object, as [`serde_json::to_string`] writes it.
    Json(String),
}

impl Payload {
    /// The compact JSON text (what SQLite stores).
    pub fn into_text(self) -> String {
        match self {
            Payload::Value(v) => v.to_string(),
            Payload::Json(text) => text,
        }
    }

    /// The compact JSON text, borrowed when it already is text.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Payload::Value(v) => std::borrow::Cow::Owned(v.to_string()),
            Payload::Json(text) => std::borrow::Cow::Borrowed(text),
        }
    }

    /// Adds member `name` to the object (a payload that is not an object is left as it
    /// is). Text is not parsed: the member is appended, so the caller makes sure the object
    /// has no member of that name yet.
    pub fn append_member(&mut self, name: &str, value: Value) {
        match self {
            Payload::Value(Value::Object(m)) => {
                m.insert(name.to_owned(), value);
            }
            Payload::Value(_) => {}
            Payload::Json(text) => {
                if !(text.starts_with('{') && text.ends_with('}')) {
                    return;
                }
                let member = format!("{}:{value}", Value::String(name.to_owned()));
                text.pop();
                if text.len() > 1 {
                    text.push(',');
                }
                text.push_str(&member);
                text.push('}');
            }
        }
    }

    /// The value (what a reader gets back); text that is not JSON is an error.
    pub fn to_value(&self) -> serde_json::Result<Value> {
        match self {
            Payload::Value(v) => Ok(v.clone()),
            Payload::Json(text) => serde_json::from_str(text),
        }
    }
}

/// A stored event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// The run the event belongs to.
    pub run_id: String,
    /// Position in the run's log: 1-based and gap-free.
    pub seq: u64,
    /// Event kind.
    pub kind: String,
    /// Event body.
    pub payload: Value,
    /// When the event was recorded, milliseconds since the Unix epoch.
    pub recorded_at_ms: i64,
}

/// A stored event with its payload as the stored JSON text, not parsed
/// ([`crate::EventLog::read_raw`]): for a reader that decodes events straight into its own
/// types instead of through a [`Value`] tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEventRecord {
    /// Position in the run's log: 1-based and gap-free.
    pub seq: u64,
    /// Event kind.
    pub kind: String,
    /// Event body: the compact JSON text of an object, as it was stored.
    pub payload: String,
    /// When the event was recorded, milliseconds since the Unix epoch.
    pub recorded_at_ms: i64,
}

impl RawEventRecord {
    /// The record of run `run_id` with `payload` for its body: the payload the reader parsed
    /// from this one's text, or `null` where it decoded the event some other way.
    pub fn with_payload(self, run_id: &str, payload: Value) -> EventRecord {
        EventRecord {
            run_id: run_id.to_string(),
            seq: self.seq,
            kind: self.kind,
            payload,
            recorded_at_ms: self.recorded_at_ms,
        }
    }
}

impl From<EventRecord> for RawEventRecord {
    fn from(record: EventRecord) -> RawEventRecord {
        RawEventRecord {
            seq: record.seq,
            kind: record.kind,
            payload: record.payload.to_string(),
            recorded_at_ms: record.recorded_at_ms,
        }
    }
}

/// Counters for tests and benchmarks; cumulative since the store was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreStats {
    /// Write transactions committed (each is one WAL sync with `synchronous=FULL`).
    pub transactions: u64,
    /// Write requests carried out (appends, run creations, status changes), failed ones included.
    pub writes: u64,
    /// Append requests carried out, failed ones included.
    pub appends: u64,
    /// Events written by successful appends.
    pub events: u64,
}

/// The head of a run's audit log, as last made durable: the log must contain `hash` at line
/// `audit_seq`, and it covers the run's events up to `event_seq`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditAnchor {
    pub run_id: String,
    /// The last event of the run's log that the audit covers.
    pub event_seq: u64,
    /// The audit line (`seq`) whose hash this is.
    pub audit_seq: u64,
    /// That line's hash (64 lowercase hex digits).
    pub hash: String,
    /// When the anchor was set, ms since the Unix epoch.
    pub updated_at_ms: i64,
}
