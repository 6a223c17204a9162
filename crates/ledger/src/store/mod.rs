//! The redb-backed ledger with per-round txid blooms.
//!
//! A [`Ledger`] is a directory holding one [redb](https://docs.rs/redb/2) database
//! (`ledger.redb`). Each round is added by [`Ledger::add_block`] in one write transaction that
//! holds the round's raw block bytes, its bloom filter of txids (an
//! [`AnyBloom`](txgate_bloom::AnyBloom) in the configured block layout, sized from the round's
//! transaction count and the configured false-positive rate) and its txid index row, so a crash
//! leaves a round wholly present or wholly absent. After the commit the round's bloom is published
//! to an in-memory window of the last MaxTxnLife + 1 rounds that readers query without locks.
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
//! | `meta`          | `&str`      | `u64`: format, bloom seed, first and latest round, ... |
//! | `blocks`        | round `u64` | raw block bytes, as given to `add_block`               |
//! | `blooms`        | round `u64` | `AnyBloom::to_bytes`: either layout, XXH3-checksummed  |
//! | `txid_prefixes` | round `u64` | the round's compact txid index (below)                 |
//! | `txids`         | round `u64` | format 1's txid index (read only; see below)           |
//! | `chain`         | `&str`      | the network's genesis id and hash ([`Genesis`])        |
//!
//! The tables are private to this module (`tables.rs`); their contract is the API above.
//!
//! A round's compact txid index is one row of 8 bytes per txn plus a header (the layout is in
//! `index.rs`): the first 4 bytes of each txid and the byte offset of its payset entry in the
//! stored block, in payset order. A lookup scans the prefixes and verifies each match against
//! the one entry it points to ([`payset_entry_txid`]: that entry's txid, computed from the
//! stored block), so answers are exact; an absent txid that passes the bloom matches a 4-byte
//! prefix with probability about `txns / 2^32`. Txids are SHA-512/256 outputs, so prefixes are
//! uniform; ids crafted to share a prefix only cost one verification each (at worst the
//! baseline's decode of the block). One row per round keeps `add_block` to one extra insert, and
//! pruning a round is one range delete.
//!
//! [`payset_entry_txid`]: txgate_algorand::codec::payset_entry_txid
//!
//! Format 1 (earlier builds) kept a 36-byte entry per txn (the whole txid and its payset index,
//! sorted) in `txids`: more bytes written per block than the bloom and the block's own growth
//! allowed. A format-1 ledger opens as format 2: its `txids` rows are still read (binary
//! search), and rounds added or rebuilt from then on get compact rows.
//!
//! # Modules
//!
//! - `ledger.rs`: [`Ledger`]: its state and invariants, [`Ledger::add_decoded_block`] (one
//!   write transaction per round, then the bloom published to the window) and the lookups.
//! - `open.rs`: [`Ledger::open`]: configuration and format checks, format-1 migration, pruning
//!   at open, loading the window's blooms and rebuilding missing or corrupt ones
//!   ([`OpenReport`]).
//! - `index.rs`: a round's bloom and compact txid index built from its block
//!   (`build_round_bloom`, `build_round_index`), and their search.
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
pub use error::{DbError, LedgerError};
pub use genesis::Genesis;
pub use ledger::{Ledger, TxRecord};
pub use open::{OpenReport, RebuildReason, RebuiltBloom};
pub use tables::{DB_FILE, FORMAT_VERSION, FORMAT_VERSION_1};
pub use verified::VerifiedBlock;
