//! txgate-ratelimit against governor's keyed limiter (DashMap store, same `u64` keys) and a
//! baseline of go-algorand's design (`txgate_benches::mutex_limiter`: 128 mutex-protected buckets
//! of map + LRU list, blake2b keys), in one run.
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
//! - `flood_10m`: a key flood, 10 million distinct (shard, hash) keys per pass into the default
//!   limiter (`Config::default()`: 1,048,576 keys) and into the baseline of the same size, so
//!   nearly every admission evicts; the resident set after the first pass is printed (the
//!   memory stays bounded). Ten samples.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
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
    for (i, (a, o)) in pairs.iter().enumerate() {
        assert!(t.admit(&[*a], o, T0).is_admit() && m.admit(&[*a], o, T0));
        assert!(g.check_key(&gkeys[i]).is_ok());
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
    let t = txgate(1 << 20);
    let m = mutex(1 << 20);
    let o = origin(0);
    let second = (22..)
        .find(|&a| {
            t.app_key(a, &o).shard() != t.app_key(21, &o).shard()
                && m.key(a, &o).0 != m.key(21, &o).0
        })
        .unwrap();
    two_thread_group(c, "two_threads_distinct_apps", [21, second]);
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
    targets = existing_key, new_key_eviction, group16_5apps, two_threads_distinct_apps, two_threads_popular_app, flood_10m
);
criterion_main!(benches);
