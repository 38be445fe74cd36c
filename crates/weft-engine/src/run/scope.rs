//! The scope instance a [`super::Driver`] runs: the root scope, or one fragment instance
//! (a `map` item, a `loop` iteration) opened under a running container node.
//!
//! A fragment instance is driven by a driver of its own over the fragment (DIGEST §6.5:
//! "run the same scheduler recursively over each fragment instance; don't inline fragment
//! nodes into the parent"), writing to the **same log** as the run: every event it appends
//! carries the member `scope` (the instance's path, `fix_loop[2]`; absent for the root —
//! a v1 addition, so older logs replay unchanged). The drivers of one run share one
//! [`SharedLog`]: the last seq written and the count of events appended, so sibling
//! instances running side by side (a map's `max_parallel`) never conflict on the log, and
//! the `stop_after_events` test hook counts every event of the run wherever it was written.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use serde_json::{Map, Value};
use weft_ags::model::{obj_of, str_of};
use weft_store::{EventRecord, NewEvent, Payload};

use crate::events::RunEvent;
use crate::run_log::{SCOPE_MEMBER, fragment_at, logged_graphs};

/// The log position shared by every driver of one run (the root's and its fragment
/// instances'). Appends are awaited, and the drivers of instances are polled together, so
/// an instance's driver reads the seq, appends and writes the seq back in the run's
/// [`SharedLog::turn`], and reads what other writers appended in it too (between a
/// sibling's commit and its move of the seq, the sibling's events are past the seq); the
/// root's needs none (`write.rs`).
#[derive(Debug, Default)]
pub(super) struct SharedLog {
    last_seq: AtomicU64,
    appended: AtomicUsize,
    /// Held by a fragment instance's driver (or a light map item) from reading the end
    /// until the end has moved past its events, and while it reads other writers' events.
    turn: Arc<tokio::sync::Mutex<()>>,
    /// Inbox events (root-scope `cancel_requested`, `human_decision`) that a fragment
    /// instance's driver read while its container ran: the root applies them, in log
    /// order, when the container returns and before it settles, so its scheduler sees them
    /// where the log has them.
    inbox: std::sync::Mutex<Vec<RunEvent>>,
    /// Decisions addressed to a fragment instance (`human_decision` with `scope`) that
    /// another driver of the run read: the instance's driver takes them, by path.
    addressed: std::sync::Mutex<Vec<(String, RunEvent)>>,
    /// The waits of fragment instances that suspended (by address, `work[3].review`):
    /// listed in the run's report when the run suspends.
    waiting: std::sync::Mutex<Vec<crate::human::Waiting>>,
}

impl SharedLog {
    pub(super) fn new(last_seq: u64) -> Arc<SharedLog> {
        Arc::new(SharedLog {
            last_seq: AtomicU64::new(last_seq),
            appended: AtomicUsize::new(0),
            turn: Arc::new(tokio::sync::Mutex::new(())),
            inbox: std::sync::Mutex::new(Vec::new()),
            addressed: std::sync::Mutex::new(Vec::new()),
            waiting: std::sync::Mutex::new(Vec::new()),
        })
    }

    pub(super) fn last_seq(&self) -> u64 {
        self.last_seq.load(Ordering::SeqCst)
    }

    pub(super) fn set_last_seq(&self, seq: u64) {
        self.last_seq.store(seq, Ordering::SeqCst);
    }

    pub(super) fn appended(&self) -> usize {
        self.appended.load(Ordering::SeqCst)
    }

    pub(super) fn add_appended(&self, n: usize) {
        self.appended.fetch_add(n, Ordering::SeqCst);
    }

    /// The run's turn to write at the shared end, once no other driver of the run holds
    /// it (first come, first served).
    pub(super) async fn turn(&self) -> tokio::sync::OwnedMutexGuard<()> {
        Arc::clone(&self.turn).lock_owned().await
    }

    /// The run's turn, if no other driver of the run holds it or waits for it now.
    pub(super) fn try_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        self.turn.try_lock().ok()
    }

    fn inbox(&self) -> std::sync::MutexGuard<'_, Vec<RunEvent>> {
        self.inbox
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps an inbox event a fragment instance read for the root.
    pub(super) fn relay(&self, event: RunEvent) {
        self.inbox().push(event);
    }

    /// The relayed inbox events, in log order (the root applies them).
    pub(super) fn take_relayed(&self) -> Vec<RunEvent> {
        std::mem::take(&mut *self.inbox())
    }

    /// Keeps a decision addressed to the instance at `path` for its driver.
    pub(super) fn relay_addressed(&self, path: String, event: RunEvent) {
        lock(&self.addressed).push((path, event));
    }

    /// The decisions kept for the instance at `path`, in log order.
    pub(super) fn take_addressed(&self, path: &str) -> Vec<RunEvent> {
        let mut all = lock(&self.addressed);
        let (mine, rest) = std::mem::take(&mut *all)
            .into_iter()
            .partition::<Vec<_>, _>(|(p, _)| p == path);
        *all = rest;
        mine.into_iter().map(|(_, e)| e).collect()
    }

    /// Takes the decisions kept for instances at or under `base` (`m`: `m[0]`, `m[2].n[1]`,
    /// a subgraph child `m`): `true` when there were some.
    pub(super) fn take_addressed_under(&self, base: &str) -> bool {
        let mut all = lock(&self.addressed);
        let before = all.len();
        all.retain(|(p, _)| !is_under(p, base));
        all.len() != before
    }

    /// Forgets the waits listed for instances at or under `base`: their container runs
    /// again, and lists again those that still wait.
    pub(super) fn forget_waiting_under(&self, base: &str) {
        lock(&self.waiting).retain(|w| {
            w.node
                .rsplit_once('.')
                .is_none_or(|(path, _)| !is_under(path, base))
        });
    }

    /// An instance suspended: its waits, by address.
    pub(super) fn add_waiting(&self, waits: Vec<crate::human::Waiting>) {
        lock(&self.waiting).extend(waits);
    }

    /// The waits of the instances that suspended (the run suspends on them).
    pub(super) fn take_waiting(&self) -> Vec<crate::human::Waiting> {
        std::mem::take(&mut *lock(&self.waiting))
    }

    /// Has a cancel been requested while a container ran? (No further instance starts.)
    pub(super) fn cancel_relayed(&self) -> bool {
        self.inbox()
            .iter()
            .any(|e| matches!(e, RunEvent::CancelRequested { .. }))
    }
}

/// Is the instance at `path` the instance `base` or inside it (`m` holds `m[0]`,
/// `m[2].n[1]` and a subgraph child `m`, not `m2[0]`)?
fn is_under(path: &str, base: &str) -> bool {
    path.strip_prefix(base)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['[', '.']))
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Which scope instance a driver runs and what it sees beyond its nodes.
#[derive(Clone, Debug)]
pub(super) struct ScopeRun {
    /// The instance's path (`docs[3]`, `fix_loop[2].inner[0]`); `None` for the root.
    pub(super) path: Option<String>,
    /// Names the fragment's expressions see at their root: a map item's `as` and
    /// `index_as`, a loop's `loop` (`index`, `iteration`, `previous`).
    pub(super) bindings: Map<String, Value>,
    pub(super) shared: Arc<SharedLog>,
    /// The document this driver runs (the run's, or a fragment's): a container's
    /// fragment is built from it (`fragment.rs`).
    pub(super) doc: Arc<Map<String, Value>>,
    /// On resume: the events of every fragment instance already in the log, by path; an
    /// instance found here is rebuilt from them, not started afresh.
    pub(super) resumed: Option<Arc<Resumed>>,
    /// The loaded `subgraph.ref` children of [`ScopeRun::doc`], by `uri`.
    pub(super) refs: Arc<Vec<crate::refs::ChildRef>>,
    /// `graph.<field>` for the scope's expressions: the run's document, or a `ref` child's
    /// own (a loop, map or inline body sees its enclosing graph's).
    pub(super) graph: Arc<Value>,
}

/// What a resumed run knows of its fragment instances.
#[derive(Debug, Default)]
pub(super) struct Resumed {
    /// Each instance's events already in the log, by path.
    pub(super) scopes: BTreeMap<String, Vec<EventRecord>>,
    /// `--retry-uncertain` (else the uncertain attempts were all idempotent: checked up
    /// front).
    pub(super) retry_uncertain: bool,
}

impl ScopeRun {
    pub(super) fn root(last_seq: u64, graph: Value) -> ScopeRun {
        ScopeRun {
            path: None,
            bindings: Map::new(),
            shared: SharedLog::new(last_seq),
            doc: Arc::new(Map::new()),
            resumed: None,
            refs: Arc::new(Vec::new()),
            graph: Arc::new(graph),
        }
    }
}

/// `event` with the member `scope: path` appended. Engine events never carry a `scope`
/// member of their own. Their payload is compact JSON text: the member is written into it
/// directly (a map of 10,000 items tags 40,000 events; going through a `Value` and its
/// `Display` cost a tenth of an item).
pub(super) fn tag_scope(mut event: NewEvent, path: &str) -> NewEvent {
    if let Payload::Json(text) = &mut event.payload
        && let Some(tagged) = scoped_payload(text, path)
    {
        *text = tagged;
        return event;
    }
    event
        .payload
        .append_member(SCOPE_MEMBER, Value::String(path.to_string()));
    event
}

/// The compact JSON object `text` with the member `scope: path` appended, at its exact
/// size (the memory store keeps a payload as it is handed over); `None` when `text` is not
/// an object.
pub(super) fn scoped_payload(text: &str, path: &str) -> Option<String> {
    let members = text.strip_prefix('{')?.strip_suffix('}')?;
    // Rare (a scope path is node ids and indices): escaped by serde_json.
    let escaped = path
        .chars()
        .any(|c| c == '"' || c == '\\' || c.is_control())
        .then(|| Value::String(path.to_string()).to_string());
    let quoted_len = escaped.as_ref().map_or(path.len() + 2, String::len);
    // `{` members `,"scope":` quoted `}`
    let mut out = String::with_capacity(text.len() + SCOPE_MEMBER.len() + 4 + quoted_len);
    out.push('{');
    out.push_str(members);
    if !members.is_empty() {
        out.push(',');
    }
    out.push('"');
    out.push_str(SCOPE_MEMBER);
    out.push_str("\":");
    match &escaped {
        Some(quoted) => out.push_str(quoted),
        None => {
            out.push('"');
            out.push_str(path);
            out.push('"');
        }
    }
    out.push('}');
    Some(out)
}

/// Nodes of fragment instances that were running when the run stopped and may have had
/// side effects (not idempotent `exec`, gates, decisions or containers): a resume refuses
/// them unless `retry_uncertain`, like the root's (`docs/engine.md` §2a).
pub(super) fn uncertain_in_fragments(
    root: &Map<String, Value>,
    scoped: &BTreeMap<String, Vec<EventRecord>>,
) -> Vec<String> {
    let all: Vec<EventRecord> = scoped.values().flatten().cloned().collect();
    let logged = logged_graphs(&all);
    let mut out = Vec::new();
    for (path, records) in scoped {
        let mut open: BTreeMap<String, u32> = BTreeMap::new();
        for r in records {
            match RunEvent::from_record(r) {
                Ok(RunEvent::NodeStarted { node, attempt, .. }) => {
                    open.insert(node, attempt);
                }
                Ok(RunEvent::GateWaiting(w)) => {
                    open.remove(&w.node);
                }
                Ok(RunEvent::NodeAbandoned { node, .. } | RunEvent::NodeFinished { node, .. }) => {
                    open.remove(&node);
                }
                _ => {}
            }
        }
        let nodes = fragment_at(root, path, &logged).and_then(|f| obj_of(f, "nodes"));
        for (node, attempt) in open {
            let spec = nodes.and_then(|n| obj_of(n, &node));
            let safe = spec.is_some_and(|s| {
                matches!(
                    str_of(s, "type"),
                    Some("gate" | "decision" | "map" | "loop")
                ) || obj_of(s, "x-weft-exec")
                    .and_then(|x| x.get("idempotent"))
                    .and_then(Value::as_bool)
                    == Some(true)
            });
            if !safe {
                out.push(format!("`{path}.{node}` (attempt {attempt})"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_scope_tag_in_the_text_reads_as_the_member_appended_to_the_value() {
        for path in ["m[0]", "a[1].b[22]", "q\"uote\\d", "ctl\u{1}"] {
            for payload in [json!({}), json!({"node": "a", "outputs": {"scope": "x"}})] {
                let text = NewEvent::from_json("k", payload.to_string(), 1);
                let tagged = tag_scope(text, path).payload.to_value().unwrap();
                let mut expected = payload.clone();
                expected[SCOPE_MEMBER] = json!(path);
                assert_eq!(tagged, expected, "{path}");
            }
        }
        // A value payload gets the member too.
        let value = NewEvent::new("k", json!({"node": "a"}), 1);
        let tagged = tag_scope(value, "m[3]").payload.to_value().unwrap();
        assert_eq!(tagged, json!({"node": "a", "scope": "m[3]"}));
    }
}
