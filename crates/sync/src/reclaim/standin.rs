//! The loom stand-in (the module docs of `reclaim` give its contract and the barriers it
//! models). Same types and signatures as `seize.rs`, whose docs apply.

use std::collections::{HashMap, HashSet};

use super::{Reclaim, count_reclaimed, erased};
use crate::sync::{AtomicPtr, Ordering};

/// Poisons a retired object once every guard alive at its retirement has dropped; frees it when
/// the collector drops.
pub struct Collector {
    inner: std::sync::Mutex<State>,
}

/// A guard, known to the stand-in's bookkeeping by its id.
pub struct Guard<'c> {
    collector: &'c Collector,
    /// This guard's id in the stand-in's bookkeeping.
    id: u64,
    _not_send: std::marker::PhantomData<*mut ()>,
}

/// A retired object and how to reclaim it; the stand-in owns it.
struct Retired {
    ptr: *mut (),
    reclaim: unsafe fn(*mut ()),
}

// SAFETY: a retired object is owned by the collector alone (its structure made it unreachable
// and gave up the pointer), and the structures retire only `Send` objects.
unsafe impl Send for Retired {}

#[derive(Default)]
struct State {
    /// Retirement barriers run so far.
    barriers: u64,
    /// Per thread, the count of barriers whose fence it has run (module docs).
    fenced: HashMap<loom::thread::ThreadId, u64>,
    /// The id of the next guard.
    next_id: u64,
    /// Ids of the guards alive now.
    active: Vec<u64>,
    /// Retired objects, each with the ids of the guards that were alive when it was retired and
    /// still are.
    retired: Vec<(Retired, Vec<u64>)>,
    /// Retired objects no guard can reach: poisoned, reclaimed when the collector drops.
    reclaimed: Vec<Retired>,
    /// Addresses of the poisoned objects.
    poisoned: HashSet<usize>,
}

impl Collector {
    /// See the seize collector's `new`; `batch_size` is unused (the stand-in reclaims as early
    /// as the contract allows).
    pub fn new(batch_size: usize) -> Self {
        let _ = batch_size;
        Self {
            inner: std::sync::Mutex::new(State::default()),
        }
    }

    /// See the seize collector's `enter`; runs the fence of the retirement barriers this thread
    /// has not run yet (module docs).
    pub fn enter(&self) -> Guard<'_> {
        let mut state = self.state();
        let id = state.next_id;
        state.next_id += 1;
        state.active.push(id);
        // The fence `membarrier` ran in this thread if a retirement came since this thread last
        // had one (module docs).
        let me = loom::thread::current().id();
        let barriers = state.barriers;
        let due = state.fenced.insert(me, barriers) != Some(barriers);
        drop(state);
        if due {
            // SeqCst fence, as the one seize's retirement barrier runs in this thread: a
            // retirement whose snapshot of the active guards missed this guard came earlier in
            // the SeqCst order, so this guard's loads see the unlinking that preceded it (C++20
            // [atomics.order] p4.4 with the fence in `retire_erased`).
            crate::sync::fence(Ordering::SeqCst);
        }
        Guard {
            collector: self,
            id,
            _not_send: std::marker::PhantomData,
        }
    }

    /// The stand-in's bookkeeping (a panic elsewhere in a model must not poison it for the
    /// guards that drop while it unwinds).
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Guard<'_> {
    /// A plain load with `order`.
    #[inline]
    pub fn protect<T>(&self, ptr: &AtomicPtr<T>, order: Ordering) -> *mut T {
        ptr.load(order)
    }

    /// Always 0.
    #[inline]
    pub fn thread_id(&self) -> usize {
        0
    }

    /// Panics if the stand-in has poisoned `ptr` (a real collector could have freed it).
    #[inline]
    pub fn check<T>(&self, ptr: *const T) {
        let poisoned = self.collector.state().poisoned.contains(&ptr.addr());
        assert!(
            !poisoned,
            "touched an object after reclamation could have freed it"
        );
    }

    /// Retires a box (see the seize collector's `retire_box`).
    ///
    /// # Safety
    ///
    /// As the seize collector's `retire_box`.
    #[inline]
    pub unsafe fn retire_box<T>(&self, ptr: *mut T) {
        self.retire_erased(ptr.cast(), erased::drop_box::<T>);
    }

    /// Retires an object (see the seize collector's `retire`).
    ///
    /// # Safety
    ///
    /// As the seize collector's `retire`.
    #[inline]
    pub unsafe fn retire<T: Reclaim>(&self, ptr: *mut T) {
        self.retire_erased(ptr.cast(), erased::reclaim_with::<T>);
    }

    fn retire_erased(&self, ptr: *mut (), reclaim: unsafe fn(*mut ())) {
        // SeqCst fence, as seize's retirement barrier in this thread: pairs with the fence it
        // runs in every other thread (modelled in `Collector::enter`).
        crate::sync::fence(Ordering::SeqCst);
        let mut state = self.collector.state();
        state.barriers += 1;
        let barriers = state.barriers;
        state.fenced.insert(loom::thread::current().id(), barriers);
        // Every guard alive now may hold the object; guards entered later cannot load it
        // (precondition 2), so only these are waited for.
        let waiting = state.active.clone();
        state.retired.push((Retired { ptr, reclaim }, waiting));
    }
}

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
