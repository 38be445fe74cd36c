//! The compensations of a run, folded from `compensation_started` / `compensation_finished`
//! for the record: each compensation node's entry says it ran (its status is its outcome,
//! not the scheduler's `skipped`), the compensated node names it, and the record lists them
//! in the order they ran (`x-weft-compensations`).

use serde_json::{Map, Value, json};

use crate::events::RunEvent;
use crate::timefmt::rfc3339_ms;

/// One compensation as the log tells it.
#[derive(Clone, Debug)]
pub(super) struct Ran {
    node: String,
    compensates: String,
    started_ms: i64,
    /// `(outcome, error, at)` once it ended (its spend is in the run's totals: `view`).
    finished: Option<(String, Option<String>, i64)>,
}

/// The run's compensations, in log order.
#[derive(Debug, Default)]
pub(super) struct Compensations {
    ran: Vec<Ran>,
    /// The RT codes compensations raised without failing, as record diagnostics.
    diagnostics: Vec<Value>,
}

impl Compensations {
    /// Takes one event; others are ignored.
    pub(super) fn take(&mut self, e: &RunEvent, at: i64) {
        match e {
            RunEvent::CompensationStarted { node, compensates } => self.ran.push(Ran {
                node: node.clone(),
                compensates: compensates.clone(),
                started_ms: at,
                finished: None,
            }),
            RunEvent::CompensationFinished {
                node,
                compensates,
                outcome,
                error,
                warnings,
                ..
            } => {
                for w in warnings {
                    if let Some((code, rest)) = super::rt_code(w) {
                        self.diagnostics.push(json!({
                            "code": code, "severity": "warning", "node_id": node,
                            "message": rest, "at": rfc3339_ms(at),
                        }));
                    }
                }
                if let Some(r) = self
                    .ran
                    .iter_mut()
                    .rev()
                    .find(|r| &r.node == node && &r.compensates == compensates)
                {
                    r.finished = Some((outcome.as_str().to_string(), error.clone(), at));
                }
            }
            _ => {}
        }
    }

    /// Updates node `id`'s record entry: the compensation it ran as (status, times), or the
    /// compensation that undid it.
    pub(super) fn annotate(&self, id: &str, entry: &mut Map<String, Value>) {
        let by: Vec<&str> = self
            .ran
            .iter()
            .filter(|r| r.compensates == id)
            .map(|r| r.node.as_str())
            .collect();
        if !by.is_empty() {
            entry.insert("x-weft-compensated-by".into(), json!(by));
        }
        let own: Vec<&Ran> = self.ran.iter().filter(|r| r.node == id).collect();
        if let Some(last) = own.last() {
            let status = last
                .finished
                .as_ref()
                .map_or("running", |(outcome, ..)| outcome.as_str());
            entry.insert("status".into(), json!(status));
            entry.remove("skip_reason");
            entry.insert("started_at".into(), json!(rfc3339_ms(last.started_ms)));
            if let Some((_, error, at)) = &last.finished {
                entry.insert("finished_at".into(), json!(rfc3339_ms(*at)));
                if let Some(e) = error {
                    entry.insert("x-weft-error".into(), json!(e));
                }
            }
            let compensates: Vec<&str> = own.iter().map(|r| r.compensates.as_str()).collect();
            entry.insert("x-weft-compensates".into(), json!(compensates));
        }
    }

    /// The RT codes compensations raised as warnings, in log order.
    pub(super) fn diagnostics(&self) -> impl Iterator<Item = &Value> {
        self.diagnostics.iter()
    }

    /// `x-weft-compensations`: every compensation in the order it ran.
    pub(super) fn listing(&self) -> Option<Value> {
        if self.ran.is_empty() {
            return None;
        }
        let list: Vec<Value> = self
            .ran
            .iter()
            .map(|r| {
                let mut m = Map::new();
                m.insert("node_id".into(), json!(r.node));
                m.insert("compensates".into(), json!(r.compensates));
                m.insert("started_at".into(), json!(rfc3339_ms(r.started_ms)));
                match &r.finished {
                    Some((outcome, error, at)) => {
                        m.insert("status".into(), json!(outcome));
                        m.insert("finished_at".into(), json!(rfc3339_ms(*at)));
                        if let Some(e) = error {
                            m.insert("error".into(), json!(e));
                        }
                    }
                    None => {
                        m.insert("status".into(), json!("running"));
                    }
                }
                Value::Object(m)
            })
            .collect();
        Some(Value::Array(list))
    }
}
