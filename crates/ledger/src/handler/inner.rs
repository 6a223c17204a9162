//! The state a [`TxHandler`](super::TxHandler) shares with its workers ([`Inner`]), its
//! shutdown gate and the workers' wake-up slots. The steps that use it are in `pipeline.rs`
//! (the messages' path) and `workers.rs` (workers, wake-ups, shutdown).

use std::sync::{Arc, OnceLock};

use crossbeam_utils::CachePadded;
use txgate_ratelimit::AppRateLimiter;
use txgate_sync::sync::thread::{JoinHandle, Thread, ThreadId};
use txgate_sync::sync::{AtomicBool, AtomicUsize, Condvar, Mutex};

use super::backlog::Backlog;
use super::dedup::DedupCache;
use super::interface::{CommittedTxids, DecodeFn, Group, PoolSink};
use super::keys::KeyCache;
use super::stats::Counters;

/// The closed bit of `Inner::gate`.
pub(super) const CLOSED: usize = 1;

/// One `handle` call in flight, in `Inner::gate`.
pub(super) const IN_FLIGHT_ONE: usize = 2;

pub(super) struct Inner {
    pub(super) dedup: Option<DedupCache>,
    pub(super) decoder: DecodeFn,
    pub(super) max_group_size: usize,
    pub(super) max_message_size: usize,
    pub(super) committed: Arc<dyn CommittedTxids + Send + Sync>,
    /// `None` when app rate limiting is off.
    pub(super) limiter: Option<Arc<AppRateLimiter>>,
    /// Keys derived by `limiter`; `None` without a limiter or with a zero-sized cache.
    pub(super) key_cache: Option<KeyCache>,
    pub(super) congestion_threshold: usize,
    pub(super) sink: Arc<dyn PoolSink>,
    pub(super) backlog: Backlog<Group>,
    pub(super) counters: Counters,
    /// The shutdown gate: bit 0 = closed (set once by `shutdown`), bits 1.. = `handle` calls in
    /// flight (between entering the gate and their last counter update). One word, so every
    /// entry and the close are read-modify-writes of one location, totally ordered by its
    /// modification order: an entry either comes before the close (and shutdown waits for it) or
    /// after it (and sees the closed bit).
    // Invariant: once the closed bit is set and the count reads 0, no push onto the backlog can
    // follow.
    pub(super) gate: AtomicUsize,
    /// One slot per worker, set once (before the workers are spawned) by `start_workers`.
    pub(super) slots: OnceLock<Box<[CachePadded<WorkerSlot>]>>,
    /// Join handles of the running workers; `shutdown` takes them.
    pub(super) workers: Mutex<Vec<JoinHandle<()>>>,
    /// Where `shutdown` stands, and who runs it.
    pub(super) phase: Mutex<Phase>,
    /// Signalled when `phase` becomes `Done`.
    pub(super) phase_done: Condvar,
}

/// A worker's wake-up slot.
#[derive(Default)]
pub(super) struct WorkerSlot {
    /// The worker's thread, set by the worker itself before it first processes a group.
    pub(super) thread: OnceLock<Thread>,
    /// The worker is parked or about to park (see `Inner::wake_one`).
    // Invariant: only set after `thread` is.
    pub(super) parked: AtomicBool,
}

/// Progress of `shutdown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// No shutdown has started waiting and joining yet.
    Open,
    /// The thread with this id waits for `handle` calls in flight, joins the workers and drains.
    Running(ThreadId),
    /// Every enqueued group has been handed to the sink.
    Done,
}
