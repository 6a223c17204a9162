//! Bytes per tracked key of a full limiter at the default `max_size` (1,048,576), counted by a
//! global allocator (requested bytes) and by the process's resident set (which adds allocator
//! overhead and rounding), and the early evictions of the set-associative table: new keys that
//! evict while their shard still has room (their 31-way set is full). Run with
//! `cargo run --release -p txgate-ratelimit --example bytes_per_key`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use txgate_ratelimit::{AppKey, AppRateLimiter, Config};
use txgate_testkit::rng::{GOLDEN_GAMMA, SplitMix64};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to `System` unchanged; only counts live bytes on the side.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // Relaxed: a statistic.
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller upholds `alloc`'s contract, which `System` shares.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Relaxed: a statistic.
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `System.alloc` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Resident set size in bytes (Linux `/proc/self/statm`), if available.
fn rss() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn main() {
    const MAX_SIZE: usize = 1 << 20;
    let (live0, rss0) = (LIVE.load(Ordering::Relaxed), rss());
    let l = AppRateLimiter::new(
        Config::default()
            .with_max_size(MAX_SIZE)
            .with_salt(Some([1; 16])),
    )
    .expect("default config");
    let live_table = LIVE.load(Ordering::Relaxed) - live0;
    // Offer 4 x max_size distinct keys (splitmix64 hashes; shard from the low bits, home slot
    // from the high bits). Single-threaded, a new key either adds one to its shard or evicts one
    // key of it, so the example knows every shard's size and can tell evictions from full shards
    // (the rule) from evictions from shards with room (a full probe window: the deviation).
    let shards = l.config().shards;
    let capacity = l.capacity_per_shard();
    let mut sizes = vec![0usize; shards];
    let (mut early, mut offered_with_room, mut evicted) = (0u64, 0u64, 0u64);
    let mut rng = SplitMix64(GOLDEN_GAMMA);
    let now = 1_700_000_000 * 1_000_000_000;
    for _ in 0..4 * MAX_SIZE {
        let z = rng.next_u64();
        let shard = (z % shards as u64) as usize;
        let _ = l.admit_key(AppKey::from_parts(shard as u32, z), now);
        let now_evicted = l.stats().evicted;
        let has_room = sizes[shard] < capacity;
        offered_with_room += u64::from(has_room);
        if now_evicted > evicted {
            early += u64::from(has_room);
            evicted = now_evicted;
        } else {
            sizes[shard] += 1;
        }
    }
    println!(
        "evictions from a shard with room: {early} of {offered_with_room} new keys offered to shards with room ({:.4}%)",
        100.0 * early as f64 / offered_with_room as f64
    );
    let s = l.stats();
    let live = LIVE.load(Ordering::Relaxed) - live0;
    println!(
        "max_size {MAX_SIZE}: {} keys tracked ({:.1}% of max_size), {} evicted",
        s.entries,
        100.0 * s.entries as f64 / MAX_SIZE as f64,
        s.evicted
    );
    println!(
        "table (slots + shards): {live_table} bytes = {:.1} bytes per key of capacity",
        live_table as f64 / MAX_SIZE as f64
    );
    println!(
        "requested bytes per tracked key (table + nodes + nodes awaiting reclamation): {:.1}",
        live as f64 / s.entries as f64
    );
    if let (Some(r0), Some(r1)) = (rss0, rss()) {
        println!(
            "resident bytes per tracked key (adds allocator overhead): {:.1}",
            (r1 - r0) as f64 / s.entries as f64
        );
    }
    drop(l);
}
