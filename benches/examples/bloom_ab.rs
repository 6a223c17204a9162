//! An interleaved A/B probe of txgate-bloom's pre-hashed `contains` against sbbf-rs-safe, for a
//! noisy shared machine where one criterion row after another sees different load: each round
//! times every variant back to back (rotating which goes first; per variant one warm-up pass,
//! then the fastest of three passes), and the probe reports, per txgate variant, the median and
//! quartiles of the per-round ratios to sbbf-rs-safe's pass of the same round, and the ratio of
//! the fastest passes over all rounds (the least disturbed ones).
//!
//! ```text
//! cargo run --profile bench -p txgate-benches --example bloom_ab -- [rounds]
//! ```
//!
//! The setup is the `prehashed` group's of `benches/bloom.rs`: 2^20 seeded random keys at 10
//! bits per key, a pass is 2^16 queries, hits are the first 2^16 inserted keys, misses 2^16
//! other random keys. Variants: the 256-bit layout (`txgate-<backend>`) and the 512-bit one
//! (`txgate512-<backend>`) with every backend this CPU has, and `sbbf-rs-safe`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use txgate_benches::random_u64s;
use txgate_bloom::{
    Backend, Block256, Block512, BlockLayout, BlockedBloom, BloomBuilder, Filter, Hashed,
};

const KEYS: usize = 1 << 20;
const BITS_PER_KEY: usize = 10;
const PASS: usize = 1 << 16;
/// Timed passes per variant and round (the fastest counts: on a loaded machine the others
/// include preemptions).
const TIMED: usize = 3;

/// One filter under test: answers one pass of queries with how many were "maybe".
type Pass<'a> = Box<dyn Fn(&[u64]) -> usize + 'a>;

fn txgate<B: BlockLayout>(backend: Backend, keys: &[u64]) -> BlockedBloom<B> {
    let mut f = BloomBuilder::with_num_bits((KEYS * BITS_PER_KEY) as u64)
        .seed(1)
        .layout::<B>()
        .backend(backend)
        .build()
        .expect("a 1.25 MiB filter");
    keys.iter().for_each(|&k| {
        f.insert(Hashed(k));
    });
    f
}

/// The count loop of the criterion rows, as a generic function so that each filter type gets
/// its own copy with the query inlined (as in the bench's closures).
#[inline(never)]
fn count(keys: &[u64], contains: impl Fn(u64) -> bool) -> usize {
    keys.iter().filter(|&&k| contains(k)).count()
}

/// The median and the quartiles of `xs`.
fn quartiles(mut xs: Vec<f64>) -> (f64, f64, f64) {
    xs.sort_by(f64::total_cmp);
    let at = |q: f64| xs[((xs.len() - 1) as f64 * q).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|r| r.parse().expect("rounds: a number"))
        .unwrap_or(100)
        .max(1);
    let keys = random_u64s(KEYS, 1);
    let misses = random_u64s(PASS, 2);
    let hits = &keys[..PASS];

    let mut sbbf = sbbf_rs_safe::Filter::new(BITS_PER_KEY, KEYS);
    keys.iter().for_each(|&k| {
        sbbf.insert_hash(k);
    });
    let small: Vec<(String, BlockedBloom<Block256>)> = Backend::available()
        .into_iter()
        .map(|b| (format!("txgate-{b:?}"), txgate(b, &keys)))
        .collect();
    let large: Vec<(String, BlockedBloom<Block512>)> = Backend::available()
        .into_iter()
        .map(|b| (format!("txgate512-{b:?}"), txgate(b, &keys)))
        .collect();

    // sbbf-rs-safe first: every ratio is to variant 0.
    let mut variants: Vec<(String, Pass<'_>)> = vec![(
        "sbbf-rs-safe".to_owned(),
        Box::new(|probe: &[u64]| count(probe, |k| sbbf.contains_hash(k))),
    )];
    for (name, f) in &small {
        variants.push((
            name.clone(),
            Box::new(move |probe: &[u64]| count(probe, |k| f.contains(Hashed(k)))),
        ));
    }
    for (name, f) in &large {
        variants.push((
            name.clone(),
            Box::new(move |probe: &[u64]| count(probe, |k| f.contains(Hashed(k)))),
        ));
    }

    for (case, probe) in [("contains_hit", hits), ("contains_miss", &misses[..])] {
        // Warm-up: every filter's lines into the caches once, and the answers checked to agree
        // in kind (hits are all "maybe").
        for (name, pass) in &variants {
            let maybe = pass(probe);
            if case == "contains_hit" {
                assert_eq!(maybe, PASS, "{name}: a false negative");
            }
        }
        let n = variants.len();
        let mut times = vec![Vec::with_capacity(rounds); n];
        for round in 0..rounds {
            for j in 0..n {
                let v = (round + j) % n;
                // One pass to bring this filter's lines back into the caches (the other
                // variants' passes evicted them; the criterion rows repeat one filter's passes),
                // then the fastest of `TIMED` passes.
                black_box(variants[v].1(black_box(probe)));
                let fastest = (0..TIMED)
                    .map(|_| {
                        let start = Instant::now();
                        black_box(variants[v].1(black_box(probe)));
                        start.elapsed()
                    })
                    .min()
                    .unwrap_or(Duration::ZERO);
                times[v].push(fastest);
            }
        }
        let best = |v: usize| times[v].iter().min().copied().unwrap_or(Duration::ZERO);
        println!("{case} ({rounds} rounds of {PASS} queries; ratio to sbbf-rs-safe)");
        println!(
            "  {:<18} {:>10} {:>8} {:>8} {:>8} {:>10}",
            "variant", "best ns/q", "q1", "median", "q3", "best/best"
        );
        for (v, (name, _)) in variants.iter().enumerate() {
            let ratios: Vec<f64> = times[v]
                .iter()
                .zip(&times[0])
                .map(|(t, s)| t.as_secs_f64() / s.as_secs_f64())
                .collect();
            let (q1, median, q3) = quartiles(ratios);
            println!(
                "  {name:<18} {:>10.2} {q1:>8.3} {median:>8.3} {q3:>8.3} {:>10.3}",
                best(v).as_secs_f64() * 1e9 / PASS as f64,
                best(v).as_secs_f64() / best(0).as_secs_f64()
            );
        }
    }
}
