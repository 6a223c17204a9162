//! [`LedgerError`]: why a ledger operation failed.

use std::path::PathBuf;

use txgate_algorand::codec::{DecodeError, VerifyError};
use txgate_bloom::{BuildError, LoadError};

use super::genesis::Genesis;
use super::tables::FORMAT_VERSION;
use crate::Round;

/// Why a ledger operation failed. Every variant names the round (or file) concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The configured false-positive rate is not in (0, 1).
    #[error("invalid ledger configuration: false-positive rate must be in (0, 1), got {0}")]
    FalsePositiveRate(f64),
    /// The configured MaxTxnLife is above the limit
    /// ([`MAX_WINDOW_ROUNDS`](super::MAX_WINDOW_ROUNDS)).
    #[error("invalid ledger configuration: MaxTxnLife {max_txn_life} is above the limit {limit}")]
    MaxTxnLife {
        /// The configured MaxTxnLife, in rounds.
        max_txn_life: u64,
        /// The largest one allowed.
        limit: u64,
    },
    /// The configured `sync_every` is 0 (every how many rounds a commit is made durable: at
    /// least 1).
    #[error(
        "invalid ledger configuration: sync_every must be at least 1 (rounds per durable commit)"
    )]
    SyncEvery,
    /// The ledger directory could not be created.
    #[error("cannot create ledger directory {path}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The database could not be opened (locked by another process, corrupt, unreadable).
    #[error("cannot open ledger database {path}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// The database's error.
        source: DbError,
    },
    /// The database was written by another format version.
    #[error(
        "ledger database {path} has format {found}, this build reads formats 1 to {FORMAT_VERSION}"
    )]
    Format {
        /// The database file.
        path: PathBuf,
        /// The version found.
        found: u64,
    },
    /// A database operation failed.
    #[error("ledger store error while {op}{}", fmt_round(*.round))]
    Store {
        /// The round concerned, if any.
        round: Option<Round>,
        /// What the ledger asked of the database.
        op: StoreOp,
        /// The database's error.
        source: DbError,
    },
    /// `add_block` of a round at or before the latest: the ledger holds it (or held it and
    /// pruned it). The block was checked to be of the ledger's network (else
    /// [`LedgerError::OtherNetwork`]) but not compared with the stored one. Nothing was written:
    /// a caller continuing a ledger from an earlier round skips it.
    #[error("round {round} is already in the ledger (latest round {latest}); nothing was written")]
    AlreadyHeld {
        /// The round of the block.
        round: Round,
        /// The ledger's latest round.
        latest: Round,
    },
    /// `add_block` of a round after the latest + 1 (a gap), or of round `u64::MAX`. Nothing was
    /// written.
    #[error("block of round {got} is out of order: the next round is {expected}")]
    OutOfOrder {
        /// latest + 1.
        expected: Round,
        /// The round of the block.
        got: Round,
    },
    /// Block bytes do not decode (given to `add_block`, or stored and read back).
    #[error("block{} does not decode", fmt_round(*.round))]
    Decode {
        /// The round, when known (stored blocks).
        round: Option<Round>,
        /// The codec's error.
        source: DecodeError,
    },
    /// `add_block` of a block that fails verification against its header (a payset commitment,
    /// or its protocol's rule) or against the round and network expected. Nothing was written.
    #[error("block of round {round} fails verification; nothing was written")]
    Verify {
        /// The round the block claims.
        round: Round,
        /// What did not match.
        source: VerifyError,
    },
    /// A round's bloom could not be built.
    #[error("cannot build the bloom of round {round}")]
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
    /// A block too large for format 2's compact txid index, whose entry offsets were 32-bit
    /// (4 GiB). Not returned since format 3, whose index holds whole txids; kept so that code
    /// naming it still builds.
    #[error("block of round {round} is {bytes} bytes, more than the txid index addresses")]
    BlockTooLarge {
        /// The round.
        round: Round,
        /// The block's bytes.
        bytes: usize,
    },
    /// The block bytes given with a decoded block are not its encoding (their payset has
    /// another number of entries): format 2's compact index pointed into them. Not returned
    /// since format 3, whose index holds the decoded block's txids; kept so that code naming it
    /// still builds.
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
    #[error("the stored bloom of round {round} does not load")]
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

/// What the ledger asked of the database when it failed ([`LedgerError::Store`]), named after
/// the redb error type each operation returns (redb joins one error enum per operation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreOp {
    /// Beginning a read or write transaction (redb's `TransactionError`).
    Begin,
    /// Opening a table (redb's `TableError`).
    OpenTable,
    /// Reading, writing or deleting rows of an open table (redb's `StorageError`).
    Rows,
    /// Committing a write transaction (redb's `CommitError`).
    Commit,
}

impl std::fmt::Display for StoreOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StoreOp::Begin => "beginning a transaction",
            StoreOp::OpenTable => "opening a table",
            StoreOp::Rows => "accessing rows",
            StoreOp::Commit => "committing",
        })
    }
}

/// A redb error type and the operation that returns it.
pub(super) trait RedbError: Into<redb::Error> {
    /// The operation.
    const OP: StoreOp;
}

impl RedbError for redb::TransactionError {
    const OP: StoreOp = StoreOp::Begin;
}

impl RedbError for redb::TableError {
    const OP: StoreOp = StoreOp::OpenTable;
}

impl RedbError for redb::StorageError {
    const OP: StoreOp = StoreOp::Rows;
}

impl RedbError for redb::CommitError {
    const OP: StoreOp = StoreOp::Commit;
}

/// Context for a redb result: `.at(round)?` turns its error into [`LedgerError::Store`] naming
/// the round (or `None`) and the operation (from the error's type).
pub(super) trait At<T> {
    /// The result with its error as [`LedgerError::Store`] of `round`.
    fn at(self, round: impl Into<Option<Round>>) -> Result<T, LedgerError>;
}

impl<T, E: RedbError> At<T> for Result<T, E> {
    #[inline]
    fn at(self, round: impl Into<Option<Round>>) -> Result<T, LedgerError> {
        self.map_err(|e| LedgerError::Store {
            round: round.into(),
            op: E::OP,
            source: DbError::from(e.into()),
        })
    }
}

/// The database's own error (the redb crate's, whose type is not part of this crate's API): its
/// message is this error's [`Display`](std::fmt::Display), and its cause, if any, its
/// [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct DbError(Box<redb::Error>);

impl From<redb::Error> for DbError {
    fn from(e: redb::Error) -> Self {
        Self(Box::new(e))
    }
}
