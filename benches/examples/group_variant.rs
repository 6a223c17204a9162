//! One limiter workload in a loop, for a profiler (`valgrind --tool=callgrind`, `perf record`):
//! the criterion `group2` row's passes (3,072 two-app groups with pre-derived keys, one origin
//! each, every third group's second key at its limit L = 10, each pass in a fresh window) on
//! txgate or on the go-algorand-style mutex baseline, or the same keys admitted one at a time.
//!
//! ```text
//! cargo build --profile bench -p txgate-benches --example group_variant
//! valgrind --tool=callgrind --toggle-collect='*group_variant*passes*' \
//!     target/release/examples/group_variant txgate 20
//! ```
//!
//! Variants: `txgate` (`admit_keys` of each group), `mutex` (`should_drop_keys`, go-algorand's
//! `shouldDropKeys`), `key` (txgate's `admit_key` of each group's first key). The second
//! argument is the number of passes (default 20). Prints the admissions, so that a change of
//! the workload shows.

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;

use txgate_benches::eviction::origin;
use txgate_benches::mutex_limiter::MutexLimiter;
use txgate_ratelimit::{AppKey, AppRateLimiter, Config};

const SEC: u64 = 1_000_000_000;
const WINDOW: u64 = 10 * SEC;
const T0: u64 = 1_700_000_000 * SEC;
const SALT: [u8; 16] = [7; 16];
const GROUPS: u32 = 3072;

/// Runs `passes` passes of `variant`; each pass first fills every third group's second key to
/// its limit in the pass's window. Returns the admissions.
#[inline(never)]
fn passes(variant: &str, n: u32, t: &AppRateLimiter, m: &MutexLimiter, apps: [u64; 2]) -> u64 {
    let origins: Vec<_> = (0..GROUPS).map(origin).collect();
    let tkeys: Vec<[AppKey; 2]> = origins
        .iter()
        .map(|o| apps.map(|a| t.app_key(a, o)))
        .collect();
    let mkeys: Vec<[(usize, u64); 2]> = origins.iter().map(|o| apps.map(|a| m.key(a, o))).collect();
    let limit = NonZeroU32::new(10).expect("non-zero");
    let mut admitted = 0;
    for pass in 0..n {
        // Two windows apart: the last pass's counts have slid out.
        let now = T0 + u64::from(2 * pass + 2) * WINDOW;
        match variant {
            "txgate" | "key" => {
                for k in tkeys.iter().step_by(3) {
                    assert!(t.admit_keys_n(&k[1..], limit, now).expect("L").is_admit());
                }
                admitted += run_txgate(variant == "key", t, &tkeys, now);
            }
            "mutex" => {
                for k in mkeys.iter().step_by(3) {
                    for _ in 0..10 {
                        assert!(!m.should_drop_keys(&k[1..], now));
                    }
                }
                admitted += run_mutex(m, &mkeys, now);
            }
            other => panic!("unknown variant {other}"),
        }
    }
    admitted
}

/// The timed part of a txgate pass (callgrind: `--toggle-collect='*run_txgate*'`).
#[inline(never)]
fn run_txgate(single: bool, t: &AppRateLimiter, keys: &[[AppKey; 2]], now: u64) -> u64 {
    let mut admitted = 0;
    for k in keys {
        let d = if single {
            t.admit_key(k[0], now)
        } else {
            t.admit_keys(k, now)
        };
        admitted += u64::from(black_box(d).is_admit());
    }
    admitted
}

/// The timed part of a mutex pass (callgrind: `--toggle-collect='*run_mutex*'`).
#[inline(never)]
fn run_mutex(m: &MutexLimiter, keys: &[[(usize, u64); 2]], now: u64) -> u64 {
    let mut admitted = 0;
    for k in keys {
        admitted += u64::from(!black_box(m.should_drop_keys(k, now)));
    }
    admitted
}

fn main() {
    let variant = std::env::args().nth(1).unwrap_or_else(|| "txgate".into());
    let n: u32 = std::env::args()
        .nth(2)
        .map_or(20, |s| s.parse().expect("passes: a number"));
    let t = AppRateLimiter::new(
        Config::default()
            .with_max_size(1 << 20)
            .with_rate_per_second(1)
            .with_window(Duration::from_nanos(WINDOW))
            .with_shards(128)
            .with_salt(Some(SALT)),
    )
    .expect("valid config");
    let m = MutexLimiter::new(1 << 20, 10, WINDOW, SALT);
    // Two apps in different shards and buckets (as the criterion row).
    let o = origin(0);
    let second = (42..)
        .find(|&a| {
            t.app_key(a, &o).shard() != t.app_key(41, &o).shard()
                && m.key(a, &o).0 != m.key(41, &o).0
        })
        .expect("some app");
    let admitted = passes(&variant, n, &t, &m, [41, second]);
    println!("{variant}: {n} passes, {admitted} admitted");
}
