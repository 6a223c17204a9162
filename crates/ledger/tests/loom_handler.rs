//! loom models of the handler (run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p txgate-ledger --release --test
//! loom_handler`).
//!
//! Under `cfg(loom)` the backlog is the loom stand-in of `crossbeam_queue::ArrayQueue` (a loom
//! `Mutex<VecDeque>` with the same capacity rule and a lock-free length, see
//! `handler/backlog.rs`); the shutdown gate, the dedup generation and tick, the workers' park
//! flags, the counters and the worker threads themselves are loom's. The models check that
//! pushes and pops conserve groups (none lost, none handed to the pool twice), that the counters
//! add up, that a `handle` racing `shutdown` is either refused or drained, that copies of one
//! message are deduplicated exactly (also across a rotation), and that a running worker is woken
//! for every group and joined by shutdown. The dedup map (dashmap) is not loom-instrumented; no
//! loom operation runs while one of its locks is held.
#![cfg(loom)]

use std::sync::Arc;

use loom::thread;
use txgate_algorand::codec::{DecodeError, Txn};
use txgate_ledger::Txid;
use txgate_ledger::handler::{
    Group, HandlerConfig, Message, Outcome, PoolReject, PoolSink, Source, TxHandler,
};
use txgate_ratelimit::Origin;

mod handler_doubles;

use handler_doubles::{NothingCommitted, RecordingPool};

/// A message is one byte `b`: a payment whose txid is 32 bytes of `b`; empty is malformed.
fn decode(bytes: &[u8]) -> Result<Vec<Txn>, DecodeError> {
    let [b] = bytes else {
        return Err(DecodeError::Malformed("want one byte".into()));
    };
    Ok(vec![
        Txn::new(Txid([*b; 32]), b"pay")
            .with_first_valid(1)
            .with_last_valid(10),
    ])
}

fn handler(capacity: usize) -> (loom::sync::Arc<TxHandler>, Arc<RecordingPool>) {
    handler_with(config().with_backlog_capacity(capacity))
}

/// The models' configuration: no limiter, a fixed dedup salt, the one-byte decoder.
fn config() -> HandlerConfig {
    HandlerConfig::default()
        .with_app_rate_limiting(false)
        .with_dedup_salt(Some([1; 16]))
        .with_decoder(decode)
}

fn handler_with(config: HandlerConfig) -> (loom::sync::Arc<TxHandler>, Arc<RecordingPool>) {
    let sink = Arc::new(RecordingPool::default());
    let h = TxHandler::new(config, Arc::new(NothingCommitted), None, sink.clone()).unwrap();
    (loom::sync::Arc::new(h), sink)
}

fn msg(b: &[u8]) -> Message<'_> {
    msg_at(b, 1)
}

fn msg_at(b: &[u8], received_ns: u64) -> Message<'_> {
    Message {
        bytes: b,
        source: Source::Peer(Origin::from_peer_id(&[7])),
        received_ns,
    }
}

/// Two producers push distinct groups into a backlog of one slot while a consumer pops: each
/// group is either enqueued and handed to the pool exactly once, or dropped as backlog-full;
/// the counters add up.
#[test]
fn racing_pushes_and_a_pop_conserve_groups() {
    loom::model(|| {
        let (h, sink) = handler(1);
        let producers: Vec<_> = [1u8, 2]
            .into_iter()
            .map(|b| {
                let h = h.clone();
                thread::spawn(move || (b, h.handle(&msg(&[b]))))
            })
            .collect();
        let popped = usize::from(h.drain_once());
        let outcomes: Vec<(u8, Outcome)> =
            producers.into_iter().map(|t| t.join().unwrap()).collect();
        let rest = h.drain();
        let mut enqueued: Vec<u8> = outcomes
            .iter()
            .filter(|(_, o)| *o == Outcome::Enqueued)
            .map(|(b, _)| *b)
            .collect();
        let full = outcomes
            .iter()
            .filter(|(_, o)| *o == Outcome::BacklogFull)
            .count();
        assert_eq!(enqueued.len() + full, 2, "{outcomes:?}");
        assert!(!enqueued.is_empty(), "one slot: the first push always fits");
        assert_eq!(popped + rest, enqueued.len());
        let mut seen = sink.first_txid_bytes();
        seen.sort_unstable();
        enqueued.sort_unstable();
        assert_eq!(seen, enqueued);
        let st = h.stats();
        assert_eq!(st.handled(), 2);
        assert_eq!(st.enqueued, enqueued.len() as u64);
        assert_eq!(st.backlog_full, full as u64);
        assert_eq!(st.processed(), st.enqueued);
        assert_eq!(st.backlog_len, 0);
    });
}

/// A `handle` racing `shutdown`: it is refused (`ShutDown`, nothing reaches the pool), or it is
/// enqueued and shutdown hands it to the pool; never enqueued and left behind.
#[test]
fn handle_racing_shutdown_is_refused_or_drained() {
    loom::model(|| {
        let (h, sink) = handler(2);
        let t = {
            let h = h.clone();
            thread::spawn(move || h.handle(&msg(&[5])))
        };
        h.shutdown();
        let outcome = t.join().unwrap();
        let seen = sink.first_txid_bytes();
        match outcome {
            Outcome::Enqueued => assert_eq!(seen, vec![5]),
            Outcome::ShutDown => assert!(seen.is_empty()),
            other => panic!("unexpected {other:?}"),
        }
        let st = h.stats();
        assert_eq!(st.handled(), 1);
        assert_eq!(st.processed(), st.enqueued);
        assert_eq!(st.backlog_len, 0);
    });
}

/// Two copies of one message from two threads, and a third thread draining: exactly one copy
/// is enqueued, and it reaches the pool exactly once.
#[test]
fn racing_copies_enqueue_once() {
    loom::model(|| {
        let (h, sink) = handler(2);
        let copies: Vec<_> = (0..2)
            .map(|_| {
                let h = h.clone();
                thread::spawn(move || h.handle(&msg(&[9])))
            })
            .collect();
        h.drain_once();
        let outcomes: Vec<Outcome> = copies.into_iter().map(|t| t.join().unwrap()).collect();
        h.drain();
        let enq = outcomes.iter().filter(|o| **o == Outcome::Enqueued).count();
        let dup = outcomes
            .iter()
            .filter(|o| **o == Outcome::Duplicate)
            .count();
        assert_eq!((enq, dup), (1, 1), "{outcomes:?}");
        assert_eq!(sink.first_txid_bytes(), vec![9]);
        let st = h.stats();
        assert_eq!((st.enqueued, st.duplicate, st.processed()), (1, 1, 1));
    });
}

/// After an idle gap of two rotation intervals the dedup cache drops both generations, and the
/// first message after the gap rotates. Two copies of one message racing at that moment (one
/// rotating, one finding the rotation taken) must still be deduplicated: exactly one is
/// enqueued. Interval 1 s; a message at 1 ns starts the clock; the copies arrive at 3 s + 1 ns.
#[test]
fn racing_copies_after_an_idle_gap_enqueue_once() {
    loom::model(|| {
        let (h, sink) = handler_with(
            config()
                .with_backlog_capacity(3)
                .with_dedup_interval(std::time::Duration::from_secs(1)),
        );
        assert_eq!(h.handle(&msg_at(&[1], 1)), Outcome::Enqueued);
        let copies: Vec<_> = (0..2)
            .map(|_| {
                let h = h.clone();
                thread::spawn(move || h.handle(&msg_at(&[9], 3_000_000_001)))
            })
            .collect();
        let outcomes: Vec<Outcome> = copies.into_iter().map(|t| t.join().unwrap()).collect();
        let enq = outcomes.iter().filter(|o| **o == Outcome::Enqueued).count();
        assert_eq!(enq, 1, "{outcomes:?}");
        h.drain();
        assert_eq!(sink.first_txid_bytes(), vec![1, 9]);
    });
}

/// A sink that records the first txid byte of each group and lets the model wait for them. It
/// uses loom's `Mutex` and `Condvar`, so a wait that nothing will ever satisfy (a worker parked
/// through a lost wake-up) ends the model in loom's deadlock report.
#[derive(Default)]
struct Awaited {
    seen: loom::sync::Mutex<Vec<u8>>,
    arrived: loom::sync::Condvar,
}

impl PoolSink for Awaited {
    fn submit(&self, group: &Group) -> Result<(), PoolReject> {
        self.seen.lock().unwrap().push(group.txns[0].txid.0[0]);
        self.arrived.notify_all();
        Ok(())
    }
}

impl Awaited {
    /// Blocks until `n` groups arrived; returns them.
    fn wait_for(&self, n: usize) -> Vec<u8> {
        let mut seen = self.seen.lock().unwrap();
        while seen.len() < n {
            seen = self.arrived.wait(seen).unwrap();
        }
        seen.clone()
    }
}

fn handler_awaited(capacity: usize) -> (loom::sync::Arc<TxHandler>, Arc<Awaited>) {
    let sink = Arc::new(Awaited::default());
    let h = TxHandler::new(
        config().with_backlog_capacity(capacity),
        Arc::new(NothingCommitted),
        None,
        sink.clone(),
    )
    .unwrap();
    (loom::sync::Arc::new(h), sink)
}

/// One worker, and this thread as the producer: each enqueued group reaches the sink through
/// the worker alone (no shutdown, no drain, and under loom no park timeout), the second after
/// the worker went idle again; then shutdown joins the worker. A lost wake-up leaves the worker
/// parked and this thread waiting: loom reports the deadlock.
#[test]
fn a_parked_worker_is_woken_for_every_group() {
    loom::model(|| {
        let (h, sink) = handler_awaited(2);
        h.start_workers(1).unwrap();
        assert_eq!(h.handle(&msg(&[4])), Outcome::Enqueued);
        assert_eq!(sink.wait_for(1), vec![4]);
        assert_eq!(h.handle(&msg(&[5])), Outcome::Enqueued);
        assert_eq!(sink.wait_for(2), vec![4, 5]);
        h.shutdown();
        let st = h.stats();
        assert_eq!((st.enqueued, st.processed(), st.backlog_len), (2, 2, 0));
        assert_eq!(*sink.seen.lock().unwrap(), vec![4, 5]);
    });
}

/// One worker, one producer thread, and shutdown racing them: the group is refused or it
/// reaches the sink exactly once, and shutdown returns (loom reports a hang as a deadlock).
#[test]
fn shutdown_racing_a_producer_and_a_worker_delivers_once_and_returns() {
    loom::model(|| {
        let (h, sink) = handler_awaited(2);
        h.start_workers(1).unwrap();
        let producer = {
            let h = h.clone();
            thread::spawn(move || h.handle(&msg(&[6])))
        };
        h.shutdown();
        let outcome = producer.join().unwrap();
        let seen = sink.seen.lock().unwrap().clone();
        match outcome {
            Outcome::Enqueued => assert_eq!(seen, vec![6]),
            Outcome::ShutDown => assert!(seen.is_empty()),
            other => panic!("unexpected {other:?}"),
        }
        let st = h.stats();
        assert_eq!(st.processed(), st.enqueued);
        assert_eq!(st.backlog_len, 0);
    });
}
