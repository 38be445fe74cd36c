//! The driver's inbox (`docs/engine.md` §2c). Other processes (`weft approve|reject|
//! provide`, `weft cancel`) append only inbox kinds (`human_decision`, `cancel_requested`)
//! to a live run's log. The driver meets them when its own `append_expecting` conflicts, or,
//! while it waits on running nodes, when the store wakes it because another writer appended
//! ([`InboxWatch`], `Store::appended_after`: at once for a writer in this process, within
//! the store's change check of 10 ms for another process): it reads the new events, accepts
//! only inbox kinds (anything else means a second driver: an error), applies them to the
//! scheduler in log order — so a replay sees exactly what the driver saw — and then
//! re-checks that its own event still makes sense before it retries the append. A
//! `human_decision` with `scope` is addressed to a fragment instance: its driver takes it,
//! and any other driver keeps it for that instance (`instance_waits.rs`).

use weft_core::NodeState;
use weft_store::{EventRecord, RunWatch, StoreError, TailFrom};

use super::Driver;
use super::human::Resolution;
use crate::EngineError;
use crate::events::RunEvent;

/// How many events one read of the inbox takes at most.
const READ_BATCH: usize = 256;

/// How long the driver waits on running nodes before it registers its inbox watch. A run
/// whose nodes all end sooner (an agent run on a fast model: W10) costs no watch: on a
/// database file its first check is a read on the store's thread, woken for it, and the
/// watch keeps that thread polling. An append of another writer is then taken at most this
/// much later while nodes run (or at the driver's next write, which conflicts with it).
const WATCH_AFTER: std::time::Duration = std::time::Duration::from_millis(20);

/// The driver's wait for another writer's append while its nodes run: one
/// [`RunWatch`] of its run, registered once the driver has waited [`WATCH_AFTER`] since
/// its first wait, and kept for the rest of the action loop, awaited past the seq the run's
/// drivers share (read again at each poll, so the appends of this driver and of the other
/// drivers of the run in this process, which move it, do not wake it, but for a sibling
/// instance's commit seen before the sibling moved the seq: [`Driver::absorb_appended`]
/// tells the two apart in the run's turn). The watch's first check reads the log's end as
/// it is when it registers, so an append made before then wakes it at once. The store
/// checks on its own thread, so the driver's never blocks on it, and nothing reads the log
/// until something was appended.
#[derive(Default)]
pub(super) struct InboxWatch {
    watch: Option<RunWatch>,
    /// The run's id, kept at the first wait for the registration that follows.
    run_id: Option<String>,
    /// When the driver first waited on running nodes (real time: it decides only when the
    /// watch is registered, nothing the run sees).
    waiting_since: Option<tokio::time::Instant>,
}

impl InboxWatch {
    /// Resolves once the log has an event past the seq the run's drivers know.
    pub(super) fn appended<'w, 's: 'w>(
        &'w mut self,
        d: &Driver<'s>,
    ) -> impl std::future::Future<Output = Result<(), StoreError>> + 'w {
        let shared = std::sync::Arc::clone(&d.scope.shared);
        let store: &'s dyn weft_store::RunStore = d.store;
        self.run_id.get_or_insert_with(|| d.run_id.clone());
        // When to register the watch is the driver's own latency, not a time of the run.
        // clock-exempt: real time on purpose (above).
        let now = tokio::time::Instant::now();
        let since = *self.waiting_since.get_or_insert(now);
        async move {
            let watch = match &mut self.watch {
                Some(watch) => watch,
                empty => {
                    // clock-exempt: as above; a test clock that never moves must not hold the watch back.
                    tokio::time::sleep_until(since + WATCH_AFTER).await;
                    empty.insert(store.watch_run(self.run_id.as_deref().unwrap_or_default()))
                }
            };
            watch.appended_past(move || shared.last_seq()).await
        }
    }
}

impl Driver<'_> {
    /// Reads and applies every event after `last_seq` (all must be inbox kinds): after a
    /// write's conflict (`write.rs`) and when polling the inbox.
    pub(super) async fn absorb_inbox(&mut self) -> Result<(), EngineError> {
        loop {
            let records = self
                .store
                .read_async(&self.run_id, self.last_seq + 1, READ_BATCH)
                .await?;
            if records.is_empty() {
                return Ok(());
            }
            for record in records {
                self.absorb_record(&record).await?;
            }
        }
    }

    /// After the store said another writer appended past the seq the run's drivers know
    /// ([`InboxWatch`]): takes what is kept for this instance, then reads the new events on
    /// the store's thread (a tail from that seq, so the driver's thread never blocks on
    /// the read) and applies them. The wait resolved against that very seq and no other
    /// driver of the run writes meanwhile (the root's: none exists while it runs; an
    /// instance's: it holds the run's turn, and first checks that the log's end is past
    /// the seq), so the read finds at least one event and does not wait.
    pub(super) async fn absorb_appended(&mut self) -> Result<(), EngineError> {
        // In the run's turn: a sibling instance's write may be committed (which woke the
        // wait) while its driver has not moved the shared seq yet; its events are then
        // past the seq, and are not another writer's.
        let turn = self.turn().await;
        self.take_addressed()?;
        self.last_seq = self.scope.shared.last_seq();
        if turn.is_some() && self.store.last_seq_async(&self.run_id).await? == self.last_seq {
            // It was only a sibling's write: nothing to absorb.
            return Ok(());
        }
        let mut tail = self.store.tail(TailFrom::Run {
            run_id: self.run_id.clone(),
            after_seq: self.last_seq,
        });
        for tailed in tail.next_batch().await? {
            self.absorb_record(&tailed.event).await?;
        }
        Ok(())
    }

    /// Applies one event another writer appended (it must be an inbox kind).
    async fn absorb_record(&mut self, record: &EventRecord) -> Result<(), EngineError> {
        let event =
            RunEvent::from_record(record).map_err(|e| EngineError::Internal(e.to_string()))?;
        if !event.is_inbox() {
            // Another driver wrote: when it took this driver's lease over, say so with the
            // fence's own error (the run is another's now, and nothing more is written).
            let held = self.store.held_lease().cloned();
            if let Some(held) = held
                && let Ok(current) = self.store.get_lease_async(&self.run_id).await
                && current.as_ref().is_none_or(|c| c.token != held.token)
            {
                return Err(EngineError::Store(weft_store::StoreError::Fenced {
                    run_id: self.run_id.clone(),
                    token: held.token,
                    current: current.map(Box::new),
                }));
            }
            return Err(EngineError::Internal(format!(
                "run {}: event {} (`{}`) was written by another driver; this one stops",
                self.run_id, record.seq, record.kind
            )));
        }
        self.last_seq = record.seq;
        self.scope.shared.set_last_seq(record.seq);
        if let Some(path) = crate::run_log::scope_of(record) {
            // A decision addressed to a fragment instance: its driver takes it
            // (`instance_waits.rs`).
            if self.scope.path.as_deref() == Some(path) {
                self.take_inbox(&event)?;
            } else {
                self.scope
                    .shared
                    .relay_addressed(path.to_string(), event.clone());
            }
        } else if self.scope.path.is_some() {
            // Inbox events are the root scope's: relayed to it (`scope.rs`).
            self.scope.shared.relay(event.clone());
        } else {
            self.take_inbox(&event)?;
        }
        // Observed like the driver's own appends: the audit trail and the live view see
        // the log exactly, whoever wrote it.
        self.observe(record.seq, record.recorded_at_ms, &event)
    }

    /// Reads the log for inbox events (before suspending): `true` when there were some.
    pub(super) async fn poll_inbox(&mut self) -> Result<bool, EngineError> {
        // In the run's turn, as `absorb_appended`.
        let _turn = self.turn().await;
        let addressed = self.take_addressed()?;
        self.last_seq = self.scope.shared.last_seq();
        if self.store.last_seq_async(&self.run_id).await? == self.last_seq {
            return Ok(addressed);
        }
        self.absorb_inbox().await?;
        Ok(true)
    }

    /// Applies one inbox event that is already in the log.
    pub(super) fn take_inbox(&mut self, event: &RunEvent) -> Result<(), EngineError> {
        // Too late: the scope has finished (a replay skips it the same way).
        if self.sched.is_finished() {
            return Ok(());
        }
        match event {
            RunEvent::HumanDecision(d) => {
                let node = self.sched.graph().find(&d.node).ok_or_else(|| {
                    EngineError::Internal(format!("a decision for unknown node `{}`", d.node))
                })?;
                self.human
                    .resolved
                    .push_back((node, Resolution::Decision(d.clone())));
            }
            RunEvent::CancelRequested { actor, .. } => {
                self.human.cancel.get_or_insert_with(|| actor.clone());
            }
            _ => {}
        }
        let mapped = event
            .to_scheduler(self.sched.graph())
            .map_err(|n| EngineError::Internal(format!("unknown node `{n}`")))?;
        if let Some(e) = mapped {
            let actions = crate::events::apply_logged(&mut self.sched, event, &e)?;
            // The nodes a mutation added get their state before any action names them.
            if let RunEvent::GraphMutated { mutation, .. } = event {
                self.grow_to_graph(mutation)?;
            }
            self.human.actions.extend(actions);
        }
        Ok(())
    }

    /// After absorbing inbox events: does the driver's own `event` still apply? A `when`
    /// of a node a cancel has settled, or a timeout of a node a person has just decided,
    /// does not: it is dropped instead of appended.
    pub(super) fn still_valid(&self, event: &RunEvent) -> bool {
        let find = |id: &str| self.sched.graph().find(id);
        match event {
            RunEvent::NodeWhen { node, .. } => {
                find(node).is_some_and(|i| self.sched.when_pending(i))
            }
            // A sign-off's timeout: its fold lets a person's answer that came first stand.
            RunEvent::HumanTimeout { node, .. } if super::signoff::criterion_of(node).is_some() => {
                true
            }
            RunEvent::HumanTimeout { node, .. } => {
                find(node).is_some_and(|i| self.sched.state(i) == NodeState::AwaitingHuman)
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    //! The conflict path, step by step: another writer appends an inbox event between two
    //! of the driver's appends; the driver's next append conflicts, absorbs it at its place
    //! in the log, and retries (or drops an event the inbox made moot).
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "a panic here is a test failure with a message"
    )]

    use serde_json::{Map, Value, json};
    use weft_core::{Action, NodeState};
    use weft_store::{EventLog, NewRun, RunTable, Store};

    use super::super::human::{HumanPolicy, Resolution};
    use super::super::preflight::preflight;
    use super::super::{Driver, DriverInit, RunOptions};
    use crate::events::{EVENT_FORMAT, RunEvent};
    use crate::human::{DecisionRequest, Verb, decide};

    fn doc() -> Value {
        json!({
            "ags_version": "1.0", "kind": "AgenticGraph", "id": "c", "version": "1.0.0",
            "description": "a gate next to a task", "entrypoints": ["g", "work"],
            "constraints": {"max_parallel_nodes": 2},
            "nodes": {
                "g": {"type": "gate", "description": "decide", "gate": {"mode": "approve"}},
                "work": {"description": "w", "x-weft-exec": {"run": "true"}}
            },
            "edges": []
        })
    }

    fn driver<'a>(store: &'a Store, doc: &Value) -> Driver<'a> {
        let root = doc.as_object().unwrap();
        let agents = RunOptions::default().registry().unwrap();
        let plan = preflight(root, &RunOptions::default(), &agents, &Default::default()).unwrap();
        store
            .create_run(&NewRun {
                id: "r".into(),
                graph_digest: "sha256:00".into(),
                created_at_ms: 0,
            })
            .unwrap();
        Driver::new(DriverInit {
            store,
            run_id: "r".into(),
            last_seq: 0,
            root,
            jobs: plan.jobs,
            reads: plan.reads,
            adapted: plan.adapted,
            sched_options: plan.sched_options,
            params: plan.params,
            human_policy: HumanPolicy::read(root),
            options: &RunOptions::default(),
            agents,
            started_ms: 0,
        })
    }

    #[tokio::test]
    async fn a_conflicting_append_absorbs_the_inbox_event_first() {
        let store = Store::open_in_memory().unwrap();
        let doc = doc();
        let mut d = driver(&store, &doc);
        let actions = d
            .record(&RunEvent::RunStarted {
                v: EVENT_FORMAT,
                graph_digest: "sha256:00".into(),
                params: json!({}),
                max_parallel: 2,
                on_node_failure: "isolate".into(),
                graph: doc.clone(),
                started_by: None,
                warnings: Vec::new(),
                refs: Vec::new(),
            })
            .await
            .unwrap();
        assert!(actions.contains(&Action::Start { node: 0 }), "{actions:?}");
        let g = d.sched.graph().find("g").unwrap();
        let ctx = d.context();
        d.open_gate(g, 1, &ctx).await.unwrap();
        assert_eq!(d.sched.state(g), NodeState::AwaitingHuman);

        // Another process decides: the driver does not know yet.
        let request = DecisionRequest {
            node: "g".into(),
            verb: Verb::Approve,
            values: Map::new(),
            actor: "ann".into(),
            role: None,
            note: None,
        };
        let receipt = decide(&store, "r", &request).unwrap();
        assert_eq!(receipt.seq, Some(3));
        assert_eq!(d.last_seq, 2);

        // Its next append conflicts, absorbs the decision, then lands after it.
        let written = d
            .append(&RunEvent::NodeStarted {
                node: "work".into(),
                attempt: 1,
                inputs: None,
                delay_ms: None,
                previous_failure: None,
                routed: None,
            })
            .await
            .unwrap();
        assert!(written);
        assert_eq!(d.last_seq, 4);
        assert_eq!(d.sched.state(g), NodeState::Running, "HumanResumed applied");
        assert!(matches!(
            d.human.resolved.front(),
            Some((n, Resolution::Decision(dec))) if *n == g && dec.actor == "ann"
        ));
        let kinds: Vec<String> = store
            .read("r", 1, 10)
            .unwrap()
            .into_iter()
            .map(|r| r.kind)
            .collect();
        assert_eq!(
            kinds,
            [
                "run_started",
                "gate_waiting",
                "human_decision",
                "node_started"
            ]
        );

        // A timeout of `g` no longer applies: the node is not waiting any more.
        assert!(!d.still_valid(&RunEvent::HumanTimeout {
            node: "g".into(),
            action: "fail".into(),
        }));
    }

    #[tokio::test]
    async fn a_timeout_that_meets_a_decision_is_dropped() {
        let store = Store::open_in_memory().unwrap();
        let doc = doc();
        let mut d = driver(&store, &doc);
        d.record(&RunEvent::RunStarted {
            v: EVENT_FORMAT,
            graph_digest: "sha256:00".into(),
            params: json!({}),
            max_parallel: 2,
            on_node_failure: "isolate".into(),
            graph: doc.clone(),
            started_by: None,
            warnings: Vec::new(),
            refs: Vec::new(),
        })
        .await
        .unwrap();
        let g = d.sched.graph().find("g").unwrap();
        let ctx = d.context();
        d.open_gate(g, 1, &ctx).await.unwrap();
        let request = DecisionRequest {
            node: "g".into(),
            verb: Verb::Reject,
            values: Map::new(),
            actor: "bob".into(),
            role: None,
            note: None,
        };
        decide(&store, "r", &request).unwrap();
        // The driver saw the deadline pass before it saw the decision.
        let written = d
            .append(&RunEvent::HumanTimeout {
                node: "g".into(),
                action: "fail".into(),
            })
            .await
            .unwrap();
        assert!(!written, "the decision came first: the timeout is moot");
        assert_eq!(store.last_seq("r").unwrap(), 3);
        assert_eq!(d.last_seq, 3);
        assert_eq!(d.sched.state(g), NodeState::Running);
    }
}
