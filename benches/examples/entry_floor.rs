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
//! - `full`: room for 2^16 keys, 41,779 other keys and 4,096 hot ones placed interleaved (70 %
//!   full: shards are chosen by app id, and 8,192 apps over 128 shards leave the fullest shard
//!   short of its room), so that a hot key sits at a random depth of a set of about 12 keys
//!   (txgate's scan skips the ways whose pointer tag differs; the entries' scan compares each
//!   key). Pairs are 8,192 apps times as many origins as it takes; the hot ones are the first
//!   4,096. The probe prints the hot keys' mean way and their sets' mean load.
//!
//! `portable-atomic` picks its 128-bit instructions at run time unless the build enables them,
//! so by default each entry load and compare-and-swap is an indirect call. Built with
//! `RUSTFLAGS="-C target-feature=+cmpxchg16b,+avx"` they are inlined (`lock cmpxchg16b`, and
//! `vmovdqa` loads, which Intel and AMD document as atomic on CPUs with AVX).
//!
//! A third mode, `evict`, prices an eviction the same way: `ratelimit_ab`'s `new_key_eviction`
//! stream (room for 2^16 keys, about 94 % of admissions evicting) through `entry_guard`'s table
//! with the steps an eviction of a lock-free design on such entries cannot do without, on one
//! thread: the guard (evictions publish a record that helpers read), the set's scan, the claim
//! of the set (a compare-and-swap of its claim word to the record), a unit of room taken while
//! the table has one (a compare-and-swap of one shared count, txgate's per shard), else a CLOCK
//! sweep over the set's keys from a place drawn from the new key's hash (a compare-and-swap per
//! reference bit it clears), the victim's entry marked with the record (a 128-bit
//! compare-and-swap from the entry the sweep read: the eviction is exact at that instant), the
//! claim read again (the record still owns the set), the marker replaced by the new key's entry,
//! and the claim word freed (a compare-and-swap). It has no helping and no record allocation
//! (one record reused), so it bounds an eviction's cost from below. A variant, `evict_node`,
//! adds txgate's node lifecycle beside each entry without reading the nodes: a node from a
//! per-thread pool for each key placed, swapped into a slot of its own (one more locked
//! instruction than a node design needs, whose slot replacement is the finalizing write), and
//! the evicted key's node retired through the collector back to the pool. It prints each side's
//! time per admission and the floors' locked instructions per admission.
//!
//! ```text
//! cargo run --release -p txgate-benches --example entry_floor -- [rounds, default 30] [sparse|full|evict]
//! ```
//!
//! Each round times `entry`, `entry_guard`, txgate, the rebuild, then the same four in reverse
//! order (20 admissions of each hot key per pass), and the probe prints each side's median time
//! per admission and the median of its per-round ratios to the rebuild. In `evict`, a round
//! times `evict`, `evict_node`, txgate, the rebuild (on one part of the stream) and the same four
//! in reverse (on the next part).

use std::hint::black_box;
use std::time::{Duration, Instant};

use portable_atomic::{AtomicU64, AtomicU128, Ordering};
use seize::Guard as _;
use strength_reduce::StrengthReducedU64;
use txgate_benches::eviction::{CAPACITY, EvictionKeys, PASS, STREAM, eviction_keys};
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
/// The marker flag of a state word (`evict`: the rest of the word names the record).
const MARKER: u64 = 1 << 63;
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

    /// The mean way of `keys` in their sets and the mean number of keys in those sets.
    fn depth(&self, keys: &[u64]) -> (f64, f64) {
        let (mut ways, mut loads) = (0, 0);
        for &key in keys {
            let set = self.set(key);
            // Relaxed: read on the thread that placed the keys.
            let taken: Vec<u64> = set
                .entries
                .iter()
                .map(|e| e.load(Ordering::Relaxed) as u64)
                .take_while(|&k| k != 0)
                .collect();
            ways += taken.iter().position(|&k| k == key).expect("a placed key");
            loads += taken.len();
        }
        let n = keys.len().max(1) as f64;
        (ways as f64 / n, loads as f64 / n)
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
            // Acquire: pairs with the Release of the compare-and-swap that last wrote the entry
            // (`place`'s Relaxed stores are on this thread).
            let mut v = entry.load(Ordering::Acquire);
            match v as u64 {
                0 => return None,
                k if k != key => continue,
                _ => {}
            }
            loop {
                let word = (v >> 64) as u64;
                if word & MARKER != 0 {
                    // An eviction or a group in flight: a real hit helps it or looks again
                    // (never here: no markers outside `evict`, one thread).
                    return None;
                }
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
                    // The key up to `MAX_LAG` intervals ahead: the caller lags (txgate's rule).
                    d if d >= INTERVAL_MASK + 1 - MAX_LAG => off = 0,
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
                    Err(seen) if seen as u64 != key => return None,
                    Err(seen) => v = seen,
                }
            }
        }
        None
    }
}

/// A heap node of the `evict_node` variant: what txgate allocates per key (24 bytes).
struct Node {
    _key: u64,
    _state: AtomicU64,
    _way: u64,
}

thread_local! {
    /// Reclaimed nodes for reuse, as txgate's per-thread pools (boxes, handed out as such).
    #[allow(clippy::vec_box)]
    static POOL: std::cell::RefCell<Vec<Box<Node>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// seize's reclaimer for a retired node: back to this thread's pool (up to 1,024, as txgate's).
///
/// # Safety
///
/// `ptr` came from `Box::into_raw`, was retired once, and no thread can reach it.
unsafe fn to_pool(ptr: *mut Node, _collector: &seize::Collector) {
    // SAFETY: the contract above.
    let node = unsafe { Box::from_raw(ptr) };
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < 1024 {
            p.push(node);
        }
    });
}

/// The `evict` mode's table: `entry_guard`'s, a shared count of the room left, and one record.
struct EvictTable {
    table: EntryTable,
    /// `evict_node`: one heap node per key beside its entry (allocated from the pool when the
    /// key is placed, retired through the collector when it is evicted), so that the variant
    /// pays txgate's node lifecycle without reading the nodes.
    nodes: Option<Box<[[std::sync::atomic::AtomicPtr<Node>; WAYS]]>>,
    /// Keys of room left beyond one per set (txgate's units, one count for the table here).
    units: AtomicU64,
    /// The one record every eviction uses (the floor allocates none).
    record: AtomicU64,
    /// Locked instructions, counted for the report (not part of the floor's work).
    locked: std::cell::Cell<u64>,
    evicted: std::cell::Cell<u64>,
}

impl EvictTable {
    fn new(capacity: usize, nodes: bool) -> Self {
        let table = EntryTable::new(capacity, true);
        let sets = table.sets.len() as u64;
        Self {
            nodes: nodes.then(|| {
                (0..sets)
                    .map(|_| std::array::from_fn(|_| std::sync::atomic::AtomicPtr::default()))
                    .collect()
            }),
            table,
            units: AtomicU64::new(capacity as u64 - sets),
            record: AtomicU64::new(0),
            locked: std::cell::Cell::new(0),
            evicted: std::cell::Cell::new(0),
        }
    }

    fn lock(&self, n: u64) {
        self.locked.set(self.locked.get() + n);
    }

    /// `evict_node`: a node for the key placed at `way` of `set`, replacing (and retiring) the
    /// evicted key's.
    fn node_lifecycle(&self, set: &Set, way: usize, guard: Option<&seize::LocalGuard<'_>>) {
        let (Some(nodes), Some(guard)) = (&self.nodes, guard) else {
            return;
        };
        let index = (std::ptr::from_ref(set) as usize - self.table.sets.as_ptr() as usize)
            / std::mem::size_of::<Set>();
        let node = POOL.with(|p| p.borrow_mut().pop()).unwrap_or_else(|| {
            Box::new(Node {
                _key: 0,
                _state: AtomicU64::new(0),
                _way: 0,
            })
        });
        // AcqRel: publishes the node and takes the old one (txgate's slot replacement).
        let old = nodes[index][way].swap(Box::into_raw(node), std::sync::atomic::Ordering::AcqRel);
        self.lock(1);
        if !old.is_null() {
            // SAFETY: `old` came from `Box::into_raw` and the swap took it out of its only
            // slot, so it is retired once; `to_pool` matches the box.
            unsafe { guard.defer_retire(old, to_pool) };
        }
    }

    /// One admission of `key` (never 0) at `now`, inserting it (and evicting when the room is
    /// gone) if missing. One thread only: no helping.
    #[inline(never)]
    fn admit(&self, key: u64, now: u64) -> bool {
        let guard = self.table.collector.as_ref().map(seize::Collector::enter);
        self.lock(1); // the guard's `leave`
        let interval = now / self.table.window;
        let interval = interval & INTERVAL_MASK;
        let set = self.table.set(key);
        // Acquire: as txgate's load of the claim word.
        if set.claim.load(Ordering::Acquire) != 0 {
            return false;
        }
        let mut len = WAYS;
        for (way, entry) in set.entries.iter().enumerate() {
            // Acquire: pairs with the Release of the write that placed the entry (one thread
            // here: what a real scan needs).
            let v = entry.load(Ordering::Acquire);
            match v as u64 {
                0 => {
                    len = way;
                    break;
                }
                k if k == key => {
                    // A key come back: a hit through `EntryTable::admit`, which takes a guard
                    // of its own (one more `leave`) and its compare-and-swap.
                    drop(guard);
                    self.lock(2);
                    return self.table.admit(key, now).unwrap_or(false);
                }
                _ => {}
            }
        }
        let record = std::ptr::from_ref(&self.record) as u64;
        // Acquire on success: the claim orders the set's reads after it; Relaxed on failure
        // (one thread: never).
        if set
            .claim
            .compare_exchange(0, record, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        self.lock(1);
        let born = pack(interval, 0, 1);
        let new = (u128::from(born) << 64) | u128::from(key);
        let mut placed = false;
        if len < WAYS {
            // Each set may always hold one key; beyond that a unit of room.
            // Relaxed: a count; the claim orders the rest.
            let mut units = self.units.load(Ordering::Relaxed);
            while len == 0 || units > 0 {
                if len == 0 {
                    placed = true;
                    break;
                }
                // Relaxed: as above.
                match self.units.compare_exchange_weak(
                    units,
                    units - 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        self.lock(1);
                        placed = true;
                        break;
                    }
                    Err(now) => units = now,
                }
            }
            if placed {
                // Release: publishes the entry's counts.
                set.entries[len].store(new, Ordering::Release);
                self.node_lifecycle(set, len, guard.as_ref());
            }
        }
        if !placed {
            // CLOCK from a place drawn from the key's hash.
            let mut way = (key >> 40) as usize % len;
            loop {
                let entry = &set.entries[way];
                // Acquire: as the scan's.
                let v = entry.load(Ordering::Acquire);
                let word = (v >> 64) as u64;
                if word & TOUCHED != 0 {
                    // Relaxed: the bit publishes nothing (txgate's sweep).
                    let cleared = v & !(u128::from(TOUCHED) << 64);
                    if entry
                        .compare_exchange(v, cleared, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                    {
                        self.lock(1);
                    }
                    way = (way + 1) % len;
                    continue;
                }
                let marked =
                    (u128::from(MARKER | (record >> 1)) << 64) | (v & u128::from(u64::MAX));
                // AcqRel: the mark is the eviction's instant; Relaxed on failure (one thread).
                if entry
                    .compare_exchange(v, marked, Ordering::AcqRel, Ordering::Relaxed)
                    .is_err()
                {
                    continue;
                }
                self.lock(1);
                // Acquire: the record still owns the set (a helper's check).
                let owned = set.claim.load(Ordering::Acquire) == record;
                assert!(owned);
                // Release: publishes the new key's counts.
                if entry
                    .compare_exchange(marked, new, Ordering::Release, Ordering::Relaxed)
                    .is_ok()
                {
                    self.lock(1);
                }
                self.evicted.set(self.evicted.get() + 1);
                self.node_lifecycle(set, way, guard.as_ref());
                break;
            }
        }
        // Release: the set's changes visible to the next claim's Acquire.
        if set
            .claim
            .compare_exchange(record, 0, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            self.lock(1);
        }
        true
    }
}

/// txgate's limiter with room for `capacity` keys, as `ratelimit_ab`'s (L = 65,530 per 10 s
/// window, 128 shards).
fn txgate(capacity: usize) -> AppRateLimiter {
    AppRateLimiter::new(
        Config::default()
            .with_max_size(capacity)
            .with_rate_per_second(6553)
            .with_window(Duration::from_nanos(WINDOW))
            .with_shards(128)
            .with_salt(Some(SALT)),
    )
    .expect("valid config")
}

/// `evict` mode: the floor, txgate and the rebuild on the `new_key_eviction` stream.
fn evict(rounds: usize) {
    let t = txgate(CAPACITY);
    let m = MutexLimiter::new(CAPACITY, LIMIT, WINDOW, SALT);
    let floors = [
        EvictTable::new(CAPACITY, false),
        EvictTable::new(CAPACITY, true),
    ];
    let EvictionKeys {
        txgate: tkeys,
        mutex: mkeys,
        hashes,
    } = eviction_keys(&SALT, &t, &m);
    let fkeys: Vec<u64> = hashes.iter().map(|&h| h.max(1)).collect();
    // The whole stream fills each side first, as `ratelimit_ab`'s fill.
    for ((tk, mk), &fk) in tkeys.iter().zip(&mkeys).zip(&fkeys) {
        let _ = t.admit_key(*tk, T0);
        black_box(m.admit_keys(std::slice::from_ref(mk), T0));
        for f in &floors {
            f.admit(fk, T0);
        }
    }
    let before: Vec<(u64, u64)> = floors
        .iter()
        .map(|f| (f.locked.get(), f.evicted.get()))
        .collect();
    let names = ["evict", "evict_node", "txgate", "mutex"];
    let mut secs: [Vec<f64>; 4] = Default::default();
    let mut passes = 0;
    for _ in 0..rounds {
        let mut round = [0.0; 4];
        for side in [0, 1, 2, 3, 3, 2, 1, 0] {
            // The four passes of each half round take the same part of the stream, the next
            // half round the next part.
            let at = (passes / 4 * PASS) % STREAM;
            passes += 1;
            let range = at..at + PASS;
            round[side] += time(|| match side {
                0 | 1 => {
                    for &k in &fkeys[range] {
                        black_box(floors[side].admit(k, T0));
                    }
                }
                2 => {
                    for k in &tkeys[range] {
                        let _ = black_box(t.admit_key(*k, T0));
                    }
                }
                _ => {
                    for k in &mkeys[range] {
                        black_box(m.admit_keys(std::slice::from_ref(k), T0));
                    }
                }
            });
        }
        for (s, r) in secs.iter_mut().zip(round) {
            s.push(r);
        }
    }
    let timed = (2 * rounds * PASS) as f64;
    println!("entry_floor (evict, {rounds} rounds):");
    for (f, (locked0, evicted0)) in floors.iter().zip(before) {
        println!(
            "  {}: evicted {:.1} % of its timed admissions, {:.2} locked instructions per admission",
            if f.nodes.is_some() {
                "evict_node"
            } else {
                "evict"
            },
            100.0 * (f.evicted.get() - evicted0) as f64 / timed,
            (f.locked.get() - locked0) as f64 / timed,
        );
    }
    for side in 0..4 {
        let ns: Vec<f64> = secs[side]
            .iter()
            .map(|s| s * 1e9 / (2.0 * PASS as f64))
            .collect();
        let ratios: Vec<f64> = (0..rounds).map(|r| secs[side][r] / secs[3][r]).collect();
        println!(
            "  {:<12} {:>6.1} ns per admission (median), / mutex {:.2} (median of per-round ratios)",
            names[side],
            median(ns),
            median(ratios)
        );
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
        Some("evict") => return evict(rounds),
        Some(other) => panic!("mode: sparse, full or evict, not {other}"),
    };
    let capacity = if full { 1 << 16 } else { 1 << 20 };
    // 70 % of the room in all (module docs).
    let cold = if full { (1 << 16) * 7 / 10 - HOT } else { 0 };
    let t = txgate(capacity);
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
    // `full`: the hot keys spread evenly among the cold ones (a hot key next whenever fewer of
    // the hot ones than of the cold ones are placed, in proportion), so that a hot key sits at
    // a random depth of its set, as a key in use does; `sparse`: the hot keys alone.
    let (mut cold, mut hot) = (cold_t.iter().zip(&cold_m), hot_t.iter().zip(&hot_m));
    let order = std::iter::from_fn(|| {
        if hot.len() * cold_t.len() >= cold.len() * hot_t.len() {
            hot.next().or_else(|| cold.next())
        } else {
            cold.next()
        }
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
    // Where the hot keys sit: the mean way among the mean set load of their sets.
    let (depth, load) = tables[0].depth(&hot_e);

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
        "entry_floor ({}, {} hot keys, {} of them in the entry tables, at way {depth:.2} of \
         {load:.2} keys per set on average, {rounds} rounds):",
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
