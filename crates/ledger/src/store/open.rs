//! Opening a ledger ([`Ledger::open`]): the configuration check, the format check and
//! migration (formats 1 and 2 open as format 3), the seed, pruning at open, and loading the
//! window's blooms, rebuilding (and writing back) those missing or corrupt ([`OpenReport`]).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use redb::{Database, ReadableTable, WriteTransaction};
use txgate_bloom::{AnyBloom, Filter, LoadError};

use super::blocks::{Codec, stored_block};
use super::config::LedgerConfig;
use super::error::{At, DbError, LedgerError};
use super::genesis::Genesis;
use super::index::bloom_of_index_row;
use super::ledger::{Ledger, WriterState};
use super::rows::{persist_round_rows, prune, read_genesis};
use super::tables::{
    BLOCKS, BLOOMS, DB_FILE, FORMAT_VERSION, FORMAT_VERSION_1, FORMAT_VERSION_2, META, META_FIRST,
    META_FORMAT, META_INDEXED_FROM, META_LATEST, META_SEED, ROUND_TXIDS, TXID_PREFIXES, TXIDS,
};
use super::window::Window;
use crate::Round;

/// What [`Ledger::open`] found and did, kept by the ledger: [`Ledger::open_report`].
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct OpenReport {
    /// Oldest round whose block is kept (`None`: empty ledger).
    pub first: Option<Round>,
    /// Latest round (`None`: empty ledger).
    pub latest: Option<Round>,
    /// Blooms loaded from the database into the window: from their bloom rows, or built from
    /// their txid index rows ([`OpenReport::blooms_from_index`]).
    pub blooms_loaded: u64,
    /// Of [`OpenReport::blooms_loaded`], those built from the round's txid index row (a round
    /// added with the index on stores no bloom row: its txids are in the index row).
    pub blooms_from_index: u64,
    /// Blooms of window rounds that could be neither loaded nor built from an index row, rebuilt
    /// from their blocks, in round order. Each rebuild writes the round's index row (a bloom row
    /// left from before is removed: the index row stands for it).
    pub rebuilt: Vec<RebuiltBloom>,
    /// The bloom hash seed in use.
    pub bloom_seed: u64,
}

/// A bloom [`Ledger::open`] rebuilt from its block.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RebuiltBloom {
    /// The round.
    pub round: Round,
    /// Why: no bloom row (nor an index row to build it from), or the row did not load.
    pub reason: RebuildReason,
}

/// Why a bloom was rebuilt.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RebuildReason {
    /// The round had neither a bloom row nor a `round_txids` index row (e.g. its blocks were
    /// added with blooms disabled).
    Missing,
    /// The round had no bloom row, and its txid index row is malformed (its length, in bytes,
    /// is not a whole number of 32-byte txids: a damaged file).
    CorruptIndex {
        /// The row's length in bytes.
        len: usize,
    },
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

/// The `meta` rows [`Ledger::open`] reads: the seed in use, the first and latest round.
struct Meta {
    seed: u64,
    first: Option<Round>,
    latest: Option<Round>,
}

impl Ledger {
    /// Opens the ledger in directory `dir`, creating the directory and the database if needed
    /// (as redb's `Database::create` does for its file). With blooms enabled, the blooms of the
    /// window's rounds are loaded from the database (not rebuilt from blocks). A round added
    /// with the txid index on has no bloom row: its bloom is built from its index row's txids
    /// (about 32 KB read and 1,000 insertions for a 1,000-txn round), in the configured layout
    /// and false-positive rate; a bloom row (rounds added without the index, or by an earlier
    /// build) loads as stored. A bloom that can be neither loaded nor built (a damaged bloom
    /// row, one of another seed, no row at all, a malformed index row) is rebuilt from its
    /// block, its index row written (a bad bloom row removed), and listed in
    /// [`Ledger::open_report`]. With
    /// `archival` false, rounds that left the window are pruned at open too.
    ///
    /// # Errors
    ///
    /// [`LedgerError::FalsePositiveRate`] or [`LedgerError::MaxTxnLife`] for a false-positive rate outside (0, 1) or a MaxTxnLife above
    /// [`MAX_WINDOW_ROUNDS`](super::MAX_WINDOW_ROUNDS); [`LedgerError::Dir`], [`LedgerError::Open`]
    /// (e.g. another process has it open), [`LedgerError::Format`]; while rebuilding a bloom, or
    /// learning the network of a ledger written before the `chain` table existed,
    /// [`LedgerError::Missing`] (no block), [`LedgerError::Decode`], [`LedgerError::Bloom`];
    /// [`LedgerError::Store`].
    pub fn open(dir: impl AsRef<Path>, config: LedgerConfig) -> Result<Ledger, LedgerError> {
        Self::open_with_codec(dir.as_ref(), config, Codec::ALGORAND)
    }

    /// What [`Ledger::open`] found and did: the rounds it found, the blooms it loaded and those
    /// it rebuilt, the seed in use. Fixed at open (the latest round now is [`Ledger::latest`]).
    pub fn open_report(&self) -> &OpenReport {
        &self.open_report
    }

    pub(crate) fn open_with_codec(
        dir: &Path,
        config: LedgerConfig,
        codec: Codec,
    ) -> Result<Ledger, LedgerError> {
        config.check()?;
        let (db, path) = create_database(dir, &config)?;
        // One write transaction creates the tables, checks the format, fixes the seed, prunes
        // (non-archival) and rebuilds missing blooms; the loaded blooms come from it too.
        let txn = db.begin_write().map_err(open_err(&path))?;
        let meta = check_meta(&txn, &path, config.bloom_seed)?;
        create_tables(&txn)?;
        let genesis = read_genesis(&txn, meta.first, &codec)?;
        let mut ledger = Ledger::assemble(db, path, config, codec, &meta, genesis);
        let loaded = match (meta.first, meta.latest) {
            (Some(first), Some(latest)) => Some(ledger.prune_and_load(&txn, first, latest)?),
            _ => None,
        };
        txn.commit().at(None)?;
        // Publish after the commit: readers then find every round they can see stored.
        if let Some((start, blooms)) = loaded {
            for (round, bloom) in (start..).zip(blooms) {
                ledger.window.publish(round, bloom);
            }
        }
        Ok(ledger)
    }

    /// The ledger over an opened database, its window empty, its report the rows `meta` holds.
    fn assemble(
        db: redb::Database,
        path: PathBuf,
        config: LedgerConfig,
        codec: Codec,
        meta: &Meta,
        genesis: Option<Genesis>,
    ) -> Ledger {
        // The window holds MaxTxnLife + 1 rounds (the `Ledger::window` invariant); the cast is
        // in range, as `check` bounded MaxTxnLife by MAX_WINDOW_ROUNDS.
        let window = Window::new((config.max_txn_life + 1) as usize);
        Ledger {
            db,
            path,
            seed: meta.seed,
            codec,
            window,
            writer: Mutex::new(WriterState {
                first: meta.first,
                genesis,
                unsynced: 0,
            }),
            config,
            open_report: OpenReport {
                first: meta.first,
                latest: meta.latest,
                bloom_seed: meta.seed,
                ..OpenReport::default()
            },
        }
    }

    /// Prunes the rounds before the window (non-archival), then loads (or rebuilds) the blooms
    /// of the window's kept rounds; returns the first of them and the blooms, in round order.
    fn prune_and_load(
        &mut self,
        txn: &WriteTransaction,
        mut first: Round,
        latest: Round,
    ) -> Result<(Round, Vec<Option<AnyBloom>>), LedgerError> {
        let window_start = latest.saturating_sub(self.config.max_txn_life);
        if !self.config.archival && first < window_start {
            prune(txn, first, window_start)?;
            first = window_start;
            self.open_report.first = Some(first);
            self.writer
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .first = Some(first);
        }
        let start = first.max(window_start);
        let blooms = self.load_window(txn, start, latest)?;
        Ok((start, blooms))
    }

    /// Loads (or rebuilds) the blooms of rounds `start..=latest`, in order (all `None` with
    /// blooms disabled), listing in the report those it rebuilt.
    fn load_window(
        &mut self,
        txn: &WriteTransaction,
        start: Round,
        latest: Round,
    ) -> Result<Vec<Option<AnyBloom>>, LedgerError> {
        if !self.config.blooms {
            return Ok((start..=latest).map(|_| None).collect());
        }
        let indexed_from = txn
            .open_table(META)
            .at(None)?
            .get(META_INDEXED_FROM)
            .at(None)?
            .map(|v| v.value());
        // Rounds the marker does not cover may lack an index row (added with the txid index
        // off): with the index on, each is checked and indexed.
        let check_index = self.config.txid_index && indexed_from.is_none_or(|from| from > start);
        let needs_index = |round| check_index && indexed_from.is_none_or(|from| from > round);
        let mut blooms = Vec::with_capacity((latest - start + 1) as usize);
        {
            let stored = StoredRows::open(txn)?;
            for round in start..=latest {
                let mut loaded = stored.bloom(round, self.seed)?;
                if matches!(loaded, Err(RebuildReason::Missing)) {
                    loaded = self.bloom_of_index(&stored, round)?;
                } else if loaded.is_ok() && needs_index(round) && !stored.has_index(round)? {
                    loaded = Err(RebuildReason::MissingIndex);
                }
                blooms.push(loaded.map_err(|reason| RebuiltBloom { round, reason }));
            }
        }
        let blooms = blooms
            .into_iter()
            .zip(start..)
            .map(|(loaded, round)| self.loaded_or_rebuilt(txn, round, loaded))
            .collect::<Result<_, _>>()?;
        // With the index on, every round of the window now has its index row (its bloom built
        // from it, or loaded from a bloom row an earlier build wrote); rounds before the window
        // do if they did before and the marker said so.
        if check_index {
            txn.open_table(META)
                .at(None)?
                .insert(META_INDEXED_FROM, start)
                .at(None)?;
        }
        Ok(blooms)
    }

    /// The bloom of a round without a bloom row, built from its `round_txids` row (counted in
    /// the report), or why it must be rebuilt from its block: no such row
    /// ([`RebuildReason::Missing`]; format 1 and 2 index rows hold too little) or a malformed
    /// one.
    fn bloom_of_index(
        &mut self,
        stored: &StoredRows<'_>,
        round: Round,
    ) -> Result<Result<AnyBloom, RebuildReason>, LedgerError> {
        let Some(row) = stored.index[0].get(round).at(round)? else {
            return Ok(Err(RebuildReason::Missing));
        };
        let row = row.value();
        Ok(
            match bloom_of_index_row(&self.config, self.seed, round, row)? {
                Some(bloom) => {
                    self.open_report.blooms_from_index += 1;
                    Ok(bloom)
                }
                None => Err(RebuildReason::CorruptIndex { len: row.len() }),
            },
        )
    }

    /// A round's loaded bloom, counted in the report; or, for one that did not load, the bloom
    /// rebuilt from its block, its index row written back (and any bloom row removed), listed
    /// in the report.
    fn loaded_or_rebuilt(
        &mut self,
        txn: &WriteTransaction,
        round: Round,
        loaded: Result<AnyBloom, RebuiltBloom>,
    ) -> Result<Option<AnyBloom>, LedgerError> {
        let rebuilt = match loaded {
            Ok(bloom) => {
                self.open_report.blooms_loaded += 1;
                return Ok(Some(bloom));
            }
            Err(rebuilt) => rebuilt,
        };
        let block = {
            let blocks = txn.open_table(BLOCKS).at(round)?;
            self.codec
                .decode_stored(stored_block(&blocks, round)?.value(), round)?
        };
        // A rebuild writes the index row too, whatever `txid_index` says, so that the marker's
        // promise holds for every round it covers.
        let (bloom, index) = self.build_round_rows(&block, round, true)?;
        persist_round_rows(txn, round, &bloom, index.as_deref())?;
        // The index row now stands for the bloom: a bloom row left from before (damaged, of
        // another seed, or without its index row) goes.
        txn.open_table(BLOOMS).at(round)?.remove(round).at(round)?;
        self.open_report.rebuilt.push(rebuilt);
        Ok(Some(bloom))
    }
}

/// The tables [`Ledger::load_window`] reads for each round of the window: its bloom and its
/// index row in any format (the bloom of a round without a bloom row is built from its
/// `round_txids` row). Dropped before a rebuild writes (redb opens a table once per write
/// transaction at a time).
struct StoredRows<'t> {
    blooms: redb::Table<'t, u64, &'static [u8]>,
    /// `round_txids`, `txid_prefixes` (format 2), `txids` (format 1).
    index: [redb::Table<'t, u64, &'static [u8]>; 3],
}

impl<'t> StoredRows<'t> {
    fn open(txn: &'t WriteTransaction) -> Result<Self, LedgerError> {
        Ok(Self {
            blooms: txn.open_table(BLOOMS).at(None)?,
            index: [
                txn.open_table(ROUND_TXIDS).at(None)?,
                txn.open_table(TXID_PREFIXES).at(None)?,
                txn.open_table(TXIDS).at(None)?,
            ],
        })
    }

    /// `round`'s stored bloom if it loads and carries `seed`, else why it must be rebuilt.
    fn bloom(
        &self,
        round: Round,
        seed: u64,
    ) -> Result<Result<AnyBloom, RebuildReason>, LedgerError> {
        let Some(bytes) = self.blooms.get(round).at(round)? else {
            return Ok(Err(RebuildReason::Missing));
        };
        Ok(AnyBloom::from_bytes(bytes.value())
            .map_err(RebuildReason::Corrupt)
            .and_then(|bloom| match bloom.seed() {
                found if found == seed => Ok(bloom),
                found => Err(RebuildReason::WrongSeed { found }),
            }))
    }

    /// Whether `round` has an index row in any format.
    fn has_index(&self, round: Round) -> Result<bool, LedgerError> {
        for table in &self.index {
            if table.get(round).at(round)?.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// [`LedgerError::Open`] of the database file `path`, for the errors of opening it and reading
/// its `meta` rows.
fn open_err<E: Into<redb::Error>>(path: &Path) -> impl FnOnce(E) -> LedgerError {
    move |e| LedgerError::Open {
        path: path.to_owned(),
        source: DbError::from(e.into()),
    }
}

/// Creates the ledger directory `dir` and opens (creating) its database with the configured
/// cache; returns it and its file.
fn create_database(dir: &Path, config: &LedgerConfig) -> Result<(Database, PathBuf), LedgerError> {
    std::fs::create_dir_all(dir).map_err(|source| LedgerError::Dir {
        path: dir.to_owned(),
        source,
    })?;
    let path = dir.join(DB_FILE);
    let db = redb::Builder::new()
        .set_cache_size(config.cache_bytes)
        .create(&path)
        .map_err(open_err(&path))?;
    Ok((db, path))
}

/// Checks the format (marking a format-1 or format-2 ledger as format 3), fixes the seed of a
/// new ledger to `seed`, and reads the seed in use and the first and latest rounds.
fn check_meta(txn: &WriteTransaction, path: &Path, seed: u64) -> Result<Meta, LedgerError> {
    let mut meta = txn.open_table(META).map_err(open_err(path))?;
    let get = |meta: &redb::Table<'_, &str, u64>, key| {
        meta.get(key)
            .map(|v| v.map(|v| v.value()))
            .map_err(open_err(path))
    };
    match get(&meta, META_FORMAT)? {
        // A format-1 or format-2 ledger reads as format 3 (its `txids` or `txid_prefixes` rows
        // stay readable); marking it keeps earlier builds, which cannot read `round_txids`
        // rows, from opening it.
        None | Some(FORMAT_VERSION_1 | FORMAT_VERSION_2) => {
            meta.insert(META_FORMAT, FORMAT_VERSION).at(None)?;
        }
        Some(FORMAT_VERSION) => {}
        Some(found) => {
            return Err(LedgerError::Format {
                path: path.to_owned(),
                found,
            });
        }
    }
    let seed = match get(&meta, META_SEED)? {
        Some(stored) => stored,
        None => {
            meta.insert(META_SEED, seed).at(None)?;
            seed
        }
    };
    Ok(Meta {
        seed,
        first: get(&meta, META_FIRST)?,
        latest: get(&meta, META_LATEST)?,
    })
}

/// Creates the tables other than `meta`, so that read transactions always find them.
fn create_tables(txn: &WriteTransaction) -> Result<(), LedgerError> {
    txn.open_table(BLOCKS).at(None)?;
    txn.open_table(BLOOMS).at(None)?;
    txn.open_table(ROUND_TXIDS).at(None)?;
    txn.open_table(TXID_PREFIXES).at(None)?;
    txn.open_table(TXIDS).at(None)?;
    Ok(())
}
