//! The lines of a run's audit chain, made in the store's commit: [`RunAuditEncoder`] is
//! the [`AuditEncoder`] of a store handle made with [`weft_store::AuditWrites::audited`], so
//! each event's entry ([`super::table`]) is hashed into the chain and stored in the same
//! transaction as the event (`docs/audit.md` §9).

use weft_audit::{DEFAULT_SECRET_FIELDS, MAX_LINE_BYTES, encode_line, prepare_entry};
use weft_store::{AuditAnchor, AuditEncoder, AuditLine, RawEventRecord, StoreError};

use super::{payload_members, table};

/// Maps stored run events to `weft-audit` v1 lines (the table of [`super::table`], secret
/// members redacted), chained from the run's anchor.
#[derive(Debug, Default, Clone, Copy)]
pub struct RunAuditEncoder;

impl AuditEncoder for RunAuditEncoder {
    fn encode(
        &self,
        run_id: &str,
        head: &AuditAnchor,
        events: &[RawEventRecord],
    ) -> weft_store::Result<Vec<AuditLine>> {
        let mut lines = Vec::with_capacity(events.len());
        let (mut seq, mut prev) = (head.audit_seq, head.hash.clone());
        for event in events {
            let refused =
                |why: String| StoreError::Audit(format!("run {run_id} event {}: {why}", event.seq));
            let entry = match large_payload_entry(run_id, event) {
                Some(entry) => entry,
                None => {
                    let payload: serde_json::Value =
                        serde_json::from_str(&event.payload).map_err(|e| refused(e.to_string()))?;
                    table::entry_for(
                        run_id,
                        event.seq,
                        event.recorded_at_ms,
                        &event.kind,
                        &payload,
                    )
                }
            };
            let Some(entry) = entry else {
                continue;
            };
            let value =
                prepare_entry(&entry, DEFAULT_SECRET_FIELDS).map_err(|e| refused(e.to_string()))?;
            seq += 1;
            let (mut line, hash) = encode_line(seq, &prev, &value);
            if line.len() > MAX_LINE_BYTES {
                return Err(refused(format!(
                    "its audit line has {} bytes, over the {MAX_LINE_BYTES} limit",
                    line.len()
                )));
            }
            line.pop(); // the newline: the export writes it
            prev.clone_from(&hash);
            lines.push(AuditLine {
                audit_seq: seq,
                event_seq: event.seq,
                hash,
                line,
            });
        }
        Ok(lines)
    }
}

/// Payloads from this size on are not parsed whole: a `run_started` holds the document.
const LARGE_PAYLOAD_BYTES: usize = 64 * 1024;

/// The entry of an event whose payload is [`LARGE_PAYLOAD_BYTES`] or more, its digest taken
/// from the text and only the members the table reads parsed (`Some(None)`: not audited).
/// `None` for a smaller payload, or one that is not a JSON object of at most 128 levels:
/// those are parsed whole, which gives the same entry or the error.
fn large_payload_entry(run_id: &str, event: &RawEventRecord) -> Option<Option<weft_audit::Entry>> {
    if event.payload.len() < LARGE_PAYLOAD_BYTES {
        return None;
    }
    let members = payload_members::object_members(&event.payload)?;
    let digest = weft_ags::digest::text_digest(&event.payload)?;
    let mut read = serde_json::Map::new();
    for name in table::members_read(&event.kind) {
        // The last of a repeated name, as a parsed value keeps it.
        if let Some((_, raw)) = members.iter().rev().find(|(n, _)| n == name) {
            read.insert(name.to_string(), serde_json::from_str(raw.get()).ok()?);
        }
    }
    Some(table::entry_with_digest(
        run_id,
        event.seq,
        event.recorded_at_ms,
        &event.kind,
        &serde_json::Value::Object(read),
        digest,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, kind: &str, payload: &str) -> RawEventRecord {
        RawEventRecord {
            seq,
            kind: kind.into(),
            payload: payload.into(),
            recorded_at_ms: 1_000 + i64::try_from(seq).unwrap_or(0),
        }
    }

    #[test]
    fn lines_chain_from_the_head_and_verify_as_a_file() {
        let head = AuditAnchor {
            run_id: "r".into(),
            event_seq: 0,
            audit_seq: 0,
            hash: weft_store::AUDIT_GENESIS.into(),
            updated_at_ms: 0,
        };
        assert_eq!(weft_store::AUDIT_GENESIS, weft_audit::GENESIS);
        let events = [
            event(
                1,
                "run_started",
                r#"{"graph_digest":"d","params":{"token":"s3cret"}}"#,
            ),
            event(2, "node_when", r#"{"node_id":"a"}"#),
            event(3, "node_started", r#"{"node_id":"a","attempt":1}"#),
        ];
        let lines = RunAuditEncoder.encode("r", &head, &events).unwrap();
        // `node_when` is not audited: two lines, for events 1 and 3.
        let covered: Vec<(u64, u64)> = lines.iter().map(|l| (l.audit_seq, l.event_seq)).collect();
        assert_eq!(covered, [(1, 1), (2, 3)]);
        assert!(!lines[0].line.contains("s3cret"), "{}", lines[0].line);
        let file: String = lines.iter().map(|l| format!("{}\n", l.line)).collect();
        let report = weft_audit::verify(file.as_bytes(), Some(&lines[1].hash)).unwrap();
        assert_eq!(report.last_seq, 2);
        // The next batch continues the chain from the head it ends at.
        let next_head = AuditAnchor {
            event_seq: 3,
            audit_seq: 2,
            hash: lines[1].hash.clone(),
            ..head
        };
        let more = RunAuditEncoder
            .encode(
                "r",
                &next_head,
                &[event(4, "run_finished", r#"{"status":"succeeded"}"#)],
            )
            .unwrap();
        let file = format!("{file}{}\n", more[0].line);
        assert_eq!(
            weft_audit::verify(file.as_bytes(), None).unwrap().last_seq,
            3
        );
    }

    #[test]
    fn a_large_payload_gives_the_entry_of_its_parsed_value() {
        let nodes: serde_json::Map<String, serde_json::Value> = (0..2_000)
            .map(|i| {
                (
                    format!("n{i}"),
                    serde_json::json!({"type": "task", "w": i as f64 / 7.0}),
                )
            })
            .collect();
        let payload = serde_json::json!({
            "v": 1, "graph_digest": "sha256-x", "graph": {"nodes": nodes},
            "params": {"token": "s3cret", "n": 2}, "started_by": "ann", "max_parallel": null,
        });
        let text = serde_json::to_string(&payload).unwrap();
        assert!(text.len() >= LARGE_PAYLOAD_BYTES, "{}", text.len());
        for kind in ["run_started", "node_finished", "some_new_kind", "node_when"] {
            let record = event(7, kind, &text);
            let by_text = large_payload_entry("r", &record).expect("a large object payload");
            let by_value = table::entry_for("r", 7, record.recorded_at_ms, kind, &payload);
            assert_eq!(
                by_text.map(|e| serde_json::to_value(e).unwrap()),
                by_value.map(|e| serde_json::to_value(e).unwrap()),
                "{kind}"
            );
        }
        // A small payload, or a large one that is not an object, is parsed whole.
        assert!(large_payload_entry("r", &event(1, "run_started", r#"{"v":1}"#)).is_none());
        let array = format!("[{}]", vec!["1"; 40_000].join(","));
        assert!(large_payload_entry("r", &event(1, "run_started", &array)).is_none());
    }

    #[test]
    fn a_payload_that_is_not_json_refuses_the_write() {
        let head = AuditAnchor {
            run_id: "r".into(),
            event_seq: 0,
            audit_seq: 0,
            hash: weft_store::AUDIT_GENESIS.into(),
            updated_at_ms: 0,
        };
        let err = RunAuditEncoder
            .encode("r", &head, &[event(1, "node_started", "{not json")])
            .unwrap_err();
        assert!(matches!(err, StoreError::Audit(m) if m.contains("event 1")));
    }
}
