//! A floor for the limiter's two-app group: the `group2` workload of `ratelimit_ab` through a
//! bare table that does only what every lock-free design of the group must do on its hot path,
//! timed against the mutex rebuild of go-algorand's limiter in the same rounds. The probe behind
//! BENCHMARKS.md's "what the hardware allows".
//!
//! The bare table: 128 shards of sets; per group of two pre-derived keys, a seize guard, the
//! instant, the canonical order of the two keys, each key's lookup, the sliding-window check on
//! its state word (the integer estimate `prev * (window - offset) / window + cur + 1 <= L` of
//! txgate and the rebuild), a drop decided from a validated read (the first key's word read
//! again), and an admission committed with the five compare-and-swaps of txgate's multi-word
//! commit (a marker on each key's word, the decision on the descriptor, each word replaced)
//! through one descriptor reused for every group. It has no helping, no protocol for inserting
//! a key and no eviction, so it is correct on one thread only: it bounds the hot path's cost,
//! nothing more. Two layouts:
//!
//! - `inline`: 4-way sets of one cache line, each way the key and its state word side by side;
//! - `node`: 8-way sets of one line, each way a key tag and a node index, the key and its state
//!   word in a separate node array (one more dependent load, as txgate's table, whose nodes are
//!   on the heap).
//!
//! A key whose set is full is not tracked: its groups are skipped, counted, and left out of the
//! time per group (the workload puts each app's 3,072 keys in one shard, so a few sets overflow:
//! about 11 keys' groups a pass with `inline`, 2 with `node`). The clock starts on a window
//! boundary and every pass moves it two windows on, as in `ratelimit_ab`, so each check sees
//! offset 0 and no previous count: the sliding estimate's arithmetic runs, its weight is 0.
//!
//! ```text
//! cargo run --release -p txgate-benches --example group_floor -- [rounds, default 30] [inline|node]
//! ```
//!
//! Each round times the bare table, the rebuild, the rebuild, the bare table (one pass of the
//! 3,072 groups each), as `ratelimit_ab` does, and the probe prints the median of the per-round
//! ratios and each side's median time per group.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use txgate_benches::median;
use txgate_benches::mutex_limiter::MutexLimiter;
use txgate_ratelimit::Origin;

const SEC: u64 = 1_000_000_000;
const WINDOW: u64 = 10 * SEC;
const T0: u64 = 1_700_000_000 * SEC;
const SALT: [u8; 16] = [7; 16];
const LIMIT: u64 = 10;
const SHARDS: usize = 128;
/// Keys of room in the table (the rebuild's too): go-algorand's default size.
const CAPACITY: usize = 1 << 20;
/// The marker flag of a state word (a word with it names the descriptor).
const MARKER: u64 = 1 << 63;
/// An index word's empty value (no node).
const EMPTY: u64 = u64::MAX;

/// One cache line of eight words.
#[repr(C, align(64))]
struct Line([AtomicU64; 8]);

impl Line {
    fn new(fill: u64) -> Self {
        Line(std::array::from_fn(|_| AtomicU64::new(fill)))
    }
}

struct Node {
    key: AtomicU64,
    state: AtomicU64,
}

/// The multi-word commit's descriptor: its decision word.
struct Descriptor {
    status: AtomicU64,
}

struct Table {
    node_layout: bool,
    /// Per shard, its sets.
    shards: Vec<Box<[Line]>>,
    /// The `node` layout's nodes, handed out in order.
    nodes: Box<[Node]>,
    next_node: AtomicUsize,
    collector: seize::Collector,
}

/// A state word: the interval (bits 32..63), the previous interval's count and the current one.
fn pack(interval: u64, prev: u64, cur: u64) -> u64 {
    (interval & 0x7fff_ffff) << 32 | prev << 16 | cur
}

/// The word's counts rolled to `interval`: `(prev, cur)`.
fn roll(word: u64, interval: u64) -> (u64, u64) {
    let (at, prev, cur) = (word >> 32, (word >> 16) & 0xffff, word & 0xffff);
    let now = interval & 0x7fff_ffff;
    if at == now {
        (prev, cur)
    } else if at + 1 == now {
        (cur, 0)
    } else {
        (0, 0)
    }
}

impl Table {
    fn new(node_layout: bool) -> Self {
        let keys_per_shard = CAPACITY / SHARDS;
        let ways = if node_layout { 8 } else { 4 };
        let sets = (2 * keys_per_shard).div_ceil(ways);
        Self {
            node_layout,
            shards: (0..SHARDS)
                .map(|_| {
                    (0..sets)
                        .map(|_| Line::new(if node_layout { EMPTY } else { 0 }))
                        .collect()
                })
                .collect(),
            nodes: if node_layout {
                (0..CAPACITY)
                    .map(|_| Node {
                        key: AtomicU64::new(0),
                        state: AtomicU64::new(0),
                    })
                    .collect()
            } else {
                Box::new([])
            },
            next_node: AtomicUsize::new(0),
            collector: seize::Collector::new(),
        }
    }

    /// The state word of `key` in `shard`, inserted (counts zero) if missing; `None` if its
    /// set is full.
    #[inline]
    fn word(&self, shard: usize, key: u64, interval: u64) -> Option<&AtomicU64> {
        let sets = &self.shards[shard];
        let set = &sets[((u128::from(key) * sets.len() as u128) >> 64) as usize].0;
        if self.node_layout {
            // The tag from the low bits: the set index takes the high ones.
            let tag = key & 0xffff;
            for way in set {
                // Acquire: pairs with the Release store that published the node.
                let v = way.load(Ordering::Acquire);
                if v == EMPTY {
                    // Relaxed: the counter only hands out distinct indices; the node's fields
                    // are published by the Release store of the way below.
                    let i = self.next_node.fetch_add(1, Ordering::Relaxed);
                    let node = &self.nodes[i];
                    // Relaxed: published by the way's Release store below.
                    node.key.store(key, Ordering::Relaxed);
                    node.state.store(pack(interval, 0, 0), Ordering::Relaxed);
                    way.store(tag << 48 | i as u64, Ordering::Release);
                    return Some(&node.state);
                }
                if v >> 48 == tag {
                    let node = &self.nodes[(v & 0xffff_ffff_ffff) as usize];
                    // Relaxed: ordered after the way's Acquire load above.
                    if node.key.load(Ordering::Relaxed) == key {
                        return Some(&node.state);
                    }
                }
            }
            return None;
        }
        for way in 0..4 {
            // Acquire: pairs with the Release store that published the key.
            let k = set[2 * way].load(Ordering::Acquire);
            if k == key {
                return Some(&set[2 * way + 1]);
            }
            if k == 0 {
                // Relaxed: published by the key's Release store that follows.
                set[2 * way + 1].store(pack(interval, 0, 0), Ordering::Relaxed);
                set[2 * way].store(key, Ordering::Release);
                return Some(&set[2 * way + 1]);
            }
        }
        None
    }

    /// Admits a group of two distinct keys (`(shard, key)`) at `now` if both have room:
    /// `Some(admitted)`, or `None` if a key is not tracked (its set full).
    #[inline(never)]
    fn admit2(&self, keys: &[(usize, u64); 2], now: u64, d: &Descriptor) -> Option<bool> {
        let _guard = self.collector.enter();
        let (interval, offset) = (now / WINDOW, now % WINDOW);
        let [a, b] = *keys;
        let (first, second) = if b < a { (b, a) } else { (a, b) };
        let words = [
            self.word(first.0, first.1, interval)?,
            self.word(second.0, second.1, interval)?,
        ];
        let marker = MARKER | (std::ptr::from_ref(d) as u64 >> 1);
        'attempt: loop {
            let mut old = [0; 2];
            let mut new = [0; 2];
            for (i, word) in words.iter().enumerate() {
                // SeqCst: as txgate's reads of a word that may hold a marker.
                let w = word.load(Ordering::SeqCst);
                let (prev, cur) = roll(w, interval);
                if prev * (WINDOW - offset) / WINDOW + cur + 1 > LIMIT {
                    // A drop, if the first key still holds the word it admitted on.
                    if i == 1 && words[0].load(Ordering::SeqCst) != old[0] {
                        continue 'attempt;
                    }
                    return Some(false);
                }
                old[i] = w;
                new[i] = pack(interval, prev, cur + 1);
            }
            // Relaxed: the descriptor is this thread's alone until its markers are installed
            // by the AcqRel compare-and-swaps below, which publish it.
            d.status.store(0, Ordering::Relaxed);
            // AcqRel/Acquire throughout: the orderings of txgate's commit.
            if words[0]
                .compare_exchange(old[0], marker, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            if words[1]
                .compare_exchange(old[1], marker, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                let _ =
                    words[0].compare_exchange(marker, old[0], Ordering::AcqRel, Ordering::Acquire);
                continue;
            }
            let _ = d
                .status
                .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire);
            for (word, new) in words.iter().zip(new) {
                let _ = word.compare_exchange(marker, new, Ordering::AcqRel, Ordering::Acquire);
            }
            return Some(true);
        }
    }

    /// Counts `key` up to the limit at `now` (the workload's set-up).
    fn fill(&self, (shard, key): (usize, u64), now: u64) {
        let interval = now / WINDOW;
        if let Some(word) = self.word(shard, key, interval) {
            // SeqCst: as the group's reads of the word (set-up, one thread, untimed).
            let (prev, _) = roll(word.load(Ordering::SeqCst), interval);
            word.store(pack(interval, prev, LIMIT), Ordering::SeqCst);
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args
        .next()
        .map_or(30, |r| r.parse().expect("rounds: a number"));
    assert!(rounds > 0, "rounds: at least 1");
    let node_layout = match args.next().as_deref() {
        None | Some("inline") => false,
        Some("node") => true,
        Some(other) => panic!("layout: inline or node, not {other}"),
    };
    const GROUPS: u32 = 3072;
    let rebuild = MutexLimiter::new(CAPACITY, LIMIT, WINDOW, SALT);
    let table = Table::new(node_layout);
    // `ratelimit_ab`'s `group2`: two apps in different buckets, one origin per group.
    let o0 = Origin::from_peer_id(&0u32.to_le_bytes());
    let first = 41;
    let second = (first + 1..)
        .find(|&a| rebuild.key(a, &o0).0 != rebuild.key(first, &o0).0)
        .expect("two apps apart");
    let keys: Vec<[(usize, u64); 2]> = (0..GROUPS)
        .map(|i| {
            let o = Origin::from_peer_id(&i.to_le_bytes());
            [first, second].map(|a| rebuild.key(a, &o))
        })
        .collect();
    let descriptor = Descriptor {
        status: AtomicU64::new(0),
    };
    let mut now = T0;
    let (mut ratios, mut bare_ns, mut rebuild_ns) = (Vec::new(), Vec::new(), Vec::new());
    let (mut admitted, mut dropped, mut skipped) = (0u64, 0u64, 0u64);
    let (mut admitted_rebuild, mut dropped_rebuild) = (0u64, 0u64);
    for _ in 0..rounds {
        let (mut bare_s, mut rebuild_s) = (0.0, 0.0);
        let skipped_before = skipped;
        for bare in [true, false, false, true] {
            now += 2 * WINDOW;
            // Every third group's second key is at its limit: a third of the groups drop.
            if bare {
                for k in keys.iter().step_by(3) {
                    table.fill(k[1], now);
                }
            } else {
                for k in keys.iter().step_by(3) {
                    for _ in 0..LIMIT {
                        assert!(!rebuild.should_drop_keys(&k[1..], now));
                    }
                }
            }
            let start = Instant::now();
            for k in &keys {
                if bare {
                    match black_box(table.admit2(black_box(k), now, &descriptor)) {
                        Some(true) => admitted += 1,
                        Some(false) => dropped += 1,
                        None => skipped += 1,
                    }
                } else if black_box(rebuild.should_drop_keys(black_box(k), now)) {
                    dropped_rebuild += 1;
                } else {
                    admitted_rebuild += 1;
                }
            }
            let dt = start.elapsed().as_secs_f64();
            if bare {
                bare_s += dt;
            } else {
                rebuild_s += dt;
            }
        }
        // Per group checked: the skipped groups did no check.
        let checked = 2.0 * f64::from(GROUPS) - (skipped - skipped_before) as f64;
        let per_bare = bare_s / checked;
        let per_rebuild = rebuild_s / (2.0 * f64::from(GROUPS));
        ratios.push(per_bare / per_rebuild);
        bare_ns.push(per_bare * 1e9);
        rebuild_ns.push(per_rebuild * 1e9);
    }
    println!(
        "group2, bare table ({}) / mutex rebuild: median {:.2} over {rounds} rounds (per group \
         checked); medians {:.1} vs {:.1} ns per group; admitted {admitted} vs \
         {admitted_rebuild}, dropped {dropped} vs {dropped_rebuild}, skipped (a key's set full) \
         {skipped}",
        if node_layout { "node" } else { "inline" },
        median(ratios),
        median(bare_ns),
        median(rebuild_ns),
    );
    assert_eq!(
        admitted + dropped + skipped,
        admitted_rebuild + dropped_rebuild,
        "every group decided or skipped"
    );
}
