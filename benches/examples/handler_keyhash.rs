//! What deriving a rate-limiter key costs per (origin, app) pair, against cheaper keyed hashes:
//! the figure behind the handler's key cache (a key-cache miss derives one key with BLAKE2b-256)
//! and behind replacing the derivation itself.
//!
//! ```text
//! cargo run --profile bench -p txgate-benches --example handler_keyhash [-- pairs]
//! ```
//!
//! For `pairs` distinct (origin, app) pairs (default 93,743, the handler bench's count; 16-byte
//! origins, as an IPv6 /64 or a peer id's digest prefix) it times, per pair, over five rounds
//! (the thread's CPU time, so waiting for a core on a loaded machine does not count; the minimum
//! is printed: the least disturbed round):
//!
//! - `blake2b-256 app_key`: [`AppRateLimiter::app_key`], the limiter's derivation (BLAKE2b-256
//!   of app id, salt and origin, as go-algorand's `txgroupToKeys`, plus the app's shard);
//! - `siphash-1-3 keyed`: std's `RandomState` (a keyed PRF, random 128-bit key) of the pair;
//! - `foldhash keyed`: `foldhash::quality` with a 128-bit seed, the key cache's tag hash.
//!
//! Each result feeds the next pair's input, so the loop measures latency, as a handler pays it
//! on its critical path, not the throughput of independent hashes.

use std::hash::{BuildHasher, Hash, Hasher};
use std::hint::black_box;
use std::time::Duration;

use foldhash::SharedSeed;
use foldhash::quality::FoldHasher;
use txgate_benches::thread_cpu;
use txgate_ratelimit::{AppRateLimiter, Config, Origin};

fn time(rounds: usize, pairs: &[(u64, Origin)], mut f: impl FnMut(u64, &Origin) -> u64) -> f64 {
    (0..rounds)
        .map(|_| {
            // The thread's CPU time, or the wall clock where there is no thread CPU clock.
            let (cpu, wall) = (thread_cpu(), std::time::Instant::now());
            let mut carry = 0u64;
            for (app, origin) in pairs {
                carry = f(*app ^ (carry & 1), origin);
            }
            black_box(carry);
            match (cpu, thread_cpu()) {
                (Some(start), Some(end)) => end.saturating_sub(start),
                _ => wall.elapsed(),
            }
        })
        .min()
        .unwrap_or(Duration::ZERO)
        .as_secs_f64()
        * 1e9
        / pairs.len() as f64
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(93_743);
    let pairs: Vec<(u64, Origin)> = (0..n as u64)
        .map(|i| {
            let o = (i / 23).wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes();
            let mut id = [0u8; 16];
            id[..8].copy_from_slice(&o);
            id[8..].copy_from_slice(&i.to_be_bytes());
            (1 + i % 4096, Origin::from_peer_id(&id))
        })
        .collect();
    let limiter = AppRateLimiter::new(Config::default().with_salt(Some([3; 16])))
        .expect("the default config");
    let sip = std::collections::hash_map::RandomState::new();
    let (seed, shared) = (
        0x0123_4567_89ab_cdef,
        SharedSeed::from_u64(0x0fed_cba9_8765_4321),
    );
    let rounds = 5;
    let blake = time(rounds, &pairs, |app, o| limiter.app_key(app, o).hash());
    let siphash = time(rounds, &pairs, |app, o| sip.hash_one((app, o)));
    let fold = time(rounds, &pairs, |app, o| {
        let mut h = FoldHasher::with_seed(seed, &shared);
        (app, o).hash(&mut h);
        h.finish()
    });
    println!("{n} pairs, ns per pair (minimum of {rounds} rounds):");
    println!("  blake2b-256 app_key  {blake:7.1}");
    println!("  siphash-1-3 keyed    {siphash:7.1}");
    println!("  foldhash keyed       {fold:7.1}");
}
