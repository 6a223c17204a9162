//! Allocations per handled message, counted by a per-thread counting global allocator (as the
//! limiter's `alloc` test): with warm limiter keys and key cache, consulting the app rate limiter
//! allocates nothing of its own, so a message costs the same allocations with the limiter on as
//! off, but for the memory reclaimer's bookkeeping: seize allocates a batch (two allocations)
//! per 512 records a thread retires, and a multi-app group retires one record, which comes back
//! to the thread's pool only when its batch is reclaimed. So the bound is far below one
//! allocation per message once warm, not zero.
//!
//! The messages are real gossip bytes from the ledger's encoder (`synth::encode_txn_message`):
//! groups of 1 to 16 transactions, most calling apps, from 64 peers over 32 apps.
#![cfg(not(loom))]

use std::sync::Arc;
use std::time::Duration;

use txgate_algorand::synth::{SynthTxn, encode_txn_message};
use txgate_ledger::handler::{
    Group, HandlerConfig, Message, Outcome, PoolReject, PoolSink, Source, TxHandler,
};
use txgate_ratelimit::{AppRateLimiter, Config, Origin};
use txgate_testkit::alloc::{Counting, allocations_during};

mod handler_doubles;

use handler_doubles::{AcceptAll, NothingCommitted};

#[global_allocator]
static GLOBAL: Counting = Counting;

const T0: u64 = 1_700_000_000 * 1_000_000_000;
/// Past two dedup intervals and two limiter windows: a pass starts on empty dedup generations
/// and fresh limiter counts, with the limiter's keys and the key cache warm.
const GAP: u64 = 150 * 1_000_000_000;

/// One message: its bytes, its sender, its transactions, whether it calls apps.
type Msg = (Vec<u8>, Origin, usize, bool);

/// Draws below `m` from xorshift64 (Marsaglia 2003, shifts 13, 7, 17) seeded with `seed`: the
/// tests' deterministic message shapes.
fn xorshift(mut state: u64) -> impl FnMut(u64) -> u64 {
    move |m| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % m
    }
}

/// `n` distinct messages.
fn messages(n: u64) -> Vec<Msg> {
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    (0..n)
        .map(|i| {
            let size = if next(2) == 0 { 1 } else { 2 + next(15) };
            let calls = next(10) < 8;
            let p = next(64) as u32;
            let txns: Vec<SynthTxn> = (0..size)
                .map(|j| {
                    let t = if calls {
                        SynthTxn::app_call([p as u8 + 1; 32], 1, 1001, vec![1 + next(32)])
                    } else {
                        SynthTxn::payment([p as u8 + 1; 32], 1, 1001)
                    };
                    SynthTxn {
                        note: format!("{i}/{j}").into_bytes(),
                        group: (size > 1).then_some([i as u8; 32]),
                        ..t
                    }
                })
                .collect();
            (
                encode_txn_message(&txns, "alloc-v1", &[7; 32]),
                Origin::from_peer_id(&p.to_le_bytes()),
                size as usize,
                calls,
            )
        })
        .collect()
}

/// Handles every message at `now` on this thread (the limiter, when on, runs for all but the
/// first: the backlog is never empty after it, and the threshold is 0); returns allocations.
fn pass(h: &TxHandler, msgs: &[Msg], now: u64) -> u64 {
    let a = allocations_during(|| {
        for (bytes, origin, _, _) in msgs {
            let m = Message {
                bytes,
                source: Source::Peer(*origin),
                received_ns: now,
            };
            assert_eq!(h.handle(&m), Outcome::Enqueued);
        }
    });
    assert_eq!(h.drain(), msgs.len());
    a
}

fn handler(limited: bool, capacity: usize) -> TxHandler {
    handler_into(limited, capacity, Arc::new(AcceptAll))
}

fn handler_into(limited: bool, capacity: usize, sink: Arc<dyn PoolSink>) -> TxHandler {
    let limiter = limited.then(|| {
        Arc::new(
            AppRateLimiter::new(
                Config::default()
                    .with_max_size(1 << 16)
                    .with_rate_per_second(6553)
                    .with_window(Duration::from_secs(10))
                    .with_shards(16)
                    .with_salt(Some([4; 16])),
            )
            .unwrap(),
        )
    });
    TxHandler::new(
        HandlerConfig::default()
            .with_backlog_capacity(capacity)
            .with_congestion_pct(0)
            .with_app_rate_limiting(limited)
            .with_dedup_salt(Some([2; 16])),
        Arc::new(NothingCommitted),
        limiter,
        sink,
    )
    .unwrap()
}

#[test]
fn the_limiter_adds_no_allocation_per_message_once_warm() {
    let msgs = messages(2_000);
    let txns: usize = msgs.iter().map(|m| m.2).sum();
    let mut steady = [0u64; 2];
    const PASSES: u64 = 10;
    for limited in [false, true] {
        let h = handler(limited, msgs.len());
        let cold = pass(&h, &msgs, T0);
        // The limiter recycles a group's operation record once a batch of them is reclaimed:
        // seven passes warm it; the last two are the steady state.
        for k in 1..PASSES - 2 {
            let _ = pass(&h, &msgs, T0 + k * GAP);
        }
        let warm = pass(&h, &msgs, T0 + (PASSES - 2) * GAP);
        let again = pass(&h, &msgs, T0 + (PASSES - 1) * GAP);
        let st = h.stats();
        // Every app-calling message but the first of each pass (the backlog is empty before it).
        let app_msgs = msgs[1..].iter().filter(|m| m.3).count() as u64;
        assert_eq!(
            st.limiter_checks,
            if limited { PASSES * app_msgs } else { 0 }
        );
        steady[usize::from(limited)] = warm + again;
        println!(
            "limiter {}: {:.2} allocations per message warm ({:.2} per transaction), {:.2} in \
             the first pass",
            if limited { "on " } else { "off" },
            warm as f64 / msgs.len() as f64,
            warm as f64 / txns as f64,
            cold as f64 / msgs.len() as f64,
        );
    }
    // Far below one per message: at most one per 100 messages over the two passes (a limiter
    // that allocated per group would add thousands).
    let bound = 2 * msgs.len() as u64 / 100;
    assert!(
        steady[1].abs_diff(steady[0]) <= bound,
        "the limiter path allocates once warm: {} with it, {} without (bound {bound})",
        steady[1],
        steady[0]
    );
}

/// A pool that rejects every group (so each drained app call is penalized) and allocates
/// nothing.
struct RejectAll;

impl PoolSink for RejectAll {
    fn submit(&self, _: &Group) -> Result<(), PoolReject> {
        Err(PoolReject::new("full"))
    }
}

/// `n` distinct messages of 1 to 16 transactions from 64 peers, each message calling one app
/// (every transaction of a group the same one, of 32): the limiter's single-key path, which
/// keeps no operation record, so the memory reclaimer allocates nothing for it either.
fn one_app_messages(n: u64) -> Vec<Msg> {
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    (0..n)
        .map(|i| {
            let size = 1 + next(16);
            let (p, app) = (next(64) as u32, 1 + next(32));
            let txns: Vec<SynthTxn> = (0..size)
                .map(|j| SynthTxn {
                    note: format!("{i}/{j}").into_bytes(),
                    group: (size > 1).then_some([i as u8; 32]),
                    ..SynthTxn::app_call([p as u8 + 1; 32], 1, 1001, vec![app])
                })
                .collect();
            (
                encode_txn_message(&txns, "alloc-v1", &[7; 32]),
                Origin::from_peer_id(&p.to_le_bytes()),
                size as usize,
                true,
            )
        })
        .collect()
}

/// Handles every message at `now` on this thread, then drains the backlog on it (into a pool
/// that rejects all, so every group is penalized when the limiter is on): the allocations of
/// the handling and of the drain.
fn pass_and_drain(h: &TxHandler, msgs: &[Msg], now: u64) -> (u64, u64) {
    let handled = allocations_during(|| {
        for (bytes, origin, _, _) in msgs {
            let m = Message {
                bytes,
                source: Source::Peer(*origin),
                received_ns: now,
            };
            assert_eq!(h.handle(&m), Outcome::Enqueued);
        }
    });
    let mut drained = 0;
    let drain = allocations_during(|| drained = h.drain());
    assert_eq!(drained, msgs.len());
    (handled, drain)
}

#[test]
fn single_app_admissions_and_penalties_allocate_exactly_as_without_the_limiter() {
    let msgs = one_app_messages(2_000);
    let mut steady = [(0, 0); 2];
    const PASSES: u64 = 3;
    for limited in [false, true] {
        let h = handler_into(limited, msgs.len(), Arc::new(RejectAll));
        // The first pass creates the limiter's keys (a node each) and fills the key cache.
        let _ = pass_and_drain(&h, &msgs, T0);
        for k in 1..PASSES - 1 {
            let _ = pass_and_drain(&h, &msgs, T0 + k * GAP);
        }
        steady[usize::from(limited)] = pass_and_drain(&h, &msgs, T0 + (PASSES - 1) * GAP);
        let st = h.stats();
        // Every message but the first of each pass is checked; each one is rejected by the pool
        // and, with the limiter on, penalized.
        assert_eq!(
            st.limiter_checks,
            if limited {
                PASSES * (msgs.len() as u64 - 1)
            } else {
                0
            }
        );
        assert_eq!(st.pool_rejected, PASSES * msgs.len() as u64);
        assert_eq!(st.penalized, if limited { st.pool_rejected } else { 0 });
    }
    println!(
        "allocations of {} messages, limiter off / on: handling {} / {}, drain {} / {}",
        msgs.len(),
        steady[0].0,
        steady[1].0,
        steady[0].1,
        steady[1].1
    );
    // The same decode, app-id list and dedup entries either way: not one allocation more.
    assert_eq!(
        steady[1], steady[0],
        "the limiter's path allocated (handling, drain)"
    );
}
