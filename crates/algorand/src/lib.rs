//! txgate-algorand: Algorand's wire format as txgate reads it.
//!
//! Modules:
//! - [`codec`]: msgpack blocks and transaction messages as algod serves and peers gossip them;
//!   the txid rule (go-algorand `Transaction.ID`); app ids of each transaction; the payset
//!   commitment check; a block's groups as gossip messages.
//! - [`source`] (feature `archive`, on by default): block sources: one file per round,
//!   directories of them, and tar and tar.bz2 archives of them.
//! - [`synth`] (feature `synth`, on by default): a synthetic block and message encoder that writes what a
//!   go-algorand node writes, for tests, benches and built-in workloads.
//!
//! [`Round`] and [`Txid`] are the value types every txgate crate shares.

pub mod codec;
#[cfg(feature = "archive")]
pub mod source;
#[cfg(any(test, feature = "synth"))]
pub mod synth;
mod types;

pub use types::{Round, Txid, TxidParseError};
