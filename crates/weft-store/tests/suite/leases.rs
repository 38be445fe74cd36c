//! Leases and fencing (schema v3): who drives a run, and that a driver whose lease was
//! taken over cannot write, on every backend.

use weft_store::{Lease, LeaseHolder, RunStatus, RunStore, StoreError, Takeover};

use super::{create_runs, new_run, numbered};

fn holder(name: &str) -> LeaseHolder {
    LeaseHolder {
        owner: format!("{name}/1"),
        host: format!("{name}-host"),
        pid: 4242,
    }
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

fn held_by(err: StoreError) -> Lease {
    match err {
        StoreError::LeaseHeld { lease, .. } => *lease,
        other => panic!("expected LeaseHeld, got {other:?}"),
    }
}

pub fn a_lease_is_taken_only_once_expired(store: &dyn RunStore) {
    create_runs(store, &["r1"]);
    assert_eq!(store.get_lease("r1").unwrap(), None);
    let a = store
        .acquire_lease("r1", &holder("a"), 1_000, 500, Takeover::IfExpired)
        .unwrap();
    assert_eq!(
        (a.token, a.acquired_at_ms, a.expires_at_ms),
        (1, 1_000, 1_500)
    );
    assert_eq!(store.get_lease("r1").unwrap().as_ref(), Some(&a));
    // Before expiry another holder is told who holds it, and nothing changes.
    let err = store
        .acquire_lease("r1", &holder("b"), 1_499, 500, Takeover::IfExpired)
        .unwrap_err();
    assert_eq!(held_by(err), a);
    assert_eq!(store.get_lease("r1").unwrap().as_ref(), Some(&a));
    // At expiry it is taken, with the next token.
    let b = store
        .acquire_lease("r1", &holder("b"), 1_500, 500, Takeover::IfExpired)
        .unwrap();
    assert_eq!((b.token, b.holder.owner.as_str()), (2, "b/1"));
}

pub fn a_gone_holder_is_replaced_at_once_by_its_token_only(store: &dyn RunStore) {
    create_runs(store, &["r1"]);
    let a = store
        .acquire_lease("r1", &holder("a"), 0, 60_000, Takeover::IfExpired)
        .unwrap();
    // A stale token (someone else replaced it first) is refused like a live lease.
    let err = store
        .acquire_lease(
            "r1",
            &holder("b"),
            10,
            60_000,
            Takeover::Replacing(a.token + 7),
        )
        .unwrap_err();
    assert_eq!(held_by(err).token, a.token);
    let b = store
        .acquire_lease("r1", &holder("b"), 10, 60_000, Takeover::Replacing(a.token))
        .unwrap();
    assert_eq!(b.token, 2);
}

pub fn renewal_extends_and_a_taken_over_lease_cannot_renew(store: &dyn RunStore) {
    create_runs(store, &["r1"]);
    let a = store
        .acquire_lease("r1", &holder("a"), 0, 100, Takeover::IfExpired)
        .unwrap();
    let renewed = store.renew_lease("r1", a.token, 90, 100).unwrap();
    assert_eq!(renewed.expires_at_ms, 190);
    // Renewed, it is not expired at 150.
    assert!(
        store
            .acquire_lease("r1", &holder("b"), 150, 100, Takeover::IfExpired)
            .is_err()
    );
    let b = store
        .acquire_lease("r1", &holder("b"), 190, 100, Takeover::IfExpired)
        .unwrap();
    let err = store.renew_lease("r1", a.token, 200, 100).unwrap_err();
    assert!(err.is_fenced(), "{err:?}");
    match err {
        StoreError::Fenced { token, current, .. } => {
            assert_eq!(token, a.token);
            assert_eq!(current.map(|l| *l), Some(b));
        }
        other => panic!("{other:?}"),
    }
    let awaited = block_on(store.renew_lease_async("r1", 2, 250, 100)).unwrap();
    assert_eq!(awaited.expires_at_ms, 350);
}

pub fn a_released_lease_keeps_its_token(store: &dyn RunStore) {
    create_runs(store, &["r1"]);
    let a = store
        .acquire_lease("r1", &holder("a"), 0, 60_000, Takeover::IfExpired)
        .unwrap();
    // A stale token releases nothing.
    store.release_lease("r1", a.token + 1).unwrap();
    assert!(!store.get_lease("r1").unwrap().unwrap().released());
    store.release_lease("r1", a.token).unwrap();
    let released = store.get_lease("r1").unwrap().unwrap();
    assert!(released.released() && released.expired_at(0));
    let b = store
        .acquire_lease("r1", &holder("b"), 1, 60_000, Takeover::IfExpired)
        .unwrap();
    assert_eq!(b.token, 2, "the next holder's token is higher");
}

/// The awaited release of a fenced handle: a stale token releases nothing; its own lets the
/// lease go, keeping its token, and the handle knows it has nothing left to release.
pub fn an_awaited_release_lets_the_handles_lease_go(store: &dyn RunStore) {
    create_runs(store, &["r1"]);
    let a = store
        .acquire_lease("r1", &holder("a"), 0, 60_000, Takeover::IfExpired)
        .unwrap();
    let driver = store.fenced(a.clone());
    block_on(driver.release_lease_async("r1", a.token + 1)).unwrap();
    assert!(!store.get_lease("r1").unwrap().unwrap().released());
    assert!(!driver.lease_released());
    block_on(driver.release_lease_async("r1", a.token)).unwrap();
    let released = store.get_lease("r1").unwrap().unwrap();
    assert_eq!((released.token, released.released()), (a.token, true));
    assert!(driver.lease_released());
}

pub fn leases_of_unknown_runs_are_refused(store: &dyn RunStore) {
    let err = store
        .acquire_lease("nope", &holder("a"), 0, 1, Takeover::IfExpired)
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownRun { .. }), "{err:?}");
}

/// Every write of a driver whose lease was taken over is refused and writes nothing; the
/// new holder's writes and unfenced (inbox) appends go on.
pub fn writes_of_a_taken_over_lease_are_fenced(store: &dyn RunStore) {
    create_runs(store, &["r1", "r2"]);
    store.append("r1", &numbered(1, 1)).unwrap();
    let a = store
        .acquire_lease("r1", &holder("a"), 0, 100, Takeover::IfExpired)
        .unwrap();
    let old = store.fenced(a);
    assert_eq!(old.append_expecting("r1", 1, &numbered(2, 1)).unwrap(), [2]);
    // Expired and taken over by b.
    let b = store
        .acquire_lease("r1", &holder("b"), 100, 100, Takeover::IfExpired)
        .unwrap();
    let new = store.fenced(b);

    let fenced = |r: weft_store::Result<Vec<u64>>| assert!(r.unwrap_err().is_fenced());
    fenced(old.append("r1", &numbered(3, 1)));
    fenced(old.append_expecting("r1", 2, &numbered(3, 1)));
    fenced(old.append_expecting_owned("r1", 2, numbered(3, 1)));
    fenced(block_on(old.append_async("r1", 2, numbered(3, 1))));
    fenced(block_on(old.close_run(
        "r1",
        2,
        numbered(3, 1),
        RunStatus::Succeeded,
        5,
    )));
    assert!(
        old.set_status("r1", RunStatus::Failed, 5)
            .unwrap_err()
            .is_fenced()
    );
    assert_eq!(store.last_seq("r1").unwrap(), 2, "nothing was written");
    assert_eq!(
        store.get_run("r1").unwrap().unwrap().status,
        RunStatus::Pending
    );
    // The old handle's writes to other runs are not fenced.
    assert_eq!(old.append("r2", &numbered(1, 1)).unwrap(), [1]);

    // An unfenced write (a person's decision) is not checked; the new holder writes.
    assert_eq!(
        store.append_expecting("r1", 2, &numbered(3, 1)).unwrap(),
        [3]
    );
    assert_eq!(
        block_on(new.append_async("r1", 3, numbered(4, 1))).unwrap(),
        [4]
    );
    assert!(!new.lease_released());
    let seqs = block_on(new.close_run("r1", 4, numbered(5, 1), RunStatus::Succeeded, 9));
    assert_eq!(seqs.unwrap(), [5]);
    // The closing write let the lease go, keeping its token.
    assert!(new.lease_released());
    let lease = store.get_lease("r1").unwrap().unwrap();
    assert_eq!((lease.token, lease.released()), (2, true));
}

/// A run opened through a fenced handle gets that lease (token 1) in the same write; a
/// handle fenced by another run's lease opens a run without one.
pub fn a_run_opens_with_its_first_lease(store: &dyn RunStore) {
    let lease = Lease {
        run_id: "r1".into(),
        holder: holder("a"),
        token: 1,
        acquired_at_ms: 7,
        expires_at_ms: 1_007,
    };
    let leased = store.fenced(lease.clone());
    let seqs = block_on(leased.open_run(new_run("r1", 7), RunStatus::Running, numbered(1, 2)));
    assert_eq!(seqs.unwrap(), [1, 2]);
    assert_eq!(store.get_lease("r1").unwrap(), Some(lease));
    assert_eq!(
        block_on(leased.append_async("r1", 2, numbered(3, 1))).unwrap(),
        [3]
    );
    block_on(leased.open_run(new_run("r2", 8), RunStatus::Running, numbered(1, 1))).unwrap();
    assert_eq!(store.get_lease("r2").unwrap(), None);
}

/// Racing acquirers of one free lease: exactly one gets it, the others are told who.
pub fn racing_acquirers_get_one_lease(store: &dyn RunStore) {
    create_runs(store, &["r1"]);
    let barrier = std::sync::Barrier::new(8);
    let results: Vec<Result<Lease, StoreError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (store, barrier) = (store.shared(), &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    store.acquire_lease(
                        "r1",
                        &holder(&format!("d{i}")),
                        0,
                        60_000,
                        Takeover::IfExpired,
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let winners: Vec<&Lease> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    for r in &results {
        if let Err(e) = r {
            assert!(
                matches!(e, StoreError::LeaseHeld { lease, .. } if lease.as_ref() == winners[0])
            );
        }
    }
}
