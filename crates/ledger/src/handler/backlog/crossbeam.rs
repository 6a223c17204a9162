//! The backlog of normal builds: crossbeam's bounded lock-free ring.

use crossbeam_queue::ArrayQueue;

/// A bounded FIFO of `T` with a non-blocking push.
pub(crate) struct Backlog<T> {
    queue: ArrayQueue<T>,
}

impl<T> Backlog<T> {
    /// A backlog of `capacity` items.
    ///
    /// # Panics
    /// Panics if `capacity` is zero (the handler's config check rejects zero first).
    pub(crate) fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "backlog capacity must be positive");
        Self {
            queue: ArrayQueue::new(capacity),
        }
    }

    /// Appends `item`, or gives it back at once when the backlog is full.
    pub(crate) fn push(&self, item: T) -> Result<(), T> {
        self.queue.push(item)
    }

    /// Takes the oldest item, if any.
    pub(crate) fn pop(&self) -> Option<T> {
        self.queue.pop()
    }

    /// Items queued now (a snapshot: other threads may push or pop right after).
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// The fixed capacity.
    pub(crate) fn capacity(&self) -> usize {
        self.queue.capacity()
    }
}
