//! Memory reclamation of window entries that a newer round replaced.
//!
//! Normally this is [seize](https://docs.rs/seize/0.5): a reader enters a [`Guard`] before it
//! loads a slot, and an entry swapped out of its slot is handed to [`Collector::retire`], which
//! frees it only once no guard that could have loaded it is alive.
//!
//! seize has no loom support, so under `cfg(loom)` this module is a model-checked stand-in with
//! the same contract (the idea of `txgate-ratelimit`'s `reclaim.rs`): guards count active
//! readers under a loom mutex, and as soon as no guard is alive every entry retired so far is
//! *poisoned* (marked as reclaimed) instead of freed. The window asserts on every entry access
//! that the entry is not poisoned, so loom reports any interleaving in which a reader touches an
//! entry after the real collector would have been free to reclaim it. Poisoned entries are freed
//! when the collector is dropped.

use super::sync::{AtomicPtr, Ordering};
use super::window::RoundEntry;

/// Frees replaced window entries once no reader can still see them.
pub(crate) struct Collector<T> {
    #[cfg(not(loom))]
    inner: seize::Collector,
    #[cfg(loom)]
    inner: loom::sync::Mutex<standin::State<T>>,
    _entries: std::marker::PhantomData<fn(T)>,
}

/// Marks the current thread active: entries loaded through it stay allocated while it lives.
pub(crate) struct Guard<'c, T> {
    #[cfg(not(loom))]
    inner: seize::LocalGuard<'c>,
    #[cfg(loom)]
    collector: &'c Collector<T>,
    _entries: std::marker::PhantomData<fn(T)>,
}

impl<T> Collector<T> {
    /// A collector. Under Miri the batch of retired entries is shrunk to 2 so that reclamation
    /// really runs in small tests.
    pub(crate) fn new() -> Self {
        #[cfg(not(loom))]
        {
            // seize's default batch is max(32, CPUs): a replaced bloom is freed at most a batch
            // of rounds late, which bounds the memory held beyond the window.
            let batch = if cfg!(miri) { 2 } else { 32 };
            Self {
                inner: seize::Collector::new().batch_size(batch),
                _entries: std::marker::PhantomData,
            }
        }
        #[cfg(loom)]
        {
            Self {
                inner: loom::sync::Mutex::new(standin::State::default()),
                _entries: std::marker::PhantomData,
            }
        }
    }

    /// Enters a read-side critical section.
    #[inline]
    pub(crate) fn enter(&self) -> Guard<'_, T> {
        #[cfg(not(loom))]
        {
            Guard {
                inner: self.inner.enter(),
                _entries: std::marker::PhantomData,
            }
        }
        #[cfg(loom)]
        {
            self.inner.lock().unwrap().active += 1;
            Guard {
                collector: self,
                _entries: std::marker::PhantomData,
            }
        }
    }

    /// Hands an entry swapped out of the window to the collector, to be freed once no guard can
    /// reach it.
    ///
    /// # Safety
    ///
    /// 1. `entry` came from `Box::into_raw` and is retired at most once.
    /// 2. `entry` is no longer reachable from the window: no thread that loads a slot after this
    ///    call can load it.
    #[inline]
    pub(crate) unsafe fn retire(&self, entry: *mut RoundEntry<T>) {
        #[cfg(not(loom))]
        {
            // SAFETY: (1) and (2) are this function's preconditions, which are seize's `retire`
            // contract; `seize::reclaim::boxed` matches the `Box` allocation of (1).
            unsafe {
                self.inner
                    .retire(entry, seize::reclaim::boxed::<RoundEntry<T>>)
            };
        }
        #[cfg(loom)]
        {
            let mut state = self.inner.lock().unwrap();
            state.retired.push(standin::EntryPtr(entry));
            if state.active == 0 {
                state.poison_retired();
            }
        }
    }
}

impl<T> Guard<'_, T> {
    /// Loads a slot with `order` and protects the loaded entry for the guard's lifetime.
    #[inline]
    pub(crate) fn protect(
        &self,
        slot: &AtomicPtr<RoundEntry<T>>,
        order: Ordering,
    ) -> *mut RoundEntry<T> {
        #[cfg(not(loom))]
        {
            use seize::Guard as _;
            // seize upgrades `order` as its barrier scheme needs.
            self.inner.protect(slot, order)
        }
        #[cfg(loom)]
        {
            let _ = self.collector;
            slot.load(order)
        }
    }
}

#[cfg(loom)]
mod standin {
    use super::RoundEntry;

    /// A retired entry pointer; the stand-in owns it.
    pub(super) struct EntryPtr<T>(pub(super) *mut RoundEntry<T>);

    // SAFETY: a retired entry is owned by the collector alone (the window swapped it out and
    // gave up its pointer); the window only stores `Send + Sync` values (its marker field).
    unsafe impl<T> Send for EntryPtr<T> {}

    pub(super) struct State<T> {
        /// Guards alive now.
        pub(super) active: usize,
        /// Retired, possibly still seen by an active guard.
        pub(super) retired: Vec<EntryPtr<T>>,
        /// Retired while no guard could see them: poisoned, freed with the collector.
        pub(super) reclaimed: Vec<EntryPtr<T>>,
    }

    impl<T> Default for State<T> {
        fn default() -> Self {
            Self {
                active: 0,
                retired: Vec::new(),
                reclaimed: Vec::new(),
            }
        }
    }

    impl<T> State<T> {
        /// No guard is alive: every entry retired so far is what seize would be free to reclaim.
        pub(super) fn poison_retired(&mut self) {
            for entry in std::mem::take(&mut self.retired) {
                // SAFETY: retired entries stay allocated until the collector drops.
                unsafe { (*entry.0).poison() };
                self.reclaimed.push(entry);
            }
        }
    }
}

#[cfg(loom)]
impl<T> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        let mut state = self.collector.inner.lock().unwrap();
        state.active -= 1;
        if state.active == 0 {
            state.poison_retired();
        }
    }
}

#[cfg(loom)]
impl<T> Drop for Collector<T> {
    fn drop(&mut self) {
        let state = self.inner.get_mut().unwrap();
        for entry in state.retired.drain(..).chain(state.reclaimed.drain(..)) {
            // SAFETY: `&mut self`: no guard is alive, and each retired pointer came from
            // `Box::into_raw` and was retired once.
            drop(unsafe { Box::from_raw(entry.0) });
        }
    }
}
