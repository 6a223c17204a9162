//! Tests of the transaction handler pipeline (`txgate_ledger::handler`): every outcome counted
//! exactly, the congestion boundary, backlog-full forgetting, penalties, concurrency, shutdown.
//!
//! Messages are built here with rmpv as canonical msgpack `SignedTxn` maps
//! (`{"txn": {"apid", "fv", "lv", "note", "snd", "type"}}`, keys sorted, smallest ints), so a
//! transaction's txid is computed independently of the handler and of the codec:
//! SHA-512/256("TX" || the `txn` map's bytes), the go-algorand rule for a canonical encoding.
//! The handler decodes them with the real codec (`codec::decode_txn_message`, its default), and
//! one test feeds it groups built by the codec's synthetic encoder.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmpv::Value;
use sha2::{Digest, Sha512_256};
use txgate_algorand::synth::{SynthTxn, encode_txn_message};
use txgate_ledger::handler::{
    CommittedTxids, Group, HandlerConfig, HandlerConfigError, Message, Outcome, PoolReject,
    PoolSink, Source, TxHandler, WorkerError,
};
use txgate_ledger::{Round, Txid};
use txgate_ratelimit::{AppRateLimiter, Config, Origin};

/// ns since the Unix epoch at a whole second (an interval boundary of a 1 s window).
const T0: u64 = 1_700_000_000 * 1_000_000_000;

// ---------------------------------------------------------------------------------------------
// Messages.

/// One transaction's fields.
#[derive(Clone, Copy)]
struct Tx {
    app: u64,
    sender: u8,
    fv: u64,
    lv: u64,
    note: u64,
}

fn tx(app: u64, note: u64) -> Tx {
    Tx {
        app,
        sender: 1,
        fv: 1,
        lv: 1000,
        note,
    }
}

/// The canonical `txn` map of `t` (keys sorted; `apid` omitted when 0, as canonical msgpack
/// omits empty fields).
fn txn_map(t: &Tx) -> Value {
    let mut kv = Vec::new();
    if t.app != 0 {
        kv.push((Value::from("apid"), Value::from(t.app)));
    }
    kv.push((Value::from("fv"), Value::from(t.fv)));
    kv.push((Value::from("lv"), Value::from(t.lv)));
    kv.push((
        Value::from("note"),
        Value::Binary(t.note.to_be_bytes().to_vec()),
    ));
    kv.push((Value::from("snd"), Value::Binary(vec![t.sender; 32])));
    let ty = if t.app != 0 { "appl" } else { "pay" };
    kv.push((Value::from("type"), Value::from(ty)));
    Value::Map(kv)
}

fn encode(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, v).expect("encode to a Vec");
    out
}

/// The txid of `t`, by the go-algorand rule over its canonical encoding.
fn txid(t: &Tx) -> Txid {
    let mut h = Sha512_256::new();
    h.update(b"TX");
    h.update(encode(&txn_map(t)));
    Txid(h.finalize().into())
}

/// A message of the group `txs`: concatenated `{"txn": ...}` maps.
fn msg_bytes(txs: &[Tx]) -> Vec<u8> {
    let mut out = Vec::new();
    for t in txs {
        let stxn = Value::Map(vec![(Value::from("txn"), txn_map(t))]);
        out.extend(encode(&stxn));
    }
    out
}

fn peer(i: u8) -> Source {
    Source::Peer(Origin::from_peer_id(&[i]))
}

fn at(bytes: &[u8], source: Source, received_ns: u64) -> Message<'_> {
    Message {
        bytes,
        source,
        received_ns,
    }
}

// ---------------------------------------------------------------------------------------------
// Fakes.

/// A ledger of txid -> round, recording every query.
#[derive(Default)]
struct FakeLedger {
    committed: HashMap<Txid, Round>,
    queries: Mutex<Vec<(Txid, Round, Round)>>,
}

impl CommittedTxids for FakeLedger {
    fn is_committed(&self, txid: &Txid, first: Round, last: Round) -> bool {
        self.queries.lock().unwrap().push((*txid, first, last));
        self.committed
            .get(txid)
            .is_some_and(|r| (first..=last).contains(r))
    }
}

/// A pool that records groups and rejects those calling `reject_app`, or panics on `panic_app`.
#[derive(Default)]
struct FakePool {
    seen: Mutex<Vec<Group>>,
    reject_app: Option<u64>,
    panic_app: Option<u64>,
    calls: AtomicU64,
}

impl PoolSink for FakePool {
    fn submit(&self, group: &Group) -> Result<(), PoolReject> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if self.panic_app.is_some_and(|a| group.app_ids.contains(&a)) {
            panic!("pool bug");
        }
        self.seen.lock().unwrap().push(group.clone());
        if self.reject_app.is_some_and(|a| group.app_ids.contains(&a)) {
            return Err(PoolReject { reason: "test" });
        }
        Ok(())
    }
}

/// A limiter with L = `limit` per 1 s window.
fn limiter(limit: u64) -> Arc<AppRateLimiter> {
    Arc::new(
        AppRateLimiter::new(Config {
            max_size: 4096,
            rate_per_second: limit,
            window: Duration::from_secs(1),
            shards: 16,
            salt: Some([9; 16]),
        })
        .unwrap(),
    )
}

fn config(capacity: usize, pct: u32) -> HandlerConfig {
    HandlerConfig {
        backlog_capacity: capacity,
        congestion_pct: pct,
        dedup_salt: Some([3; 16]),
        ..HandlerConfig::default()
    }
}

struct Setup {
    handler: TxHandler,
    ledger: Arc<FakeLedger>,
    pool: Arc<FakePool>,
    limiter: Arc<AppRateLimiter>,
}

fn setup(cfg: HandlerConfig, ledger: FakeLedger, pool: FakePool, limit: u64) -> Setup {
    let ledger = Arc::new(ledger);
    let pool = Arc::new(pool);
    let limiter = limiter(limit);
    let handler = TxHandler::new(
        cfg,
        ledger.clone(),
        Some(limiter.clone()),
        pool.clone() as Arc<dyn PoolSink>,
    )
    .unwrap();
    Setup {
        handler,
        ledger,
        pool,
        limiter,
    }
}

/// Fills the backlog with `n` payments (no app ids: never rate limited) noted `base..base+n`.
fn fill(h: &TxHandler, n: u64, base: u64) {
    for i in 0..n {
        let b = msg_bytes(&[tx(0, base + i)]);
        assert_eq!(h.handle(&at(&b, peer(200), T0)), Outcome::Enqueued);
    }
}

// ---------------------------------------------------------------------------------------------
// Tests.

#[test]
fn every_outcome_is_triggered_and_counted_exactly() {
    let committed_tx = tx(0, 777);
    let ledger = FakeLedger {
        committed: HashMap::from([(txid(&committed_tx), 500)]),
        ..FakeLedger::default()
    };
    // Capacity 4, 25%: the limiter runs when len > 1. L = 1.
    let s = setup(config(4, 25), ledger, FakePool::default(), 1);
    let h = &s.handler;
    let p = peer(1);

    let a = msg_bytes(&[tx(0, 1)]);
    assert_eq!(h.handle(&at(&a, p, T0)), Outcome::Enqueued); // len 1
    assert_eq!(h.handle(&at(&a, p, T0)), Outcome::Duplicate);
    assert_eq!(h.handle(&at(b"\xc1garbage", p, T0)), Outcome::DecodeError);
    assert_eq!(h.handle(&at(b"", p, T0)), Outcome::DecodeError); // empty group
    let big: Vec<Tx> = (0..17).map(|i| tx(0, 100 + i)).collect();
    assert_eq!(
        h.handle(&at(&msg_bytes(&big), p, T0)),
        Outcome::GroupTooLarge
    );
    assert_eq!(
        h.handle(&at(&msg_bytes(&[committed_tx]), p, T0)),
        Outcome::AlreadyCommitted
    );
    // go-algorand's limit for TX messages, 5,000,000 bytes (protocol/tags.go TxnTagMaxSize).
    let huge = vec![0x80u8; 5_000_001];
    assert_eq!(h.handle(&at(&huge, p, T0)), Outcome::MessageTooLarge);
    fill(h, 1, 10); // len 2 > 1: congested
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 20)]), p, T0)),
        Outcome::Enqueued
    ); // app 5 admitted (1 of L = 1), len 3
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 21)]), p, T0)),
        Outcome::RateLimited
    );
    fill(h, 1, 30); // len 4 = capacity
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(0, 40)]), p, T0)),
        Outcome::BacklogFull
    );
    assert_eq!(h.drain(), 4);
    h.shutdown();
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(0, 50)]), p, T0)),
        Outcome::ShutDown
    );

    let st = h.stats();
    assert_eq!(st.enqueued, 4);
    assert_eq!(st.duplicate, 1);
    assert_eq!(st.decode_error, 2);
    assert_eq!(st.group_too_large, 1);
    assert_eq!(st.message_too_large, 1);
    assert_eq!(st.already_committed, 1);
    assert_eq!(st.rate_limited, 1);
    assert_eq!(st.backlog_full, 1);
    assert_eq!(st.shut_down, 1);
    assert_eq!(st.handled(), 13);
    assert_eq!(st.limiter_checks, 2);
    assert_eq!(
        (st.pool_accepted, st.pool_rejected, st.penalized),
        (4, 0, 0)
    );
    assert_eq!((st.sink_panicked, st.backlog_len), (0, 0));
    assert_eq!(s.pool.seen.lock().unwrap().len(), 4);
    // The limiter saw exactly the two congested app calls.
    let ls = s.limiter.stats();
    assert_eq!((ls.admitted, ls.dropped), (1, 1));
}

#[test]
fn groups_reach_the_pool_intact_and_in_order() {
    let s = setup(
        config(64, 10),
        FakeLedger::default(),
        FakePool::default(),
        100,
    );
    let group = [tx(5, 1), tx(0, 2), tx(7, 3), tx(5, 4)];
    let b = msg_bytes(&group);
    assert_eq!(
        s.handler.handle(&at(&b, peer(1), T0 + 7)),
        Outcome::Enqueued
    );
    let single = msg_bytes(&[tx(0, 9)]);
    assert_eq!(
        s.handler.handle(&at(&single, Source::Local, T0 + 8)),
        Outcome::Enqueued
    );
    assert_eq!(s.handler.drain(), 2);
    let seen = s.pool.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let g = &seen[0];
    let ids: Vec<Txid> = g.txns.iter().map(|t| t.txid).collect();
    let want: Vec<Txid> = group.iter().map(txid).collect();
    assert_eq!(ids, want);
    assert_eq!(g.app_ids, vec![5, 7]);
    assert_eq!(g.source, peer(1));
    assert_eq!(g.received_ns, T0 + 7);
    assert_eq!(g.txns[0].first_valid, 1);
    assert_eq!(g.txns[0].last_valid, 1000);
    assert_eq!(g.txns[0].sender, [1; 32]);
    assert_eq!(seen[1].source, Source::Local);
    assert!(seen[1].app_ids.is_empty());
}

#[test]
fn committed_check_covers_each_txn_over_its_validity_window() {
    let inside = Tx {
        fv: 10,
        lv: 100,
        ..tx(0, 1)
    };
    let outside = Tx {
        fv: 60,
        lv: 100,
        ..tx(0, 2)
    };
    let fresh = Tx {
        fv: 3,
        lv: 4,
        ..tx(0, 3)
    };
    let ledger = FakeLedger {
        committed: HashMap::from([(txid(&inside), 50), (txid(&outside), 50)]),
        ..FakeLedger::default()
    };
    let s = setup(config(16, 10), ledger, FakePool::default(), 100);
    let h = &s.handler;
    assert_eq!(
        h.handle(&at(&msg_bytes(&[inside]), peer(1), T0)),
        Outcome::AlreadyCommitted
    );
    // Committed at round 50, but the window starts at 60: not this transaction's commit.
    assert_eq!(
        h.handle(&at(&msg_bytes(&[outside]), peer(1), T0)),
        Outcome::Enqueued
    );
    // One committed transaction drops the whole group.
    assert_eq!(
        h.handle(&at(&msg_bytes(&[fresh, inside]), peer(1), T0)),
        Outcome::AlreadyCommitted
    );
    let q = s.ledger.queries.lock().unwrap().clone();
    assert_eq!(
        q,
        vec![
            (txid(&inside), 10, 100),
            (txid(&outside), 60, 100),
            (txid(&fresh), 3, 4),
            (txid(&inside), 10, 100),
        ]
    );
    assert_eq!(h.stats().already_committed, 2);
}

#[test]
fn limiter_runs_only_above_the_congestion_threshold() {
    // Capacity 20 at 10%: threshold 2. L = 1.
    let s = setup(
        config(20, 10),
        FakeLedger::default(),
        FakePool::default(),
        1,
    );
    let h = &s.handler;
    assert_eq!(h.congestion_threshold(), 2);
    let p = peer(1);
    let Source::Peer(origin) = p else {
        unreachable!()
    };
    // Use up app 5's budget for this origin directly: a consulted limiter would now drop it.
    assert!(s.limiter.admit(&[5], &origin, T0).is_admit());
    assert!(s.limiter.admit(&[5], &origin, T0).is_drop());

    fill(h, 2, 0);
    assert_eq!(h.backlog_len(), 2); // == threshold: not congested
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 100)]), p, T0)),
        Outcome::Enqueued
    );
    assert_eq!(h.stats().limiter_checks, 0);
    assert_eq!(s.limiter.stats().dropped, 1); // only the direct call above

    assert_eq!(h.backlog_len(), 3); // > threshold: congested
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 101)]), p, T0)),
        Outcome::RateLimited
    );
    assert_eq!(h.stats().limiter_checks, 1);
    assert_eq!(s.limiter.stats().dropped, 2);
    // Another origin has its own budget; a local message is never limited.
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 102)]), peer(2), T0)),
        Outcome::Enqueued
    );
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 103)]), Source::Local, T0)),
        Outcome::Enqueued
    );
    // A peer group without app ids is not sent to the limiter.
    fill(h, 1, 50);
    assert_eq!(h.stats().limiter_checks, 2);

    // Back at the threshold after draining: not consulted again.
    while h.backlog_len() > 2 {
        assert!(h.drain_once());
    }
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 104)]), p, T0)),
        Outcome::Enqueued
    );
    assert_eq!(h.stats().limiter_checks, 2);
}

#[test]
fn limiter_switch_off_never_consults() {
    let cfg = HandlerConfig {
        app_rate_limiting: false,
        ..config(4, 0)
    };
    let s = setup(cfg, FakeLedger::default(), FakePool::default(), 1);
    let h = &s.handler;
    fill(h, 1, 0); // len 1 > threshold 0
    for i in 0..3 {
        assert_eq!(
            h.handle(&at(&msg_bytes(&[tx(5, 10 + i)]), peer(1), T0)),
            Outcome::Enqueued
        );
    }
    assert_eq!(h.stats().limiter_checks, 0);
    assert_eq!(s.limiter.stats().admitted + s.limiter.stats().dropped, 0);
}

#[test]
fn full_backlog_drops_and_forgets_so_a_resend_is_accepted() {
    let s = setup(
        config(2, 100),
        FakeLedger::default(),
        FakePool::default(),
        100,
    );
    let h = &s.handler;
    let m1 = msg_bytes(&[tx(0, 1)]);
    let m2 = msg_bytes(&[tx(0, 2)]);
    let m3 = msg_bytes(&[tx(0, 3)]);
    assert_eq!(h.handle(&at(&m1, peer(1), T0)), Outcome::Enqueued);
    assert_eq!(h.handle(&at(&m2, peer(1), T0)), Outcome::Enqueued);
    assert_eq!(h.dedup_len(), 2);
    assert_eq!(h.handle(&at(&m3, peer(1), T0)), Outcome::BacklogFull);
    assert_eq!(h.dedup_len(), 2); // m3 forgotten
    // Not a duplicate: still full, dropped and forgotten again.
    assert_eq!(h.handle(&at(&m3, peer(2), T0)), Outcome::BacklogFull);
    assert!(h.drain_once());
    assert_eq!(h.handle(&at(&m3, peer(1), T0)), Outcome::Enqueued);
    // Enqueued messages stay remembered.
    assert_eq!(h.handle(&at(&m1, peer(1), T0)), Outcome::Duplicate);
    assert_eq!(h.handle(&at(&m3, peer(1), T0)), Outcome::Duplicate);
    let st = h.stats();
    assert_eq!((st.enqueued, st.backlog_full, st.duplicate), (3, 2, 2));
}

#[test]
fn dropped_messages_other_than_backlog_full_stay_remembered() {
    // go-algorand deletes a message from the dedup cache only when the backlog is full: a bad
    // or rate-limited message sent again is a duplicate.
    let s = setup(config(4, 0), FakeLedger::default(), FakePool::default(), 1);
    let h = &s.handler;
    assert_eq!(h.handle(&at(b"\xc1", peer(1), T0)), Outcome::DecodeError);
    assert_eq!(h.handle(&at(b"\xc1", peer(1), T0)), Outcome::Duplicate);
    fill(h, 1, 0);
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 1)]), peer(1), T0)),
        Outcome::Enqueued
    );
    let limited = msg_bytes(&[tx(5, 2)]);
    assert_eq!(h.handle(&at(&limited, peer(1), T0)), Outcome::RateLimited);
    assert_eq!(h.handle(&at(&limited, peer(1), T0)), Outcome::Duplicate);
}

#[test]
fn dedup_rotates_by_time_on_the_message_clock() {
    let cfg = HandlerConfig {
        dedup_interval: Duration::from_secs(60),
        ..config(64, 100)
    };
    let s = setup(cfg, FakeLedger::default(), FakePool::default(), 100);
    let h = &s.handler;
    let m = msg_bytes(&[tx(0, 1)]);
    let sec = 1_000_000_000;
    assert_eq!(h.handle(&at(&m, peer(1), T0)), Outcome::Enqueued);
    assert_eq!(
        h.handle(&at(&m, peer(1), T0 + 60 * sec)),
        Outcome::Duplicate
    );
    assert_eq!(h.stats().dedup_rotations, 1);
    assert_eq!(
        h.handle(&at(&m, peer(1), T0 + 120 * sec)),
        Outcome::Enqueued
    );
    assert_eq!(h.stats().dedup_rotations, 2);
}

#[test]
fn dedup_rotates_by_size() {
    let cfg = HandlerConfig {
        dedup_max_size: 2,
        ..config(64, 100)
    };
    let s = setup(cfg, FakeLedger::default(), FakePool::default(), 100);
    let h = &s.handler;
    let m: Vec<Vec<u8>> = (0..5).map(|i| msg_bytes(&[tx(0, i)])).collect();
    let go = |i: usize| h.handle(&at(&m[i], peer(1), T0));
    assert_eq!([go(0), go(1), go(2)], [Outcome::Enqueued; 3]); // swap before 2
    assert_eq!(go(0), Outcome::Duplicate); // in previous
    assert_eq!(go(3), Outcome::Enqueued); // current {2, 3}
    assert_eq!(go(4), Outcome::Enqueued); // swap: {0, 1} dropped
    assert_eq!(go(0), Outcome::Enqueued); // current {4, 0}
    assert_eq!(h.stats().dedup_rotations, 2);
}

#[test]
fn dedup_off_passes_repeats() {
    let cfg = HandlerConfig {
        dedup: false,
        dedup_max_size: 0, // ignored when off
        ..config(64, 100)
    };
    let s = setup(cfg, FakeLedger::default(), FakePool::default(), 100);
    let m = msg_bytes(&[tx(0, 1)]);
    for _ in 0..3 {
        assert_eq!(s.handler.handle(&at(&m, peer(1), T0)), Outcome::Enqueued);
    }
    assert_eq!(s.handler.dedup_len(), 0);
}

#[test]
fn pool_rejection_of_a_peer_group_penalizes_by_l_over_4() {
    // L = 8 per 1 s window: a penalty adds 8 / 4 = 2 to app 5's count for the origin.
    let pool = FakePool {
        reject_app: Some(5),
        ..FakePool::default()
    };
    let s = setup(config(32, 10), FakeLedger::default(), pool, 8); // threshold 3
    let h = &s.handler;
    let p = peer(1);
    fill(h, 4, 0); // len 4 > 3: congested
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 100)]), p, T0)),
        Outcome::Enqueued
    ); // count 1
    assert_eq!(h.drain(), 5);
    let st = h.stats();
    assert_eq!(
        (st.pool_accepted, st.pool_rejected, st.penalized),
        (4, 1, 1)
    );
    // Count 1 + penalty 2 = 3: exactly 8 - 3 = 5 more groups fit this window.
    fill(h, 4, 10);
    let mut admitted = 0;
    let mut note = 200;
    loop {
        note += 1;
        match h.handle(&at(&msg_bytes(&[tx(5, note)]), p, T0)) {
            Outcome::Enqueued => admitted += 1,
            Outcome::RateLimited => break,
            o => panic!("unexpected {o:?}"),
        }
        assert!(admitted <= 8, "the limiter never dropped");
    }
    assert_eq!(admitted, 5);
    // The other origin was not penalized: 8 fit.
    let mut other = 0;
    while h.handle(&at(&msg_bytes(&[tx(5, 1000 + other)]), peer(2), T0)) == Outcome::Enqueued {
        other += 1;
        assert!(other <= 9);
    }
    assert_eq!(other, 8);
}

#[test]
fn local_rejections_and_app_less_rejections_do_not_penalize() {
    let pool = FakePool {
        reject_app: Some(5),
        ..FakePool::default()
    };
    let s = setup(config(32, 0), FakeLedger::default(), pool, 4);
    let h = &s.handler;
    for i in 0..3 {
        let b = msg_bytes(&[tx(5, i)]);
        assert_eq!(h.handle(&at(&b, Source::Local, T0)), Outcome::Enqueued);
    }
    assert_eq!(h.drain(), 3);
    let st = h.stats();
    assert_eq!((st.pool_rejected, st.penalized), (3, 0));
    assert_eq!(s.limiter.stats().entries, 0);
}

#[test]
fn a_panicking_sink_is_counted_and_the_worker_survives() {
    let pool = FakePool {
        panic_app: Some(6),
        ..FakePool::default()
    };
    let s = setup(config(32, 100), FakeLedger::default(), pool, 100);
    let h = &s.handler;
    h.start_workers(1).unwrap();
    let bad = msg_bytes(&[tx(6, 1)]);
    assert_eq!(h.handle(&at(&bad, peer(1), T0)), Outcome::Enqueued);
    for i in 0..10 {
        let b = msg_bytes(&[tx(0, 10 + i)]);
        assert_eq!(h.handle(&at(&b, peer(1), T0)), Outcome::Enqueued);
    }
    h.shutdown();
    let st = h.stats();
    assert_eq!((st.sink_panicked, st.pool_accepted), (1, 10));
    assert_eq!(st.enqueued, st.processed());
}

#[test]
fn shutdown_drains_everything_enqueued() {
    let s = setup(
        config(1000, 100),
        FakeLedger::default(),
        FakePool::default(),
        100,
    );
    let h = &s.handler;
    for i in 0..500 {
        let b = msg_bytes(&[tx(0, i)]);
        assert_eq!(h.handle(&at(&b, peer(1), T0)), Outcome::Enqueued);
    }
    h.start_workers(2).unwrap();
    h.shutdown();
    let st = h.stats();
    assert_eq!(st.enqueued, 500);
    assert_eq!(st.pool_accepted, 500);
    assert_eq!(st.backlog_len, 0);
    let note_of: HashMap<Txid, u64> = (0..500).map(|i| (txid(&tx(0, i)), i)).collect();
    let mut notes: Vec<u64> = s
        .pool
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|g| note_of[&g.txns[0].txid])
        .collect();
    notes.sort_unstable();
    assert_eq!(notes, (0..500).collect::<Vec<_>>()); // each exactly once
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(0, 999)]), peer(1), T0)),
        Outcome::ShutDown
    );
    assert!(matches!(h.start_workers(1), Err(WorkerError::ShutDown)));
    h.shutdown(); // idempotent
}

#[test]
fn shutdown_without_workers_drains_on_the_caller() {
    let s = setup(
        config(8, 100),
        FakeLedger::default(),
        FakePool::default(),
        100,
    );
    fill(&s.handler, 5, 0);
    s.handler.shutdown();
    assert_eq!(s.handler.stats().pool_accepted, 5);
    assert_eq!(s.pool.calls.load(Ordering::Relaxed), 5);
}

#[test]
fn many_threads_conserve_counts_with_workers_running() {
    const THREADS: u64 = 4;
    const DISTINCT: u64 = 2_000;
    let committed: Vec<Tx> = (0..50).map(|i| tx(0, 1_000_000 + i)).collect();
    let ledger = FakeLedger {
        committed: committed.iter().map(|t| (txid(t), 1)).collect(),
        ..FakeLedger::default()
    };
    let pool = FakePool {
        reject_app: Some(13),
        ..FakePool::default()
    };
    // Backlog large enough never to fill; limiter off (its drops depend on timing).
    let cfg = HandlerConfig {
        app_rate_limiting: false,
        ..config(100_000, 10)
    };
    let s = setup(cfg, ledger, pool, 100);
    let h = Arc::new(s.handler);
    h.start_workers(2).unwrap();
    let fresh: Arc<Vec<Vec<u8>>> = Arc::new(
        (0..DISTINCT)
            .map(|i| msg_bytes(&[tx(if i % 10 == 0 { 13 } else { 0 }, i)]))
            .collect(),
    );
    let committed = Arc::new(committed);
    let joins: Vec<_> = (0..THREADS)
        .map(|t| {
            let h = h.clone();
            let fresh = fresh.clone();
            let committed = committed.clone();
            std::thread::spawn(move || {
                let mut counts: HashMap<Outcome, u64> = HashMap::new();
                let mut offered = 0u64;
                let mut go = |b: &[u8]| {
                    offered += 1;
                    *counts
                        .entry(h.handle(&at(b, peer(t as u8), T0)))
                        .or_default() += 1;
                };
                // Every thread offers every fresh message (in its own order), its own
                // garbage and its own copies of committed groups.
                let mult = [1, 3, 7, 9][t as usize]; // coprime to DISTINCT: a permutation
                for i in 0..DISTINCT {
                    let j = (i * mult + t * 7) % DISTINCT;
                    go(&fresh[j as usize]);
                }
                for i in 0..100u64 {
                    go(&[0xc1, t as u8, i as u8]);
                }
                for (i, c) in committed.iter().enumerate() {
                    go(&msg_bytes(&[*c, tx(0, 2_000_000 + t * 100 + i as u64)]));
                }
                (offered, counts)
            })
        })
        .collect();
    let mut offered = 0;
    let mut outcomes: HashMap<Outcome, u64> = HashMap::new();
    for j in joins {
        let (o, c) = j.join().unwrap();
        offered += o;
        for (k, v) in c {
            *outcomes.entry(k).or_default() += v;
        }
    }
    h.shutdown();
    let st = h.stats();
    assert_eq!(offered, THREADS * (DISTINCT + 100 + 50));
    assert_eq!(st.handled(), offered);
    let n = |o| outcomes.get(&o).copied().unwrap_or(0);
    // Of THREADS copies of each fresh message exactly one is new.
    assert_eq!(st.enqueued, DISTINCT);
    assert_eq!(n(Outcome::Enqueued), DISTINCT);
    assert_eq!(st.duplicate, (THREADS - 1) * DISTINCT);
    assert_eq!(n(Outcome::Duplicate), st.duplicate);
    assert_eq!(st.decode_error, THREADS * 100);
    assert_eq!(st.already_committed, THREADS * 50);
    assert_eq!(st.backlog_full + st.rate_limited + st.shut_down, 0);
    // Every enqueued group reached the pool once; every tenth was rejected.
    assert_eq!(st.pool_rejected, DISTINCT / 10);
    assert_eq!(st.pool_accepted, DISTINCT - DISTINCT / 10);
    assert_eq!(s.pool.calls.load(Ordering::Relaxed), DISTINCT);
    assert_eq!(st.penalized, 0); // limiting off: no limiter to penalize
}

#[test]
fn config_errors_are_typed() {
    let l = Some(limiter(1));
    let mk = |cfg: HandlerConfig, l: Option<Arc<AppRateLimiter>>| {
        TxHandler::new(
            cfg,
            Arc::new(FakeLedger::default()),
            l,
            Arc::new(FakePool::default()),
        )
        .err()
    };
    assert!(matches!(
        mk(config(0, 10), l.clone()),
        Some(HandlerConfigError::ZeroBacklogCapacity)
    ));
    assert!(matches!(
        mk(config(10, 101), l.clone()),
        Some(HandlerConfigError::CongestionPct(101))
    ));
    assert!(matches!(
        mk(config(10, 10), None),
        Some(HandlerConfigError::MissingLimiter)
    ));
    let z = HandlerConfig {
        dedup_max_size: 0,
        ..config(10, 10)
    };
    assert!(matches!(
        mk(z, l.clone()),
        Some(HandlerConfigError::ZeroDedupMaxSize)
    ));
    let z = HandlerConfig {
        dedup_interval: Duration::ZERO,
        ..config(10, 10)
    };
    assert!(matches!(
        mk(z, l.clone()),
        Some(HandlerConfigError::ZeroDedupInterval)
    ));
    let z = HandlerConfig {
        max_group_size: 0,
        ..config(10, 10)
    };
    assert!(matches!(
        mk(z, l.clone()),
        Some(HandlerConfigError::ZeroMaxGroupSize)
    ));
    let z = HandlerConfig {
        max_message_size: 0,
        ..config(10, 10)
    };
    assert!(matches!(
        mk(z, l.clone()),
        Some(HandlerConfigError::ZeroMaxMessageSize)
    ));
    // Off: no limiter needed; a random salt works.
    let ok = HandlerConfig {
        app_rate_limiting: false,
        dedup_salt: None,
        ..config(10, 10)
    };
    assert!(mk(ok, None).is_none());
    // Worker errors.
    let s = setup(config(4, 10), FakeLedger::default(), FakePool::default(), 1);
    assert!(matches!(
        s.handler.start_workers(0),
        Err(WorkerError::ZeroWorkers)
    ));
    s.handler.start_workers(1).unwrap();
    assert!(matches!(
        s.handler.start_workers(1),
        Err(WorkerError::AlreadyStarted)
    ));
}

#[test]
fn message_of_max_size_passes_one_byte_more_is_dropped_unread() {
    assert_eq!(HandlerConfig::default().max_message_size, 5_000_000);
    let ok = msg_bytes(&[tx(0, 1)]);
    let s = setup(
        HandlerConfig {
            max_message_size: ok.len(),
            ..config(8, 100)
        },
        FakeLedger::default(),
        FakePool::default(),
        100,
    );
    let h = &s.handler;
    let mut long = msg_bytes(&[tx(0, 2)]);
    long.resize(ok.len() + 1, 0);
    for _ in 0..2 {
        // Not hashed into the dedup cache, not decoded: the same result every time.
        assert_eq!(h.handle(&at(&long, peer(1), T0)), Outcome::MessageTooLarge);
    }
    assert_eq!(h.dedup_len(), 0);
    assert!(s.ledger.queries.lock().unwrap().is_empty());
    assert_eq!(h.handle(&at(&ok, peer(1), T0)), Outcome::Enqueued);
    let st = h.stats();
    assert_eq!((st.message_too_large, st.enqueued, st.handled()), (2, 1, 3));
}

#[test]
fn group_of_max_size_passes_one_more_does_not() {
    let s = setup(
        config(8, 100),
        FakeLedger::default(),
        FakePool::default(),
        100,
    );
    let g16: Vec<Tx> = (0..16).map(|i| tx(0, i)).collect();
    let g17: Vec<Tx> = (0..17).map(|i| tx(0, 100 + i)).collect();
    assert_eq!(
        s.handler.handle(&at(&msg_bytes(&g16), peer(1), T0)),
        Outcome::Enqueued
    );
    assert_eq!(
        s.handler.handle(&at(&msg_bytes(&g17), peer(1), T0)),
        Outcome::GroupTooLarge
    );
}

#[test]
fn synthetic_gossip_groups_decode_with_their_txids_and_app_ids() {
    // A real-shaped group from the codec's synthetic encoder: an app call to 42 with foreign
    // apps 7 and 42, and a payment, sharing a group id.
    let (gen_id, gh) = ("testnet-v1.0", [0x11; 32]);
    let grp = Some([0x22; 32]);
    let call = SynthTxn {
        group: grp,
        note: b"a".to_vec(),
        ..SynthTxn::app_call([3; 32], 100, 1100, vec![42, 7, 42])
    };
    let pay = SynthTxn {
        group: grp,
        ..SynthTxn::payment([4; 32], 100, 1100)
    };
    let bytes = encode_txn_message(&[call.clone(), pay.clone()], gen_id, &gh);
    let committed_pay = SynthTxn {
        note: b"old".to_vec(),
        ..pay.clone()
    };
    let ledger = FakeLedger {
        committed: HashMap::from([(committed_pay.txid(gen_id, &gh), 1000)]),
        ..FakeLedger::default()
    };
    let s = setup(config(16, 10), ledger, FakePool::default(), 100);
    let h = &s.handler;
    assert_eq!(h.handle(&at(&bytes, peer(1), T0)), Outcome::Enqueued);
    let stale = encode_txn_message(&[call.clone(), committed_pay], gen_id, &gh);
    assert_eq!(
        h.handle(&at(&stale, peer(1), T0)),
        Outcome::AlreadyCommitted
    );
    assert_eq!(h.drain(), 1);
    let seen = s.pool.seen.lock().unwrap();
    let g = &seen[0];
    assert_eq!(
        g.txns.iter().map(|t| t.txid).collect::<Vec<_>>(),
        vec![call.txid(gen_id, &gh), pay.txid(gen_id, &gh)]
    );
    assert_eq!(g.app_ids, vec![42, 7]);
    assert_eq!(g.txns[0].group, grp);
    assert_eq!((g.txns[1].first_valid, g.txns[1].last_valid), (100, 1100));
}

/// A `CommittedTxids` that panics (a caller's bug) unwinds out of `handle` without leaving the
/// shutdown gate counting a call that is gone: `shutdown` still returns (it used to spin forever).
#[test]
fn a_panic_inside_handle_does_not_hang_shutdown() {
    struct PanickingLedger;
    impl CommittedTxids for PanickingLedger {
        fn is_committed(&self, _: &Txid, _: Round, _: Round) -> bool {
            panic!("ledger bug");
        }
    }
    let handler = TxHandler::new(
        config(32, 100),
        Arc::new(PanickingLedger),
        Some(limiter(100)),
        Arc::new(FakePool::default()) as Arc<dyn PoolSink>,
    )
    .unwrap();
    let bytes = msg_bytes(&[tx(0, 1)]);
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        handler.handle(&at(&bytes, peer(1), T0))
    }));
    assert!(unwound.is_err());
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        handler.shutdown();
        done_tx.send(handler.stats()).unwrap();
    });
    let stats = done_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("shutdown returned");
    assert_eq!(stats.enqueued, 0);
}

/// A sink that blocks in its first call until released, so a shutdown is still joining a busy
/// worker while a second shutdown runs.
#[derive(Default)]
struct GatedPool {
    entered: std::sync::Mutex<bool>,
    entered_cv: std::sync::Condvar,
    open: std::sync::Mutex<bool>,
    open_cv: std::sync::Condvar,
    accepted: AtomicU64,
}

impl PoolSink for GatedPool {
    fn submit(&self, _: &Group) -> Result<(), PoolReject> {
        *self.entered.lock().unwrap() = true;
        self.entered_cv.notify_all();
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.open_cv.wait(open).unwrap();
        }
        self.accepted.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Two shutdowns at once: the second must not return before the first has handed every
/// enqueued group to the sink (it used to find the workers already taken and return while a
/// worker was still inside the sink).
#[test]
fn a_second_concurrent_shutdown_waits_for_the_first() {
    let pool = Arc::new(GatedPool::default());
    let h = Arc::new(
        TxHandler::new(
            config(8, 100),
            Arc::new(FakeLedger::default()),
            Some(limiter(100)),
            pool.clone() as Arc<dyn PoolSink>,
        )
        .unwrap(),
    );
    h.start_workers(1).unwrap();
    let b = msg_bytes(&[tx(0, 1)]);
    assert_eq!(h.handle(&at(&b, peer(1), T0)), Outcome::Enqueued);
    // The worker is inside the sink, holding the group.
    let mut entered = pool.entered.lock().unwrap();
    while !*entered {
        entered = pool.entered_cv.wait(entered).unwrap();
    }
    drop(entered);
    let shutdowns: Vec<_> = (0..2)
        .map(|_| {
            let (h, pool) = (h.clone(), pool.clone());
            std::thread::spawn(move || {
                h.shutdown();
                // What this caller may rely on once shutdown returned.
                (pool.accepted.load(Ordering::SeqCst), h.stats().processed())
            })
        })
        .collect();
    // Both calls are in (the handler refuses new messages) before the sink is released; a
    // shutdown that returns early does so well within this pause.
    while h.handle(&at(&b, peer(1), T0)) != Outcome::ShutDown {} // a duplicate until then
    std::thread::sleep(Duration::from_millis(100));
    *pool.open.lock().unwrap() = true;
    pool.open_cv.notify_all();
    for t in shutdowns {
        assert_eq!(
            t.join().unwrap(),
            (1, 1),
            "a shutdown returned before the drain"
        );
    }
}

/// A sink that shuts the handler down from a worker thread (and one that does so while the
/// caller's own shutdown drains): shutdown neither joins the thread it runs on nor waits for
/// itself, and every enqueued group still reaches the sink exactly once.
#[test]
fn a_sink_that_shuts_the_handler_down_neither_hangs_nor_panics() {
    #[derive(Default)]
    struct ShuttingPool {
        handler: std::sync::OnceLock<std::sync::Weak<TxHandler>>,
        accepted: AtomicU64,
        on: Mutex<Vec<Option<String>>>,
    }
    impl PoolSink for ShuttingPool {
        fn submit(&self, _: &Group) -> Result<(), PoolReject> {
            self.on
                .lock()
                .unwrap()
                .push(std::thread::current().name().map(str::to_owned));
            if let Some(h) = self.handler.get().and_then(std::sync::Weak::upgrade) {
                h.shutdown();
            }
            self.accepted.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }
    for workers in [1, 0] {
        let pool = Arc::new(ShuttingPool::default());
        let h = Arc::new(
            TxHandler::new(
                config(64, 100),
                Arc::new(FakeLedger::default()),
                Some(limiter(100)),
                pool.clone() as Arc<dyn PoolSink>,
            )
            .unwrap(),
        );
        pool.handler.set(Arc::downgrade(&h)).unwrap();
        let mut enqueued = 0;
        for i in 0..20 {
            if h.handle(&at(&msg_bytes(&[tx(0, i)]), peer(1), T0)) == Outcome::Enqueued {
                enqueued += 1;
            }
        }
        if workers > 0 {
            h.start_workers(workers).unwrap();
        }
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let runner = h.clone();
        std::thread::spawn(move || {
            runner.shutdown();
            done_tx.send(runner.stats()).unwrap();
        });
        let st = done_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("shutdown returned");
        assert_eq!(enqueued, 20, "nothing refused before the first group ran");
        assert_eq!(st.sink_panicked, 0, "a shutdown joined its own thread");
        assert_eq!((st.pool_accepted, st.processed()), (20, 20));
        assert_eq!(pool.accepted.load(Ordering::SeqCst), 20);
        if workers > 0 {
            // The first group went through a worker, whose shutdown call returned at once.
            assert_eq!(
                pool.on.lock().unwrap()[0].as_deref(),
                Some("txgate-handler-0")
            );
        }
    }
}

/// The key cache changes no decision: two handlers, one deriving every key per message (as
/// go-algorand) and one caching them (a cache of 64 keys, so it rotates often), see the same
/// congested traffic over a few peers and apps at a small L and decide every message alike,
/// penalties included.
#[test]
fn cached_limiter_keys_decide_like_derived_ones() {
    let mk = |cache: usize| {
        setup(
            HandlerConfig {
                app_key_cache: cache,
                ..config(100_000, 0)
            },
            FakeLedger::default(),
            FakePool {
                reject_app: Some(3),
                ..FakePool::default()
            },
            3,
        )
    };
    let (derived, cached) = (mk(0), mk(64));
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut outcomes = [0u64; 2];
    for i in 0..3_000u64 {
        let apps: Vec<Tx> = (0..1 + next(3))
            .map(|j| tx(1 + next(8), i * 4 + j))
            .collect();
        let bytes = msg_bytes(&apps);
        let (p, t) = (peer(next(12) as u8), T0 + i * 5_000_000);
        let a = derived.handler.handle(&at(&bytes, p, t));
        let b = cached.handler.handle(&at(&bytes, p, t));
        assert_eq!(a, b, "message {i}");
        outcomes[usize::from(a == Outcome::RateLimited)] += 1;
        if i % 97 == 0 {
            // Rejections of app 3 penalize through the keys of each handler's path.
            derived.handler.drain();
            cached.handler.drain();
        }
    }
    assert!(outcomes[0] > 100 && outcomes[1] > 100, "{outcomes:?}");
    let (d, c) = (derived.handler.stats(), cached.handler.stats());
    assert_eq!((d.rate_limited, d.penalized), (c.rate_limited, c.penalized));
    assert!(d.penalized > 0);
    assert_eq!(
        derived.limiter.tracked_keys(),
        cached.limiter.tracked_keys()
    );
}
