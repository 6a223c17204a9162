//! [`Ledger`]: its state, the write path ([`Ledger::add_decoded_block`]) and the lookups
//! ([`Ledger::lookup_txid`], [`Ledger::find_txid`], [`Ledger::block`], [`Ledger::round_bloom`]).
//! Opening is in `open.rs`.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use redb::{Database, Durability, ReadTransaction, WriteTransaction};
use txgate_algorand::codec::{Block, Expected};
use txgate_bloom::{AnyBloom, Bytes, Filter, Hashed};

use super::blocks::{Codec, stored_block};
use super::config::LedgerConfig;
use super::error::{At, LedgerError};
use super::genesis::Genesis;
use super::index::{
    PrefixIndex, bloom_of_index_row, build_round_bloom, build_round_index, search_format_1_row,
    search_prefixes, search_txids,
};
use super::open::OpenReport;
use super::rows::{check_network, persist_round_rows, prune, write_genesis};
use super::tables::{
    BLOCKS, BLOOMS, META, META_FIRST, META_INDEXED_FROM, META_LATEST, ROUND_TXIDS, TXID_PREFIXES,
    TXIDS,
};
use super::verified::VerifiedBlock;
use super::window::{Probe, Window};
use crate::{Round, Txid};

/// Where a txid was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TxRecord {
    /// The round whose block holds the transaction.
    pub round: Round,
    /// Its position in the block's payset (0-based; the first one when a payset repeats a txid).
    pub index: u32,
}

/// A persistent ledger of Algorand blocks with per-round txid blooms. `Send + Sync`: share it
/// by reference or `Arc`; one `add_block` runs at a time (a writer lock), lookups never wait
/// for it.
///
/// The fields are set by [`Ledger::open`] (`open.rs`), which establishes their invariants.
pub struct Ledger {
    pub(super) db: Database,
    /// The database file: `DB_FILE` in the ledger directory.
    pub(super) path: PathBuf,
    /// Checked at open: a false-positive rate in (0, 1), `max_txn_life <= MAX_WINDOW_ROUNDS`.
    pub(super) config: LedgerConfig,
    /// The persisted bloom seed (not necessarily `config.bloom_seed`): every bloom of the window
    /// was built or loaded with it (open rebuilds a stored bloom with another), so
    /// [`Ledger::find_txid`] hashes a txid once for all rounds.
    pub(super) seed: u64,
    pub(super) codec: Codec,
    /// Blooms of the last MaxTxnLife + 1 rounds: its capacity is `config.max_txn_life + 1`, so
    /// every round `find_txid` searches (latest - MaxTxnLife ..= latest) is in it. A round is
    /// published only after its write transaction commits, so a reader that finds it in the
    /// window finds its rows in the database. `None` values when blooms are disabled (the
    /// window then only publishes the latest round) or for rounds added while they were.
    pub(super) window: Window<Option<AnyBloom>>,
    /// Serializes writers; holds the oldest kept round and the network (`None`: empty ledger).
    pub(super) writer: Mutex<WriterState>,
    /// What open found and did ([`Ledger::open_report`]).
    pub(super) open_report: OpenReport,
}

/// The writer's state, assigned only after a write transaction commits (so a writer that
/// panics leaves it consistent, and a poisoned lock is still usable).
pub(super) struct WriterState {
    /// The oldest kept round: `META_FIRST` in the database.
    pub(super) first: Option<Round>,
    /// The network of the ledger's blocks (`None`: empty ledger); as in the `chain` table.
    pub(super) genesis: Option<Genesis>,
    /// Rounds committed since the last durable commit (`LedgerConfig::sync_every`).
    // Invariant: below `config.sync_every`.
    pub(super) unsynced: u64,
}

/// A round's rows as [`Ledger::write_round`] writes them.
struct RoundRows<'a> {
    round: Round,
    /// The block's bytes.
    raw: &'a [u8],
    /// Its bloom and, when indexed, its txid index row (`None`: blooms disabled).
    indexed: Option<&'a (AnyBloom, Option<Vec<u8>>)>,
    /// The network, when this round sets or completes it.
    genesis: Option<&'a Genesis>,
}

/// The network to write with `block`: the block's when the ledger has none, the ledger's with
/// the block's hash when the ledger's is all zeros (not set) and the block's is not, else `None`
/// (nothing new).
fn learnt_genesis(ledger: Option<&Genesis>, block: &Block) -> Option<Genesis> {
    let genesis = Genesis::of(block);
    match ledger {
        Some(g) if g.hash != [0; 32] || genesis.hash == [0; 32] => None,
        Some(g) => Some(Genesis {
            id: g.id.clone(),
            hash: genesis.hash,
        }),
        None => Some(genesis),
    }
}

/// Whether `bloom` may hold `txid` (one probe). `hashed` is the (seed, hash) of the last bloom
/// that hashed the txid: the txid is hashed again only for a bloom of another seed.
fn may_hold(bloom: &AnyBloom, txid: &Txid, hashed: &mut Option<(u64, u64)>) -> bool {
    let hash = match *hashed {
        Some((seed, hash)) if seed == bloom.seed() => hash,
        _ => {
            let hash = bloom.hash(Bytes(txid.as_bytes()));
            *hashed = Some((bloom.seed(), hash));
            hash
        }
    };
    bloom.contains(Hashed(hash))
}

/// Writes `round` as the latest in `meta`, and as the first (and the indexed-from round when
/// it is `indexed`) when it is the ledger's `first_round`; a round not `indexed` removes the
/// indexed-from marker, whose promise it breaks.
fn write_meta(
    txn: &WriteTransaction,
    round: Round,
    first_round: bool,
    indexed: bool,
) -> Result<(), LedgerError> {
    let mut meta = txn.open_table(META).at(round)?;
    meta.insert(META_LATEST, round).at(round)?;
    if first_round {
        meta.insert(META_FIRST, round).at(round)?;
        if indexed {
            meta.insert(META_INDEXED_FROM, round).at(round)?;
        }
    }
    if !indexed {
        meta.remove(META_INDEXED_FROM).at(round)?;
    }
    Ok(())
}

impl Drop for Ledger {
    /// Syncs the rounds not yet durable ([`Ledger::sync`]); an error is ignored (those rounds
    /// may then be lost, as in a crash).
    fn drop(&mut self) {
        let _ = self.sync();
    }
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
    /// any. [`Ledger::add_decoded_block`] runs this check, also on a block of a round the ledger
    /// holds (before refusing it as [`LedgerError::AlreadyHeld`]).
    ///
    /// # Errors
    ///
    /// [`LedgerError::OtherNetwork`] naming both networks.
    pub fn check_network(&self, block: &Block) -> Result<(), LedgerError> {
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        check_network(writer.genesis.as_ref(), block)
    }

    /// Decodes `raw` (msgpack `{block, cert}` or a bare block, as algod serves and stores
    /// blocks), verifies it and adds it as the next round; returns the round.
    ///
    /// # Errors
    ///
    /// [`LedgerError::Decode`] if `raw` is not a block; otherwise as
    /// [`Ledger::add_decoded_block`]. Nothing is written on error.
    pub fn add_block(&self, raw: &[u8]) -> Result<Round, LedgerError> {
        // Decoded and verified in one walk (the payset is found while decoding): what
        // `add_decoded_block` of the decoded block does, the same errors.
        let block =
            (self.codec.decode_verify)(raw, &Expected::default(), self.config.parallel_decode)?;
        self.add_checked(&block, raw)
    }

    /// Adds an already decoded block as the next round: `block.round` must be the latest
    /// round plus one, or any round for an empty ledger (a ledger may start at any round, e.g. from
    /// a catchpoint; the first round is kept in `meta`). `raw` is stored as the block's bytes and
    /// must be the encoding `block` was decoded from: the txid index holds `block`'s txids, while
    /// the blooms-disabled lookups and bloom rebuilds decode `raw` again (verification ties
    /// `raw`'s payset to `block`'s header commitment).
    ///
    /// The block must be of the ledger's network (see [`Genesis`]); the first block names it.
    /// It is verified first ([`Block::verify`] with no round or network expected beyond the
    /// ledger's own checks): its payset must match every commitment its protocol defines, and a
    /// header without any commitment over a non-empty payset is refused. To add a block
    /// verified upstream without a second check, see [`Ledger::add_verified_block`].
    ///
    /// One write transaction stores the block bytes and the round's txid index row (with the
    /// index disabled, its bloom row instead; the bloom is built from the index row when the
    /// ledger opens) and, non-archival, deletes the round that leaves the window; after the
    /// commit the round's bloom is published to readers. One writer at a time: concurrent calls wait for each
    /// other; lookups do not wait.
    ///
    /// # Errors
    ///
    /// [`LedgerError::Verify`] (a commitment, the protocol's rule, or `raw` not the block's
    /// bytes), [`LedgerError::AlreadyHeld`] (a round at or before the latest, of the ledger's
    /// network), [`LedgerError::OutOfOrder`], [`LedgerError::OtherNetwork`],
    /// [`LedgerError::TooManyTxns`], [`LedgerError::Bloom`], [`LedgerError::Store`]. Nothing is
    /// written or published on error.
    pub fn add_decoded_block(&self, block: &Block, raw: &[u8]) -> Result<Round, LedgerError> {
        (self.codec.verify)(block, raw, &Expected::default()).map_err(|source| {
            LedgerError::Verify {
                round: block.round,
                source,
            }
        })?;
        self.add_checked(block, raw)
    }

    /// Adds a block that was verified (or declared verified) by the caller, as
    /// [`Ledger::add_decoded_block`] does but without verifying its payset again; the round
    /// order and the network are still checked.
    ///
    /// # Errors
    ///
    /// As [`Ledger::add_decoded_block`], but for [`LedgerError::Verify`].
    pub fn add_verified_block(&self, verified: &VerifiedBlock<'_>) -> Result<Round, LedgerError> {
        self.add_checked(verified.block(), verified.raw())
    }

    /// Makes every round added so far durable: with [`LedgerConfig::sync_every`] above 1, the
    /// rounds committed since the last durable commit are synced to disk (one empty write
    /// transaction, committed durably); otherwise nothing to do. Dropping the ledger does this
    /// too (ignoring errors).
    ///
    /// # Errors
    ///
    /// [`LedgerError::Store`].
    pub fn sync(&self) -> Result<(), LedgerError> {
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if writer.unsynced > 0 {
            let txn = self.db.begin_write().at(None)?;
            txn.commit().at(None)?;
            writer.unsynced = 0;
        }
        Ok(())
    }

    /// The write path of a verified block.
    fn add_checked(&self, block: &Block, raw: &[u8]) -> Result<Round, LedgerError> {
        // A panicking writer cannot leave the state half-updated: `first` is assigned only after
        // the commit, so a poisoned lock is still consistent.
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let round = block.round;
        self.check_next(writer.genesis.as_ref(), block)?;
        let new_genesis = learnt_genesis(writer.genesis.as_ref(), block);
        let indexed = if self.config.blooms {
            Some(self.build_round_rows(block, round, self.config.txid_index)?)
        } else {
            None
        };
        // Every `sync_every`th round since the last durable commit waits for the disk; the
        // others commit without a sync (atomic and visible, not yet durable).
        let durable = writer.unsynced + 1 >= self.config.sync_every;
        let mut txn = self.db.begin_write().at(round)?;
        if !durable {
            txn.set_durability(Durability::None);
        }
        let rows = RoundRows {
            round,
            raw,
            indexed: indexed.as_ref(),
            genesis: new_genesis.as_ref(),
        };
        let new_first = self.write_round(&txn, writer.first, &rows)?;
        txn.commit().at(round)?;
        writer.unsynced = if durable { 0 } else { writer.unsynced + 1 };
        writer.first = Some(new_first);
        if new_genesis.is_some() {
            writer.genesis = new_genesis;
        }
        self.window.publish(round, indexed.map(|(bloom, _)| bloom));
        Ok(round)
    }

    /// Checks that `block` may be the next round: of the ledger's network (`genesis`), and its
    /// round the latest + 1 (any round for an empty ledger, but `u64::MAX`, which the window
    /// cannot encode as latest + 1 and no chain reaches).
    fn check_next(&self, genesis: Option<&Genesis>, block: &Block) -> Result<(), LedgerError> {
        let round = block.round;
        let expected = match self.window.latest() {
            Some(latest) if round <= latest => {
                check_network(genesis, block)?;
                return Err(LedgerError::AlreadyHeld { round, latest });
            }
            Some(latest) => latest + 1,
            None => round,
        };
        if round != expected {
            return Err(LedgerError::OutOfOrder {
                expected,
                got: round,
            });
        }
        if round == u64::MAX {
            return Err(LedgerError::OutOfOrder {
                expected: u64::MAX - 1,
                got: round,
            });
        }
        check_network(genesis, block)
    }

    /// Writes a round's rows in `txn`: its block, the `meta` rows, its index row (or bloom row), the
    /// network when learnt, and (non-archival) the prune of the rounds that left the window.
    /// `first` is the oldest kept round before (`None`: empty ledger); returns the one after.
    fn write_round(
        &self,
        txn: &WriteTransaction,
        first: Option<Round>,
        rows: &RoundRows<'_>,
    ) -> Result<Round, LedgerError> {
        let round = rows.round;
        txn.open_table(BLOCKS)
            .at(round)?
            .insert(round, rows.raw)
            .at(round)?;
        let indexed_round = self.config.blooms && self.config.txid_index;
        write_meta(txn, round, first.is_none(), indexed_round)?;
        if let Some((bloom, index)) = rows.indexed {
            persist_round_rows(txn, round, bloom, index.as_deref())?;
        }
        if let Some(g) = rows.genesis {
            write_genesis(txn, round, g)?;
        }
        let first = first.unwrap_or(round);
        let window_start = round.saturating_sub(self.config.max_txn_life);
        if !self.config.archival && first < window_start {
            prune(txn, first, window_start)?;
            return Ok(window_start);
        }
        Ok(first)
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
                Some(bloom) if !bloom.contains(Bytes(txid.as_bytes())) => Ok(None),
                Some(_) => self.confirm_in_round(&self.read()?, txid, round, true),
                None => self.confirm_in_round(&self.read()?, txid, round, false),
            },
            Probe::Outside => self.confirm_in_round(&self.read()?, txid, round, self.config.blooms),
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
                    Some(bloom) if !may_hold(bloom, txid, &mut hashed) => continue,
                    Some(_) => true,
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
            match self.confirm_in_round(txn, txid, round, blooms) {
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
        let blocks = txn.open_table(BLOCKS).at(round)?;
        Ok(stored_block(&blocks, round)?.value().to_vec())
    }

    /// The bloom filter of `round`'s txids as the ledger keeps it, for measuring its
    /// false-positive rate or shipping it to a peer: for a round of the window, the bloom its
    /// lookups probe; for an older round, its bloom row (checksum verified) or, for a round added
    /// with the txid index on (which stores no bloom row), the bloom built from its index row in
    /// the configured layout and false-positive rate (from its block if that row is damaged).
    /// `Ok(None)` when the round has neither row: it was added while blooms were disabled. (A
    /// ledger reopened with blooms disabled still answers with the rows stored before.)
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use txgate_algorand::synth::{SynthTxn, encode_block};
    /// use txgate_bloom::{Bytes, Filter};
    /// use txgate_ledger::store::{Ledger, LedgerConfig};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let ledger = Ledger::open(dir.path(), LedgerConfig::default())?;
    /// let txn = SynthTxn::payment([1; 32], 1, 1000);
    /// let txid = txn.txid("net-v1", &[7; 32]);
    /// ledger.add_block(&encode_block(0, "net-v1", &[7; 32], 0, &[txn]))?;
    /// let bloom = ledger.round_bloom(0)?.expect("blooms are on by default");
    /// assert!(bloom.contains(Bytes(txid.as_bytes())));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`LedgerError::BeyondLatest`], [`LedgerError::NotKept`], [`LedgerError::Store`];
    /// [`LedgerError::StoredBloom`] when the stored bytes do not load (a damaged row: opening
    /// with blooms enabled checks and rebuilds only the window's rounds, so an older archival
    /// round, or any round of a ledger opened with blooms disabled, can be damaged here);
    /// building from a damaged index row's block: [`LedgerError::Missing`],
    /// [`LedgerError::Decode`], [`LedgerError::Bloom`].
    pub fn round_bloom(&self, round: Round) -> Result<Option<AnyBloom>, LedgerError> {
        if let Probe::Hit(entry) = self.window.reader().get(round)
            && let Some(bloom) = &*entry
        {
            return Ok(Some(bloom.clone()));
        }
        let txn = self.read()?;
        self.check_kept(&txn, round)?;
        let blooms = txn.open_table(BLOOMS).at(round)?;
        if let Some(row) = blooms.get(round).at(round)? {
            return AnyBloom::from_bytes(row.value())
                .map(Some)
                .map_err(|source| LedgerError::StoredBloom { round, source });
        }
        let index = txn.open_table(ROUND_TXIDS).at(round)?;
        let Some(row) = index.get(round).at(round)? else {
            return Ok(None);
        };
        if let Some(bloom) = bloom_of_index_row(&self.config, self.seed, round, row.value())? {
            return Ok(Some(bloom));
        }
        let blocks = txn.open_table(BLOCKS).at(round)?;
        let block = self
            .codec
            .decode_stored(stored_block(&blocks, round)?.value(), round)?;
        build_round_bloom(&self.config, self.seed, &block, round).map(Some)
    }

    /// The bloom of `block` (tagged as `round`) in the configured layout and the ledger's seed,
    /// and its txid index row when `with_index`: the rows [`persist_round_rows`] writes for the
    /// round.
    pub(super) fn build_round_rows(
        &self,
        block: &Block,
        round: Round,
        with_index: bool,
    ) -> Result<(AnyBloom, Option<Vec<u8>>), LedgerError> {
        let bloom = build_round_bloom(&self.config, self.seed, block, round)?;
        Ok((bloom, with_index.then(|| build_round_index(block))))
    }

    fn read(&self) -> Result<ReadTransaction, LedgerError> {
        self.db.begin_read().at(None)
    }

    /// Checks in `txn`'s snapshot that `round` is kept; returns the indexed-from round.
    fn check_kept(
        &self,
        txn: &ReadTransaction,
        round: Round,
    ) -> Result<Option<Round>, LedgerError> {
        let meta = txn.open_table(META).at(round)?;
        let get = |key| meta.get(key).map(|v| v.map(|v| v.value())).at(round);
        let latest = get(META_LATEST)?;
        match (get(META_FIRST)?, latest) {
            (Some(first), Some(latest)) if (first..=latest).contains(&round) => {
                get(META_INDEXED_FROM)
            }
            (Some(first), Some(_)) if round < first => Err(LedgerError::NotKept { round, first }),
            _ => Err(LedgerError::BeyondLatest { round, latest }),
        }
    }

    /// Searches `round`'s txid index row for `txid`: its position, or `Some(None)` when it is not
    /// there; `None` when the row is malformed (a damaged file: the block answers instead).
    /// Format 3's row, else format 2's compact row, else format 1's.
    ///
    /// # Errors
    ///
    /// [`LedgerError::Missing`] when the round has no index row in any format;
    /// [`LedgerError::Store`]; format 2: as [`search_prefixes`].
    fn search_index(
        &self,
        txn: &ReadTransaction,
        txid: &Txid,
        round: Round,
    ) -> Result<Option<Option<u32>>, LedgerError> {
        let rows = txn.open_table(ROUND_TXIDS).at(round)?;
        if let Some(row) = rows.get(round).at(round)? {
            return Ok(search_txids(row.value(), txid));
        }
        let prefixes = txn.open_table(TXID_PREFIXES).at(round)?;
        if let Some(row) = prefixes.get(round).at(round)? {
            return match PrefixIndex::parse(row.value()) {
                Some(index) => search_prefixes(&self.codec, txn, &index, txid, round).map(Some),
                None => Ok(None),
            };
        }
        let table = txn.open_table(TXIDS).at(round)?;
        let row = table.get(round).at(round)?.ok_or(LedgerError::Missing {
            what: "txid index",
            round,
        })?;
        Ok(Some(search_format_1_row(row.value(), txid)))
    }

    /// Confirms in the database whether `txid` is in `round` (a bloom said "maybe", or there is
    /// none): from the round's txid index when `indexed` (and the round is indexed), else by
    /// decoding the block and comparing its txids. Exact either way.
    fn confirm_in_round(
        &self,
        txn: &ReadTransaction,
        txid: &Txid,
        round: Round,
        indexed: bool,
    ) -> Result<Option<TxRecord>, LedgerError> {
        let indexed_from = self.check_kept(txn, round)?;
        if indexed
            && indexed_from.is_some_and(|from| from <= round)
            && let Some(found) = self.search_index(txn, txid, round)?
        {
            return Ok(found.map(|index| TxRecord { round, index }));
        }
        let blocks = txn.open_table(BLOCKS).at(round)?;
        let block = self
            .codec
            .decode_stored(stored_block(&blocks, round)?.value(), round)?;
        Ok(block
            .txns
            .iter()
            .position(|t| t.txid == *txid)
            .and_then(|i| u32::try_from(i).ok())
            .map(|index| TxRecord { round, index }))
    }
}
