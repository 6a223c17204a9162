//! The loom stand-in of the backlog: a loom `Mutex<VecDeque>` with the same capacity rule and a
//! length published without the lock (the module docs of `backlog` say why). Same signatures as
//! `crossbeam.rs`, whose docs apply.

use std::collections::VecDeque;

use txgate_sync::sync::{AtomicUsize, Mutex, Ordering};

/// A bounded FIFO of `T` with a non-blocking push.
pub(crate) struct Backlog<T> {
    // Invariant: `queue.len() <= capacity`.
    queue: Mutex<VecDeque<T>>,
    capacity: usize,
    /// `queue.len()` as of the last push or pop.
    len: AtomicUsize,
}

impl<T> Backlog<T> {
    /// See `crossbeam.rs`.
    pub(crate) fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "backlog capacity must be positive");
        Self {
            queue: Mutex::new(VecDeque::with_capacity(capacity)),
            capacity,
            len: AtomicUsize::new(0),
        }
    }

    /// See `crossbeam.rs`.
    pub(crate) fn push(&self, item: T) -> Result<(), T> {
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

    /// See `crossbeam.rs`.
    pub(crate) fn pop(&self) -> Option<T> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let item = q.pop_front();
        // Release: as `ArrayQueue::pop` publishes its head index.
        self.len.store(q.len(), Ordering::Release);
        item
    }

    /// See `crossbeam.rs`.
    pub(crate) fn len(&self) -> usize {
        // Acquire: as `ArrayQueue::len` loads the indices.
        self.len.load(Ordering::Acquire)
    }

    /// See `crossbeam.rs`.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }
}
