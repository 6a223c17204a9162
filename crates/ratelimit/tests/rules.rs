//! One test per rule of the limiter, with the numbers the rules give.

use std::collections::HashSet;
use std::num::NonZeroU32;
use std::time::Duration;

use txgate_ratelimit::{
    AppKey, AppRateLimiter, Config, ConfigError, Decision, InsufficientCapacity, Origin,
};

const SEC: u64 = 1_000_000_000;
/// An interval boundary for every window used here (a multiple of 10 s and of 3 s).
const T0: u64 = 1_700_000_010 * SEC;

fn limiter(rate_per_second: u64, window_secs: u64) -> AppRateLimiter {
    AppRateLimiter::new(
        Config::default()
            .with_rate_per_second(rate_per_second)
            .with_window(Duration::from_secs(window_secs))
            .with_max_size(1024)
            .with_shards(8)
            .with_salt(Some([3; 16])),
    )
    .unwrap()
}

fn peer(i: u32) -> Origin {
    Origin::from_peer_id(&i.to_le_bytes())
}

fn admitted(l: &AppRateLimiter, apps: &[u64], origin: &Origin, now: u64, times: usize) -> usize {
    (0..times)
        .filter(|_| l.admit(apps, origin, now).is_admit())
        .count()
}

#[test]
fn limit_then_drop() {
    let l = limiter(1, 10);
    assert_eq!(l.limit(), 10);
    assert_eq!(admitted(&l, &[77], &peer(1), T0, 10), 10);
    assert!(l.admit(&[77], &peer(1), T0).is_drop());
    let s = l.stats();
    assert_eq!((s.admitted, s.dropped, s.entries, s.evicted), (10, 1, 1, 0));
}

#[test]
fn a_group_naming_one_app_many_times_counts_once() {
    let l = limiter(1, 3); // L = 3
    for _ in 0..3 {
        assert!(l.admit(&[5, 0, 5, 5, 5], &peer(1), T0).is_admit());
    }
    assert!(l.admit(&[5], &peer(1), T0).is_drop());
    assert_eq!(l.stats().entries, 1);
    let k = l.app_key(5, &peer(1));
    assert!(l.admit_keys(&[k, k, k], T0).is_drop());
}

#[test]
fn a_group_without_app_ids_is_always_admitted() {
    let l = limiter(1, 3);
    for _ in 0..10 {
        assert!(l.admit(&[], &peer(1), T0).is_admit());
        assert!(l.admit(&[0, 0], &peer(1), T0).is_admit());
    }
    let s = l.stats();
    assert_eq!((s.admitted, s.entries), (20, 0));
}

#[test]
fn interval_roll_weights_the_previous_interval() {
    // L = 10, window 10 s: 8 admitted at 1 s into a window; at 1 s into the next window the
    // estimate is floor(8 * 9 / 10) = 7, so 3 more are admitted and the 4th is dropped.
    let l = limiter(1, 10);
    assert_eq!(admitted(&l, &[1], &peer(1), T0 + SEC, 8), 8);
    assert_eq!(admitted(&l, &[1], &peer(1), T0 + 11 * SEC, 3), 3);
    assert!(l.admit(&[1], &peer(1), T0 + 11 * SEC).is_drop());
}

#[test]
fn two_windows_later_the_count_is_forgotten() {
    let l = limiter(1, 10);
    assert_eq!(admitted(&l, &[1], &peer(1), T0 + SEC, 10), 10);
    assert!(l.admit(&[1], &peer(1), T0 + 9 * SEC).is_drop());
    // Two intervals later both prev and cur are zero: the full L again, even at offset 0.
    assert_eq!(admitted(&l, &[1], &peer(1), T0 + 20 * SEC, 10), 10);
    assert!(l.admit(&[1], &peer(1), T0 + 20 * SEC).is_drop());
}

#[test]
fn drops_do_not_count() {
    // L = 2. Two admitted, then five drops. Halfway into the next window prev weighs
    // floor(2 * 5 / 10) = 1, so exactly one more is admitted; had the drops counted (7), none.
    let l = limiter(1, 2);
    assert_eq!(l.limit(), 2);
    let t0 = T0; // multiple of 2 s
    assert_eq!(admitted(&l, &[9], &peer(1), t0, 2), 2);
    assert_eq!(admitted(&l, &[9], &peer(1), t0, 5), 0);
    assert_eq!(admitted(&l, &[9], &peer(1), t0 + 3 * SEC, 2), 1);
}

#[test]
fn a_dropped_group_changes_no_counter() {
    // App 1 has room, app 2 is full: the group is dropped and app 1 keeps its budget.
    let l = limiter(1, 3); // L = 3
    assert_eq!(admitted(&l, &[2], &peer(1), T0, 3), 3);
    assert_eq!(admitted(&l, &[1, 2], &peer(1), T0, 5), 0);
    assert_eq!(admitted(&l, &[1], &peer(1), T0, 4), 3);
}

#[test]
fn penalty_arithmetic() {
    // L = 200: one penalty is max(1, 200 / 4) = 50; two leave room for exactly 100.
    let l = limiter(20, 10);
    assert_eq!((l.limit(), l.penalty()), (200, 50));
    l.penalize(&[4, 4], &peer(1), T0);
    l.penalize(&[4], &peer(1), T0);
    assert_eq!(admitted(&l, &[4], &peer(1), T0, 100), 100);
    assert!(l.admit(&[4], &peer(1), T0).is_drop());
    // L = 3: the penalty is max(1, 0) = 1.
    let l = limiter(1, 3);
    assert_eq!(l.penalty(), 1);
    l.penalize(&[4], &peer(1), T0);
    assert_eq!(admitted(&l, &[4], &peer(1), T0, 3), 2);
}

#[test]
fn two_origins_are_independent() {
    let l = limiter(1, 3);
    assert_eq!(admitted(&l, &[1], &peer(1), T0, 3), 3);
    assert!(l.admit(&[1], &peer(1), T0).is_drop());
    assert_eq!(admitted(&l, &[1], &peer(2), T0, 4), 3);
    assert_eq!(admitted(&l, &[2], &peer(1), T0, 4), 3);
}

/// max_size 512 over 128 shards: capacity 4 per shard.
fn small(rate: u64) -> AppRateLimiter {
    AppRateLimiter::new(
        Config::default()
            .with_rate_per_second(rate)
            .with_window(Duration::from_secs(10))
            .with_max_size(512)
            .with_shards(128)
            .with_salt(Some([5; 16])),
    )
    .unwrap()
}

#[test]
#[cfg_attr(
    miri,
    ignore = "about 1,000 blake2b digests: many minutes under Miri; eviction is covered by the other tests there"
)]
fn capacity_holds_under_513_origins_for_one_app() {
    let l = small(10);
    assert_eq!(l.capacity_per_shard(), 4);
    for i in 0..513 {
        assert!(l.admit(&[1], &peer(i), T0).is_admit());
    }
    // One app's senders share a shard: 4 tracked, 509 evicted.
    let s = l.stats();
    assert_eq!((s.admitted, s.entries, s.evicted), (513, 4, 509));
    let shard = l.app_key(1, &peer(0)).shard();
    assert!((0..513).all(|i| l.app_key(1, &peer(i)).shard() == shard));
    // The survivors are the last four.
    let tracked: HashSet<(u32, u64)> = l.tracked_keys().into_iter().collect();
    let last4: HashSet<(u32, u64)> = (509..513)
        .map(|i| l.app_key(1, &peer(i)))
        .map(|k| (k.shard(), k.hash()))
        .collect();
    assert_eq!(tracked, last4);
}

fn tracked(l: &AppRateLimiter, keys: &[AppKey]) -> Vec<bool> {
    let t: HashSet<(u32, u64)> = l.tracked_keys().into_iter().collect();
    keys.iter()
        .map(|k| t.contains(&(k.shard(), k.hash())))
        .collect()
}

#[test]
fn eviction_is_exact_lru_in_small_shards() {
    let l = small(10);
    let k: Vec<AppKey> = (0..5).map(|i| l.app_key(1, &peer(i))).collect();
    for key in &k[..4] {
        assert!(l.admit_key(*key, T0).is_admit());
    }
    assert!(l.admit_key(k[4], T0).is_admit());
    assert_eq!(tracked(&l, &k), [false, true, true, true, true]);

    let l = small(10);
    for key in &k[..4] {
        assert!(l.admit_key(*key, T0).is_admit());
    }
    assert!(l.admit_key(k[0], T0).is_admit());
    assert!(l.admit_key(k[4], T0).is_admit());
    assert_eq!(tracked(&l, &k), [true, false, true, true, true]);
    assert_eq!(l.stats().evicted, 1);
}

#[test]
fn eviction_prefers_stale_keys_over_recent_ones() {
    let l = small(1); // L = 10, window 10 s, 4 keys per shard
    let a: Vec<AppKey> = (0..5).map(|i| l.app_key(1, &peer(i))).collect();
    let (t1, t2) = (T0 + 10 * SEC, T0 + 20 * SEC);
    for key in &a[1..4] {
        assert!(l.admit_key(*key, t1).is_admit());
    }
    // a[0] is created last, by a caller one window behind: the most recently used key, in
    // interval T0's, which is stale two windows on.
    assert!(l.admit_key(a[0], T0).is_admit());
    // At t2 a[1..4] are current (one interval back) and a[0] is stale: it goes first, where
    // least-recently-used order alone would take a[1].
    assert!(l.admit_key(a[4], t2).is_admit());
    assert_eq!(tracked(&l, &a), [false, true, true, true, true]);
}

/// Every access leaves its key current, a dropped one too (single-key or a group): its interval
/// is rolled and stored, so a key in use is never evicted as stale.
#[test]
fn a_dropped_access_leaves_its_key_current() {
    let l = small(1); // L = 10, window 10 s, 4 keys per shard
    let a: Vec<AppKey> = (0..5).map(|i| l.app_key(1, &peer(i))).collect();
    let b = (2..)
        .map(|app| l.app_key(app, &peer(0)))
        .find(|k| k.shard() != a[0].shard())
        .unwrap();
    let (t1, t2) = (T0 + 10 * SEC, T0 + 20 * SEC);
    assert_eq!(
        (0..10).filter(|_| l.admit_key(a[0], T0).is_admit()).count(),
        10
    );
    for key in &a[1..4] {
        assert!(l.admit_key(*key, T0).is_admit());
    }
    // At t1 (offset 0) a[2] and a[3] are used first; then a[0], whose 10 in the previous
    // interval weigh fully, is dropped, and so is a group {a[1], b} on b (full at t1).
    assert!(l.admit_key(a[2], t1).is_admit());
    assert!(l.admit_key(a[3], t1).is_admit());
    assert!(l.admit_key(a[0], t1).is_drop());
    assert_eq!(
        (0..10).filter(|_| l.admit_key(b, t1).is_admit()).count(),
        10
    );
    assert!(l.admit_keys(&[a[1], b], t1).is_drop());
    // The drops stored the rolled counts: (prev, cur) = (10, 0) and (1, 0).
    assert_eq!(l.counts(a[0]), Some((10, 0)));
    assert_eq!(l.counts(a[1]), Some((1, 0)));
    // At t2 no key is stale (all in t1's interval), so a new key evicts the least recently
    // used, a[2]. Had the drops left a[0] and a[1] in T0's interval, a[0] would have gone as
    // stale.
    assert!(l.admit_key(a[4], t2).is_admit());
    assert_eq!(tracked(&l, &a), [true, true, false, true, true]);
}

#[test]
fn late_callers_count_in_the_keys_interval() {
    let l = limiter(1, 10);
    assert_eq!(admitted(&l, &[1], &peer(1), T0 + 10 * SEC, 4), 4);
    // A caller whose clock is one interval behind: prev weighs fully (offset 0), cur = 4.
    assert_eq!(admitted(&l, &[1], &peer(1), T0 + 9 * SEC, 10), 6);
    assert!(l.admit(&[1], &peer(1), T0 + 10 * SEC).is_drop());
}

#[test]
fn config_errors_are_typed() {
    // Default rate, window and shards; a small max_size keeps the tables cheap to build.
    let base = Config::default()
        .with_salt(Some([0; 16]))
        .with_max_size(4096);
    let err = |c: Config| AppRateLimiter::new(c).unwrap_err();
    assert!(matches!(
        err(base.clone().with_max_size(0)),
        ConfigError::ZeroMaxSize
    ));
    assert!(matches!(
        err(base.clone().with_rate_per_second(0)),
        ConfigError::ZeroRate
    ));
    assert!(matches!(
        err(base.clone().with_window(Duration::ZERO)),
        ConfigError::ZeroWindow
    ));
    assert!(matches!(
        err(base.clone().with_window(Duration::MAX)),
        ConfigError::WindowTooLong { .. }
    ));
    for shards in [0, 3, 100] {
        assert!(matches!(
            err(base.clone().with_shards(shards)),
            ConfigError::ShardsNotPowerOfTwo { shards: s } if s == shards
        ));
    }
    assert!(matches!(
        err(base.clone().with_max_size(255)),
        ConfigError::MaxSizeBelowShards {
            max_size: 255,
            shards: 128
        }
    ));
    assert!(matches!(
        err(base
            .clone()
            .with_rate_per_second(1)
            .with_window(Duration::from_millis(999))),
        ConfigError::LimitBelowOne {
            rate_per_second: 1,
            ..
        }
    ));
    assert!(matches!(
        err(base.clone().with_rate_per_second(3_355_444)),
        ConfigError::LimitTooLarge {
            limit: 33_554_440,
            max: 33_554_431
        }
    ));
    // Tables that cannot exist: an error, not a panic or an abort (the last, 4.5 TB that
    // overflows nothing, only where an allocation can fail without being tried: not under Miri).
    let huge: &[(usize, usize)] = if cfg!(miri) {
        &[(usize::MAX, 1), (usize::MAX / 4, 1)]
    } else {
        &[(usize::MAX, 1), (usize::MAX / 4, 1), (1 << 45, 128)]
    };
    for &(max_size, shards) in huge {
        assert!(
            matches!(
                err(base.clone().with_max_size(max_size).with_shards(shards)),
                ConfigError::TableTooLarge { .. }
            ),
            "{max_size} over {shards}"
        );
    }
    // The edges that pass: 2 keys per shard, L = 1, L = 65,535, L = 2^25 - 1 (the largest);
    // sub-second windows.
    let ok = |c: Config| AppRateLimiter::new(c).unwrap();
    assert_eq!(ok(base.clone().with_max_size(256)).capacity_per_shard(), 2);
    assert_eq!(
        ok(base
            .clone()
            .with_rate_per_second(1)
            .with_window(Duration::from_secs(1)))
        .limit(),
        1
    );
    assert_eq!(
        ok(base
            .clone()
            .with_rate_per_second(13_107)
            .with_window(Duration::from_secs(5)))
        .limit(),
        65_535
    );
    assert_eq!(
        ok(base
            .clone()
            .with_rate_per_second(33_554_431)
            .with_window(Duration::from_secs(1)))
        .limit(),
        33_554_431
    );
    assert_eq!(
        ok(base
            .clone()
            .with_rate_per_second(1000)
            .with_window(Duration::from_millis(10)))
        .limit(),
        10
    );
}

#[test]
#[cfg_attr(miri, ignore = "allocates and drops 2^20 slots: minutes under Miri")]
fn defaults_are_upstreams() {
    // L = 100/s x 10 s, 1,048,576 keys over 128 shards of 8,192.
    let d = AppRateLimiter::new(Config::default().with_salt(Some([0; 16]))).unwrap();
    assert_eq!(
        (d.limit(), d.capacity_per_shard(), d.penalty()),
        (1000, 8192, 250)
    );
}

#[test]
fn each_setter_sets_its_field_and_only_that_one() {
    let d = Config::default();
    // The defaults, field by field: go-algorand's values and no salt.
    assert_eq!(
        (d.max_size, d.rate_per_second, d.window, d.shards, d.salt),
        (1 << 20, 100, Duration::from_secs(10), 128, None)
    );
    // Each setter from the default: the default with that one field changed.
    let mut want = d.clone();
    want.max_size = 4096;
    assert_eq!(Config::default().with_max_size(4096), want);
    let mut want = d.clone();
    want.rate_per_second = 7;
    assert_eq!(Config::default().with_rate_per_second(7), want);
    let mut want = d.clone();
    want.window = Duration::from_millis(1500);
    assert_eq!(
        Config::default().with_window(Duration::from_millis(1500)),
        want
    );
    let mut want = d.clone();
    want.shards = 16;
    assert_eq!(Config::default().with_shards(16), want);
    let mut want = d.clone();
    want.salt = Some([9; 16]);
    assert_eq!(Config::default().with_salt(Some([9; 16])), want);
    // All of them chained, then each set back to its default value: the default again.
    let c = Config::default()
        .with_max_size(4096)
        .with_rate_per_second(7)
        .with_window(Duration::from_millis(1500))
        .with_shards(16)
        .with_salt(Some([9; 16]));
    assert_eq!(
        (c.max_size, c.rate_per_second, c.window, c.shards, c.salt),
        (4096, 7, Duration::from_millis(1500), 16, Some([9; 16]))
    );
    let back = c
        .with_max_size(1 << 20)
        .with_rate_per_second(100)
        .with_window(Duration::from_secs(10))
        .with_shards(128)
        .with_salt(None);
    assert_eq!(back, d);
}

#[test]
fn keys_depend_on_app_origin_and_salt() {
    let a = limiter(1, 10);
    let b = AppRateLimiter::new(a.config().clone().with_salt(Some([4; 16]))).unwrap();
    let k = a.app_key(1, &peer(1));
    assert_eq!(k, a.app_key(1, &peer(1)));
    assert_ne!(k.hash(), a.app_key(2, &peer(1)).hash());
    assert_ne!(k.hash(), a.app_key(1, &peer(2)).hash());
    assert_ne!(k.hash(), b.app_key(1, &peer(1)).hash());
    assert_eq!(
        k.hash(),
        txgate_ratelimit::derive_key_hash(1, &[3; 16], &peer(1))
    );
    // A random salt is drawn when none is given.
    let r = AppRateLimiter::new(a.config().clone().with_salt(None)).unwrap();
    let s = AppRateLimiter::new(a.config().clone().with_salt(None)).unwrap();
    assert_ne!(r.salt(), s.salt());
}

#[test]
fn drops_name_the_app_and_the_time_until_it_admits_again() {
    // L = 10, window 10 s: 10 admissions of app 77 one second into a window.
    let l = limiter(1, 10);
    let t = T0 + SEC;
    for left in (0..10u32).rev() {
        assert!(matches!(
            l.admit(&[77], &peer(1), t),
            Decision::Admit { remaining: Some(r), .. } if r == left
        ));
    }
    // A group [3, 77, 3]: app 77 (index 1) is over. This interval is full (cur + 1 > L); in the
    // next one prev = 10 weighs floor(10 * (10 s - o) / 10 s), which is 9 from o = 1 ns on:
    // 9 + 0 + 1 <= 10. So it admits again 9 s + 1 ns from now.
    match l.admit(&[3, 77, 3], &peer(1), t) {
        Decision::Drop {
            index,
            retry_after_ns,
            ..
        } => assert_eq!((index, retry_after_ns), (1, 9 * SEC + 1)),
        d => panic!("{d:?}"),
    }
    let d = l.admit(&[77], &peer(1), t);
    assert_eq!(d.retry_after(), Some(Duration::from_nanos(9 * SEC + 1)));
    assert!(l.admit(&[77], &peer(1), t + 9 * SEC).is_drop());
    assert!(l.admit(&[77], &peer(1), t + 9 * SEC + 1).is_admit());
    // The tightest key of an admitted group: app 3 has 10 left before, app 5 is fresh.
    assert!(matches!(
        l.admit(&[3, 5], &peer(1), t + 9 * SEC + 1),
        Decision::Admit {
            remaining: Some(9),
            ..
        }
    ));
    assert!(matches!(
        l.admit(&[], &peer(1), t),
        Decision::Admit {
            remaining: None,
            ..
        }
    ));
}

#[test]
fn keys_equal_after_shard_reduction_are_one_key() {
    // 8 shards: shard 9 is shard 1. A group naming both counts the key once.
    let l = limiter(1, 3); // L = 3
    let (a, b) = (AppKey::from_parts(1, 0xABCD), AppKey::from_parts(9, 0xABCD));
    for _ in 0..3 {
        assert!(l.admit_keys(&[a, b], T0).is_admit());
    }
    assert!(l.admit_key(b, T0).is_drop());
    assert_eq!(l.stats().entries, 1);
    assert_eq!(l.tracked_keys(), vec![(1, 0xABCD)]);
}

#[test]
fn callers_behind_count_in_the_keys_interval_and_change_nothing() {
    let l = limiter(1, 10); // L = 10, window 10 s
    let key = l.app_key(1, &peer(1));
    assert_eq!(admitted(&l, &[1], &peer(1), T0 + 30 * SEC, 10), 10);
    // Three intervals behind: counted in the key's interval at offset 0 (cur 10 of L = 10), so
    // all dropped, and the key keeps its interval and counts (never rolled backwards).
    assert_eq!(admitted(&l, &[1], &peer(1), T0 + 5 * SEC, 10), 0);
    assert_eq!(l.counts(key), Some((0, 10)));
    // Back at the key's clock one interval on: prev 10 weighs floor(10 * 9 / 10) = 9 at 1 s.
    assert_eq!(admitted(&l, &[1], &peer(1), T0 + 41 * SEC, 10), 1);
    assert_eq!(l.counts(key), Some((10, 1)));
}

/// A caller far behind never makes a key stale for one on time: the key it used stays the most
/// recently used and current, so a new key evicts the least recently used one instead.
#[test]
fn a_caller_behind_never_makes_a_key_stale() {
    let l = small(1); // L = 10, window 10 s, 4 keys per shard
    let a: Vec<AppKey> = (0..5).map(|i| l.app_key(1, &peer(i))).collect();
    let t2 = T0 + 20 * SEC;
    for key in &a[..4] {
        assert!(l.admit_key(*key, t2).is_admit());
    }
    // Two intervals behind: counted in a[0]'s interval (cur 1, so admitted), a[0] stays in t2's
    // interval and becomes the most recently used.
    assert!(l.admit_key(a[0], T0).is_admit());
    assert_eq!(l.counts(a[0]), Some((0, 2)));
    // At t2 no key is stale, so the least recently used, a[1], goes (rolled back to T0's
    // interval, a[0] would have gone as stale).
    assert!(l.admit_key(a[4], t2).is_admit());
    assert_eq!(tracked(&l, &a), [true, false, true, true, true]);
}

#[test]
fn a_key_idle_for_half_the_interval_modulus_admits() {
    // Window 1 us, L = 1: a key idle for 2^28 + 10 windows (268 s) must not be mistaken for one
    // ahead of the caller.
    let l = AppRateLimiter::new(
        Config::default()
            .with_rate_per_second(1_000_000)
            .with_window(Duration::from_micros(1))
            .with_max_size(1024)
            .with_shards(8)
            .with_salt(Some([3; 16])),
    )
    .unwrap();
    assert!(l.admit(&[1], &peer(1), T0).is_admit());
    let later = T0 + ((1 << 28) + 10) * 1000;
    assert!(l.admit(&[1], &peer(1), later).is_admit());
}

#[test]
fn a_group_of_many_app_ids_counts_each_app_once() {
    // 10,000 app ids over 100 distinct apps (500 over 20 under Miri): a sort, not a quadratic
    // scan; each app once.
    let (len, distinct) = if cfg!(miri) { (500, 20) } else { (10_000, 100) };
    let l = limiter(1, 3); // L = 3
    let apps: Vec<u64> = (0..len).map(|i| 1 + (i * 37) % distinct).collect();
    for _ in 0..3 {
        assert!(l.admit(&apps, &peer(1), T0).is_admit());
    }
    assert_eq!(l.stats().entries, distinct as usize);
    // Over: the index is the first occurrence of the app that is full.
    match l.admit(&apps, &peer(1), T0) {
        Decision::Drop { index, .. } => {
            assert_eq!(apps.iter().position(|&a| a == apps[index]), Some(index));
        }
        d => panic!("{d:?}"),
    }
    l.penalize(&apps, &peer(2), T0);
    assert_eq!(l.stats().entries, 2 * distinct as usize);
}

#[test]
fn now_calls_read_the_limiters_clock() {
    use std::sync::Arc;
    use txgate_ratelimit::{Clock, ManualClock};

    let clock = Arc::new(ManualClock::new(T0 + 4 * SEC));
    let config = Config::default()
        .with_rate_per_second(1)
        .with_window(Duration::from_secs(10))
        .with_max_size(1024)
        .with_shards(8)
        .with_salt(Some([3; 16]));
    let l = AppRateLimiter::with_clock(config.clone(), Arc::clone(&clock)).unwrap();
    let twin = AppRateLimiter::new(config).unwrap();
    assert_eq!(l.now_ns(), T0 + 4 * SEC);
    // The same decisions as the explicit-time calls of a twin limiter at the clock's times.
    let key = l.app_key(9, &peer(1));
    for step in 0..30u64 {
        let now = clock.now_ns();
        let (got, want) = if step % 3 == 0 {
            (l.admit_now(&[9], &peer(1)), twin.admit(&[9], &peer(1), now))
        } else if step % 5 == 0 {
            let two = std::num::NonZeroU32::new(2).unwrap();
            (
                l.admit_n_now(&[9], &peer(1), two).unwrap(),
                twin.admit_n(&[9], &peer(1), two, now).unwrap(),
            )
        } else {
            let twin_key = twin.app_key(9, &peer(1));
            (l.admit_keys_now(&[key]), twin.admit_keys(&[twin_key], now))
        };
        assert_eq!(got, want, "step {step} at {now}");
        clock.advance(Duration::from_millis(700));
    }
    // 21 s of calls every 0.7 s at L = 10 per 10 s: some were dropped, and both agree.
    assert_eq!(l.stats(), twin.stats());
    assert!(l.stats().dropped > 0);
    // penalize_now adds max(1, L / 4) = 2 at the clock's time.
    clock.set(T0 + 100 * SEC);
    l.penalize_now(&[11], &peer(2));
    assert_eq!(l.counts(l.app_key(11, &peer(2))), Some((0, 2)));
}

#[test]
#[cfg_attr(
    miri,
    ignore = "reads the wall clock, which Miri's isolation forbids; the clock logic is covered by now_calls_read_the_limiters_clock"
)]
fn the_system_clock_is_the_wall_clock() {
    use txgate_ratelimit::{Clock, SystemClock};
    // After 2020, before 2200, and what a default limiter reads.
    let wall = SystemClock.now_ns();
    assert!((1_577_836_800 * SEC..7_258_118_400 * SEC).contains(&wall));
    assert!(AppRateLimiter::new(Config::default()).unwrap().now_ns() >= wall);
}

fn cost(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap()
}

#[test]
fn weighted_admissions_count_their_cost() {
    let l = limiter(1, 10); // L = 10
    let p = peer(1);
    let d = l.admit_n(&[7], &p, cost(6), T0).unwrap();
    assert!(left(d, 4));
    // 6 + 5 > 10: dropped, nothing counted. 6 + 4 fits exactly.
    let d = l.admit_n(&[7], &p, cost(5), T0).unwrap();
    assert!(matches!(d, Decision::Drop { index: 0, .. }));
    assert_eq!(l.counts(l.app_key(7, &p)), Some((0, 6)));
    assert!(left(l.admit_n(&[7], &p, cost(4), T0).unwrap(), 0));
    assert_eq!(l.counts(l.app_key(7, &p)), Some((0, 10)));
    // A group counts its cost once on each distinct app; the app at its limit drops it whole.
    let d = l.admit_n(&[3, 4, 3], &p, cost(3), T0).unwrap();
    assert!(left(d, 7));
    let d = l.admit_n(&[3, 7], &p, cost(1), T0).unwrap();
    assert!(matches!(d, Decision::Drop { index: 1, .. }), "{d:?}");
    assert_eq!(l.counts(l.app_key(3, &p)), Some((0, 3)));
    assert_eq!(l.counts(l.app_key(4, &p)), Some((0, 3)));
    // Stats count groups, whatever their cost; a group without app ids is admitted.
    assert!(l.admit_n(&[0], &p, cost(10), T0).unwrap().is_admit());
    let s = l.stats();
    assert_eq!((s.admitted, s.dropped, s.entries), (4, 2, 3));
    // Pre-derived keys decide the same.
    let k = l.app_key(4, &p);
    assert!(left(l.admit_keys_n(&[k, k], cost(7), T0).unwrap(), 0));
    assert!(l.admit_keys_n(&[k], cost(1), T0).unwrap().is_drop());
}

/// An admission leaving `remaining` on its tightest key.
fn left(d: Decision, remaining: u32) -> bool {
    matches!(d, Decision::Admit { remaining: Some(r), .. } if r == remaining)
}

#[test]
fn a_weighted_drop_says_when_that_cost_fits() {
    let l = limiter(1, 10); // L = 10, 10 s window
    let p = peer(2);
    assert!(l.admit_n(&[9], &p, cost(6), T0).unwrap().is_admit());
    // In the next interval prev = 6 weighs floor(6 * (10 s - offset) / 10 s): 6 at offset 0,
    // 5 from 1 ns on. A cost of 5 fits once the weight is 5: 10 s + 1 ns. A cost of 9 fits once
    // it is 1: floor(6 (W - o) / W) <= 1 iff o >= W - floor(2 W / 6) = 10 s - 3,333,333,333 ns.
    let wait = 10 * SEC + 6_666_666_667;
    for (c, want) in [(5, 10 * SEC + 1), (9, wait)] {
        let d = l.admit_n(&[9], &p, cost(c), T0).unwrap();
        let Decision::Drop { retry_after_ns, .. } = d else {
            panic!("cost {c}: {d:?}")
        };
        assert_eq!(retry_after_ns, want, "cost {c}");
    }
    // The wait is the first instant that admits: one nanosecond earlier still drops (and a drop
    // changes nothing).
    assert!(
        l.admit_n(&[9], &p, cost(9), T0 + wait - 1)
            .unwrap()
            .is_drop()
    );
    assert!(l.admit_n(&[9], &p, cost(9), T0 + wait).unwrap().is_admit());
}

#[test]
fn a_cost_above_the_limit_is_an_error_and_touches_nothing() {
    let l = limiter(1, 10); // L = 10
    let p = peer(4);
    let refused = |r: Result<Decision, InsufficientCapacity>| r.map_err(|e| (e.cost, e.limit));
    assert_eq!(refused(l.admit_n(&[5, 6], &p, cost(11), T0)), Err((11, 10)));
    let k = l.app_key(5, &p);
    assert_eq!(refused(l.admit_keys_n(&[k], cost(11), T0)), Err((11, 10)));
    // Even a group without app ids (which `admit` always admits): the cost is checked first.
    assert_eq!(refused(l.admit_n(&[0], &p, cost(11), T0)), Err((11, 10)));
    // Beyond 65,535 too.
    let big = l.admit_n(&[5], &p, cost(70_000), T0).unwrap_err();
    assert_eq!((big.cost, big.limit), (70_000, 10));
    assert_eq!(
        big.to_string(),
        "a cost of 70000 exceeds the limit of 10 per window: no window can admit it"
    );
    let s = l.stats();
    assert_eq!((s.admitted, s.dropped, s.entries), (0, 0, 0));
    // L itself fits a fresh key.
    assert!(l.admit_n(&[5], &p, cost(10), T0).unwrap().is_admit());
}

#[test]
fn a_cost_of_one_decides_as_admit() {
    let (a, b) = (limiter(1, 3), limiter(1, 3));
    let p = peer(5);
    for step in 0..40u64 {
        let apps = [1 + step % 3, 1 + step % 2];
        let now = T0 + step * 400_000_000;
        let want = a.admit(&apps, &p, now);
        assert_eq!(b.admit_n(&apps, &p, cost(1), now), Ok(want), "step {step}");
    }
    assert_eq!(a.stats(), b.stats());
    assert!(a.stats().dropped > 0 && a.stats().admitted > 0);
}

/// Limits above 65,535 per window (go-algorand's `TxBacklogAppTxPerSecondRate: 10000` over 10 s
/// is 100,000): one key's decisions and admissions left, through exact-LRU and CLOCK shards,
/// equal a reference of go-algorand's rule written here in 128-bit integers with whole
/// intervals (no packing), while weighted admissions and penalties push its counts past 65,535
/// and the clock moves across intervals.
#[test]
fn limits_above_65535_count_exactly() {
    const L: u128 = 100_000;
    const W: u128 = 10 * SEC as u128;
    // The reference: (interval, prev, cur), rolled as go-algorand rolls them.
    #[derive(Clone, Copy)]
    struct Reference(u128, u128, u128);
    impl Reference {
        fn roll(&mut self, now: u128) -> u128 {
            let interval = now / W;
            if interval == self.0 + 1 {
                *self = Reference(interval, self.2, 0);
            } else if interval > self.0 + 1 {
                *self = Reference(interval, 0, 0);
            }
            now % W
        }
        fn used(&self, offset: u128) -> u128 {
            self.1 * (W - offset) / W + self.2
        }
    }
    for clock_ways in [None, Some(4)] {
        let config = Config::default()
            .with_rate_per_second(10_000)
            .with_window(Duration::from_secs(10))
            // 32 keys per shard: exact LRU; with 4 ways per set: CLOCK.
            .with_max_size(64)
            .with_shards(2)
            .with_clock_ways(clock_ways)
            .with_salt(Some([5; 16]));
        let l = AppRateLimiter::new(config).unwrap();
        assert_eq!(u128::from(l.limit()), L);
        let origin = peer(1);
        let mut r = Reference(u128::from(T0) / W, 0, 0);
        let mut now = T0;
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        let (mut admitted, mut dropped, mut wide) = (0, 0, 0);
        for step in 0..4_000 {
            now += next(900_000_000);
            let offset = r.roll(u128::from(now));
            if next(40) == 0 {
                l.penalize(&[7], &origin, now);
                r.2 = (r.2 + L / 4).min((1 << 25) - 1);
                continue;
            }
            let big = next(2) == 0;
            let cost = 1 + next(if big { 40_000 } else { 9 }) as u32;
            let got = l
                .admit_n(&[7], &origin, NonZeroU32::new(cost).unwrap(), now)
                .unwrap();
            let used = r.used(offset) + u128::from(cost);
            if used <= L {
                r.2 += u128::from(cost);
                assert!(
                    matches!(got, Decision::Admit { remaining: Some(left), .. } if u128::from(left) == L - used),
                    "step {step}, {clock_ways:?}: {got:?}, want {} left",
                    L - used
                );
                admitted += 1;
            } else {
                assert!(got.is_drop(), "step {step}, {clock_ways:?}: {got:?}");
                dropped += 1;
            }
            wide += usize::from(r.1.max(r.2) > 65_535);
        }
        // Both outcomes, and many steps with a count above 65,535 (a wide state word).
        assert!(
            admitted > 500 && dropped > 500 && wide > 500,
            "{admitted} {dropped} {wide}"
        );
    }
}

/// With a limit above 65,535 the lag bound is 2^5 windows for every key: a caller behind a key
/// by up to that many windows is counted in the key's interval, even after its own admission
/// widened the key's state word, and the limiter answers as the model does whatever the skew;
/// a window filled to L stays full for a caller behind it.
#[test]
fn callers_behind_a_key_they_widen_agree_with_the_model_above_65535() {
    const W: u64 = 10 * SEC;
    let c = |n| NonZeroU32::new(n).unwrap();
    for skew in [1, 20, 32, 33, 100, 1 << 10] {
        // 32 keys per shard: exact LRU; with 4 ways per set: CLOCK.
        for clock_ways in [None, Some(4)] {
            let config = Config::default()
                .with_rate_per_second(10_000)
                .with_window(Duration::from_secs(10))
                .with_max_size(64)
                .with_shards(2)
                .with_clock_ways(clock_ways)
                .with_salt(Some([5; 16]));
            let l = AppRateLimiter::new(config.clone()).unwrap();
            let mut m = txgate_ratelimit::model::Model::new(&config).unwrap();
            let k = l.app_key(7, &peer(1));
            let (a, b) = (T0 + 2_000 * W + SEC, T0 + (2_000 - skew) * W + SEC);
            for (step, (now, cost)) in [(a, 50_000), (b, 20_000), (a, 40_000), (b, 1), (a, 1)]
                .into_iter()
                .enumerate()
            {
                let got = l.admit_keys_n(&[k], c(cost), now).unwrap();
                let want = m.admit_keys_n(&[k], c(cost), now).unwrap();
                assert_eq!(got, want, "skew {skew}, {clock_ways:?}, step {step}");
            }
        }
    }
    // Within the bound: 50,000 + 20,000 (behind, counted in the key's interval) + 30,000 fill
    // the window, and neither caller gets more.
    let l = limiter(10_000, 10);
    let (a, b) = (T0 + 2_000 * W + SEC, T0 + 1_980 * W + SEC);
    assert!(l.admit_n(&[7], &peer(1), c(50_000), a).unwrap().is_admit());
    assert!(l.admit_n(&[7], &peer(1), c(20_000), b).unwrap().is_admit());
    assert!(l.admit_n(&[7], &peer(1), c(30_000), a).unwrap().is_admit());
    assert!(l.admit_n(&[7], &peer(1), c(1), b).unwrap().is_drop());
    assert!(l.admit_n(&[7], &peer(1), c(1), a).unwrap().is_drop());
}

/// A group's keys are each app's `app_key` for the origin, however many distinct apps it has
/// (one; several, derived four at a time where the CPU takes the lanes, with a remainder), its
/// repeats counted once and its zero not at all: an admission counts one on exactly those keys.
/// Each group holds its apps twice and a zero, so up to 7 distinct apps take the path of groups
/// of at most 16 app ids, and 8 or more the sorted one.
#[test]
fn a_groups_keys_are_its_apps_keys() {
    for distinct in [1usize, 2, 3, 4, 5, 8, 9, 16, 17, 21] {
        let l = limiter(1, 10);
        let o = peer(7);
        let apps: Vec<u64> = (0..distinct as u64).map(|i| 100 + 3 * i).collect();
        // Each app twice (the repeat after the others), and a zero, which names no app.
        let mut group = apps.clone();
        group.extend(apps.iter().rev());
        group.insert(distinct / 2, 0);
        assert!(l.admit(&group, &o, T0).is_admit(), "{distinct} apps");
        for &app in &apps {
            assert_eq!(
                l.counts(l.app_key(app, &o)),
                Some((0, 1)),
                "app {app} of {distinct}"
            );
        }
        assert_eq!(l.stats().entries, distinct, "{distinct} apps");
        // Another origin's keys were not touched.
        assert_eq!(l.counts(l.app_key(apps[0], &peer(8))), None);
    }
}
