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

use crate::sync::{AtomicPtr, Ordering};

/// Frees retired objects once no guard that could have loaded them is alive.
pub struct Collector {
    #[cfg(not(any(loom, txgate_tsan)))]
    inner: seize::Collector,
    #[cfg(loom)]
    inner: std::sync::Mutex<standin::State>,
    #[cfg(all(txgate_tsan, not(loom)))]
    inner: deferred::List,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector").finish_non_exhaustive()
    }
}

/// Marks the current thread active: objects loaded through it stay allocated while it lives.
/// Not `Send`: a guard belongs to the thread that entered it.
pub struct Guard<'c> {
    #[cfg(not(any(loom, txgate_tsan)))]
    inner: seize::LocalGuard<'c>,
    #[cfg(any(loom, txgate_tsan))]
    collector: &'c Collector,
    /// This guard's id in the stand-in's bookkeeping.
    #[cfg(loom)]
    id: u64,
    #[cfg(any(loom, txgate_tsan))]
    _not_send: std::marker::PhantomData<*mut ()>,
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

/// seize's reclaimer for a retired `Box<T>`.
///
/// # Safety
///
/// `ptr` came from `Box::into_raw`, was retired once, and no thread can reach it (seize calls
/// this only then).
#[cfg(not(any(loom, txgate_tsan)))]
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
#[cfg(not(any(loom, txgate_tsan)))]
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
        #[cfg(not(any(loom, txgate_tsan)))]
        {
            let batch = if cfg!(miri) { 2 } else { batch_size.max(1) };
            Self {
                inner: seize::Collector::new().batch_size(batch),
            }
        }
        #[cfg(loom)]
        {
            let _ = batch_size;
            Self {
                inner: std::sync::Mutex::new(standin::State::default()),
            }
        }
        #[cfg(all(txgate_tsan, not(loom)))]
        {
            let _ = batch_size;
            Self {
                inner: deferred::List::default(),
            }
        }
    }

    /// Enters a read-side critical section (nested guards of one thread are cheap: only the
    /// outermost one registers).
    #[inline]
    pub fn enter(&self) -> Guard<'_> {
        #[cfg(not(any(loom, txgate_tsan)))]
        {
            Guard {
                inner: self.inner.enter(),
            }
        }
        #[cfg(loom)]
        {
            let mut state = self.state();
            let id = state.next_id;
            state.next_id += 1;
            state.active.push(id);
            // The fence `membarrier` ran in this thread if a retirement came since this thread
            // last had one (module docs).
            let me = loom::thread::current().id();
            let barriers = state.barriers;
            let due = state.fenced.insert(me, barriers) != Some(barriers);
            drop(state);
            if due {
                // SeqCst fence, as the one seize's retirement barrier runs in this thread: a
                // retirement whose snapshot of the active guards missed this guard came earlier
                // in the SeqCst order, so this guard's loads see the unlinking that preceded it
                // (C++20 [atomics.order] p4.4 with the fence in `standin_retire`).
                crate::sync::fence(Ordering::SeqCst);
            }
            Guard {
                collector: self,
                id,
                _not_send: std::marker::PhantomData,
            }
        }
        #[cfg(all(txgate_tsan, not(loom)))]
        {
            Guard {
                collector: self,
                _not_send: std::marker::PhantomData,
            }
        }
    }
}

impl Guard<'_> {
    /// Loads `ptr` with `order` (seize strengthens it as its barrier scheme needs); the object
    /// loaded stays allocated for the guard's lifetime.
    #[inline]
    pub fn protect<T>(&self, ptr: &AtomicPtr<T>, order: Ordering) -> *mut T {
        #[cfg(not(any(loom, txgate_tsan)))]
        {
            use seize::Guard as _;
            self.inner.protect(ptr, order)
        }
        #[cfg(any(loom, txgate_tsan))]
        {
            ptr.load(order)
        }
    }

    /// A small number identifying the current thread among the collector's threads (seize's
    /// thread id, reused after a thread exits; always 0 under loom; under `txgate_tsan`
    /// [`thread_index`](crate::sync::thread_index)), for striping counters.
    #[inline]
    pub fn thread_id(&self) -> usize {
        #[cfg(not(any(loom, txgate_tsan)))]
        {
            use seize::Guard as _;
            self.inner.thread_id()
        }
        #[cfg(loom)]
        {
            0
        }
        #[cfg(all(txgate_tsan, not(loom)))]
        {
            crate::sync::thread_index()
        }
    }

    /// Checks that `ptr`, loaded through this guard, is still allocated: under loom, panics if
    /// the stand-in has poisoned it (a real collector could have freed it); otherwise a no-op.
    #[inline]
    pub fn check<T>(&self, ptr: *const T) {
        #[cfg(loom)]
        {
            let poisoned = self.collector.state().poisoned.contains(&ptr.addr());
            assert!(
                !poisoned,
                "touched an object after reclamation could have freed it"
            );
        }
        #[cfg(not(loom))]
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
        #[cfg(not(any(loom, txgate_tsan)))]
        {
            use seize::Guard as _;
            // SAFETY: (1) and (2) are seize's `defer_retire` contract; `drop_box` matches the
            // `Box` allocation of (1).
            unsafe { self.inner.defer_retire(ptr, drop_box::<T>) };
        }
        #[cfg(loom)]
        self.standin_retire(ptr.cast(), erased::drop_box::<T>);
        #[cfg(all(txgate_tsan, not(loom)))]
        self.collector.inner.push(ptr.cast(), erased::drop_box::<T>);
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
        #[cfg(not(any(loom, txgate_tsan)))]
        {
            use seize::Guard as _;
            // SAFETY: (1) and (2) are seize's `defer_retire` contract for `reclaim_with::<T>`.
            unsafe { self.inner.defer_retire(ptr, reclaim_with::<T>) };
        }
        #[cfg(loom)]
        self.standin_retire(ptr.cast(), erased::reclaim_with::<T>);
        #[cfg(all(txgate_tsan, not(loom)))]
        self.collector
            .inner
            .push(ptr.cast(), erased::reclaim_with::<T>);
    }

    #[cfg(loom)]
    fn standin_retire(&self, ptr: *mut (), reclaim: unsafe fn(*mut ())) {
        // SeqCst fence, as seize's retirement barrier in this thread: pairs with the fence it
        // runs in every other thread (modelled in `enter`).
        crate::sync::fence(Ordering::SeqCst);
        let mut state = self.collector.state();
        state.barriers += 1;
        let barriers = state.barriers;
        state.fenced.insert(loom::thread::current().id(), barriers);
        // Every guard alive now may hold the object; guards entered later cannot load it
        // (precondition 2), so only these are waited for.
        let waiting = state.active.clone();
        state
            .retired
            .push((standin::Retired { ptr, reclaim }, waiting));
    }
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

/// The `txgate_tsan` collector's list of retired objects, reclaimed when it drops.
#[cfg(all(txgate_tsan, not(loom)))]
mod deferred {
    use std::ptr;
    use std::sync::atomic::{AtomicPtr, Ordering};

    /// A retired object, how to reclaim it, and the next one on the list.
    struct Retired {
        ptr: *mut (),
        reclaim: unsafe fn(*mut ()),
        next: *mut Retired,
    }

    /// A stack of retired objects, pushed by any thread, popped only by its drop.
    #[derive(Default)]
    pub(super) struct List {
        head: AtomicPtr<Retired>,
    }

    impl List {
        /// Keeps `ptr` until the list drops, which reclaims it with `reclaim`.
        pub(super) fn push(&self, ptr: *mut (), reclaim: unsafe fn(*mut ())) {
            let entry = Box::into_raw(Box::new(Retired {
                ptr,
                reclaim,
                next: ptr::null_mut(),
            }));
            // Relaxed, the load and the compare-and-swap: the list is read only by its drop
            // (`&mut self`), which every pushing thread's use of the collector happens before
            // (the thread ended, or handed the collector over). No edge between pushing threads,
            // so that TSan sees only the synchronization of the structures' own code.
            let mut head = self.head.load(Ordering::Relaxed);
            loop {
                // SAFETY: `entry` is ours until the compare-and-swap below publishes it.
                unsafe { (*entry).next = head };
                match self.head.compare_exchange_weak(
                    head,
                    entry,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return,
                    Err(now) => head = now,
                }
            }
        }
    }

    impl Drop for List {
        fn drop(&mut self) {
            let mut next = *self.head.get_mut();
            while !next.is_null() {
                // SAFETY: every entry came from `Box::into_raw` in `push` and is popped once,
                // here, with `&mut self`.
                let entry = unsafe { Box::from_raw(next) };
                next = entry.next;
                // SAFETY: the object was retired once, with its own reclaimer; no guard of this
                // collector is alive (`&mut self`), so nothing can reach it.
                unsafe { (entry.reclaim)(entry.ptr) };
                super::count_reclaimed();
            }
        }
    }
}

#[cfg(loom)]
mod standin {
    use std::collections::{HashMap, HashSet};

    /// A retired object and how to reclaim it; the stand-in owns it.
    pub(super) struct Retired {
        pub(super) ptr: *mut (),
        pub(super) reclaim: unsafe fn(*mut ()),
    }

    // SAFETY: a retired object is owned by the collector alone (its structure made it
    // unreachable and gave up the pointer), and the structures retire only `Send` objects.
    unsafe impl Send for Retired {}

    #[derive(Default)]
    pub(super) struct State {
        /// Retirement barriers run so far.
        pub(super) barriers: u64,
        /// Per thread, the count of barriers whose fence it has run (module docs).
        pub(super) fenced: HashMap<loom::thread::ThreadId, u64>,
        /// The id of the next guard.
        pub(super) next_id: u64,
        /// Ids of the guards alive now.
        pub(super) active: Vec<u64>,
        /// Retired objects, each with the ids of the guards that were alive when it was retired
        /// and still are.
        pub(super) retired: Vec<(Retired, Vec<u64>)>,
        /// Retired objects no guard can reach: poisoned, reclaimed when the collector drops.
        pub(super) reclaimed: Vec<Retired>,
        /// Addresses of the poisoned objects.
        pub(super) poisoned: HashSet<usize>,
    }
}

#[cfg(loom)]
impl Collector {
    /// The stand-in's bookkeeping (a panic elsewhere in a model must not poison it for the
    /// guards that drop while it unwinds).
    fn state(&self) -> std::sync::MutexGuard<'_, standin::State> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(loom)]
impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let mut state = self.collector.state();
        let id = self.id;
        state.active.retain(|&g| g != id);
        let retired = std::mem::take(&mut state.retired);
        for (object, mut waiting) in retired {
            waiting.retain(|&g| g != id);
            if waiting.is_empty() {
                // No guard that could have loaded the object is alive: a collector may free it
                // now.
                state.poisoned.insert(object.ptr.addr());
                state.reclaimed.push(object);
                count_reclaimed();
            } else {
                state.retired.push((object, waiting));
            }
        }
    }
}

#[cfg(loom)]
impl Drop for Collector {
    fn drop(&mut self) {
        let state = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        let retired = state.retired.drain(..).map(|(object, _)| object);
        for object in retired.chain(state.reclaimed.drain(..)) {
            // SAFETY: `&mut self`: no guard is alive, and each object was retired once with its
            // own reclaimer.
            unsafe { (object.reclaim)(object.ptr) };
        }
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
