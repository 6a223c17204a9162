//! A round's bloom and its txid index: built from the block ([`build_round_bloom`],
//! [`build_round_index`]) and searched ([`search_txids`]); and the searches of the rows earlier
//! formats wrote: format 2's compact rows ([`PrefixIndex`], [`search_prefixes`]) and format 1's
//! sorted rows ([`search_format_1_row`]).
//!
//! A txid index row (format 3, table `round_txids`) is the round's txids, [`TXID_BYTES`] each,
//! in payset order: a hit reads this one row and no block. The row also holds everything the
//! round's bloom is built from, so a round with this row has no bloom row: its bloom is built
//! from the row when the ledger opens ([`bloom_of_index_row`]).
//!
//! A format-2 compact row is one entry of [`PREFIX_ENTRY_BYTES`] per txn plus a header, in the
//! `txid_prefixes` table; a match of its 4-byte prefix is verified against the txid of the
//! payset entry it points to, computed from the stored block:
//!
//! ```text
//! offset          size  field
//!      0             4  n, the round's txn count (u32 LE)
//!      4             4  g, bytes of the block's genesis id (u32 LE)
//!      8             g  the genesis id
//!  8 + g            32  the genesis hash
//! 40 + g        4 * n  the first 4 bytes of each txn's txid, in payset order
//! 40 + g + 4n   4 * n  the byte offset of each txn's payset entry in the stored block (u32 LE)
//! ```
//!
//! (The genesis id and hash complete an entry's txn map before hashing, go-algorand's rule.)

use redb::ReadTransaction;
use txgate_algorand::codec::Block;
use txgate_bloom::{AnyBloom, BloomBuilder, Bytes};

use super::blocks::{Codec, stored_block};
use super::config::LedgerConfig;
use super::error::{At, LedgerError};
use super::tables::BLOCKS;
use crate::{Round, Txid};

/// Bytes of one format-1 txid index entry: the 32-byte txid, then its payset index as `u32` LE.
pub(super) const INDEX_ENTRY_BYTES: usize = 36;

/// Bytes per txn of a format-2 compact index row: a 4-byte txid prefix and a 4-byte entry offset.
pub(super) const PREFIX_ENTRY_BYTES: usize = 8;

/// Bytes per txn of a `round_txids` row: the whole txid.
pub(super) const TXID_BYTES: usize = 32;

/// The bloom of `block`'s txids (tagged as `round`), sized from its txn count and `config`'s
/// false-positive rate, in `config`'s layout, hashed with `seed`.
///
/// # Errors
///
/// [`LedgerError::TooManyTxns`] past `u32::MAX` txns; [`LedgerError::Bloom`].
pub(super) fn build_round_bloom(
    config: &LedgerConfig,
    seed: u64,
    block: &Block,
    round: Round,
) -> Result<AnyBloom, LedgerError> {
    bloom_of_txids(
        config,
        seed,
        round,
        block.txns.iter().map(|txn| txn.txid.as_bytes()),
    )
}

/// The bloom of a `round_txids` row's txids: the bloom [`build_round_bloom`] gives for the block
/// the row was built from (same txids, same order, so the same bits), or `None` when the row is
/// malformed (its length is not a whole number of txids, or it numbers 2^32 or more: a damaged
/// file, whose block answers instead, as in [`search_txids`]).
///
/// # Errors
///
/// [`LedgerError::Bloom`].
pub(super) fn bloom_of_index_row(
    config: &LedgerConfig,
    seed: u64,
    round: Round,
    row: &[u8],
) -> Result<Option<AnyBloom>, LedgerError> {
    let (txids, rest) = row.as_chunks::<TXID_BYTES>();
    if !rest.is_empty() || u32::try_from(txids.len()).is_err() {
        return Ok(None);
    }
    bloom_of_txids(config, seed, round, txids.iter()).map(Some)
}

/// The bloom of `txids` (32 bytes each), sized from their count.
fn bloom_of_txids<'a>(
    config: &LedgerConfig,
    seed: u64,
    round: Round,
    txids: impl ExactSizeIterator<Item = &'a [u8; TXID_BYTES]>,
) -> Result<AnyBloom, LedgerError> {
    let count = txids.len();
    if u32::try_from(count).is_err() {
        return Err(LedgerError::TooManyTxns { round, count });
    }
    let mut bloom =
        BloomBuilder::with_false_positive_rate(count as u64, config.false_positive_rate)
            .seed(seed)
            .build_any(config.bloom_layout)
            .map_err(|source| LedgerError::Bloom { round, source })?;
    for txid in txids {
        bloom.insert(Bytes(txid));
    }
    Ok(bloom)
}

/// The txid index row of `block`: its txids, [`TXID_BYTES`] each, in payset order (the
/// `round_txids` table's row; the index of a txid is its position). The block must have fewer
/// than 2^32 txns ([`build_round_bloom`] checks it first).
pub(super) fn build_round_index(block: &Block) -> Vec<u8> {
    let mut row = Vec::with_capacity(block.txns.len() * TXID_BYTES);
    for txn in &block.txns {
        row.extend_from_slice(txn.txid.as_bytes());
    }
    row
}

/// The position of `txid` in a `round_txids` row (the first one when the payset repeats it, as
/// the baseline's scan answers); `None` when the row is malformed (its length is not a whole
/// number of txids, or it numbers 2^32 or more: a damaged file), `Some(None)` when the txid is
/// not in it.
///
/// A linear scan that compares the first 8 bytes of each txid and the rest only on a match: a
/// row of `n` txns costs `n` loads, about a microsecond for 1,000 (txids are SHA-512/256 outputs,
/// so 8-byte matches of different txids are rare; ids crafted to share them cost one 32-byte
/// compare each).
pub(super) fn search_txids(row: &[u8], txid: &Txid) -> Option<Option<u32>> {
    if !row.len().is_multiple_of(TXID_BYTES) || u32::try_from(row.len() / TXID_BYTES).is_err() {
        return None;
    }
    let want = txid.as_bytes();
    let head = u64::from_ne_bytes(want[..8].try_into().expect("8 bytes"));
    let found = row.chunks_exact(TXID_BYTES).position(|id| {
        u64::from_ne_bytes(id[..8].try_into().expect("8 bytes")) == head && id == want
    });
    // In range: the row numbers fewer than 2^32 txids (checked above).
    Some(found.map(|i| i as u32))
}

/// A parsed compact txid index row (layout in the module docs).
pub(super) struct PrefixIndex<'a> {
    genesis_id: &'a [u8],
    genesis_hash: [u8; 32],
    // Invariant: prefixes.len() == offsets.len() == 4 * txns, txns < 2^32.
    prefixes: &'a [u8],
    offsets: &'a [u8],
}

impl<'a> PrefixIndex<'a> {
    /// The row's fields, or `None` when its length does not match its header.
    pub(super) fn parse(row: &'a [u8]) -> Option<Self> {
        let n = u32::from_le_bytes(row.get(0..4)?.try_into().ok()?) as usize;
        let g = u32::from_le_bytes(row.get(4..8)?.try_into().ok()?) as usize;
        let genesis_id = row.get(8..8usize.checked_add(g)?)?;
        let genesis_hash = row.get(8 + g..40 + g)?.try_into().ok()?;
        let body = row.get(40 + g..)?;
        if body.len() != n.checked_mul(PREFIX_ENTRY_BYTES)? {
            return None;
        }
        let (prefixes, offsets) = body.split_at(4 * n);
        Some(PrefixIndex {
            genesis_id,
            genesis_hash,
            prefixes,
            offsets,
        })
    }

    /// The byte offset of entry `i`'s payset entry in the stored block.
    fn offset(&self, i: usize) -> usize {
        let o = &self.offsets[4 * i..4 * i + 4];
        u32::from_le_bytes([o[0], o[1], o[2], o[3]]) as usize
    }

    /// The positions whose prefix is `key`, in payset order.
    pub(super) fn matches(&self, key: u32) -> PrefixMatches<'a> {
        PrefixMatches {
            chunks: self.prefixes.chunks_exact(64),
            key,
            mask: 0,
            base: 0,
            next_base: 0,
            tail: 0,
        }
    }
}

/// [`PrefixIndex::matches`]: sixteen prefixes at a time into a bit mask of matches (vectorised
/// compares), then the set bits in order; then the prefixes after the last whole chunk one by
/// one.
pub(super) struct PrefixMatches<'a> {
    chunks: std::slice::ChunksExact<'a, u8>,
    key: u32,
    /// Matches of the current chunk not yet returned (bit j: position `base + j`).
    mask: u32,
    /// The position of the current chunk's first prefix.
    base: usize,
    /// The position of the next chunk's first prefix (of the remainder's, once chunks run out).
    next_base: usize,
    /// Prefixes of the remainder already compared.
    tail: usize,
}

impl Iterator for PrefixMatches<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        loop {
            if self.mask != 0 {
                let i = self.base + self.mask.trailing_zeros() as usize;
                self.mask &= self.mask - 1;
                return Some(i);
            }
            let Some(chunk) = self.chunks.next() else {
                break;
            };
            let mut mask = 0u32;
            for (j, p) in chunk.chunks_exact(4).enumerate() {
                mask |= u32::from(u32::from_le_bytes([p[0], p[1], p[2], p[3]]) == self.key) << j;
            }
            self.mask = mask;
            self.base = self.next_base;
            self.next_base += 16;
        }
        let rest = self.chunks.remainder();
        while let Some(p) = rest.get(4 * self.tail..4 * self.tail + 4) {
            let i = self.next_base + self.tail;
            self.tail += 1;
            if u32::from_le_bytes([p[0], p[1], p[2], p[3]]) == self.key {
                return Some(i);
            }
        }
        None
    }
}

/// The position of `txid` in `round`'s block from its compact index row: every entry whose txid
/// prefix matches is verified against the txid of the payset entry it points to, in payset
/// order (so a txid the payset repeats answers its first position, as the baseline's scan does).
///
/// # Errors
///
/// [`LedgerError::Missing`] (no block), [`LedgerError::Decode`] (an entry does not decode),
/// [`LedgerError::Store`].
pub(super) fn search_prefixes(
    codec: &Codec,
    txn: &ReadTransaction,
    index: &PrefixIndex<'_>,
    txid: &Txid,
    round: Round,
) -> Result<Option<u32>, LedgerError> {
    let key = u32::from_le_bytes([txid.0[0], txid.0[1], txid.0[2], txid.0[3]]);
    let mut matches = index.matches(key).peekable();
    // The block is read only when some prefix matches: most "maybe"s of absent txids match none.
    if matches.peek().is_none() {
        return Ok(None);
    }
    let blocks = txn.open_table(BLOCKS).at(round)?;
    let raw = stored_block(&blocks, round)?;
    for i in matches {
        let found = (codec.entry_txid)(
            raw.value(),
            index.offset(i),
            index.genesis_id,
            &index.genesis_hash,
        )
        .map_err(|source| LedgerError::Decode {
            round: Some(round),
            source,
        })?;
        if found == *txid {
            // In range: a row numbers fewer than 2^32 txns.
            return Ok(Some(i as u32));
        }
    }
    Ok(None)
}

/// Binary search of a format-1 txid index row (sorted [`INDEX_ENTRY_BYTES`]-byte entries); a
/// row whose length is not a whole number of entries is searched over its whole entries.
pub(super) fn search_format_1_row(row: &[u8], txid: &Txid) -> Option<u32> {
    let entries = row.len() / INDEX_ENTRY_BYTES;
    let entry = |i: usize| &row[i * INDEX_ENTRY_BYTES..(i + 1) * INDEX_ENTRY_BYTES];
    let (mut lo, mut hi) = (0, entries);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let e = entry(mid);
        match e[..32].cmp(txid.as_bytes()) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => {
                let mut index = [0u8; 4];
                index.copy_from_slice(&e[32..]);
                return Some(u32::from_le_bytes(index));
            }
        }
    }
    None
}
