//! The handler bench's rig, shared by `benches/handler.rs` and `examples/handler_variant.rs`:
//! the traffic ([`Workload`]), a handler per [`Variant`] kept across iterations ([`Rig`]) and
//! one timed iteration ([`Rig::run`]). See `benches/handler.rs`'s module docs for the shape.
//! The includer declares the `gossip` (`common/gossip.rs`) and `handler_doubles` (the ledger's
//! test doubles) modules next to this one.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::{Duration, Instant};

use txgate_algorand::synth::{SynthTxn, encode_txn_message};
use txgate_ledger::handler::{
    DEFAULT_APP_KEY_CACHE, Group, HandlerConfig, HandlerStats, Message, Outcome, PoolReject,
    PoolSink, Source, TxHandler,
};
use txgate_ratelimit::{AppRateLimiter, Config};

use super::gossip::{self, GossipMsg};
use super::handler_doubles::NothingCommitted;

/// Messages fed per iteration.
pub(crate) const MESSAGES: usize = 32_768;
/// ns since the Unix epoch at which every message is received (one limiter window).
pub(crate) const T0: u64 = 1_700_000_000 * 1_000_000_000;
/// The limiter rate at which everything is admitted: L = 6,553 x 10 s = 65,530 per key.
pub(crate) const RATE_ALL: u64 = 6553;
/// The limiter rate of the spam variant: L = 20 x 10 s = 200 per key.
pub(crate) const RATE_SPAM: u64 = 20;
/// Spam calls: ten times L.
pub(crate) const SPAM: usize = 10 * 200;

/// Accepts every group; once armed, holds the next one (the plug) until released.
#[derive(Default)]
pub(crate) struct PlugSink {
    /// 0: armed, the next group is the plug; 1: holding it; 2: passing groups through.
    pub(crate) state: Mutex<u8>,
    pub(crate) changed: Condvar,
    pub(crate) accepted: AtomicU64,
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
    pub(crate) fn set(&self, state: u8) {
        *self.state.lock().unwrap() = state;
        self.changed.notify_all();
    }

    pub(crate) fn wait_holding(&self) {
        let mut state = self.state.lock().unwrap();
        while *state != 1 {
            state = self.changed.wait(state).unwrap();
        }
    }
}

pub(crate) fn limiter(rate: u64) -> Arc<AppRateLimiter> {
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
pub(crate) enum Variant {
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
pub(crate) const GAP: u64 = 150 * 1_000_000_000;

/// Producer threads per rig.
pub(crate) const PRODUCERS: usize = 2;

/// One of a rig's producers: a thread that lives as long as the rig (a node's network threads
/// live as long as the node, and their thread-local state, such as the limiter's pooled group
/// records and the reclamation's per-thread slots, stays warm), handling its share of the
/// traffic each time it is told an iteration's clock.
struct Producer {
    go: mpsc::Sender<u64>,
    /// The CPU time the thread spent on each iteration.
    done: mpsc::Receiver<Duration>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Producer {
    /// A producer of every `PRODUCERS`-th message of `msgs` from the `part`-th on, into `h`.
    fn new(h: Arc<TxHandler>, msgs: Arc<[GossipMsg]>, part: usize) -> Self {
        let (go, go_rx) = mpsc::channel::<u64>();
        let (done_tx, done) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            while let Ok(now) = go_rx.recv() {
                let cpu = thread_cpu();
                for m in msgs.iter().skip(part).step_by(PRODUCERS) {
                    black_box(h.handle(&Message {
                        bytes: &m.bytes,
                        source: Source::Peer(m.origin),
                        received_ns: now,
                    }));
                }
                if done_tx.send(thread_cpu().saturating_sub(cpu)).is_err() {
                    return;
                }
            }
        });
        Self {
            go,
            done,
            thread: Some(thread),
        }
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        let (go, _) = mpsc::channel();
        drop(std::mem::replace(&mut self.go, go));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The calling thread's CPU time; zero where there is no thread CPU clock (the A/B pass then
/// reports wall-clock ratios only).
fn thread_cpu() -> Duration {
    txgate_benches::thread_cpu().unwrap_or_default()
}

/// What one iteration took.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timing {
    /// From telling the producers the clock to the last one's return.
    pub(crate) wall: Duration,
    /// The producers' CPU time, summed.
    pub(crate) cpu: Duration,
}

/// One handler, kept across iterations, with a worker, a plug sink and [`PRODUCERS`] producer
/// threads.
pub(crate) struct Rig {
    pub(crate) variant: Variant,
    pub(crate) h: Arc<TxHandler>,
    sink: Arc<PlugSink>,
    producers: Vec<Producer>,
    pub(crate) iteration: u64,
    before: HandlerStats,
}

impl Rig {
    /// The rig of `variant` over `w`'s traffic for it.
    pub(crate) fn new(variant: Variant, w: &Workload) -> Self {
        let capacity = w.spammed.len();
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
        let h = Arc::new(h);
        let msgs = w.shared(variant);
        Self {
            variant,
            before: h.stats(),
            producers: (0..PRODUCERS)
                .map(|part| Producer::new(h.clone(), msgs.clone(), part))
                .collect(),
            h,
            sink,
            iteration: 0,
        }
    }

    /// One iteration: plug the worker and queue one group behind it (untimed), feed the traffic
    /// from the rig's producer threads (timed, from telling them the clock to their last
    /// `handle` call's return), release and wait for the drain (untimed), check.
    pub(crate) fn run(&mut self, w: &Workload) -> Timing {
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
        let start = Instant::now();
        for p in &self.producers {
            p.go.send(now).expect("a producer thread is gone");
        }
        let cpu = self
            .producers
            .iter()
            .map(|p| p.done.recv().expect("a producer thread panicked"))
            .sum();
        let wall = start.elapsed();
        self.sink.set(2);
        while self.h.stats().processed() < self.h.stats().enqueued {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.check(w);
        Timing { wall, cpu }
    }

    /// What the last iteration must have done, from the counters' change.
    pub(crate) fn check(&mut self, w: &Workload) {
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
pub(crate) struct Workload {
    pub(crate) honest: Arc<[GossipMsg]>,
    /// `honest` with the spammer's calls interleaved.
    pub(crate) spammed: Arc<[GossipMsg]>,
    /// Honest messages that call at least one app.
    pub(crate) app_msgs: usize,
}

impl Workload {
    pub(crate) fn new() -> Self {
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
            honest: honest.into(),
            spammed: spammed.into(),
            app_msgs,
        }
    }

    pub(crate) fn msgs(&self, variant: Variant) -> &[GossipMsg] {
        self.shared(variant)
    }

    /// [`msgs`](Self::msgs), shared with producer threads.
    fn shared(&self, variant: Variant) -> &Arc<[GossipMsg]> {
        match variant {
            Variant::Spam => &self.spammed,
            _ => &self.honest,
        }
    }
}
