//! A floor for the limiter's hit with each key's state inline in its set: the `existing_key`
//! workload of `ratelimit_ab` through a bare table whose ways hold a key's 64-bit hash and its
//! state word side by side, as one 16-byte entry that a hit changes with one 128-bit
//! compare-and-swap (`lock cmpxchg16b` on x86-64, through `portable-atomic`). Timed against
//! txgate's table (one heap node per key, reached through a pointer in its set, under a seize
//! guard) and the mutex rebuild of go-algorand's limiter, in the same rounds.
//!
//! The bare table has txgate's geometry (sets of 31 ways after a claim word, two ways per key of
//! room) and window arithmetic (a 28-bit interval, 16-bit counts, the integer estimate
//! `prev * (window - offset) / window + cur + 1 <= L`, the reference bit set by the admission's
//! write). A hit scans its set's entries for the key and compare-and-swaps the entry from the
//! (key, word) it read to (key, next word): the key is part of what the compare-and-swap checks,
//! so an entry that an eviction gave to another key in between fails it, and a hit needs no
//! reclamation guard (nothing it reads is ever freed). It has no protocol for inserting,
//! evicting or group operations (the keys are placed before the timed passes, on one thread), so
//! it bounds the hit's cost and nothing more. Two tables:
//!
//! - `entry`: as described;
//! - `entry_guard`: the same with a seize guard entered and left around each admission, as
//!   txgate's, to separate what the guard costs from what the layout does.
//!
//! Two fills:
//!
//! - `sparse` (the default): the `existing_key` row as it is, 4,096 keys in room for 2^20, so
//!   a hot key is mostly alone in its set;
//! - `full`: room for 2^16 keys, 41,779 other keys placed first, then 4,096 hot ones (70 %
//!   full: shards are chosen by app id, and 8,192 apps over 128 shards leave the fullest shard
//!   short of its room), so that a hit scans a set at about 11 keys, not alone (txgate's scan
//!   skips the ways whose pointer tag differs; the entries' scan compares each key). Pairs are
//!   8,192 apps times as many origins as it takes; the hot ones are the first 4,096.
//!
//! ```text
//! cargo run --release -p txgate-benches --example entry_floor -- [rounds, default 30] [sparse|full]
//! ```
//!
//! Each round times `entry`, `entry_guard`, txgate, the rebuild, then the same four in reverse
//! order (20 admissions of each hot key per pass), and the probe prints each side's median time
//! per admission and the median of its per-round ratios to the rebuild.

use std::hint::black_box;
use std::time::{Duration, Instant};

use portable_atomic::{AtomicU64, AtomicU128, Ordering};
use strength_reduce::StrengthReducedU64;
use txgate_benches::median;
use txgate_benches::mutex_limiter::MutexLimiter;
use txgate_ratelimit::{AppKey, AppRateLimiter, Config, Origin};

const SEC: u64 = 1_000_000_000;
const WINDOW: u64 = 10 * SEC;
const T0: u64 = 1_700_000_000 * SEC;
const SALT: [u8; 16] = [7; 16];
/// `L`, as `ratelimit_ab`'s `existing_key` (6,553 per second over 10 s).
const LIMIT: u64 = 65_530;
/// Ways per set, as txgate's CLOCK sets.
const WAYS: usize = 31;
/// The interval's 28 bits.
const INTERVAL_MASK: u64 = (1 << 28) - 1;
/// How far a key's interval may be ahead of a caller's (txgate's `MAX_LAG`).
const MAX_LAG: u64 = 1 << 20;
/// The reference bit of a state word.
const TOUCHED: u64 = 1 << 62;
/// Hot keys, admitted 20 times per pass.
const HOT: u32 = 4096;

/// A claim word and 31 entries: eight cache lines, as txgate's set of 32 pointers is four.
#[repr(C, align(64))]
struct Set {
    /// Read by every hit, as txgate's claim word; never set here (no insertion protocol).
    claim: AtomicU64,
    _hand: u64,
    entries: [AtomicU128; WAYS],
}

struct EntryTable {
    sets: Box<[Set]>,
    window: StrengthReducedU64,
    collector: Option<seize::Collector>,
}

/// A state word: the interval (bits 32..60), the previous interval's count, the current one.
fn pack(interval: u64, prev: u64, cur: u64) -> u64 {
    (interval << 32) | (prev << 16) | cur
}

impl EntryTable {
    /// Room for `capacity` keys: `2 * capacity / 31` sets, rounded up.
    fn new(capacity: usize, guarded: bool) -> Self {
        Self {
            sets: (0..(2 * capacity).div_ceil(WAYS))
                .map(|_| Set {
                    claim: AtomicU64::new(0),
                    _hand: 0,
                    entries: std::array::from_fn(|_| AtomicU128::new(0)),
                })
                .collect(),
            window: StrengthReducedU64::new(WINDOW),
            collector: guarded.then(seize::Collector::new),
        }
    }

    fn set(&self, key: u64) -> &Set {
        &self.sets[((u128::from(key) * self.sets.len() as u128) >> 64) as usize]
    }

    /// Places `key` (never 0: 0 is an empty entry) with one admission at `now`; `false` if its
    /// set is full or holds it already. One thread only.
    fn place(&self, key: u64, now: u64) -> bool {
        let interval = (now / WINDOW) & INTERVAL_MASK;
        for entry in &self.set(key).entries {
            // Relaxed: one thread places every key before the timed passes.
            match entry.load(Ordering::Relaxed) {
                0 => {
                    let word = pack(interval, 0, 1) | TOUCHED;
                    // Relaxed: as above.
                    entry.store(
                        (u128::from(word) << 64) | u128::from(key),
                        Ordering::Relaxed,
                    );
                    return true;
                }
                v if v as u64 == key => return false,
                _ => {}
            }
        }
        false
    }

    /// One admission of `key` at `now`: `Some(admitted)`, or `None` if the key is not in its set.
    #[inline(never)]
    fn admit(&self, key: u64, now: u64) -> Option<bool> {
        let _guard = self.collector.as_ref().map(seize::Collector::enter);
        let (interval, offset) = StrengthReducedU64::div_rem(now, self.window);
        let interval = interval & INTERVAL_MASK;
        let set = self.set(key);
        // Acquire: as txgate's load of the claim word.
        if set.claim.load(Ordering::Acquire) != 0 {
            return None;
        }
        for entry in &set.entries {
            // Acquire: pairs with the Release of the write that placed the entry.
            let mut v = entry.load(Ordering::Acquire);
            match v as u64 {
                0 => return None,
                k if k != key => continue,
                _ => {}
            }
            loop {
                let word = (v >> 64) as u64;
                let (at, mut prev, mut cur) = (
                    (word >> 32) & INTERVAL_MASK,
                    (word >> 16) & 0xffff,
                    word & 0xffff,
                );
                let mut iv = at;
                let mut off = offset;
                match interval.wrapping_sub(at) & INTERVAL_MASK {
                    0 => {}
                    1 => (iv, prev, cur) = (interval, cur, 0),
                    d if d > INTERVAL_MASK + 1 - MAX_LAG => off = 0,
                    _ => (iv, prev, cur) = (interval, 0, 0),
                }
                let product = prev * (WINDOW - off);
                let weighted = if product == 0 {
                    0
                } else {
                    product / self.window
                };
                if weighted + cur + 1 > LIMIT {
                    return Some(false);
                }
                let next = pack(iv, prev, cur + 1) | TOUCHED;
                // Release on success: publishes the counts (txgate's hit); Acquire on failure,
                // to decide again on the newer entry.
                match entry.compare_exchange_weak(
                    v,
                    (u128::from(next) << 64) | u128::from(key),
                    Ordering::Release,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return Some(true),
                    // The entry given to another key: txgate would look the key up again.
                    Err(now) if now as u64 != key => return None,
                    Err(now) => v = now,
                }
            }
        }
        None
    }
}

fn time(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64()
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(30, |r| r.parse().expect("rounds: a number"));
    let full = match std::env::args().nth(2).as_deref() {
        None | Some("sparse") => false,
        Some("full") => true,
        Some(other) => panic!("fill: sparse or full, not {other}"),
    };
    let capacity = if full { 1 << 16 } else { 1 << 20 };
    // 70 % of the room in all (module docs).
    let cold = if full { (1 << 16) * 7 / 10 - HOT } else { 0 };
    let t = AppRateLimiter::new(
        Config::default()
            .with_max_size(capacity)
            .with_rate_per_second(6553)
            .with_window(Duration::from_nanos(WINDOW))
            .with_shards(128)
            .with_salt(Some(SALT)),
    )
    .expect("valid config");
    let m = MutexLimiter::new(capacity, LIMIT, WINDOW, SALT);
    let tables = [
        EntryTable::new(capacity, false),
        EntryTable::new(capacity, true),
    ];
    // `sparse`: the pairs of `ratelimit_ab`'s `existing_key` (64 apps, 64 origins); `full`:
    // 8,192 apps, the first 4,096 pairs hot (module docs).
    let apps = if full { 8192 } else { 64 };
    let pair = |i: u32| {
        (
            1 + u64::from(i % apps),
            Origin::from_peer_id(&(i / apps).to_le_bytes()),
        )
    };
    let keys = |range: std::ops::Range<u32>| -> (Vec<AppKey>, Vec<(usize, u64)>) {
        range
            .map(|i| {
                let (app, origin) = pair(i);
                (t.app_key(app, &origin), m.key(app, &origin))
            })
            .unzip()
    };
    let (cold_t, cold_m) = keys(HOT..HOT + cold as u32);
    let (hot_t, hot_m) = keys(0..HOT);
    // 0 is the entries' empty key.
    let entry_key = |k: &AppKey| k.hash().max(1);
    let hot_e: Vec<u64> = hot_t.iter().map(entry_key).collect();
    // `full`: the hot keys spread evenly among the cold ones, so that a hot key sits at a
    // random depth of its set, as a key in use does; `sparse`: the hot keys alone.
    let stride = cold_t.len() / hot_t.len() + 1;
    let (mut cold, mut hot) = (cold_t.iter().zip(&cold_m), hot_t.iter().zip(&hot_m));
    let order = std::iter::from_fn(|| {
        let step = if cold.len() == 0 || (hot.len() > 0 && cold.len() % stride == 0) {
            hot.next()
        } else {
            cold.next()
        };
        step.or_else(|| hot.next())
    });
    for (tk, mk) in order {
        assert!(t.admit_key(*tk, T0).is_admit());
        black_box(m.admit_keys(std::slice::from_ref(mk), T0));
        for table in &tables {
            let _ = table.place(entry_key(tk), T0);
        }
    }
    // Hot keys that found their entry set full (none expected) are left out of both entry
    // tables' passes.
    let hot_e: Vec<u64> = hot_e
        .into_iter()
        .filter(|&k| tables.iter().all(|tb| tb.admit(k, T0) == Some(true)))
        .collect();
    let evicted_before = t.stats().evicted;

    let per_pass = |n: usize| 20.0 * n as f64;
    let names = ["entry", "entry_guard", "txgate", "mutex"];
    let mut secs: [Vec<f64>; 4] = Default::default();
    let mut now = T0;
    for _ in 0..rounds {
        let mut round = [0.0; 4];
        for side in [0, 1, 2, 3, 3, 2, 1, 0] {
            now += 2 * WINDOW;
            round[side] += time(|| {
                for _ in 0..20 {
                    match side {
                        0 | 1 => {
                            for &k in &hot_e {
                                black_box(tables[side].admit(k, now));
                            }
                        }
                        2 => {
                            for k in &hot_t {
                                let _ = black_box(t.admit_key(*k, now));
                            }
                        }
                        _ => {
                            for k in &hot_m {
                                black_box(m.admit_keys(std::slice::from_ref(k), now));
                            }
                        }
                    }
                }
            });
        }
        for (s, r) in secs.iter_mut().zip(round) {
            s.push(r);
        }
    }
    assert_eq!(t.stats().evicted, evicted_before, "a hot key was evicted");
    let sizes = [hot_e.len(), hot_e.len(), hot_t.len(), hot_m.len()];
    println!(
        "entry_floor ({}, {} hot keys, {} of them in the entry tables, {rounds} rounds):",
        if full { "full" } else { "sparse" },
        HOT,
        hot_e.len()
    );
    for side in 0..4 {
        let ns: Vec<f64> = secs[side]
            .iter()
            .map(|s| s * 1e9 / (2.0 * per_pass(sizes[side])))
            .collect();
        let ratios: Vec<f64> = (0..rounds)
            .map(|r| (secs[side][r] / sizes[side] as f64) / (secs[3][r] / sizes[3] as f64))
            .collect();
        println!(
            "  {:<12} {:>6.1} ns per admission (median), / mutex {:.2} (median of per-round ratios)",
            names[side],
            median(ns),
            median(ratios)
        );
    }
}
