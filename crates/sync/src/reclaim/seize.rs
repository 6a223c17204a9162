//! The collector of normal builds: [seize](https://docs.rs/seize/0.5).

use super::{Reclaim, count_reclaimed};
use crate::sync::{AtomicPtr, Ordering};
use seize::Guard as _;

/// Frees retired objects once no guard that could have loaded them is alive.
pub struct Collector {
    inner: seize::Collector,
}

/// Marks the current thread active: objects loaded through it stay allocated while it lives.
/// Not `Send`: a guard belongs to the thread that entered it.
pub struct Guard<'c> {
    inner: seize::LocalGuard<'c>,
}

/// seize's reclaimer for a retired `Box<T>`.
///
/// # Safety
///
/// `ptr` came from `Box::into_raw`, was retired once, and no thread can reach it (seize calls
/// this only then).
unsafe fn drop_box<T>(ptr: *mut T, _collector: &seize::Collector) {
    // SAFETY: by this function's contract the box is ours alone to drop.
    drop(unsafe { Box::from_raw(ptr) });
    count_reclaimed();
}

/// seize's reclaimer for a retired `T: Reclaim`.
///
/// # Safety
///
/// As [`Reclaim::reclaim`].
unsafe fn reclaim_with<T: Reclaim>(ptr: *mut T, _collector: &seize::Collector) {
    // SAFETY: forwarded contract.
    unsafe { T::reclaim(ptr) };
    count_reclaimed();
}

impl Collector {
    /// A collector that hands retired objects to reclamation in batches of `batch_size` per
    /// thread (seize's batch: bigger batches amortize its barrier, a `membarrier` system call on
    /// Linux, over more retirements, and keep more memory waiting). Under Miri the batch is 2, so
    /// that small tests really reclaim.
    pub fn new(batch_size: usize) -> Self {
        let batch = if cfg!(miri) { 2 } else { batch_size.max(1) };
        Self {
            inner: seize::Collector::new().batch_size(batch),
        }
    }

    /// Enters a read-side critical section (nested guards of one thread are cheap: only the
    /// outermost one registers).
    #[inline]
    pub fn enter(&self) -> Guard<'_> {
        Guard {
            inner: self.inner.enter(),
        }
    }
}

impl Guard<'_> {
    /// Loads `ptr` with `order` (seize strengthens it as its barrier scheme needs); the object
    /// loaded stays allocated for the guard's lifetime.
    #[inline]
    pub fn protect<T>(&self, ptr: &AtomicPtr<T>, order: Ordering) -> *mut T {
        self.inner.protect(ptr, order)
    }

    /// A small number identifying the current thread among the collector's threads (seize's
    /// thread id, reused after a thread exits; always 0 under loom; under `txgate_tsan`
    /// [`thread_index`](crate::sync::thread_index)), for striping counters.
    #[inline]
    pub fn thread_id(&self) -> usize {
        self.inner.thread_id()
    }

    /// Checks that `ptr`, loaded through this guard, is still allocated: under loom, panics if
    /// the stand-in has poisoned it (a real collector could have freed it); otherwise a no-op.
    #[inline]
    pub fn check<T>(&self, ptr: *const T) {
        let _ = ptr;
    }

    /// Hands an object that came from `Box::into_raw` to the collector, which drops the box once
    /// no guard can reach it (never before this guard is dropped).
    ///
    /// # Safety
    ///
    /// 1. `ptr` came from `Box::into_raw` and is retired at most once.
    /// 2. `ptr` is no longer reachable: no thread that enters a guard after this call can load it.
    #[inline]
    pub unsafe fn retire_box<T>(&self, ptr: *mut T) {
        // SAFETY: (1) and (2) are seize's `defer_retire` contract; `drop_box` matches the `Box`
        // allocation of (1).
        unsafe { self.inner.defer_retire(ptr, drop_box::<T>) };
    }

    /// Hands an unreachable object to the collector, which calls [`Reclaim::reclaim`] on it once
    /// no guard can reach it (never before this guard is dropped).
    ///
    /// # Safety
    ///
    /// 1. `ptr` is retired at most once, and `T::reclaim` may be called on it.
    /// 2. `ptr` is no longer reachable: no thread that enters a guard after this call can load it.
    #[inline]
    pub unsafe fn retire<T: Reclaim>(&self, ptr: *mut T) {
        // SAFETY: (1) and (2) are seize's `defer_retire` contract for `reclaim_with::<T>`.
        unsafe { self.inner.defer_retire(ptr, reclaim_with::<T>) };
    }
}
