//! txgate-algorand: Algorand's wire format as txgate reads it.
//!
//! Modules, one line each (the codec's own files are listed in its docs):
//! - [`codec`]: blocks and transaction messages (msgpack) decoded, with the txid of each txn.
//! - [`codec::TxidHasher`] (`codec/txid.rs`): every txid is computed here (`Transaction.ID`).
//! - [`source`] (feature `archive`): block sources: files, directories, tar and tar.bz2 archives.
//! - [`synth`] (feature `synth`): synthetic blocks and messages, encoded as go-algorand does.
//! - `ids` ([`Round`], [`Txid`]): the value types every txgate crate shares.

pub mod codec;
mod ids;
#[cfg(feature = "archive")]
pub mod source;
#[cfg(any(test, feature = "synth"))]
pub mod synth;

pub use ids::{Round, Txid, TxidParseError};

/// The crate README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
