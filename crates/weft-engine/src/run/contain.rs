//! A panic inside one node attempt stays inside that attempt.
//!
//! weft runs what untrusted providers and tools send back through parsers and agents; a
//! bug that panics on one of those answers must fail the attempt that met it (a classified
//! failure with the panic as evidence, entering the node's failure ladder like any other),
//! never the run's task, which would leave the run `running` with no final status.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// Polls `F`, turning a panic during any poll into `Err(message)`.
pub(super) struct Contained<F> {
    inner: Pin<Box<F>>,
}

impl<F: Future> Contained<F> {
    pub(super) fn new(inner: F) -> Self {
        Contained {
            inner: Box::pin(inner),
        }
    }
}

impl<F: Future> Future for Contained<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Unwind safety: after a panic the inner future is never polled again (the
        // attempt's result is the failure), so no broken invariant of it is observed.
        let inner = self.inner.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(out)) => Poll::Ready(Ok(out)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(payload.as_ref()))),
        }
    }
}

/// The text a panic carried (`panic!("…")` payloads are `&str` or `String`).
pub(super) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with no message".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_in_a_poll_becomes_an_error_and_a_value_passes_through() {
        let ok = Contained::new(async { 7 }).await;
        assert_eq!(ok, Ok(7));
        fn strict(header: &str) -> u8 {
            header
                .parse()
                .unwrap_or_else(|_| panic!("parser met {header}"))
        }
        let boom = Contained::new(async {
            tokio::task::yield_now().await;
            strict("1e300")
        })
        .await;
        assert_eq!(boom, Err("parser met 1e300".to_string()));
    }
}
