//! `RunTable` suite.

use weft_store::{RunStatus, RunTable, StoreError};

use super::{create_runs, new_run};

pub fn create_then_get<S: RunTable + ?Sized>(store: &S) {
    let created = store.create_run(&new_run("r1", 1_700_000_000_000)).unwrap();
    assert_eq!(created.status, RunStatus::Pending);
    assert_eq!(created.updated_at_ms, created.created_at_ms);
    assert_eq!(store.get_run("r1").unwrap(), Some(created));
}

pub fn duplicate_id_is_refused<S: RunTable + ?Sized>(store: &S) {
    store.create_run(&new_run("r1", 1)).unwrap();
    let err = store.create_run(&new_run("r1", 2)).unwrap_err();
    assert!(
        matches!(err, StoreError::RunExists { ref run_id } if run_id == "r1"),
        "{err}"
    );
    // The first one is untouched.
    assert_eq!(store.get_run("r1").unwrap().unwrap().created_at_ms, 1);
}

pub fn unknown_run_is_none<S: RunTable + ?Sized>(store: &S) {
    assert_eq!(store.get_run("nope").unwrap(), None);
}

pub fn list_orders_filters_and_limits<S: RunTable + ?Sized>(store: &S) {
    // Created out of id order; equal timestamps tie-break on id.
    store.create_run(&new_run("c", 1)).unwrap();
    store.create_run(&new_run("b", 2)).unwrap();
    store.create_run(&new_run("a", 2)).unwrap();
    let ids = |runs: Vec<weft_store::RunRecord>| runs.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(store.list_runs(None, 10).unwrap()), ["c", "a", "b"]);
    assert_eq!(ids(store.list_runs(None, 2).unwrap()), ["c", "a"]);
    assert_eq!(ids(store.list_runs(None, 0).unwrap()), Vec::<String>::new());
    assert_eq!(ids(store.list_runs(None, usize::MAX).unwrap()).len(), 3);
    store.set_status("b", RunStatus::Running, 5).unwrap();
    assert_eq!(
        ids(store.list_runs(Some(RunStatus::Running), 10).unwrap()),
        ["b"]
    );
    assert_eq!(
        ids(store.list_runs(Some(RunStatus::Pending), 10).unwrap()),
        ["c", "a"]
    );
    assert!(
        store
            .list_runs(Some(RunStatus::Failed), 10)
            .unwrap()
            .is_empty()
    );
}

pub fn set_status_round_trips_every_status<S: RunTable + ?Sized>(store: &S) {
    create_runs(store, &["r1"]);
    for (t, status) in (10..).zip(RunStatus::ALL) {
        store.set_status("r1", status, t).unwrap();
        let run = store.get_run("r1").unwrap().unwrap();
        assert_eq!(
            (run.status, run.updated_at_ms, run.created_at_ms),
            (status, t, 1)
        );
    }
}

pub fn set_status_of_unknown_run_fails<S: RunTable + ?Sized>(store: &S) {
    let err = store.set_status("nope", RunStatus::Running, 1).unwrap_err();
    assert!(matches!(err, StoreError::UnknownRun { .. }), "{err}");
}
