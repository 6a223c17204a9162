//! [`VerifiedBlock`]: a block whose payset was checked against its header, the one way past
//! [`Ledger::add_block`](super::Ledger::add_block)'s own check.

use txgate_algorand::codec::{Block, Expected, VerifyError};

/// A decoded block and the bytes it was decoded from, verified by [`VerifiedBlock::verify`]
/// ([`Block::verify`]: its payset commitments for its protocol, and the round and network the
/// caller expects) or vouched for by the caller ([`VerifiedBlock::assume_verified`]).
/// [`Ledger::add_verified_block`](super::Ledger::add_verified_block) adds it without verifying
/// again: a caller that verified a block (e.g. against the round it asked for) pays once.
///
/// ```
/// use txgate_algorand::codec::{Expected, decode_block};
/// use txgate_algorand::synth::{SynthTxn, encode_block};
/// use txgate_ledger::store::VerifiedBlock;
///
/// let raw = encode_block(1, "testnet-v1.0", &[0; 32], 0, &[SynthTxn::payment([7; 32], 1, 9)]);
/// let block = decode_block(&raw)?;
/// let verified = VerifiedBlock::verify(&block, &raw, &Expected::round(1))?;
/// assert_eq!(verified.block().round, 1);
/// assert!(VerifiedBlock::verify(&block, &raw, &Expected::round(2)).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct VerifiedBlock<'a> {
    block: &'a Block,
    raw: &'a [u8],
}

impl<'a> VerifiedBlock<'a> {
    /// Verifies `block` against `raw` (the bytes it was decoded from) and `expected`.
    ///
    /// # Errors
    ///
    /// [`VerifyError`]: what did not match, naming the round.
    pub fn verify(
        block: &'a Block,
        raw: &'a [u8],
        expected: &Expected,
    ) -> Result<Self, VerifyError> {
        block.verify(raw, expected)?;
        Ok(Self { block, raw })
    }

    /// The opt-out: `block` and `raw` taken as verified without any check, for a caller that
    /// verified them upstream (or builds blocks without commitments itself). Nothing then ties
    /// the txids the ledger indexes to the block's header.
    pub fn assume_verified(block: &'a Block, raw: &'a [u8]) -> Self {
        Self { block, raw }
    }

    /// The block.
    pub fn block(&self) -> &'a Block {
        self.block
    }

    /// The bytes it was decoded from.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }
}
