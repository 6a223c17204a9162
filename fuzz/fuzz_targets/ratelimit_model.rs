//! Differential fuzzing of txgate-ratelimit against its reference model (`txgate_ratelimit::model`):
//! the same operations and clock drive both; decisions (with their details), evictions and the
//! tracked key sets must always agree, in every geometry: the model implements the limiter's
//! eviction rule exactly (LRU in shards of up to 64 keys, CLOCK with the reference bit in the
//! key's state in larger ones). The limiter's structural validator runs after every operation.
#![no_main]

use std::num::NonZeroU32;
use std::time::Duration;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use txgate_ratelimit::model::Model;
use txgate_ratelimit::{AppKey, AppRateLimiter, Config, Origin};

// A decision as comparable parts: txgate-ratelimit's differential test's helper.
#[path = "../../crates/ratelimit/tests/decisions/mod.rs"]
mod decisions;

use decisions::parts;

#[derive(Arbitrary, Debug)]
struct Input {
    shards_log: u8,
    capacity: u8,
    rate: u8,
    window_s: u8,
    start_ns: u64,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// `admit` with app ids (0 = not an app call) from a small origin space.
    Admit {
        apps: Vec<u8>,
        origin: u8,
    },
    /// The same through pre-derived keys.
    AdmitKeys {
        apps: Vec<u8>,
        origin: u8,
    },
    /// A weighted admission (`admit_n`, or `admit_keys_n` for odd costs); costs above L are
    /// refused by both sides.
    AdmitN {
        apps: Vec<u8>,
        origin: u8,
        cost: u8,
    },
    Penalize {
        apps: Vec<u8>,
        origin: u8,
    },
    /// Move the clock forward by this many milliseconds.
    Advance(u16),
}

fn keys(l: &AppRateLimiter, apps: &[u64], origin: &Origin) -> Vec<AppKey> {
    apps.iter()
        .filter(|&&a| a != 0)
        .map(|&a| l.app_key(a, origin))
        .collect()
}

fuzz_target!(|input: Input| {
    let shards = 1usize << (input.shards_log % 3);
    // Mode by capacity: 2..=8 and 9..=64 (one set searched whole, exact LRU), 65..=100 and 4096
    // (sets of 31 ways, CLOCK eviction).
    let capacity = match input.capacity % 4 {
        0 => 2 + usize::from(input.capacity / 4 % 7),
        1 => 9 + usize::from(input.capacity / 4 % 56),
        2 => 65 + usize::from(input.capacity / 4 % 36),
        _ => 4096,
    };
    // One rate in sixteen is large (L of 20,000 to 320,000 per window), with weighted
    // admissions big enough to take counts past 65,535 (the state word's wide layout).
    let large = input.rate >= 240;
    let rate = if large {
        20_000 * (1 + u64::from(input.rate % 4))
    } else {
        1 + u64::from(input.rate % 4)
    };
    let config = Config::default()
        .with_max_size(capacity * shards)
        .with_rate_per_second(rate)
        .with_window(Duration::from_secs(1 + u64::from(input.window_s % 4)))
        .with_shards(shards)
        .with_salt(Some([input.rate; 16]));
    let limiter = AppRateLimiter::new(config.clone()).unwrap();
    let mut model = Model::new(&config).unwrap();
    let mut now = input.start_ns >> 2; // room to advance without overflow
    for op in input.ops.iter().take(512) {
        let evicted_before = (limiter.stats().evicted, model.stats().evicted);
        let mut decision = None;
        match op {
            Op::AdmitN { apps, origin, cost } => {
                let apps: Vec<u64> = apps.iter().take(6).map(|&a| u64::from(a % 9)).collect();
                let origin = Origin::from_peer_id(&[origin % 12]);
                let k = keys(&limiter, &apps, &origin);
                let cost = if large {
                    1 + u32::from(*cost) * 400
                } else {
                    1 + u32::from(cost % 16)
                };
                let cost = NonZeroU32::new(cost).unwrap();
                let want = model.admit_keys_n(&k, cost, now);
                let positions: Vec<usize> = (0..apps.len()).filter(|&i| apps[i] != 0).collect();
                let (got, positions) = if cost.get() % 2 == 0 {
                    (limiter.admit_n(&apps, &origin, cost, now), positions)
                } else {
                    (limiter.admit_keys_n(&k, cost, now), (0..k.len()).collect())
                };
                match (got, want) {
                    (Ok(got), Ok(want)) => {
                        let identity: Vec<usize> = (0..apps.len().max(k.len())).collect();
                        decision =
                            Some((parts(got, |i| identity[i]), parts(want, |i| positions[i])));
                    }
                    (got, want) => assert_eq!(got.err(), want.err(), "{op:?}"),
                }
            }
            Op::Admit { apps, origin } | Op::AdmitKeys { apps, origin } => {
                let apps: Vec<u64> = apps.iter().take(6).map(|&a| u64::from(a % 9)).collect();
                let origin = Origin::from_peer_id(&[origin % 12]);
                let k = keys(&limiter, &apps, &origin);
                let (got, positions) = match op {
                    // `admit` reports indices into `apps` (zeros included).
                    Op::Admit { .. } => (
                        limiter.admit(&apps, &origin, now),
                        (0..apps.len()).filter(|&i| apps[i] != 0).collect(),
                    ),
                    _ => (
                        limiter.admit_keys(&k, now),
                        (0..k.len()).collect::<Vec<_>>(),
                    ),
                };
                let want = model.admit_keys(&k, now);
                let identity: Vec<usize> = (0..apps.len().max(k.len())).collect();
                decision = Some((parts(got, |i| identity[i]), parts(want, |i| positions[i])));
            }
            Op::Penalize { apps, origin } => {
                let apps: Vec<u64> = apps.iter().take(6).map(|&a| u64::from(a % 9)).collect();
                let origin = Origin::from_peer_id(&[origin % 12]);
                let k = keys(&limiter, &apps, &origin);
                limiter.penalize(&apps, &origin, now);
                model.penalize_keys(&k, now);
            }
            Op::Advance(ms) => now += u64::from(*ms) * 1_000_000,
        }
        limiter.validate();
        let after = limiter.tracked_keys();
        assert!(after.len() <= config.max_size);
        let evicted = (
            limiter.stats().evicted - evicted_before.0,
            model.stats().evicted - evicted_before.1,
        );
        // Single-threaded the limiter evicts exactly as the model in every geometry: the same
        // victims, so the same tracked keys and decisions, always.
        assert!(
            after == model.tracked_keys() && evicted.0 == evicted.1,
            "{op:?}: evicted {evicted:?}"
        );
        if let Some((got, want)) = decision {
            assert_eq!(got, want, "{op:?} at {now}");
        }
    }
    assert_eq!(limiter.stats(), model.stats());
});
