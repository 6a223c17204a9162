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
//! - `leaves.rs`: the leaves of the payset's commitment trees, one per entry, computed by
//!   verification or while decoding for it; `trees.rs`: the trees built from them, whole or as
//!   two subtrees each.
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
//! time by the hash. Nothing is re-encoded unless the input is not canonical: a canonical `txn`
//! map is hashed as its own bytes with the completion's `gen` and `gh` spliced in where their
//! keys sort, nothing collected per entry. A decoded transaction allocates only its app list
//! (none for a transaction without apps); its type borrows go-algorand's
//! ([`KNOWN_TX_TYPES`]). The rest is SHA-512/256: the txids and, for verification, the
//! payset commitments.
//!
//! # Verification
//!
//! [`Block::verify`] checks a decoded block against the bytes it came from and what the caller
//! expects ([`Expected`]), with a [`VerifyError`] naming the round and what did not match.
//!
//! ## The commitments (go-algorand `data/bookkeeping/block.go`, `txn_merkle.go`,
//! `crypto/merklearray`)
//!
//! A header carries up to three commitments to its payset (`TxnCommitments`); go-algorand's
//! `Block.ContentsMatchHeader` recomputes all three and requires each to equal the header's,
//! an absent field being the all-zero digest (msgpack `omitempty`):
//!
//! - `txn`, SHA-512/256, by the protocol's `PaysetCommit`:
//!   - [`Commitment::Flat`] (`PaysetCommitFlat`, protocols v11 to v25): SHA-512/256 over `"PF"`
//!     and the payset's msgpack bytes (`Payset.CommitFlat`; an empty payset is msgpack nil).
//!   - [`Commitment::Merkle`] (`PaysetCommitMerkle`, v26 and later): the root of a Merkle tree
//!     whose leaf `i` is SHA-512/256(`"TL"` ‖ txid ‖ SHA-512/256(`"STIB"` ‖ entry `i`)), entry
//!     `i` being the canonical msgpack of the `SignedTxnInBlock` as stored in the payset. An
//!     inner node is SHA-512/256(`"MA"` ‖ left ‖ right); a node without a right child pairs
//!     with 32 zero bytes; a single leaf is the root; an empty payset's root is all zero (so
//!     `txn` is absent from an empty block of these protocols).
//! - `txn256` (`EnableSHA256TxnCommitmentHeader`, v34 and later): a SHA-256 vector commitment:
//!   leaf `i` is SHA-256(`"TL"` ‖ SHA-256(`"TX"` ‖ txn) ‖ SHA-256(`"STIB"` ‖ entry `i`)); the
//!   leaves are padded to a power of two (at least one) with SHA-256(`"MB"`), and leaf `i` sits
//!   at the tree position whose bits are `i`'s bits reversed; nodes as above, with SHA-256.
//! - `txn512` (`EnableSha512BlockHash`, v41 and later): the same vector commitment with SHA-512
//!   (64-byte digests). Its leaves hash the same SHA-256 pair as `txn256`'s (go-algorand
//!   `txnMerkleElem.RawLeaf` uses the SHA-512/256 pair only for `txn`).
//!
//! ## What they cover, and what they do not
//!
//! Every commitment covers every byte of the payset: the flat one its bytes as stored, the
//! Merkle ones each entry's canonical encoding (its `txn` with every field, its signatures `sig`,
//! `msig`, `lsig`, `sgnr`, its apply data, `hgi`, ...) and, through the txids, each `txn`
//! completed with the header's genesis id and hash. They do not cover the rest of the header
//! (round, `gen`, `gh`, `ts`, `proto`, seeds, rewards, ...: in go-algorand the block hash and
//! the certificate vouch for those, which txgate does not check) nor the certificate (`cert`).
//! The round and the network come from the caller ([`Expected`]): the txids depend on the
//! header's `gen` and `gh`, so a caller that knows its network should say so.
//!
//! ## Which protocol commits to what
//!
//! The header's `proto` (the consensus version string) picks the rule, as go-algorand's
//! `config.Consensus` table does: v7 to v10 used a tree go-algorand no longer supports (refused);
//! v11 to v25 flat; v26 to v33, `alpha1` to `alpha3` Merkle; v34 to v40, `alpha4`, `alpha5`,
//! `fnet1` to `fnet4` Merkle and `txn256`; v41, v42 and `fnet5` Merkle, `txn256` and `txn512`.
//! A commitment the protocol does not define must be absent.
//!
//! `future` and any version string not in that table (a newer protocol, or a private network's)
//! have no fixed meaning (the 2020 private network of the shared dataset2 blocks committed flat
//! under `future`; today `future` means v42 and later), so their rule is read from the header: every commitment it carries must match; a `txn` beside
//! `txn256` or `txn512` is the Merkle root (an absent one: an empty payset); a `txn` alone must be
//! the flat hash or the Merkle root of the payset (both commit to it under distinct domain
//! prefixes).
//!
//! A header without any commitment is refused ([`VerifyError::NoCommitment`]), even over an
//! empty payset (a damaged header can lose both), unless the caller opts out
//! ([`Expected::allowing_uncommitted`]). The one exception is go-algorand's own rule: under v26
//! to v33 every commitment of an empty payset is all zero, so an empty block of those protocols
//! carries none and passes (a damaged block of those protocols that lost both its payset and its
//! `txn` cannot be told from it without the block hash).
//!
//! # Errors
//!
//! Bad bytes give a [`DecodeError`] (never a panic) naming the byte offset and, when the input
//! holds one, the block's round.

mod block;
mod entry;
mod error;
mod gossip;
mod leaves;
mod msgpack;
#[cfg(feature = "parallel")]
mod parallel;
mod payset;
mod read;
mod trees;
mod txid;
mod txn;
mod verify;

#[cfg(feature = "parallel")]
pub use self::block::decode_block_parallel;
#[cfg(all(feature = "parallel", fuzzing))]
pub use self::block::decode_block_split;
pub use self::block::{Block, MIN_PARALLEL_ENTRIES, decode_block};
pub use self::error::{DecodeError, PaysetError};
pub use self::gossip::gossip_messages;
pub use self::payset::{
    PAYSET_FLAT_PREFIX, payset_app_ids, payset_commit_flat, payset_entry_txid, payset_offsets,
};
pub use self::txid::{TXID_PREFIX, TxidHasher};
pub use self::txn::{KNOWN_TX_TYPES, Txn, decode_txn_message, distinct_app_ids};
#[cfg(feature = "parallel")]
pub use self::verify::decode_for_verify_parallel;
#[cfg(all(feature = "parallel", fuzzing))]
pub use self::verify::decode_verified_block_split;
pub use self::verify::{
    Commitment, DecodedBlock, Expected, MERKLE_BOTTOM_LEAF_PREFIX, MERKLE_NODE_PREFIX,
    SIGNED_TXN_IN_BLOCK_PREFIX, TXN_MERKLE_LEAF_PREFIX, VerifyError, decode_for_verify,
    decode_verified_block,
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
