//! The `new_key_eviction` workload, shared by the ratelimit bench and its A/B probe
//! (`examples/ratelimit_ab.rs`): a uniform stream over 2^20 (app, origin) pairs (1,024 apps x
//! 1,024 origins) against [`CAPACITY`] keys of room. Each pass takes the next [`PASS`] operations
//! of a [`STREAM`]-long stream, so a pair comes back only after about 2^20 others and has usually
//! been evicted by then.

use rand::{Rng, SeedableRng, rngs::SmallRng};
use txgate_ratelimit::{AppKey, AppRateLimiter, Origin, derive_key_hash};

use crate::mutex_limiter::MutexLimiter;

/// Keys of room in each limiter.
pub const CAPACITY: usize = 1 << 16;
/// Operations per pass.
pub const PASS: usize = 1 << 16;
/// Operations in the whole stream (a pass starts at a multiple of [`PASS`] below it).
pub const STREAM: usize = 1 << 21;

/// Apps and origins in the stream: 2^10 each (the pair index is `(app - 1) << 10 | origin`).
const SIDE_BITS: u32 = 10;

/// The stream, one pre-derived key per operation for each limiter.
#[derive(Debug, Clone)]
pub struct EvictionKeys {
    /// txgate's keys: the app's shard and the pair's salted hash.
    pub txgate: Vec<AppKey>,
    /// The baseline's keys: the app's bucket and the same hash.
    pub mutex: Vec<(usize, u64)>,
    /// The salted hash alone (the key of a limiter without shards).
    pub hashes: Vec<u64>,
}

/// The origin with peer id `i` (little-endian bytes).
pub fn origin(i: u32) -> Origin {
    Origin::from_peer_id(&i.to_le_bytes())
}

/// The [`STREAM`] operations from a fixed seed (3), with keys salted by `salt` (which must be
/// `t`'s and `m`'s salt) for the limiters `t` and `m`.
pub fn eviction_keys(salt: &[u8; 16], t: &AppRateLimiter, m: &MutexLimiter) -> EvictionKeys {
    let side = 1u64 << SIDE_BITS;
    let mut rng = SmallRng::seed_from_u64(3);
    let stream: Vec<(u64, u32)> = (0..STREAM)
        .map(|_| {
            (
                1 + rng.random_range(0..side),
                rng.random_range(0..side as u32),
            )
        })
        .collect();
    let salted: Vec<u64> = (0..side * side)
        .map(|i| derive_key_hash(1 + (i >> SIDE_BITS), salt, &origin((i & (side - 1)) as u32)))
        .collect();
    let hash = |&(a, o): &(u64, u32)| salted[(((a - 1) << SIDE_BITS) | u64::from(o)) as usize];
    let origin0 = origin(0);
    EvictionKeys {
        txgate: stream
            .iter()
            .map(|p| AppKey::from_parts(t.app_key(p.0, &origin0).shard(), hash(p)))
            .collect(),
        mutex: stream.iter().map(|p| (m.bucket(p.0), hash(p))).collect(),
        hashes: stream.iter().map(hash).collect(),
    }
}
