//! An interleaved A/B probe of txgate-ratelimit against the mutex baseline, for a noisy shared
//! machine where one criterion group after another sees different load: each round times one
//! pass of txgate and one of the baseline back to back (alternating which goes first), and the
//! probe reports the median and quartiles of the per-round ratios.
//!
//! ```text
//! cargo run --release -p txgate-benches --example ratelimit_ab -- [rounds]
//! ```
//!
//! Cases, as the criterion groups of the same names (`benches/ratelimit.rs`): `existing_key`
//! (4,096 tracked keys, pre-derived), `new_key_eviction` (65,536 keys of room, a uniform stream
//! over 2^20 pairs: about 94 % of admissions evict).

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

    // existing_key
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
    let mut now = T0;
    let mut ratios = Vec::with_capacity(rounds);
    let (mut t_ns, mut m_ns) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let mut pass_t = 0.0;
        let mut pass_m = 0.0;
        for first_txgate in [round % 2 == 0, round % 2 != 0] {
            now += 2 * WINDOW;
            if first_txgate {
                pass_t += time(|| {
                    for _ in 0..20 {
                        for k in &tk {
                            let _ = black_box(t.admit_key(*k, now));
                        }
                    }
                });
            } else {
                pass_m += time(|| {
                    for _ in 0..20 {
                        for k in &mk {
                            black_box(m.admit_keys(std::slice::from_ref(k), now));
                        }
                    }
                });
            }
        }
        ratios.push(pass_t / pass_m);
        t_ns.push(pass_t * 1e9 / (20.0 * 4096.0));
        m_ns.push(pass_m * 1e9 / (20.0 * 4096.0));
    }
    let (med, q1, q3) = summary(ratios);
    println!(
        "existing_key: txgate / mutex median {med:.2} (quartiles {q1:.2}-{q3:.2}); medians {:.1} vs {:.1} ns per admission",
        summary(t_ns).0,
        summary(m_ns).0
    );

    // new_key_eviction
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
    let mut ratios = Vec::with_capacity(rounds);
    let (mut t_ns, mut m_ns) = (Vec::new(), Vec::new());
    let mut pass = 0;
    for round in 0..rounds {
        let mut pass_t = 0.0;
        let mut pass_m = 0.0;
        for first_txgate in [round % 2 == 0, round % 2 != 0] {
            pass = (pass + PASS) % STREAM;
            let range = pass..pass + PASS;
            if first_txgate {
                pass_t += time(|| {
                    for k in &tkeys[range] {
                        let _ = black_box(t.admit_key(*k, T0));
                    }
                });
            } else {
                pass_m += time(|| {
                    for k in &mkeys[range] {
                        black_box(m.admit_keys(std::slice::from_ref(k), T0));
                    }
                });
            }
        }
        ratios.push(pass_t / pass_m);
        t_ns.push(pass_t * 1e9 / PASS as f64);
        m_ns.push(pass_m * 1e9 / PASS as f64);
    }
    let (med, q1, q3) = summary(ratios);
    println!(
        "new_key_eviction: txgate / mutex median {med:.2} (quartiles {q1:.2}-{q3:.2}); medians {:.1} vs {:.1} ns per admission; {} evicted",
        summary(t_ns).0,
        summary(m_ns).0,
        t.stats().evicted
    );
}
