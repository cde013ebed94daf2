//! [`WhenWoken`]: a future polled only once something it waits for woke it.
//!
//! A run's top future is `LocalSet::run_until`'s, and the local set polls it each time
//! any of its tasks is woken, not only when the future itself was: hundreds of times
//! per run, each a pass through the run's `select!` of a stop signal, every client's
//! join handle and the horizon's sleep. Skipping the passes nothing woke changes no
//! outcome (a pass that was not woken finds nothing ready and only registers wakers
//! again) and saved a measurable share of every run.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use parking_lot::Mutex;

/// `future`, polled on its first poll and then only after its own waker was woken.
pub(crate) struct WhenWoken<F> {
    future: Pin<Box<F>>,
    signal: Arc<Signal>,
    waker: Waker,
}

/// Whether the inner future was woken since it was last polled, and whom to wake then.
struct Signal {
    woken: AtomicBool,
    outer: Mutex<Option<Waker>>,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        if let Some(outer) = self.outer.lock().as_ref() {
            outer.wake_by_ref();
        }
    }
}

impl<F: Future> WhenWoken<F> {
    pub(crate) fn new(future: F) -> Self {
        let signal = Arc::new(Signal {
            woken: AtomicBool::new(true),
            outer: Mutex::new(None),
        });
        Self {
            future: Box::pin(future),
            waker: Waker::from(signal.clone()),
            signal,
        }
    }
}

impl<F: Future> Future for WhenWoken<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        {
            let mut outer = this.signal.outer.lock();
            if !outer.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *outer = Some(cx.waker().clone());
            }
        }
        if !this.signal.woken.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        this.future
            .as_mut()
            .poll(&mut Context::from_waker(&this.waker))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;
    use std::time::Duration;

    use super::*;

    /// Counts its polls and never ends.
    struct Counting(Rc<Cell<u32>>);

    impl Future for Counting {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            self.0.set(self.0.get() + 1);
            Poll::Pending
        }
    }

    #[test]
    fn the_inner_future_is_polled_first_and_then_only_once_woken() {
        let polls = Rc::new(Cell::new(0));
        let mut future = Box::pin(WhenWoken::new(Counting(polls.clone())));
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..3 {
            assert!(future.as_mut().poll(&mut cx).is_pending());
        }
        assert_eq!(polls.get(), 1);
        future.waker.wake_by_ref();
        for _ in 0..3 {
            assert!(future.as_mut().poll(&mut cx).is_pending());
        }
        assert_eq!(polls.get(), 2);
    }

    #[test]
    fn a_timer_inside_still_ends_the_wait() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime");
        let slept = runtime.block_on(WhenWoken::new(async {
            let start = tokio::time::Instant::now();
            tokio::time::sleep(Duration::from_millis(250)).await;
            start.elapsed()
        }));
        assert_eq!(slept, Duration::from_millis(250));
    }
}
