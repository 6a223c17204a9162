//! The block codec the store runs on, and the one read of a stored block.

use redb::{AccessGuard, ReadableTable};
use txgate_algorand::codec::{self, Block, DecodeError, Expected, VerifyError};

use super::error::{At, LedgerError};
use crate::{Round, Txid};

/// [`codec::payset_entry_txid`]'s shape: block bytes, entry offset, genesis id and hash.
type EntryTxidFn = fn(&[u8], usize, &[u8], &[u8; 32]) -> Result<Txid, DecodeError>;

/// The block codec the store runs on: the Algorand one ([`Codec::ALGORAND`]), or a stand-in in
/// unit tests.
#[derive(Clone, Copy)]
pub(crate) struct Codec {
    /// Decodes block bytes ([`codec::decode_block`]).
    pub(crate) decode: fn(&[u8]) -> Result<Block, DecodeError>,
    /// The txid of the entry at an offset ([`codec::payset_entry_txid`]): format-2 index rows
    /// point at entries.
    pub(crate) entry_txid: EntryTxidFn,
    /// Verifies a block against its bytes ([`Block::verify`]).
    pub(crate) verify: fn(&Block, &[u8], &Expected) -> Result<(), VerifyError>,
    /// Decodes and verifies block bytes (`decode` then `verify`, the same results; the
    /// Algorand codec finds the payset once, [`codec::decode_for_verify`]): a decode error is
    /// [`LedgerError::Decode`], a verification error [`LedgerError::Verify`]. With `true`, the
    /// payset is decoded with a helper thread ([`codec::decode_for_verify_parallel`]).
    pub(crate) decode_verify: fn(&[u8], &Expected, bool) -> Result<Block, LedgerError>,
}

/// [`Codec::decode_verify`] of the Algorand codec.
fn algorand_decode_verify(
    raw: &[u8],
    expected: &Expected,
    parallel: bool,
) -> Result<Block, LedgerError> {
    let decoded = if parallel {
        codec::decode_for_verify_parallel(raw)
    } else {
        codec::decode_for_verify(raw)
    };
    let decoded = decoded.map_err(|source| LedgerError::Decode {
        round: None,
        source,
    })?;
    decoded
        .verify(expected)
        .map_err(|source| LedgerError::Verify {
            round: decoded.block().round,
            source,
        })?;
    Ok(decoded.into_block())
}

impl Codec {
    pub(crate) const ALGORAND: Codec = Codec {
        decode: codec::decode_block,
        entry_txid: codec::payset_entry_txid,
        verify: Block::verify,
        decode_verify: algorand_decode_verify,
    };

    /// Decodes the stored bytes of `round`'s block.
    ///
    /// # Errors
    ///
    /// [`LedgerError::Decode`] naming the round.
    pub(super) fn decode_stored(&self, raw: &[u8], round: Round) -> Result<Block, LedgerError> {
        (self.decode)(raw).map_err(|source| LedgerError::Decode {
            round: Some(round),
            source,
        })
    }
}

/// The stored bytes of `round`'s block from an open `blocks` table, of a read or a write
/// transaction: every read of a stored block goes through here.
///
/// # Errors
///
/// [`LedgerError::Missing`] when the round has no block row; [`LedgerError::Store`].
pub(super) fn stored_block<'t>(
    blocks: &'t impl ReadableTable<u64, &'static [u8]>,
    round: Round,
) -> Result<AccessGuard<'t, &'static [u8]>, LedgerError> {
    blocks.get(round).at(round)?.ok_or(LedgerError::Missing {
        what: "block",
        round,
    })
}
