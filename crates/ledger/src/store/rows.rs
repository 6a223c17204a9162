//! A round's rows: the index row (or, without the index, the bloom row) written with it
//! ([`persist_round_rows`]), the deletes
//! of rounds that leave the window ([`prune`]), and the `chain` table's network rows with the check
//! that a block belongs to the ledger's network ([`check_network`]).

use redb::{ReadableTable, WriteTransaction};
use txgate_algorand::codec::Block;
use txgate_bloom::{AnyBloom, Filter};

use super::blocks::{Codec, stored_block};
use super::error::{At, LedgerError};
use super::genesis::Genesis;
use super::tables::{
    BLOCKS, BLOOMS, CHAIN, CHAIN_GENESIS_HASH, CHAIN_GENESIS_ID, META, META_FIRST, ROUND_TXIDS,
    TXID_PREFIXES, TXIDS,
};
use crate::Round;

/// Writes a round's txid index row when given, else its bloom row (idempotent: rewriting a
/// round writes the same row). A round with an index row gets no bloom row: the bloom is built
/// from the index row's txids when the ledger opens, so each round's add writes one row beside
/// its block instead of two (a table's row costs the commit its pages on the path from the
/// table's root, several KiB, besides the row itself).
pub(super) fn persist_round_rows(
    txn: &WriteTransaction,
    round: Round,
    bloom: &AnyBloom,
    index: Option<&[u8]>,
) -> Result<(), LedgerError> {
    match index {
        Some(index) => {
            txn.open_table(ROUND_TXIDS)
                .at(round)?
                .insert(round, index)
                .at(round)?;
        }
        None => {
            txn.open_table(BLOOMS)
                .at(round)?
                .insert(round, bloom.to_bytes().as_slice())
                .at(round)?;
        }
    }
    Ok(())
}

/// Deletes blocks, blooms and index rows of rounds `from..to` and sets the first round to `to`.
pub(super) fn prune(txn: &WriteTransaction, from: Round, to: Round) -> Result<(), LedgerError> {
    let r = Some(from);
    txn.open_table(BLOCKS)
        .at(r)?
        .retain_in(from..to, |_, _| false)
        .at(r)?;
    txn.open_table(BLOOMS)
        .at(r)?
        .retain_in(from..to, |_, _| false)
        .at(r)?;
    txn.open_table(ROUND_TXIDS)
        .at(r)?
        .retain_in(from..to, |_, _| false)
        .at(r)?;
    txn.open_table(TXID_PREFIXES)
        .at(r)?
        .retain_in(from..to, |_, _| false)
        .at(r)?;
    txn.open_table(TXIDS)
        .at(r)?
        .retain_in(from..to, |_, _| false)
        .at(r)?;
    txn.open_table(META).at(r)?.insert(META_FIRST, to).at(r)?;
    Ok(())
}

/// [`LedgerError::OtherNetwork`] unless `block` is of network `ledger` (`None`: any).
pub(super) fn check_network(ledger: Option<&Genesis>, block: &Block) -> Result<(), LedgerError> {
    match ledger {
        Some(ledger) if !ledger.same_network(&Genesis::of(block)) => {
            Err(LedgerError::OtherNetwork {
                round: block.round,
                block: Box::new(Genesis::of(block)),
                ledger: Box::new(ledger.clone()),
            })
        }
        _ => Ok(()),
    }
}

/// The ledger's network from the `chain` table; a non-empty ledger without the rows (written before
/// the table existed) learns it from its oldest kept block, `first`, and writes the rows.
pub(super) fn read_genesis(
    txn: &WriteTransaction,
    first: Option<Round>,
    codec: &Codec,
) -> Result<Option<Genesis>, LedgerError> {
    let stored = {
        let chain = txn.open_table(CHAIN).at(None)?;
        let id = chain.get(CHAIN_GENESIS_ID).at(None)?;
        let hash = chain.get(CHAIN_GENESIS_HASH).at(None)?;
        match (id, hash) {
            (Some(id), Some(hash)) => Some(Genesis {
                id: id.value().to_vec(),
                // A damaged row of another length reads as "not set".
                hash: hash.value().try_into().unwrap_or([0; 32]),
            }),
            _ => None,
        }
    };
    let Some(first) = first else {
        return Ok(stored);
    };
    if stored.is_some() {
        return Ok(stored);
    }
    let block = {
        let blocks = txn.open_table(BLOCKS).at(first)?;
        codec.decode_stored(stored_block(&blocks, first)?.value(), first)?
    };
    let genesis = Genesis::of(&block);
    write_genesis(txn, first, &genesis)?;
    Ok(Some(genesis))
}

/// Writes the `chain` table's rows (in the write transaction of `round`, for the error).
pub(super) fn write_genesis(
    txn: &WriteTransaction,
    round: Round,
    genesis: &Genesis,
) -> Result<(), LedgerError> {
    let r = Some(round);
    let mut chain = txn.open_table(CHAIN).at(r)?;
    chain
        .insert(CHAIN_GENESIS_ID, genesis.id.as_slice())
        .at(r)?;
    chain
        .insert(CHAIN_GENESIS_HASH, genesis.hash.as_slice())
        .at(r)?;
    Ok(())
}
