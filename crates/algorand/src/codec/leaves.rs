//! The leaves of a payset's commitment trees, one per entry, and which trees a protocol builds.
//!
//! A leaf is H(`"TL"` ‖ txid ‖ entry hash), the entry hash being H(`"STIB"` ‖ the entry's
//! canonical bytes) (go-algorand `bookkeeping.txnMerkleElem`). The `txn` Merkle tree hashes with
//! SHA-512/256 and takes the txid; the `txn256` and `txn512` vector commitments hash with
//! SHA-256 and SHA-512 and take the SHA-256 txid, H(`"TX"` ‖ canonical `txn` map) in SHA-256
//! (go-algorand `Transaction.IDSha256`, `txnMerkleElem.ToBeHashed` under `TxnCommitments`).
//! Both entry hashes come from the same bytes, so one entry walk serves every tree. They are
//! computed either by verification's own walk over the payset or, for a decode that a
//! verification follows, while the entries are decoded (on both threads of a split decode).

use rmp::encode::ByteBuf;
use sha2::digest::Output;
use sha2::{Digest, Sha256, Sha512, Sha512_256};

use super::msgpack::{RawError, Reader, write_canonical};
use super::txid::{TXID_PREFIX, TxnMap};
use super::verify::{SIGNED_TXN_IN_BLOCK_PREFIX, TXN_MERKLE_LEAF_PREFIX};
use crate::ids::Txid;

/// Which of a payset's commitment trees to build.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Trees {
    /// `txn` as a SHA-512/256 Merkle root (go-algorand `PaysetCommitMerkle`).
    pub(super) merkle: bool,
    /// `txn256`, the SHA-256 vector commitment.
    pub(super) sha256: bool,
    /// `txn512`, the SHA-512 vector commitment.
    pub(super) sha512: bool,
}

impl Trees {
    /// Whether any tree is built.
    pub(super) fn any(self) -> bool {
        self.merkle || self.sha256 || self.sha512
    }

    /// Whether leaves for these trees serve a verification that builds `need`.
    pub(super) fn covers(self, need: Trees) -> bool {
        (self.merkle || !need.merkle)
            && (self.sha256 || !need.sha256)
            && (self.sha512 || !need.sha512)
    }

    /// Whether an entry's SHA-256 txid is needed.
    fn sha256_txid(self) -> bool {
        self.sha256 || self.sha512
    }
}

/// The leaves of the trees [`Trees`] asks for, one per entry in the order pushed.
///
/// Invariant: each vector of a tree asked for holds one leaf per entry pushed; the others are
/// empty.
#[derive(Default)]
pub(super) struct Leaves {
    pub(super) trees: Trees,
    /// `txn` Merkle leaves.
    pub(super) native: Vec<Output<Sha512_256>>,
    /// `txn256` leaves.
    pub(super) sha256: Vec<Output<Sha256>>,
    /// `txn512` leaves.
    pub(super) sha512: Vec<Output<Sha512>>,
    /// An entry re-encoded canonically, kept between entries.
    canonical: ByteBuf,
    /// Entries pushed.
    len: usize,
}

impl Leaves {
    /// No leaves yet, for the trees `trees`, room for `capacity` entries.
    pub(super) fn new(trees: Trees, capacity: usize) -> Self {
        let room = |wanted: bool| if wanted { capacity } else { 0 };
        Leaves {
            trees,
            native: Vec::with_capacity(room(trees.merkle)),
            sha256: Vec::with_capacity(room(trees.sha256)),
            sha512: Vec::with_capacity(room(trees.sha512)),
            ..Leaves::default()
        }
    }

    /// Entries pushed.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Sets the entry count of leaves pushed onto the vectors directly (tests).
    #[cfg(test)]
    pub(super) fn set_len(&mut self, len: usize) {
        self.len = len;
    }

    /// Pushes the leaves of the payset entry at `input[span.0..span.1]`, an entry of a payset at
    /// nesting depth `payset_depth`: `canonical` says whether its bytes are canonical (its
    /// [`Reader::scan`]), `txid` is its txid, `txn` its completed canonical `txn` map read from
    /// `input` (used only for `txn256`/`txn512`).
    ///
    /// # Errors
    ///
    /// The entry's re-encoding failed (bytes that do not decode as one value); nothing is
    /// pushed.
    pub(super) fn push(
        &mut self,
        input: &[u8],
        span: (usize, usize),
        canonical: bool,
        payset_depth: usize,
        txid: &Txid,
        txn: &TxnMap<'_>,
    ) -> Result<(), RawError> {
        // The entry hashed is its canonical encoding (go-algorand `SignedTxnInBlock.Hash`
        // re-encodes the decoded struct): the stored bytes when they are canonical.
        let entry: &[u8] = if canonical {
            &input[span.0..span.1]
        } else {
            self.canonical.as_mut_vec().clear();
            write_canonical(
                &mut Reader::span(input, span.0, span.1),
                &mut self.canonical,
                payset_depth + 1,
            )?;
            self.canonical.as_slice()
        };
        if self.trees.merkle {
            let entry_hash = Sha512_256::new()
                .chain_update(SIGNED_TXN_IN_BLOCK_PREFIX)
                .chain_update(entry)
                .finalize();
            self.native.push(leaf::<Sha512_256>(&txid.0, &entry_hash));
        }
        if self.trees.sha256_txid() {
            let mut id = Sha256::new_with_prefix(TXID_PREFIX);
            txn.write(input, &mut |b| id.update(b));
            let id = id.finalize();
            let entry_hash = Sha256::new()
                .chain_update(SIGNED_TXN_IN_BLOCK_PREFIX)
                .chain_update(entry)
                .finalize();
            if self.trees.sha256 {
                self.sha256.push(leaf::<Sha256>(&id, &entry_hash));
            }
            if self.trees.sha512 {
                self.sha512.push(leaf::<Sha512>(&id, &entry_hash));
            }
        }
        self.len += 1;
        Ok(())
    }

    /// Appends the leaves of `other`'s entries `range` (indices in `other`'s order; same trees).
    #[cfg(feature = "parallel")]
    pub(super) fn extend_from(&mut self, other: &Leaves, range: std::ops::Range<usize>) {
        debug_assert_eq!(self.trees, other.trees);
        if self.trees.merkle {
            self.native.extend_from_slice(&other.native[range.clone()]);
        }
        if self.trees.sha256 {
            self.sha256.extend_from_slice(&other.sha256[range.clone()]);
        }
        if self.trees.sha512 {
            self.sha512.extend_from_slice(&other.sha512[range.clone()]);
        }
        self.len += range.len();
    }
}

// Not every leaf: a decoded block's `Debug` would print a thousand digests per tree.
impl std::fmt::Debug for Leaves {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leaves")
            .field("trees", &self.trees)
            .field("entries", &self.len)
            .finish_non_exhaustive()
    }
}

/// A payset leaf: H(`"TL"` ‖ txid ‖ entry hash).
pub(super) fn leaf<D: Digest>(txid: &[u8], entry_hash: &[u8]) -> Output<D> {
    D::new()
        .chain_update(TXN_MERKLE_LEAF_PREFIX)
        .chain_update(txid)
        .chain_update(entry_hash)
        .finalize()
}
