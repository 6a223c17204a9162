//! A plain single-threaded reference model of the limiter, for differential tests and fuzzing.
//!
//! One `HashMap` per shard plus an exact LRU order (a global access counter): no atomics, no
//! sets, no reclamation. It uses the same window arithmetic as the real table (`crate::state`),
//! the same shards and keys (it takes [`AppKey`]s derived by a real
//! [`AppRateLimiter`](crate::AppRateLimiter)), the same canonical order for the keys of a group
//! (sorted by shard, then hash), and it evicts by the rule: on a new key in a full shard, a stale
//! key first, else the least recently used, each chosen by exact recency. The real limiter takes
//! the same decisions whenever its evictions match the model's, which is always the case
//! single-threaded when every shard holds at most 64 keys (one set, searched whole) or never
//! fills.

use std::collections::HashMap;
use std::num::NonZeroU32;

use crate::config::{Config, ConfigError};
use crate::decision::{Decision, InsufficientCapacity, Stats};
use crate::origin::AppKey;
use crate::state::{self, Counts, Instant, Limits};

#[derive(Clone, Copy, Debug)]
struct Entry {
    counts: Counts,
    last: u64,
}

/// The reference model of [`AppRateLimiter`](crate::AppRateLimiter) over pre-derived keys.
#[derive(Debug)]
pub struct Model {
    limits: Limits,
    capacity: usize,
    shards: Vec<HashMap<u64, Entry>>,
    tick: u64,
    stats: Stats,
}

impl Model {
    /// A model of a limiter built from `config`.
    ///
    /// # Errors
    ///
    /// The same [`ConfigError`]s as [`AppRateLimiter::new`](crate::AppRateLimiter::new).
    pub fn new(config: &Config) -> Result<Self, ConfigError> {
        let v = config.validate()?;
        Ok(Self {
            limits: v.limits,
            capacity: v.capacity,
            shards: vec![HashMap::new(); config.shards],
            tick: 0,
            stats: Stats::default(),
        })
    }

    /// The distinct keys of a group (shards reduced) in canonical order, each with the index of
    /// its first occurrence.
    fn canonical(&self, keys: &[AppKey]) -> Vec<(AppKey, usize)> {
        let mut distinct: Vec<(AppKey, usize)> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            let key = AppKey {
                shard: self.shard_index(key) as u32,
                hash: key.hash,
            };
            if !distinct.iter().any(|(k, _)| *k == key) {
                distinct.push((key, i));
            }
        }
        distinct.sort_unstable_by_key(|(k, _)| (k.shard, k.hash));
        distinct
    }

    /// The model of [`AppRateLimiter::admit_keys`](crate::AppRateLimiter::admit_keys).
    pub fn admit_keys(&mut self, keys: &[AppKey], now_ns: u64) -> Decision {
        self.admit_keys_n(keys, NonZeroU32::MIN, now_ns)
            .expect("a cost of 1 is within every limit")
    }

    /// The model of [`AppRateLimiter::admit_keys_n`](crate::AppRateLimiter::admit_keys_n).
    ///
    /// # Errors
    ///
    /// [`InsufficientCapacity`] when `cost > L`, before anything is touched.
    pub fn admit_keys_n(
        &mut self,
        keys: &[AppKey],
        cost: NonZeroU32,
        now_ns: u64,
    ) -> Result<Decision, InsufficientCapacity> {
        let cost = self.limits.cost(cost)?;
        let at = self.limits.instant(now_ns);
        // Touch every distinct key first (create, evict, refresh), in canonical order, keeping
        // each key's counts as seen then: a later key of the group may evict an earlier one,
        // whose counts still decide.
        let seen: Vec<(AppKey, usize, Counts)> = self
            .canonical(keys)
            .into_iter()
            .map(|(key, index)| (key, index, self.touch(&key, at)))
            .collect();
        let mut next = Vec::with_capacity(seen.len());
        for &(key, index, counts) in &seen {
            match state::admit(counts, at, &self.limits, cost) {
                Some(c) => next.push((key, c)),
                None => {
                    self.stats.dropped += 1;
                    let wait = state::retry_after(counts, at, &self.limits, cost);
                    return Ok(Decision::drop(index, wait));
                }
            }
        }
        let remaining = next
            .iter()
            .map(|(_, c)| state::remaining(*c, at, &self.limits))
            .min();
        for (key, counts) in next {
            if let Some(e) = self.shard_mut(&key).get_mut(&key.hash) {
                e.counts = counts;
            }
        }
        self.stats.admitted += 1;
        Ok(Decision::admit(remaining))
    }

    /// The model of [`AppRateLimiter::penalize_keys`](crate::AppRateLimiter::penalize_keys).
    pub fn penalize_keys(&mut self, keys: &[AppKey], now_ns: u64) {
        let at = self.limits.instant(now_ns);
        let seen: Vec<(AppKey, Counts)> = self
            .canonical(keys)
            .into_iter()
            .map(|(key, _)| (key, self.touch(&key, at)))
            .collect();
        let limits = self.limits;
        for (key, counts) in seen {
            if let Some(e) = self.shard_mut(&key).get_mut(&key.hash) {
                e.counts = state::penalize(counts, at, &limits);
            }
        }
    }

    /// Tracked keys as `(shard, hash)`, sorted (compare with `AppRateLimiter::tracked_keys`).
    pub fn tracked_keys(&self) -> Vec<(u32, u64)> {
        let mut keys: Vec<(u32, u64)> = self
            .shards
            .iter()
            .enumerate()
            .flat_map(|(i, m)| m.keys().map(move |&k| (i as u32, k)))
            .collect();
        keys.sort_unstable();
        keys
    }

    /// Counters, as [`AppRateLimiter::stats`](crate::AppRateLimiter::stats) reports them.
    pub fn stats(&self) -> Stats {
        Stats {
            entries: self.shards.iter().map(HashMap::len).sum(),
            ..self.stats
        }
    }

    /// Current `(prev, cur)` of a tracked key, unrolled.
    pub fn counts(&self, key: &AppKey) -> Option<(u16, u16)> {
        self.shards[self.shard_index(key)]
            .get(&key.hash)
            .map(|e| (e.counts.prev, e.counts.cur))
    }

    fn shard_index(&self, key: &AppKey) -> usize {
        key.shard as usize & (self.shards.len() - 1)
    }

    fn shard_mut(&mut self, key: &AppKey) -> &mut HashMap<u64, Entry> {
        let i = self.shard_index(key);
        &mut self.shards[i]
    }

    /// Creates (evicting if the shard is full) or refreshes a key; returns its stored counts.
    fn touch(&mut self, key: &AppKey, at: Instant) -> Counts {
        self.tick += 1;
        let tick = self.tick;
        let capacity = self.capacity;
        let i = self.shard_index(key);
        let shard = &mut self.shards[i];
        if let Some(e) = shard.get_mut(&key.hash) {
            // Every access leaves its key current: rolled to `at` (and, below, the admission or
            // penalty applied to the rolled counts, which decide the same).
            e.last = tick;
            e.counts = state::roll(e.counts, at).0;
            return e.counts;
        }
        if shard.len() >= capacity {
            let victim = shard
                .iter()
                .min_by_key(|(_, e)| (!state::is_stale(e.counts, at), e.last))
                .map(|(&k, _)| k)
                .expect("a full shard is not empty");
            shard.remove(&victim);
            self.stats.evicted += 1;
        }
        let counts = Counts {
            interval: at.interval,
            prev: 0,
            cur: 0,
        };
        shard.insert(key.hash, Entry { counts, last: tick });
        counts
    }
}
