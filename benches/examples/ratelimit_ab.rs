//! An interleaved A/B probe of txgate-ratelimit against the mutex baseline, for a noisy shared
//! machine where one criterion group after another sees different load: each round times two
//! passes of txgate and two of the baseline back to back, and the probe reports the median and
//! quartiles of the per-round ratios (each side's two passes summed).
//!
//! A round runs txgate, baseline, baseline, txgate. A pass that follows one of its own side
//! finds its tables in the caches, one that follows the other side's pass finds them partly
//! evicted; in this order each side has one of each in every round (the first txgate pass
//! follows the last round's). Alternating which single pass goes first instead makes the
//! per-round ratios bimodal on a table larger than the L2 cache (`new_key_eviction`: about 0.75
//! with txgate warm, about 1.25 with the baseline warm), and their median lands anywhere between.
//!
//! ```text
//! cargo run --release -p txgate-benches --example ratelimit_ab -- [rounds] [case]
//! ```
//!
//! Cases, as the criterion groups of the same names (`benches/ratelimit.rs`): `existing_key`
//! (4,096 tracked keys, pre-derived), `new_key_eviction` (65,536 keys of room, a uniform stream
//! over 2^20 pairs: about 94 % of admissions evict), `group2` (3,072 groups of two apps, a third
//! of them dropped, against go-algorand's `shouldDropKeys`), `drop` (one key at its limit hit
//! 4,096 times) and `group16_5apps` (256 groups of 16 app calls over 5 apps, keys derived with
//! BLAKE2b on both sides). `case`: run only the cases whose name contains it.

use std::hint::black_box;
use std::time::{Duration, Instant};

use txgate_benches::eviction::{CAPACITY, EvictionKeys, PASS, STREAM, eviction_keys};
use txgate_benches::mutex_limiter::MutexLimiter;
use txgate_ratelimit::{AppKey, AppRateLimiter, Config, Origin};

const SEC: u64 = 1_000_000_000;
const WINDOW: u64 = 10 * SEC;
const T0: u64 = 1_700_000_000 * SEC;
const SALT: [u8; 16] = [7; 16];

fn txgate(max_size: usize) -> AppRateLimiter {
    AppRateLimiter::new(
        Config::default()
            .with_max_size(max_size)
            .with_rate_per_second(6553)
            .with_window(Duration::from_nanos(WINDOW))
            .with_shards(128)
            .with_salt(Some(SALT)),
    )
    .expect("valid config")
}

fn time(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64()
}

/// Median and quartiles of `ratios`.
fn summary(mut ratios: Vec<f64>) -> (f64, f64, f64) {
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.25), at(0.75))
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(30, |r| r.parse().expect("rounds: a number"));
    let only = std::env::args().nth(2).unwrap_or_default();
    if "group2".contains(only.as_str()) {
        group2(rounds);
    }
    if "drop".contains(only.as_str()) {
        drop_at_limit(rounds);
    }
    if "group16_5apps".contains(only.as_str()) {
        group16_5apps(rounds);
    }
    if "existing_key".contains(only.as_str()) {
        existing_key(rounds);
    }
    if "new_key_eviction".contains(only.as_str()) {
        new_key_eviction(rounds);
    }
}

fn existing_key(rounds: usize) {
    let pairs: Vec<(u64, Origin)> = (0..4096u32)
        .map(|i| {
            (
                1 + u64::from(i % 64),
                Origin::from_peer_id(&(i / 64).to_le_bytes()),
            )
        })
        .collect();
    let t = txgate(1 << 20);
    let m = MutexLimiter::new(1 << 20, 65_530, WINDOW, SALT);
    let tk: Vec<AppKey> = pairs.iter().map(|(a, o)| t.app_key(*a, o)).collect();
    let mk: Vec<(usize, u64)> = pairs.iter().map(|(a, o)| m.key(*a, o)).collect();
    // Tracked before the first pass, as in the criterion group.
    for (t_key, m_key) in tk.iter().zip(&mk) {
        assert!(t.admit_key(*t_key, T0).is_admit());
        black_box(m.admit_keys(std::slice::from_ref(m_key), T0));
    }
    ab(
        "existing_key",
        "admission",
        rounds,
        20.0 * 4096.0,
        |_, _| {},
        |txgate, now| {
            for _ in 0..20 {
                if txgate {
                    for k in &tk {
                        let _ = black_box(t.admit_key(*k, now));
                    }
                } else {
                    for k in &mk {
                        black_box(m.admit_keys(std::slice::from_ref(k), now));
                    }
                }
            }
        },
    );
}

fn new_key_eviction(rounds: usize) {
    let t = txgate(CAPACITY);
    let m = MutexLimiter::new(CAPACITY, 65_530, WINDOW, SALT);
    let EvictionKeys {
        txgate: tkeys,
        mutex: mkeys,
        ..
    } = eviction_keys(&SALT, &t, &m);
    for (tk, mk) in tkeys.iter().zip(&mkeys) {
        let _ = t.admit_key(*tk, T0);
        black_box(m.admit_keys(std::slice::from_ref(mk), T0));
    }
    // The two sides' passes go in pairs (the first and second of a round, the third and
    // fourth): both of a pair take the same PASS operations of the stream, the next pair the
    // next ones, so keys come back only after about 2^20 others.
    let mut passes = 0;
    ab(
        "new_key_eviction",
        "admission",
        rounds,
        PASS as f64,
        |_, _| {},
        |txgate, _| {
            let at = (passes / 2 * PASS) % STREAM;
            passes += 1;
            let range = at..at + PASS;
            if txgate {
                for k in &tkeys[range] {
                    let _ = black_box(t.admit_key(*k, T0));
                }
            } else {
                for k in &mkeys[range] {
                    black_box(m.admit_keys(std::slice::from_ref(k), T0));
                }
            }
        },
    );
    println!(
        "new_key_eviction: txgate evicted {} keys in all (its fill included)",
        t.stats().evicted
    );
}

/// A limiter pair with L = 10 per 10 s window, as the criterion `group2` and `drop` rows.
fn small() -> (AppRateLimiter, MutexLimiter) {
    let t = AppRateLimiter::new(
        Config::default()
            .with_max_size(1 << 20)
            .with_rate_per_second(1)
            .with_window(Duration::from_nanos(WINDOW))
            .with_shards(128)
            .with_salt(Some(SALT)),
    )
    .expect("valid config");
    (t, MutexLimiter::new(1 << 20, 10, WINDOW, SALT))
}

/// Runs `rounds` rounds of two txgate passes and two baseline passes, in the order txgate,
/// baseline, baseline, txgate (`setup(txgate?, now)` untimed before each; `per_pass`
/// operations, each a `unit`, in each), and prints the median and quartiles of the per-round
/// ratios of the sums and each side's median time per operation.
fn ab(
    name: &str,
    unit: &str,
    rounds: usize,
    per_pass: f64,
    mut setup: impl FnMut(bool, u64),
    mut pass: impl FnMut(bool, u64),
) {
    let mut now = T0;
    let mut ratios = Vec::with_capacity(rounds);
    let (mut t_ns, mut m_ns) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (mut pass_t, mut pass_m) = (0.0, 0.0);
        for txgate in [true, false, false, true] {
            now += 2 * WINDOW;
            setup(txgate, now);
            let dt = time(|| pass(txgate, now));
            if txgate {
                pass_t += dt;
            } else {
                pass_m += dt;
            }
        }
        ratios.push(pass_t / pass_m);
        t_ns.push(pass_t * 1e9 / (2.0 * per_pass));
        m_ns.push(pass_m * 1e9 / (2.0 * per_pass));
    }
    let (med, q1, q3) = summary(ratios);
    println!(
        "{name}: txgate / mutex median {med:.2} (quartiles {q1:.2}-{q3:.2}); medians {:.1} vs {:.1} ns per {unit}",
        summary(t_ns).0,
        summary(m_ns).0
    );
}

fn group2(rounds: usize) {
    const GROUPS: u32 = 3072;
    let (t, m) = small();
    let o0 = Origin::from_peer_id(&0u32.to_le_bytes());
    let first = 41;
    let second = (first + 1..)
        .find(|&a| {
            t.app_key(a, &o0).shard() != t.app_key(first, &o0).shard()
                && m.key(a, &o0).0 != m.key(first, &o0).0
        })
        .expect("two apps apart");
    let origins: Vec<Origin> = (0..GROUPS)
        .map(|i| Origin::from_peer_id(&i.to_le_bytes()))
        .collect();
    let tkeys: Vec<[AppKey; 2]> = origins
        .iter()
        .map(|o| [first, second].map(|a| t.app_key(a, o)))
        .collect();
    let mkeys: Vec<[(usize, u64); 2]> = origins
        .iter()
        .map(|o| [first, second].map(|a| m.key(a, o)))
        .collect();
    let ten = std::num::NonZeroU32::new(10).expect("non-zero");
    ab(
        "group2",
        "group",
        rounds,
        f64::from(GROUPS),
        |txgate, now| {
            // Every third group's second key is filled to the limit: a third are dropped.
            if txgate {
                for k in tkeys.iter().step_by(3) {
                    assert!(
                        t.admit_keys_n(&k[1..], ten, now)
                            .expect("cost <= L")
                            .is_admit()
                    );
                }
            } else {
                for k in mkeys.iter().step_by(3) {
                    for _ in 0..10 {
                        assert!(!m.should_drop_keys(&k[1..], now));
                    }
                }
            }
        },
        |txgate, now| {
            if txgate {
                for k in &tkeys {
                    let _ = black_box(t.admit_keys(k, now));
                }
            } else {
                for k in &mkeys {
                    black_box(m.should_drop_keys(k, now));
                }
            }
        },
    );
}

fn drop_at_limit(rounds: usize) {
    const HITS: u32 = 4096;
    let (t, m) = small();
    let o = Origin::from_peer_id(&0u32.to_le_bytes());
    let (tk, mk) = (t.app_key(51, &o), m.key(51, &o));
    for _ in 0..10 {
        assert!(t.admit_key(tk, T0).is_admit());
        assert!(!m.should_drop_keys(&[mk], T0));
    }
    ab(
        "drop",
        "admission",
        rounds,
        f64::from(HITS),
        |_, _| {},
        |txgate, _| {
            for _ in 0..HITS {
                if txgate {
                    let _ = black_box(t.admit_key(black_box(tk), T0));
                } else {
                    black_box(m.should_drop_keys(&[black_box(mk)], T0));
                }
            }
        },
    );
}

fn group16_5apps(rounds: usize) {
    const ORIGINS: u32 = 256;
    let apps16: [u64; 16] = [
        11, 12, 13, 14, 15, 11, 12, 13, 14, 15, 11, 12, 13, 14, 15, 11,
    ];
    let t = txgate(1 << 20);
    let m = MutexLimiter::new(1 << 20, 65_530, WINDOW, SALT);
    let origins: Vec<Origin> = (0..ORIGINS)
        .map(|i| Origin::from_peer_id(&i.to_le_bytes()))
        .collect();
    ab(
        "group16_5apps",
        "group",
        rounds,
        f64::from(ORIGINS),
        |_, _| {},
        |txgate, now| {
            for o in &origins {
                if txgate {
                    let _ = black_box(t.admit(&apps16, o, now));
                } else {
                    black_box(m.admit(&apps16, o, now));
                }
            }
        },
    );
}
