//! Shared workloads and baselines for the txgate benches (seeded, so every run measures the same
//! keys).
//!
//! # Modules
//! - This file: [`random_u64s`] and [`random_ids`], seeded pre-hashed keys and 32-byte ids.
//! - [`mutex_limiter`]: [`MutexLimiter`](mutex_limiter::MutexLimiter), go-algorand's
//!   mutex-and-LRU `appRateLimiter` design in Rust, the ratelimit benches' baseline.
//! - [`eviction`]: the `new_key_eviction` stream (2^21 operations over 2^20 pairs against 2^16
//!   keys of room) with its pre-derived keys, for the ratelimit bench and its A/B probe.

pub mod eviction;
pub mod mutex_limiter;

use rand::{Rng, SeedableRng, rngs::SmallRng};

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
