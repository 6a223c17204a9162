//! The handler's interface: the checks and the sink it calls ([`CommittedTxids`], [`PoolSink`])
//! and the values it takes and gives ([`Message`], [`Source`], [`Group`], [`Outcome`]).

use txgate_algorand::codec::{DecodeError, Txn};
use txgate_ratelimit::Origin;

use crate::{Round, Txid};

/// The committed-transaction check the ledger implements: is `txid` in a block of a round in
/// `first..=last`?
///
/// The handler asks it for every transaction of a group, over the transaction's validity window
/// (`first_valid`, `last_valid`). The ledger answers from its per-round blooms (a "no" never
/// touches the store) and confirms a "maybe" exactly, so a `true` must be exact: a false positive
/// would drop a valid transaction.
pub trait CommittedTxids {
    /// `true` iff `txid` is committed in a round in `first..=last` (an empty range when
    /// `first > last`: `false`). Rounds the ledger does not hold (pruned, or beyond its latest)
    /// count as "not committed here".
    fn is_committed(&self, txid: &Txid, first: Round, last: Round) -> bool;
}

/// Why the pool refused a group (go-algorand `TransactionPool.Remember` errors: pool full, fee
/// too low, lease conflict, ...).
///
/// `#[non_exhaustive]`, so that a later version can say more (a kind of refusal, a cause) without
/// breaking a pool: build one with [`PoolReject::new`].
///
/// ```
/// use txgate_ledger::handler::PoolReject;
/// let r = PoolReject::new("fee too low");
/// assert_eq!(r.reason, "fee too low");
/// assert_eq!(r.to_string(), "transaction pool rejected the group: fee too low");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("transaction pool rejected the group: {reason}")]
#[non_exhaustive]
pub struct PoolReject {
    /// A short static reason for logs.
    pub reason: &'static str,
}

impl PoolReject {
    /// A refusal for `reason`, a short static text for logs.
    pub fn new(reason: &'static str) -> Self {
        Self { reason }
    }
}

/// Where accepted groups go: the transaction pool.
///
/// Called from worker threads (and from the caller of
/// [`TxHandler::drain_once`](super::TxHandler::drain_once) or
/// [`TxHandler::shutdown`](super::TxHandler::shutdown)), once per enqueued group.
pub trait PoolSink: Send + Sync {
    /// Offers `group` to the pool.
    ///
    /// # Errors
    ///
    /// [`PoolReject`] when the pool refuses it; for a group from a peer the handler then
    /// penalizes the group's apps for that origin.
    fn submit(&self, group: &Group) -> Result<(), PoolReject>;
}

/// Who sent a message.
///
/// Exhaustive: a message comes from the network, through a peer the limiter knows by its origin,
/// or from the node itself; the handler rate limits and penalizes by that split, and a pool that
/// matches on it should not have to guess about a third kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// A gossip peer, reduced to its rate-limiter origin.
    Peer(Origin),
    /// Submitted locally (the node's own API): never rate limited, never penalized.
    Local,
}

/// One incoming transaction message.
///
/// Exhaustive, built with a struct literal: it is what the caller hands in for each message,
/// every field is required (none has a default), and a new field would be information the caller
/// must supply, so it would break callers whatever its form.
#[derive(Clone, Copy, Debug)]
pub struct Message<'a> {
    /// The raw message: one or more concatenated msgpack `SignedTxn` maps (a group).
    pub bytes: &'a [u8],
    /// Who sent it.
    pub source: Source,
    /// Receive time, nanoseconds since the Unix epoch, from the caller's clock.
    pub received_ns: u64,
}

/// A decoded group on its way to the pool.
///
/// `#[non_exhaustive]`: the handler builds groups and hands them to the [`PoolSink`], and a later
/// version may tell the pool more about one. Outside this crate (a pool's tests), build one with
/// [`Group::new`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Group {
    /// The transactions, in message order (1 to `max_group_size` of them).
    pub txns: Vec<Txn>,
    /// The distinct non-zero app ids of all transactions, in first-seen order.
    pub app_ids: Vec<u64>,
    /// Who sent it.
    pub source: Source,
    /// Receive time of its message (ns since the Unix epoch).
    pub received_ns: u64,
}

impl Group {
    /// The group of `txns` from `source`, received at `received_ns` (ns since the Unix epoch),
    /// with [`app_ids`](Self::app_ids) derived as the handler derives them: the distinct non-zero
    /// app ids of the transactions, in first-seen order. Nothing is checked (the handler's size
    /// limits apply to the messages it decodes, not here).
    ///
    /// ```
    /// use txgate_algorand::codec::Txn;
    /// use txgate_ledger::Txid;
    /// use txgate_ledger::handler::{Group, Source};
    ///
    /// let call = |apps: Vec<u64>| Txn::new(Txid([1; 32]), b"appl").with_app_ids(apps);
    /// let group = Group::new(vec![call(vec![5, 0, 7]), call(vec![7, 9])], Source::Local, 3);
    /// assert_eq!(group.app_ids, vec![5, 7, 9]);
    /// assert_eq!((group.txns.len(), group.source, group.received_ns), (2, Source::Local, 3));
    /// ```
    pub fn new(txns: Vec<Txn>, source: Source, received_ns: u64) -> Self {
        Self {
            app_ids: super::pipeline::group_app_ids(&txns),
            txns,
            source,
            received_ns,
        }
    }
}

/// What [`TxHandler::handle`](super::TxHandler::handle) did with a message. Each variant has a
/// counter in [`HandlerStats`](super::HandlerStats).
///
/// `#[non_exhaustive]`: a later version may drop a message for a new reason, so a `match` outside
/// this crate needs a wildcard arm (a caller that only acts on [`Enqueued`](Self::Enqueued) can
/// treat the rest as "not enqueued").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// Pushed onto the backlog; a worker will hand it to the pool.
    Enqueued,
    /// The same bytes were seen recently: dropped.
    Duplicate,
    /// Not a transaction group (malformed msgpack, or no transaction): rejected. go-algorand
    /// disconnects such a peer.
    DecodeError,
    /// More transactions than `max_group_size`: rejected.
    GroupTooLarge,
    /// More bytes than `max_message_size`: dropped unread (neither hashed nor decoded).
    MessageTooLarge,
    /// A transaction of the group is already committed: dropped.
    AlreadyCommitted,
    /// The app rate limiter dropped it (backlog congested).
    RateLimited,
    /// The backlog was full: dropped, and forgotten by the dedup cache so it may be resent.
    BacklogFull,
    /// The handler is shutting down: dropped.
    ShutDown,
}

/// The decoder the handler calls: bytes of a message to its transactions.
pub type DecodeFn = fn(&[u8]) -> Result<Vec<Txn>, DecodeError>;
