//! Instruction counts (callgrind) for txgate-ratelimit's admit paths: deterministic on a noisy
//! machine, so regressions show as count changes. Run only with
//! `cargo bench -p txgate-benches --bench ratelimit_iai` (needs valgrind and
//! `iai-callgrind-runner` 0.16.1); never through `cargo test`.

// The `library_benchmark` macros generate undocumented public modules.
#![allow(missing_docs)]

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use txgate_ratelimit::{AppKey, AppRateLimiter, Config, Origin};

const OPS: u32 = 1000;
const T0: u64 = 1_700_000_000 * 1_000_000_000;

fn limiter(max_size: usize) -> AppRateLimiter {
    AppRateLimiter::new(
        Config::default()
            .with_max_size(max_size)
            .with_rate_per_second(6553)
            .with_window(Duration::from_secs(10))
            .with_shards(128)
            .with_salt(Some([7; 16])),
    )
    .unwrap()
}

fn origin(i: u32) -> Origin {
    Origin::from_peer_id(&i.to_le_bytes())
}

/// 1,000 tracked keys (and their pre-derived keys), each admitted once already.
fn existing() -> (AppRateLimiter, Vec<AppKey>) {
    let l = limiter(1 << 16);
    let keys: Vec<AppKey> = (0..OPS)
        .map(|i| l.app_key(1 + u64::from(i % 16), &origin(i)))
        .collect();
    for k in &keys {
        assert!(l.admit_key(*k, T0).is_admit());
    }
    (l, keys)
}

/// A full table (capacity 2 per shard: exact-LRU shards) and 1,000 new keys: every admission
/// evicts.
fn full() -> (AppRateLimiter, Vec<AppKey>) {
    full_of(256, 10_000)
}

/// A full table of CLOCK shards (512 keys per shard, over the 64-key exact-LRU bound; 2^17 new
/// keys first, about 1,024 per shard, so every shard is full) and 1,000 new keys: every
/// admission evicts by CLOCK.
fn full_clock() -> (AppRateLimiter, Vec<AppKey>) {
    full_of(512 * 128, 1 << 17)
}

/// A table of `max_size` keys over 128 shards after `fill` admissions of new keys, and 1,000
/// keys not among them.
fn full_of(max_size: usize, fill: u32) -> (AppRateLimiter, Vec<AppKey>) {
    let l = limiter(max_size);
    for i in 0..fill {
        let _ = l.admit(&[1 + u64::from(i % 512)], &origin(1_000_000 + i), T0);
    }
    // Full, or nearly (a shard may be a key short, a CLOCK set may evict early): new keys
    // evict (the set-up is not counted).
    let s = l.stats();
    assert!(s.evicted > 0 && s.entries * 16 >= max_size * 15, "{s:?}");
    let keys = (0..OPS)
        .map(|i| l.app_key(1 + u64::from(i % 512), &origin(i)))
        .collect();
    (l, keys)
}

/// 1,000 two-app groups (apps 21 and 22, one origin each) with pre-derived keys, each admitted
/// once already; every third group's second key is then filled to the limit, so a third of the
/// groups are dropped. An app's keys share a shard, and 1,000 keys overflow its 512: most
/// lookups insert and evict (`third_over_tracked_1000` is the criterion `group2` row's case).
fn groups2() -> (AppRateLimiter, Vec<[AppKey; 2]>, u64) {
    let l = limiter(1 << 16);
    let groups: Vec<[AppKey; 2]> = (0..OPS)
        .map(|i| [21, 22].map(|a| l.app_key(a, &origin(i))))
        .collect();
    let rest = NonZeroU32::new(u32::try_from(l.limit() - 1).unwrap()).unwrap();
    for (i, g) in groups.iter().enumerate() {
        assert!(l.admit_keys(g, T0).is_admit());
        if i.is_multiple_of(3) {
            assert!(l.admit_keys_n(&g[1..], rest, T0).unwrap().is_admit());
            assert!(l.admit_keys(g, T0).is_drop());
        }
    }
    (l, groups, T0)
}

/// As the criterion `group2` rows: 1,000 two-app groups whose keys are all tracked (2,048 keys
/// per shard, nothing evicted), admitted once in an earlier window, so that every key rolls to
/// the new window on its first access; every third group's second key is filled to the limit in
/// the new window, so a third of the groups are dropped.
fn groups2_tracked() -> (AppRateLimiter, Vec<[AppKey; 2]>, u64) {
    let l = limiter(1 << 18);
    let groups: Vec<[AppKey; 2]> = (0..OPS)
        .map(|i| [21, 22].map(|a| l.app_key(a, &origin(i))))
        .collect();
    for g in &groups {
        assert!(l.admit_keys(g, T0).is_admit());
    }
    let now = T0 + 20_000_000_000;
    let all = NonZeroU32::new(u32::try_from(l.limit()).unwrap()).unwrap();
    for g in groups.iter().step_by(3) {
        assert!(l.admit_keys_n(&g[1..], all, now).unwrap().is_admit());
    }
    let s = l.stats();
    assert_eq!((s.evicted, s.entries), (0, 2 * OPS as usize), "{s:?}");
    (l, groups, now)
}

#[library_benchmark]
#[bench::existing_1000(existing())]
fn admit_key((l, keys): (AppRateLimiter, Vec<AppKey>)) -> AppRateLimiter {
    for k in keys {
        let _ = black_box(l.admit_key(k, T0));
    }
    l
}

#[library_benchmark]
#[bench::existing_1000(existing())]
fn admit_derive((l, _): (AppRateLimiter, Vec<AppKey>)) -> AppRateLimiter {
    for i in 0..OPS {
        let _ = black_box(l.admit(&[1 + u64::from(i % 16)], &origin(i), T0));
    }
    l
}

#[library_benchmark]
#[bench::evicting_1000(full())]
fn admit_key_evicting((l, keys): (AppRateLimiter, Vec<AppKey>)) -> AppRateLimiter {
    for k in keys {
        let _ = black_box(l.admit_key(k, T0));
    }
    l
}

#[library_benchmark]
#[bench::evicting_1000(full_clock())]
fn admit_key_evicting_clock((l, keys): (AppRateLimiter, Vec<AppKey>)) -> AppRateLimiter {
    for k in keys {
        let _ = black_box(l.admit_key(k, T0));
    }
    l
}

#[library_benchmark]
#[bench::group16_5apps_100(existing())]
fn admit_group((l, _): (AppRateLimiter, Vec<AppKey>)) -> AppRateLimiter {
    let apps: [u64; 16] = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1];
    for i in 0..100 {
        let _ = black_box(l.admit(&apps, &origin(i), T0));
    }
    l
}

#[library_benchmark]
#[bench::third_over_1000(groups2())]
#[bench::third_over_tracked_1000(groups2_tracked())]
fn admit_group2((l, groups, now): (AppRateLimiter, Vec<[AppKey; 2]>, u64)) -> AppRateLimiter {
    for g in groups {
        let _ = black_box(l.admit_keys(&g, now));
    }
    l
}

library_benchmark_group!(
    name = ratelimit;
    benchmarks = admit_key,
        admit_derive,
        admit_key_evicting,
        admit_key_evicting_clock,
        admit_group,
        admit_group2
);

main!(library_benchmark_groups = ratelimit);
