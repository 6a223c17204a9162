//! txgate-ratelimit against governor's keyed limiter (DashMap store, same `u64` keys), rate-net's
//! keyed limiter (`ratenet_*` rows: its sliding-window counter, 128 shards each an `RwLock`
//! around a map, CLOCK eviction with debt records for evicted keys that still owe, the same 8
//! key bytes, time on a manual clock stepped as txgate's) and a baseline of go-algorand's design
//! (`txgate_benches::mutex_limiter`: 128 mutex-protected buckets of map + LRU list, blake2b
//! keys), in one run.
//!
//! ```text
//! cargo bench -p txgate-benches --bench ratelimit -- --warm-up-time 1 --measurement-time 3
//! ```
//! Groups (each iteration is a pass over a fixed, seeded slice of operations;
//! `Throughput::Elements` = operations per pass, so criterion's "thrpt" is admissions per second
//! and time / elements is ns per admission):
//! - `existing_key`: 4,096 tracked (app, origin) pairs, admitted round-robin; with pre-derived
//!   keys and with blake2b derivation on every call.
//! - `new_key_eviction`: 65,536 keys of capacity, a uniform stream over 2^20 pairs: about 94% of
//!   operations insert a new key into a full table and evict one (as upstream measured; the
//!   measured share is printed).
//!   governor has no bound and no eviction; its numbers are inserts into a growing map.
//! - `group16_5apps`: a 16-transaction group calling 5 distinct apps, from 256 origins.
//! - `two_threads_distinct_apps` / `two_threads_popular_app`: 2 threads, 2,048 senders each, on
//!   two apps in different shards / on one app (one shard for txgate, one bucket upstream).
//! - `group2`: 3,072 groups of two apps each (apps in different shards and buckets), one origin
//!   per group, keys pre-derived; the second app's key of every third group is at its limit
//!   (L = 10), so a third of the groups are dropped and the rest admitted. Each pass runs in a
//!   fresh window and, untimed before it, fills those keys to the limit again. txgate admits a
//!   group all-or-nothing (`admit_keys`); the mutex row is go-algorand's `shouldDropKeys`
//!   (`MutexLimiter::should_drop_keys`: a dropped group's first key is counted, as upstream);
//!   rate-net has no groups, so its row checks the two keys in turn and stops at the first
//!   denial (upstream's semantics: the first key's unit stays spent).
//! - `drop`: one key at its limit (L = 10), hit 4,096 times per pass in its window: every call
//!   is dropped and changes no count (`admit_key`; upstream's `shouldDropKeys` of one key;
//!   rate-net's `check_bytes`).
//!
//! The rate-net rows: `existing_key`, `new_key_eviction`, `group2` and `drop`, all
//! `ratenet_prederived` (the salted 8-byte hash as the key, `check_bytes`). In
//! `new_key_eviction` its capacity is the same 65,536 keys and an evicted key that still owes
//! leaves a debt record; `ratenet_prederived` there forgets the debts its recovery table cannot
//! hold (`Overflow::Forget`), so newcomers are admitted and evict as in txgate and go-algorand;
//! `ratenet_failclosed_prederived` keeps its default `Overflow::FailClosed`, under which a
//! full shard that can neither evict nor record a debt refuses the newcomer (the share of
//! denials of each is printed). Its sliding-window counter decides `prev * (W - offset) / W + cur + 1 <= L`
//! exactly in rationals where txgate floors the weighted term: decisions can differ at
//! fractional estimates, never in these workloads (every pass starts at a window boundary).
//! - `flood_10m`: a key flood, 10 million distinct (shard, hash) keys per pass into the default
//!   limiter (`Config::default()`: 1,048,576 keys) and into the baseline of the same size, so
//!   nearly every admission evicts; the resident set after the first pass is printed (the
//!   memory stays bounded). Ten samples.

use std::hint::black_box;
use std::time::{Duration, Instant};

use std::sync::Arc;

use clock_lib::ManualClock;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use rate_net::{Algorithm, Eviction, Overflow};
use txgate_benches::eviction::{CAPACITY, EvictionKeys, PASS, STREAM, eviction_keys, origin};
use txgate_benches::mutex_limiter::MutexLimiter;
use txgate_ratelimit::{AppKey, AppRateLimiter, Config, Origin};
use txgate_testkit::rng::SplitMix64;

const SEC: u64 = 1_000_000_000;
const WINDOW: u64 = 10 * SEC;
const T0: u64 = 1_700_000_000 * SEC;
/// L = 6,553/s x 10 s = 65,530: admissions stay admissions for the length of a bench.
const RATE: u64 = 6553;
const SALT: [u8; 16] = [7; 16];

fn txgate(max_size: usize) -> AppRateLimiter {
    AppRateLimiter::new(
        Config::default()
            .with_max_size(max_size)
            .with_rate_per_second(RATE)
            .with_window(Duration::from_nanos(WINDOW))
            .with_shards(128)
            .with_salt(Some(SALT)),
    )
    .unwrap()
}

fn mutex(max_size: usize) -> MutexLimiter {
    MutexLimiter::new(max_size, RATE * 10, WINDOW, SALT)
}

fn governor() -> DefaultKeyedRateLimiter<u64> {
    RateLimiter::dashmap(Quota::per_second(std::num::NonZeroU32::MAX))
}

/// rate-net's keyed limiter on a manual clock: the sliding-window counter, `limit` per window
/// (the same 10 s), 128 shards, room for `max_keys`.
struct RateNet {
    limiter: rate_net::RateLimiter<Arc<ManualClock>>,
    clock: Arc<ManualClock>,
}

impl RateNet {
    fn new(max_keys: usize, limit: u64) -> Self {
        Self::with_overflow(max_keys, limit, Overflow::default())
    }

    /// [`RateNet::new`] with an explicit policy for debts its recovery table cannot hold.
    fn with_overflow(max_keys: usize, limit: u64, overflow: Overflow) -> Self {
        let clock = Arc::new(ManualClock::new());
        let limiter = rate_net::RateLimiter::builder()
            .algorithm(Algorithm::SlidingWindowCounter)
            .quota(u32::try_from(limit).unwrap(), Duration::from_nanos(WINDOW))
            .shards(128)
            .eviction(Eviction::capacity(max_keys).with_overflow(overflow))
            .clock(Arc::clone(&clock))
            .try_build()
            .unwrap();
        Self { limiter, clock }
    }

    /// One check of the key `hash` (its 8 little-endian bytes); `true` if allowed.
    #[inline]
    fn check(&self, key: &[u8; 8]) -> bool {
        self.limiter.check_bytes(key).is_allow()
    }

    /// The next pass's time: two windows on, as [`Clock::next`] (the manual clock starts at the
    /// limiter's epoch, a window boundary).
    fn next_pass(&self) {
        self.clock.advance(Duration::from_nanos(2 * WINDOW));
    }
}

/// A fresh `now` per pass (two windows apart), so counts restart instead of saturating.
struct Clock(u64);
impl Clock {
    fn next(&mut self) -> u64 {
        self.0 += 2 * WINDOW;
        self.0
    }
}

fn existing_key(c: &mut Criterion) {
    const N: u32 = 4096;
    let pairs: Vec<(u64, Origin)> = (0..N)
        .map(|i| (1 + u64::from(i % 64), origin(i / 64)))
        .collect();
    let t = txgate(1 << 20);
    let m = mutex(1 << 20);
    let g = governor();
    let tkeys: Vec<AppKey> = pairs.iter().map(|(a, o)| t.app_key(*a, o)).collect();
    let mkeys: Vec<(usize, u64)> = pairs.iter().map(|(a, o)| m.key(*a, o)).collect();
    let gkeys: Vec<u64> = tkeys.iter().map(AppKey::hash).collect();
    let r = RateNet::new(1 << 20, RATE * 10);
    let rkeys: Vec<[u8; 8]> = gkeys.iter().map(|h| h.to_le_bytes()).collect();
    for (i, (a, o)) in pairs.iter().enumerate() {
        assert!(t.admit(&[*a], o, T0).is_admit() && m.admit(&[*a], o, T0));
        assert!(g.check_key(&gkeys[i]).is_ok() && r.check(&rkeys[i]));
    }
    let mut grp = c.benchmark_group("ratelimit/existing_key");
    grp.throughput(Throughput::Elements(u64::from(N)));
    let mut clock = Clock(T0);
    grp.bench_function("txgate_prederived", |b| {
        b.iter(|| {
            let now = clock.next();
            for k in &tkeys {
                let _ = black_box(t.admit_key(*k, now));
            }
        })
    });
    grp.bench_function("txgate_derive_blake2b", |b| {
        b.iter(|| {
            let now = clock.next();
            for (a, o) in &pairs {
                let _ = black_box(t.admit(&[*a], o, now));
            }
        })
    });
    grp.bench_function("governor_dashmap", |b| {
        b.iter(|| {
            for k in &gkeys {
                let _ = black_box(g.check_key(k));
            }
        })
    });
    grp.bench_function("mutex_prederived", |b| {
        b.iter(|| {
            let now = clock.next();
            for k in &mkeys {
                let _ = black_box(m.admit_keys(std::slice::from_ref(k), now));
            }
        })
    });
    grp.bench_function("mutex_derive_blake2b", |b| {
        b.iter(|| {
            let now = clock.next();
            for (a, o) in &pairs {
                let _ = black_box(m.admit(&[*a], o, now));
            }
        })
    });
    grp.bench_function("ratenet_prederived", |b| {
        b.iter(|| {
            r.next_pass();
            for k in &rkeys {
                let _ = black_box(r.check(k));
            }
        })
    });
    grp.finish();
}

fn new_key_eviction(c: &mut Criterion) {
    let t = txgate(CAPACITY);
    let m = mutex(CAPACITY);
    let g = governor();
    let EvictionKeys {
        txgate: tkeys,
        mutex: mkeys,
        hashes: gkeys,
    } = eviction_keys(&SALT, &t, &m);
    // Fill, then report the share of operations that evict in steady state.
    for k in &tkeys {
        let _ = t.admit_key(*k, T0);
    }
    let before = t.stats().evicted;
    for k in &tkeys[..PASS] {
        let _ = t.admit_key(*k, T0);
    }
    let s = t.stats();
    eprintln!(
        "new_key_eviction: {:.1}% of txgate admissions evicted; {} of {} keys tracked",
        100.0 * (s.evicted - before) as f64 / PASS as f64,
        s.entries,
        CAPACITY
    );
    // rate-net forgetting the debts its recovery table cannot hold (`Overflow::Forget`: evicts
    // as txgate and go-algorand do), and with its default (`FailClosed`: a full shard that can
    // neither evict nor record a debt refuses the newcomer).
    let rkeys: Vec<[u8; 8]> = gkeys.iter().map(|h| h.to_le_bytes()).collect();
    let [r, rf] = [Overflow::Forget, Overflow::FailClosed].map(|overflow| {
        let r = RateNet::with_overflow(CAPACITY, RATE * 10, overflow);
        for k in &rkeys {
            let _ = r.check(k);
        }
        let denied = rkeys[..PASS].iter().filter(|k| !r.check(k)).count();
        eprintln!(
            "new_key_eviction: rate-net ({overflow:?}) denied {denied} of {PASS} checks of a \
             pass; {} keys tracked",
            r.limiter.tracked_keys()
        );
        r
    });
    let mut grp = c.benchmark_group("ratelimit/new_key_eviction");
    grp.throughput(Throughput::Elements(PASS as u64));
    let mut pass = 0;
    let mut next = move || {
        pass = (pass + PASS) % STREAM;
        pass..pass + PASS
    };
    grp.bench_function("txgate_prederived", |b| {
        b.iter(|| {
            for k in &tkeys[next()] {
                let _ = black_box(t.admit_key(*k, T0));
            }
        })
    });
    grp.bench_function("mutex_prederived", |b| {
        b.iter(|| {
            for k in &mkeys[next()] {
                let _ = black_box(m.admit_keys(std::slice::from_ref(k), T0));
            }
        })
    });
    grp.bench_function("governor_dashmap_unbounded", |b| {
        b.iter(|| {
            for k in &gkeys[next()] {
                let _ = black_box(g.check_key(k));
            }
        })
    });
    grp.bench_function("ratenet_prederived", |b| {
        b.iter(|| {
            for k in &rkeys[next()] {
                let _ = black_box(r.check(k));
            }
        })
    });
    grp.bench_function("ratenet_failclosed_prederived", |b| {
        b.iter(|| {
            for k in &rkeys[next()] {
                let _ = black_box(rf.check(k));
            }
        })
    });
    grp.finish();
}

fn group16_5apps(c: &mut Criterion) {
    const ORIGINS: u32 = 256;
    let apps16: [u64; 16] = [
        11, 12, 13, 14, 15, 11, 12, 13, 14, 15, 11, 12, 13, 14, 15, 11,
    ];
    let origins: Vec<Origin> = (0..ORIGINS).map(origin).collect();
    let t = txgate(1 << 20);
    let m = mutex(1 << 20);
    let g = governor();
    let tkeys: Vec<[AppKey; 5]> = origins
        .iter()
        .map(|o| [11, 12, 13, 14, 15].map(|a| t.app_key(a, o)))
        .collect();
    let mut grp = c.benchmark_group("ratelimit/group16_5apps");
    grp.throughput(Throughput::Elements(u64::from(ORIGINS)));
    let mut clock = Clock(T0);
    grp.bench_function("txgate_derive_blake2b", |b| {
        b.iter(|| {
            let now = clock.next();
            for o in &origins {
                let _ = black_box(t.admit(&apps16, o, now));
            }
        })
    });
    grp.bench_function("txgate_prederived", |b| {
        b.iter(|| {
            let now = clock.next();
            for k in &tkeys {
                let _ = black_box(t.admit_keys(k, now));
            }
        })
    });
    grp.bench_function("mutex_derive_blake2b", |b| {
        b.iter(|| {
            let now = clock.next();
            for o in &origins {
                let _ = black_box(m.admit(&apps16, o, now));
            }
        })
    });
    grp.bench_function("governor_5_checks", |b| {
        b.iter(|| {
            for k in &tkeys {
                for k in k {
                    let _ = black_box(g.check_key(&k.hash()));
                }
            }
        })
    });
    grp.finish();
}

/// L = 10 per window for the `group2` and `drop` rows: small enough to refill untimed each pass.
const SMALL_RATE: u64 = 1;

/// `txgate(max_size)` with L = 10.
fn txgate_small(max_size: usize) -> AppRateLimiter {
    AppRateLimiter::new(
        Config::default()
            .with_max_size(max_size)
            .with_rate_per_second(SMALL_RATE)
            .with_window(Duration::from_nanos(WINDOW))
            .with_shards(128)
            .with_salt(Some(SALT)),
    )
    .unwrap()
}

/// Two apps whose shards (in `t`) and buckets (in `m`) differ, the first from `first` on.
fn distinct_apps(t: &AppRateLimiter, m: &MutexLimiter, first: u64) -> [u64; 2] {
    let o = origin(0);
    let second = (first + 1..)
        .find(|&a| {
            t.app_key(a, &o).shard() != t.app_key(first, &o).shard()
                && m.key(a, &o).0 != m.key(first, &o).0
        })
        .unwrap();
    [first, second]
}

fn group2(c: &mut Criterion) {
    const GROUPS: u32 = 3072;
    let t = txgate_small(1 << 20);
    let m = MutexLimiter::new(1 << 20, SMALL_RATE * 10, WINDOW, SALT);
    let limit = t.limit();
    assert_eq!(limit, 10);
    let apps = distinct_apps(&t, &m, 41);
    let origins: Vec<Origin> = (0..GROUPS).map(origin).collect();
    let tkeys: Vec<[AppKey; 2]> = origins
        .iter()
        .map(|o| apps.map(|a| t.app_key(a, o)))
        .collect();
    let mkeys: Vec<[(usize, u64); 2]> = origins.iter().map(|o| apps.map(|a| m.key(a, o))).collect();
    // Every third group's second key is filled to the limit in the pass's window.
    let full = |i: usize| i.is_multiple_of(3);
    let cost = std::num::NonZeroU32::new(u32::try_from(limit).unwrap()).unwrap();
    let fill_txgate = |now| {
        for k in tkeys.iter().step_by(3) {
            assert!(t.admit_keys_n(&k[1..], cost, now).unwrap().is_admit());
        }
    };
    let fill_mutex = |now| {
        for k in mkeys.iter().step_by(3) {
            for _ in 0..limit {
                assert!(!m.should_drop_keys(&k[1..], now));
            }
        }
    };
    let r = RateNet::new(1 << 20, limit);
    let rkeys: Vec<[[u8; 8]; 2]> = tkeys
        .iter()
        .map(|k| k.map(|k| k.hash().to_le_bytes()))
        .collect();
    let fill_ratenet = || {
        for k in rkeys.iter().step_by(3) {
            assert!(r.limiter.check_n_bytes(k[1], cost.get()).is_allow());
        }
    };
    // A group in rate-net: the keys in turn, the first denial drops it.
    let ratenet_group = |k: &[[u8; 8]; 2]| k.iter().all(|k| r.check(k));
    // Check the workload once: a third dropped, the rest admitted, on each.
    let now = T0 + 2 * WINDOW;
    fill_txgate(now);
    fill_mutex(now);
    r.next_pass();
    fill_ratenet();
    for (i, ((tk, mk), rk)) in tkeys.iter().zip(&mkeys).zip(&rkeys).enumerate() {
        assert_eq!(t.admit_keys(tk, now).is_drop(), full(i), "txgate group {i}");
        assert_eq!(m.should_drop_keys(mk, now), full(i), "mutex group {i}");
        assert_eq!(!ratenet_group(rk), full(i), "rate-net group {i}");
    }
    let mut grp = c.benchmark_group("ratelimit/group2");
    grp.throughput(Throughput::Elements(u64::from(GROUPS)));
    let mut clock = Clock(now);
    grp.bench_function("txgate_prederived", |b| {
        b.iter_custom(|iters| {
            let mut time = Duration::ZERO;
            for _ in 0..iters {
                let now = clock.next();
                fill_txgate(now);
                let start = Instant::now();
                for k in &tkeys {
                    let _ = black_box(t.admit_keys(k, now));
                }
                time += start.elapsed();
            }
            time
        })
    });
    grp.bench_function("mutex_prederived", |b| {
        b.iter_custom(|iters| {
            let mut time = Duration::ZERO;
            for _ in 0..iters {
                let now = clock.next();
                fill_mutex(now);
                let start = Instant::now();
                for k in &mkeys {
                    let _ = black_box(m.should_drop_keys(k, now));
                }
                time += start.elapsed();
            }
            time
        })
    });
    grp.bench_function("ratenet_prederived", |b| {
        b.iter_custom(|iters| {
            let mut time = Duration::ZERO;
            for _ in 0..iters {
                r.next_pass();
                fill_ratenet();
                let start = Instant::now();
                for k in &rkeys {
                    let _ = black_box(ratenet_group(k));
                }
                time += start.elapsed();
            }
            time
        })
    });
    grp.finish();
}

fn drop_at_limit(c: &mut Criterion) {
    const HITS: u64 = 4096;
    let t = txgate_small(1 << 20);
    let m = MutexLimiter::new(1 << 20, SMALL_RATE * 10, WINDOW, SALT);
    let o = origin(0);
    let (tk, mk) = (t.app_key(51, &o), m.key(51, &o));
    // Fill both to the limit at T0; every later call at T0 is a drop.
    for _ in 0..t.limit() {
        assert!(t.admit_key(tk, T0).is_admit());
        assert!(!m.should_drop_keys(&[mk], T0));
    }
    assert!(t.admit_key(tk, T0).is_drop() && m.should_drop_keys(&[mk], T0));
    let r = RateNet::new(1 << 20, t.limit());
    let rk = tk.hash().to_le_bytes();
    assert!(
        r.limiter
            .check_n_bytes(rk, u32::try_from(t.limit()).unwrap())
            .is_allow()
            && !r.check(&rk)
    );
    let mut grp = c.benchmark_group("ratelimit/drop");
    grp.throughput(Throughput::Elements(HITS));
    grp.bench_function("txgate_prederived", |b| {
        b.iter(|| {
            for _ in 0..HITS {
                let _ = black_box(t.admit_key(black_box(tk), T0));
            }
        })
    });
    grp.bench_function("mutex_prederived", |b| {
        b.iter(|| {
            for _ in 0..HITS {
                let _ = black_box(m.should_drop_keys(&[black_box(mk)], T0));
            }
        })
    });
    grp.bench_function("ratenet_prederived", |b| {
        b.iter(|| {
            for _ in 0..HITS {
                let _ = black_box(r.check(black_box(&rk)));
            }
        })
    });
    grp.finish();
}

/// Runs `op(thread, i)` for `i in 0..iters * per_iter` on 2 threads; returns the wall time.
fn two_threads(iters: u64, op: &(dyn Fn(usize, usize) + Sync)) -> Duration {
    let barrier = std::sync::Barrier::new(2);
    let times: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    for i in 0..iters as usize {
                        op(t, i);
                    }
                    start.elapsed()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    times.into_iter().max().unwrap()
}

fn two_thread_group(c: &mut Criterion, name: &str, apps: [u64; 2]) {
    const SENDERS: u32 = 2048;
    const PASS: usize = SENDERS as usize;
    let t = txgate(1 << 20);
    let m = mutex(1 << 20);
    let g = governor();
    let pairs: Vec<Vec<(u64, Origin)>> = (0..2)
        .map(|th| {
            (0..SENDERS)
                .map(|i| (apps[th], origin(th as u32 * SENDERS + i)))
                .collect()
        })
        .collect();
    let tkeys: Vec<Vec<AppKey>> = pairs
        .iter()
        .map(|p| p.iter().map(|(a, o)| t.app_key(*a, o)).collect())
        .collect();
    let mkeys: Vec<Vec<(usize, u64)>> = pairs
        .iter()
        .map(|p| p.iter().map(|(a, o)| m.key(*a, o)).collect())
        .collect();
    let gkeys: Vec<Vec<u64>> = tkeys
        .iter()
        .map(|k| k.iter().map(AppKey::hash).collect())
        .collect();
    eprintln!(
        "{name}: txgate shards {:?}, upstream buckets {:?}",
        [tkeys[0][0].shard(), tkeys[1][0].shard()],
        [mkeys[0][0].0, mkeys[1][0].0]
    );
    let mut grp = c.benchmark_group(format!("ratelimit/{name}"));
    grp.throughput(Throughput::Elements(2 * PASS as u64));
    grp.bench_function("txgate_prederived", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|th, i| {
                let now = T0 + i as u64 * 2 * WINDOW;
                for k in &tkeys[th] {
                    let _ = black_box(t.admit_key(*k, now));
                }
            })
        })
    });
    grp.bench_function("mutex_prederived", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|th, i| {
                let now = T0 + i as u64 * 2 * WINDOW;
                for k in &mkeys[th] {
                    let _ = black_box(m.admit_keys(std::slice::from_ref(k), now));
                }
            })
        })
    });
    grp.bench_function("governor_dashmap", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|th, _| {
                for k in &gkeys[th] {
                    let _ = black_box(g.check_key(k));
                }
            })
        })
    });
    grp.finish();
}

fn two_threads_distinct_apps(c: &mut Criterion) {
    // Two apps whose shard (txgate) and bucket (upstream) differ.
    let apps = distinct_apps(&txgate(1 << 20), &mutex(1 << 20), 21);
    two_thread_group(c, "two_threads_distinct_apps", apps);
}

fn two_threads_popular_app(c: &mut Criterion) {
    two_thread_group(c, "two_threads_popular_app", [31, 31]);
}

/// Resident set size in bytes (Linux `/proc/self/statm`), if available.
fn rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// The `i`-th key of the flood: output `i + 1` of the SplitMix64 stream from 0, and a shard from
/// its low bits.
#[inline]
fn flood_key(i: u64) -> (u32, u64) {
    let z = SplitMix64(0).nth_output(i + 1);
    ((z & 127) as u32, z)
}

fn flood_10m(c: &mut Criterion) {
    const PASS: u64 = 10_000_000;
    let t = AppRateLimiter::new(Config::default().with_salt(Some(SALT))).unwrap();
    let m = MutexLimiter::new(1 << 20, 1000, WINDOW, SALT);
    let mut grp = c.benchmark_group("ratelimit/flood_10m");
    grp.sample_size(10);
    grp.warm_up_time(Duration::from_millis(1));
    grp.measurement_time(Duration::from_secs(20));
    grp.throughput(Throughput::Elements(PASS));
    let before = rss();
    let mut next = 0u64;
    grp.bench_function("txgate_prederived", |b| {
        b.iter(|| {
            for i in next..next + PASS {
                let (shard, hash) = flood_key(i);
                let _ = black_box(t.admit_key(AppKey::from_parts(shard, hash), T0));
            }
            next += PASS;
        })
    });
    let after_txgate = rss();
    grp.bench_function("mutex_prederived", |b| {
        b.iter(|| {
            for i in next..next + PASS {
                let (shard, hash) = flood_key(i);
                let _ = black_box(m.admit_keys(&[(shard as usize, hash)], T0));
            }
            next += PASS;
        })
    });
    grp.finish();
    let s = t.stats();
    eprintln!(
        "flood_10m: txgate tracks {} keys (max_size {}), evicted {}; mutex baseline {} keys",
        s.entries,
        t.config().max_size,
        s.evicted,
        m.entries()
    );
    if let (Some(b), Some(a), Some(end)) = (before, after_txgate, rss()) {
        eprintln!(
            "flood_10m: resident set {:.0} MiB before, {:.0} MiB after txgate's passes, {:.0} MiB after the baseline's",
            b as f64 / 1048576.0,
            a as f64 / 1048576.0,
            end as f64 / 1048576.0
        );
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
}

criterion_group!(
    name = benches;
    config = config();
    targets = existing_key, new_key_eviction, group16_5apps, group2, drop_at_limit, two_threads_distinct_apps, two_threads_popular_app, flood_10m
);
criterion_main!(benches);
