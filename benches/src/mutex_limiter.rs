//! Baseline for txgate-ratelimit: the design of go-algorand's `appRateLimiter`, written plainly in
//! Rust: 128 buckets, each a mutex around a hash map from key to entry plus a doubly linked LRU
//! list (an index-linked slab here), the bucket chosen by go's `memhash64` of the app id, keys the
//! first 8 bytes of blake2b-256 (via [`txgate_ratelimit::derive_key_hash`]). Counts are checked
//! and incremented under the bucket lock with the same integer window arithmetic as txgate, so
//! the two compute the same decisions and the benches compare data structures, not rules.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

use txgate_ratelimit::{Origin, derive_key_hash};

/// go-algorand's bucket count.
pub const BUCKETS: usize = 128;
const NIL: u32 = u32::MAX;

/// Keys are already uniform blake2b output: hash them with one multiply, as fast as a map can.
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, k: u64) {
        self.0 = k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

struct Entry {
    key: u64,
    interval: u64,
    prev: u64,
    cur: u64,
    /// LRU links (slab indices); `NIL` ends the list.
    newer: u32,
    older: u32,
}

struct Bucket {
    map: HashMap<u64, u32, BuildHasherDefault<KeyHasher>>,
    slab: Vec<Entry>,
    /// Most and least recently used entries.
    newest: u32,
    oldest: u32,
}

impl Bucket {
    fn unlink(&mut self, i: u32) {
        let (newer, older) = (self.slab[i as usize].newer, self.slab[i as usize].older);
        match newer {
            NIL => self.newest = older,
            n => self.slab[n as usize].older = older,
        }
        match older {
            NIL => self.oldest = newer,
            o => self.slab[o as usize].newer = newer,
        }
    }

    fn push_newest(&mut self, i: u32) {
        self.slab[i as usize].newer = NIL;
        self.slab[i as usize].older = self.newest;
        match self.newest {
            NIL => self.oldest = i,
            n => self.slab[n as usize].newer = i,
        }
        self.newest = i;
    }

    /// Finds or creates the entry (evicting the least recently used one when full), moved to
    /// the front of the LRU list: upstream's `entry()`.
    fn entry(&mut self, key: u64, interval: u64, max: usize) -> u32 {
        if let Some(&i) = self.map.get(&key) {
            self.unlink(i);
            self.push_newest(i);
            return i;
        }
        let fresh = Entry {
            key,
            interval,
            prev: 0,
            cur: 0,
            newer: NIL,
            older: NIL,
        };
        let i = if self.map.len() >= max {
            let victim = self.oldest;
            self.unlink(victim);
            let old = self.slab[victim as usize].key;
            self.map.remove(&old);
            self.slab[victim as usize] = fresh;
            victim
        } else {
            self.slab.push(fresh);
            (self.slab.len() - 1) as u32
        };
        self.map.insert(key, i);
        self.push_newest(i);
        i
    }
}

/// The mutex-and-LRU-list baseline limiter.
pub struct MutexLimiter {
    buckets: Vec<Mutex<Bucket>>,
    max_bucket_size: usize,
    limit: u64,
    window_ns: u64,
    seed: u64,
    salt: [u8; 16],
}

/// go's runtime `memhash64`, which go-algorand uses to pick an app's bucket.
pub fn memhash64(val: u64, seed: u64) -> u64 {
    const M1: u64 = 16877499708836156737;
    const M2: u64 = 2820277070424839065;
    const M3: u64 = 9497967016996688599;
    let mut h = seed ^ val;
    h = h.wrapping_mul(M1).rotate_left(31).wrapping_mul(M2);
    h ^= h >> 29;
    h = h.wrapping_mul(M3);
    h ^= h >> 32;
    h
}

impl MutexLimiter {
    /// `max_size` keys over 128 buckets, `limit` admissions per `window_ns`.
    pub fn new(max_size: usize, limit: u64, window_ns: u64, salt: [u8; 16]) -> Self {
        let max_bucket_size = (max_size / BUCKETS).max(1);
        Self {
            buckets: (0..BUCKETS)
                .map(|_| {
                    Mutex::new(Bucket {
                        map: HashMap::with_capacity_and_hasher(max_bucket_size, Default::default()),
                        slab: Vec::with_capacity(max_bucket_size),
                        newest: NIL,
                        oldest: NIL,
                    })
                })
                .collect(),
            max_bucket_size,
            limit,
            window_ns,
            seed: 0x5eed,
            salt,
        }
    }

    /// The bucket of an app: go's `memhash64` of the app id, modulo 128.
    pub fn bucket(&self, app_id: u64) -> usize {
        (memhash64(app_id, self.seed) % BUCKETS as u64) as usize
    }

    /// Bucket and key of an (app, origin) pair: one memhash64 and one blake2b.
    pub fn key(&self, app_id: u64, origin: &Origin) -> (usize, u64) {
        (
            (memhash64(app_id, self.seed) % BUCKETS as u64) as usize,
            derive_key_hash(app_id, &self.salt, origin),
        )
    }

    /// Admits a group given its (bucket, key) pairs, all-or-nothing (distinct keys assumed).
    pub fn admit_keys(&self, keys: &[(usize, u64)], now_ns: u64) -> bool {
        let interval = now_ns / self.window_ns;
        let offset = now_ns % self.window_ns;
        // Check every key first (each under its bucket lock), then count: upstream's shape.
        for &(b, key) in keys {
            let mut bucket = self.buckets[b].lock().unwrap();
            let i = bucket.entry(key, interval, self.max_bucket_size);
            let e = &mut bucket.slab[i as usize];
            if e.interval != interval {
                e.prev = if e.interval + 1 == interval { e.cur } else { 0 };
                e.cur = 0;
                e.interval = interval;
            }
            let weighted = u128::from(e.prev) * u128::from(self.window_ns - offset)
                / u128::from(self.window_ns);
            if weighted as u64 + e.cur + 1 > self.limit {
                return false;
            }
        }
        for &(b, key) in keys {
            let mut bucket = self.buckets[b].lock().unwrap();
            if let Some(&i) = bucket.map.get(&key) {
                bucket.slab[i as usize].cur += 1;
            }
        }
        true
    }

    /// Admits a group of app ids from `origin` (distinct non-zero apps, one blake2b each).
    pub fn admit(&self, app_ids: &[u64], origin: &Origin, now_ns: u64) -> bool {
        let mut keys = [(0usize, 0u64); 16];
        let mut n = 0;
        for (i, &app) in app_ids.iter().enumerate() {
            if app != 0 && !app_ids[..i].contains(&app) && n < keys.len() {
                keys[n] = self.key(app, origin);
                n += 1;
            }
        }
        self.admit_keys(&keys[..n], now_ns)
    }

    /// Keys tracked now.
    pub fn entries(&self) -> usize {
        self.buckets
            .iter()
            .map(|b| b.lock().unwrap().map.len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_limits_and_evicts_lru() {
        let l = MutexLimiter::new(BUCKETS * 2, 3, 10_000_000_000, [1; 16]);
        let o = |i: u8| Origin::from_peer_id(&[i]);
        assert_eq!((0..5).filter(|_| l.admit(&[7, 7], &o(0), 0)).count(), 3);
        // Two keys per bucket: a third origin of app 7 evicts the oldest (origin 0).
        assert!(l.admit(&[7], &o(1), 0));
        assert!(l.admit(&[7], &o(2), 0));
        assert_eq!((0..5).filter(|_| l.admit(&[7], &o(0), 0)).count(), 3);
        assert_eq!(l.entries(), 2);
    }
}
