//! txgate-ledger: wires txgate-bloom and txgate-ratelimit into a node's transaction ingress.
//!
//! The Algorand wire format (blocks, txids, sources) is [`txgate_algorand`]; [`Round`] and
//! [`Txid`] are re-exported from it. `store` and `handler` do not use each other: the one link,
//! the ledger as the handler's committed check, is the `impl CommittedTxids for Ledger` below.
//!
//! # Example
//!
//! A ledger as the tx handler's committed check: a resent transaction of a committed round is
//! dropped, a new one goes to the pool.
//!
//! ```
//! use std::sync::Arc;
//! use txgate_algorand::synth::{SynthTxn, encode_block, encode_txn_message};
//! use txgate_ledger::handler::{
//!     Group, HandlerConfig, Message, Outcome, PoolReject, PoolSink, Source, TxHandler,
//! };
//! use txgate_ledger::store::{Ledger, LedgerConfig};
//!
//! struct Pool;
//! impl PoolSink for Pool {
//!     fn submit(&self, _group: &Group) -> Result<(), PoolReject> {
//!         Ok(())
//!     }
//! }
//!
//! let dir = tempfile::tempdir()?;
//! let ledger = Arc::new(Ledger::open(dir.path(), LedgerConfig::default())?);
//! let (net, hash) = ("testnet-v1.0", [0; 32]);
//! let committed = SynthTxn::payment([7; 32], 1, 1000);
//! ledger.add_block(&encode_block(1, net, &hash, 0, &[committed.clone()]))?;
//!
//! let config = HandlerConfig::default().with_app_rate_limiting(false);
//! let handler = TxHandler::new(config, ledger, None, Arc::new(Pool))?;
//! let outcome = |txn: &SynthTxn| {
//!     let bytes = encode_txn_message(std::slice::from_ref(txn), net, &hash);
//!     let message = Message { bytes: &bytes, source: Source::Local, received_ns: 1 };
//!     handler.handle(&message)
//! };
//! assert_eq!(outcome(&committed), Outcome::AlreadyCommitted);
//! assert_eq!(outcome(&SynthTxn::payment([8; 32], 1, 1000)), Outcome::Enqueued);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Modules
//!
//! [`store`]: the redb-backed ledger of Algorand blocks with per-round txid blooms over the
//! window of the latest MaxTxnLife + 1 rounds ([`store::Ledger`]):
//!
//! - `store/ledger.rs`: the [`Ledger`](store::Ledger) type, its invariants, `add_block` (one
//!   write transaction per round, then the bloom published) and the lookups (`lookup_txid`,
//!   `find_txid`, `block`, `round_bloom`).
//! - `store/open.rs`: `Ledger::open`: configuration and format checks, formats 1 and 2 opened as 3,
//!   pruning at open, the window's blooms loaded, built from index rows or rebuilt ([`store::OpenReport`]).
//! - `store/index.rs`: a round's bloom and txid index row **built** from its block
//!   (`build_round_bloom`, `build_round_index`), its bloom from its index row
//!   (`bloom_of_index_row`), and the searches of every format's rows.
//! - `store/rows.rs`: a round's index row (its bloom row without the index) **persisted**
//!   (`persist_round_rows`), pruning, the network's rows and the network check.
//! - `store/blocks.rs`: the block codec, and the one read of a stored block.
//! - `store/tables.rs`: the database file, format version, tables and keys (private).
//! - `store/window.rs`: the lock-free in-memory window of round blooms (seize-reclaimed).
//! - `store/config.rs`, `store/error.rs`, `store/genesis.rs`: [`store::LedgerConfig`] and the
//!   defaults, [`store::LedgerError`], [`store::Genesis`] (the network check's rule).
//!
//! [`handler`]: go-algorand's `TxHandler` pipeline ([`handler::TxHandler`]):
//!
//! - `handler/tx_handler.rs`: the [`TxHandler`](handler::TxHandler) type: `new`, `handle`,
//!   workers, drain, shutdown, stats.
//! - `handler/pipeline.rs`: a message's steps (size, dedup, decode, committed check, app rate
//!   limiter under congestion, backlog) and the worker step into the pool.
//! - `handler/workers.rs`: the worker loop, the park/unpark handshake, the shutdown sequence.
//! - `handler/inner.rs`: the state shared with the workers (shutdown gate, wake-up slots).
//! - `handler/config.rs`, `handler/types.rs`: [`handler::HandlerConfig`] with go-algorand's
//!   defaults and errors; the traits and values at the edges ([`handler::CommittedTxids`],
//!   [`handler::PoolSink`], [`handler::Message`], [`handler::Outcome`]).
//! - `handler/dedup.rs`, `handler/keys.rs`, `handler/backlog.rs`, `handler/stats.rs`: the
//!   raw-message dedup cache, the rate-limiter key cache, the bounded backlog, the counters.

pub mod handler;
pub mod store;

pub use txgate_algorand::{Round, Txid, TxidParseError};

/// The ledger as the tx handler's committed check: [`store::Ledger::find_txid`] over the
/// transaction's validity window (go-algorand's `TxHandler` asks the ledger whether a txid is
/// committed in `FirstValid..=LastValid`). Only the latest MaxTxnLife + 1 rounds are searched;
/// a ledger error counts as "not committed" (the transaction pool catches a real duplicate).
impl handler::CommittedTxids for store::Ledger {
    fn is_committed(&self, txid: &Txid, first: Round, last: Round) -> bool {
        first <= last && matches!(self.find_txid(txid, first..=last), Ok(Some(_)))
    }
}

/// The crate README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

// A ledger and a tx handler are shared across a node's threads (`Arc<Ledger>` as the committed
// check, the handler called from every peer connection): a change that made one lose `Send` or
// `Sync` fails to compile here rather than in a user's crate.
const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<store::Ledger>();
    shareable::<handler::TxHandler>();
};
