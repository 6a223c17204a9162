//! The synchronization primitives txgate shares between threads: `std`'s, or loom's
//! model-checked ones under `cfg(loom)`.
//!
//! Every word that txgate's threads coordinate through goes through this module, so that
//! `--cfg loom` explores every interleaving of them (tokio's `loom` module and crossbeam-epoch's
//! `primitive` module follow the same pattern).

#[cfg(loom)]
pub use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(loom)]
pub use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(not(loom))]
pub use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Threads: `std::thread`, or `loom::thread` under `cfg(loom)`.
pub mod thread {
    #[cfg(loom)]
    pub use loom::thread::{
        Builder, JoinHandle, Thread, ThreadId, current, park, spawn, yield_now,
    };
    #[cfg(not(loom))]
    pub use std::thread::{Builder, JoinHandle, Thread, ThreadId, current, park, spawn, yield_now};

    /// Blocks the current thread until it is unparked or, outside loom, until `timeout` has
    /// passed (`std::thread::park_timeout`; spurious wake-ups are possible, so callers re-check
    /// their condition in a loop).
    ///
    /// Under loom this is `loom::thread::park`, which has no timeout: a model whose threads rely
    /// on the timeout to make progress ends in loom's deadlock report, so a park/unpark handshake
    /// is checked on its own, without the backstop.
    #[inline]
    pub fn park_timeout(timeout: std::time::Duration) {
        #[cfg(loom)]
        {
            let _ = timeout;
            loom::thread::park();
        }
        #[cfg(not(loom))]
        std::thread::park_timeout(timeout);
    }
}

/// A hint that the caller is spinning on a value another thread will change: `std`'s
/// `spin_loop` hint, or a loom yield (a spinning loom thread must let the others run).
#[inline]
pub fn spin_loop() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

/// A small number for the calling thread, stable for its lifetime: threads are numbered
/// 0, 1, 2, ... in the order they first call this. For striping counters across cache lines
/// (take it modulo the stripe count); it identifies nothing (numbers of exited threads are not
/// reused, and they wrap after `usize::MAX` threads). Always 0 under loom, whose threads share
/// one OS thread's thread-locals.
///
/// # Examples
///
/// ```
/// let stripe = txgate_sync::sync::thread_index() % 16;
/// assert_eq!(stripe, txgate_sync::sync::thread_index() % 16);
/// ```
#[inline]
pub fn thread_index() -> usize {
    #[cfg(loom)]
    {
        0
    }
    #[cfg(not(loom))]
    {
        use std::cell::Cell;
        use std::sync::atomic::{AtomicUsize, Ordering};

        /// The next number to hand out.
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        std::thread_local! {
            /// This thread's number, `usize::MAX` until its first call.
            static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
        }
        INDEX.with(|index| {
            let mut i = index.get();
            if i == usize::MAX {
                // Relaxed: only uniqueness matters, which the RMW gives; nothing is published.
                i = NEXT.fetch_add(1, Ordering::Relaxed) % (usize::MAX - 1);
                index.set(i);
            }
            i
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    fn thread_index_is_stable_and_differs_between_threads() {
        let here = super::thread_index();
        assert_eq!(here, super::thread_index());
        let there = std::thread::spawn(super::thread_index).join().unwrap();
        assert_ne!(here, there);
    }
}
