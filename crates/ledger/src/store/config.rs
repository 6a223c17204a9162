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
/// [`LedgerConfig::with_bloom_layout`].
pub const DEFAULT_BLOOM_LAYOUT: Layout = Layout::Block256;

/// Default hash seed of the round blooms ("txgateL1" in ASCII): deterministic, so two ledgers
/// built from the same blocks hold byte-identical blooms.
pub const DEFAULT_BLOOM_SEED: u64 = u64::from_be_bytes(*b"txgateL1");

/// The largest [`LedgerConfig::max_txn_life`] accepted: the window holds MaxTxnLife + 1 blooms
/// in memory, and a million rounds is a thousand times go-algorand's value.
pub const MAX_WINDOW_ROUNDS: u64 = 1 << 20;

/// Default bound of the page cache of the ledger's database file, in bytes: 1 GiB, redb's own
/// default (`redb::Builder::new`), nine tenths of it for pages read, one tenth for pages written
/// and not yet flushed.
pub const DEFAULT_CACHE_BYTES: usize = 1 << 30;

/// How a [`Ledger`](super::Ledger) stores and answers.
///
/// Build one from [`LedgerConfig::default`] with the `with_*` setters: `with_x(value)` takes the
/// new value of field `x`, of that field's type, and returns the config, so the calls chain. They
/// check nothing; [`Ledger::open`](super::Ledger::open) does. The fields stay public for reading
/// and assigning; the struct is `#[non_exhaustive]` (code outside this crate cannot write it as a
/// struct literal), so that a new field is not a breaking change.
///
/// With feature `serde`, missing fields take their defaults.
///
/// # Examples
///
/// ```
/// use txgate_bloom::Layout;
/// use txgate_ledger::store::LedgerConfig;
///
/// // A pruning ledger of 512-bit blooms at 1 in 10,000 false positives.
/// let config = LedgerConfig::default()
///     .with_false_positive_rate(0.0001)
///     .with_bloom_layout(Layout::Block512)
///     .with_archival(false);
/// assert_eq!(config.max_txn_life, 1000); // go-algorand's MaxTxnLife, the default
/// assert!(!config.archival);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
#[non_exhaustive]
pub struct LedgerConfig {
    /// Target false-positive rate of each round's bloom, in (0, 1). Default
    /// [`DEFAULT_FALSE_POSITIVE_RATE`].
    pub false_positive_rate: f64,
    /// Build and query per-round blooms and keep the txid index (default true; the index row
    /// is stored and the blooms are built from it at open; without the index the blooms are
    /// stored). False is go-algorand's baseline: blocks only, lookups decode the block.
    pub blooms: bool,
    /// Block layout of the blooms the ledger builds (default [`DEFAULT_BLOOM_LAYOUT`]): new
    /// rounds' blooms, and at each open the blooms built from index rows. Stored bloom rows of
    /// either layout load whatever this says.
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
    /// Bound of the database's page cache in bytes (default [`DEFAULT_CACHE_BYTES`]), split as
    /// redb's `Builder::set_cache_size` splits it: nine tenths for pages read (kept until the
    /// bound is reached, so a process that reads every block of a large ledger grows by up to
    /// this much), one tenth for pages written. A bound, not an allocation: any value is
    /// accepted, and small ones cost reads from the file (the OS page cache) instead.
    pub cache_bytes: usize,
    /// Every how many rounds `add_block`'s commit is made durable (default 1: every round's
    /// commit is on disk when `add_block` returns, which costs a sync of the file per round; at
    /// least 1). With `n > 1`, the commit of every `n`th round since the last durable one,
    /// [`Ledger::sync`](super::Ledger::sync) and dropping the ledger wait for the disk; the
    /// commits between are atomic and seen by lookups at once, but a crash may lose up to the
    /// last `n - 1` rounds (never part of one): the reopened ledger ends at an earlier round and
    /// ingest continues from there. go-algorand's ledger writes added blocks to its database
    /// in batches too (`ledger/blockqueue.go`: a syncer goroutine commits the queued blocks,
    /// which lookups see before they are written).
    pub sync_every: u64,
    /// `add_block` decodes a block's payset on the calling thread and a helper (default true;
    /// false: on the calling thread alone): a job on a pool of one thread, `txgate-decode`,
    /// started by the first such decode in the process and kept for it, which works on its own
    /// copy of the block's bytes. Blocks of fewer than
    /// [`MIN_PARALLEL_ENTRIES`](txgate_algorand::codec::MIN_PARALLEL_ENTRIES) txns, and every
    /// block on a one-processor machine, are decoded on the calling thread either way. See
    /// [`decode_block_parallel`](txgate_algorand::codec::decode_block_parallel) and
    /// [`decode_for_verify_parallel`](txgate_algorand::codec::decode_for_verify_parallel).
    pub parallel_decode: bool,
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
            cache_bytes: DEFAULT_CACHE_BYTES,
            sync_every: 1,
            parallel_decode: true,
        }
    }
}

/// The setters: each sets the field it is named after (see the field for its meaning and
/// default) and returns the config.
impl LedgerConfig {
    /// Sets [`false_positive_rate`](Self::false_positive_rate): each round bloom's target rate
    /// (default [`DEFAULT_FALSE_POSITIVE_RATE`]; in (0, 1)).
    #[must_use]
    pub fn with_false_positive_rate(mut self, false_positive_rate: f64) -> Self {
        self.false_positive_rate = false_positive_rate;
        self
    }

    /// Sets [`blooms`](Self::blooms): build, persist and query round blooms and the txid index
    /// (default true).
    #[must_use]
    pub fn with_blooms(mut self, blooms: bool) -> Self {
        self.blooms = blooms;
        self
    }

    /// Sets [`bloom_layout`](Self::bloom_layout): the block layout of the blooms the ledger
    /// builds (default [`DEFAULT_BLOOM_LAYOUT`]).
    #[must_use]
    pub fn with_bloom_layout(mut self, bloom_layout: Layout) -> Self {
        self.bloom_layout = bloom_layout;
        self
    }

    /// Sets [`txid_index`](Self::txid_index): keep the per-round txid index beside the blooms
    /// (default true).
    #[must_use]
    pub fn with_txid_index(mut self, txid_index: bool) -> Self {
        self.txid_index = txid_index;
        self
    }

    /// Sets [`max_txn_life`](Self::max_txn_life): MaxTxnLife in rounds (default
    /// [`DEFAULT_MAX_TXN_LIFE`]; at most [`MAX_WINDOW_ROUNDS`]).
    #[must_use]
    pub fn with_max_txn_life(mut self, max_txn_life: u64) -> Self {
        self.max_txn_life = max_txn_life;
        self
    }

    /// Sets [`archival`](Self::archival): keep every block (default true) or prune rounds that
    /// leave the window.
    #[must_use]
    pub fn with_archival(mut self, archival: bool) -> Self {
        self.archival = archival;
        self
    }

    /// Sets [`bloom_seed`](Self::bloom_seed): the blooms' hash seed of a new ledger (default
    /// [`DEFAULT_BLOOM_SEED`]; a reopened ledger keeps its persisted seed).
    #[must_use]
    pub fn with_bloom_seed(mut self, bloom_seed: u64) -> Self {
        self.bloom_seed = bloom_seed;
        self
    }

    /// Sets [`LedgerConfig::cache_bytes`].
    ///
    /// ```
    /// use txgate_ledger::store::LedgerConfig;
    ///
    /// // At most 64 MiB of cached pages, whatever the ledger's size.
    /// let config = LedgerConfig::default().with_cache_bytes(64 << 20);
    /// assert_eq!(config.cache_bytes, 64 << 20);
    /// ```
    #[must_use]
    pub fn with_cache_bytes(mut self, cache_bytes: usize) -> Self {
        self.cache_bytes = cache_bytes;
        self
    }

    /// Sets [`parallel_decode`](Self::parallel_decode): decode a payset on the calling thread
    /// and one helper (default true).
    #[must_use]
    pub fn with_parallel_decode(mut self, parallel_decode: bool) -> Self {
        self.parallel_decode = parallel_decode;
        self
    }

    /// Sets [`sync_every`](Self::sync_every): every how many rounds a commit is made durable
    /// (default 1; at least 1).
    #[must_use]
    pub fn with_sync_every(mut self, sync_every: u64) -> Self {
        self.sync_every = sync_every;
        self
    }
}

impl LedgerConfig {
    /// Checks the configuration as [`Ledger::open`](super::Ledger::open) does, without opening
    /// anything: the check a CLI or a node's config loader runs before it starts.
    ///
    /// ```
    /// use txgate_ledger::store::{LedgerConfig, LedgerError};
    /// assert!(LedgerConfig::default().validate().is_ok());
    /// let bad = LedgerConfig::default().with_false_positive_rate(1.5);
    /// assert!(matches!(bad.validate(), Err(LedgerError::FalsePositiveRate(_))));
    /// ```
    ///
    /// # Errors
    ///
    /// [`LedgerError::FalsePositiveRate`] unless the false-positive rate is in (0, 1);
    /// [`LedgerError::MaxTxnLife`] unless MaxTxnLife is at most [`MAX_WINDOW_ROUNDS`];
    /// [`LedgerError::SyncEvery`] for a `sync_every` of 0.
    pub fn validate(&self) -> Result<(), LedgerError> {
        self.check()
    }

    /// [`LedgerError::FalsePositiveRate`] unless the false-positive rate is in (0, 1);
    /// [`LedgerError::MaxTxnLife`] unless MaxTxnLife is at most [`MAX_WINDOW_ROUNDS`];
    /// [`LedgerError::SyncEvery`] for a `sync_every` of 0.
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
        if self.sync_every == 0 {
            return Err(LedgerError::SyncEvery);
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn each_setter_sets_its_field_and_only_that_one() {
        let d = LedgerConfig::default();
        // The defaults, field by field.
        assert_eq!(d.false_positive_rate, 0.001);
        assert_eq!(
            (d.blooms, d.bloom_layout, d.txid_index, d.archival),
            (true, Layout::Block256, true, true)
        );
        assert_eq!(d.max_txn_life, 1000);
        assert_eq!(d.bloom_seed, 0x7478_6761_7465_4c31); // "txgateL1"
        assert_eq!(d.cache_bytes, 1 << 30); // redb's default
        assert_eq!(d.sync_every, 1);
        assert!(d.parallel_decode);
        assert!(matches!(
            d.clone().with_sync_every(0).validate(),
            Err(LedgerError::SyncEvery)
        ));
        // Each setter from the default: the default with that one field changed.
        let one = |set: fn(LedgerConfig) -> LedgerConfig, change: fn(&mut LedgerConfig)| {
            let mut want = LedgerConfig::default();
            change(&mut want);
            assert_ne!(want, d);
            assert_eq!(set(LedgerConfig::default()), want);
        };
        one(
            |c| c.with_false_positive_rate(0.25),
            |c| c.false_positive_rate = 0.25,
        );
        one(|c| c.with_blooms(false), |c| c.blooms = false);
        one(
            |c| c.with_bloom_layout(Layout::Block512),
            |c| c.bloom_layout = Layout::Block512,
        );
        one(|c| c.with_txid_index(false), |c| c.txid_index = false);
        one(|c| c.with_max_txn_life(7), |c| c.max_txn_life = 7);
        one(|c| c.with_archival(false), |c| c.archival = false);
        one(|c| c.with_bloom_seed(42), |c| c.bloom_seed = 42);
        one(|c| c.with_cache_bytes(1 << 20), |c| c.cache_bytes = 1 << 20);
        one(|c| c.with_sync_every(8), |c| c.sync_every = 8);
        one(
            |c| c.with_parallel_decode(false),
            |c| c.parallel_decode = false,
        );
        // All of them chained, then each set back to its default value: the default again.
        let c = LedgerConfig::default()
            .with_false_positive_rate(0.25)
            .with_blooms(false)
            .with_bloom_layout(Layout::Block512)
            .with_txid_index(false)
            .with_max_txn_life(7)
            .with_archival(false)
            .with_bloom_seed(42)
            .with_sync_every(8)
            .with_parallel_decode(false);
        assert_eq!(c.false_positive_rate, 0.25);
        assert_eq!(
            (c.blooms, c.bloom_layout, c.txid_index, c.archival),
            (false, Layout::Block512, false, false)
        );
        assert_eq!((c.max_txn_life, c.bloom_seed, c.sync_every), (7, 42, 8));
        let back = c
            .with_false_positive_rate(0.001)
            .with_blooms(true)
            .with_bloom_layout(Layout::Block256)
            .with_txid_index(true)
            .with_max_txn_life(1000)
            .with_archival(true)
            .with_bloom_seed(u64::from_be_bytes(*b"txgateL1"))
            .with_sync_every(1)
            .with_parallel_decode(true);
        assert_eq!(back, d);
    }
}
