//! The clock port: every time the engine reads or waits for goes through a [`Clock`] in the
//! run's options ([`crate::RunOptions::clock`]) — events' timestamps, retries' pauses,
//! attempts' time limits, budgets' wall clock, people's deadlines, the run's lease and its
//! renewal. [`SystemClock`] is the real one; [`TestClock`] is moved by hand, so tests of
//! time-dependent behaviour finish at once in wall time while the run sees minutes pass.
//!
//! This module is the only place in the engine that reads the system time or sleeps on
//! tokio's timer: `scripts/check-layering.sh` fails on `SystemTime::now`, `Instant::now`
//! or `tokio::time::{sleep, timeout, interval}` anywhere else in `weft-engine/src` (a line
//! may opt out with a `clock-exempt:` comment saying why).

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};

/// A boxed pause.
pub type SleepFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Carries out pauses: a [`Clock`]'s waits, and the pauses between attempts
/// ([`crate::backoff`]). The engine uses [`crate::backoff::TokioSleeper`]; tests use
/// [`crate::backoff::RecordingSleeper`] or a [`TestClock`], so they never sleep for real.
pub trait Sleeper: Send + Sync + fmt::Debug {
    fn sleep(&self, delay: Duration) -> SleepFuture;
}

/// Time as the engine sees it: the current time, and pauses measured in it
/// ([`Sleeper::sleep`]).
pub trait Clock: Sleeper {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system's clock and tokio's timer.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Sleeper for SystemClock {
    fn sleep(&self, delay: Duration) -> SleepFuture {
        Box::pin(tokio::time::sleep(delay))
    }
}

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// `work`, unless `limit` passes first on `clock` (`None` then; `work` is dropped).
pub async fn within<F: Future>(clock: &dyn Clock, limit: Duration, work: F) -> Option<F::Output> {
    let deadline = clock.sleep(limit);
    tokio::select! {
        biased;
        out = work => Some(out),
        () = deadline => None,
    }
}

/// A clock that moves only when told ([`TestClock::advance`], [`TestClock::set`],
/// [`TestClock::advance_to_next`]). A sleep is registered when it is asked for and ends
/// when the clock reaches its deadline; nothing waits on real time.
#[derive(Clone, Debug)]
pub struct TestClock {
    state: Arc<Mutex<TestState>>,
    /// Woken whenever a sleep is registered ([`TestClock::advance_to_next`]).
    registered: Arc<Notify>,
}

#[derive(Debug, Default)]
struct TestState {
    now_ms: i64,
    /// Pending sleeps by (deadline, registration number).
    sleeps: BTreeMap<(i64, u64), oneshot::Sender<()>>,
    registrations: u64,
}

impl TestState {
    /// Drops sleeps nobody waits for any more (a time limit its work beat).
    fn prune(&mut self) {
        self.sleeps.retain(|_, tx| !tx.is_closed());
    }

    /// Ends every sleep due at the current time.
    fn wake_due(&mut self) {
        let later = self.sleeps.split_off(&(self.now_ms.saturating_add(1), 0));
        for (_, tx) in std::mem::replace(&mut self.sleeps, later) {
            // A dropped sleep is no error.
            let _ = tx.send(());
        }
    }
}

impl TestClock {
    /// A clock at `now_ms`.
    pub fn at(now_ms: i64) -> TestClock {
        TestClock {
            state: Arc::new(Mutex::new(TestState {
                now_ms,
                ..TestState::default()
            })),
            registered: Arc::new(Notify::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TestState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves the clock forward by `by`, ending the sleeps that are then due.
    pub fn advance(&self, by: Duration) {
        let mut state = self.lock();
        let by = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        state.now_ms = state.now_ms.saturating_add(by);
        state.wake_due();
    }

    /// Sets the clock to `now_ms` (never backwards), ending the sleeps then due.
    pub fn set(&self, now_ms: i64) {
        let mut state = self.lock();
        state.now_ms = state.now_ms.max(now_ms);
        state.wake_due();
    }

    /// How many sleeps are waited on now.
    pub fn pending_sleeps(&self) -> usize {
        let mut state = self.lock();
        state.prune();
        state.sleeps.len()
    }

    /// The earliest deadline a sleep waits for.
    pub fn next_deadline(&self) -> Option<i64> {
        let mut state = self.lock();
        state.prune();
        state.sleeps.keys().next().map(|&(deadline, _)| deadline)
    }

    /// Waits until something sleeps on this clock, then moves the clock to the earliest
    /// deadline (ending that sleep and any due with it) and returns the time it moved to.
    /// A test drives a run through its pauses with it, in no wall time.
    pub async fn advance_to_next(&self) -> i64 {
        self.advance_to_next_within(Duration::MAX).await
    }

    /// [`TestClock::advance_to_next`], for a sleep that ends within `horizon` of now only:
    /// sleeps further away (a lease's renewal timer) are left waiting, so a test moves
    /// time through a run's own pauses and not past them.
    pub async fn advance_to_next_within(&self, horizon: Duration) -> i64 {
        let horizon = i64::try_from(horizon.as_millis()).unwrap_or(i64::MAX);
        loop {
            let registered = self.registered.notified();
            let now = self.now_ms();
            if let Some(deadline) = self
                .next_deadline()
                .filter(|d| *d <= now.saturating_add(horizon))
            {
                self.set(deadline);
                return deadline;
            }
            registered.await;
        }
    }
}

impl Sleeper for TestClock {
    fn sleep(&self, delay: Duration) -> SleepFuture {
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.lock();
            let delay = i64::try_from(delay.as_millis()).unwrap_or(i64::MAX);
            let deadline = state.now_ms.saturating_add(delay);
            if deadline <= state.now_ms {
                return Box::pin(async {});
            }
            state.registrations += 1;
            let n = state.registrations;
            state.sleeps.insert((deadline, n), tx);
        }
        self.registered.notify_waiters();
        Box::pin(async move {
            // A dropped clock ends the sleep rather than hanging it.
            let _ = rx.await;
        })
    }
}

impl Clock for TestClock {
    fn now_ms(&self) -> i64 {
        self.lock().now_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_test_clock_sleep_ends_when_the_clock_reaches_it() {
        let clock = TestClock::at(1_000);
        let mut sleep = clock.sleep(Duration::from_secs(5));
        assert_eq!(clock.pending_sleeps(), 1);
        assert_eq!(clock.next_deadline(), Some(6_000));
        clock.advance(Duration::from_secs(4));
        assert!(futures_poll_once(&mut sleep).is_pending());
        clock.advance(Duration::from_secs(1));
        assert!(futures_poll_once(&mut sleep).is_ready());
        assert_eq!(clock.now_ms(), 6_000);
        assert_eq!(clock.pending_sleeps(), 0);
    }

    #[tokio::test]
    async fn within_times_out_on_the_test_clock_only() {
        let clock = TestClock::at(0);
        let stepper = clock.clone();
        let never = std::future::pending::<()>();
        let (out, moved) = tokio::join!(
            within(&clock, Duration::from_secs(300), never),
            stepper.advance_to_next()
        );
        assert_eq!(out, None);
        assert_eq!(moved, 300_000);
        let ready = within(&clock, Duration::from_secs(1), async { 7 }).await;
        assert_eq!(ready, Some(7));
        // The lost race left no sleep behind.
        assert_eq!(clock.pending_sleeps(), 0);
    }

    fn futures_poll_once(f: &mut SleepFuture) -> std::task::Poll<()> {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        f.as_mut().poll(&mut cx)
    }
}
