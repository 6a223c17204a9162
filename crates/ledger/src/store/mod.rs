//! The redb-backed ledger with per-round txid blooms.
//!
//! A [`Ledger`] is a directory holding one [redb](https://docs.rs/redb/2) database
//! (`ledger.redb`). Each round is added by [`Ledger::add_block`] in one write transaction that
//! holds the round's raw block bytes and its txid index row, so a crash
//! leaves a round wholly present or wholly absent (each commit is durable when `add_block`
//! returns, unless [`LedgerConfig::sync_every`] batches the syncs). After the commit the round's
//! bloom filter of txids (an [`AnyBloom`](txgate_bloom::AnyBloom) in the configured block
//! layout, sized from the round's transaction count and the configured false-positive rate) is
//! published to an in-memory window of the last MaxTxnLife + 1 rounds that readers query
//! without locks. The bloom is not stored: the index row holds the txids it is built from, and
//! [`Ledger::open`] builds the window's blooms from those rows. (With the txid index disabled,
//! a bloom row is stored instead.)
//!
//! [`Ledger::lookup_txid`] answers "is this txid in round R?": the round's bloom answers "no"
//! without touching the database; a "maybe" goes to the exact index (the round's txids), which
//! answers without reading the block, in every kept round. [`Ledger::find_txid`] asks
//! the same over a range of rounds, newest first, within the window: the tx handler's
//! "already committed?" check over a transaction's validity window.
//!
//! With blooms disabled ([`LedgerConfig::blooms`] = false) the ledger keeps only blocks and
//! answers like go-algorand's baseline: load the round's block, decode it, compare its txids.
//!
//! # On-disk layout (format 3)
//!
//! | table           | key         | value                                                  |
//! |-----------------|-------------|--------------------------------------------------------|
//! | `meta`          | `&str`      | `u64`: format, bloom seed, first and latest round, ... |
//! | `blocks`        | round `u64` | raw block bytes, as given to `add_block`               |
//! | `blooms`        | round `u64` | `AnyBloom::to_bytes` of a round without an index row   |
//! | `round_txids`   | round `u64` | the round's txid index: its txids, in payset order     |
//! | `txid_prefixes` | round `u64` | format 2's compact txid index (read only; see below)   |
//! | `txids`         | round `u64` | format 1's txid index (read only; see below)           |
//! | `chain`         | `&str`      | the network's genesis id and hash ([`Genesis`])        |
//!
//! The tables are private to this module (`tables.rs`); their contract is the API above.
//!
//! A round's txid index row is its txids, 32 bytes each, in payset order (`index.rs`): a lookup
//! that gets past the bloom (a hit, or a false positive) reads this one row (32 KB for 1,000
//! txns), scans it and reads no block, so a hit in a round older than the window costs what one
//! in the window does. One row per round keeps `add_block` to one extra insert, and pruning a
//! round is one range delete. The row is built from the decoded block's txids, which the
//! decoder computed anyway; it costs 32 bytes per txn on disk (a 1,000-payment round's block is
//! about 250 KB, its row 32 KB, its bloom at 0.1 % about 1.8 KB).
//!
//! A round with an index row has no bloom row: storing the bloom as well cost each
//! `add_block` a second table's pages in its commit (about 15 KB written, several per cent of
//! a synced add on a 1,000-txn round), while rebuilding the window's blooms from the index rows
//! costs [`Ledger::open`] one read of each row (32 MB for 1,001 rounds of 1,000 txns). Bloom rows
//! are kept for rounds added without the index, and those an earlier format-3 build wrote
//! still load as they are. A bloom built from an index row follows the configured layout and
//! false-positive rate at each open; a stored bloom row keeps its own. At open, a window
//! round whose bloom can be neither loaded nor built (a damaged bloom row or one of another
//! seed, even beside a good index row; a malformed index row; no row at all) is rebuilt from
//! its block ([`RebuildReason`]), which writes its index row and removes the bad bloom row. The
//! layout on disk is unchanged, so a build from before this rule still opens such a ledger
//! with the same lookup answers: it rebuilds each window round's missing bloom row from its
//! block (slower to open), and its `round_bloom` answers `None` for older rounds, which have
//! no bloom row.
//!
//! Earlier formats, and why format 3 replaced them:
//!
//! - Format 2 kept 8 bytes per txn in `txid_prefixes`: the first 4 bytes of each txid and the
//!   offset of its payset entry in the stored block. A prefix match was verified against the
//!   txid of the entry it pointed to ([`payset_entry_txid`]), which meant reading the whole
//!   stored block: tens of microseconds when the database cache held it, up to milliseconds
//!   when it did not (the old rounds' hits).
//! - Format 1 kept 36 bytes per txn in `txids`: the whole txid and its payset index, sorted.
//!
//! A format-1 or format-2 ledger opens as format 3 (and is marked so: older builds then refuse
//! it): its rows are still read (format 1: binary search; format 2: prefixes verified against the
//! block, the earlier cost), and rounds added, or rebuilt at open, from then on get `round_txids`
//! rows. A later format than this build's is refused ([`LedgerError::Format`]).
//!
//! [`payset_entry_txid`]: txgate_algorand::codec::payset_entry_txid
//!
//! # Modules
//!
//! - `ledger.rs`: [`Ledger`]: its state and invariants, [`Ledger::add_decoded_block`] (one
//!   write transaction per round, then the bloom published to the window) and the lookups.
//! - `open.rs`: [`Ledger::open`]: configuration and format checks, formats 1 and 2 opened as 3,
//!   pruning at open, loading the window's blooms (from bloom rows, or built from index rows) and
//!   rebuilding missing or corrupt ones ([`OpenReport`]).
//! - `index.rs`: a round's bloom and txid index row built from its block, its bloom from its
//!   index row
//!   (`build_round_bloom`, `build_round_index`), and the searches of every format's rows.
//! - `rows.rs`: a round's rows persisted (`persist_round_rows`), rounds pruned, the network's rows
//!   and the network check.
//! - `blocks.rs`: the block codec, and the one read of a stored block.
//! - `verified.rs`: [`VerifiedBlock`], a block checked against its header before it is added.
//!
//! # Verification
//!
//! Every block is verified before anything is computed from it or written:
//! [`Ledger::add_block`] and [`Ledger::add_decoded_block`] check its payset commitments for its
//! protocol ([`Block::verify`](txgate_algorand::codec::Block::verify)); the ledger checks the
//! round (the latest plus one) and the network (its first block's). A block that fails is a
//! [`LedgerError::Verify`] and nothing of it is written. The one way past the commitment check
//! is explicit: [`Ledger::add_verified_block`] with a [`VerifiedBlock`], which either verified
//! (against the caller's [`Expected`](txgate_algorand::codec::Expected), e.g. the round it
//! asked for) or was declared verified by [`VerifiedBlock::assume_verified`].
//! - `tables.rs`: the database file, format version, tables and keys.
//! - `window.rs`: the lock-free window of the last MaxTxnLife + 1 rounds' blooms.
//! - `config.rs`: [`LedgerConfig`] and the defaults; `error.rs`: [`LedgerError`];
//!   `genesis.rs`: [`Genesis`].
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
//! let ledger = Ledger::open(dir.path(), LedgerConfig::default())?;
//! let report = ledger.open_report();
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

mod blocks;
mod config;
mod error;
mod genesis;
mod index;
mod ledger;
mod open;
mod rows;
mod tables;
mod verified;
mod window;

#[cfg(all(test, not(loom)))]
mod tests;

pub use config::{
    DEFAULT_BLOOM_LAYOUT, DEFAULT_BLOOM_SEED, DEFAULT_CACHE_BYTES, DEFAULT_FALSE_POSITIVE_RATE,
    DEFAULT_MAX_TXN_LIFE, LedgerConfig, MAX_WINDOW_ROUNDS,
};
pub use error::{DbError, LedgerError, StoreOp};
pub use genesis::Genesis;
pub use ledger::{Ledger, TxRecord};
pub use open::{OpenReport, RebuildReason, RebuiltBloom};
pub use tables::{DB_FILE, FORMAT_VERSION, FORMAT_VERSION_1, FORMAT_VERSION_2};
pub use verified::VerifiedBlock;
