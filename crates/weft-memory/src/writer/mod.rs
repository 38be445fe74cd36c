//! The single writer: one thread owns the write connection; every write is a job sent to it
//! over a channel, run in its own transaction, and answered after its commit and after the
//! index has taken the commit's changes. Callers (extractors in parallel, a CLI, a verifier)
//! only ever hold a sender.

pub(crate) mod ctx;
pub(crate) mod discovery;
pub(crate) mod merge;
pub(crate) mod staging;

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, PoisonError, RwLock};

use rusqlite::Connection;

use crate::error::{MemoryError, Result, SqliteContext};
use crate::graph::Graph;
use crate::model::Config;
pub use ctx::Ctx;

/// What the writer calls once the transaction is settled: `None` when the job's own result
/// stands, `Some(error)` when the commit failed.
type Answer = Box<dyn FnOnce(Option<MemoryError>) + Send>;
type Work = Box<dyn FnOnce(&mut Ctx<'_>) -> (bool, Answer) + Send>;

/// A write job: `work` runs inside the transaction, says whether to commit, and answers
/// afterwards; `fail` answers instead when no transaction could be begun.
pub(crate) struct Job {
    work: Work,
    fail: Box<dyn FnOnce(MemoryError) + Send>,
}

/// Wraps a closure as a job and returns the receiver its result arrives on.
pub(crate) fn job<T, F>(work: F) -> (Job, Receiver<Result<T>>)
where
    T: Send + 'static,
    F: FnOnce(&mut Ctx<'_>) -> Result<T> + Send + 'static,
{
    let (reply, receiver) = sync_channel(1);
    let fail_reply = reply.clone();
    let work: Work = Box::new(move |ctx| {
        let result = work(ctx);
        let commit = result.is_ok();
        let answer: Answer = Box::new(move |failure| {
            let _ = reply.send(match failure {
                Some(error) => Err(error),
                None => result,
            });
        });
        (commit, answer)
    });
    let fail = Box::new(move |error| {
        let _ = fail_reply.send(Err(error));
    });
    (Job { work, fail }, receiver)
}

/// Starts the writer thread over `conn`; it ends when every sender is dropped.
pub(crate) fn spawn(
    conn: Connection,
    graph: Arc<RwLock<Graph>>,
    config: Config,
) -> Result<(SyncSender<Job>, std::thread::JoinHandle<()>)> {
    // A bounded queue: extractors faster than the writer wait instead of piling up memory.
    let (sender, receiver) = sync_channel::<Job>(64);
    let handle = std::thread::Builder::new()
        .name("weft-memory-writer".to_string())
        .spawn(move || run(conn, &graph, &config, &receiver))
        .map_err(|e| MemoryError::Schema(format!("cannot start the writer thread: {e}")))?;
    Ok((sender, handle))
}

fn run(mut conn: Connection, graph: &RwLock<Graph>, config: &Config, jobs: &Receiver<Job>) {
    while let Ok(job) = jobs.recv() {
        let tx = match conn.transaction().ctx("beginning a write") {
            Ok(tx) => tx,
            Err(error) => {
                (job.fail)(error);
                continue;
            }
        };
        let (commit, answer, changes) = {
            let committed = graph.read().unwrap_or_else(PoisonError::into_inner);
            let mut ctx = Ctx::new(&tx, &committed, config);
            let (commit, answer) = (job.work)(&mut ctx);
            (commit, answer, ctx.changes)
        };
        if !commit {
            drop(tx); // rolls back
            answer(None);
            continue;
        }
        if let Err(error) = tx.commit().ctx("committing a write") {
            answer(Some(error));
            continue;
        }
        let mut index = graph.write().unwrap_or_else(PoisonError::into_inner);
        if let Err(error) = index.apply(changes) {
            // The commit stands; the index disagrees with it, so it is rebuilt from SQLite.
            match Graph::load(&conn) {
                Ok(mut fresh) => {
                    fresh.version = index.version + 1;
                    *index = fresh;
                }
                Err(reload) => {
                    drop(index);
                    answer(Some(reload));
                    continue;
                }
            }
            drop(index);
            answer(Some(error));
            continue;
        }
        drop(index);
        answer(None);
    }
}
