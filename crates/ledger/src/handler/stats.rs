//! Outcome counters of the handler and their snapshot.

use super::Outcome;
use txgate_sync::sync::{AtomicU64, Ordering};

/// A snapshot of a [`TxHandler`](super::TxHandler)'s counters: one per outcome of
/// [`TxHandler::handle`](super::TxHandler::handle), one per result of the workers, and gauges.
///
/// Counters are relaxed atomics read one by one: a snapshot taken while messages flow may be a
/// few counts apart between fields; once the handler is quiet (or after
/// [`shutdown`](super::TxHandler::shutdown)) they add up exactly:
///
/// - messages handled = [`HandlerStats::handled`] = the sum of the eight `handle` outcomes;
/// - `enqueued` = `pool_accepted + pool_rejected + sink_panicked + backlog_len` (plus groups a
///   worker is holding right now).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandlerStats {
    /// [`Outcome::Duplicate`]: the raw message was in the dedup cache (go-algorand
    /// `TransactionMessagesDupRawMsg`).
    pub duplicate: u64,
    /// [`Outcome::DecodeError`]: not a transaction group (go-algorand disconnects the peer).
    pub decode_error: u64,
    /// [`Outcome::GroupTooLarge`]: more transactions than `max_group_size`
    /// (go-algorand `TransactionMessageTxGroupExcessive`).
    pub group_too_large: u64,
    /// [`Outcome::AlreadyCommitted`]: a transaction of the group is already in the ledger
    /// (go-algorand `TransactionMessagesAlreadyCommitted`).
    pub already_committed: u64,
    /// [`Outcome::RateLimited`]: dropped by the app rate limiter under congestion
    /// (go-algorand `TransactionMessagesAppLimiterDrop`).
    pub rate_limited: u64,
    /// [`Outcome::BacklogFull`]: the backlog was full (go-algorand
    /// `TransactionMessagesDroppedFromBacklog`).
    pub backlog_full: u64,
    /// [`Outcome::ShutDown`]: offered after shutdown began.
    pub shut_down: u64,
    /// [`Outcome::Enqueued`]: pushed onto the backlog.
    pub enqueued: u64,
    /// Times the app rate limiter was consulted (the backlog was congested and the group had
    /// app ids, from a peer).
    pub limiter_checks: u64,
    /// Groups the pool sink accepted (go-algorand `TransactionMessagesRemember`; upstream then
    /// relays them).
    pub pool_accepted: u64,
    /// Groups the pool sink rejected.
    pub pool_rejected: u64,
    /// Rejected peer groups whose apps were penalized in the rate limiter.
    pub penalized: u64,
    /// Groups whose sink call panicked (the worker survives; the group is counted here).
    pub sink_panicked: u64,
    /// Dedup cache rotations (by size and by time).
    pub dedup_rotations: u64,
    /// Groups in the backlog at the snapshot.
    pub backlog_len: usize,
}

impl HandlerStats {
    /// Messages offered to [`TxHandler::handle`](super::TxHandler::handle): the sum of its eight
    /// outcome counters.
    pub fn handled(&self) -> u64 {
        self.duplicate
            + self.decode_error
            + self.group_too_large
            + self.already_committed
            + self.rate_limited
            + self.backlog_full
            + self.shut_down
            + self.enqueued
    }

    /// Groups the workers finished with: `pool_accepted + pool_rejected + sink_panicked`.
    pub fn processed(&self) -> u64 {
        self.pool_accepted + self.pool_rejected + self.sink_panicked
    }
}

/// The live counters.
#[derive(Default)]
pub(crate) struct Counters {
    duplicate: AtomicU64,
    decode_error: AtomicU64,
    group_too_large: AtomicU64,
    already_committed: AtomicU64,
    rate_limited: AtomicU64,
    backlog_full: AtomicU64,
    shut_down: AtomicU64,
    enqueued: AtomicU64,
    pub(crate) limiter_checks: AtomicU64,
    pub(crate) pool_accepted: AtomicU64,
    pub(crate) pool_rejected: AtomicU64,
    pub(crate) penalized: AtomicU64,
    pub(crate) sink_panicked: AtomicU64,
}

/// Adds one to a counter.
pub(crate) fn bump(counter: &AtomicU64) {
    // Relaxed: counters order nothing; readers take snapshots.
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    /// Counts one `handle` outcome.
    pub(crate) fn count(&self, outcome: Outcome) {
        bump(match outcome {
            Outcome::Enqueued => &self.enqueued,
            Outcome::Duplicate => &self.duplicate,
            Outcome::DecodeError => &self.decode_error,
            Outcome::GroupTooLarge => &self.group_too_large,
            Outcome::AlreadyCommitted => &self.already_committed,
            Outcome::RateLimited => &self.rate_limited,
            Outcome::BacklogFull => &self.backlog_full,
            Outcome::ShutDown => &self.shut_down,
        });
    }

    /// A snapshot (gauges filled in by the caller).
    pub(crate) fn snapshot(&self) -> HandlerStats {
        // Relaxed: see `bump`.
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        HandlerStats {
            duplicate: r(&self.duplicate),
            decode_error: r(&self.decode_error),
            group_too_large: r(&self.group_too_large),
            already_committed: r(&self.already_committed),
            rate_limited: r(&self.rate_limited),
            backlog_full: r(&self.backlog_full),
            shut_down: r(&self.shut_down),
            enqueued: r(&self.enqueued),
            limiter_checks: r(&self.limiter_checks),
            pool_accepted: r(&self.pool_accepted),
            pool_rejected: r(&self.pool_rejected),
            penalized: r(&self.penalized),
            sink_panicked: r(&self.sink_panicked),
            dedup_rotations: 0,
            backlog_len: 0,
        }
    }
}
