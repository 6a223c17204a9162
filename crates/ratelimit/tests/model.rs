//! Differential test: the lock-free limiter against the plain reference model
//! (`txgate_ratelimit::model`), same operations and clock, same decisions and tracked keys after
//! every step. Single-threaded the limiter evicts exactly as the model (LRU in shards of up to
//! 64 keys, CLOCK in larger ones and in the CLOCK test geometry), so the two must agree
//! exactly, decisions' details included.
#![cfg(not(loom))]

use std::num::NonZeroU32;
use std::time::Duration;

use proptest::prelude::*;
use txgate_ratelimit::model::Model;
use txgate_ratelimit::{AppKey, AppRateLimiter, Config, Decision, Origin};

mod decisions;

use decisions::{Parts, parts};

#[derive(Clone, Debug)]
enum Op {
    Admit {
        apps: Vec<u64>,
        origin: u8,
    },
    /// A weighted admission (`admit_n`); costs above L are refused by both sides.
    AdmitN {
        apps: Vec<u64>,
        origin: u8,
        cost: u32,
    },
    Penalize {
        apps: Vec<u64>,
        origin: u8,
    },
    /// Move the clock forward by this many milliseconds.
    Advance(u64),
}

fn op(origins: u8) -> impl Strategy<Value = Op> {
    op_costs(origins, 14)
}

/// [`op`] with weighted admissions of cost `1..max_cost`.
fn op_costs(origins: u8, max_cost: u32) -> impl Strategy<Value = Op> {
    let apps = prop::collection::vec(0u64..7, 0..5);
    prop_oneof![
        6 => (apps.clone(), 0..origins).prop_map(|(apps, origin)| Op::Admit { apps, origin }),
        2 => (apps.clone(), 0..origins, 1u32..max_cost)
            .prop_map(|(apps, origin, cost)| Op::AdmitN { apps, origin, cost }),
        1 => (apps, 0..origins).prop_map(|(apps, origin)| Op::Penalize { apps, origin }),
        2 => (0u64..7_000).prop_map(Op::Advance),
    ]
}

fn keys(l: &AppRateLimiter, apps: &[u64], origin: u8) -> Vec<AppKey> {
    let origin = Origin::from_peer_id(&[origin]);
    apps.iter()
        .filter(|&&a| a != 0)
        .map(|&a| l.app_key(a, &origin))
        .collect()
}

/// The model's decision over the non-zero apps as [`parts`], with a drop's index mapped back to
/// its place in `apps` (what `admit` reports).
fn in_apps(model: Decision, apps: &[u64]) -> Parts {
    let positions: Vec<usize> = (0..apps.len()).filter(|&i| apps[i] != 0).collect();
    parts(model, |i| positions[i])
}

fn run(config: Config, ops: &[Op], start_ns: u64) -> Result<(), TestCaseError> {
    let limiter = AppRateLimiter::new(config.clone()).unwrap();
    let mut model = Model::new(&config).unwrap();
    let mut now = start_ns;
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Admit { apps, origin } => {
                let k = keys(&limiter, apps, *origin);
                let want = model.admit_keys(&k, now);
                // Half the time through the deriving API (drop indices into `apps`), to cover it
                // too.
                if step % 2 == 0 {
                    let got = limiter.admit(apps, &Origin::from_peer_id(&[*origin]), now);
                    prop_assert_eq!(
                        parts(got, |i| i),
                        in_apps(want, apps),
                        "step {}: {:?}",
                        step,
                        op
                    );
                } else {
                    let got = limiter.admit_keys(&k, now);
                    prop_assert_eq!(got, want, "step {}: {:?}", step, op);
                }
            }
            Op::AdmitN { apps, origin, cost } => {
                let k = keys(&limiter, apps, *origin);
                let cost = NonZeroU32::new(*cost).unwrap();
                let want = model.admit_keys_n(&k, cost, now);
                if step % 2 == 0 {
                    let got = limiter.admit_n(apps, &Origin::from_peer_id(&[*origin]), cost, now);
                    prop_assert_eq!(
                        got.map(|d| parts(d, |i| i)),
                        want.map(|d| in_apps(d, apps)),
                        "step {}: {:?}",
                        step,
                        op
                    );
                } else {
                    let got = limiter.admit_keys_n(&k, cost, now);
                    prop_assert_eq!(got, want, "step {}: {:?}", step, op);
                }
            }
            Op::Penalize { apps, origin } => {
                let k = keys(&limiter, apps, *origin);
                limiter.penalize_keys(&k, now);
                model.penalize_keys(&k, now);
            }
            Op::Advance(ms) => now += ms * 1_000_000,
        }
        prop_assert_eq!(
            limiter.tracked_keys(),
            model.tracked_keys(),
            "step {}",
            step
        );
    }
    prop_assert_eq!(limiter.stats(), model.stats());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 512 },
        // Miri's isolation has no working directory to persist failures in.
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]

    /// Small shards (2 to 8 keys, searched whole): evictions happen constantly and must match.
    #[test]
    fn small_shards_match_the_model_exactly(
        shards_log in 0u32..3,
        capacity in 2usize..=8,
        rate in 1u64..4,
        window_s in 1u64..4,
        start in 0u64..1_000_000_000_000,
        ops in prop::collection::vec(op(6), 1..if cfg!(miri) { 12 } else { 200 }),
    ) {
        let shards = 1usize << shards_log;
        let config = Config::default()
            .with_max_size(capacity * shards)
            .with_rate_per_second(rate)
            .with_window(Duration::from_secs(window_s))
            .with_shards(shards)
            .with_salt(Some([9; 16]));
        run(config, &ops, start)?;
    }

    /// Shards of 9 to 64 keys (still one set) over up to 84 keys: evictions match too.
    #[test]
    fn medium_shards_match_the_model_exactly(
        capacity in 9usize..=64,
        rate in 1u64..4,
        window_s in 1u64..4,
        start in 0u64..1_000_000_000_000,
        ops in prop::collection::vec(op(12), 1..if cfg!(miri) { 12 } else { 300 }),
    ) {
        let config = Config::default()
            .with_max_size(capacity)
            .with_rate_per_second(rate)
            .with_window(Duration::from_secs(window_s))
            .with_shards(1)
            .with_salt(Some([7; 16]));
        run(config, &ops, start)?;
    }

    /// CLOCK shards small enough to fill constantly (the test geometry: sets of 2 to 6 ways, two
    /// ways per key): the model's CLOCK, reference bits in the keys' state, exactly.
    #[test]
    fn clock_shards_match_the_model_exactly(
        shards_log in 0u32..2,
        capacity in 2usize..=8,
        ways in 2usize..=6,
        rate in 1u64..4,
        window_s in 1u64..4,
        start in 0u64..1_000_000_000_000,
        ops in prop::collection::vec(op(6), 1..if cfg!(miri) { 12 } else { 200 }),
    ) {
        let shards = 1usize << shards_log;
        let config = Config::default()
            .with_max_size(capacity * shards)
            .with_rate_per_second(rate)
            .with_window(Duration::from_secs(window_s))
            .with_shards(shards)
            .with_salt(Some([6; 16]))
            .with_clock_ways(Some(ways));
        run(config, &ops, start)?;
    }

    /// Limits above 65,535 per window, with weighted admissions that take keys' counts past
    /// 65,535 (wide state words) and back, in small exact-LRU and CLOCK shards that evict.
    #[test]
    fn limits_above_65535_match_the_model_exactly(
        capacity in 2usize..=8,
        clock in any::<bool>(),
        rate in 10_000u64..40_000,
        window_s in 4u64..9,
        start in 0u64..1_000_000_000_000,
        ops in prop::collection::vec(op_costs(6, 150_000), 1..if cfg!(miri) { 12 } else { 200 }),
    ) {
        let config = Config::default()
            .with_max_size(capacity * 2)
            .with_rate_per_second(rate)
            .with_window(Duration::from_secs(window_s))
            .with_shards(2)
            .with_salt(Some([4; 16]))
            .with_clock_ways(clock.then_some(4));
        run(config, &ops, start)?;
    }

    /// Large shards that never fill: no eviction, same decisions.
    #[test]
    fn large_shards_match_the_model_exactly(
        rate in 1u64..4,
        window_s in 1u64..4,
        start in 0u64..1_000_000_000_000,
        ops in prop::collection::vec(op(6), 1..if cfg!(miri) { 12 } else { 200 }),
    ) {
        let config = Config::default()
            // 4 shards of 4,096 keys (256 under Miri, where every step scans them all).
            .with_max_size(if cfg!(miri) { 1 << 10 } else { 1 << 14 })
            .with_rate_per_second(rate)
            .with_window(Duration::from_secs(window_s))
            .with_shards(4)
            .with_salt(Some([8; 16]));
        run(config, &ops, start)?;
    }
}
