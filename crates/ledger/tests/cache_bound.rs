//! `LedgerConfig::cache_bytes` bounds the memory the database keeps for pages it read: reading
//! every stored block of a ledger grows the heap by about the blocks' size under redb's default
//! bound, and by at most the configured bound (plus the block being read) under a small one.
//!
//! The heap is measured with a global allocator that tracks the live bytes of the whole process,
//! so this file holds one test (no other test of its binary runs beside it).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use txgate_algorand::synth::{SynthTxn, encode_block};
use txgate_ledger::store::{Ledger, LedgerConfig};

/// The system allocator, counting live bytes and their peak since the last [`reset_peak`].
struct Tracking;

// Relaxed everywhere: the counters order nothing, they are read after the threads that
// allocate have finished their work (the test is single-threaded during the measured part).
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees are this allocator's; the counters only observe sizes.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is `System::alloc`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            added(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator (that is, `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc` is `System::realloc`'s.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            added(new_size);
        }
        p
    }
}

fn added(size: usize) {
    let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn reset_peak() -> usize {
    let live = LIVE.load(Ordering::Relaxed);
    PEAK.store(live, Ordering::Relaxed);
    live
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

const ROUNDS: u64 = 48;
const TXNS: usize = 400;

/// Reads every block of the ledger at `dir` twice, through a ledger opened with `cache_bytes`;
/// returns the heap's peak growth over the reads, in bytes, and the bytes of the blocks.
fn growth_reading_every_block(dir: &std::path::Path, cache_bytes: usize) -> (usize, usize) {
    let config = LedgerConfig::default().with_cache_bytes(cache_bytes);
    let ledger = Ledger::open(dir, config).unwrap();
    let before = reset_peak();
    let mut bytes = 0;
    for pass in 0..2 {
        for round in 1..=ROUNDS {
            let block = ledger.block(round).unwrap();
            if pass == 0 {
                bytes += block.len();
            }
        }
    }
    let peak = PEAK.load(Ordering::Relaxed);
    drop(ledger);
    (peak - before, bytes)
}

#[test]
fn cache_bytes_bounds_the_pages_kept_after_reading_every_block() {
    let dir = tempfile::tempdir().unwrap();
    {
        let ledger = Ledger::open(dir.path(), LedgerConfig::default()).unwrap();
        for round in 1..=ROUNDS {
            let txns: Vec<SynthTxn> = (0..TXNS)
                .map(|i| {
                    let mut t = SynthTxn::payment([7; 32], round, round + 1000);
                    t.note = format!("round {round} txn {i}").into_bytes();
                    t
                })
                .collect();
            let raw = encode_block(round, "cache-test", &[9; 32], 0, &txns);
            ledger.add_block(&raw).unwrap();
        }
    }
    let bound = 256 << 10;
    let (small, bytes) = growth_reading_every_block(dir.path(), bound);
    let (default, _) = growth_reading_every_block(dir.path(), LedgerConfig::default().cache_bytes);
    let largest_block = bytes / ROUNDS as usize * 2;
    // redb's default bound (1 GiB) keeps every page read: the growth is at least the blocks.
    assert!(
        default >= bytes,
        "default: {default} < {bytes} bytes of blocks"
    );
    // The small bound: its pages, plus a block's page and its copy in flight.
    assert!(
        small <= bound + 4 * largest_block,
        "{small} bytes kept with a {bound}-byte bound ({bytes} bytes of blocks)"
    );
    assert!(small < bytes / 2, "{small} of {bytes}");
}
