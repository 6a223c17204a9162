//! What a locked read-modify-write costs on this CPU, uncontended, one thread: the price per
//! atomic of the limiter's lock-free paths against the mutex rebuild's lock and unlock. Behind
//! BENCHMARKS.md's reading of `new_key_eviction` on Intel.
//!
//! ```text
//! cargo run --release -p txgate-benches --example cas_cost -- [rounds, default 15]
//! ```
//!
//! Each round times, in this order:
//!
//! - `store`: a relaxed store (a plain `mov`), for scale;
//! - `cas`: a successful compare-and-swap on one word (x86-64: `lock cmpxchg`), each from the
//!   value the last one wrote;
//! - `cas, 4 lines`: the same over four words on four cache lines in turn, as an eviction's
//!   steps go over the victim's word, the set's claim word, the record's decision and a slot;
//! - `eviction's 6`: six compare-and-swaps over those four lines, the count of one uncontended
//!   txgate eviction's commit (the marker on the victim, the claim, the decision, the victim's
//!   final word, the slot, the claim given back). Every txgate admission also takes one `xchg`
//!   when its seize guard drops (seize's `leave`), which this pass leaves out;
//! - `mutex x2`: two uncontended `std::sync::Mutex` lock-unlock pairs, what the rebuild takes per
//!   admission (its shard's lock twice: a `lock cmpxchg` and an `xchg` each).
//!
//! and prints each one's median over rounds in nanoseconds per operation (per pass for the last
//! two). No other thread touches the words: this is the cost of the instruction and its
//! ordering, with its line in the L1 cache, not of a contended or missing line.

use std::hint::black_box;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use txgate_benches::median;

/// Operations per timed loop.
const OPS: u64 = 20_000_000;

/// One word alone on its cache line.
#[repr(align(64))]
struct Line(AtomicU64);

fn ns_per(ops: u64, f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e9 / ops as f64
}

/// A compare-and-swap from `v` to `v + 1`, which succeeds: nothing else writes the word, and
/// the caller keeps `v` in a register (no load before it). SeqCst: the limiter's
/// compare-and-swaps compile to the same `lock cmpxchg` on x86-64 whatever their ordering; the
/// ordering only changes what the compiler may move. Returns `v + 1`; panics if it failed.
fn bump(word: &AtomicU64, v: u64) -> u64 {
    match word.compare_exchange(v, v + 1, Ordering::SeqCst, Ordering::Relaxed) {
        Ok(_) => v + 1,
        Err(now) => {
            panic!("a compare-and-swap failed on a word only this thread writes ({v} vs {now})")
        }
    }
}

fn main() {
    let rounds: usize = match std::env::args().nth(1) {
        None => 15,
        Some(a) => match a.parse() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("usage: cas_cost [rounds > 0]");
                std::process::exit(2);
            }
        },
    };
    let lines: Vec<Line> = (0..4).map(|_| Line(AtomicU64::new(0))).collect();
    let lock = Mutex::new(0u64);
    let names = [
        "store",
        "cas",
        "cas, 4 lines",
        "eviction's 6 (per pass)",
        "mutex x2 (per pass)",
    ];
    let mut times: Vec<Vec<f64>> = names.iter().map(|_| Vec::with_capacity(rounds)).collect();
    for _ in 0..rounds {
        // Relaxed: one thread; the store's own cost is what is timed.
        times[0].push(ns_per(OPS, || {
            for i in 0..OPS {
                lines[0].0.store(black_box(i), Ordering::Relaxed);
            }
        }));
        // Each loop carries the words' values in registers (`bump` checks them).
        let mut v: [u64; 4] = std::array::from_fn(|i| {
            // Relaxed: one thread.
            lines[i].0.load(Ordering::Relaxed)
        });
        times[1].push(ns_per(OPS, || {
            for _ in 0..OPS {
                v[0] = bump(&lines[0].0, v[0]);
            }
        }));
        times[2].push(ns_per(OPS, || {
            for i in 0..OPS as usize {
                v[i % 4] = bump(&lines[i % 4].0, v[i % 4]);
            }
        }));
        let passes = OPS / 6;
        times[3].push(ns_per(passes, || {
            for _ in 0..passes {
                for i in [0, 1, 2, 0, 3, 1] {
                    v[i] = bump(&lines[i].0, v[i]);
                }
            }
        }));
        let passes = OPS / 4;
        times[4].push(ns_per(passes, || {
            for _ in 0..passes {
                for _ in 0..2 {
                    let mut g = lock.lock().unwrap_or_else(|e| e.into_inner());
                    *g = black_box(*g + 1);
                }
            }
        }));
    }
    println!(
        "{rounds} rounds of {OPS} operations; median ns per operation, uncontended, one thread:"
    );
    for (name, t) in names.iter().zip(times) {
        println!("  {name:<26} {:7.2}", median(t));
    }
}
