//! The tx handler (`txgate_ledger::handler`) with and without the app rate limiter, in one run.
//!
//! ```text
//! cargo bench -p txgate-benches --bench handler
//! ```
//!
//! Traffic: real Algorand gossip messages from the ledger's encoder
//! (`txgate_algorand::synth::encode_txn_message`), groups of 1 to 16 transactions, most calling
//! apps over a Zipf-popular set of 4,096 apps, from 4,096 peers (see `common/gossip.rs`). Each
//! iteration feeds [`MESSAGES`] distinct messages through `TxHandler::handle` from two producer
//! threads into the backlog; one worker drains it into a sink that accepts everything. The
//! backlog is held congested (the worker holds a first "plug" group until the producers are
//! done, and a second group waits behind it) and the congestion threshold is 0, so with the
//! limiter on it is consulted for every message that calls an app (each iteration checks the
//! count). The timing covers the producers' `handle` calls, where the limiter runs; the drain
//! that follows is the same in every variant and is not timed. Each variant keeps one handler
//! across iterations, [`GAP`] apart on the messages' clock, so its limiter keys and key cache
//! are warm, as in a node's steady state. Groups (`Throughput::Elements` = messages, so "thrpt"
//! is messages per second):
//!
//! - `handler/limiter_off`: the limiter off.
//! - `handler/limiter_on`: the limiter on, at a rate that admits every message (L = 65,530 per
//!   10 s window): its pure overhead, keys from the handler's key cache.
//! - `handler/limiter_on_spam`: the same traffic plus one peer sending ten times its limit for
//!   one app (L = 200; 2,000 calls): honest traffic admitted, 1,800 spam calls dropped.
//! - `handler/limiter_on_no_key_cache`: as `limiter_on`, every key derived per message with
//!   BLAKE2b-256 (go-algorand's way), to show what the cache saves.
//!
//! After the criterion groups an interleaved pass (the variants rotate within each round, so the
//! machine's noise hits them alike) prints each variant's time over `limiter_off`'s, the target
//! being `limiter_on` at most 1.05 (go-algorand measured its whole pipeline at 13 % over: 4m11s
//! vs 4m45s). Set `TXGATE_BENCH_AB_ROUNDS=0` to skip it, or to another number of rounds.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use txgate_algorand::synth::{SynthTxn, encode_txn_message};
use txgate_ledger::handler::{
    DEFAULT_APP_KEY_CACHE, Group, HandlerConfig, HandlerStats, Message, Outcome, PoolReject,
    PoolSink, Source, TxHandler,
};
use txgate_ratelimit::{AppRateLimiter, Config};

// The ledger's test doubles, shared with its tests.
#[path = "../../crates/ledger/tests/handler_doubles/mod.rs"]
mod handler_doubles;

use handler_doubles::NothingCommitted;

/// Messages fed per iteration.
const MESSAGES: usize = 32_768;
/// ns since the Unix epoch at which every message is received (one limiter window).
const T0: u64 = 1_700_000_000 * 1_000_000_000;
/// The limiter rate at which everything is admitted: L = 6,553 x 10 s = 65,530 per key.
const RATE_ALL: u64 = 6553;
/// The limiter rate of the spam variant: L = 20 x 10 s = 200 per key.
const RATE_SPAM: u64 = 20;
/// Spam calls: ten times L.
const SPAM: usize = 10 * 200;

#[path = "common/gossip.rs"]
mod gossip;

use gossip::GossipMsg;

/// Accepts every group; once armed, holds the next one (the plug) until released.
#[derive(Default)]
struct PlugSink {
    /// 0: armed, the next group is the plug; 1: holding it; 2: passing groups through.
    state: Mutex<u8>,
    changed: Condvar,
    accepted: AtomicU64,
}

impl PoolSink for PlugSink {
    fn submit(&self, _: &Group) -> Result<(), PoolReject> {
        let mut state = self.state.lock().unwrap();
        if *state == 0 {
            *state = 1;
            self.changed.notify_all();
            while *state != 2 {
                state = self.changed.wait(state).unwrap();
            }
        }
        drop(state);
        self.accepted.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

impl PlugSink {
    fn set(&self, state: u8) {
        *self.state.lock().unwrap() = state;
        self.changed.notify_all();
    }

    fn wait_holding(&self) {
        let mut state = self.state.lock().unwrap();
        while *state != 1 {
            state = self.changed.wait(state).unwrap();
        }
    }
}

fn limiter(rate: u64) -> Arc<AppRateLimiter> {
    Arc::new(
        AppRateLimiter::new(
            Config::default()
                .with_rate_per_second(rate)
                .with_window(Duration::from_secs(10))
                .with_salt(Some([3; 16])),
        )
        .unwrap(),
    )
}

/// What a rig runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    /// No limiter.
    Off,
    /// The limiter, admitting everything, keys from the handler's key cache.
    On,
    /// The limiter, admitting everything, every key derived per message (go-algorand's way).
    OnNoKeyCache,
    /// The limiter with the spammer in the traffic.
    Spam,
}

/// Gap between iterations on the messages' clock: more than two dedup intervals (60 s) and two
/// limiter windows (10 s), so every iteration starts with empty dedup generations and fresh
/// limiter counts, while the limiter's tracked keys and the key cache stay warm (a node's steady
/// state: the same peers calling the same apps).
const GAP: u64 = 150 * 1_000_000_000;

/// One handler, kept across iterations, with a worker and a plug sink.
struct Rig {
    variant: Variant,
    h: TxHandler,
    sink: Arc<PlugSink>,
    iteration: u64,
    before: HandlerStats,
}

impl Rig {
    fn new(variant: Variant, capacity: usize) -> Self {
        let sink = Arc::new(PlugSink::default());
        let limiter = match variant {
            Variant::Off => None,
            Variant::On | Variant::OnNoKeyCache => Some(limiter(RATE_ALL)),
            Variant::Spam => Some(limiter(RATE_SPAM)),
        };
        let h = TxHandler::new(
            HandlerConfig::default()
                .with_backlog_capacity(capacity + 16)
                .with_congestion_pct(0)
                .with_app_rate_limiting(limiter.is_some())
                .with_app_key_cache(if variant == Variant::OnNoKeyCache {
                    0
                } else {
                    DEFAULT_APP_KEY_CACHE
                })
                .with_dedup_salt(Some([5; 16])),
            Arc::new(NothingCommitted),
            limiter,
            sink.clone(),
        )
        .unwrap();
        h.start_workers(1).unwrap();
        Self {
            variant,
            before: h.stats(),
            h,
            sink,
            iteration: 0,
        }
    }

    /// One iteration: plug the worker and queue one group behind it (untimed), feed the traffic
    /// from two producer threads (timed), release and wait for the drain (untimed), check.
    fn run(&mut self, w: &Workload) -> Duration {
        self.iteration += 1;
        let now = T0 + self.iteration * GAP;
        self.sink.set(0);
        for note in ["plug", "anchor"] {
            let t = SynthTxn {
                note: format!("{note}{}", self.iteration).into_bytes(),
                ..SynthTxn::payment([1; 32], 1, 1001)
            };
            let bytes = encode_txn_message(&[t], gossip::GENESIS_ID, &gossip::GENESIS_HASH);
            let m = Message {
                bytes: &bytes,
                source: Source::Local,
                received_ns: now,
            };
            assert_eq!(self.h.handle(&m), Outcome::Enqueued);
            if note == "plug" {
                self.sink.wait_holding();
            }
        }
        assert_eq!(self.h.backlog_len(), 1);
        let msgs = w.msgs(self.variant);
        let h = &self.h;
        let start = Instant::now();
        std::thread::scope(|s| {
            for part in 0..2 {
                s.spawn(move || {
                    for m in msgs.iter().skip(part).step_by(2) {
                        black_box(h.handle(&Message {
                            bytes: &m.bytes,
                            source: Source::Peer(m.origin),
                            received_ns: now,
                        }));
                    }
                });
            }
        });
        let elapsed = start.elapsed();
        self.sink.set(2);
        while self.h.stats().processed() < self.h.stats().enqueued {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.check(w);
        elapsed
    }

    /// What the last iteration must have done, from the counters' change.
    fn check(&mut self, w: &Workload) {
        let (a, b) = (self.before, self.h.stats());
        self.before = b;
        let fed = w.msgs(self.variant).len() as u64;
        let d = |f: fn(&HandlerStats) -> u64| f(&b) - f(&a);
        assert_eq!(d(HandlerStats::handled), fed + 2);
        assert_eq!(d(|s| s.duplicate), 0);
        let checks = d(|s| s.limiter_checks);
        match self.variant {
            Variant::Off => assert_eq!((d(|s| s.enqueued), checks), (fed + 2, 0)),
            Variant::On | Variant::OnNoKeyCache => {
                assert_eq!(d(|s| s.enqueued), fed + 2);
                assert_eq!(checks, w.app_msgs as u64, "the limiter skipped a message");
            }
            Variant::Spam => {
                assert_eq!(checks, (w.app_msgs + SPAM) as u64);
                assert_eq!(
                    d(|s| s.rate_limited),
                    SPAM as u64 - 200,
                    "only spam beyond L drops"
                );
            }
        }
        assert_eq!(self.sink.accepted.load(Ordering::Relaxed), b.enqueued);
    }
}

/// The traffic of every variant, built once.
struct Workload {
    honest: Vec<GossipMsg>,
    /// `honest` with the spammer's calls interleaved.
    spammed: Vec<GossipMsg>,
    /// Honest messages that call at least one app.
    app_msgs: usize,
}

impl Workload {
    fn new() -> Self {
        let honest = gossip::messages(MESSAGES, 11);
        let app_msgs = honest.iter().filter(|m| !m.apps.is_empty()).count();
        // The spam check counts only the spammer's drops: no honest (peer, app) pair may reach
        // the spam variant's L.
        let mut pairs = std::collections::HashMap::new();
        for m in &honest {
            for &a in &m.apps {
                *pairs.entry((m.origin, a)).or_insert(0u32) += 1;
            }
        }
        let busiest = pairs.values().copied().max().unwrap_or(0);
        assert!(busiest < 200, "an honest pair sends {busiest} calls");
        let spam = gossip::spam(SPAM, gossip::peer(gossip::PEERS), gossip::FIRST_APP);
        let every = honest.len() / SPAM;
        let mut spammed = Vec::with_capacity(honest.len() + SPAM);
        let mut spam = spam.into_iter();
        for (i, m) in honest.iter().enumerate() {
            spammed.push(m.clone());
            if i % every == every - 1 {
                spammed.extend(spam.next());
            }
        }
        spammed.extend(spam);
        Self {
            honest,
            spammed,
            app_msgs,
        }
    }

    fn msgs(&self, variant: Variant) -> &[GossipMsg] {
        match variant {
            Variant::Spam => &self.spammed,
            _ => &self.honest,
        }
    }
}

fn handler(c: &mut Criterion) {
    let w = Workload::new();
    let bytes: usize = w.honest.iter().map(|m| m.bytes.len()).sum::<usize>() / w.honest.len();
    let keys: std::collections::HashSet<_> = w
        .honest
        .iter()
        .flat_map(|m| m.apps.iter().map(move |a| (m.origin, *a)))
        .collect();
    println!(
        "handler bench: {} messages ({} call apps; {} bytes on average; {} distinct (peer, app) \
         pairs), {} spam calls",
        w.honest.len(),
        w.app_msgs,
        bytes,
        keys.len(),
        SPAM
    );
    let capacity = w.spammed.len();
    let mut g = c.benchmark_group("handler");
    g.sample_size(10);
    for (name, variant) in [
        ("limiter_off", Variant::Off),
        ("limiter_on", Variant::On),
        ("limiter_on_spam", Variant::Spam),
        ("limiter_on_no_key_cache", Variant::OnNoKeyCache),
    ] {
        let mut rig = Rig::new(variant, capacity);
        g.throughput(Throughput::Elements(w.msgs(variant).len() as u64));
        g.bench_function(name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| rig.run(&w)).sum())
        });
        if variant == Variant::Spam && rig.iteration > 0 {
            let st = rig.h.stats();
            let per_iteration = st.rate_limited / rig.iteration;
            println!(
                "handler/limiter_on_spam: {:.2} % of messages dropped by the limiter ({} of {} per \
                 iteration; the spam beyond L is {})",
                100.0 * st.rate_limited as f64 / (st.handled() - 2 * rig.iteration) as f64,
                per_iteration,
                w.spammed.len(),
                SPAM - 200
            );
        }
    }
    g.finish();
    ab(&w, capacity);
}

/// The interleaved A/B pass (see the module docs).
fn ab(w: &Workload, capacity: usize) {
    let rounds: usize = std::env::var("TXGATE_BENCH_AB_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    if rounds == 0 {
        return;
    }
    let variants = [Variant::Off, Variant::On, Variant::OnNoKeyCache];
    let mut rigs: Vec<Rig> = variants.iter().map(|&v| Rig::new(v, capacity)).collect();
    for rig in &mut rigs {
        rig.run(w); // warm: keys tracked, cache filled
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    for round in 0..rounds {
        // Rotate the order, so drift over the run hits every variant alike.
        let mut t = vec![0.0; variants.len()];
        for k in 0..variants.len() {
            let i = (round + k) % variants.len();
            t[i] = rigs[i].run(w).as_secs_f64();
        }
        for i in 0..variants.len() {
            times[i].push(t[i]);
            ratios[i].push(t[i] / t[0]);
        }
    }
    let sorted = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v
    };
    let n = w.honest.len() as f64;
    println!(
        "handler A/B over {rounds} interleaved rounds (producers' time; target on/off <= 1.05):"
    );
    for (i, name) in ["limiter_off", "limiter_on", "limiter_on_no_key_cache"]
        .iter()
        .enumerate()
    {
        let (r, t) = (sorted(&ratios[i]), sorted(&times[i]));
        println!(
            "  {name:<24} {:>9.0} messages/s (median)   / limiter_off: {:.3} (median; quartiles \
             {:.3}..{:.3})",
            n / t[t.len() / 2],
            r[r.len() / 2],
            r[r.len() / 4],
            r[3 * r.len() / 4]
        );
    }
}

criterion_group!(benches, handler);
criterion_main!(benches);
