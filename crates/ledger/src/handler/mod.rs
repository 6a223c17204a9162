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
//! 2. **Decode** ([`codec::decode_txn_message`](txgate_algorand::codec::decode_txn_message) by
//!    default): bad bytes or an empty group: [`Outcome::DecodeError`]; more than
//!    [`HandlerConfig::max_group_size`] transactions: [`Outcome::GroupTooLarge`] (go-algorand
//!    `bounds.MaxTxGroupSize` = 16).
//! 3. **Already committed**: each transaction's txid over its validity window
//!    `[first_valid, last_valid]` through [`CommittedTxids`] (the ledger's blooms):
//!    [`Outcome::AlreadyCommitted`]. go-algorand runs this check (`txPool.Test`) in the backlog
//!    worker; here it runs before the backlog, so committed groups take no backlog slot.
//! 4. **App rate limiter**, only when the backlog is congested: `backlog.len() >
//!    backlog_capacity x congestion_pct / 100` (integer floor; go-algorand
//!    `congestedARL := len(handler.backlogQueue) > handler.appLimiterBacklogThreshold`), for a
//!    group from a peer that calls at least one app: [`Outcome::RateLimited`] when
//!    [`AppRateLimiter::admit_keys`](txgate_ratelimit::AppRateLimiter::admit_keys) drops it. The
//!    (origin, app) keys come from a bounded cache ([`HandlerConfig::app_key_cache`]), so each is
//!    derived (one BLAKE2b-256) once per peer and app rather than once per message as upstream
//!    does.
//! 5. **Backlog**: a non-blocking push onto a bounded lock-free queue. Full:
//!    [`Outcome::BacklogFull`], and the message's dedup entry is removed so the peer may resend it
//!    (go-algorand `deleteFromCaches`). Else [`Outcome::Enqueued`].
//!
//! Worker threads ([`TxHandler::start_workers`]) pop groups and hand them to the [`PoolSink`]. A
//! rejected group that came from a peer (not [`Source::Local`]) penalizes its apps for that origin
//! ([`AppRateLimiter::penalize`](txgate_ratelimit::AppRateLimiter::penalize): `max(1, L / 4)` per
//! app). Tests drive the same step on their own thread with [`TxHandler::drain_once`].
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
//! # Modules
//!
//! - `tx_handler.rs`: [`TxHandler`]: building it, [`TxHandler::handle`], workers, draining,
//!   shutdown, stats.
//! - `pipeline.rs`: steps 0 to 5 of a message, and the worker step that hands a group to the
//!   pool (and penalizes a rejected peer's apps).
//! - `workers.rs`: the worker loop, the park/unpark handshake, the shutdown sequence.
//! - `inner.rs`: the state shared with the workers: the shutdown gate, the wake-up slots.
//! - `config.rs`: [`HandlerConfig`], the go-algorand defaults, [`HandlerConfig::validate`], the
//!   errors; `interface.rs`: [`CommittedTxids`], [`PoolSink`], [`Message`], [`Group`], [`Outcome`].
//! - `dedup.rs` (raw-message dedup cache), `keys.rs` (rate-limiter key cache), `backlog.rs`
//!   (bounded backlog), `stats.rs` ([`HandlerStats`]).
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
//!     Ok(vec![Txn::new(Txid(id), b"pay").with_first_valid(1).with_last_valid(1000)])
//! }
//!
//! let pool = Arc::new(Pool::default());
//! let handler = TxHandler::new(
//!     HandlerConfig::default()
//!         .with_decoder(decode)
//!         .with_dedup_salt(Some([0; 16]))
//!         .with_app_rate_limiting(false),
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
mod config;
mod dedup;
mod inner;
mod interface;
mod keys;
mod pipeline;
mod stats;
mod tx_handler;
mod workers;

pub use config::{
    DEFAULT_APP_KEY_CACHE, DEFAULT_BACKLOG_CAPACITY, DEFAULT_CONGESTION_PCT,
    DEFAULT_DEDUP_INTERVAL, DEFAULT_DEDUP_MAX_SIZE, DEFAULT_MAX_GROUP_SIZE,
    DEFAULT_MAX_MESSAGE_SIZE, HandlerConfig, HandlerConfigError, MAX_APP_KEY_CACHE,
    MAX_BACKLOG_CAPACITY, WorkerError,
};
pub use interface::{
    CommittedTxids, DecodeFn, Group, Message, Outcome, PoolReject, PoolSink, Source,
};
pub use stats::HandlerStats;
pub use tx_handler::TxHandler;
