//! The store's unit tests, on a stand-in block codec (the real codec is tested in
//! txgate-algorand, and with real blocks in `tests/store.rs`).

mod lookup;
mod reopen;
mod write;

pub(super) use std::collections::HashMap;
pub(super) use std::ops::RangeInclusive;
pub(super) use std::path::Path;

pub(super) use redb::{Database, ReadableTable};
pub(super) use txgate_algorand::codec::{Block, DecodeError, Txn};
pub(super) use txgate_bloom::{BloomBuilder, Bytes, Filter, Layout, LoadError};
pub(super) use txgate_testkit::rng::SplitMix64;

pub(super) use super::blocks::Codec;
pub(super) use super::index::{PREFIX_ENTRY_BYTES, PrefixIndex, TXID_BYTES, search_txids};
pub(super) use super::tables::{
    BLOCKS, BLOOMS, CHAIN, META, META_FORMAT, ROUND_TXIDS, TXID_PREFIXES, TXIDS,
};
pub(super) use super::window::Probe;
pub(super) use super::*;
pub(super) use crate::{Round, Txid};

/// The unit tests' block encoding (the real codec is tested on its own): `b"TB"`, the round
/// as 8 little-endian bytes, then the txids.
pub(super) fn encode(round: Round, txids: &[Txid]) -> Vec<u8> {
    let mut raw = b"TB".to_vec();
    raw.extend_from_slice(&round.to_le_bytes());
    for id in txids {
        raw.extend_from_slice(id.as_bytes());
    }
    raw
}

pub(super) fn decode(raw: &[u8]) -> Result<Block, DecodeError> {
    let bad = || DecodeError::Malformed("not a test block".into());
    let rest = raw.strip_prefix(b"TB").ok_or_else(bad)?;
    let (round, ids) = rest.split_at_checked(8).ok_or_else(bad)?;
    let round = Round::from_le_bytes(round.try_into().map_err(|_| bad())?);
    if ids.len() % 32 != 0 {
        return Err(bad());
    }
    Ok(block(
        round,
        &ids.chunks_exact(32)
            .map(|c| Txid(c.try_into().unwrap()))
            .collect::<Vec<_>>(),
    ))
}

/// The "txid" of the test entry at `offset`: its 32 bytes.
pub(super) fn entry_txid(
    raw: &[u8],
    offset: usize,
    _genesis_id: &[u8],
    _genesis_hash: &[u8; 32],
) -> Result<Txid, DecodeError> {
    raw.get(offset..offset + 32)
        .filter(|_| offset >= 10 && (offset - 10).is_multiple_of(32))
        .map(|id| Txid(id.try_into().unwrap()))
        .ok_or_else(|| DecodeError::Malformed("no test entry there".into()))
}

/// The test encoding has no commitment: every block verifies.
pub(super) fn verify(
    _block: &Block,
    _raw: &[u8],
    _expected: &txgate_algorand::codec::Expected,
) -> Result<(), txgate_algorand::codec::VerifyError> {
    Ok(())
}

/// `decode`, then `verify`.
pub(super) fn decode_verify(
    raw: &[u8],
    expected: &txgate_algorand::codec::Expected,
    _parallel: bool,
) -> Result<Block, crate::store::LedgerError> {
    let block = decode(raw).map_err(|source| crate::store::LedgerError::Decode {
        round: None,
        source,
    })?;
    verify(&block, raw, expected).map_err(|source| crate::store::LedgerError::Verify {
        round: block.round,
        source,
    })?;
    Ok(block)
}

pub(super) const TEST_CODEC: Codec = Codec {
    decode,
    entry_txid,
    verify,
    decode_verify,
};

pub(super) fn block(round: Round, txids: &[Txid]) -> Block {
    Block::new(round, b"test", [1; 32])
        .with_entry_offsets((0..txids.len()).map(|i| 10 + 32 * i).collect())
        .with_txns(
            txids
                .iter()
                .map(|&txid| {
                    Txn::new(txid, b"pay")
                        .with_sender([2; 32])
                        .with_first_valid(round.saturating_sub(10))
                        .with_last_valid(round.saturating_add(10))
                })
                .collect(),
        )
}

/// Deterministic txids: four outputs of `rng`, little-endian.
pub(super) fn txid(rng: &mut SplitMix64) -> Txid {
    let mut id = [0; 32];
    for chunk in id.chunks_exact_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    Txid(id)
}

/// The default configuration but for `max_txn_life` (a window of `max_txn_life + 1` rounds).
pub(super) fn with_life(max_txn_life: u64) -> LedgerConfig {
    LedgerConfig {
        max_txn_life,
        ..LedgerConfig::default()
    }
}

pub(super) fn open(dir: &Path, config: LedgerConfig) -> (Ledger, OpenReport) {
    let ledger = Ledger::open_with_codec(dir, config, TEST_CODEC).unwrap();
    let report = ledger.open_report().clone();
    (ledger, report)
}

/// Adds rounds `rounds` with `per_round(round)` random txns each; returns round -> txids.
pub(super) fn fill(
    ledger: &Ledger,
    rounds: RangeInclusive<Round>,
    rng: &mut SplitMix64,
    per_round: impl Fn(Round) -> usize,
) -> HashMap<Round, Vec<Txid>> {
    let mut model = HashMap::new();
    for round in rounds {
        let ids: Vec<Txid> = (0..per_round(round)).map(|_| txid(rng)).collect();
        assert_eq!(ledger.add_block(&encode(round, &ids)).unwrap(), round);
        model.insert(round, ids);
    }
    model
}

/// Opens a ledger at `dir` with `config`, adds rounds as [`fill`] does, and closes it again;
/// returns [`fill`]'s round -> txids (for tests of what a later open finds).
pub(super) fn fill_closed(
    dir: &Path,
    config: LedgerConfig,
    rounds: RangeInclusive<Round>,
    rng: &mut SplitMix64,
    per_round: impl Fn(Round) -> usize,
) -> HashMap<Round, Vec<Txid>> {
    let (l, _) = open(dir, config);
    fill(&l, rounds, rng, per_round)
}

pub(super) fn block_rounds(dir: &Path) -> Vec<Round> {
    let db = Database::create(dir.join(DB_FILE)).unwrap();
    let txn = db.begin_read().unwrap();
    let t = txn.open_table(BLOCKS).unwrap();
    t.iter().unwrap().map(|r| r.unwrap().0.value()).collect()
}

/// Every txid of `model` is found at its position in its round and in no other round of
/// `rounds`, through `lookup_txid`.
pub(super) fn assert_lookups(l: &Ledger, model: &HashMap<Round, Vec<Txid>>) {
    for (&round, ids) in model {
        for (i, id) in ids.iter().enumerate() {
            let first = ids.iter().position(|x| x == id).unwrap();
            let want = Some(TxRecord {
                round,
                index: first as u32,
            });
            assert_eq!(
                l.lookup_txid(id, round).unwrap(),
                want,
                "round {round} txn {i}"
            );
            let other = if round == 0 { 1 } else { round - 1 };
            if model.get(&other).is_some_and(|o| !o.contains(id)) {
                assert_eq!(l.lookup_txid(id, other).unwrap(), None);
            }
        }
    }
}

/// Gives every round with a `round_txids` row a bloom row too, built from that row with
/// `config` and the default seed: the rows a build from before bloom rows were left out beside
/// index rows wrote (their loading, damage and layouts are tested on such ledgers).
pub(super) fn add_legacy_bloom_rows(dir: &Path, config: &LedgerConfig) {
    let db = Database::create(dir.join(DB_FILE)).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let index = txn.open_table(ROUND_TXIDS).unwrap();
        let mut blooms = txn.open_table(BLOOMS).unwrap();
        for row in index.iter().unwrap() {
            let (round, row) = row.unwrap();
            let bloom = super::index::bloom_of_index_row(
                config,
                DEFAULT_BLOOM_SEED,
                round.value(),
                row.value(),
            )
            .unwrap()
            .unwrap();
            blooms
                .insert(round.value(), bloom.to_bytes().as_slice())
                .unwrap();
        }
    }
    txn.commit().unwrap();
}

/// The rounds that have a bloom row.
pub(super) fn bloom_row_rounds(dir: &Path) -> Vec<Round> {
    let db = Database::create(dir.join(DB_FILE)).unwrap();
    let txn = db.begin_read().unwrap();
    let t = txn.open_table(BLOOMS).unwrap();
    t.iter().unwrap().map(|r| r.unwrap().0.value()).collect()
}

pub(super) fn bloom_row(dir: &Path, round: Round) -> Vec<u8> {
    let db = Database::create(dir.join(DB_FILE)).unwrap();
    let txn = db.begin_read().unwrap();
    let t = txn.open_table(BLOOMS).unwrap();
    t.get(round).unwrap().unwrap().value().to_vec()
}
