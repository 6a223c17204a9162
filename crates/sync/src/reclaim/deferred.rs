//! The `txgate_tsan` collector: retired objects go on a list that the collector's drop
//! reclaims (the module docs of `reclaim` say why). Same types and signatures as `seize.rs`,
//! whose docs apply.

use std::ptr;

use super::{Reclaim, count_reclaimed, erased};
use crate::sync::{AtomicPtr, Ordering};

/// Frees retired objects when it drops.
pub struct Collector {
    inner: List,
}

/// A plain handle: loads through it are plain loads.
pub struct Guard<'c> {
    collector: &'c Collector,
    _not_send: std::marker::PhantomData<*mut ()>,
}

impl Collector {
    /// See the seize collector's `new`; `batch_size` is unused.
    pub fn new(batch_size: usize) -> Self {
        let _ = batch_size;
        Self {
            inner: List::default(),
        }
    }

    /// See the seize collector's `enter`.
    #[inline]
    pub fn enter(&self) -> Guard<'_> {
        Guard {
            collector: self,
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Guard<'_> {
    /// A plain load with `order`.
    #[inline]
    pub fn protect<T>(&self, ptr: &AtomicPtr<T>, order: Ordering) -> *mut T {
        ptr.load(order)
    }

    /// [`thread_index`](crate::sync::thread_index).
    #[inline]
    pub fn thread_id(&self) -> usize {
        crate::sync::thread_index()
    }

    /// A no-op.
    #[inline]
    pub fn check<T>(&self, ptr: *const T) {
        let _ = ptr;
    }

    /// Keeps the box until the collector drops.
    ///
    /// # Safety
    ///
    /// As the seize collector's `retire_box`.
    #[inline]
    pub unsafe fn retire_box<T>(&self, ptr: *mut T) {
        self.collector.inner.push(ptr.cast(), erased::drop_box::<T>);
    }

    /// Keeps the object until the collector drops, which reclaims it.
    ///
    /// # Safety
    ///
    /// As the seize collector's `retire`.
    #[inline]
    pub unsafe fn retire<T: Reclaim>(&self, ptr: *mut T) {
        self.collector
            .inner
            .push(ptr.cast(), erased::reclaim_with::<T>);
    }
}

/// A retired object, how to reclaim it, and the next one on the list.
struct Retired {
    ptr: *mut (),
    reclaim: unsafe fn(*mut ()),
    next: *mut Retired,
}

/// A stack of retired objects, pushed by any thread, popped only by its drop.
#[derive(Default)]
struct List {
    head: std::sync::atomic::AtomicPtr<Retired>,
}

impl List {
    /// Keeps `ptr` until the list drops, which reclaims it with `reclaim`.
    fn push(&self, ptr: *mut (), reclaim: unsafe fn(*mut ())) {
        use std::sync::atomic::Ordering;
        let entry = Box::into_raw(Box::new(Retired {
            ptr,
            reclaim,
            next: ptr::null_mut(),
        }));
        // Relaxed, the load and the compare-and-swap: the list is read only by its drop
        // (`&mut self`), which every pushing thread's use of the collector happens before (the
        // thread ended, or handed the collector over). No edge between pushing threads, so that
        // TSan sees only the synchronization of the structures' own code.
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // SAFETY: `entry` is ours until the compare-and-swap below publishes it.
            unsafe { (*entry).next = head };
            match self
                .head
                .compare_exchange_weak(head, entry, Ordering::Relaxed, Ordering::Relaxed)
            {
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
            // SAFETY: every entry came from `Box::into_raw` in `push` and is popped once, here,
            // with `&mut self`.
            let entry = unsafe { Box::from_raw(next) };
            next = entry.next;
            // SAFETY: the object was retired once, with its own reclaimer; no guard of this
            // collector is alive (`&mut self`), so nothing can reach it.
            unsafe { (entry.reclaim)(entry.ptr) };
            count_reclaimed();
        }
    }
}
