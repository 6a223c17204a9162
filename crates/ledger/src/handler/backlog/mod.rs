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

//! One implementation per build, chosen once below, with the same signatures:
//! `crossbeam.rs` (normal builds), `standin.rs` (`cfg(loom)`).

#[cfg(not(loom))]
#[path = "crossbeam.rs"]
mod imp;
#[cfg(loom)]
#[path = "standin.rs"]
mod imp;

pub(crate) use imp::Backlog;

impl<T> Backlog<T> {
    /// `true` when nothing is queued (a snapshot).
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
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
