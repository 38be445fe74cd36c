//! The ephemeral backend's audit lines (`crate::audit_log`): kept per run next to its log,
//! written under the store's lock with the append that causes them.

use super::MemoryLog;
use crate::audit_log::{self, AuditEncoder, AuditLine};
use crate::error::Result;

impl MemoryLog {
    /// Writes the audit lines of every event of `run_id` after its anchor's `event_seq`
    /// and moves the anchor; nothing on error.
    pub(crate) fn audit_catch_up(
        &mut self,
        run_id: &str,
        encoder: &dyn AuditEncoder,
    ) -> Result<()> {
        let head = self
            .anchors
            .get(run_id)
            .cloned()
            .unwrap_or_else(|| audit_log::genesis(run_id));
        let last = self.last_seq(run_id)?;
        if head.event_seq >= last {
            return Ok(());
        }
        let limit = usize::try_from(last - head.event_seq).unwrap_or(usize::MAX);
        let events = self.read_raw(run_id, head.event_seq + 1, limit)?;
        let at = events
            .last()
            .map_or(head.updated_at_ms, |e| e.recorded_at_ms);
        let lines = encoder.encode(run_id, &head, &events)?;
        let next = audit_log::advanced(&head, &lines, last, at);
        self.audit
            .entry(run_id.to_owned())
            .or_default()
            .extend(lines);
        self.anchors.insert(run_id.to_owned(), next);
        Ok(())
    }

    pub(crate) fn audit_lines(&self, run_id: &str, after: u64, limit: usize) -> Vec<AuditLine> {
        self.audit.get(run_id).map_or_else(Vec::new, |lines| {
            lines
                .iter()
                .filter(|l| l.audit_seq > after)
                .take(limit)
                .cloned()
                .collect()
        })
    }

    /// Removes a run created by a write that failed (its first events could not be
    /// audited).
    pub(crate) fn forget_run(&mut self, run_id: &str) {
        self.truncate(run_id, 0);
        self.runs.remove(run_id);
        self.events.remove(run_id);
        self.anchors.remove(run_id);
        self.leases.remove(run_id);
    }

    /// Cuts `run_id`'s log back to `last_seq` events (an append whose audit failed).
    pub(crate) fn truncate(&mut self, run_id: &str, last_seq: u64) {
        if let Some(log) = self.events.get_mut(run_id) {
            let keep = usize::try_from(last_seq).unwrap_or(usize::MAX);
            let removed = log.len().saturating_sub(keep) as u64;
            log.truncate(keep);
            self.last_position -= removed.min(self.last_position);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::unknown;

    #[test]
    fn unknown_run_has_no_lines_and_cannot_be_audited() {
        #[derive(Debug)]
        struct Never;
        impl AuditEncoder for Never {
            fn encode(
                &self,
                _: &str,
                _: &crate::AuditAnchor,
                _: &[crate::RawEventRecord],
            ) -> Result<Vec<AuditLine>> {
                Err(crate::StoreError::Audit("never".into()))
            }
        }
        let mut m = MemoryLog::default();
        assert!(m.audit_lines("nope", 0, 10).is_empty());
        assert!(matches!(
            m.audit_catch_up("nope", &Never),
            Err(e) if e.to_string() == unknown("nope").to_string()
        ));
    }
}
