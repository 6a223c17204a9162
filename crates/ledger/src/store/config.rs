//! [`LedgerConfig`] and the defaults: how a ledger stores and answers.

use txgate_bloom::Layout;

use super::error::LedgerError;

/// go-algorand's `config.Consensus[...].MaxTxnLife`: a transaction's last valid round is at most
/// this many rounds after its first valid round (1000 in every consensus version since v7).
pub const DEFAULT_MAX_TXN_LIFE: u64 = 1000;

/// Default target false-positive rate of a round's bloom: 0.1 %.
pub const DEFAULT_FALSE_POSITIVE_RATE: f64 = 0.001;

/// Default block layout of the round blooms: 256-bit blocks. Neither layout wins on every
/// measure (512-bit blocks answer a one-round miss faster on CPUs with AVX-512, but a search over
/// the whole window slower, and their queries are markedly slower on CPUs without AVX-512), so
/// the default is the layout that is fast everywhere. 512-bit blocks need about 7 % fewer bytes
/// at 0.1 % and have fewer false positives at equal memory: choose them with
/// [`LedgerConfig::bloom_layout`].
pub const DEFAULT_BLOOM_LAYOUT: Layout = Layout::Block256;

/// Default hash seed of the round blooms ("txgateL1" in ASCII): deterministic, so two ledgers
/// built from the same blocks hold byte-identical blooms.
pub const DEFAULT_BLOOM_SEED: u64 = u64::from_be_bytes(*b"txgateL1");

/// The largest [`LedgerConfig::max_txn_life`] accepted: the window holds MaxTxnLife + 1 blooms
/// in memory, and a million rounds is a thousand times go-algorand's value.
pub const MAX_WINDOW_ROUNDS: u64 = 1 << 20;

/// How a [`Ledger`](super::Ledger) stores and answers.
///
/// With feature `serde`, missing fields take their defaults.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
pub struct LedgerConfig {
    /// Target false-positive rate of each round's bloom, in (0, 1). Default
    /// [`DEFAULT_FALSE_POSITIVE_RATE`].
    pub false_positive_rate: f64,
    /// Build, persist and query per-round blooms and the txid index (default true). False is
    /// go-algorand's baseline: blocks only, lookups decode the block.
    pub blooms: bool,
    /// Block layout of the blooms of new rounds (default [`DEFAULT_BLOOM_LAYOUT`]). Stored
    /// blooms of either layout load whatever this says.
    pub bloom_layout: Layout,
    /// With blooms, also keep the per-round txid index (default true), so that a "maybe" is
    /// answered from it. False keeps the blooms only: a "maybe" decodes the block, as
    /// go-algorand's per-round blooms do. Opening with it true again indexes the window's rounds
    /// that lack an index row.
    pub txid_index: bool,
    /// MaxTxnLife in rounds (default [`DEFAULT_MAX_TXN_LIFE`], at most [`MAX_WINDOW_ROUNDS`]):
    /// the window of in-memory blooms and of [`Ledger::find_txid`](super::Ledger::find_txid) is the
    /// latest MaxTxnLife + 1 rounds.
    pub max_txn_life: u64,
    /// Keep every block (default true). False prunes blocks, blooms and index rows of rounds
    /// that leave the window (older than latest - MaxTxnLife), in the write transaction of the
    /// round that pushes them out.
    pub archival: bool,
    /// Hash seed of the blooms of a new ledger (default [`DEFAULT_BLOOM_SEED`]). It is persisted
    /// when the ledger is created; reopening uses the persisted seed and ignores this one
    /// ([`OpenReport::bloom_seed`](super::OpenReport::bloom_seed) says which is in use).
    pub bloom_seed: u64,
}

impl Default for LedgerConfig {
    fn default() -> Self {
        Self {
            false_positive_rate: DEFAULT_FALSE_POSITIVE_RATE,
            blooms: true,
            bloom_layout: DEFAULT_BLOOM_LAYOUT,
            txid_index: true,
            max_txn_life: DEFAULT_MAX_TXN_LIFE,
            archival: true,
            bloom_seed: DEFAULT_BLOOM_SEED,
        }
    }
}

impl LedgerConfig {
    /// [`LedgerError::FalsePositiveRate`] unless the false-positive rate is in (0, 1);
    /// [`LedgerError::MaxTxnLife`] unless MaxTxnLife is at most [`MAX_WINDOW_ROUNDS`].
    pub(super) fn check(&self) -> Result<(), LedgerError> {
        if !(self.false_positive_rate > 0.0 && self.false_positive_rate < 1.0) {
            return Err(LedgerError::FalsePositiveRate(self.false_positive_rate));
        }
        if self.max_txn_life > MAX_WINDOW_ROUNDS {
            return Err(LedgerError::MaxTxnLife {
                max_txn_life: self.max_txn_life,
                limit: MAX_WINDOW_ROUNDS,
            });
        }
        Ok(())
    }
}
