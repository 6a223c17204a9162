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

#[path = "../handler_doubles/mod.rs"]
mod handler_doubles;

use handler_doubles::{CommittedMap, RecordingPool};

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
// Doubles (the committed check and the pool are the shared ones of `handler_doubles`).

/// A limiter with L = `limit` per 1 s window.
fn limiter(limit: u64) -> Arc<AppRateLimiter> {
    Arc::new(
        AppRateLimiter::new(
            Config::default()
                .with_max_size(4096)
                .with_rate_per_second(limit)
                .with_window(Duration::from_secs(1))
                .with_shards(16)
                .with_salt(Some([9; 16])),
        )
        .unwrap(),
    )
}

fn config(capacity: usize, pct: u32) -> HandlerConfig {
    HandlerConfig::default()
        .with_backlog_capacity(capacity)
        .with_congestion_pct(pct)
        .with_dedup_salt(Some([3; 16]))
}

struct Setup {
    handler: TxHandler,
    ledger: Arc<CommittedMap>,
    pool: Arc<RecordingPool>,
    limiter: Arc<AppRateLimiter>,
}

fn setup(cfg: HandlerConfig, ledger: CommittedMap, pool: RecordingPool, limit: u64) -> Setup {
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

mod config;
mod lifecycle;
mod pipeline;
