//! Baseline for txgate-ratelimit: the design of go-algorand's `appRateLimiter`
//! (data/appRateLimiter.go), written plainly in Rust: 128 buckets, each a mutex around a hash map
//! from key to entry plus a doubly linked LRU list (an index-linked slab here), the bucket chosen
//! by go's `memhash64` of the app id, keys the first 8 bytes of blake2b-256 (via
//! [`txgate_ratelimit::derive_key_hash`]). Counts are checked and incremented under the bucket
//! lock with the same integer window arithmetic as txgate (upstream rounds a `float64` estimate
//! down; the two differ only by rounding), so the benches compare data structures, not rules.
//!
//! Two group verbs:
//! - [`MutexLimiter::admit_keys`] (and [`MutexLimiter::admit`]): all-or-nothing, txgate's rule,
//!   so both limiters compute the same decisions: every key is looked up and checked (one bucket
//!   lock each), then each is counted (a second lock each). The older rows use it.
//! - [`MutexLimiter::should_drop_keys`]: go-algorand's `shouldDropKeys`, step for step: each key
//!   in turn is looked up (upstream's `entry()`), a new key is counted without a check, an
//!   existing one is checked and counted, and the first key over its limit drops the group with
//!   the counts of the keys before it already taken (later keys are not looked up). One bucket
//!   lock per key looked up. The `group2` and `drop` rows use it.

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
    /// Slab slots of entries evicted without a replacement (by [`Bucket::entry_upstream`]).
    free: Vec<u32>,
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

    /// Removes the least recently used entry from the map and the list; returns its slot.
    fn evict_oldest(&mut self) -> u32 {
        let victim = self.oldest;
        self.unlink(victim);
        let old = self.slab[victim as usize].key;
        self.map.remove(&old);
        victim
    }

    /// Finds or creates the entry (evicting the least recently used one when a new key finds
    /// the bucket full), moved to the front of the LRU list.
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
        let i = if self.map.len() >= max && self.oldest != NIL {
            let victim = self.evict_oldest();
            self.slab[victim as usize] = fresh;
            victim
        } else if let Some(i) = self.free.pop() {
            self.slab[i as usize] = fresh;
            i
        } else {
            self.slab.push(fresh);
            (self.slab.len() - 1) as u32
        };
        self.map.insert(key, i);
        self.push_newest(i);
        i
    }

    /// go-algorand's `entry()` exactly: a full bucket evicts its least recently used entry
    /// *before* the key is looked up, on every access (so a full bucket loses one entry even to
    /// a hit, and a key that is itself the least recently used is evicted and re-created fresh);
    /// then the key is found or created and moved to the front. Returns the slot and whether the
    /// key was found.
    fn entry_upstream(&mut self, key: u64, interval: u64, max: usize) -> (u32, bool) {
        if self.map.len() >= max && self.oldest != NIL {
            let victim = self.evict_oldest();
            self.free.push(victim);
        }
        let found = self.map.contains_key(&key);
        // Below `max` now, so `entry` evicts nothing more.
        (self.entry(key, interval, max), found)
    }
}

impl Entry {
    /// Moves the entry to `interval`: the current count becomes the previous one if the
    /// intervals are adjacent, else both restart (upstream's `entry()` switch on the interval).
    fn roll(&mut self, interval: u64) {
        if self.interval != interval {
            self.prev = if self.interval + 1 == interval {
                self.cur
            } else {
                0
            };
            self.cur = 0;
            self.interval = interval;
        }
    }

    /// Whether one more admission fits: `prev * (window - offset) / window + cur + 1 <= limit`
    /// (integer floor division).
    fn fits(&self, limit: u64, window_ns: u64, offset: u64) -> bool {
        let weighted =
            u128::from(self.prev) * u128::from(window_ns - offset) / u128::from(window_ns);
        weighted as u64 + self.cur < limit
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
    /// `max_size` keys over 128 buckets (2 per bucket if `max_size < 128`, as upstream's
    /// `makeAppRateLimiter`), `limit` admissions per `window_ns`.
    pub fn new(max_size: usize, limit: u64, window_ns: u64, salt: [u8; 16]) -> Self {
        let max_bucket_size = match max_size / BUCKETS {
            0 => 2,
            n => n,
        };
        Self {
            buckets: (0..BUCKETS)
                .map(|_| {
                    Mutex::new(Bucket {
                        map: HashMap::with_capacity_and_hasher(max_bucket_size, Default::default()),
                        slab: Vec::with_capacity(max_bucket_size),
                        free: Vec::new(),
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

    /// Admits a group given its (bucket, key) pairs, all-or-nothing as txgate (distinct keys
    /// assumed): every key is looked up and checked under its bucket lock, then, if all fit,
    /// each is counted under its lock again. A dropped group changes no count.
    pub fn admit_keys(&self, keys: &[(usize, u64)], now_ns: u64) -> bool {
        let interval = now_ns / self.window_ns;
        let offset = now_ns % self.window_ns;
        for &(b, key) in keys {
            let mut bucket = self.buckets[b].lock().unwrap();
            let i = bucket.entry(key, interval, self.max_bucket_size);
            let e = &mut bucket.slab[i as usize];
            e.roll(interval);
            if !e.fits(self.limit, self.window_ns, offset) {
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

    /// Whether go-algorand's `appRateLimiter.shouldDropKeys` drops the group of (bucket, key)
    /// pairs at `now_ns`; `true` means dropped. Keys are taken in order, each under its bucket
    /// lock: the entry is found or created as upstream's `entry()` does (see
    /// `Bucket::entry_upstream`: a full bucket evicts its least recently used entry first, on
    /// every access) and rolled to the current interval; a key that was not found is counted
    /// without a check; a found key over its limit drops the group at once, leaving the counts
    /// already taken for the keys before it and the keys after it unvisited; otherwise it is
    /// counted. (Upstream takes the lock for `entry()` only and checks and counts with atomics
    /// after it; one thread at a time, as in the benches, that is the same sequence.)
    pub fn should_drop_keys(&self, keys: &[(usize, u64)], now_ns: u64) -> bool {
        let interval = now_ns / self.window_ns;
        let offset = now_ns % self.window_ns;
        for &(b, key) in keys {
            let mut bucket = self.buckets[b].lock().unwrap();
            let (i, found) = bucket.entry_upstream(key, interval, self.max_bucket_size);
            let e = &mut bucket.slab[i as usize];
            e.roll(interval);
            if found && !e.fits(self.limit, self.window_ns, offset) {
                return true;
            }
            e.cur += 1;
        }
        false
    }

    /// The counts `(prev, cur)` of a tracked key, or `None` if it is not tracked (for tests).
    pub fn counts(&self, (b, key): (usize, u64)) -> Option<(u64, u64)> {
        let bucket = self.buckets[b].lock().unwrap();
        let &i = bucket.map.get(&key)?;
        let e = &bucket.slab[i as usize];
        Some((e.prev, e.cur))
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

    /// go-algorand's group rule: keys are counted in order until one is over its limit.
    #[test]
    fn upstream_groups_count_the_keys_before_a_failing_one() {
        let l = MutexLimiter::new(1 << 12, 3, 10_000_000_000, [1; 16]);
        let (a, b, c) = ((0, 1), (1, 2), (2, 3));
        for _ in 0..3 {
            assert!(!l.should_drop_keys(&[a, b], 0));
        }
        assert_eq!((l.counts(a), l.counts(b)), (Some((0, 3)), Some((0, 3))));
        // a is full: dropped at a, b not looked at.
        assert!(l.should_drop_keys(&[a, b], 0));
        assert_eq!((l.counts(a), l.counts(b)), (Some((0, 3)), Some((0, 3))));
        // c (new) is counted before a drops the group; txgate's all-or-nothing rule counts
        // nothing and does not keep the new key's count.
        assert!(l.should_drop_keys(&[c, a], 0));
        assert_eq!(l.counts(c), Some((0, 1)));
        let d = (3, 4);
        assert!(!l.admit_keys(&[d, a], 0));
        assert_eq!(l.counts(d), Some((0, 0)));
        // The next window at its start weighs the previous count whole: c has 2 left, a none.
        let w = 10_000_000_000;
        assert!(!l.should_drop_keys(&[c], w));
        assert!(!l.should_drop_keys(&[c], w));
        assert!(l.should_drop_keys(&[c], w));
        assert_eq!(l.counts(c), Some((1, 2)));
        assert!(l.should_drop_keys(&[a], w));
        assert_eq!(l.counts(a), Some((3, 0)));
    }

    /// Upstream counts a new key without checking it: even a limit of 0 admits it once.
    #[test]
    fn upstream_admits_a_new_key_unchecked() {
        let l = MutexLimiter::new(1 << 12, 0, 10_000_000_000, [1; 16]);
        assert!(!l.should_drop_keys(&[(5, 9)], 0));
        assert!(l.should_drop_keys(&[(5, 9)], 0));
        assert_eq!(l.counts((5, 9)), Some((0, 1)));
        assert!(!l.admit_keys(&[(6, 9)], 0));
    }

    /// Upstream's `entry()` evicts from a full bucket before it looks the key up, hits included.
    #[test]
    fn upstream_evicts_from_a_full_bucket_on_every_access() {
        // max_size below 128: 2 keys per bucket, as upstream.
        let l = MutexLimiter::new(10, 100, 10_000_000_000, [1; 16]);
        let (x, y) = ((0, 1), (0, 2));
        assert!(!l.should_drop_keys(&[x], 0));
        assert!(!l.should_drop_keys(&[y], 0));
        // Full: a hit on y evicts x (least recent), then finds y.
        assert!(!l.should_drop_keys(&[y], 0));
        assert_eq!((l.counts(x), l.counts(y)), (None, Some((0, 2))));
        assert_eq!(l.entries(), 1);
        // x comes back fresh; full again, a hit on x evicts y, the least recent.
        assert!(!l.should_drop_keys(&[x], 0));
        assert!(!l.should_drop_keys(&[x], 0));
        assert_eq!((l.counts(x), l.counts(y)), (Some((0, 2)), None));
        // Full with x and a new z, x least recent: a hit on x evicts x itself and re-creates it.
        assert!(!l.should_drop_keys(&[(0, 3)], 0));
        assert!(!l.should_drop_keys(&[x], 0));
        assert_eq!(
            (l.counts(x), l.counts((0, 3))),
            (Some((0, 1)), Some((0, 1)))
        );
    }
}
