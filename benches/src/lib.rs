//! Shared workloads and baselines for the txgate benches (seeded, so every run measures the same
//! keys).
//!
//! # Modules
//! - This file: [`random_u64s`] and [`random_ids`], seeded pre-hashed keys and 32-byte ids;
//!   [`thread_cpu`], the calling thread's CPU time, for probes that must not count waiting for a
//!   core; [`median`], the figure the probes report over their rounds.
//! - [`mutex_limiter`]: [`MutexLimiter`](mutex_limiter::MutexLimiter), go-algorand's
//!   mutex-and-LRU `appRateLimiter` design in Rust, the ratelimit benches' baseline.
//! - [`eviction`]: the `new_key_eviction` stream (2^21 operations over 2^20 pairs against 2^16
//!   keys of room) with its pre-derived keys, for the ratelimit bench and its A/B probe.

pub mod eviction;
pub mod mutex_limiter;

use std::time::Duration;

use rand::{Rng, SeedableRng, rngs::SmallRng};

/// The median of `v` (the upper of the two middle values when `v.len()` is even), the figure
/// the probes report over their rounds.
///
/// # Panics
///
/// If `v` is empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `n` uniformly random 64-bit values from a fixed `seed` (pre-hashed keys for filters that take them).
pub fn random_u64s(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random()).collect()
}

/// `n` uniformly random 32-byte ids (transaction ids) from a fixed `seed`.
pub fn random_ids(n: usize, seed: u64) -> Vec<[u8; 32]> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random()).collect()
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): the time it ran, not the time it
/// waited for a core, so a loaded machine's scheduling does not enter a probe's figure. `None`
/// off Unix, where the probes fall back to the wall clock.
///
/// # Panics
///
/// If the kernel refuses the thread CPU clock (POSIX.1-2001; Linux has it since 2.6.12).
#[cfg(unix)]
pub fn thread_cpu() -> Option<Duration> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .expect("the thread CPU clock");
    Some(Duration::new(t.tv_sec() as u64, t.tv_nsec() as u32))
}

/// See the Unix version: no thread CPU clock here.
#[cfg(not(unix))]
pub fn thread_cpu() -> Option<Duration> {
    None
}
