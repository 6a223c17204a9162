//! Memory reclamation for lock-free structures: [seize](https://docs.rs/seize/0.5), or a strict
//! loom stand-in under `cfg(loom)`, or under `cfg(txgate_tsan)` a collector that frees nothing
//! before it drops.
//!
//! A reader enters a [`Guard`] before it loads a shared pointer; a writer that has made an object
//! unreachable hands it to [`Guard::retire_box`] (or [`Guard::retire`]), and the object is freed
//! only once no guard that could have loaded it is alive.
//!
//! # The loom stand-in
//!
//! seize has no loom support, so under `cfg(loom)` this module keeps seize's contract, as eagerly
//! as that contract allows: an object retired while guards `g1..gk` are alive is *poisoned*
//! (recorded as reclaimed) as soon as the last of `g1..gk` is dropped, which is the earliest
//! moment any collector honouring the contract (seize included) may free it. Structures call
//! [`Guard::check`] on every access to a protected object, which panics on a poisoned one, so
//! loom reports every interleaving in which a reader touches memory a real collector could
//! already have freed. Poisoned objects are freed when the collector is dropped (so their
//! addresses are never reused within a model run).
//!
//! The stand-in's bookkeeping sits behind a `std` mutex, not a loom one: loom runs one thread at
//! a time and no loom operation runs while it is held, so it never blocks, and being invisible to
//! loom it adds no happens-before edge between the model's threads (a loom mutex would order
//! every guard entry after every earlier guard exit and hide ordering bugs). What it does model
//! is the barrier pair seize uses on Linux, and only that: entering a guard has no fence of its
//! own (seize's light barrier there is a compiler fence), and a retirement runs seize's heavy
//! barrier, `membarrier`, which executes a full fence in the retiring thread and in every other
//! thread of the process during the system call. The stand-in runs a `SeqCst` fence in the
//! retiring thread, and in each other thread before that thread's next guard entry after the
//! retirement (the latest point at which the barrier's fence can matter to a guard the
//! retirement did not wait for: that guard's loads then see the unlinking that preceded the
//! retirement, C++20 [atomics.order] p4.4). A thread that has not entered a guard since the
//! last retirement gets no fence. seize runs the barrier once per batch of retirements; the
//! stand-in once per retirement, as seize does with a batch of 1.
//!
//! # ThreadSanitizer builds (`--cfg txgate_tsan`)
//!
//! ThreadSanitizer does not model standalone fences, nor the `membarrier` system call, and
//! seize's protocol rests on both: under TSan every hand-over of memory through seize (its own
//! bookkeeping in `Collector::traverse`, and a record freed or recycled by another thread after
//! its last atomic use) is reported as a data race. Built with `--cfg txgate_tsan`, the
//! collector therefore frees nothing while it lives: a retired object goes on a list that the
//! collector's drop reclaims, after every thread that used it has been joined, an order TSan
//! sees. Guards are plain loads then, and object pools recycle only what that drop hands them.
//! What TSan still checks is all of txgate's own synchronization; whether an object is freed
//! too early is for AddressSanitizer, loom and miri. Not for production: memory grows until
//! the collector drops.

//! # Layout
//!
//! One implementation per build, chosen once below, each with the same types and signatures:
//! `seize.rs` (normal builds), `standin.rs` (`cfg(loom)`), `deferred.rs` (`cfg(txgate_tsan)`).

#[cfg(all(txgate_tsan, not(loom)))]
#[path = "deferred.rs"]
mod imp;
#[cfg(not(any(loom, txgate_tsan)))]
#[path = "seize.rs"]
mod imp;
#[cfg(loom)]
#[path = "standin.rs"]
mod imp;

pub use imp::{Collector, Guard};

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Guard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard").finish_non_exhaustive()
    }
}

/// How a retired object of a type is reclaimed (for [`Guard::retire`]); [`Guard::retire_box`]
/// covers the common case of dropping a `Box`.
pub trait Reclaim {
    /// Reclaims an object that no thread can reach any more (drops it, or recycles its memory).
    ///
    /// # Safety
    ///
    /// `ptr` was retired once through [`Guard::retire`], and the collector calls this only when
    /// no guard that could have loaded it is alive: the caller has exclusive access to it.
    unsafe fn reclaim(ptr: *mut Self);
}

#[cfg(debug_assertions)]
static RECLAIMED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Objects reclaimed by every collector of this process so far (debug builds only; tests use it
/// to check that retired objects are really freed). Under loom it counts poisonings.
#[cfg(debug_assertions)]
pub fn reclaimed() -> u64 {
    // Relaxed: a statistic; no memory is published through it.
    RECLAIMED.load(std::sync::atomic::Ordering::Relaxed)
}

#[inline]
fn count_reclaimed() {
    #[cfg(debug_assertions)]
    // Relaxed: a statistic; no memory is published through it.
    RECLAIMED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Reclaimers of objects whose type is erased, for the collectors that keep retired objects
/// themselves (the loom stand-in and the `txgate_tsan` list).
#[cfg(any(loom, txgate_tsan))]
mod erased {
    use super::Reclaim;

    /// # Safety
    ///
    /// `ptr` came from `Box::<T>::into_raw` and nothing else can reach it.
    pub(super) unsafe fn drop_box<T>(ptr: *mut ()) {
        // SAFETY: the function's contract.
        drop(unsafe { Box::from_raw(ptr.cast::<T>()) });
    }

    /// # Safety
    ///
    /// As [`Reclaim::reclaim`] for `ptr` as a `*mut T`.
    pub(super) unsafe fn reclaim_with<T: Reclaim>(ptr: *mut ()) {
        // SAFETY: the function's contract.
        unsafe { T::reclaim(ptr.cast::<T>()) };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct Counted(std::sync::Arc<std::sync::atomic::AtomicUsize>);

    impl Reclaim for Counted {
        unsafe fn reclaim(ptr: *mut Self) {
            // SAFETY: the trait's contract: exclusive access to a `Box`ed object.
            let b = unsafe { Box::from_raw(ptr) };
            b.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    #[test]
    #[cfg(not(txgate_tsan))]
    fn retired_objects_are_reclaimed_after_their_guards() {
        let freed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let collector = Collector::new(4);
        for _ in 0..64 {
            let guard = collector.enter();
            let p = Box::into_raw(Box::new(Counted(freed.clone())));
            // SAFETY: never published, retired once.
            unsafe { guard.retire(p) };
        }
        // Batches of 4 (2 under Miri) are reclaimed once the retiring guard is gone.
        assert!(freed.load(std::sync::atomic::Ordering::Relaxed) >= 60);
        drop(collector);
        assert_eq!(freed.load(std::sync::atomic::Ordering::Relaxed), 64);
    }

    /// `txgate_tsan`: nothing is reclaimed while the collector lives, everything when it drops,
    /// objects retired on other threads included.
    #[test]
    #[cfg(txgate_tsan)]
    fn retired_objects_are_reclaimed_when_the_collector_drops() {
        let freed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let collector = Collector::new(4);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..16 {
                        let guard = collector.enter();
                        let p = Box::into_raw(Box::new(Counted(freed.clone())));
                        // SAFETY: never published, retired once.
                        unsafe { guard.retire(p) };
                    }
                });
            }
        });
        assert_eq!(freed.load(std::sync::atomic::Ordering::Relaxed), 0);
        drop(collector);
        assert_eq!(freed.load(std::sync::atomic::Ordering::Relaxed), 64);
    }
}
