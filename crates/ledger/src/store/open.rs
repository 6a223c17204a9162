//! Opening a ledger ([`Ledger::open`]): the configuration check, the format check and
//! migration (formats 1 and 2 open as format 3), the seed, pruning at open, and loading the
//! window's blooms, rebuilding (and writing back) those missing or corrupt ([`OpenReport`]).

use std::path::Path;
use std::sync::Mutex;

use redb::{ReadableTable, WriteTransaction};
use txgate_bloom::{AnyBloom, LoadError};

use super::blocks::{Codec, stored_block};
use super::config::LedgerConfig;
use super::error::{DbError, LedgerError, db_err};
use super::ledger::{Ledger, WriterState};
use super::rows::{persist_round_rows, prune, read_genesis};
use super::tables::{
    BLOCKS, BLOOMS, DB_FILE, FORMAT_VERSION, FORMAT_VERSION_1, FORMAT_VERSION_2, META, META_FIRST,
    META_FORMAT, META_INDEXED_FROM, META_LATEST, META_SEED, ROUND_TXIDS, TXID_PREFIXES, TXIDS,
};
use super::window::Window;
use crate::Round;

/// What [`Ledger::open`] found and did.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
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
#[non_exhaustive]
pub struct RebuiltBloom {
    /// The round.
    pub round: Round,
    /// Why: no bloom row, or the row did not load.
    pub reason: RebuildReason,
}

/// Why a bloom was rebuilt.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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

impl Ledger {
    /// Opens the ledger in directory `dir`, creating the directory and the database if needed.
    /// With blooms enabled, the blooms of the window's rounds are loaded from the database (not
    /// rebuilt); a missing or corrupt one is rebuilt from its block, written back and listed in
    /// the report. With `archival` false, rounds that left the window are pruned at open too.
    ///
    /// # Errors
    ///
    /// [`LedgerError::FalsePositiveRate`] or [`LedgerError::MaxTxnLife`] for a false-positive rate outside (0, 1) or a MaxTxnLife above
    /// [`MAX_WINDOW_ROUNDS`](super::MAX_WINDOW_ROUNDS); [`LedgerError::Dir`], [`LedgerError::Open`]
    /// (e.g. another process has it open), [`LedgerError::Format`]; while rebuilding a bloom, or
    /// learning the network of a ledger written before the `chain` table existed,
    /// [`LedgerError::Missing`] (no block), [`LedgerError::Decode`], [`LedgerError::Bloom`];
    /// [`LedgerError::Store`].
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
        config.check()?;
        std::fs::create_dir_all(dir).map_err(|source| LedgerError::Dir {
            path: dir.to_owned(),
            source,
        })?;
        let path = dir.join(DB_FILE);
        let open_err = |e: redb::Error| LedgerError::Open {
            path: path.clone(),
            source: DbError::from(e),
        };
        let db = redb::Builder::new()
            .set_cache_size(config.cache_bytes)
            .create(&path)
            .map_err(|e| open_err(e.into()))?;

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
                // A format-1 or format-2 ledger reads as format 3 (its `txids` or
                // `txid_prefixes` rows stay readable); marking it keeps earlier builds, which
                // cannot read `round_txids` rows, from opening it.
                None | Some(FORMAT_VERSION_1 | FORMAT_VERSION_2) => {
                    meta.insert(META_FORMAT, FORMAT_VERSION)
                        .map_err(db_err(None))?;
                }
                Some(FORMAT_VERSION) => {}
                Some(found) => return Err(LedgerError::Format { path, found }),
            }
            let seed = match get(&meta, META_SEED)? {
                Some(seed) => seed,
                None => {
                    meta.insert(META_SEED, config.bloom_seed)
                        .map_err(db_err(None))?;
                    config.bloom_seed
                }
            };
            (seed, get(&meta, META_FIRST)?, get(&meta, META_LATEST)?)
        };
        // Create the other tables, so that read transactions always find them.
        txn.open_table(BLOCKS).map_err(db_err(None))?;
        txn.open_table(BLOOMS).map_err(db_err(None))?;
        txn.open_table(ROUND_TXIDS).map_err(db_err(None))?;
        txn.open_table(TXID_PREFIXES).map_err(db_err(None))?;
        txn.open_table(TXIDS).map_err(db_err(None))?;
        let genesis = read_genesis(&txn, first, &codec)?;

        // The window holds MaxTxnLife + 1 rounds (the `Ledger::window` invariant); the cast is
        // in range, as `check` bounded MaxTxnLife by MAX_WINDOW_ROUNDS.
        let capacity = config.max_txn_life + 1;
        let window = Window::new(capacity as usize);
        let mut ledger = Ledger {
            db,
            path,
            seed,
            codec,
            window,
            writer: Mutex::new(WriterState {
                first,
                genesis,
                unsynced: 0,
            }),
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
            txn.commit().map_err(db_err(None))?;
            for (round, bloom) in (start..=latest).zip(blooms) {
                ledger.window.publish(round, bloom);
            }
        } else {
            txn.commit().map_err(db_err(None))?;
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
        let mut meta = txn.open_table(META).map_err(db_err(None))?;
        let indexed_from = meta
            .get(META_INDEXED_FROM)
            .map_err(db_err(None))?
            .map(|v| v.value());
        // Rounds the marker does not cover may lack an index row (added with the txid index
        // off): with the index on, each is checked and indexed.
        let check_index = self.config.txid_index && indexed_from.is_none_or(|from| from > start);
        let mut blooms = Vec::with_capacity((latest - start + 1) as usize);
        let mut rebuild = Vec::new();
        {
            let table = txn.open_table(BLOOMS).map_err(db_err(None))?;
            let rows = txn.open_table(ROUND_TXIDS).map_err(db_err(None))?;
            let prefixes = txn.open_table(TXID_PREFIXES).map_err(db_err(None))?;
            let format_1 = txn.open_table(TXIDS).map_err(db_err(None))?;
            for round in start..=latest {
                let row = table.get(round).map_err(db_err(Some(round)))?;
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
                    || rows.get(round).map_err(db_err(Some(round)))?.is_some()
                    || prefixes.get(round).map_err(db_err(Some(round)))?.is_some()
                    || format_1.get(round).map_err(db_err(Some(round)))?.is_some();
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
            let block = {
                let blocks = txn.open_table(BLOCKS).map_err(db_err(Some(round)))?;
                self.codec
                    .decode_stored(stored_block(&blocks, round)?.value(), round)?
            };
            // A rebuild writes the index row too, whatever `txid_index` says, so that the
            // marker's promise holds for every round it covers.
            let (bloom, index) = self.build_round_rows(&block, round, true)?;
            persist_round_rows(txn, round, &bloom, index.as_deref())?;
            blooms[i] = Some(bloom);
        }
        // With the index on, every round of the window now has its bloom and index rows; rounds
        // before the window do if they did before and the marker said so.
        if check_index {
            meta.insert(META_INDEXED_FROM, start)
                .map_err(db_err(None))?;
        }
        Ok(blooms)
    }
}
