//! A run's one log as its readers see it: every record of it ([`read_log`]), the scope
//! instance each event belongs to (the payload member [`SCOPE_MEMBER`], absent for the root
//! scope: [`scope_of`], [`root_records`], [`scope_records`]), and the fragment an instance
//! runs ([`fragment_at`], with the documents instances logged: [`logged_graphs`]). Below
//! the readers (the record, the inbox, observers) and the driver, which all use it; the
//! driver's side of scopes (the shared log position, tagging what it appends) is
//! `run/scope.rs`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use weft_ags::model::{obj_of, str_of};
use weft_store::EventRecord;

use crate::EngineError;

/// Every event of a run, in order.
pub fn read_log(
    log: &(impl weft_store::EventLog + ?Sized),
    run_id: &str,
) -> Result<Vec<EventRecord>, EngineError> {
    let mut records: Vec<EventRecord> = Vec::new();
    loop {
        let from = records.last().map_or(1, |r| r.seq + 1);
        let batch = log.read(run_id, from, 1000)?;
        if batch.is_empty() {
            return Ok(records);
        }
        records.extend(batch);
    }
}

/// The payload member naming the scope instance of an event (v1 addition).
pub const SCOPE_MEMBER: &str = "scope";

/// The scope instance a stored event belongs to: `None` for the root scope.
pub fn scope_of(record: &EventRecord) -> Option<&str> {
    record.payload.get(SCOPE_MEMBER).and_then(Value::as_str)
}

/// `"scope"`: the member's name as it appears in payload text.
const QUOTED_SCOPE_MEMBER: &str = "\"scope\"";

/// [`scope_of`] of a stored payload's text (its top-level `scope` string member), `None` for
/// the root. Most payloads do not contain the member's name at all and are not parsed.
pub(crate) fn scope_in_text(payload: &str) -> Option<String> {
    if !payload.contains(QUOTED_SCOPE_MEMBER) {
        return None;
    }
    // Only the top level counts: the name may also appear inside a value (a document,
    // outputs). Parsed whole: rare.
    let value: Value = serde_json::from_str(payload).ok()?;
    value
        .get(SCOPE_MEMBER)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The events of the root scope only (a fragment instance's events are its own).
pub fn root_records(records: &[EventRecord]) -> Vec<EventRecord> {
    records
        .iter()
        .filter(|r| scope_of(r).is_none())
        .cloned()
        .collect()
}

/// The events of the scope instance `path`, in log order.
pub fn scope_records(records: &[EventRecord], path: &str) -> Vec<EventRecord> {
    records
        .iter()
        .filter(|r| scope_of(r) == Some(path))
        .cloned()
        .collect()
}

/// The fragment the instance at `path` runs (`a[0].b[2]`: the body of container `b` in the
/// body of `a`), walking `root`'s nodes; `use` resolves against the `subgraphs` of the
/// document being walked. `logged` holds the documents instances logged in their
/// `run_started.graph` (subgraph children, by path): a walk that reaches one continues in
/// it, so a `ref` child (not part of `root`) resolves too.
pub(crate) fn fragment_at<'a>(
    root: &'a Map<String, Value>,
    path: &str,
    logged: &'a BTreeMap<String, Value>,
) -> Option<&'a Map<String, Value>> {
    let mut top = root;
    let mut doc = root;
    let mut walked = String::new();
    for step in path.split('.') {
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(step);
        if let Some(graph) = logged.get(&walked).and_then(Value::as_object) {
            top = graph;
            doc = graph;
            continue;
        }
        let id = step.split('[').next()?;
        let node = obj_of(doc, "nodes").and_then(|n| obj_of(n, id))?;
        let ty = str_of(node, "type")?;
        let block = obj_of(node, ty)?;
        doc = match obj_of(block, "body").or_else(|| obj_of(block, "inline")) {
            Some(body) => body,
            None => obj_of(top, "subgraphs").and_then(|s| obj_of(s, str_of(block, "use")?))?,
        };
    }
    Some(doc)
}

/// The documents fragment instances logged in their `run_started.graph`, by path.
pub(crate) fn logged_graphs(records: &[EventRecord]) -> BTreeMap<String, Value> {
    records
        .iter()
        .filter(|r| r.kind == "run_started")
        .filter_map(|r| {
            let path = scope_of(r)?;
            let graph = r.payload.get("graph").filter(|g| g.is_object())?;
            Some((path.to_string(), graph.clone()))
        })
        .collect()
}

/// Members of a run's document the driver never reads once its tasks are prepared: each
/// node became a job (`job.rs`, a container's body included), each edge the scheduler's.
const PREPARED_MEMBERS: [&str; 2] = ["nodes", "edges"];

/// The run's document as its driver keeps it while the run goes on (`ScopeRun::doc`): the
/// members a fragment inherits and FINALIZE reads (`context`, `policy`, `subgraphs`,
/// `defaults`, `outputs`, `success`…), without the nodes and edges its jobs and scheduler
/// already hold. The log keeps the whole document (`run_started.graph`); a 10,000-node
/// chain's nodes are ~39 MB as values, the largest thing a run would otherwise hold.
pub(crate) fn kept_document(mut graph: Map<String, Value>) -> Map<String, Value> {
    for member in PREPARED_MEMBERS {
        graph.shift_remove(member);
    }
    graph
}

/// [`kept_document`] of a document shared with others (a resume's stored one, a record's).
pub(crate) fn kept_document_of(graph: &Map<String, Value>) -> Map<String, Value> {
    members_except(graph, &PREPARED_MEMBERS)
}

/// A copy of `object`'s members but those named in `left_out`, in their order.
pub(crate) fn members_except(object: &Map<String, Value>, left_out: &[&str]) -> Map<String, Value> {
    object
        .iter()
        .filter(|(k, _)| !left_out.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod scope_text_tests {
    use super::*;

    #[test]
    fn only_a_top_level_scope_string_names_an_instance() {
        assert_eq!(QUOTED_SCOPE_MEMBER, format!("\"{SCOPE_MEMBER}\""));
        assert_eq!(
            scope_in_text(r#"{"node":"a","scope":"m[0]"}"#),
            Some("m[0]".into())
        );
        for root in [
            r#"{"node":"a"}"#,
            r#"{"outputs":{"scope":"x"}}"#,
            r#"{"scope":3}"#,
            "{}",
        ] {
            assert_eq!(scope_in_text(root), None, "{root}");
        }
    }
}
