//! txgate-ledger: a persistent Algorand ledger with per-round txid bloom filters, the Algorand
//! block codec it reads, and the transaction handler pipeline in front of it.
//!
//! Modules:
//! - [`codec`]: msgpack blocks and transactions as algod serves and stores them; txids by the
//!   go-algorand rule; app ids and groups of each transaction.
//! - [`source`]: block sources (one file per round, directories, tar and tar.bz2 archives).
//! - [`store`]: the redb-backed ledger with per-round blooms, `lookup_txid` and `find_txid`.
//! - [`handler`]: go-algorand's transaction handler pipeline (dedup, decode, committed check,
//!   app rate limiter under congestion, bounded backlog, workers, pool sink).

pub mod codec;
pub mod handler;
pub mod source;
pub mod store;
pub mod synth;
mod types;

pub use types::{Round, Txid, TxidParseError};
