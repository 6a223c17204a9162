//! Outcome counters of the handler and their snapshot.

use crossbeam_utils::CachePadded;
use txgate_sync::sync::{AtomicU64, Ordering, thread_index};

use super::interface::Outcome;

/// A snapshot of a [`TxHandler`](super::TxHandler)'s counters: one per outcome of
/// [`TxHandler::handle`](super::TxHandler::handle), one per result of the workers, and gauges.
///
/// Counters are relaxed atomics, striped by thread (so concurrent `handle` calls do not share a
/// cache line for them) and summed field by field: a snapshot taken while messages flow may be a
/// few counts apart between fields; once the handler is quiet (or after
/// [`shutdown`](super::TxHandler::shutdown)) they add up exactly:
///
/// - messages handled = [`HandlerStats::handled`] = the sum of the nine `handle` outcomes;
/// - `enqueued` = `pool_accepted + pool_rejected + sink_panicked + backlog_len` (plus groups a
///   worker is holding right now).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
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
    /// [`Outcome::MessageTooLarge`]: more bytes than `max_message_size` (go-algorand's network
    /// layer drops these before its handler, by the tag's maximum size).
    pub message_too_large: u64,
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
    /// Messages offered to [`TxHandler::handle`](super::TxHandler::handle): the sum of its nine
    /// outcome counters.
    pub fn handled(&self) -> u64 {
        self.duplicate
            + self.decode_error
            + self.group_too_large
            + self.message_too_large
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

/// One counter of [`Counters`]: the index of its word in every stripe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counter {
    Duplicate,
    DecodeError,
    GroupTooLarge,
    MessageTooLarge,
    AlreadyCommitted,
    RateLimited,
    BacklogFull,
    ShutDown,
    Enqueued,
    LimiterChecks,
    PoolAccepted,
    PoolRejected,
    Penalized,
    SinkPanicked,
}

/// Number of [`Counter`]s.
const COUNTERS: usize = Counter::SinkPanicked as usize + 1;

/// Stripes of the counters: a thread counts in the stripe of its [`thread_index`], so threads
/// that handle messages at once rarely write the same cache line (the limiter's decision
/// counters are striped the same way). One under loom, whose threads all have index 0.
const STRIPES: usize = if cfg!(loom) { 1 } else { 16 };

/// One stripe: every counter once.
struct Stripe([AtomicU64; COUNTERS]);

/// The live counters, striped by thread; a snapshot sums the stripes.
pub(crate) struct Counters {
    // Invariant: `STRIPES` entries (a power of two).
    stripes: Box<[CachePadded<Stripe>]>,
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            stripes: (0..STRIPES)
                .map(|_| CachePadded::new(Stripe(std::array::from_fn(|_| AtomicU64::new(0)))))
                .collect(),
        }
    }
}

impl Counters {
    /// Adds one to `counter`, in the calling thread's stripe.
    #[inline]
    pub(crate) fn bump(&self, counter: Counter) {
        let stripe = &self.stripes[thread_index() & (STRIPES - 1)];
        // Relaxed: counters order nothing; readers take snapshots.
        stripe.0[counter as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one `handle` outcome.
    #[inline]
    pub(crate) fn count(&self, outcome: Outcome) {
        self.bump(match outcome {
            Outcome::Enqueued => Counter::Enqueued,
            Outcome::Duplicate => Counter::Duplicate,
            Outcome::DecodeError => Counter::DecodeError,
            Outcome::GroupTooLarge => Counter::GroupTooLarge,
            Outcome::MessageTooLarge => Counter::MessageTooLarge,
            Outcome::AlreadyCommitted => Counter::AlreadyCommitted,
            Outcome::RateLimited => Counter::RateLimited,
            Outcome::BacklogFull => Counter::BacklogFull,
            Outcome::ShutDown => Counter::ShutDown,
        });
    }

    /// The sum of `counter` over the stripes.
    fn total(&self, counter: Counter) -> u64 {
        self.stripes
            .iter()
            // Relaxed: see `bump`.
            .map(|stripe| stripe.0[counter as usize].load(Ordering::Relaxed))
            .sum()
    }

    /// A snapshot (gauges filled in by the caller).
    pub(crate) fn snapshot(&self) -> HandlerStats {
        HandlerStats {
            duplicate: self.total(Counter::Duplicate),
            decode_error: self.total(Counter::DecodeError),
            group_too_large: self.total(Counter::GroupTooLarge),
            message_too_large: self.total(Counter::MessageTooLarge),
            already_committed: self.total(Counter::AlreadyCommitted),
            rate_limited: self.total(Counter::RateLimited),
            backlog_full: self.total(Counter::BacklogFull),
            shut_down: self.total(Counter::ShutDown),
            enqueued: self.total(Counter::Enqueued),
            limiter_checks: self.total(Counter::LimiterChecks),
            pool_accepted: self.total(Counter::PoolAccepted),
            pool_rejected: self.total(Counter::PoolRejected),
            penalized: self.total(Counter::Penalized),
            sink_panicked: self.total(Counter::SinkPanicked),
            dedup_rotations: 0,
            backlog_len: 0,
        }
    }
}
