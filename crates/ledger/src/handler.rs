//! The transaction handler pipeline: go-algorand's `TxHandler` (data/txHandler.go) without
//! signature checks, in front of a transaction pool.
//!
//! # Pipeline
//!
//! [`TxHandler::handle`] runs the synchronous part on the caller's thread (a network reader; any
//! number of them at once), in go-algorand's order, and returns an [`Outcome`]:
//!
//! 0. **Size**: a message longer than [`HandlerConfig::max_message_size`] is dropped before its
//!    bytes are hashed or decoded: [`Outcome::MessageTooLarge`] (default 5,000,000 bytes,
//!    go-algorand's limit for the `TX` tag, which its network layer enforces before a handler
//!    sees the message).
//! 1. **Raw-message dedup**: a salted digest of the bytes in a two-generation cache rotated by
//!    size and by time (go-algorand's `msgCache`; defaults `TxIncomingFilterMaxSize` = 500,000
//!    keys and 60 s). Seen: [`Outcome::Duplicate`].
//! 2. **Decode** ([`codec::decode_txn_message`] by default): bad bytes or an empty group:
//!    [`Outcome::DecodeError`]; more than [`HandlerConfig::max_group_size`] transactions:
//!    [`Outcome::GroupTooLarge`] (go-algorand `bounds.MaxTxGroupSize` = 16).
//! 3. **Already committed**: each transaction's txid over its validity window
//!    `[first_valid, last_valid]` through [`CommittedTxids`] (the ledger's blooms):
//!    [`Outcome::AlreadyCommitted`]. go-algorand runs this check (`txPool.Test`) in the backlog
//!    worker; here it runs before the backlog, so committed groups take no backlog slot.
//! 4. **App rate limiter**, only when the backlog is congested: `backlog.len() >
//!    backlog_capacity x congestion_pct / 100` (integer floor; go-algorand
//!    `congestedARL := len(handler.backlogQueue) > handler.appLimiterBacklogThreshold`), for a
//!    group from a peer that calls at least one app: [`Outcome::RateLimited`] when
//!    [`AppRateLimiter::admit_keys`] drops it. The (origin, app) keys come from a bounded cache
//!    ([`HandlerConfig::app_key_cache`]), so each is derived (one BLAKE2b-256) once per peer and
//!    app rather than once per message as upstream does.
//! 5. **Backlog**: a non-blocking push onto a bounded lock-free queue. Full:
//!    [`Outcome::BacklogFull`], and the message's dedup entry is removed so the peer may resend it
//!    (go-algorand `deleteFromCaches`). Else [`Outcome::Enqueued`].
//!
//! Worker threads ([`TxHandler::start_workers`]) pop groups and hand them to the [`PoolSink`]. A
//! rejected group that came from a peer (not [`Source::Local`]) penalizes its apps for that origin
//! ([`AppRateLimiter::penalize`]: `max(1, L / 4)` per app). Tests drive the same step on their own
//! thread with [`TxHandler::drain_once`].
//!
//! Every outcome and every worker result has a counter ([`TxHandler::stats`]).
//!
//! # Deliberate differences from go-algorand
//!
//! - No signature verification, no elastic rate limiter (ERL), no canonical-encoding dedup.
//! - The committed check runs before the backlog (step 3).
//! - The message size is checked here (step 0); upstream's network layer checks it before the
//!   handler, with the same limit.
//! - Rate-limiter keys are derived once per (origin, app) and cached (step 4); upstream derives
//!   them for every message. Decisions are the same.
//! - Time is the caller's: each [`Message`] carries its receive time (ns since the Unix epoch),
//!   used for dedup rotation and the rate limiter; a penalty is charged at the rejected group's
//!   receive time.
//! - [`Source::Local`] messages (upstream's `LocalTransaction`) skip the app rate limiter and the
//!   penalty (there is no peer to key them on) but are deduplicated like any other.
//!
//! # Shutdown
//!
//! [`TxHandler::shutdown`] closes the handler, waits for `handle` calls in flight, joins the
//! workers after they empty the backlog, and drains what is left on the caller's thread: every
//! [`Outcome::Enqueued`] group reaches the sink exactly once (`enqueued == pool_accepted +
//! pool_rejected + sink_panicked` afterwards); later messages get [`Outcome::ShutDown`].
//! Concurrent shutdowns all return only once that holds; a sink may call it (see
//! [`TxHandler::shutdown`] for what that call waits for).
//!
//! # Workers and wake-ups
//!
//! An idle worker spins briefly, then parks; a `handle` call that enqueues unparks a parked
//! worker, through a handshake of one `SeqCst` fence on each side (see `Inner::wake_one` in the
//! source), so no enqueued group waits for the park timeout (5 ms, a backstop only).
//!
//! # Example
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use txgate_ledger::handler::{
//!     CommittedTxids, Group, HandlerConfig, Message, Outcome, PoolReject, PoolSink, Source,
//!     TxHandler,
//! };
//! use txgate_algorand::codec::{DecodeError, Txn};
//! use txgate_ledger::{Round, Txid};
//!
//! struct NothingCommitted;
//! impl CommittedTxids for NothingCommitted {
//!     fn is_committed(&self, _: &Txid, _: Round, _: Round) -> bool { false }
//! }
//! #[derive(Default)]
//! struct Pool(Mutex<Vec<Group>>);
//! impl PoolSink for Pool {
//!     fn submit(&self, group: &Group) -> Result<(), PoolReject> {
//!         self.0.lock().unwrap().push(group.clone());
//!         Ok(())
//!     }
//! }
//! // A stand-in decoder: one payment per message, its txid the first 32 bytes.
//! fn decode(bytes: &[u8]) -> Result<Vec<Txn>, DecodeError> {
//!     let id: [u8; 32] = bytes.get(..32).and_then(|b| b.try_into().ok())
//!         .ok_or_else(|| DecodeError::Malformed("short".into()))?;
//!     Ok(vec![Txn { txid: Txid(id), tx_type: b"pay".to_vec(), sender: [0; 32],
//!         first_valid: 1, last_valid: 1000, group: None, app_ids: vec![] }])
//! }
//!
//! let pool = Arc::new(Pool::default());
//! let handler = TxHandler::new(
//!     HandlerConfig { decoder: decode, dedup_salt: Some([0; 16]), app_rate_limiting: false,
//!         ..HandlerConfig::default() },
//!     Arc::new(NothingCommitted),
//!     None,
//!     pool.clone(),
//! )?;
//! let bytes = [7u8; 40];
//! let msg = Message { bytes: &bytes, source: Source::Local, received_ns: 1 };
//! assert_eq!(handler.handle(&msg), Outcome::Enqueued);
//! assert_eq!(handler.handle(&msg), Outcome::Duplicate);
//! assert_eq!(handler.handle(&Message { bytes: b"short", ..msg }), Outcome::DecodeError);
//! handler.shutdown(); // drains the backlog into the pool
//! assert_eq!(pool.0.lock().unwrap().len(), 1);
//! let stats = handler.stats();
//! assert_eq!((stats.handled(), stats.enqueued, stats.pool_accepted), (3, 1, 1));
//! # Ok::<(), txgate_ledger::handler::HandlerConfigError>(())
//! ```

mod backlog;
mod dedup;
mod keys;
mod stats;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock, PoisonError};
use std::time::Duration;

use crossbeam_utils::{Backoff, CachePadded};
use txgate_ratelimit::{AppKey, AppRateLimiter, Origin};
use txgate_sync::sync::thread::{self, JoinHandle, Thread, ThreadId};
use txgate_sync::sync::{AtomicBool, Condvar, Mutex, fence};

use crate::{Round, Txid};
use txgate_algorand::codec::{self, DecodeError, Txn};

use backlog::Backlog;
use dedup::{Check, DedupCache};
use keys::{KeyBuf, KeyCache};
pub use stats::HandlerStats;
use stats::{Counter, Counters};
use txgate_sync::sync::{AtomicUsize, Ordering};

/// go-algorand `TxBacklogSize` default (config.Local, `version[27]:"26000"`): groups the backlog
/// holds before it drops.
pub const DEFAULT_BACKLOG_CAPACITY: usize = 26_000;

/// go-algorand `TxBacklogAppRateLimitingCongestionPct` default (config.Local,
/// `version[38]:"10"`): the app rate limiter runs once the backlog holds more than this percentage
/// of its capacity.
pub const DEFAULT_CONGESTION_PCT: u32 = 10;

/// go-algorand `TxIncomingFilterMaxSize` default (config.Local, `version[28]:"500000"`): keys in
/// the current generation of the raw-message dedup cache before it rotates.
pub const DEFAULT_DEDUP_MAX_SIZE: usize = 500_000;

/// go-algorand's dedup rotation period: `handler.msgCache.Start(handler.ctx, 60*time.Second)` in
/// `TxHandler.Start`.
pub const DEFAULT_DEDUP_INTERVAL: Duration = Duration::from_secs(60);

/// go-algorand `bounds.MaxTxGroupSize` (consensus `MaxTxGroupSize` = 16): transactions per group.
pub const DEFAULT_MAX_GROUP_SIZE: usize = 16;

/// Default of [`HandlerConfig::app_key_cache`]: (origin, app) keys remembered, 2^17 (32 bytes
/// each: 4 MiB, allocated when the handler is built).
pub const DEFAULT_APP_KEY_CACHE: usize = 131_072;

/// go-algorand `protocol.TxnTagMaxSize` (protocol/tags.go, returned by
/// `protocol.Tag.MaxMessageSize` for `TxnTag` = "TX"): bytes of a transaction message. Its
/// network layer drops a longer message of that tag before any handler reads it; upstream
/// chose it as "a bit bigger than a txn group can be" (see its `TestMaxSizesCorrect`).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 5_000_000;

/// The closed bit of `Inner::gate`.
const CLOSED: usize = 1;

/// One `handle` call in flight, in `Inner::gate`.
const IN_FLIGHT_ONE: usize = 2;

/// How long an idle worker sleeps before looking at the backlog again when no `handle` call wakes
/// it (a backstop: enqueuing wakes an idle worker; under loom there is no timeout, so the models
/// check the wake-up alone).
const IDLE_PARK: Duration = Duration::from_millis(5);

/// The committed-transaction check the ledger implements: is `txid` in a block of a round in
/// `first..=last`?
///
/// The handler asks it for every transaction of a group, over the transaction's validity window
/// (`first_valid`, `last_valid`). The ledger answers from its per-round blooms (a "no" never
/// touches the store) and confirms a "maybe" exactly, so a `true` must be exact: a false positive
/// would drop a valid transaction.
pub trait CommittedTxids {
    /// `true` iff `txid` is committed in a round in `first..=last` (an empty range when
    /// `first > last`: `false`). Rounds the ledger does not hold (pruned, or beyond its latest)
    /// count as "not committed here".
    fn is_committed(&self, txid: &Txid, first: Round, last: Round) -> bool;
}

/// Why the pool refused a group (go-algorand `TransactionPool.Remember` errors: pool full, fee
/// too low, lease conflict, ...).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("transaction pool rejected the group: {reason}")]
pub struct PoolReject {
    /// A short static reason for logs.
    pub reason: &'static str,
}

/// Where accepted groups go: the transaction pool.
///
/// Called from worker threads (and from the caller of [`TxHandler::drain_once`] or
/// [`TxHandler::shutdown`]), once per enqueued group.
pub trait PoolSink: Send + Sync {
    /// Offers `group` to the pool.
    ///
    /// # Errors
    ///
    /// [`PoolReject`] when the pool refuses it; for a group from a peer the handler then
    /// penalizes the group's apps for that origin.
    fn submit(&self, group: &Group) -> Result<(), PoolReject>;
}

/// Who sent a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// A gossip peer, reduced to its rate-limiter origin.
    Peer(Origin),
    /// Submitted locally (the node's own API): never rate limited, never penalized.
    Local,
}

/// One incoming transaction message.
#[derive(Clone, Copy, Debug)]
pub struct Message<'a> {
    /// The raw message: one or more concatenated msgpack `SignedTxn` maps (a group).
    pub bytes: &'a [u8],
    /// Who sent it.
    pub source: Source,
    /// Receive time, nanoseconds since the Unix epoch, from the caller's clock.
    pub received_ns: u64,
}

/// A decoded group on its way to the pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The transactions, in message order (1 to `max_group_size` of them).
    pub txns: Vec<Txn>,
    /// The distinct non-zero app ids of all transactions, in first-seen order.
    pub app_ids: Vec<u64>,
    /// Who sent it.
    pub source: Source,
    /// Receive time of its message (ns since the Unix epoch).
    pub received_ns: u64,
}

/// What [`TxHandler::handle`] did with a message. Each variant has a counter in
/// [`HandlerStats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Pushed onto the backlog; a worker will hand it to the pool.
    Enqueued,
    /// The same bytes were seen recently: dropped.
    Duplicate,
    /// Not a transaction group (malformed msgpack, or no transaction): rejected. go-algorand
    /// disconnects such a peer.
    DecodeError,
    /// More transactions than `max_group_size`: rejected.
    GroupTooLarge,
    /// More bytes than `max_message_size`: dropped unread (neither hashed nor decoded).
    MessageTooLarge,
    /// A transaction of the group is already committed: dropped.
    AlreadyCommitted,
    /// The app rate limiter dropped it (backlog congested).
    RateLimited,
    /// The backlog was full: dropped, and forgotten by the dedup cache so it may be resent.
    BacklogFull,
    /// The handler is shutting down: dropped.
    ShutDown,
}

/// The decoder the handler calls: bytes of a message to its transactions.
pub type DecodeFn = fn(&[u8]) -> Result<Vec<Txn>, DecodeError>;

/// Configuration of a [`TxHandler`]. Defaults are go-algorand's (see each constant).
#[derive(Clone, Debug)]
pub struct HandlerConfig {
    /// Groups the backlog holds (default [`DEFAULT_BACKLOG_CAPACITY`] = 26,000).
    pub backlog_capacity: usize,
    /// Consult the app rate limiter under congestion (default `true`, go-algorand
    /// `EnableTxBacklogAppRateLimiting`). Needs a limiter passed to [`TxHandler::new`].
    pub app_rate_limiting: bool,
    /// Derived rate-limiter keys remembered, one per (origin, app id) pair, in a fixed
    /// set-associative cache (default [`DEFAULT_APP_KEY_CACHE`] = 131,072, rounded up to a power
    /// of two; 0 derives every key for every message, as go-algorand does). Only used with a
    /// limiter.
    pub app_key_cache: usize,
    /// Congestion threshold in percent of `backlog_capacity`, 0 to 100 (default
    /// [`DEFAULT_CONGESTION_PCT`] = 10): the limiter runs when `backlog.len() >
    /// backlog_capacity * congestion_pct / 100`.
    pub congestion_pct: u32,
    /// Deduplicate raw messages (default `true`, go-algorand `TxIncomingFilteringFlags` = 1).
    pub dedup: bool,
    /// Keys in the dedup cache's current generation before it rotates (default
    /// [`DEFAULT_DEDUP_MAX_SIZE`] = 500,000); up to twice this many are remembered.
    pub dedup_max_size: usize,
    /// Dedup rotation period (default [`DEFAULT_DEDUP_INTERVAL`] = 60 s), on the messages'
    /// clock.
    pub dedup_interval: Duration,
    /// The 16-byte dedup salt; `None` (default) draws one from the OS.
    pub dedup_salt: Option<[u8; 16]>,
    /// Most transactions in one group (default [`DEFAULT_MAX_GROUP_SIZE`] = 16).
    pub max_group_size: usize,
    /// Most bytes in one message (default [`DEFAULT_MAX_MESSAGE_SIZE`] = 5,000,000, go-algorand's
    /// limit for transaction messages); longer ones get [`Outcome::MessageTooLarge`] before any
    /// other step.
    pub max_message_size: usize,
    /// The message decoder (default [`codec::decode_txn_message`]).
    pub decoder: DecodeFn,
}

impl Default for HandlerConfig {
    fn default() -> Self {
        Self {
            backlog_capacity: DEFAULT_BACKLOG_CAPACITY,
            app_rate_limiting: true,
            app_key_cache: DEFAULT_APP_KEY_CACHE,
            congestion_pct: DEFAULT_CONGESTION_PCT,
            dedup: true,
            dedup_max_size: DEFAULT_DEDUP_MAX_SIZE,
            dedup_interval: DEFAULT_DEDUP_INTERVAL,
            dedup_salt: None,
            max_group_size: DEFAULT_MAX_GROUP_SIZE,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            decoder: codec::decode_txn_message,
        }
    }
}

impl HandlerConfig {
    /// Checks the configuration as [`TxHandler::new`] does, without building anything: the
    /// checks a CLI or a node's config loader runs before it starts.
    ///
    /// ```
    /// use txgate_ledger::handler::{HandlerConfig, HandlerConfigError};
    /// let bad = HandlerConfig { congestion_pct: 150, ..HandlerConfig::default() };
    /// assert!(matches!(bad.validate(), Err(HandlerConfigError::CongestionPct(150))));
    /// assert!(HandlerConfig::default().validate().is_ok());
    /// ```
    ///
    /// # Errors
    ///
    /// [`HandlerConfigError`] for a zero backlog capacity, group size or message size, a
    /// congestion percentage above 100, or (with dedup on) a zero dedup size or interval.
    pub fn validate(&self) -> Result<(), HandlerConfigError> {
        if self.backlog_capacity == 0 {
            return Err(HandlerConfigError::ZeroBacklogCapacity);
        }
        if self.congestion_pct > 100 {
            return Err(HandlerConfigError::CongestionPct(self.congestion_pct));
        }
        if self.max_group_size == 0 {
            return Err(HandlerConfigError::ZeroMaxGroupSize);
        }
        if self.max_message_size == 0 {
            return Err(HandlerConfigError::ZeroMaxMessageSize);
        }
        if self.dedup {
            if self.dedup_max_size == 0 {
                return Err(HandlerConfigError::ZeroDedupMaxSize);
            }
            if self.dedup_interval.is_zero() {
                return Err(HandlerConfigError::ZeroDedupInterval);
            }
        }
        Ok(())
    }

    /// The backlog length above which the app rate limiter runs:
    /// `backlog_capacity * congestion_pct / 100`, floored (2,600 by default). go-algorand computes
    /// `int(float64(TxBacklogSize) * float64(pct) / 100)`, the same value for these integers.
    pub fn congestion_threshold(&self) -> usize {
        let t = (self.backlog_capacity as u128) * u128::from(self.congestion_pct) / 100;
        usize::try_from(t).unwrap_or(usize::MAX)
    }
}

/// Why [`TxHandler::new`] refused a configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandlerConfigError {
    /// `backlog_capacity` is zero.
    #[error("backlog_capacity must be at least 1")]
    ZeroBacklogCapacity,
    /// `congestion_pct` is above 100 (go-algorand rejects the same).
    #[error("congestion_pct must be 0..=100, got {0}")]
    CongestionPct(u32),
    /// Dedup is on with `dedup_max_size` zero.
    #[error("dedup_max_size must be at least 1 when dedup is on")]
    ZeroDedupMaxSize,
    /// Dedup is on with a zero (or sub-nanosecond) `dedup_interval`.
    #[error("dedup_interval must be at least 1 ns when dedup is on")]
    ZeroDedupInterval,
    /// `max_group_size` is zero.
    #[error("max_group_size must be at least 1")]
    ZeroMaxGroupSize,
    /// `max_message_size` is zero (every message would be dropped).
    #[error("max_message_size must be at least 1")]
    ZeroMaxMessageSize,
    /// `app_rate_limiting` is on but no limiter was given (go-algorand rejects an enabled app
    /// limiter of size zero).
    #[error("app_rate_limiting is on but no AppRateLimiter was given (pass one, or turn it off)")]
    MissingLimiter,
    /// The OS random source failed while drawing the dedup salt.
    #[error("drawing the dedup salt from the OS failed: {0}")]
    Salt(getrandom::Error),
}

/// Why [`TxHandler::start_workers`] refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// Workers were started already.
    #[error("workers already started")]
    AlreadyStarted,
    /// The handler is shut down.
    #[error("the handler is shut down")]
    ShutDown,
    /// `n` was zero.
    #[error("start at least one worker")]
    ZeroWorkers,
    /// The OS refused a thread.
    #[error("spawning worker {index} failed: {source}")]
    Spawn {
        /// Index of the worker that failed (those before it run and are joined at shutdown).
        index: usize,
        /// The OS error.
        source: std::io::Error,
    },
}

/// go-algorand's transaction handler without signature checks: see the [module docs](self).
///
/// `handle` takes `&self` and may be called from any number of threads; the handler is
/// `Send + Sync` (share it in an [`Arc`]). Dropping it shuts it down.
pub struct TxHandler {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TxHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxHandler")
            .field("backlog_capacity", &self.inner.backlog.capacity())
            .field("congestion_threshold", &self.inner.congestion_threshold)
            .field("limiter", &self.inner.limiter.is_some())
            .finish_non_exhaustive()
    }
}

struct Inner {
    dedup: Option<DedupCache>,
    decoder: DecodeFn,
    max_group_size: usize,
    max_message_size: usize,
    committed: Arc<dyn CommittedTxids + Send + Sync>,
    /// `None` when app rate limiting is off.
    limiter: Option<Arc<AppRateLimiter>>,
    /// Keys derived by `limiter`; `None` without a limiter or with a zero-sized cache.
    key_cache: Option<KeyCache>,
    congestion_threshold: usize,
    sink: Arc<dyn PoolSink>,
    backlog: Backlog<Group>,
    counters: Counters,
    /// The shutdown gate: bit 0 = closed (set once by `shutdown`), bits 1.. = `handle` calls in
    /// flight (between entering the gate and their last counter update). One word, so every
    /// entry and the close are read-modify-writes of one location, totally ordered by its
    /// modification order: an entry either comes before the close (and shutdown waits for it) or
    /// after it (and sees the closed bit).
    // Invariant: once the closed bit is set and the count reads 0, no push onto the backlog can
    // follow.
    gate: AtomicUsize,
    /// One slot per worker, set once (before the workers are spawned) by `start_workers`.
    slots: OnceLock<Box<[CachePadded<WorkerSlot>]>>,
    /// Join handles of the running workers; `shutdown` takes them.
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// Where `shutdown` stands, and who runs it.
    phase: Mutex<Phase>,
    /// Signalled when `phase` becomes `Done`.
    phase_done: Condvar,
}

/// A worker's wake-up slot.
#[derive(Default)]
struct WorkerSlot {
    /// The worker's thread, set by the worker itself before it first processes a group.
    thread: OnceLock<Thread>,
    /// The worker is parked or about to park (see `Inner::wake_one`).
    // Invariant: only set after `thread` is.
    parked: AtomicBool,
}

/// Progress of `shutdown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No shutdown has started waiting and joining yet.
    Open,
    /// The thread with this id waits for `handle` calls in flight, joins the workers and drains.
    Running(ThreadId),
    /// Every enqueued group has been handed to the sink.
    Done,
}

impl TxHandler {
    /// A handler with `config`, checking commits through `committed`, rate limiting through
    /// `limiter` (when `config.app_rate_limiting`), and handing groups to `sink`. No worker runs
    /// until [`start_workers`](Self::start_workers).
    ///
    /// # Errors
    ///
    /// [`HandlerConfigError`] for a zero capacity, size, interval, group size or message size, a
    /// percentage above 100, rate limiting on without a limiter, or a failing OS random source.
    pub fn new(
        config: HandlerConfig,
        committed: Arc<dyn CommittedTxids + Send + Sync>,
        limiter: Option<Arc<AppRateLimiter>>,
        sink: Arc<dyn PoolSink>,
    ) -> Result<Self, HandlerConfigError> {
        config.validate()?;
        let limiter = if config.app_rate_limiting {
            Some(limiter.ok_or(HandlerConfigError::MissingLimiter)?)
        } else {
            None
        };
        let dedup = if config.dedup {
            let interval_ns = u64::try_from(config.dedup_interval.as_nanos()).unwrap_or(u64::MAX);
            let salt = match config.dedup_salt {
                Some(salt) => salt,
                None => {
                    let mut salt = [0; 16];
                    getrandom::fill(&mut salt).map_err(HandlerConfigError::Salt)?;
                    salt
                }
            };
            Some(DedupCache::new(salt, config.dedup_max_size, interval_ns))
        } else {
            None
        };
        Ok(Self {
            inner: Arc::new(Inner {
                dedup,
                decoder: config.decoder,
                max_group_size: config.max_group_size,
                max_message_size: config.max_message_size,
                committed,
                key_cache: (limiter.is_some() && config.app_key_cache > 0)
                    .then(|| KeyCache::new(config.app_key_cache)),
                limiter,
                congestion_threshold: config.congestion_threshold(),
                sink,
                backlog: Backlog::new(config.backlog_capacity),
                counters: Counters::default(),
                gate: AtomicUsize::new(0),
                slots: OnceLock::new(),
                workers: Mutex::new(Vec::new()),
                phase: Mutex::new(Phase::Open),
                phase_done: Condvar::new(),
            }),
        })
    }

    /// Runs the synchronous part of the pipeline on `msg` (see the [module docs](self)) and
    /// counts its outcome. Never blocks, beyond dashmap's shard locks in the dedup cache and, at
    /// a dedup rotation tick, the few atomic operations of the thread that steps the generation;
    /// never panics on any input.
    pub fn handle(&self, msg: &Message<'_>) -> Outcome {
        let inner = &*self.inner;
        // Relaxed: a refusal that leaves the gate's count alone once the close is visible, so
        // calls arriving after shutdown began cannot keep the count above zero and starve the
        // wait for it; the RMW below decides for calls that race the close.
        if inner.gate.load(Ordering::Relaxed) & CLOSED != 0 {
            inner.counters.count(Outcome::ShutDown);
            return Outcome::ShutDown;
        }
        // Relaxed: entering orders nothing before it; what matters is this RMW's place in the
        // gate's modification order relative to shutdown's `fetch_or` (see `Inner::gate`).
        let gate = inner.gate.fetch_add(IN_FLIGHT_ONE, Ordering::Relaxed);
        // Leaves the gate even if the pipeline unwinds (a panicking `CommittedTxids`, decoder or
        // clock of the caller's), so `shutdown` never waits for a call that is gone.
        let in_flight = InFlight(&inner.gate);
        let outcome = if gate & CLOSED != 0 {
            Outcome::ShutDown
        } else {
            inner.pipeline(msg)
        };
        inner.counters.count(outcome);
        if outcome == Outcome::Enqueued {
            inner.wake_one();
        }
        drop(in_flight);
        outcome
    }

    /// Starts `n` worker threads that pop groups and hand them to the sink until shutdown.
    ///
    /// # Errors
    ///
    /// [`WorkerError`] when `n` is zero, workers already run, the handler is shut down, or the OS
    /// refuses a thread (those already spawned keep running).
    pub fn start_workers(&self, n: usize) -> Result<(), WorkerError> {
        if n == 0 {
            return Err(WorkerError::ZeroWorkers);
        }
        let mut workers = self
            .inner
            .workers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Relaxed: shutdown sets the bit before it takes this lock, so under the lock the bit
        // is visible iff shutdown already took the workers.
        if self.inner.gate.load(Ordering::Relaxed) & CLOSED != 0 {
            return Err(WorkerError::ShutDown);
        }
        if self.inner.slots.get().is_some() {
            return Err(WorkerError::AlreadyStarted);
        }
        // Set before any worker runs: a worker indexes its slot, and the spawn orders the set
        // before the worker's first step.
        let _ = self
            .inner
            .slots
            .set((0..n).map(|_| CachePadded::default()).collect());
        for index in 0..n {
            let inner = Arc::clone(&self.inner);
            match thread::Builder::new()
                .name(format!("txgate-handler-{index}"))
                .spawn(move || inner.worker_loop(index))
            {
                Ok(handle) => workers.push(handle),
                // The slots of workers never spawned stay unset and are never woken.
                Err(source) => return Err(WorkerError::Spawn { index, source }),
            }
        }
        Ok(())
    }

    /// Pops one group from the backlog and hands it to the sink on the caller's thread (the
    /// worker step, for deterministic tests and single-threaded embedders). Returns `false` when
    /// the backlog was empty.
    pub fn drain_once(&self) -> bool {
        match self.inner.backlog.pop() {
            Some(group) => {
                self.inner.process(group);
                true
            }
            None => false,
        }
    }

    /// Runs [`drain_once`](Self::drain_once) until the backlog is empty; returns how many groups
    /// it processed.
    pub fn drain(&self) -> usize {
        let mut n = 0;
        while self.drain_once() {
            n += 1;
        }
        n
    }

    /// Closes the handler (later messages get [`Outcome::ShutDown`]), waits for `handle` calls in
    /// flight, joins the workers once the backlog is empty, and drains any remainder on the
    /// caller's thread. Afterwards every enqueued group has been handed to the sink exactly once.
    /// Idempotent; also run on drop.
    ///
    /// Concurrent calls: one of them does the work and the others wait until it is done, so
    /// every call returns only once the backlog has reached the sink. Two calls cannot wait:
    ///
    /// - on one of the handler's own workers (a [`PoolSink`] that shuts the handler down, or
    ///   drops its last reference to it), the call closes the handler and returns at once: a
    ///   thread cannot join itself. The workers still empty the backlog and exit; a later
    ///   `shutdown` on another thread (or the drop) waits for them.
    /// - from inside the sink while this same thread runs the shutdown's final drain, the call
    ///   returns at once (the outer call finishes the work).
    ///
    /// Calling it from a [`CommittedTxids`] or decoder, inside a `handle` call, never returns:
    /// shutdown waits for every `handle` call in flight, that one included.
    ///
    /// A worker that panicked (only possible through a bug in the handler itself: sink panics
    /// are caught and counted) is joined and ignored; its backlog share is drained here.
    pub fn shutdown(&self) {
        self.inner.shutdown();
    }

    /// A snapshot of the counters and gauges.
    pub fn stats(&self) -> HandlerStats {
        let inner = &*self.inner;
        let mut stats = inner.counters.snapshot();
        stats.backlog_len = inner.backlog.len();
        stats.dedup_rotations = inner.dedup.as_ref().map_or(0, DedupCache::rotations);
        stats
    }

    /// The backlog length above which the app rate limiter runs.
    pub fn congestion_threshold(&self) -> usize {
        self.inner.congestion_threshold
    }

    /// Groups in the backlog now.
    pub fn backlog_len(&self) -> usize {
        self.inner.backlog.len()
    }

    /// Messages remembered by the dedup cache now (current + previous generation; 0 with dedup
    /// off). Walks the cache: for tests and diagnostics.
    pub fn dedup_len(&self) -> usize {
        self.inner.dedup.as_ref().map_or(0, DedupCache::live_len)
    }
}

impl Drop for TxHandler {
    fn drop(&mut self) {
        self.inner.shutdown();
    }
}

impl Inner {
    /// Steps 0 to 5 for an open handler.
    fn pipeline(&self, msg: &Message<'_>) -> Outcome {
        // 0. Size, before any work proportional to it.
        if msg.bytes.len() > self.max_message_size {
            return Outcome::MessageTooLarge;
        }
        // 1. Raw-message dedup.
        let inserted = match &self.dedup {
            Some(dedup) => match dedup.check_and_put(msg.bytes, msg.received_ns) {
                Check::Duplicate => return Outcome::Duplicate,
                Check::New(inserted) => Some(inserted),
            },
            None => None,
        };
        // 2. Decode. Upstream keeps the message in the dedup cache after every drop except a
        // full backlog, so resending the same bad bytes is a duplicate.
        let txns = match (self.decoder)(msg.bytes) {
            Ok(txns) if txns.is_empty() => return Outcome::DecodeError,
            Ok(txns) if txns.len() > self.max_group_size => return Outcome::GroupTooLarge,
            Ok(txns) => txns,
            Err(_) => return Outcome::DecodeError,
        };
        // 3. Already committed, over each transaction's validity window.
        if txns.iter().any(|t| {
            self.committed
                .is_committed(&t.txid, t.first_valid, t.last_valid)
        }) {
            return Outcome::AlreadyCommitted;
        }
        let app_ids = group_app_ids(&txns);
        // 4. App rate limiter, only under congestion, only for peers' app calls.
        if let (Some(limiter), Source::Peer(origin)) = (&self.limiter, &msg.source)
            && !app_ids.is_empty()
            && self.backlog.len() > self.congestion_threshold
        {
            self.counters.bump(Counter::LimiterChecks);
            let now = msg.received_ns;
            let decision = self
                .with_cached_keys(limiter, origin, &app_ids, |keys| {
                    limiter.admit_keys(keys, now)
                })
                .unwrap_or_else(|| limiter.admit(&app_ids, origin, now));
            if !decision.is_admit() {
                return Outcome::RateLimited;
            }
        }
        // 5. Non-blocking push; full: forget the message so it may be resent.
        let group = Group {
            txns,
            app_ids,
            source: msg.source,
            received_ns: msg.received_ns,
        };
        match self.backlog.push(group) {
            Ok(()) => Outcome::Enqueued,
            Err(_) => {
                if let (Some(dedup), Some(inserted)) = (&self.dedup, inserted) {
                    dedup.remove(&inserted);
                }
                Outcome::BacklogFull
            }
        }
    }

    /// Hands `group` to the sink and counts the result; penalizes a peer's rejected app calls.
    fn process(&self, group: Group) {
        match catch_unwind(AssertUnwindSafe(|| self.sink.submit(&group))) {
            Ok(Ok(())) => self.counters.bump(Counter::PoolAccepted),
            Ok(Err(_)) => {
                self.counters.bump(Counter::PoolRejected);
                if let (Some(limiter), Source::Peer(origin)) = (&self.limiter, &group.source)
                    && !group.app_ids.is_empty()
                {
                    let now = group.received_ns;
                    let cached = self.with_cached_keys(limiter, origin, &group.app_ids, |keys| {
                        limiter.penalize_keys(keys, now)
                    });
                    if cached.is_none() {
                        limiter.penalize(&group.app_ids, origin, now);
                    }
                    self.counters.bump(Counter::Penalized);
                }
            }
            Err(_) => self.counters.bump(Counter::SinkPanicked),
        }
    }

    /// `f` of the limiter keys of `app_ids` from `origin`, taken from the key cache; `None` when
    /// the cache is off (the caller then lets the limiter derive them).
    fn with_cached_keys<R>(
        &self,
        limiter: &AppRateLimiter,
        origin: &Origin,
        app_ids: &[u64],
        f: impl FnOnce(&[AppKey]) -> R,
    ) -> Option<R> {
        let cache = self.key_cache.as_ref()?;
        let mut keys = KeyBuf::new();
        cache.keys(limiter, origin, app_ids, &mut keys);
        Some(f(keys.as_slice()))
    }

    /// After a push: unparks one parked worker, if any.
    ///
    /// The handshake with a worker going idle (`worker_loop`) is a store-load pair on each side,
    /// made safe by a `SeqCst` fence on each side (C++20 [atomics.fences] and [atomics.order]
    /// p4.4, the rules `std::sync::atomic` follows): this call writes the backlog then reads the
    /// worker's `parked` flag; the worker writes its flag then reads the backlog. Of the two
    /// fences, the one later in the single total order makes its thread see the other thread's
    /// write: either the worker sees this group and does not park, or this call sees the flag and
    /// unparks it. (Fences rather than `SeqCst` accesses: loom models the fences exactly but
    /// treats `SeqCst` loads and stores as `AcqRel`, and the queue's own orderings are not ours
    /// to rely on.) Which parked worker is woken does not matter: a woken worker empties the
    /// backlog before it parks again.
    fn wake_one(&self) {
        // SeqCst fence: orders the push before the flag loads below (see above).
        fence(Ordering::SeqCst);
        let Some(slots) = self.slots.get() else {
            return; // no worker: the caller drains
        };
        for slot in slots.iter() {
            // Acquire: pairs with the worker's Release store of the flag, so its `thread`, set
            // before, is visible.
            if slot.parked.load(Ordering::Acquire)
                && let Some(thread) = slot.thread.get()
            {
                thread.unpark();
                return;
            }
        }
    }

    /// `true` on one of this handler's worker threads.
    fn on_worker_thread(&self, me: ThreadId) -> bool {
        self.slots.get().is_some_and(|slots| {
            slots
                .iter()
                .any(|slot| slot.thread.get().is_some_and(|t| t.id() == me))
        })
    }

    /// The gate's latest value: `== CLOSED` once shutdown began and no `handle` call can push
    /// any more; the closed bit with calls in flight while shutdown waits for them.
    fn gate_now(&self) -> usize {
        // Acquire: pairs with the Release exit of each `handle` call, so the push of the last
        // one is visible to the pops that follow. A read-modify-write rather than a load: it
        // reads the last value in the gate's modification order (C++20 [atomics.order] p10),
        // never a stale one. Only idle workers and shutdown's wait run it.
        self.gate.fetch_or(0, Ordering::Acquire)
    }

    fn worker_loop(&self, index: usize) {
        let Some(slot) = self.slots.get().and_then(|slots| slots.get(index)) else {
            debug_assert!(false, "worker {index} has no slot");
            return;
        };
        let _ = slot.thread.set(thread::current());
        let backoff = Backoff::new();
        loop {
            if let Some(group) = self.backlog.pop() {
                self.process(group);
                backoff.reset();
                continue;
            }
            if self.gate_now() & CLOSED != 0 {
                // Shutting down: empty what is there and exit. Calls still in flight may push
                // after this; shutdown waits for them and drains the rest itself.
                while let Some(group) = self.backlog.pop() {
                    self.process(group);
                }
                return;
            }
            // Spin a little before parking (outside loom, whose models would only grow).
            if !cfg!(loom) && !backoff.is_completed() {
                backoff.snooze();
                continue;
            }
            // Release: see `wake_one`, whose Acquire load then sees `slot.thread`.
            slot.parked.store(true, Ordering::Release);
            // SeqCst fence: orders the flag store before the backlog read (see `wake_one`).
            fence(Ordering::SeqCst);
            // Shutdown closes the gate before it unparks the workers: a worker that does not see
            // the closed bit here parks and gets that unpark (or has its token already).
            if self.backlog.is_empty() && self.gate_now() & CLOSED == 0 {
                thread::park_timeout(IDLE_PARK);
            }
            // Relaxed: a stale `true` costs one needless unpark; the next loop re-reads the
            // backlog.
            slot.parked.store(false, Ordering::Relaxed);
        }
    }

    fn shutdown(&self) {
        // Relaxed: only the RMW's place in the gate's modification order matters (see `gate`);
        // the wait below acquires what in-flight calls did.
        self.gate.fetch_or(CLOSED, Ordering::Relaxed);
        let me = thread::current().id();
        if self.on_worker_thread(me) {
            return; // a sink on a worker: the workers finish the backlog and exit on their own
        }
        {
            let mut phase = self.phase.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                match *phase {
                    Phase::Open => {
                        *phase = Phase::Running(me);
                        break;
                    }
                    // Re-entered from the sink during this thread's own drain below.
                    Phase::Running(runner) if runner == me => return,
                    Phase::Running(_) => {
                        phase = self
                            .phase_done
                            .wait(phase)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                    Phase::Done => return,
                }
            }
        }
        // Marks the shutdown done on every exit, unwinding included, so waiters never hang.
        let _done = ShutdownDone(self);
        // Waits for the calls in flight (their Release exits pair with `gate_now`'s Acquire).
        while self.gate_now() != CLOSED {
            thread::yield_now();
        }
        let workers =
            std::mem::take(&mut *self.workers.lock().unwrap_or_else(PoisonError::into_inner));
        for w in &workers {
            w.thread().unpark();
        }
        for w in workers {
            // A worker only panicked through a handler bug; its remaining share is drained below.
            let _ = w.join();
        }
        while let Some(group) = self.backlog.pop() {
            self.process(group);
        }
    }
}

/// The distinct non-zero app ids of `txns`, in first-seen order.
fn group_app_ids(txns: &[Txn]) -> Vec<u64> {
    txgate_algorand::codec::distinct_app_ids(txns.iter().flat_map(|t| t.app_ids.iter().copied()))
}

/// The running shutdown; dropping it marks the shutdown done and wakes the calls waiting for it.
struct ShutdownDone<'a>(&'a Inner);

impl Drop for ShutdownDone<'_> {
    fn drop(&mut self) {
        *self.0.phase.lock().unwrap_or_else(PoisonError::into_inner) = Phase::Done;
        self.0.phase_done.notify_all();
    }
}

/// One `handle` call inside the shutdown gate; leaving it (on drop, so also on unwind)
/// decrements the gate's count.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        // Release: the push and the counter of the call happen before shutdown's Acquire read
        // of a zero count, so its drain sees the pushed group.
        self.0.fetch_sub(IN_FLIGHT_ONE, Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn txn(apps: &[u64]) -> Txn {
        Txn {
            txid: Txid::default(),
            tx_type: b"appl".to_vec(),
            sender: [0; 32],
            first_valid: 1,
            last_valid: 2,
            group: None,
            app_ids: apps.to_vec(),
        }
    }

    #[test]
    fn group_app_ids_are_distinct_nonzero_in_order() {
        let txns = [txn(&[5, 0, 7]), txn(&[7, 9]), txn(&[]), txn(&[5])];
        assert_eq!(group_app_ids(&txns), vec![5, 7, 9]);
        assert!(group_app_ids(&[]).is_empty());
    }

    #[test]
    fn congestion_threshold_floors() {
        let c = |cap, pct| {
            HandlerConfig {
                backlog_capacity: cap,
                congestion_pct: pct,
                ..HandlerConfig::default()
            }
            .congestion_threshold()
        };
        assert_eq!(HandlerConfig::default().congestion_threshold(), 2_600);
        assert_eq!(c(19, 10), 1);
        assert_eq!(c(20, 10), 2);
        assert_eq!(c(7, 0), 0);
        assert_eq!(c(7, 100), 7);
    }
}
