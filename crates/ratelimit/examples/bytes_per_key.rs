//! Bytes per tracked key of a full limiter at the default `max_size` (1,048,576), counted by a
//! global allocator (requested bytes) and by the process's resident set (which adds allocator
//! overhead and rounding). Run with
//! `cargo run --release -p txgate-ratelimit --example bytes_per_key`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use txgate_ratelimit::{AppKey, AppRateLimiter, Config};

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
    let l = AppRateLimiter::new(Config {
        max_size: MAX_SIZE,
        salt: Some([1; 16]),
        ..Config::default()
    })
    .expect("default config");
    let live_table = LIVE.load(Ordering::Relaxed) - live0;
    // Offer 4 x max_size distinct keys (splitmix64 hashes; shard from the low bits, home slot from the high bits) so every window fills.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let now = 1_700_000_000 * 1_000_000_000;
    let mut first_eviction = None;
    let mut last = (0usize, 0u64);
    let mut marks = vec![0.25, 0.5, 0.75, 0.9, 0.95];
    for i in 0..4 * MAX_SIZE {
        if i % 8192 == 0 && i <= MAX_SIZE {
            let s = l.stats();
            if first_eviction.is_none() && s.evicted > 0 {
                first_eviction = Some(s.entries);
            }
            // Share of the last 8,192 offered keys that evicted instead of taking a free slot.
            let (entries, evicted) = (s.entries, s.evicted);
            let share = (evicted - last.1) as f64 / 8192.0;
            let load = entries as f64 / MAX_SIZE as f64;
            if let Some(&mark) = marks.first()
                && load >= mark
            {
                println!(
                    "at {:.0}% load, {:.2}% of new keys evicted a tracked key",
                    100.0 * load,
                    100.0 * share
                );
                marks.remove(0);
            }
            last = (entries, evicted);
        }
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let _ = l.admit_key(AppKey::from_parts((z & 127) as u32, z), now);
    }
    let s = l.stats();
    let live = LIVE.load(Ordering::Relaxed) - live0;
    println!(
        "max_size {MAX_SIZE}: {} keys tracked ({:.1}% of max_size), {} evicted",
        s.entries,
        100.0 * s.entries as f64 / MAX_SIZE as f64,
        s.evicted
    );
    if let Some(entries) = first_eviction {
        println!(
            "first eviction (a full 8-slot probe window) with {entries} keys tracked ({:.1}% of max_size)",
            100.0 * entries as f64 / MAX_SIZE as f64
        );
    }
    println!(
        "table (slots + shards): {live_table} bytes = {:.1} bytes per slot",
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
