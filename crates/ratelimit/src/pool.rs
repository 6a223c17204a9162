//! Per-thread pools of reclaimed records (nodes, group operations, unit reservations), so that
//! the steady state of evictions, groups and shard fills does not call the allocator. Each
//! record type declares its own `thread_local!` [`Pool`] (not under loom, whose atomics belong
//! to one model execution); these helpers take from it and give back to it.

use std::cell::RefCell;
use std::thread::LocalKey;

/// One thread's reclaimed records of one type. Boxed: records are handed out and back as `Box`
/// allocations (`Box::into_raw` for sharing).
#[allow(clippy::vec_box)]
pub(crate) type Pool<T> = RefCell<Vec<Box<T>>>;

/// Records kept per thread and type: at least the collector's batch, which returns them all at
/// once.
pub(crate) const MAX: usize = 1024;

/// A record from this thread's pool, if it has one.
#[inline]
pub(crate) fn take<T>(pool: &'static LocalKey<Pool<T>>) -> Option<Box<T>> {
    // `try_with` and `try_borrow_mut`: nothing to take while the thread's locals are being
    // destroyed or the pool is in use further up the stack.
    pool.try_with(|p| p.try_borrow_mut().ok().and_then(|mut p| p.pop()))
        .ok()
        .flatten()
}

/// Gives `record` back to this thread's pool, or frees it if the pool is full or unavailable
/// (reclamation may run while this thread's locals are being destroyed).
pub(crate) fn give<T>(pool: &'static LocalKey<Pool<T>>, record: Box<T>) {
    let _ = pool.try_with(|p| {
        if let Ok(mut p) = p.try_borrow_mut()
            && p.len() < MAX
        {
            p.push(record);
        }
    });
}
