//! Algorand msgpack codec: blocks as algod serves and stores them, transaction messages as peers
//! gossip them, txids by the go-algorand rule, and the payset commitment check.
//!
//! # Files
//!
//! - `block.rs`: [`decode_block`], [`Block`]: header fields and the payset, entry by entry.
//! - `txn.rs`: [`decode_txn_message`], [`Txn`]: a `txn` map's fields and app ids.
//! - `txid.rs`: [`TxidHasher`], the txid rule ([`TXID_PREFIX`]), and the canonical `txn` map it
//!   hashes.
//! - `payset.rs`: the payset as stored: commitment ([`PAYSET_FLAT_PREFIX`]), offsets, an entry's
//!   txid, app ids.
//! - `entry.rs`: one payset entry: its `txn` completed with `gen`/`gh`, its signature fields.
//! - `verify.rs`: [`Block::verify`], [`Expected`], [`VerifyError`]: the payset commitments of
//!   every protocol (flat, Merkle, `txn256`, `txn512`), the round and the network.
//! - `gossip.rs`: [`gossip_messages`]: a block's groups as the messages peers send.
//! - `msgpack.rs`: the bounds-checked msgpack reader, the canonical check and re-encoder.
//! - `read.rs`: typed reads of one field's value, with the errors naming the field.
//! - `error.rs`: [`DecodeError`] and [`PaysetError`].
//!
//! # Formats
//!
//! - A block is msgpack `{"block": {header..., "txns": [SignedTxnInBlock...]}, "cert": {...}}`
//!   (algod `GET /v2/blocks/{round}?format=msgpack`, and one file per round in algod's block
//!   archives) or the bare block map. The header fields read are `rnd`, `gen`, `gh`, `ts`,
//!   `proto`, `txn`, `txn256` and `txn512`; `gh` is required (every txid needs it), the others default to zero/empty as
//!   go-algorand's `omitempty` encoding leaves zero values out (round 0 has no `rnd`).
//! - A transaction message is one or more concatenated msgpack `SignedTxn` maps (one per
//!   transaction of a group), what go-algorand's `TxnHandler` receives.
//!
//! # Txids
//!
//! A txid is SHA-512/256 over `"TX"` followed by the canonical msgpack encoding of the `txn` map
//! (go-algorand `Transaction.ID`). For a block entry the `txn` map is first completed the way
//! go-algorand `BlockHeader.DecodeSignedTxn` does: `gen` = the header's genesis id when the entry
//! has `hgi` true, and `gh` = the header's genesis hash always (every network here runs under
//! `RequireGenesisHash`); an entry whose `txn` already holds `gen` or `gh` is an error there and
//! here. A message's `txn` maps are hashed as they are (their senders put `gen`/`gh` in).
//!
//! "Canonical" is go-algorand's `protocol.Encode` form: keys sorted, empty values left out,
//! smallest integer and length forms, str and bin kept apart, str bytes kept as bytes even when
//! not UTF-8. Input that is already canonical (everything a go-algorand node writes) is hashed
//! from its own bytes without re-encoding; anything else is re-encoded value by value. A value
//! of all-zero bytes (a zero address) is kept: omitting it needs the field's type, which the
//! codec does not know; go-algorand never writes one.
//!
//! # Cost
//!
//! One pass over the input: each value is read once, and a `txn` map's bytes are read a second
//! time by the hash. Nothing is re-encoded unless the input is not canonical.
//!
//! # Errors
//!
//! Bad bytes give a [`DecodeError`] (never a panic) naming the byte offset and, when the input
//! holds one, the block's round.

mod block;
mod entry;
mod error;
mod gossip;
mod msgpack;
mod payset;
mod read;
mod txid;
mod txn;
mod verify;

pub use self::block::{Block, decode_block};
pub use self::error::{DecodeError, PaysetError};
pub use self::gossip::gossip_messages;
pub use self::payset::{
    PAYSET_FLAT_PREFIX, payset_app_ids, payset_commit_flat, payset_entry_txid, payset_offsets,
};
pub use self::txid::{TXID_PREFIX, TxidHasher};
pub use self::txn::{Txn, decode_txn_message, distinct_app_ids};
pub use self::verify::{
    Commitment, Expected, MERKLE_BOTTOM_LEAF_PREFIX, MERKLE_NODE_PREFIX,
    SIGNED_TXN_IN_BLOCK_PREFIX, TXN_MERKLE_LEAF_PREFIX, VerifyError,
};

// The synthetic encoder writes msgpack with the codec's own writers and commits to its payset.
#[cfg(any(test, feature = "synth"))]
pub(crate) use self::msgpack::{
    put_array_len, put_bin, put_bool, put_int, put_map_len, put_str, put_uint,
};
#[cfg(any(test, feature = "synth"))]
pub(crate) use self::payset::payset_digest;
#[cfg(any(test, feature = "synth"))]
pub(crate) use self::verify::{consensus_version, synth_commitments};

#[cfg(test)]
mod tests;
