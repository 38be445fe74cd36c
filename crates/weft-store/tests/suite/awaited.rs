//! The seam's awaited reads and status write, audit anchors, and audited handles taken
//! through the trait (`AuditWrites`), on every backend: what a separate type per backend
//! must each get right on its own.

use std::sync::Arc;

use weft_store::{
    AuditAnchor, AuditEncoder, AuditLine, LeaseHolder, RawEventRecord, RunStatus, RunStore,
    StoreError, Takeover,
};

use super::{create_runs, numbered};

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

pub fn awaited_reads_answer_what_blocking_reads_do(store: &dyn RunStore) {
    create_runs(store, &["r1", "r2"]);
    store.append("r1", &numbered(1, 5)).unwrap();
    block_on(async {
        let run = store.get_run_async("r1").await.unwrap();
        assert_eq!(run, store.get_run("r1").unwrap());
        assert!(run.is_some());
        assert_eq!(store.get_run_async("nope").await.unwrap(), None);
        assert_eq!(store.last_seq_async("r1").await.unwrap(), 5);
        assert_eq!(store.last_seq_async("r2").await.unwrap(), 0);
        let read = store.read_async("r1", 2, 3).await.unwrap();
        assert_eq!(read, store.read("r1", 2, 3).unwrap());
        assert_eq!(
            read.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [2, 3, 4],
            "from 2, at most 3"
        );
        let raw = store.read_raw_async("r1", 4, 10).await.unwrap();
        assert_eq!(raw, store.read_raw("r1", 4, 10).unwrap());
        assert_eq!(raw.len(), 2);
        // A run never driven has no lease; a driven one answers the lease it holds.
        assert_eq!(store.get_lease_async("r1").await.unwrap(), None);
        let holder = weft_store::LeaseHolder {
            owner: "a/1".into(),
            host: "a-host".into(),
            pid: 4242,
        };
        let lease = store
            .acquire_lease("r2", &holder, 0, 100, weft_store::Takeover::IfExpired)
            .unwrap();
        assert_eq!(store.get_lease_async("r2").await.unwrap(), Some(lease));
        for err in [
            store.last_seq_async("nope").await.unwrap_err(),
            store.read_async("nope", 1, 1).await.unwrap_err(),
            store.read_raw_async("nope", 1, 1).await.unwrap_err(),
        ] {
            assert!(matches!(err, StoreError::UnknownRun { .. }), "{err:?}");
        }
    });
}

pub fn awaited_lease_and_status_writes_are_fenced(store: &dyn RunStore) {
    create_runs(store, &["r1"]);
    let holder = |name: &str| LeaseHolder {
        owner: name.into(),
        host: "h".into(),
        pid: 1,
    };
    let lease =
        block_on(store.acquire_lease_async("r1", &holder("a"), 0, 100, Takeover::IfExpired))
            .unwrap();
    assert_eq!((lease.token, lease.expires_at_ms), (1, 100));
    assert_eq!(store.get_lease("r1").unwrap().as_ref(), Some(&lease));
    let held =
        block_on(store.acquire_lease_async("r1", &holder("b"), 50, 100, Takeover::IfExpired))
            .unwrap_err();
    assert!(matches!(held, StoreError::LeaseHeld { .. }), "{held:?}");
    let fenced = store.fenced(lease);
    block_on(async {
        fenced
            .set_status_async("r1", RunStatus::Running, 5)
            .await
            .unwrap();
        let run = store.get_run("r1").unwrap().unwrap();
        assert_eq!((run.status, run.updated_at_ms), (RunStatus::Running, 5));
        // Taken over once expired: the old holder's status write lands nothing.
        store
            .acquire_lease("r1", &holder("b"), 200, 100, Takeover::IfExpired)
            .unwrap();
        let err = fenced
            .set_status_async("r1", RunStatus::Failed, 6)
            .await
            .unwrap_err();
        assert!(err.is_fenced(), "{err:?}");
        let run = store.get_run("r1").unwrap().unwrap();
        assert_eq!((run.status, run.updated_at_ms), (RunStatus::Running, 5));
        let err = store
            .set_status_async("nope", RunStatus::Failed, 6)
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::UnknownRun { .. }), "{err:?}");
    });
}

pub fn audit_anchors_never_move_back(store: &dyn RunStore) {
    let anchor = |run: &str, audit_seq: u64, hash: &str| AuditAnchor {
        run_id: run.into(),
        event_seq: audit_seq * 2,
        audit_seq,
        hash: hash.into(),
        updated_at_ms: 7,
    };
    create_runs(store, &["r1", "r2"]);
    assert_eq!(store.get_anchor("r1").unwrap(), None);
    store.set_anchor(&anchor("r1", 3, "aa")).unwrap();
    store.set_anchor(&anchor("r2", 1, "bb")).unwrap();
    store.set_anchor(&anchor("r1", 2, "cc")).unwrap();
    assert_eq!(store.get_anchor("r1").unwrap(), Some(anchor("r1", 3, "aa")));
    assert_eq!(store.get_anchor("r2").unwrap(), Some(anchor("r2", 1, "bb")));
    assert!(matches!(
        store.set_anchor(&anchor("nope", 1, "dd")).unwrap_err(),
        StoreError::UnknownRun { .. }
    ));
}

/// One line per event, chained by the previous hash.
#[derive(Debug)]
struct OnePerEvent;

impl AuditEncoder for OnePerEvent {
    fn encode(
        &self,
        run_id: &str,
        head: &AuditAnchor,
        events: &[RawEventRecord],
    ) -> weft_store::Result<Vec<AuditLine>> {
        let mut prev = head.hash.clone();
        Ok((head.audit_seq + 1..)
            .zip(events)
            .map(|(seq, e)| {
                let line = format!("{run_id}:{seq}:{}:{prev}", e.seq);
                prev = format!("h{seq}");
                AuditLine {
                    audit_seq: seq,
                    event_seq: e.seq,
                    hash: prev.clone(),
                    line,
                }
            })
            .collect())
    }
}

pub fn an_audited_handle_writes_the_chain_with_its_appends(store: &dyn RunStore) {
    create_runs(store, &["r1"]);
    let audited = store.audited(Arc::new(OnePerEvent));
    audited.append("r1", &numbered(1, 2)).unwrap();
    // A plain handle's append is not audited until the next audited write or a catch-up.
    store.append("r1", &numbered(3, 1)).unwrap();
    assert_eq!(store.audit_lines("r1", 0, 10).unwrap().len(), 2);
    assert_eq!(store.get_anchor("r1").unwrap().unwrap().event_seq, 2);
    // Catching up through a plain handle writes nothing; through the audited one, the rest.
    store.audit_catch_up("r1").unwrap();
    assert_eq!(store.audit_lines("r1", 0, 10).unwrap().len(), 2);
    audited.audit_catch_up("r1").unwrap();
    let lines = store.audit_lines("r1", 0, 10).unwrap();
    assert_eq!(
        lines.iter().map(|l| l.line.as_str()).collect::<Vec<_>>(),
        [
            format!("r1:1:1:{}", weft_store::AUDIT_GENESIS),
            "r1:2:2:h1".to_owned(),
            "r1:3:3:h2".to_owned(),
        ]
    );
    let anchor = store.get_anchor("r1").unwrap().unwrap();
    assert_eq!(
        (anchor.audit_seq, anchor.event_seq, anchor.hash.as_str()),
        (3, 3, "h3")
    );
    // An awaited append through the audited handle is audited in the same write.
    block_on(audited.append_async("r1", 3, numbered(4, 1))).unwrap();
    assert_eq!(store.audit_lines("r1", 3, 10).unwrap().len(), 1);
    assert_eq!(store.get_anchor("r1").unwrap().unwrap().event_seq, 4);
}

pub fn owned_appends_behave_like_borrowed_ones(store: &dyn RunStore) {
    create_runs(store, &["r1"]);
    assert_eq!(
        store
            .append_expecting_owned("r1", 0, numbered(1, 2))
            .unwrap(),
        [1, 2]
    );
    let err = store
        .append_expecting_owned("r1", 1, numbered(3, 1))
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(
        store
            .append_expecting_owned("r1", 2, numbered(3, 1))
            .unwrap(),
        [3]
    );
    let ns: Vec<u64> = store
        .read("r1", 1, 10)
        .unwrap()
        .iter()
        .map(|e| e.payload["n"].as_u64().unwrap())
        .collect();
    assert_eq!(ns, [1, 2, 3]);
}

pub fn a_write_is_counted_as_one_transaction_at_most(store: &dyn RunStore) {
    create_runs(store, &["r1"]);
    let before = store.stats();
    store.append("r1", &numbered(1, 3)).unwrap();
    let after = store.stats();
    assert_eq!(after.transactions - before.transactions, 1);
    assert_eq!(
        (after.appends - before.appends, after.events - before.events),
        (1, 3)
    );
}
