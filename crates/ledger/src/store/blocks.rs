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
}

impl Codec {
    pub(crate) const ALGORAND: Codec = Codec {
        decode: codec::decode_block,
        entry_txid: codec::payset_entry_txid,
        verify: Block::verify,
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
