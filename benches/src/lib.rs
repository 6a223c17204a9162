//! Shared workload generators for the txgate benches (seeded, so every run measures the same keys).

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
pub mod mutex_limiter;
