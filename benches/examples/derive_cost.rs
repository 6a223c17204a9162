//! What deriving a group's keys costs on this CPU, one at a time and side by side: the measure
//! behind the limiter's choice of derivation per CPU (txgate-ratelimit's `derives_in_lanes`,
//! and BENCHMARKS.md's "Figures behind the code's choices").
//!
//! ```text
//! cargo run --release -p txgate-benches --example derive_cost -- [rounds, default 15]
//! ```
//!
//! Each round times the five distinct apps of `group16_5apps` from 20,000 origins, two ways, in
//! turn (which goes first alternates from round to round):
//!
//! - `one by one`: `derive_key_hash` five times (RustCrypto's `blake2`, one input at a time: the
//!   limiter's path for a single key, and for groups on CPUs where it does not take the lanes);
//! - `in lanes`: `derive_in_lanes` over the five (blake2b_simd's `hash_many`: four inputs in one
//!   pass of its widest lanes, the fifth alone), the limiter's path for groups on Intel CPUs
//!   with AVX2.
//!
//! It checks that both give the same keys, and prints each one's median over rounds in
//! nanoseconds per five-key group and the median of the per-round ratios (in lanes / one by
//! one), with whether the limiter takes the lanes on this CPU: where the ratio is clearly below
//! 1 the lanes pay on it.

use std::hint::black_box;
use std::time::Instant;

use txgate_benches::median;
use txgate_ratelimit::{Origin, derive_in_lanes, derive_key_hash, derives_in_lanes};

/// The five distinct apps of a `group16_5apps` group.
const APPS: [u64; 5] = [11, 12, 13, 14, 15];
const ORIGINS: u32 = 20_000;
const SALT: [u8; 16] = [7; 16];

fn main() {
    let rounds: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 15,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: derive_cost [rounds > 0, default 15]");
            std::process::exit(2);
        }
    };
    let origins: Vec<Origin> = (0..ORIGINS)
        .map(|i| Origin::from_peer_id(&i.to_le_bytes()))
        .collect();
    let mut one = [0u64; 5];
    let mut lanes = [0u64; 5];
    for o in &origins {
        for (k, &app) in one.iter_mut().zip(&APPS) {
            *k = derive_key_hash(app, &SALT, o);
        }
        derive_in_lanes(&APPS, &SALT, o, &mut lanes);
        assert_eq!(one, lanes, "the two ways give the same keys");
    }
    let (mut t_one, mut t_lanes, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let mut by_one = || {
            let start = Instant::now();
            for o in &origins {
                for (k, &app) in one.iter_mut().zip(&APPS) {
                    *k = derive_key_hash(black_box(app), &SALT, black_box(o));
                }
                black_box(&one);
            }
            start.elapsed().as_secs_f64() * 1e9 / f64::from(ORIGINS)
        };
        let mut in_lanes = || {
            let start = Instant::now();
            for o in &origins {
                derive_in_lanes(black_box(&APPS), &SALT, black_box(o), &mut lanes);
                black_box(&lanes);
            }
            start.elapsed().as_secs_f64() * 1e9 / f64::from(ORIGINS)
        };
        // Which way goes first alternates from round to round.
        let (a, b) = if round % 2 == 0 {
            let a = by_one();
            (a, in_lanes())
        } else {
            let b = in_lanes();
            (by_one(), b)
        };
        t_one.push(a);
        t_lanes.push(b);
        ratios.push(b / a);
    }
    let taken = if derives_in_lanes() { "yes" } else { "no" };
    println!(
        "five keys (the limiter takes the lanes here: {taken}): one by one {:.0} ns, \
         in lanes {:.0} ns; in lanes / one by one median {:.2} over {rounds} rounds",
        median(t_one),
        median(t_lanes),
        median(ratios)
    );
}
