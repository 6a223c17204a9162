//! The hit path allocates nothing: a counting global allocator (per thread, so the test harness's
//! own threads do not interfere) counts the allocations of admissions of tracked keys.
#![cfg(not(loom))]

use std::time::Duration;

use txgate_ratelimit::{AppRateLimiter, Config, Origin};
use txgate_testkit::alloc::{Counting, allocations_during};

#[global_allocator]
static GLOBAL: Counting = Counting;

const T0: u64 = 1_700_000_000 * 1_000_000_000;

#[test]
fn admissions_of_tracked_keys_allocate_nothing() {
    let n = if cfg!(miri) { 20 } else { 10_000 };
    let l = AppRateLimiter::new(
        Config::default()
            .with_max_size(1 << 12)
            .with_rate_per_second(6553)
            .with_window(Duration::from_secs(10))
            .with_shards(16)
            .with_salt(Some([1; 16])),
    )
    .unwrap();
    let origins: Vec<Origin> = (0..16u32)
        .map(|i| Origin::from_peer_id(&i.to_le_bytes()))
        .collect();
    let apps16: [u64; 16] = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1];
    // Track the keys (and let seize set up this thread's state) first. Groups of several apps
    // reuse their operation records once the collector has reclaimed a batch of them (512
    // retirements per thread), so warm up past two batches.
    for i in 0..if cfg!(miri) { 32 } else { 1100 } {
        assert!(l.admit(&apps16, &origins[i % 16], T0).is_admit());
        l.penalize(&[6], &origins[i % 16], T0 + 30_000_000_000);
    }
    let keys: Vec<_> = origins.iter().map(|o| l.app_key(3, o)).collect();
    let a = allocations_during(|| {
        for i in 0..n {
            let o = &origins[i % 16];
            assert!(l.admit_key(keys[i % 16], T0).is_admit());
            assert!(l.admit(&[1], o, T0).is_admit());
            l.penalize(&[6], o, T0 + 30_000_000_000); // the key's interval stays ahead
        }
    });
    assert_eq!(a, 0, "allocations of single-key admissions and penalties");
    let a = allocations_during(|| {
        for i in 0..n {
            let o = &origins[i % 16];
            assert!(l.admit(&apps16, o, T0).is_admit());
            assert!(l.admit_keys(&keys[..4], T0).is_admit());
        }
    });
    // Groups reuse their records; what allocates is seize's own batch of retirements, two
    // allocations (the batch and its list) per 512 retired records.
    let batches = (2 * n as u64).div_ceil(if cfg!(miri) { 2 } else { 512 }) + 1;
    assert!(a <= 2 * batches, "{a} allocations for {} groups", 2 * n);
    // A new key into a table with room costs exactly its node.
    let a = allocations_during(|| assert!(l.admit(&[99], &origins[0], T0).is_admit()));
    assert_eq!(a, 1);
    // A group that drops allocates nothing either.
    let full = AppRateLimiter::new(l.config().clone().with_rate_per_second(1)).unwrap();
    // L = 10: eleven rounds over the origins make every key full.
    for i in 0..if cfg!(miri) { 11 * 16 } else { 1100 } {
        let _ = full.admit(&[7, 8], &origins[i % 16], T0);
    }
    let a = allocations_during(|| {
        for o in &origins {
            assert!(full.admit(&[7, 8], o, T0).is_drop());
        }
    });
    assert_eq!(a, 0, "allocations of dropped groups");
}
