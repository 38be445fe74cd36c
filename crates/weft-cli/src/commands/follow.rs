//! `weft events --follow [RUN]`: events as JSON lines as they are committed, by this
//! process or any other, from the store's tail (`docs/store.md` §7).
//!
//! With RUN: the `weft events` lines, from the seq after `--after`, until the run ends (a
//! root-scope `run_finished` that no later `node_reset` reopened, with nothing after it).
//! Without RUN: every run's events in commit order, each line with `run_id` and `position`
//! (the cursor `--after` resumes from), until interrupted.

use std::io::Write;
use std::process::ExitCode;

use serde_json::Value;
use weft_store::{EventRecord, RunStore, TailFrom};

/// Whether a run has ended, from its events in log order: its root scope's last
/// `run_finished` not reopened by a later `node_reset` (`docs/engine.md` §2a).
#[derive(Debug, Default)]
pub struct RunEnd {
    ended: bool,
}

impl RunEnd {
    /// Takes the next event of the run's log into account.
    pub fn see(&mut self, event: &EventRecord) {
        if weft_engine::scope_of(event).is_some() {
            return; // a fragment instance's own events
        }
        match event.kind.as_str() {
            "run_finished" => self.ended = true,
            "node_reset" => self.ended = false,
            _ => {}
        }
    }

    /// The run has ended, and `seen_seq` is the last event of its log: nothing follows.
    pub fn ended_at(
        &self,
        store: &dyn RunStore,
        run_id: &str,
        seen_seq: u64,
    ) -> anyhow::Result<bool> {
        Ok(self.ended && store.last_seq(run_id)? == seen_seq)
    }

    /// Reads the run's events up to `seq` into the state (what a follower starting after
    /// `seq` has not been shown).
    pub fn read_up_to(
        &mut self,
        store: &dyn RunStore,
        run_id: &str,
        seq: u64,
    ) -> anyhow::Result<()> {
        let mut from = 1;
        while from <= seq {
            let limit = usize::try_from(seq - from + 1)
                .unwrap_or(usize::MAX)
                .min(1000);
            let batch = store.read(run_id, from, limit)?;
            let Some(last) = batch.last().map(|e| e.seq) else {
                break;
            };
            batch.iter().for_each(|e| self.see(e));
            from = last + 1;
        }
        Ok(())
    }
}

pub fn run(store: &dyn RunStore, run_id: Option<&str>, after: u64) -> anyhow::Result<ExitCode> {
    match run_id {
        Some(run_id) => follow_run(store, run_id, after),
        None => follow_all(store, after),
    }
}

fn follow_run(store: &dyn RunStore, run_id: &str, after: u64) -> anyhow::Result<ExitCode> {
    if store.get_run(run_id)?.is_none() {
        writeln!(anstream::stderr(), "error: unknown run `{run_id}`")?;
        return Ok(ExitCode::from(1));
    }
    let mut end = RunEnd::default();
    end.read_up_to(store, run_id, after)?;
    if end.ended_at(store, run_id, after)? {
        return Ok(ExitCode::SUCCESS);
    }
    let mut tail = store.tail(TailFrom::Run {
        run_id: run_id.to_owned(),
        after_seq: after,
    });
    loop {
        let batch = tail.next_batch_blocking()?;
        let mut out = anstream::stdout().lock();
        for tailed in &batch {
            writeln!(out, "{}", super::events::line(&tailed.event))?;
            end.see(&tailed.event);
        }
        out.flush()?;
        if let Some(last) = batch.last()
            && end.ended_at(store, run_id, last.event.seq)?
        {
            return Ok(ExitCode::SUCCESS);
        }
    }
}

fn follow_all(store: &dyn RunStore, after: u64) -> anyhow::Result<ExitCode> {
    let mut tail = store.tail(TailFrom::All {
        after_position: after,
    });
    loop {
        let batch = tail.next_batch_blocking()?;
        let mut out = anstream::stdout().lock();
        for tailed in &batch {
            let mut line = serde_json::Map::new();
            line.insert("run_id".into(), tailed.event.run_id.clone().into());
            line.insert("position".into(), tailed.position.into());
            if let Value::Object(rest) = super::events::line(&tailed.event) {
                line.extend(rest);
            }
            writeln!(out, "{}", Value::Object(line))?;
        }
        out.flush()?;
    }
}
