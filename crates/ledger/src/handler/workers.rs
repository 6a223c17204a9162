//! The workers and shutdown of [`Inner`]: the worker loop, the park/unpark handshake that wakes
//! an idle worker after a push ([`Inner::wake_one`]), and the shutdown that closes the gate,
//! waits for calls in flight, joins the workers and drains the rest.

use std::sync::PoisonError;
use std::time::Duration;

use crossbeam_utils::Backoff;
use txgate_sync::sync::thread::{self, ThreadId};
use txgate_sync::sync::{Ordering, fence};

use super::inner::{CLOSED, Inner, Phase};

/// How long an idle worker sleeps before looking at the backlog again when no `handle` call wakes
/// it (a backstop: enqueuing wakes an idle worker; under loom there is no timeout, so the models
/// check the wake-up alone).
const IDLE_PARK: Duration = Duration::from_millis(5);

impl Inner {
    /// After a push: unparks one parked worker, if any.
    ///
    /// The handshake with a worker going idle (`worker_loop`) is a store-load pair on each side,
    /// made safe by a `SeqCst` fence on each side (C++20 [atomics.fences] and [atomics.order]
    /// p4.4, the rules `std::sync::atomic` follows): this call writes the backlog then reads the
    /// worker's `parked` flag; the worker writes its flag then reads the backlog. Of the two
    /// fences, the one later in the single total order makes its thread see the other thread's
    /// write: either the worker sees this group and does not park, or this call sees the flag and
    /// unparks it. (Fences rather than `SeqCst` accesses: loom models the fences exactly but
    /// treats `SeqCst` loads and stores as `AcqRel`, and the queue's own orderings are not ours
    /// to rely on.) Which parked worker is woken does not matter: a woken worker empties the
    /// backlog before it parks again.
    pub(super) fn wake_one(&self) {
        // SeqCst fence: orders the push before the flag loads below (see above).
        fence(Ordering::SeqCst);
        let Some(slots) = self.slots.get() else {
            return; // no worker: the caller drains
        };
        for slot in slots.iter() {
            // Acquire: pairs with the worker's Release store of the flag, so its `thread`, set
            // before, is visible.
            if slot.parked.load(Ordering::Acquire)
                && let Some(thread) = slot.thread.get()
            {
                thread.unpark();
                return;
            }
        }
    }

    /// `true` on one of this handler's worker threads.
    fn on_worker_thread(&self, me: ThreadId) -> bool {
        self.slots.get().is_some_and(|slots| {
            slots
                .iter()
                .any(|slot| slot.thread.get().is_some_and(|t| t.id() == me))
        })
    }

    /// The gate's latest value: `== CLOSED` once shutdown began and no `handle` call can push
    /// any more; the closed bit with calls in flight while shutdown waits for them.
    fn gate_now(&self) -> usize {
        // Acquire: pairs with the Release exit of each `handle` call, so the push of the last
        // one is visible to the pops that follow. A read-modify-write rather than a load: it
        // reads the last value in the gate's modification order (C++20 [atomics.order] p10),
        // never a stale one. Only idle workers and shutdown's wait run it.
        self.gate.fetch_or(0, Ordering::Acquire)
    }

    pub(super) fn worker_loop(&self, index: usize) {
        let Some(slot) = self.slots.get().and_then(|slots| slots.get(index)) else {
            debug_assert!(false, "worker {index} has no slot");
            return;
        };
        let _ = slot.thread.set(thread::current());
        let backoff = Backoff::new();
        loop {
            if let Some(group) = self.backlog.pop() {
                self.process(group);
                backoff.reset();
                continue;
            }
            if self.gate_now() & CLOSED != 0 {
                // Shutting down: empty what is there and exit. Calls still in flight may push
                // after this; shutdown waits for them and drains the rest itself.
                while let Some(group) = self.backlog.pop() {
                    self.process(group);
                }
                return;
            }
            // Spin a little before parking (outside loom, whose models would only grow).
            if !cfg!(loom) && !backoff.is_completed() {
                backoff.snooze();
                continue;
            }
            // Release: see `wake_one`, whose Acquire load then sees `slot.thread`.
            slot.parked.store(true, Ordering::Release);
            // SeqCst fence: orders the flag store before the backlog read (see `wake_one`).
            fence(Ordering::SeqCst);
            // Shutdown closes the gate before it unparks the workers: a worker that does not see
            // the closed bit here parks and gets that unpark (or has its token already).
            if self.backlog.is_empty() && self.gate_now() & CLOSED == 0 {
                thread::park_timeout(IDLE_PARK);
            }
            // Relaxed: a stale `true` costs one needless unpark; the next loop re-reads the
            // backlog.
            slot.parked.store(false, Ordering::Relaxed);
        }
    }

    pub(super) fn shutdown(&self) {
        // Relaxed: only the RMW's place in the gate's modification order matters (see `gate`);
        // the wait below acquires what in-flight calls did.
        self.gate.fetch_or(CLOSED, Ordering::Relaxed);
        let me = thread::current().id();
        if self.on_worker_thread(me) {
            return; // a sink on a worker: the workers finish the backlog and exit on their own
        }
        {
            let mut phase = self.phase.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                match *phase {
                    Phase::Open => {
                        *phase = Phase::Running(me);
                        break;
                    }
                    // Re-entered from the sink during this thread's own drain below.
                    Phase::Running(runner) if runner == me => return,
                    Phase::Running(_) => {
                        phase = self
                            .phase_done
                            .wait(phase)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                    Phase::Done => return,
                }
            }
        }
        // Marks the shutdown done on every exit, unwinding included, so waiters never hang.
        let _done = ShutdownDone(self);
        // Waits for the calls in flight (their Release exits pair with `gate_now`'s Acquire).
        while self.gate_now() != CLOSED {
            thread::yield_now();
        }
        let workers =
            std::mem::take(&mut *self.workers.lock().unwrap_or_else(PoisonError::into_inner));
        for w in &workers {
            w.thread().unpark();
        }
        for w in workers {
            // A worker only panicked through a handler bug; its remaining share is drained below.
            let _ = w.join();
        }
        while let Some(group) = self.backlog.pop() {
            self.process(group);
        }
    }
}

/// The running shutdown; dropping it marks the shutdown done and wakes the calls waiting for it.
struct ShutdownDone<'a>(&'a Inner);

impl Drop for ShutdownDone<'_> {
    fn drop(&mut self) {
        *self.0.phase.lock().unwrap_or_else(PoisonError::into_inner) = Phase::Done;
        self.0.phase_done.notify_all();
    }
}
