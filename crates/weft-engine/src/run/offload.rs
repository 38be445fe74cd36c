//! Blocking work the driver hands to tokio's blocking pool, so it never runs on the thread
//! that drives node attempts.
//!
//! An append waits for the store's writer thread to commit (an fsync); an observer such as
//! the audit trail writes and syncs a file. On the CLI's current-thread runtime, doing that
//! inline would stop every running attempt's pipes and timers for the duration. The driver
//! still *awaits* each call before it goes on, so append-before-apply and the log order are
//! unchanged: only the other tasks keep running meanwhile.

use crate::EngineError;

/// Runs `f` on the blocking pool and waits for it.
pub(super) async fn offload<T, F>(f: F) -> Result<T, EngineError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| EngineError::Internal(format!("a blocking store call failed: {e}")))
}
