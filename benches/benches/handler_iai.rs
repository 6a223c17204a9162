//! Instruction counts (callgrind) of `TxHandler::handle` on the handler bench's traffic, with
//! the app rate limiter off, on (keys from the handler's cache) and on deriving every key per
//! message (go-algorand's way): deterministic on a noisy machine, so the limiter's cost shows as
//! a count ratio. Run only with `cargo bench -p txgate-benches --bench handler_iai` (needs
//! valgrind and `iai-callgrind-runner` 0.16.1); never through `cargo test`.
//!
//! Each benchmark handles [`MESSAGES`] messages on one thread into a backlog that holds them all
//! (congestion threshold 0, so the limiter, when on, runs for every message calling an app),
//! after a first pass over the same traffic that warms the limiter's tracked keys and the key
//! cache (the counted pass is 150 s later on the messages' clock: fresh dedup generations and
//! limiter counts).

// The `library_benchmark` macros generate undocumented public modules.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use txgate_ledger::handler::{DEFAULT_APP_KEY_CACHE, HandlerConfig, Message, Source, TxHandler};
use txgate_ratelimit::{AppRateLimiter, Config};

// The ledger's test doubles, shared with its tests.
#[path = "../../crates/ledger/tests/handler_doubles/mod.rs"]
mod handler_doubles;

use handler_doubles::{AcceptAll, NothingCommitted};

// The spam generator is the criterion bench's only.
#[allow(dead_code)]
#[path = "common/gossip.rs"]
mod gossip;

/// Messages handled per benchmark.
const MESSAGES: usize = 1_000;
const T0: u64 = 1_700_000_000 * 1_000_000_000;
const GAP: u64 = 150 * 1_000_000_000;

fn feed(h: &TxHandler, msgs: &[gossip::GossipMsg], now: u64) {
    for m in msgs {
        black_box(h.handle(&Message {
            bytes: &m.bytes,
            source: Source::Peer(m.origin),
            received_ns: now,
        }));
    }
}

/// A warm handler: `limited` with `key_cache` entries (0: none), after one pass of the traffic.
fn warm(limited: bool, key_cache: usize) -> (TxHandler, Vec<gossip::GossipMsg>) {
    let msgs = gossip::messages(MESSAGES, 11);
    let limiter = limited.then(|| {
        Arc::new(
            AppRateLimiter::new(
                Config::default()
                    .with_rate_per_second(6553)
                    .with_window(Duration::from_secs(10))
                    .with_salt(Some([3; 16])),
            )
            .unwrap(),
        )
    });
    let h = TxHandler::new(
        HandlerConfig::default()
            .with_backlog_capacity(MESSAGES + 1)
            .with_congestion_pct(0)
            .with_app_rate_limiting(limited)
            .with_app_key_cache(key_cache)
            .with_dedup_salt(Some([5; 16])),
        Arc::new(NothingCommitted),
        limiter,
        Arc::new(AcceptAll),
    )
    .unwrap();
    feed(&h, &msgs, T0);
    h.drain();
    (h, msgs)
}

#[library_benchmark]
#[bench::limiter_off(warm(false, 0))]
#[bench::limiter_on(warm(true, DEFAULT_APP_KEY_CACHE))]
#[bench::limiter_on_no_key_cache(warm(true, 0))]
fn handle_1000((h, msgs): (TxHandler, Vec<gossip::GossipMsg>)) -> TxHandler {
    feed(&h, &msgs, T0 + GAP);
    h
}

library_benchmark_group!(name = handler; benchmarks = handle_1000);

main!(library_benchmark_groups = handler);
