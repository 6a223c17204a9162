//! The database: its file, format version, tables and their keys (the layout is in the
//! `store` module docs).
//!
//! The tables are private to the store: the ledger's contract is its API (and [`DB_FILE`],
//! [`FORMAT_VERSION`]), not its rows.

use redb::TableDefinition;

/// The file of the database inside the ledger directory.
pub const DB_FILE: &str = "ledger.redb";

/// On-disk format version, in the `meta` table under `format`. Format 1 and 2 ledgers are
/// opened and marked format 3 (see the module docs).
pub const FORMAT_VERSION: u64 = 3;

/// The first on-disk format, which this build still opens (its `txids` rows stay readable).
pub const FORMAT_VERSION_1: u64 = 1;

/// The second on-disk format, which this build still opens (its `txid_prefixes` rows stay
/// readable).
pub const FORMAT_VERSION_2: u64 = 2;

/// `meta` key: the format version.
pub(super) const META_FORMAT: &str = "format";
/// `meta` key: the bloom hash seed, fixed when the ledger is created.
pub(super) const META_SEED: &str = "bloom_seed";
/// `meta` key: the oldest round whose block is kept.
pub(super) const META_FIRST: &str = "first_round";
/// `meta` key: the latest round (absent while the ledger is empty).
pub(super) const META_LATEST: &str = "latest_round";
/// `meta` key: every kept round from this one on has its txid index row, from which its bloom
/// is built (absent when blocks were added with blooms or the txid index disabled since the last
/// open with both enabled).
pub(super) const META_INDEXED_FROM: &str = "indexed_from";

/// `meta` table: format version, seed, first and latest round.
pub(super) const META: TableDefinition<'static, &str, u64> = TableDefinition::new("meta");
/// `blocks` table: round -> raw block bytes.
pub(super) const BLOCKS: TableDefinition<'static, u64, &[u8]> = TableDefinition::new("blocks");
/// `blooms` table: round -> serialized bloom ([`Filter::to_bytes`](txgate_bloom::Filter::to_bytes)
/// of either layout), for rounds without a `round_txids` row (added without the txid index, or by
/// an earlier build, whose rows still load); a round with one has its bloom built from it at
/// open.
pub(super) const BLOOMS: TableDefinition<'static, u64, &[u8]> = TableDefinition::new("blooms");
/// `round_txids` table: round -> the round's txids, [`TXID_BYTES`] each, in payset order (the
/// txid index since format 3).
///
/// [`TXID_BYTES`]: super::index::TXID_BYTES
pub(super) const ROUND_TXIDS: TableDefinition<'static, u64, &[u8]> =
    TableDefinition::new("round_txids");
/// `txid_prefixes` table (format 2): round -> the round's compact txid index (the row layout is
/// [`super::index::PrefixIndex`]'s). Read for rounds a format-2 build wrote; never written.
pub(super) const TXID_PREFIXES: TableDefinition<'static, u64, &[u8]> =
    TableDefinition::new("txid_prefixes");
/// `txids` table (format 1): round -> sorted [`INDEX_ENTRY_BYTES`]-byte entries. Read for
/// rounds a format-1 build wrote; never written.
///
/// [`INDEX_ENTRY_BYTES`]: super::index::INDEX_ENTRY_BYTES
pub(super) const TXIDS: TableDefinition<'static, u64, &[u8]> = TableDefinition::new("txids");

/// `chain` table: the network the ledger holds, from its first block: the genesis id under
/// [`CHAIN_GENESIS_ID`], the 32-byte genesis hash under [`CHAIN_GENESIS_HASH`]. A ledger written
/// before the table existed learns them from its oldest kept block at open.
pub(super) const CHAIN: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("chain");
/// `chain` key: the genesis id (block header `gen`).
pub(super) const CHAIN_GENESIS_ID: &str = "genesis_id";
/// `chain` key: the genesis hash (block header `gh`, 32 bytes).
pub(super) const CHAIN_GENESIS_HASH: &str = "genesis_hash";
