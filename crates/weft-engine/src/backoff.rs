//! Pauses between attempts (`failure.retry.backoff`, DIGEST §1.16; the formulas are a GAP
//! there, decided here and in `docs/engine.md`) and the [`Sleeper`] that carries them out.
//!
//! For the pause after failed attempt `n` (1-based), with `i = initial_delay_seconds` and
//! `m = max_delay_seconds`: `none` → 0; `fixed` → `i`; `linear` → `i × n`; `exponential`
//! → `i × 2^(n−1)`; always capped at `m`. With `jitter: true` the pause is drawn uniformly
//! in `[0, delay]` ("full jitter") from a splitmix64 generator seeded by FNV-1a of
//! `run id / node id / n`, so a replay of the same run computes the same pause.

use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The growth of the pause between attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackoffKind {
    None,
    Fixed,
    Linear,
    Exponential,
}

/// A node's `retry` pause policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    pub kind: BackoffKind,
    /// Seconds.
    pub initial: f64,
    /// Seconds.
    pub max: f64,
    pub jitter: bool,
}

impl Default for Backoff {
    /// The AGS defaults: exponential, 2 s, at most 60 s, jitter.
    fn default() -> Self {
        Backoff {
            kind: BackoffKind::Exponential,
            initial: 2.0,
            max: 60.0,
            jitter: true,
        }
    }
}

fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Backoff {
    /// The pause before the attempt that follows failed attempt `failed` (1-based).
    pub fn delay(&self, run_id: &str, node: &str, failed: u32) -> Duration {
        let n = f64::from(failed.max(1));
        let base = match self.kind {
            BackoffKind::None => 0.0,
            BackoffKind::Fixed => self.initial,
            BackoffKind::Linear => self.initial * n,
            BackoffKind::Exponential => self.initial * 2f64.powf(n - 1.0),
        };
        let mut secs = base.min(self.max).max(0.0);
        if !secs.is_finite() {
            secs = self.max.max(0.0);
        }
        if self.jitter {
            let r = splitmix64(fnv1a(&format!("{run_id}/{node}/{failed}")));
            // 53 random bits → a fraction in [0, 1].
            #[allow(clippy::cast_precision_loss, reason = "53 bits fit an f64 exactly")]
            let fraction = (r >> 11) as f64 / ((1u64 << 53) - 1) as f64;
            secs *= fraction;
        }
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::ZERO)
    }
}

// The pause's vocabulary is the clock port's (every clock is a sleeper); named here too,
// where the pauses between attempts are computed.
pub use crate::clock::{SleepFuture, Sleeper};

/// Longest real pause between attempts: a computed delay above it is cut to it.
pub const MAX_REAL_DELAY: Duration = Duration::from_secs(300);

/// The real sleeper: the system clock's ([`crate::clock::SystemClock`]), capped at
/// [`MAX_REAL_DELAY`].
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, delay: Duration) -> SleepFuture {
        crate::clock::SystemClock.sleep(delay.min(MAX_REAL_DELAY))
    }
}

/// Test double: records every requested pause and returns at once.
#[derive(Clone, Debug, Default)]
pub struct RecordingSleeper {
    requested: Arc<Mutex<Vec<Duration>>>,
}

impl RecordingSleeper {
    /// The pauses asked for so far, in order.
    pub fn requested(&self) -> Vec<Duration> {
        self.requested.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl Sleeper for RecordingSleeper {
    fn sleep(&self, delay: Duration) -> SleepFuture {
        if let Ok(mut v) = self.requested.lock() {
            v.push(delay);
        }
        Box::pin(async {})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(kind: BackoffKind, jitter: bool) -> Backoff {
        Backoff {
            kind,
            initial: 2.0,
            max: 10.0,
            jitter,
        }
    }

    #[test]
    fn the_formulas_grow_and_cap() {
        let secs = |k, n| b(k, false).delay("r", "a", n).as_secs_f64();
        assert_eq!(
            (1..=4)
                .map(|n| secs(BackoffKind::Exponential, n))
                .collect::<Vec<_>>(),
            [2.0, 4.0, 8.0, 10.0]
        );
        assert_eq!(secs(BackoffKind::Linear, 3), 6.0);
        assert_eq!(secs(BackoffKind::Fixed, 5), 2.0);
        assert_eq!(secs(BackoffKind::None, 5), 0.0);
        assert_eq!(secs(BackoffKind::Exponential, 2000), 10.0);
    }

    #[test]
    fn jitter_is_deterministic_and_bounded() {
        let j = b(BackoffKind::Exponential, true);
        for n in 1..20 {
            let d = j.delay("run-1", "a", n);
            assert_eq!(d, j.delay("run-1", "a", n));
            assert!(d <= b(BackoffKind::Exponential, false).delay("run-1", "a", n));
        }
        let all: Vec<Duration> = (0..8)
            .map(|i| j.delay(&format!("run-{i}"), "a", 3))
            .collect();
        assert!(all.iter().any(|d| *d != all[0]), "{all:?}");
    }
}
