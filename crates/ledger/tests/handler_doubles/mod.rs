//! Test doubles for txgate-ledger's transaction handler: the committed checks and pool sinks
//! that its tests, loom models and the workspace's handler benches share (each includes this
//! file as its own `handler_doubles` module).
//!
//! - [`NothingCommitted`]: no transaction is committed.
//! - [`CommittedMap`]: txid -> round, answering over the asked window and recording each query.
//! - [`AcceptAll`]: a pool that takes every group and keeps nothing (allocation-free).
//! - [`RecordingPool`]: a pool that keeps every group it is offered, and rejects or panics on
//!   groups calling chosen apps.
//!
//! The real ledger's check is `impl CommittedTxids for txgate_ledger::store::Ledger`.

// Each test crate uses its own subset.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use txgate_ledger::handler::{CommittedTxids, Group, PoolReject, PoolSink};
use txgate_ledger::{Round, Txid};

/// A committed check that finds nothing: every transaction is new.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NothingCommitted;

impl CommittedTxids for NothingCommitted {
    fn is_committed(&self, _: &Txid, _: Round, _: Round) -> bool {
        false
    }
}

/// A committed check over a map of txid -> round: `true` iff the txid's round is in the asked
/// `first..=last`. Every query is recorded, in order.
#[derive(Debug, Default)]
pub(crate) struct CommittedMap {
    /// The committed txids and their rounds.
    pub(crate) committed: HashMap<Txid, Round>,
    /// Every query so far: (txid, first, last).
    pub(crate) queries: Mutex<Vec<(Txid, Round, Round)>>,
}

impl CommittedMap {
    /// A check that finds `committed`'s txids in their rounds.
    pub(crate) fn new(committed: impl IntoIterator<Item = (Txid, Round)>) -> Self {
        Self {
            committed: committed.into_iter().collect(),
            queries: Mutex::default(),
        }
    }
}

impl CommittedTxids for CommittedMap {
    fn is_committed(&self, txid: &Txid, first: Round, last: Round) -> bool {
        self.queries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((*txid, first, last));
        self.committed
            .get(txid)
            .is_some_and(|r| (first..=last).contains(r))
    }
}

/// A pool that accepts every group and keeps nothing: it allocates nothing per group.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AcceptAll;

impl PoolSink for AcceptAll {
    fn submit(&self, _: &Group) -> Result<(), PoolReject> {
        Ok(())
    }
}

/// A pool that keeps every group it is offered (accepted or rejected) in `seen`, rejects those
/// calling `reject_app`, and panics on those calling `panic_app` (before keeping them).
#[derive(Debug, Default)]
pub(crate) struct RecordingPool {
    /// The groups offered and not panicked on, in order.
    pub(crate) seen: Mutex<Vec<Group>>,
    /// Groups calling this app are rejected (still kept in `seen`).
    pub(crate) reject_app: Option<u64>,
    /// Groups calling this app make `submit` panic.
    pub(crate) panic_app: Option<u64>,
    /// Calls of `submit`, panicking ones included.
    pub(crate) calls: AtomicU64,
}

impl RecordingPool {
    /// A copy of the groups kept so far.
    pub(crate) fn groups(&self) -> Vec<Group> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The first byte of each kept group's first txid, in order (a compact record for models
    /// whose groups are told apart by it).
    pub(crate) fn first_txid_bytes(&self) -> Vec<u8> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|g| g.txns[0].txid.0[0])
            .collect()
    }

    /// Calls of `submit` so far.
    pub(crate) fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
}

impl PoolSink for RecordingPool {
    fn submit(&self, group: &Group) -> Result<(), PoolReject> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if self.panic_app.is_some_and(|a| group.app_ids.contains(&a)) {
            panic!("pool bug");
        }
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(group.clone());
        if self.reject_app.is_some_and(|a| group.app_ids.contains(&a)) {
            return Err(PoolReject::new("test"));
        }
        Ok(())
    }
}
