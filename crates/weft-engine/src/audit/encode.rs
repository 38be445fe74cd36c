//! The lines of a run's audit chain, made in the store's commit: [`RunAuditEncoder`] is
//! the [`AuditEncoder`] of a store handle made with [`weft_store::AuditWrites::audited`], so
//! each event's entry ([`super::table`]) is hashed into the chain and stored in the same
//! transaction as the event (`docs/audit.md` §9).

use weft_audit::{DEFAULT_SECRET_FIELDS, MAX_LINE_BYTES, encode_line, prepare_entry};
use weft_store::{AuditAnchor, AuditEncoder, AuditLine, RawEventRecord, StoreError};

use super::table;

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
            let payload: serde_json::Value =
                serde_json::from_str(&event.payload).map_err(|e| refused(e.to_string()))?;
            let Some(entry) = table::entry_for(
                run_id,
                event.seq,
                event.recorded_at_ms,
                &event.kind,
                &payload,
            ) else {
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
