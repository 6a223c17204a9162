//! The redb-backed ledger with per-round txid blooms.
//!
//! A [`Ledger`] is a directory holding one [redb](https://docs.rs/redb/2) database
//! (`ledger.redb`). Each round is added by [`Ledger::add_block`] in one write transaction that
//! holds the round's raw block bytes, its bloom filter of txids (an [`AnyBloom`] in the
//! configured block layout, sized from the round's transaction count and the configured
//! false-positive rate) and its txid index row, so a crash leaves a round wholly present or
//! wholly absent. After the commit the round's bloom is published to an in-memory window of the
//! last MaxTxnLife + 1 rounds that readers query without locks.
//!
//! [`Ledger::lookup_txid`] answers "is this txid in round R?": the round's bloom answers "no"
//! without touching the database; a "maybe" goes to the exact index. [`Ledger::find_txid`] asks
//! the same over a range of rounds, newest first, within the window: the tx handler's
//! "already committed?" check over a transaction's validity window.
//!
//! With blooms disabled ([`LedgerConfig::blooms`] = false) the ledger keeps only blocks and
//! answers like go-algorand's baseline: load the round's block, decode it, compare its txids.
//!
//! # On-disk layout (format 2)
//!
//! | table           | key         | value                                                  |
//! |-----------------|-------------|--------------------------------------------------------|
//! | `meta`          | `&str`      | `u64` (see the `META_*` keys)                          |
//! | `blocks`        | round `u64` | raw block bytes, as given to `add_block`               |
//! | `blooms`        | round `u64` | [`AnyBloom::to_bytes`]: either layout, XXH3-checksummed |
//! | `txid_prefixes` | round `u64` | the round's compact txid index (below)                 |
//! | `txids`         | round `u64` | format 1's txid index (read only; see below)           |
//! | `chain`         | `&str`      | the network's genesis id and hash (see [`CHAIN`])      |
//!
//! A round's compact txid index is one row of [`PREFIX_ENTRY_BYTES`] bytes per txn plus a
//! header (see [`TXID_PREFIXES`]): the first 4 bytes of each txid and the byte offset of its
//! payset entry in the stored block, in payset order. A lookup scans the prefixes and verifies
//! each match against the one entry it points to ([`codec::payset_entry_txid`]: that entry's
//! txid, computed from the stored block), so answers are exact; an absent txid that passes the
//! bloom matches a 4-byte prefix with probability about `txns / 2^32`. Txids are SHA-512/256
//! outputs, so prefixes are uniform; ids crafted to share a prefix only cost one verification
//! each (at worst the baseline's decode of the block). One row per round keeps `add_block` to
//! one extra insert, and pruning a round is one range delete.
//!
//! Format 1 (earlier builds) kept a 36-byte entry per txn (the whole txid and its payset index,
//! sorted) in `txids`: more bytes written per block than the bloom and the block's own growth
//! allowed. A format-1 ledger opens as format 2: its `txids` rows are still read (binary
//! search), and rounds added or rebuilt from then on get compact rows.
//!
//! # Examples
//!
//! ```
//! use txgate_algorand::codec::decode_block;
//! use txgate_ledger::store::{Ledger, LedgerConfig};
//! use txgate_algorand::synth::{SynthTxn, encode_block};
//! use txgate_ledger::Txid;
//!
//! let dir = tempfile::tempdir()?;
//! let (ledger, report) = Ledger::open(dir.path(), LedgerConfig::default())?;
//! assert_eq!(report.latest, None);
//! let raw = encode_block(1, "testnet-v1.0", &[0; 32], 0, &[SynthTxn::payment([7; 32], 1, 1000)]);
//! // `add_block(raw)` decodes raw bytes; a caller that already decoded them hands both over.
//! let block = decode_block(&raw)?;
//! ledger.add_decoded_block(&block, &raw)?;
//! let txid = block.txns[0].txid;
//! assert_eq!(ledger.lookup_txid(&txid, 1)?.map(|r| r.index), Some(0));
//! assert_eq!(ledger.lookup_txid(&Txid([8; 32]), 1)?, None);
//! assert_eq!(ledger.find_txid(&txid, 0..=5000)?.map(|r| r.round), Some(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod window;

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use redb::{Database, ReadTransaction, ReadableTable, TableDefinition, WriteTransaction};
use txgate_bloom::{AnyBloom, BloomBuilder, BuildError, Layout, LoadError};

use txgate_algorand::codec::{self, Block, DecodeError};
use crate::{Round, Txid};
use window::{Probe, Window};

/// go-algorand's `config.Consensus[...].MaxTxnLife`: a transaction's last valid round is at most
/// this many rounds after its first valid round (1000 in every consensus version since v7).
pub const DEFAULT_MAX_TXN_LIFE: u64 = 1000;

/// Default target false-positive rate of a round's bloom: 0.1 %.
pub const DEFAULT_FALSE_POSITIVE_RATE: f64 = 0.001;

/// Default block layout of the round blooms: 256-bit blocks. Measured on an AMD EPYC (Zen 4,
/// AVX-512): 512-bit blocks answered a one-round miss faster (`lookup_miss` 14.9 vs 17.4 ns) but
/// `find_txid` over the 1,001-round window slower (9.41 vs 9.07 us), a 2^20-key filter's query
/// 1.10x slower, and on CPUs without AVX-512 their query is about 1.5x slower; with no clear win
/// the faster-everywhere layout is the default. 512-bit blocks need about 7 % fewer bytes at
/// 0.1 % and have fewer false positives at equal memory: choose them with
/// [`LedgerConfig::bloom_layout`].
pub const DEFAULT_BLOOM_LAYOUT: Layout = Layout::Block256;

/// Default hash seed of the round blooms ("txgateL1" in ASCII): deterministic, so two ledgers
/// built from the same blocks hold byte-identical blooms.
pub const DEFAULT_BLOOM_SEED: u64 = u64::from_be_bytes(*b"txgateL1");

/// The largest [`LedgerConfig::max_txn_life`] accepted: the window holds MaxTxnLife + 1 blooms
/// in memory, and a million rounds is a thousand times go-algorand's value.
pub const MAX_WINDOW_ROUNDS: u64 = 1 << 20;

/// The file of the database inside the ledger directory.
pub const DB_FILE: &str = "ledger.redb";

/// On-disk format version, in `meta` under [`META_FORMAT`]. Format 1 ledgers are opened and
/// marked format 2 (see the module docs).
pub const FORMAT_VERSION: u64 = 2;

/// The earlier on-disk format this build still opens.
pub const FORMAT_VERSION_1: u64 = 1;

/// `meta` key: the format version.
pub const META_FORMAT: &str = "format";
/// `meta` key: the bloom hash seed, fixed when the ledger is created.
pub const META_SEED: &str = "bloom_seed";
/// `meta` key: the oldest round whose block is kept.
pub const META_FIRST: &str = "first_round";
/// `meta` key: the latest round (absent while the ledger is empty).
pub const META_LATEST: &str = "latest_round";
/// `meta` key: every kept round from this one on has its bloom and txid index rows (absent when
/// blocks were added with blooms or the txid index disabled since the last open with both
/// enabled).
pub const META_INDEXED_FROM: &str = "indexed_from";

/// `meta` table: format version, seed, first and latest round.
pub const META: TableDefinition<'static, &str, u64> = TableDefinition::new("meta");
/// `blocks` table: round -> raw block bytes.
pub const BLOCKS: TableDefinition<'static, u64, &[u8]> = TableDefinition::new("blocks");
/// `blooms` table: round -> serialized bloom ([`AnyBloom::to_bytes`], either layout).
pub const BLOOMS: TableDefinition<'static, u64, &[u8]> = TableDefinition::new("blooms");
/// `txid_prefixes` table: round -> the round's compact txid index:
///
/// ```text
/// offset          size  field
///      0             4  n, the round's txn count (u32 LE)
///      4             4  g, bytes of the block's genesis id (u32 LE)
///      8             g  the genesis id
///  8 + g            32  the genesis hash
/// 40 + g        4 * n  the first 4 bytes of each txn's txid, in payset order
/// 40 + g + 4n   4 * n  the byte offset of each txn's payset entry in the stored block (u32 LE)
/// ```
///
/// (The genesis id and hash complete an entry's txn map before hashing, go-algorand's rule.)
pub const TXID_PREFIXES: TableDefinition<'static, u64, &[u8]> =
    TableDefinition::new("txid_prefixes");
/// `txids` table (format 1): round -> sorted [`INDEX_ENTRY_BYTES`]-byte entries. Read for
/// rounds a format-1 build wrote; never written.
pub const TXIDS: TableDefinition<'static, u64, &[u8]> = TableDefinition::new("txids");

/// `chain` table: the network the ledger holds, from its first block: the genesis id under
/// [`CHAIN_GENESIS_ID`], the 32-byte genesis hash under [`CHAIN_GENESIS_HASH`]. A ledger written
/// before the table existed learns them from its oldest kept block at open.
pub const CHAIN: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("chain");
/// `chain` key: the genesis id (block header `gen`).
pub const CHAIN_GENESIS_ID: &str = "genesis_id";
/// `chain` key: the genesis hash (block header `gh`, 32 bytes).
pub const CHAIN_GENESIS_HASH: &str = "genesis_hash";

/// Bytes of one format-1 txid index entry: the 32-byte txid, then its payset index as `u32` LE.
pub const INDEX_ENTRY_BYTES: usize = 36;

/// Bytes per txn of a compact index row: a 4-byte txid prefix and a 4-byte entry offset.
pub const PREFIX_ENTRY_BYTES: usize = 8;

/// How a [`Ledger`] stores and answers.
#[derive(Debug, Clone, PartialEq)]
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
    /// the window of in-memory blooms and of [`Ledger::find_txid`] is the latest MaxTxnLife + 1
    /// rounds.
    pub max_txn_life: u64,
    /// Keep every block (default true). False prunes blocks, blooms and index rows of rounds
    /// that leave the window (older than latest - MaxTxnLife), in the write transaction of the
    /// round that pushes them out.
    pub archival: bool,
    /// Hash seed of the blooms of a new ledger (default [`DEFAULT_BLOOM_SEED`]). It is persisted
    /// when the ledger is created; reopening uses the persisted seed and ignores this one
    /// ([`OpenReport::bloom_seed`] says which is in use).
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

/// What [`Ledger::open`] found and did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OpenReport {
    /// Oldest round whose block is kept (`None`: empty ledger).
    pub first: Option<Round>,
    /// Latest round (`None`: empty ledger).
    pub latest: Option<Round>,
    /// Blooms loaded from the database into the window.
    pub blooms_loaded: u64,
    /// Blooms (and index rows) of window rounds that were missing or corrupt, rebuilt from
    /// their blocks (and written back), in round order.
    pub rebuilt: Vec<RebuiltBloom>,
    /// The bloom hash seed in use.
    pub bloom_seed: u64,
}

/// A bloom [`Ledger::open`] rebuilt from its block.
#[derive(Debug, Clone, PartialEq)]
pub struct RebuiltBloom {
    /// The round.
    pub round: Round,
    /// Why: no bloom row, or the row did not load.
    pub reason: RebuildReason,
}

/// Why a bloom was rebuilt.
#[derive(Debug, Clone, PartialEq)]
pub enum RebuildReason {
    /// The round had no bloom row (e.g. its blocks were added with blooms disabled).
    Missing,
    /// [`AnyBloom::from_bytes`] rejected the row: damaged bytes fail its checksum
    /// ([`LoadError::ChecksumMismatch`]).
    Corrupt(LoadError),
    /// The row loaded but carries another hash seed than the ledger's (a checksummed row with a
    /// valid other seed, or a damaged seed in an unchecksummed format-1 row: a wrong seed would
    /// answer "no" for members).
    WrongSeed {
        /// The seed in the row.
        found: u64,
    },
    /// The bloom loaded but the round had no txid index row (it was added with
    /// [`LedgerConfig::txid_index`] false).
    MissingIndex,
}

/// The network a block belongs to: its header's genesis id (`gen`) and genesis hash (`gh`).
///
/// Two blocks are of one network when their ids are equal and their hashes are equal or one of
/// them is all zeros: go-algorand's `BlockHeader.PreCheck` (data/bookkeeping/block.go) compares
/// a block's pair with its predecessor's the same way, a zero hash meaning "not set" (protocols
/// before `SupportGenesisHash`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Genesis {
    /// The genesis id, e.g. `mainnet-v1.0` (bytes: Algorand strings need not be UTF-8).
    pub id: Vec<u8>,
    /// The genesis hash (all zeros: not set).
    pub hash: [u8; 32],
}

impl Genesis {
    /// The network of `block`.
    pub fn of(block: &Block) -> Self {
        Self {
            id: block.genesis_id.clone(),
            hash: block.genesis_hash,
        }
    }

    /// Whether `other` is the same network (see the type's docs).
    pub fn same_network(&self, other: &Genesis) -> bool {
        self.id == other.id
            && (self.hash == other.hash || self.hash == [0; 32] || other.hash == [0; 32])
    }
}

/// `testnet-v1.0 (genesis hash SGO1GKSzyE7IEPItTxCByw9x8FmnrCDexi9/cOUJOiI=)`: the id as UTF-8
/// (invalid sequences replaced), the hash in base64 as algod shows it.
impl std::fmt::Display for Genesis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (genesis hash {})",
            String::from_utf8_lossy(&self.id),
            data_encoding::BASE64.encode(&self.hash)
        )
    }
}

/// Where a txid was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TxRecord {
    /// The round whose block holds the transaction.
    pub round: Round,
    /// Its position in the block's payset (0-based; the first one when a payset repeats a txid).
    pub index: u32,
}

/// Why a ledger operation failed. Every variant names the round (or file) concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The configuration is not usable.
    #[error("invalid ledger configuration: {0}")]
    Config(String),
    /// The ledger directory could not be created.
    #[error("cannot create ledger directory {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The database could not be opened (locked by another process, corrupt, unreadable).
    #[error("cannot open ledger database {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// redb's error.
        source: Box<redb::Error>,
    },
    /// The database was written by another format version.
    #[error("ledger database {path} has format {found}, this build reads format {FORMAT_VERSION}")]
    Format {
        /// The database file.
        path: PathBuf,
        /// The version found.
        found: u64,
    },
    /// A database operation failed.
    #[error("ledger store error{}: {source}", fmt_round(*.round))]
    Store {
        /// The round concerned, if any.
        round: Option<Round>,
        /// redb's error.
        source: Box<redb::Error>,
    },
    /// `add_block` of a round that is not the latest + 1. Nothing was written.
    #[error("block of round {got} is out of order: the next round is {expected}")]
    OutOfOrder {
        /// latest + 1.
        expected: Round,
        /// The round of the block.
        got: Round,
    },
    /// Block bytes do not decode (given to `add_block`, or stored and read back).
    #[error("block{} does not decode: {source}", fmt_round(*.round))]
    Decode {
        /// The round, when known (stored blocks).
        round: Option<Round>,
        /// The codec's error.
        source: DecodeError,
    },
    /// A round's bloom could not be built.
    #[error("cannot build the bloom of round {round}: {source}")]
    Bloom {
        /// The round.
        round: Round,
        /// The bloom crate's error.
        source: BuildError,
    },
    /// `add_block` of a block of another network than the ledger's (its genesis id or hash
    /// differs from the ledger's first block's). Nothing was written.
    #[error(
        "block of round {round} is from network {block}, but the ledger holds network {ledger}; nothing was written"
    )]
    OtherNetwork {
        /// The round of the block.
        round: Round,
        /// The block's network (boxed: keeps the error small).
        block: Box<Genesis>,
        /// The ledger's network.
        ledger: Box<Genesis>,
    },
    /// More transactions in one block than the index can number (`u32`).
    #[error("block of round {round} has {count} transactions, more than u32::MAX")]
    TooManyTxns {
        /// The round.
        round: Round,
        /// Its transaction count.
        count: usize,
    },
    /// A lookup of a round after the latest one.
    #[error("round {round} is after the latest round ({})", fmt_opt(*.latest))]
    BeyondLatest {
        /// The round asked for.
        round: Round,
        /// The latest round (`None`: empty ledger).
        latest: Option<Round>,
    },
    /// A lookup of a round whose block is not kept (pruned, or before the ledger's first round).
    #[error("round {round} is not kept: the oldest kept round is {first}")]
    NotKept {
        /// The round asked for.
        round: Round,
        /// The oldest kept round.
        first: Round,
    },
    /// A block too large for the compact txid index's 32-bit entry offsets (4 GiB).
    #[error("block of round {round} is {bytes} bytes, more than the txid index addresses")]
    BlockTooLarge {
        /// The round.
        round: Round,
        /// The block's bytes.
        bytes: usize,
    },
    /// The block bytes given with a decoded block are not its encoding (their payset has
    /// another number of entries).
    #[error("the bytes given for round {round} hold {found} payset entries, the block {expected}")]
    RawMismatch {
        /// The round.
        round: Round,
        /// Txns in the decoded block.
        expected: usize,
        /// Entries in the bytes.
        found: usize,
    },
    /// A stored bloom's bytes do not load (damaged after the ledger was opened).
    #[error("the stored bloom of round {round} does not load: {source}")]
    StoredBloom {
        /// The round.
        round: Round,
        /// The bloom crate's error.
        source: LoadError,
    },
    /// The database lacks a row it must have (the file was damaged or edited).
    #[error("ledger database is missing the {what} of round {round}")]
    Missing {
        /// Which row: "block" or "txid index".
        what: &'static str,
        /// The round.
        round: Round,
    },
}

fn fmt_round(round: Option<Round>) -> String {
    round.map(|r| format!(" (round {r})")).unwrap_or_default()
}

fn fmt_opt(round: Option<Round>) -> String {
    round.map_or_else(|| "none".to_owned(), |r| r.to_string())
}

/// Maps a redb error into [`LedgerError::Store`] for `round`.
fn store<E: Into<redb::Error>>(round: Option<Round>) -> impl FnOnce(E) -> LedgerError {
    move |e| LedgerError::Store {
        round,
        source: Box::new(e.into()),
    }
}

/// [`codec::payset_entry_txid`]'s shape: block bytes, entry offset, genesis id and hash.
type EntryTxidFn = fn(&[u8], usize, &[u8], &[u8; 32]) -> Result<Txid, DecodeError>;

/// The block codec the store runs on: the Algorand one ([`Codec::ALGORAND`]), or a stand-in in
/// unit tests.
#[derive(Clone, Copy)]
pub(crate) struct Codec {
    /// Decodes block bytes ([`codec::decode_block`]).
    pub(crate) decode: fn(&[u8]) -> Result<Block, DecodeError>,
    /// The byte offset of each payset entry in block bytes ([`codec::payset_offsets`]).
    pub(crate) offsets: fn(&[u8]) -> Result<Vec<usize>, DecodeError>,
    /// The txid of the entry at an offset ([`codec::payset_entry_txid`]).
    pub(crate) entry_txid: EntryTxidFn,
}

impl Codec {
    pub(crate) const ALGORAND: Codec = Codec {
        decode: codec::decode_block,
        offsets: codec::payset_offsets,
        entry_txid: codec::payset_entry_txid,
    };
}

/// A persistent ledger of Algorand blocks with per-round txid blooms. `Send + Sync`: share it
/// by reference or `Arc`; one `add_block` runs at a time (a writer lock), lookups never wait
/// for it.
pub struct Ledger {
    db: Database,
    path: PathBuf,
    config: LedgerConfig,
    seed: u64,
    codec: Codec,
    /// Blooms of the last MaxTxnLife + 1 rounds (`None` values when blooms are disabled: the
    /// window then only publishes the latest round).
    window: Window<Option<AnyBloom>>,
    /// Serializes writers; holds the oldest kept round (`None`: empty ledger).
    writer: Mutex<WriterState>,
}

struct WriterState {
    first: Option<Round>,
    /// The network of the ledger's blocks (`None`: empty ledger); as in [`CHAIN`].
    genesis: Option<Genesis>,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger")
            .field("path", &self.path)
            .field("config", &self.config)
            .field("seed", &self.seed)
            .field("latest", &self.window.latest())
            .finish_non_exhaustive()
    }
}

impl Ledger {
    /// Opens the ledger in directory `dir`, creating the directory and the database if needed.
    /// With blooms enabled, the blooms of the window's rounds are loaded from the database (not
    /// rebuilt); a missing or corrupt one is rebuilt from its block, written back and listed in
    /// the report. With `archival` false, rounds that left the window are pruned at open too.
    ///
    /// # Errors
    ///
    /// [`LedgerError::Config`] for a false-positive rate outside (0, 1) or a MaxTxnLife above
    /// [`MAX_WINDOW_ROUNDS`]; [`LedgerError::Dir`], [`LedgerError::Open`] (e.g. another
    /// process has it open), [`LedgerError::Format`]; while rebuilding a bloom, or learning the
    /// network of a ledger written before [`CHAIN`] existed, [`LedgerError::Missing`] (no
    /// block), [`LedgerError::Decode`], [`LedgerError::Bloom`]; [`LedgerError::Store`].
    pub fn open(
        dir: impl AsRef<Path>,
        config: LedgerConfig,
    ) -> Result<(Ledger, OpenReport), LedgerError> {
        Self::open_with_codec(dir.as_ref(), config, Codec::ALGORAND)
    }

    pub(crate) fn open_with_codec(
        dir: &Path,
        config: LedgerConfig,
        codec: Codec,
    ) -> Result<(Ledger, OpenReport), LedgerError> {
        if !(config.false_positive_rate > 0.0 && config.false_positive_rate < 1.0) {
            return Err(LedgerError::Config(format!(
                "false-positive rate must be in (0, 1), got {}",
                config.false_positive_rate
            )));
        }
        if config.max_txn_life > MAX_WINDOW_ROUNDS {
            return Err(LedgerError::Config(format!(
                "MaxTxnLife {} is above the limit {MAX_WINDOW_ROUNDS}",
                config.max_txn_life
            )));
        }
        std::fs::create_dir_all(dir).map_err(|source| LedgerError::Dir {
            path: dir.to_owned(),
            source,
        })?;
        let path = dir.join(DB_FILE);
        let open_err = |e: redb::Error| LedgerError::Open {
            path: path.clone(),
            source: Box::new(e),
        };
        let db = Database::create(&path).map_err(|e| open_err(e.into()))?;

        // One write transaction creates the tables, checks the format, fixes the seed, prunes
        // (non-archival) and rebuilds missing blooms; the loaded blooms come from it too.
        let txn = db.begin_write().map_err(|e| open_err(e.into()))?;
        let (seed, first, latest) = {
            let mut meta = txn.open_table(META).map_err(|e| open_err(e.into()))?;
            let get = |meta: &redb::Table<'_, &str, u64>, key| {
                meta.get(key)
                    .map(|v| v.map(|v| v.value()))
                    .map_err(|e| open_err(e.into()))
            };
            match get(&meta, META_FORMAT)? {
                // A format-1 ledger reads as format 2 (its `txids` rows stay readable); marking
                // it keeps format-1 builds, which cannot read compact rows, from opening it.
                None | Some(FORMAT_VERSION_1) => {
                    meta.insert(META_FORMAT, FORMAT_VERSION)
                        .map_err(store(None))?;
                }
                Some(FORMAT_VERSION) => {}
                Some(found) => return Err(LedgerError::Format { path, found }),
            }
            let seed = match get(&meta, META_SEED)? {
                Some(seed) => seed,
                None => {
                    meta.insert(META_SEED, config.bloom_seed)
                        .map_err(store(None))?;
                    config.bloom_seed
                }
            };
            (seed, get(&meta, META_FIRST)?, get(&meta, META_LATEST)?)
        };
        // Create the other tables, so that read transactions always find them.
        txn.open_table(BLOCKS).map_err(store(None))?;
        txn.open_table(BLOOMS).map_err(store(None))?;
        txn.open_table(TXID_PREFIXES).map_err(store(None))?;
        txn.open_table(TXIDS).map_err(store(None))?;
        let genesis = read_genesis(&txn, first, codec.decode)?;

        let capacity = config.max_txn_life + 1;
        let window = Window::new(capacity as usize);
        let mut ledger = Ledger {
            db,
            path,
            seed,
            codec,
            window,
            writer: Mutex::new(WriterState { first, genesis }),
            config,
        };
        let mut report = OpenReport {
            first,
            latest,
            bloom_seed: seed,
            ..OpenReport::default()
        };
        if let (Some(mut first), Some(latest)) = (first, latest) {
            let window_start = latest.saturating_sub(ledger.config.max_txn_life);
            if !ledger.config.archival && first < window_start {
                prune(&txn, first, window_start)?;
                first = window_start;
                report.first = Some(first);
                ledger
                    .writer
                    .get_mut()
                    .unwrap_or_else(|e| e.into_inner())
                    .first = Some(first);
            }
            let start = first.max(window_start);
            let blooms = ledger.load_window(&txn, start, latest, &mut report)?;
            // Publish after the commit: readers then find every round they can see stored.
            txn.commit().map_err(store(None))?;
            for (round, bloom) in (start..=latest).zip(blooms) {
                ledger.window.publish(round, bloom);
            }
        } else {
            txn.commit().map_err(store(None))?;
        }
        Ok((ledger, report))
    }

    /// Loads (or rebuilds) the blooms of rounds `start..=latest`, in order (all `None` with
    /// blooms disabled).
    fn load_window(
        &self,
        txn: &WriteTransaction,
        start: Round,
        latest: Round,
        report: &mut OpenReport,
    ) -> Result<Vec<Option<AnyBloom>>, LedgerError> {
        if !self.config.blooms {
            return Ok((start..=latest).map(|_| None).collect());
        }
        let mut meta = txn.open_table(META).map_err(store(None))?;
        let indexed_from = meta
            .get(META_INDEXED_FROM)
            .map_err(store(None))?
            .map(|v| v.value());
        // Rounds the marker does not cover may lack an index row (added with the txid index
        // off): with the index on, each is checked and indexed.
        let check_index = self.config.txid_index && indexed_from.is_none_or(|from| from > start);
        let mut blooms = Vec::with_capacity((latest - start + 1) as usize);
        let mut rebuild = Vec::new();
        {
            let table = txn.open_table(BLOOMS).map_err(store(None))?;
            let prefixes = txn.open_table(TXID_PREFIXES).map_err(store(None))?;
            let format_1 = txn.open_table(TXIDS).map_err(store(None))?;
            for round in start..=latest {
                let row = table.get(round).map_err(store(Some(round)))?;
                let loaded = match row {
                    None => Err(RebuildReason::Missing),
                    Some(bytes) => AnyBloom::from_bytes(bytes.value())
                        .map_err(RebuildReason::Corrupt)
                        .and_then(|bloom| match bloom.seed() {
                            seed if seed == self.seed => Ok(bloom),
                            found => Err(RebuildReason::WrongSeed { found }),
                        }),
                };
                let has_index = !check_index
                    || indexed_from.is_some_and(|from| from <= round)
                    || prefixes.get(round).map_err(store(Some(round)))?.is_some()
                    || format_1.get(round).map_err(store(Some(round)))?.is_some();
                let loaded = loaded.and_then(|bloom| {
                    if has_index {
                        Ok(bloom)
                    } else {
                        Err(RebuildReason::MissingIndex)
                    }
                });
                match loaded {
                    Ok(bloom) => {
                        report.blooms_loaded += 1;
                        blooms.push(Some(bloom));
                    }
                    Err(reason) => {
                        rebuild.push(blooms.len());
                        blooms.push(None);
                        report.rebuilt.push(RebuiltBloom { round, reason });
                    }
                }
            }
        }
        for i in rebuild {
            let round = start + i as u64;
            let (block, raw) = {
                let blocks = txn.open_table(BLOCKS).map_err(store(Some(round)))?;
                let raw = blocks
                    .get(round)
                    .map_err(store(Some(round)))?
                    .ok_or(LedgerError::Missing {
                        what: "block",
                        round,
                    })?
                    .value()
                    .to_vec();
                let block = (self.codec.decode)(&raw).map_err(|source| LedgerError::Decode {
                    round: Some(round),
                    source,
                })?;
                (block, raw)
            };
            // A rebuild writes the index row too, whatever `txid_index` says, so that the
            // marker's promise holds for every round it covers.
            let (bloom, index) = self.index_block(&block, &raw, round, true)?;
            write_rows(txn, round, &bloom, index.as_deref())?;
            blooms[i] = Some(bloom);
        }
        // With the index on, every round of the window now has its bloom and index rows; rounds
        // before the window do if they did before and the marker said so.
        if check_index {
            meta.insert(META_INDEXED_FROM, start).map_err(store(None))?;
        }
        Ok(blooms)
    }

    /// The bloom of `block` (tagged as `round`; `raw` its bytes) in the configured layout, and
    /// its compact index row when `with_index` (see [`TXID_PREFIXES`]).
    fn index_block(
        &self,
        block: &Block,
        raw: &[u8],
        round: Round,
        with_index: bool,
    ) -> Result<(AnyBloom, Option<Vec<u8>>), LedgerError> {
        let count = block.txns.len();
        if u32::try_from(count).is_err() {
            return Err(LedgerError::TooManyTxns { round, count });
        }
        let mut bloom =
            BloomBuilder::with_false_positive_rate(count as u64, self.config.false_positive_rate)
                .and_then(|b| b.seed(self.seed).build_any(self.config.bloom_layout))
                .map_err(|source| LedgerError::Bloom { round, source })?;
        for txn in &block.txns {
            bloom.insert_id(txn.txid.as_bytes());
        }
        if !with_index {
            return Ok((bloom, None));
        }
        if u32::try_from(raw.len()).is_err() {
            return Err(LedgerError::BlockTooLarge {
                round,
                bytes: raw.len(),
            });
        }
        // The decoder records where each entry starts; a block built by hand has no offsets,
        // and its bytes are scanned for them.
        let scanned;
        let offsets = if block.entry_offsets.len() == count {
            &block.entry_offsets
        } else {
            scanned = (self.codec.offsets)(raw).map_err(|source| LedgerError::Decode {
                round: Some(round),
                source,
            })?;
            &scanned
        };
        if offsets.len() != count {
            return Err(LedgerError::RawMismatch {
                round,
                expected: count,
                found: offsets.len(),
            });
        }
        let genesis_id = &block.genesis_id;
        let genesis_len =
            u32::try_from(genesis_id.len()).map_err(|_| LedgerError::BlockTooLarge {
                round,
                bytes: raw.len(),
            })?;
        let mut row = Vec::with_capacity(40 + genesis_id.len() + count * PREFIX_ENTRY_BYTES);
        row.extend_from_slice(&(count as u32).to_le_bytes());
        row.extend_from_slice(&genesis_len.to_le_bytes());
        row.extend_from_slice(genesis_id);
        row.extend_from_slice(&block.genesis_hash);
        for txn in &block.txns {
            row.extend_from_slice(&txn.txid.0[..4]);
        }
        for &offset in offsets {
            // In range: offsets are below `raw.len()`, checked to fit a u32 above.
            row.extend_from_slice(&(offset as u32).to_le_bytes());
        }
        Ok((bloom, Some(row)))
    }

    /// The configuration the ledger runs with (the seed in use is [`Ledger::bloom_seed`]).
    pub fn config(&self) -> &LedgerConfig {
        &self.config
    }

    /// The bloom hash seed in use (persisted at creation).
    pub fn bloom_seed(&self) -> u64 {
        self.seed
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The latest round (`None`: empty ledger). Lock-free.
    pub fn latest(&self) -> Option<Round> {
        self.window.latest()
    }

    /// The oldest kept round (`None`: empty ledger). Takes the writer lock briefly.
    pub fn first(&self) -> Option<Round> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner()).first
    }

    /// The network of the ledger's blocks, from its first block (`None`: empty ledger). Takes
    /// the writer lock briefly.
    pub fn genesis(&self) -> Option<Genesis> {
        self.writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .genesis
            .clone()
    }

    /// Checks that `block` is of the ledger's network (see [`Genesis`]); an empty ledger takes
    /// any. [`Ledger::add_decoded_block`] runs this check; a caller that skips blocks it
    /// already holds can run it on them too.
    ///
    /// # Errors
    ///
    /// [`LedgerError::OtherNetwork`] naming both networks.
    pub fn check_network(&self, block: &Block) -> Result<(), LedgerError> {
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        check_network(writer.genesis.as_ref(), block)
    }

    /// Decodes `raw` (msgpack `{block, cert}` or a bare block, as algod serves and stores
    /// blocks) and adds it as the next round; returns the round.
    ///
    /// # Errors
    ///
    /// [`LedgerError::Decode`] if `raw` is not a block; otherwise as
    /// [`Ledger::add_decoded_block`]. Nothing is written on error.
    pub fn add_block(&self, raw: &[u8]) -> Result<Round, LedgerError> {
        let block = (self.codec.decode)(raw).map_err(|source| LedgerError::Decode {
            round: None,
            source,
        })?;
        self.add_decoded_block(&block, raw)
    }

    /// Adds an already decoded block as the next round: `block.round` must be the latest
    /// round plus one, or any round for an empty ledger (a ledger may start at any round, e.g. from a
    /// catchpoint; the first round is kept in `meta`). `raw` is stored as the block's bytes and
    /// must be the encoding `block` was decoded from: the txid index points into it, and the
    /// blooms-disabled lookups and bloom rebuilds decode it again. (A block from
    /// [`codec::decode_block`] carries its entries' offsets; for one built by hand `raw` is
    /// scanned for them.)
    ///
    /// The block must be of the ledger's network (see [`Genesis`]); the first block names it.
    ///
    /// One write transaction stores the block bytes, the round's bloom and its txid index row
    /// (and, non-archival, deletes the round that leaves the window); after the commit the
    /// bloom is published to readers. One writer at a time: concurrent calls wait for each
    /// other; lookups do not wait.
    ///
    /// # Errors
    ///
    /// [`LedgerError::OutOfOrder`], [`LedgerError::OtherNetwork`], [`LedgerError::TooManyTxns`],
    /// [`LedgerError::Bloom`], [`LedgerError::Store`]; with the txid index, [`LedgerError::Decode`]
    /// or [`LedgerError::RawMismatch`] when `raw` is not the block's encoding and
    /// [`LedgerError::BlockTooLarge`]. Nothing is written or published on error.
    pub fn add_decoded_block(&self, block: &Block, raw: &[u8]) -> Result<Round, LedgerError> {
        // A panicking writer cannot leave the state half-updated: `first` is assigned only after
        // the commit, so a poisoned lock is still consistent.
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let round = block.round;
        if let Some(latest) = self.window.latest() {
            let expected = latest.checked_add(1).ok_or(LedgerError::OutOfOrder {
                expected: latest,
                got: round,
            })?;
            if round != expected {
                return Err(LedgerError::OutOfOrder {
                    expected,
                    got: round,
                });
            }
        }
        if round == u64::MAX {
            // The window encodes latest + 1; no chain gets there.
            return Err(LedgerError::OutOfOrder {
                expected: u64::MAX - 1,
                got: round,
            });
        }
        check_network(writer.genesis.as_ref(), block)?;
        // The first block names the network; a zero hash is learnt when a block sets it.
        let genesis = Genesis::of(block);
        let new_genesis = match &writer.genesis {
            Some(g) if g.hash != [0; 32] || genesis.hash == [0; 32] => None,
            Some(g) => Some(Genesis {
                id: g.id.clone(),
                hash: genesis.hash,
            }),
            None => Some(genesis),
        };
        let indexed = if self.config.blooms {
            Some(self.index_block(block, raw, round, self.config.txid_index)?)
        } else {
            None
        };
        let indexed_round = self.config.blooms && self.config.txid_index;

        let txn = self.db.begin_write().map_err(store(Some(round)))?;
        let first = writer.first.unwrap_or(round);
        let mut new_first = first;
        {
            let mut blocks = txn.open_table(BLOCKS).map_err(store(Some(round)))?;
            blocks.insert(round, raw).map_err(store(Some(round)))?;
        }
        {
            let mut meta = txn.open_table(META).map_err(store(Some(round)))?;
            meta.insert(META_LATEST, round)
                .map_err(store(Some(round)))?;
            if writer.first.is_none() {
                meta.insert(META_FIRST, round).map_err(store(Some(round)))?;
                if indexed_round {
                    meta.insert(META_INDEXED_FROM, round)
                        .map_err(store(Some(round)))?;
                }
            }
            if !indexed_round {
                // This round has no bloom or no index row.
                meta.remove(META_INDEXED_FROM).map_err(store(Some(round)))?;
            }
        }
        if let Some((bloom, index)) = &indexed {
            write_rows(&txn, round, bloom, index.as_deref())?;
        }
        if let Some(g) = &new_genesis {
            write_genesis(&txn, round, g)?;
        }
        if !self.config.archival {
            let window_start = round.saturating_sub(self.config.max_txn_life);
            if first < window_start {
                prune(&txn, first, window_start)?;
                new_first = window_start;
            }
        }
        txn.commit().map_err(store(Some(round)))?;
        writer.first = Some(new_first);
        if new_genesis.is_some() {
            writer.genesis = new_genesis;
        }
        self.window.publish(round, indexed.map(|(bloom, _)| bloom));
        Ok(round)
    }

    /// Looks `txid` up in `round`. With blooms, a round of the window whose bloom says "no" is
    /// answered without touching the database; "maybe" (or a kept round older than the window)
    /// goes to the exact txid index. Without blooms, the round's block is loaded and decoded
    /// and its txids compared (go-algorand's baseline). Both give identical answers.
    ///
    /// # Errors
    ///
    /// [`LedgerError::BeyondLatest`] for a round after the latest; [`LedgerError::NotKept`] for
    /// a round before the oldest kept one; [`LedgerError::Store`]; blooms disabled (or rounds
    /// indexed without blooms): [`LedgerError::Missing`], [`LedgerError::Decode`].
    pub fn lookup_txid(&self, txid: &Txid, round: Round) -> Result<Option<TxRecord>, LedgerError> {
        let reader = self.window.reader();
        match reader.get(round) {
            Probe::Beyond(latest) => Err(LedgerError::BeyondLatest { round, latest }),
            Probe::Hit(entry) => match &*entry {
                Some(bloom) if !bloom.contains_id(txid.as_bytes()) => Ok(None),
                Some(_) => self.exact(&self.read()?, txid, round, true),
                None => self.exact(&self.read()?, txid, round, false),
            },
            Probe::Outside => self.exact(&self.read()?, txid, round, self.config.blooms),
        }
    }

    /// Finds `txid` in `rounds`, newest round first, over at most the window (the latest
    /// MaxTxnLife + 1 rounds): rounds after the latest or before the window are skipped. This is
    /// the tx handler's "already committed?" check over a transaction's validity window
    /// (first valid ..= last valid). With blooms, each round costs one bloom probe (the txid is
    /// hashed once) unless the bloom says "maybe".
    ///
    /// # Errors
    ///
    /// As [`Ledger::lookup_txid`], except that rounds outside the window are not errors.
    pub fn find_txid(
        &self,
        txid: &Txid,
        rounds: RangeInclusive<Round>,
    ) -> Result<Option<TxRecord>, LedgerError> {
        let reader = self.window.reader();
        let Some(latest) = reader.latest() else {
            return Ok(None);
        };
        let hi = (*rounds.end()).min(latest);
        let lo = (*rounds.start()).max(latest.saturating_sub(self.config.max_txn_life));
        if rounds.is_empty() || lo > hi {
            return Ok(None);
        }
        // Every bloom of this ledger uses `self.seed`, so one hash serves all rounds: (seed, hash)
        // of the last bloom that hashed the txid.
        let mut hashed: Option<(u64, u64)> = None;
        let mut read: Option<ReadTransaction> = None;
        for round in (lo..=hi).rev() {
            let blooms = match reader.get(round) {
                Probe::Hit(entry) => match &*entry {
                    Some(bloom) => {
                        let hash = match hashed {
                            Some((seed, hash)) if seed == bloom.seed() => hash,
                            _ => {
                                let hash = bloom.hash_id(txid.as_bytes());
                                hashed = Some((bloom.seed(), hash));
                                hash
                            }
                        };
                        if !bloom.contains_hash(hash) {
                            continue;
                        }
                        true
                    }
                    None => false,
                },
                // The writer moved the window on since `latest` was read: older rounds are out.
                Probe::Outside => break,
                Probe::Beyond(_) => continue,
            };
            let txn = match &read {
                Some(txn) => txn,
                None => read.insert(self.read()?),
            };
            match self.exact(txn, txid, round, blooms) {
                Ok(None) => {}
                Ok(found) => return Ok(found),
                Err(LedgerError::NotKept { .. }) => break,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// The stored bytes of `round`'s block (go-algorand `Ledger.Block`, undecoded).
    ///
    /// # Errors
    ///
    /// [`LedgerError::BeyondLatest`], [`LedgerError::NotKept`], [`LedgerError::Missing`],
    /// [`LedgerError::Store`].
    pub fn block(&self, round: Round) -> Result<Vec<u8>, LedgerError> {
        let txn = self.read()?;
        self.check_kept(&txn, round)?;
        let blocks = txn.open_table(BLOCKS).map_err(store(Some(round)))?;
        let raw = blocks
            .get(round)
            .map_err(store(Some(round)))?
            .ok_or(LedgerError::Missing {
                what: "block",
                round,
            })?;
        Ok(raw.value().to_vec())
    }

    /// The bloom filter of `round`'s txids as the ledger persisted it (checksum verified), for
    /// measuring its false-positive rate or shipping it to a peer. `Ok(None)` when the round has
    /// no bloom: blooms are disabled, or the round was ingested while they were.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use txgate_algorand::synth::{SynthTxn, encode_block};
    /// use txgate_ledger::store::{Ledger, LedgerConfig};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let ledger = Ledger::open(dir.path(), LedgerConfig::default())?.0;
    /// let txn = SynthTxn::payment([1; 32], 1, 1000);
    /// let txid = txn.txid("net-v1", &[7; 32]);
    /// ledger.add_block(&encode_block(0, "net-v1", &[7; 32], 0, &[txn]))?;
    /// let bloom = ledger.round_bloom(0)?.expect("blooms are on by default");
    /// assert!(bloom.contains_id(txid.as_bytes()));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`LedgerError::BeyondLatest`], [`LedgerError::NotKept`], [`LedgerError::Store`];
    /// [`LedgerError::StoredBloom`] when the stored bytes no longer load (damaged since the
    /// ledger was opened: opening rebuilds damaged blooms).
    pub fn round_bloom(&self, round: Round) -> Result<Option<AnyBloom>, LedgerError> {
        let txn = self.read()?;
        self.check_kept(&txn, round)?;
        let blooms = txn.open_table(BLOOMS).map_err(store(Some(round)))?;
        let Some(row) = blooms.get(round).map_err(store(Some(round)))? else {
            return Ok(None);
        };
        AnyBloom::from_bytes(row.value())
            .map(Some)
            .map_err(|source| LedgerError::StoredBloom { round, source })
    }

    fn read(&self) -> Result<ReadTransaction, LedgerError> {
        self.db.begin_read().map_err(store(None))
    }

    /// Checks in `txn`'s snapshot that `round` is kept; returns the indexed-from round.
    fn check_kept(
        &self,
        txn: &ReadTransaction,
        round: Round,
    ) -> Result<Option<Round>, LedgerError> {
        let meta = txn.open_table(META).map_err(store(Some(round)))?;
        let get = |key| {
            meta.get(key)
                .map(|v| v.map(|v| v.value()))
                .map_err(store(Some(round)))
        };
        let latest = get(META_LATEST)?;
        match (get(META_FIRST)?, latest) {
            (Some(first), Some(latest)) if (first..=latest).contains(&round) => {
                get(META_INDEXED_FROM)
            }
            (Some(first), Some(_)) if round < first => Err(LedgerError::NotKept { round, first }),
            _ => Err(LedgerError::BeyondLatest { round, latest }),
        }
    }

    /// The exact answer from the database: the txid index when `indexed` (and the round is
    /// indexed), else the block decoded.
    fn exact(
        &self,
        txn: &ReadTransaction,
        txid: &Txid,
        round: Round,
        indexed: bool,
    ) -> Result<Option<TxRecord>, LedgerError> {
        let indexed_from = self.check_kept(txn, round)?;
        if indexed && indexed_from.is_some_and(|from| from <= round) {
            let prefixes = txn.open_table(TXID_PREFIXES).map_err(store(Some(round)))?;
            match prefixes.get(round).map_err(store(Some(round)))? {
                Some(row) => {
                    if let Some(index) = PrefixIndex::parse(row.value()) {
                        return self.search_prefixes(txn, &index, txid, round);
                    }
                    // A malformed row (a damaged file): the block below answers.
                }
                None => {
                    // A round a format-1 build indexed.
                    let table = txn.open_table(TXIDS).map_err(store(Some(round)))?;
                    let row = table.get(round).map_err(store(Some(round)))?.ok_or(
                        LedgerError::Missing {
                            what: "txid index",
                            round,
                        },
                    )?;
                    return Ok(
                        search_index(row.value(), txid).map(|index| TxRecord { round, index })
                    );
                }
            }
        }
        let raw = self.stored_block(txn, round)?;
        let block = (self.codec.decode)(raw.value()).map_err(|source| LedgerError::Decode {
            round: Some(round),
            source,
        })?;
        Ok(block
            .txns
            .iter()
            .position(|t| t.txid == *txid)
            .and_then(|i| u32::try_from(i).ok())
            .map(|index| TxRecord { round, index }))
    }

    /// The stored bytes of `round`'s block, in `txn`'s snapshot.
    fn stored_block<'t>(
        &self,
        txn: &'t ReadTransaction,
        round: Round,
    ) -> Result<redb::AccessGuard<'t, &'static [u8]>, LedgerError> {
        let blocks = txn.open_table(BLOCKS).map_err(store(Some(round)))?;
        blocks
            .get(round)
            .map_err(store(Some(round)))?
            .ok_or(LedgerError::Missing {
                what: "block",
                round,
            })
    }

    /// The exact answer from a compact index row: every entry whose txid prefix matches is
    /// verified against the txid of the payset entry it points to, in payset order (so a txid
    /// the payset repeats answers its first position, as the baseline's scan does).
    fn search_prefixes(
        &self,
        txn: &ReadTransaction,
        index: &PrefixIndex<'_>,
        txid: &Txid,
        round: Round,
    ) -> Result<Option<TxRecord>, LedgerError> {
        // Read only when some prefix matches: most "maybe"s of absent txids match none.
        let mut raw = None;
        let mut verify = |i: usize| -> Result<bool, LedgerError> {
            let raw = match &raw {
                Some(raw) => raw,
                None => raw.insert(self.stored_block(txn, round)?),
            };
            let found = (self.codec.entry_txid)(
                raw.value(),
                index.offset(i),
                index.genesis_id,
                &index.genesis_hash,
            )
            .map_err(|source| LedgerError::Decode {
                round: Some(round),
                source,
            })?;
            Ok(found == *txid)
        };
        let key = u32::from_le_bytes([txid.0[0], txid.0[1], txid.0[2], txid.0[3]]);
        // Sixteen prefixes at a time into a bit mask of matches (vectorised compares), then
        // the set bits in order.
        let mut chunks = index.prefixes.chunks_exact(64);
        let mut base = 0;
        for chunk in &mut chunks {
            let mut mask = 0u32;
            for (j, p) in chunk.chunks_exact(4).enumerate() {
                mask |= u32::from(u32::from_le_bytes([p[0], p[1], p[2], p[3]]) == key) << j;
            }
            while mask != 0 {
                let i = base + mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if verify(i)? {
                    return Ok(Some(TxRecord {
                        round,
                        index: i as u32,
                    }));
                }
            }
            base += 16;
        }
        for (j, p) in chunks.remainder().chunks_exact(4).enumerate() {
            if u32::from_le_bytes([p[0], p[1], p[2], p[3]]) == key && verify(base + j)? {
                return Ok(Some(TxRecord {
                    round,
                    index: (base + j) as u32,
                }));
            }
        }
        Ok(None)
    }
}

/// [`LedgerError::OtherNetwork`] unless `block` is of network `ledger` (`None`: any).
fn check_network(ledger: Option<&Genesis>, block: &Block) -> Result<(), LedgerError> {
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

/// The ledger's network from [`CHAIN`]; a non-empty ledger without the rows (written before the
/// table existed) learns it from its oldest kept block, `first`, and writes the rows.
fn read_genesis(
    txn: &WriteTransaction,
    first: Option<Round>,
    decode: fn(&[u8]) -> Result<Block, DecodeError>,
) -> Result<Option<Genesis>, LedgerError> {
    let stored = {
        let chain = txn.open_table(CHAIN).map_err(store(None))?;
        let id = chain.get(CHAIN_GENESIS_ID).map_err(store(None))?;
        let hash = chain.get(CHAIN_GENESIS_HASH).map_err(store(None))?;
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
        let blocks = txn.open_table(BLOCKS).map_err(store(Some(first)))?;
        let raw = blocks
            .get(first)
            .map_err(store(Some(first)))?
            .ok_or(LedgerError::Missing {
                what: "block",
                round: first,
            })?;
        decode(raw.value()).map_err(|source| LedgerError::Decode {
            round: Some(first),
            source,
        })?
    };
    let genesis = Genesis::of(&block);
    write_genesis(txn, first, &genesis)?;
    Ok(Some(genesis))
}

/// Writes [`CHAIN`]'s rows (in the write transaction of `round`, for the error).
fn write_genesis(
    txn: &WriteTransaction,
    round: Round,
    genesis: &Genesis,
) -> Result<(), LedgerError> {
    let r = Some(round);
    let mut chain = txn.open_table(CHAIN).map_err(store(r))?;
    chain
        .insert(CHAIN_GENESIS_ID, genesis.id.as_slice())
        .map_err(store(r))?;
    chain
        .insert(CHAIN_GENESIS_HASH, genesis.hash.as_slice())
        .map_err(store(r))?;
    Ok(())
}

/// A parsed compact txid index row (see [`TXID_PREFIXES`]).
struct PrefixIndex<'a> {
    genesis_id: &'a [u8],
    genesis_hash: [u8; 32],
    // Invariant: prefixes.len() == offsets.len() == 4 * txns, txns < 2^32.
    prefixes: &'a [u8],
    offsets: &'a [u8],
}

impl<'a> PrefixIndex<'a> {
    /// The row's fields, or `None` when its length does not match its header.
    fn parse(row: &'a [u8]) -> Option<Self> {
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
}

/// Writes a round's bloom row and, when given, its compact txid index row (idempotent:
/// rewriting a round writes the same rows).
fn write_rows(
    txn: &WriteTransaction,
    round: Round,
    bloom: &AnyBloom,
    index: Option<&[u8]>,
) -> Result<(), LedgerError> {
    let mut blooms = txn.open_table(BLOOMS).map_err(store(Some(round)))?;
    blooms
        .insert(round, bloom.to_bytes().as_slice())
        .map_err(store(Some(round)))?;
    if let Some(index) = index {
        txn.open_table(TXID_PREFIXES)
            .map_err(store(Some(round)))?
            .insert(round, index)
            .map_err(store(Some(round)))?;
    }
    Ok(())
}

/// Binary search of a format-1 txid index row (sorted entries, see [`TXIDS`]); a row whose
/// length is not a whole number of entries is searched over its whole entries.
fn search_index(row: &[u8], txid: &Txid) -> Option<u32> {
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

/// Deletes blocks, blooms and index rows of rounds `from..to` and sets the first round to `to`.
fn prune(txn: &WriteTransaction, from: Round, to: Round) -> Result<(), LedgerError> {
    let r = Some(from);
    txn.open_table(BLOCKS)
        .map_err(store(r))?
        .retain_in(from..to, |_, _| false)
        .map_err(store(r))?;
    txn.open_table(BLOOMS)
        .map_err(store(r))?
        .retain_in(from..to, |_, _| false)
        .map_err(store(r))?;
    txn.open_table(TXID_PREFIXES)
        .map_err(store(r))?
        .retain_in(from..to, |_, _| false)
        .map_err(store(r))?;
    txn.open_table(TXIDS)
        .map_err(store(r))?
        .retain_in(from..to, |_, _| false)
        .map_err(store(r))?;
    txn.open_table(META)
        .map_err(store(r))?
        .insert(META_FIRST, to)
        .map_err(store(r))?;
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use txgate_algorand::codec::Txn;

    /// The unit tests' block encoding (the real codec is tested on its own): `b"TB"`, the round
    /// as 8 little-endian bytes, then the txids.
    fn encode(round: Round, txids: &[Txid]) -> Vec<u8> {
        let mut raw = b"TB".to_vec();
        raw.extend_from_slice(&round.to_le_bytes());
        for id in txids {
            raw.extend_from_slice(id.as_bytes());
        }
        raw
    }

    fn decode(raw: &[u8]) -> Result<Block, DecodeError> {
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

    /// Where the test encoding's entries start: txid `i` at byte 10 + 32 i.
    fn offsets(raw: &[u8]) -> Result<Vec<usize>, DecodeError> {
        Ok((0..decode(raw)?.txns.len()).map(|i| 10 + 32 * i).collect())
    }

    /// The "txid" of the test entry at `offset`: its 32 bytes.
    fn entry_txid(
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

    const TEST_CODEC: Codec = Codec {
        decode,
        offsets,
        entry_txid,
    };

    fn block(round: Round, txids: &[Txid]) -> Block {
        Block {
            round,
            genesis_id: b"test".to_vec(),
            genesis_hash: [1; 32],
            timestamp: 0,
            txn_commitment: None,
            entry_offsets: (0..txids.len()).map(|i| 10 + 32 * i).collect(),
            txns: txids
                .iter()
                .map(|&txid| Txn {
                    txid,
                    tx_type: b"pay".to_vec(),
                    sender: [2; 32],
                    first_valid: round.saturating_sub(10),
                    last_valid: round.saturating_add(10),
                    group: None,
                    app_ids: vec![],
                })
                .collect(),
        }
    }

    /// splitmix64: deterministic txids without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn txid(&mut self) -> Txid {
            let mut id = [0; 32];
            for chunk in id.chunks_exact_mut(8) {
                chunk.copy_from_slice(&self.next().to_le_bytes());
            }
            Txid(id)
        }
    }

    fn open(dir: &Path, config: LedgerConfig) -> (Ledger, OpenReport) {
        Ledger::open_with_codec(dir, config, TEST_CODEC).unwrap()
    }

    /// Adds rounds `rounds` with `per_round(round)` random txns each; returns round -> txids.
    fn fill(
        ledger: &Ledger,
        rounds: RangeInclusive<Round>,
        rng: &mut Rng,
        per_round: impl Fn(Round) -> usize,
    ) -> HashMap<Round, Vec<Txid>> {
        let mut model = HashMap::new();
        for round in rounds {
            let ids: Vec<Txid> = (0..per_round(round)).map(|_| rng.txid()).collect();
            assert_eq!(ledger.add_block(&encode(round, &ids)).unwrap(), round);
            model.insert(round, ids);
        }
        model
    }

    fn block_rounds(dir: &Path) -> Vec<Round> {
        let db = Database::create(dir.join(DB_FILE)).unwrap();
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(BLOCKS).unwrap();
        t.iter().unwrap().map(|r| r.unwrap().0.value()).collect()
    }

    #[test]
    fn sequencing_errors_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (l, _) = open(dir.path(), LedgerConfig::default());
            // An empty ledger takes any first round.
            l.add_block(&encode(5, &[Txid([1; 32])])).unwrap();
            for bad in [4, 5, 7, 0, u64::MAX] {
                let err = l.add_block(&encode(bad, &[Txid([9; 32])])).unwrap_err();
                assert!(
                    matches!(err, LedgerError::OutOfOrder { expected: 6, got } if got == bad),
                    "{err}"
                );
            }
            assert!(matches!(
                l.add_block(b"garbage"),
                Err(LedgerError::Decode { round: None, .. })
            ));
            assert_eq!(l.latest(), Some(5));
            assert_eq!(l.first(), Some(5));
            // The rejected txid is nowhere.
            assert_eq!(l.find_txid(&Txid([9; 32]), 0..=100).unwrap(), None);
            l.add_block(&encode(6, &[])).unwrap();
        }
        assert_eq!(block_rounds(dir.path()), vec![5, 6]);
        let (l, report) = open(dir.path(), LedgerConfig::default());
        assert_eq!((report.first, report.latest), (Some(5), Some(6)));
        assert!(matches!(
            l.add_block(&encode(8, &[])),
            Err(LedgerError::OutOfOrder {
                expected: 7,
                got: 8
            })
        ));
    }

    #[test]
    fn blocks_of_another_network_are_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let other = |round: Round, hash: [u8; 32]| Block {
            genesis_id: b"mainnet-v1.0".to_vec(),
            genesis_hash: hash,
            ..block(round, &[Txid([9; 32])])
        };
        let test_net = Genesis {
            id: b"test".to_vec(),
            hash: [1; 32],
        };
        {
            let (l, _) = open(dir.path(), LedgerConfig::default());
            assert_eq!(l.genesis(), None);
            l.add_block(&encode(5, &[Txid([1; 32])])).unwrap();
            assert_eq!(l.genesis(), Some(test_net.clone()));
            let err = l
                .add_decoded_block(&other(6, [3; 32]), &encode(6, &[Txid([9; 32])]))
                .unwrap_err();
            match &err {
                LedgerError::OtherNetwork {
                    round: 6,
                    block,
                    ledger,
                } => {
                    assert_eq!(block.id, b"mainnet-v1.0");
                    assert_eq!(**ledger, test_net);
                }
                e => panic!("{e}"),
            }
            // Both networks by name and base64 genesis hash, on one line.
            let msg = err.to_string();
            assert!(msg.contains("mainnet-v1.0 (genesis hash AwMD"), "{msg}");
            assert!(msg.contains("test (genesis hash AQEB"), "{msg}");
            assert!(!msg.contains('\n'));
            // The same id with another hash is another network; a zero hash is "not set".
            assert!(l.check_network(&other(6, [1; 32])).is_err());
            let same_id = |hash| Block {
                genesis_hash: hash,
                ..block(6, &[])
            };
            assert!(l.check_network(&same_id([2; 32])).is_err());
            assert!(l.check_network(&same_id([0; 32])).is_ok());
            assert_eq!(l.latest(), Some(5));
            assert_eq!(l.find_txid(&Txid([9; 32]), 0..=100).unwrap(), None);
        }
        assert_eq!(block_rounds(dir.path()), vec![5]);
        // Reopened, the ledger still knows its network, also when the rows are gone (a ledger
        // written before the chain table existed learns it from its first block).
        for drop_rows in [false, true] {
            if drop_rows {
                let db = Database::create(dir.path().join(DB_FILE)).unwrap();
                let txn = db.begin_write().unwrap();
                txn.delete_table(CHAIN).unwrap();
                txn.commit().unwrap();
            }
            let (l, _) = open(dir.path(), LedgerConfig::default());
            assert_eq!(
                l.genesis(),
                Some(test_net.clone()),
                "rows dropped: {drop_rows}"
            );
            assert!(matches!(
                l.add_decoded_block(&other(6, [3; 32]), &encode(6, &[])),
                Err(LedgerError::OtherNetwork { round: 6, .. })
            ));
            assert_eq!(l.latest(), Some(5));
        }
        let (l, _) = open(dir.path(), LedgerConfig::default());
        l.add_block(&encode(6, &[])).unwrap();
        drop(l);
        assert_eq!(block_rounds(dir.path()), vec![5, 6]);
    }

    #[test]
    fn lookups_are_exact_and_errors_are_typed() {
        let dir = tempfile::tempdir().unwrap();
        // A high false-positive rate, so many misses go through the exact check.
        let config = LedgerConfig {
            false_positive_rate: 0.3,
            ..LedgerConfig::default()
        };
        let (l, _) = open(dir.path(), config);
        assert!(matches!(
            l.lookup_txid(&Txid([0; 32]), 0),
            Err(LedgerError::BeyondLatest {
                round: 0,
                latest: None
            })
        ));
        let mut rng = Rng(1);
        let model = fill(&l, 100..=139, &mut rng, |r| (r % 7) as usize * 30);
        for (&round, ids) in &model {
            for (i, id) in ids.iter().enumerate() {
                let want = Some(TxRecord {
                    round,
                    index: i as u32,
                });
                assert_eq!(l.lookup_txid(id, round).unwrap(), want);
                assert_eq!(l.find_txid(id, 0..=u64::MAX).unwrap(), want);
                assert_eq!(l.find_txid(id, round..=round).unwrap(), want);
                assert_eq!(l.find_txid(id, round + 1..=200).unwrap(), None);
                // In every other round: absent.
                for other in [100, round.saturating_sub(1).max(100), 139] {
                    if other != round {
                        assert_eq!(l.lookup_txid(id, other).unwrap(), None);
                    }
                }
            }
        }
        // Absent txids: the blooms say "maybe" for ~30 % of them; the index says no.
        let mut maybes = 0;
        for _ in 0..300 {
            let id = rng.txid();
            let round = 100 + rng.next() % 40;
            let reader = l.window.reader();
            if let Probe::Hit(bloom) = reader.get(round) {
                maybes += usize::from(bloom.as_ref().unwrap().contains_id(id.as_bytes()));
            }
            drop(reader);
            assert_eq!(l.lookup_txid(&id, round).unwrap(), None);
            assert_eq!(l.find_txid(&id, 0..=1000).unwrap(), None);
        }
        assert!(maybes > 20, "{maybes} false positives");
        assert!(matches!(
            l.lookup_txid(&Txid([0; 32]), 140),
            Err(LedgerError::BeyondLatest {
                round: 140,
                latest: Some(139)
            })
        ));
        assert!(matches!(
            l.lookup_txid(&Txid([0; 32]), 99),
            Err(LedgerError::NotKept {
                round: 99,
                first: 100
            })
        ));
    }

    #[test]
    fn find_txid_is_newest_first_within_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let config = LedgerConfig {
            max_txn_life: 4,
            ..LedgerConfig::default()
        };
        let (l, _) = open(dir.path(), config);
        let id = Txid([5; 32]);
        for round in 0..=9 {
            let ids = if round % 3 == 0 {
                vec![Txid([1; 32]), id]
            } else {
                vec![]
            };
            l.add_block(&encode(round, &ids)).unwrap();
        }
        // id is in rounds 0, 3, 6, 9; the window is 5..=9.
        let find = |r: RangeInclusive<Round>| l.find_txid(&id, r).unwrap().map(|t| t.round);
        assert_eq!(find(0..=100), Some(9));
        assert_eq!(find(0..=8), Some(6));
        assert_eq!(find(0..=5), None, "round 3 is outside the window");
        assert_eq!(find(7..=8), None);
        #[allow(clippy::reversed_empty_ranges)]
        let empty = 9..=6;
        assert_eq!(find(empty), None);
        // lookup_txid still answers for archival rounds outside the window (from the index).
        assert_eq!(
            l.lookup_txid(&id, 3).unwrap(),
            Some(TxRecord { round: 3, index: 1 })
        );
        assert_eq!(l.lookup_txid(&id, 4).unwrap(), None);
    }

    #[test]
    fn reopen_loads_blooms_and_rebuilds_corrupt_or_missing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let config = LedgerConfig {
            max_txn_life: 9,
            ..LedgerConfig::default()
        };
        let mut rng = Rng(2);
        let model = {
            let (l, report) = open(dir.path(), config.clone());
            assert_eq!(report.blooms_loaded, 0);
            fill(&l, 0..=29, &mut rng, |r| r as usize % 5 + 1)
        };
        let (l, report) = open(dir.path(), config.clone());
        assert_eq!(report.latest, Some(29));
        assert_eq!(report.blooms_loaded, 10, "the window is rounds 20..=29");
        assert_eq!(report.rebuilt, vec![]);
        assert_eq!(report.bloom_seed, DEFAULT_BLOOM_SEED);
        drop(l);
        // Damage round 25's bloom row, delete round 27's, give round 28 a valid filter with
        // another seed, damage round 3's (outside the window).
        let bytes_25 = {
            let db = Database::create(dir.path().join(DB_FILE)).unwrap();
            let txn = db.begin_write().unwrap();
            let bytes_25 = {
                let mut t = txn.open_table(BLOOMS).unwrap();
                let bytes_25 = t.get(25).unwrap().unwrap().value().to_vec();
                t.insert(25, &bytes_25[..bytes_25.len() - 1]).unwrap();
                t.remove(27).unwrap();
                let other_seed = BloomBuilder::with_num_blocks(1)
                    .unwrap()
                    .seed(DEFAULT_BLOOM_SEED ^ 1)
                    .build()
                    .unwrap();
                t.insert(28, &other_seed.to_bytes()[..]).unwrap();
                t.insert(3, &b"junk"[..]).unwrap();
                bytes_25
            };
            txn.commit().unwrap();
            bytes_25
        };
        let (l, report) = open(dir.path(), config.clone());
        assert_eq!(report.blooms_loaded, 7);
        let rounds: Vec<_> = report.rebuilt.iter().map(|r| r.round).collect();
        assert_eq!(rounds, vec![25, 27, 28]);
        assert!(matches!(
            report.rebuilt[0].reason,
            RebuildReason::Corrupt(_)
        ));
        assert_eq!(report.rebuilt[1].reason, RebuildReason::Missing);
        assert_eq!(
            report.rebuilt[2].reason,
            RebuildReason::WrongSeed {
                found: DEFAULT_BLOOM_SEED ^ 1
            }
        );
        for (&round, ids) in &model {
            for (i, id) in ids.iter().enumerate() {
                let want = Some(TxRecord {
                    round,
                    index: i as u32,
                });
                assert_eq!(l.lookup_txid(id, round).unwrap(), want);
            }
        }
        drop(l);
        // The rebuilt blooms were written back, byte-identical (deterministic seed).
        let (l, report) = open(dir.path(), config);
        assert_eq!((report.blooms_loaded, report.rebuilt.len()), (10, 0));
        drop(l);
        let db = Database::create(dir.path().join(DB_FILE)).unwrap();
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(BLOOMS).unwrap();
        assert_eq!(t.get(25).unwrap().unwrap().value(), &bytes_25[..]);
    }

    /// Every txid of `model` is found at its position in its round and in no other round of
    /// `rounds`, through `lookup_txid`.
    fn assert_lookups(l: &Ledger, model: &HashMap<Round, Vec<Txid>>) {
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

    fn bloom_row(dir: &Path, round: Round) -> Vec<u8> {
        let db = Database::create(dir.join(DB_FILE)).unwrap();
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(BLOOMS).unwrap();
        t.get(round).unwrap().unwrap().value().to_vec()
    }

    /// A stored bloom with one altered byte (in its blocks, or one bit of its seed) fails its
    /// checksum at open, is rebuilt from its block and reported; lookups stay exact, and the
    /// rebuilt row is the original one again.
    #[test]
    fn a_damaged_bloom_row_fails_its_checksum_and_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let config = LedgerConfig {
            max_txn_life: 9,
            ..LedgerConfig::default()
        };
        let mut rng = Rng(8);
        let model = {
            let (l, _) = open(dir.path(), config.clone());
            fill(&l, 0..=9, &mut rng, |_| 50)
        };
        let (good_4, good_6) = (bloom_row(dir.path(), 4), bloom_row(dir.path(), 6));
        {
            let db = Database::create(dir.path().join(DB_FILE)).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut t = txn.open_table(BLOOMS).unwrap();
                let mut bad = good_4.clone();
                bad[txgate_bloom::format::HEADER_BYTES + 7] ^= 0x10; // a block byte
                t.insert(4, bad.as_slice()).unwrap();
                let mut bad = good_6.clone();
                bad[16] ^= 1; // one bit of the seed
                t.insert(6, bad.as_slice()).unwrap();
            }
            txn.commit().unwrap();
        }
        let (l, report) = open(dir.path(), config.clone());
        let rounds: Vec<_> = report.rebuilt.iter().map(|r| r.round).collect();
        assert_eq!(rounds, vec![4, 6]);
        for rebuilt in &report.rebuilt {
            assert!(
                matches!(
                    rebuilt.reason,
                    RebuildReason::Corrupt(LoadError::ChecksumMismatch { .. })
                ),
                "{rebuilt:?}"
            );
        }
        assert_eq!(report.blooms_loaded, 8);
        assert_lookups(&l, &model);
        for _ in 0..200 {
            assert_eq!(l.lookup_txid(&rng.txid(), 4).unwrap(), None);
        }
        drop(l);
        assert_eq!(bloom_row(dir.path(), 4), good_4);
        assert_eq!(bloom_row(dir.path(), 6), good_6);
        let (_, report) = open(dir.path(), config);
        assert_eq!((report.blooms_loaded, report.rebuilt.len()), (10, 0));
    }

    /// The layout is a setting for new rounds: blooms stored in the other layout load as they
    /// are (no rebuild), and lookups are exact across rounds of both.
    #[test]
    fn stored_blooms_of_the_other_layout_still_load() {
        let dir = tempfile::tempdir().unwrap();
        let with = |layout| LedgerConfig {
            bloom_layout: layout,
            max_txn_life: 20,
            ..LedgerConfig::default()
        };
        let mut rng = Rng(9);
        let mut model = {
            let (l, _) = open(dir.path(), with(Layout::Block256));
            fill(&l, 0..=5, &mut rng, |r| r as usize * 40)
        };
        let (l, report) = open(dir.path(), with(Layout::Block512));
        assert_eq!((report.blooms_loaded, report.rebuilt.len()), (6, 0));
        model.extend(fill(&l, 6..=8, &mut rng, |_| 100));
        assert_lookups(&l, &model);
        drop(l);
        let layouts: Vec<Layout> = (0..=8)
            .map(|r| txgate_bloom::format::layout_of(&bloom_row(dir.path(), r)).unwrap())
            .collect();
        assert_eq!(layouts[..6], [Layout::Block256; 6]);
        assert_eq!(layouts[6..], [Layout::Block512; 3]);
        let (l, report) = open(dir.path(), with(Layout::Block256));
        assert_eq!((report.blooms_loaded, report.rebuilt.len()), (9, 0));
        assert_lookups(&l, &model);
        assert_eq!(
            l.find_txid(&model[&7][3], 0..=8).unwrap(),
            Some(TxRecord { round: 7, index: 3 })
        );
    }

    /// The compact index stores 4-byte prefixes: txids sharing a prefix (crafted, and a txid the
    /// payset repeats) are told apart by verifying each match against its entry, and an absent
    /// txid with a present one's prefix is absent.
    #[test]
    fn prefix_matches_are_verified_against_their_entries() {
        let dir = tempfile::tempdir().unwrap();
        // A high false-positive rate, so that absent txids get past the bloom to the index.
        let config = LedgerConfig {
            false_positive_rate: 0.5,
            ..LedgerConfig::default()
        };
        let (l, _) = open(dir.path(), config);
        let mut rng = Rng(10);
        let shared = |rng: &mut Rng| {
            let mut id = rng.txid();
            id.0[..4].copy_from_slice(&[9, 9, 9, 9]);
            id
        };
        let mut ids: Vec<Txid> = (0..40).map(|_| shared(&mut rng)).collect();
        ids.extend((0..40).map(|_| rng.txid()));
        ids.push(ids[3]); // repeated: found at its first position
        ids.push(ids[50]);
        l.add_block(&encode(0, &ids)).unwrap();
        let model = HashMap::from([(0, ids.clone())]);
        assert_lookups(&l, &model);
        assert_eq!(
            l.lookup_txid(&ids[3], 0).unwrap(),
            Some(TxRecord { round: 0, index: 3 })
        );
        let mut maybes = 0;
        for _ in 0..1000 {
            let absent = shared(&mut rng);
            let reader = l.window.reader();
            if let Probe::Hit(bloom) = reader.get(0) {
                maybes += usize::from(bloom.as_ref().unwrap().contains_id(absent.as_bytes()));
            }
            drop(reader);
            assert_eq!(l.lookup_txid(&absent, 0).unwrap(), None);
        }
        assert!(maybes > 20, "{maybes} absent txids got past the bloom");
    }

    /// A compact index row whose length does not match its header (a damaged file) is not
    /// trusted: the block answers, exactly.
    #[test]
    fn a_malformed_index_row_is_answered_from_the_block() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng(13);
        let model = {
            let (l, _) = open(dir.path(), LedgerConfig::default());
            fill(&l, 0..=1, &mut rng, |_| 20)
        };
        {
            let db = Database::create(dir.path().join(DB_FILE)).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut t = txn.open_table(TXID_PREFIXES).unwrap();
                let row = t.get(1).unwrap().unwrap().value().to_vec();
                t.insert(1, &row[..row.len() - 1]).unwrap();
            }
            txn.commit().unwrap();
        }
        let (l, _) = open(dir.path(), LedgerConfig::default());
        assert_lookups(&l, &model);
        assert_eq!(l.lookup_txid(&rng.txid(), 1).unwrap(), None);
    }

    /// A ledger a format-1 build wrote (36-byte rows in `txids`, format 1 in `meta`) opens as
    /// format 2: its rows still answer, new rounds get compact rows, and a later format is
    /// refused.
    #[test]
    fn format_1_ledgers_open_and_answer_from_their_rows() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng(11);
        let mut model = {
            let (l, _) = open(dir.path(), LedgerConfig::default());
            let mut model = fill(&l, 0..=4, &mut rng, |r| r as usize * 3 + 1);
            // A repeated txid: format 1 kept its first position.
            let mut ids: Vec<Txid> = (0..5).map(|_| rng.txid()).collect();
            ids.push(ids[1]);
            l.add_block(&encode(5, &ids)).unwrap();
            model.insert(5, ids);
            model
        };
        {
            // Rewrite it as format 1 wrote it.
            let db = Database::create(dir.path().join(DB_FILE)).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut old = txn.open_table(TXIDS).unwrap();
                for (&round, ids) in &model {
                    let mut rows: Vec<([u8; 32], u32)> = ids
                        .iter()
                        .enumerate()
                        .map(|(i, t)| (t.0, i as u32))
                        .collect();
                    rows.sort_unstable();
                    rows.dedup_by_key(|r| r.0);
                    let row: Vec<u8> = rows
                        .iter()
                        .flat_map(|(t, i)| t.iter().copied().chain(i.to_le_bytes()))
                        .collect();
                    old.insert(round, row.as_slice()).unwrap();
                }
                txn.open_table(TXID_PREFIXES)
                    .unwrap()
                    .retain(|_, _| false)
                    .unwrap();
                txn.open_table(META)
                    .unwrap()
                    .insert(META_FORMAT, FORMAT_VERSION_1)
                    .unwrap();
            }
            txn.commit().unwrap();
        }
        let (l, report) = open(dir.path(), LedgerConfig::default());
        assert_eq!((report.blooms_loaded, report.rebuilt.len()), (6, 0));
        assert_lookups(&l, &model);
        model.extend(fill(&l, 6..=7, &mut rng, |_| 9));
        assert_lookups(&l, &model);
        drop(l);
        {
            let db = Database::create(dir.path().join(DB_FILE)).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let meta = txn.open_table(META).unwrap();
                assert_eq!(
                    meta.get(META_FORMAT).unwrap().unwrap().value(),
                    FORMAT_VERSION
                );
                let prefixes = txn.open_table(TXID_PREFIXES).unwrap();
                let rounds: Vec<Round> = prefixes
                    .iter()
                    .unwrap()
                    .map(|r| r.unwrap().0.value())
                    .collect();
                assert_eq!(rounds, vec![6, 7]);
            }
            txn.open_table(META)
                .unwrap()
                .insert(META_FORMAT, FORMAT_VERSION + 1)
                .unwrap();
            txn.commit().unwrap();
        }
        assert!(matches!(
            Ledger::open_with_codec(dir.path(), LedgerConfig::default(), TEST_CODEC),
            Err(LedgerError::Format { found, .. }) if found == FORMAT_VERSION + 1
        ));
    }

    /// Blooms without the txid index: no index rows are written and a "maybe" decodes the
    /// block; opening with the index again indexes the window's rounds that lack a row.
    #[test]
    fn blooms_without_the_index_decode_and_are_indexed_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let config = |txid_index| LedgerConfig {
            txid_index,
            max_txn_life: 5,
            ..LedgerConfig::default()
        };
        let mut rng = Rng(12);
        let mut model = {
            let (l, _) = open(dir.path(), config(true));
            fill(&l, 0..=2, &mut rng, |_| 6)
        };
        {
            let (l, report) = open(dir.path(), config(false));
            assert_eq!(report.rebuilt, vec![]);
            model.extend(fill(&l, 3..=8, &mut rng, |_| 6));
            assert_lookups(&l, &model);
        }
        let index_rounds = |dir: &Path| -> Vec<Round> {
            let db = Database::create(dir.join(DB_FILE)).unwrap();
            let txn = db.begin_read().unwrap();
            let t = txn.open_table(TXID_PREFIXES).unwrap();
            t.iter().unwrap().map(|r| r.unwrap().0.value()).collect()
        };
        assert_eq!(index_rounds(dir.path()), vec![0, 1, 2]);
        let (l, report) = open(dir.path(), config(true));
        let rounds: Vec<_> = report.rebuilt.iter().map(|r| r.round).collect();
        assert_eq!(rounds, vec![3, 4, 5, 6, 7, 8], "the window is 3..=8");
        assert!(
            report
                .rebuilt
                .iter()
                .all(|r| r.reason == RebuildReason::MissingIndex)
        );
        assert_lookups(&l, &model);
        drop(l);
        assert_eq!(index_rounds(dir.path()), (0..=8).collect::<Vec<_>>());
        let (_, report) = open(dir.path(), config(true));
        assert_eq!(report.rebuilt, vec![]);
    }

    #[test]
    fn non_archival_ledgers_prune_rounds_that_leave_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let config = LedgerConfig {
            max_txn_life: 3,
            archival: false,
            ..LedgerConfig::default()
        };
        let mut rng = Rng(3);
        let model = {
            let (l, _) = open(dir.path(), config.clone());
            let model = fill(&l, 10..=19, &mut rng, |_| 4);
            assert_eq!(l.first(), Some(16));
            for round in 10..=19 {
                let id = model[&round][0];
                let got = l.lookup_txid(&id, round);
                if round < 16 {
                    assert!(matches!(got, Err(LedgerError::NotKept { first: 16, .. })));
                } else {
                    assert_eq!(got.unwrap(), Some(TxRecord { round, index: 0 }));
                }
            }
            model
        };
        assert_eq!(block_rounds(dir.path()), vec![16, 17, 18, 19]);
        {
            let db = Database::create(dir.path().join(DB_FILE)).unwrap();
            let txn = db.begin_read().unwrap();
            let t = txn.open_table(TXID_PREFIXES).unwrap();
            let rows: Vec<(Round, usize)> = t
                .iter()
                .unwrap()
                .map(|r| {
                    let (k, v) = r.unwrap();
                    (k.value(), v.value().len())
                })
                .collect();
            // Header 4 + 4 + 4 ("test") + 32, then 8 bytes for each of the 4 txns.
            let len = 44 + 4 * PREFIX_ENTRY_BYTES;
            assert_eq!(rows, vec![(16, len), (17, len), (18, len), (19, len)]);
            let t = txn.open_table(BLOOMS).unwrap();
            assert_eq!(t.iter().unwrap().count(), 4);
        }
        // Reopening with a shorter MaxTxnLife prunes at open.
        let (l, report) = open(
            dir.path(),
            LedgerConfig {
                max_txn_life: 1,
                ..config
            },
        );
        assert_eq!(report.first, Some(18));
        assert_eq!(report.blooms_loaded, 2);
        assert!(l.lookup_txid(&model[&17][0], 17).is_err());
        assert_eq!(
            l.lookup_txid(&model[&18][1], 18).unwrap(),
            Some(TxRecord {
                round: 18,
                index: 1
            })
        );
        drop(l);
        assert_eq!(block_rounds(dir.path()), vec![18, 19]);
    }

    #[test]
    fn blooms_disabled_gives_identical_answers() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let base = LedgerConfig {
            max_txn_life: 7,
            ..LedgerConfig::default()
        };
        let (with, _) = open(a.path(), base.clone());
        let (without, _) = open(
            b.path(),
            LedgerConfig {
                blooms: false,
                ..base
            },
        );
        let mut rng = Rng(4);
        let mut all = Vec::new();
        for round in 0..20 {
            let mut ids: Vec<Txid> = (0..round % 4).map(|_| rng.txid()).collect();
            if round % 5 == 0 {
                ids.push(Txid([0xEE; 32])); // one txid in several rounds
            }
            with.add_block(&encode(round, &ids)).unwrap();
            without.add_block(&encode(round, &ids)).unwrap();
            all.extend(ids);
        }
        all.extend((0..20).map(|_| rng.txid()));
        for id in &all {
            for round in 0..=20 {
                let (x, y) = (with.lookup_txid(id, round), without.lookup_txid(id, round));
                match (x, y) {
                    (Ok(x), Ok(y)) => assert_eq!(x, y),
                    (Err(x), Err(y)) => assert_eq!(x.to_string(), y.to_string()),
                    (x, y) => panic!("{x:?} vs {y:?}"),
                }
            }
            for (lo, hi) in [(0, 19), (10, 15), (0, 100), (14, 14)] {
                assert_eq!(
                    with.find_txid(id, lo..=hi).unwrap(),
                    without.find_txid(id, lo..=hi).unwrap()
                );
            }
        }
        assert_eq!(
            without.find_txid(&Txid([0xEE; 32]), 0..=100).unwrap(),
            Some(TxRecord {
                round: 15,
                index: 3
            })
        );
    }

    #[test]
    fn switching_blooms_on_rebuilds_the_window_and_decodes_older_rounds() {
        let dir = tempfile::tempdir().unwrap();
        let off = LedgerConfig {
            blooms: false,
            max_txn_life: 4,
            ..LedgerConfig::default()
        };
        let mut rng = Rng(5);
        let model = {
            let (l, _) = open(dir.path(), off);
            fill(&l, 0..=11, &mut rng, |_| 2)
        };
        let on = LedgerConfig {
            max_txn_life: 4,
            ..LedgerConfig::default()
        };
        let (l, report) = open(dir.path(), on);
        let rounds: Vec<_> = report.rebuilt.iter().map(|r| r.round).collect();
        assert_eq!(rounds, vec![7, 8, 9, 10, 11]);
        assert!(
            report
                .rebuilt
                .iter()
                .all(|r| r.reason == RebuildReason::Missing)
        );
        for (&round, ids) in &model {
            assert_eq!(
                l.lookup_txid(&ids[1], round).unwrap(),
                Some(TxRecord { round, index: 1 })
            );
            assert_eq!(l.lookup_txid(&ids[1], (round + 1) % 12).unwrap(), None);
        }
    }

    #[test]
    fn ledger_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Ledger>();
    }

    #[test]
    fn bad_configuration_is_a_typed_error() {
        let dir = tempfile::tempdir().unwrap();
        for config in [
            LedgerConfig {
                false_positive_rate: 0.0,
                ..LedgerConfig::default()
            },
            LedgerConfig {
                false_positive_rate: f64::NAN,
                ..LedgerConfig::default()
            },
            LedgerConfig {
                max_txn_life: MAX_WINDOW_ROUNDS + 1,
                ..LedgerConfig::default()
            },
        ] {
            assert!(matches!(
                Ledger::open(dir.path(), config),
                Err(LedgerError::Config(_))
            ));
        }
    }

    #[test]
    fn the_seed_is_fixed_at_creation() {
        let dir = tempfile::tempdir().unwrap();
        let (l, report) = open(
            dir.path(),
            LedgerConfig {
                bloom_seed: 42,
                ..LedgerConfig::default()
            },
        );
        assert_eq!((report.bloom_seed, l.bloom_seed()), (42, 42));
        l.add_block(&encode(0, &[Txid([3; 32])])).unwrap();
        drop(l);
        let (l, report) = open(dir.path(), LedgerConfig::default());
        assert_eq!(report.bloom_seed, 42);
        assert_eq!(
            l.find_txid(&Txid([3; 32]), 0..=0).unwrap(),
            Some(TxRecord { round: 0, index: 0 })
        );
    }

    #[test]
    fn readers_race_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let config = LedgerConfig {
            max_txn_life: 8,
            archival: false,
            ..LedgerConfig::default()
        };
        let (l, _) = open(dir.path(), config);
        let id = |round: Round| Txid([(round % 251) as u8; 32]);
        std::thread::scope(|s| {
            s.spawn(|| {
                for round in 0..200 {
                    l.add_block(&encode(round, &[id(round)])).unwrap();
                }
            });
            s.spawn(|| {
                while l.latest() != Some(199) {
                    let Some(latest) = l.latest() else { continue };
                    // A round the reader saw as latest is found, whole, or (if the writer
                    // went on past the window since) not kept; never "absent".
                    match l.lookup_txid(&id(latest), latest) {
                        Ok(found) => assert_eq!(
                            found,
                            Some(TxRecord {
                                round: latest,
                                index: 0
                            })
                        ),
                        Err(LedgerError::NotKept { round, first }) => assert!(round < first),
                        Err(e) => panic!("{e}"),
                    }
                    // An older round is found, or (if the writer pruned it since) not kept;
                    // never "absent".
                    let old = latest.saturating_sub(3);
                    match l.lookup_txid(&id(old), old) {
                        Ok(found) => assert!(found.is_some()),
                        Err(LedgerError::NotKept { round, first }) => assert!(round < first),
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        });
    }
}
