//! The bounded backlog between the synchronous part of the handler and its workers.
//!
//! Outside loom it is a [`crossbeam_queue::ArrayQueue`]: a bounded, lock-free MPMC ring whose
//! `push` fails at once when it is full (go-algorand's `select { case backlogQueue <- wi: ...
//! default: drop }` on a buffered channel). crossbeam's queue is not loom-instrumented, so under
//! `cfg(loom)` the same interface is backed by a loom `Mutex<VecDeque>` with the same capacity
//! rule: the loom models check the handler's protocol around the queue (nothing lost, nothing
//! duplicated, counters add up, no lost wake-up), not crossbeam's own algorithm, which crossbeam
//! tests itself. The stand-in's `len` reads a length published with `Release` by every push and
//! pop, without the lock, as `ArrayQueue::len` reads the head and tail indices without one: a
//! lock there would order a worker's idle check after every earlier push and hide a missing
//! fence in the handler's wake-up handshake.

#[cfg(not(loom))]
use crossbeam_queue::ArrayQueue;

#[cfg(loom)]
use std::collections::VecDeque;
#[cfg(loom)]
use txgate_sync::sync::{AtomicUsize, Mutex, Ordering};

/// A bounded FIFO of `T` with a non-blocking push.
pub(crate) struct Backlog<T> {
    #[cfg(not(loom))]
    queue: ArrayQueue<T>,
    #[cfg(loom)]
    // Invariant: `queue.len() <= capacity`.
    queue: Mutex<VecDeque<T>>,
    #[cfg(loom)]
    capacity: usize,
    /// `queue.len()` as of the last push or pop.
    #[cfg(loom)]
    len: AtomicUsize,
}

impl<T> Backlog<T> {
    /// A backlog of `capacity` items.
    ///
    /// # Panics
    /// Panics if `capacity` is zero (the handler's config check rejects zero first).
    pub(crate) fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "backlog capacity must be positive");
        #[cfg(not(loom))]
        {
            Self {
                queue: ArrayQueue::new(capacity),
            }
        }
        #[cfg(loom)]
        {
            Self {
                queue: Mutex::new(VecDeque::with_capacity(capacity)),
                capacity,
                len: AtomicUsize::new(0),
            }
        }
    }

    /// Appends `item`, or gives it back at once when the backlog is full.
    pub(crate) fn push(&self, item: T) -> Result<(), T> {
        #[cfg(not(loom))]
        {
            self.queue.push(item)
        }
        #[cfg(loom)]
        {
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            if q.len() >= self.capacity {
                return Err(item);
            }
            q.push_back(item);
            debug_assert!(q.len() <= self.capacity);
            // Release: as `ArrayQueue::push` publishes its tail index.
            self.len.store(q.len(), Ordering::Release);
            Ok(())
        }
    }

    /// Takes the oldest item, if any.
    pub(crate) fn pop(&self) -> Option<T> {
        #[cfg(not(loom))]
        {
            self.queue.pop()
        }
        #[cfg(loom)]
        {
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            let item = q.pop_front();
            // Release: as `ArrayQueue::pop` publishes its head index.
            self.len.store(q.len(), Ordering::Release);
            item
        }
    }

    /// Items queued now (a snapshot: other threads may push or pop right after).
    pub(crate) fn len(&self) -> usize {
        #[cfg(not(loom))]
        {
            self.queue.len()
        }
        #[cfg(loom)]
        {
            // Acquire: as `ArrayQueue::len` loads the indices.
            self.len.load(Ordering::Acquire)
        }
    }

    /// `true` when nothing is queued (a snapshot).
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The fixed capacity.
    pub(crate) fn capacity(&self) -> usize {
        #[cfg(not(loom))]
        {
            self.queue.capacity()
        }
        #[cfg(loom)]
        {
            self.capacity
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn push_fails_when_full_and_pops_in_order() {
        let b = Backlog::new(2);
        assert_eq!(b.capacity(), 2);
        assert!(b.is_empty());
        assert_eq!(b.push(1), Ok(()));
        assert_eq!(b.push(2), Ok(()));
        assert_eq!(b.push(3), Err(3));
        assert_eq!(b.len(), 2);
        assert_eq!(b.pop(), Some(1));
        assert_eq!(b.push(3), Ok(()));
        assert_eq!(b.pop(), Some(2));
        assert_eq!(b.pop(), Some(3));
        assert_eq!(b.pop(), None);
    }
}
