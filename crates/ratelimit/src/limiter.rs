//! The public limiter: sharding, groups, statistics.

use std::time::{SystemTime, UNIX_EPOCH};

use crossbeam_utils::CachePadded;

use crate::config::{Config, ConfigError};
use crate::origin::{self, AppKey, Origin};
use crate::reclaim::Collector;
use crate::state::Limits;
use crate::sync::{AtomicU64, Ordering};
use crate::table::{Node, Reservation, Shard};

/// Stripes of the admitted/dropped counters: threads count on their own cache line.
const STRIPES: usize = 16;

/// One stripe of the decision counters.
#[derive(Default)]
struct Counters {
    admitted: AtomicU64,
    dropped: AtomicU64,
}

/// Groups with up to this many distinct app ids are handled without allocating (go-algorand
/// groups hold at most 16 transactions).
const INLINE_GROUP: usize = 16;

/// What [`AppRateLimiter::admit`] decided for a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use]
pub enum Decision {
    /// Every app of the group was within its limit; each app's count went up by one.
    Admit,
    /// Some app of the group was at its limit; no counter changed (FIX 1).
    Drop,
}

impl Decision {
    /// `true` for [`Decision::Admit`].
    pub fn is_admit(self) -> bool {
        self == Decision::Admit
    }
}

/// Counters of an [`AppRateLimiter`], summed over shards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Groups admitted (including groups without any app id).
    pub admitted: u64,
    /// Groups dropped.
    pub dropped: u64,
    /// Tracked keys evicted to make room for new ones.
    pub evicted: u64,
    /// Keys tracked now (never more than `max_size`).
    pub entries: usize,
}

/// A source of "now" for callers that do not have a timestamp at hand: nanoseconds since the Unix
/// epoch, the unit of every `now_ns` argument.
pub trait Clock {
    /// Nanoseconds since the Unix epoch.
    fn now_ns(&self) -> u64;
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ns(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    }
}

/// A lock-free, sharded, sliding-window rate limiter of transaction groups per (application id,
/// origin), after go-algorand's app rate limiter with DESIGN.md's FIX 1 and FIX 2.
///
/// See the [crate documentation](crate) for the rules and an example.
pub struct AppRateLimiter {
    shards: Box<[CachePadded<Shard>]>,
    limits: Limits,
    salt: [u8; 16],
    /// Seed of the shard hash, derived from the salt.
    shard_seed: u64,
    config: Config,
    /// Decision counters, striped by thread.
    counters: Box<[CachePadded<Counters>]>,
    // Dropped after `shards`: nodes retired but not yet freed are freed with it.
    collector: Collector,
}

impl std::fmt::Debug for AppRateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppRateLimiter")
            .field("limit", &self.limits.limit)
            .field("window_ns", &self.limits.window_ns)
            .field("shards", &self.shards.len())
            .field("capacity_per_shard", &self.capacity_per_shard())
            .finish_non_exhaustive()
    }
}

/// A stack buffer of `N` items that spills to the heap beyond (so groups of up to 16 distinct
/// apps never allocate).
struct SmallBuf<T: Copy, const N: usize> {
    len: usize,
    inline: [T; N],
    spill: Vec<T>,
}

impl<T: Copy, const N: usize> SmallBuf<T, N> {
    fn new(fill: T) -> Self {
        Self {
            len: 0,
            inline: [fill; N],
            spill: Vec::new(),
        }
    }

    fn push(&mut self, item: T) {
        if self.len < N {
            self.inline[self.len] = item;
        } else {
            if self.spill.is_empty() {
                self.spill.extend_from_slice(&self.inline);
            }
            self.spill.push(item);
        }
        self.len += 1;
    }

    fn as_slice(&self) -> &[T] {
        if self.len <= N {
            &self.inline[..self.len]
        } else {
            &self.spill
        }
    }
}

impl AppRateLimiter {
    /// Builds a limiter.
    ///
    /// Allocates `max_size` slots (8 bytes each) up front; nodes (one small allocation per key)
    /// come as keys arrive.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when `max_size`, `rate_per_second` or `window` is zero, `shards` is not a
    /// power of two, `max_size < 2 * shards`, the limit per window `L = rate x window` is below 1
    /// or above 65,535, or no salt was given and the OS random source fails.
    pub fn new(config: Config) -> Result<Self, ConfigError> {
        let v = config.validate()?;
        let shard_seed = u64::from_le_bytes(v.salt[..8].try_into().expect("8 bytes"))
            ^ u64::from_le_bytes(v.salt[8..].try_into().expect("8 bytes")).rotate_left(17);
        Ok(Self {
            shards: (0..config.shards)
                .map(|_| CachePadded::new(Shard::new(v.capacity)))
                .collect(),
            limits: v.limits,
            salt: v.salt,
            shard_seed,
            config,
            counters: (0..STRIPES)
                .map(|_| CachePadded::new(Counters::default()))
                .collect(),
            collector: Collector::new(),
        })
    }

    /// The limit per window `L` (admissions per key per window).
    pub fn limit(&self) -> u64 {
        u64::from(self.limits.limit)
    }

    /// What one [`penalize`](Self::penalize) adds to a key: `max(1, L / 4)`.
    pub fn penalty(&self) -> u64 {
        u64::from(self.limits.penalty)
    }

    /// Keys each shard holds: `max_size / shards`.
    pub fn capacity_per_shard(&self) -> usize {
        self.config.max_size / self.config.shards
    }

    /// The configuration this limiter was built from (`salt` as given, possibly `None`).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The salt of key derivation (the given one, or the one drawn from the OS).
    pub fn salt(&self) -> [u8; 16] {
        self.salt
    }

    /// Derives the key of one (app id, origin) pair: one blake2b (see
    /// [`derive_key_hash`](crate::derive_key_hash)) and one wyhash of the app id for the shard.
    pub fn app_key(&self, app_id: u64, origin: &Origin) -> AppKey {
        AppKey {
            shard: origin::shard_of(app_id, self.shard_seed, self.shards.len()),
            hash: origin::derive_key_hash(app_id, &self.salt, origin),
        }
    }

    /// Decides whether a transaction group from `origin` at `now_ns` (nanoseconds since the Unix
    /// epoch) is admitted.
    ///
    /// `app_ids` are the application ids the group calls, in any order, repeats allowed; zero
    /// (not an app call) is ignored. The group is admitted iff for every distinct app the
    /// sliding-window estimate `prev * (window - offset) / window + cur + 1 <= L` (integer floor
    /// division) holds; then each distinct app's count goes up by one. A dropped group changes no
    /// counter (FIX 1); every key of the group is created if missing and its recency refreshed
    /// either way. A group with no app id is always admitted.
    ///
    /// Costs one blake2b per distinct app; see [`admit_keys`](Self::admit_keys) to skip that.
    /// Allocates only for the node of a new key, or for groups of more than 16 distinct apps.
    pub fn admit(&self, app_ids: &[u64], origin: &Origin, now_ns: u64) -> Decision {
        let keys = self.group_keys(app_ids, origin);
        self.admit_keys(keys.as_slice(), now_ns)
    }

    /// [`admit`](Self::admit) for a group of one app with a pre-derived key.
    pub fn admit_key(&self, key: AppKey, now_ns: u64) -> Decision {
        self.admit_keys(std::slice::from_ref(&key), now_ns)
    }

    /// [`admit`](Self::admit) with pre-derived keys (from [`app_key`](Self::app_key)); repeated
    /// keys count once. All-or-nothing under concurrency too: keys are reserved in order (one CAS
    /// each) and the reservations rolled back if a later key is at its limit, so a concurrent
    /// caller may see a reservation that is then taken back.
    pub fn admit_keys(&self, keys: &[AppKey], now_ns: u64) -> Decision {
        let at = self.limits.instant(now_ns);
        let guard = self.collector.enter();
        if let [key] = keys {
            // One app (the common case): no group bookkeeping.
            let node = self.shard(key).get_or_insert(key.hash, at, &guard);
            let counters = self.counters(&guard);
            return if node.try_admit(at, &self.limits).is_some() {
                // Relaxed: a statistic.
                counters.admitted.fetch_add(1, Ordering::Relaxed);
                Decision::Admit
            } else {
                // Relaxed: a statistic.
                counters.dropped.fetch_add(1, Ordering::Relaxed);
                Decision::Drop
            };
        }
        let mut nodes: SmallBuf<Option<&Node>, INLINE_GROUP> = SmallBuf::new(None);
        for (i, key) in keys.iter().enumerate() {
            if keys[..i].contains(key) {
                continue;
            }
            let shard = self.shard(key);
            nodes.push(Some(shard.get_or_insert(key.hash, at, &guard)));
        }
        let nodes = nodes.as_slice();
        let mut reserved: SmallBuf<Reservation, INLINE_GROUP> =
            SmallBuf::new(Reservation::default());
        for node in nodes.iter().flatten() {
            match node.try_admit(at, &self.limits) {
                Some(r) => reserved.push(r),
                None => {
                    for (node, &r) in nodes.iter().flatten().zip(reserved.as_slice()) {
                        node.unadmit(r);
                    }
                    // Relaxed: a statistic.
                    self.counters(&guard)
                        .dropped
                        .fetch_add(1, Ordering::Relaxed);
                    return Decision::Drop;
                }
            }
        }
        // Relaxed: a statistic.
        self.counters(&guard)
            .admitted
            .fetch_add(1, Ordering::Relaxed);
        Decision::Admit
    }

    /// Penalizes `origin` for each distinct non-zero app id: the key is created if missing,
    /// rolled to `now_ns`, and `cur += max(1, L / 4)` (saturating at 65,535).
    pub fn penalize(&self, app_ids: &[u64], origin: &Origin, now_ns: u64) {
        let keys = self.group_keys(app_ids, origin);
        self.penalize_keys(keys.as_slice(), now_ns);
    }

    /// [`penalize`](Self::penalize) with pre-derived keys; repeated keys count once.
    pub fn penalize_keys(&self, keys: &[AppKey], now_ns: u64) {
        let at = self.limits.instant(now_ns);
        let guard = self.collector.enter();
        for (i, key) in keys.iter().enumerate() {
            if !keys[..i].contains(key) {
                self.shard(key)
                    .get_or_insert(key.hash, at, &guard)
                    .penalize(at, &self.limits);
            }
        }
    }

    /// Statistics. `entries` scans every slot (O(max_size)); the counters are relaxed, so under
    /// concurrent use the sum is a recent value, not a snapshot.
    pub fn stats(&self) -> Stats {
        let guard = self.collector.enter();
        let mut stats = Stats::default();
        for c in self.counters.iter() {
            // Relaxed: statistics.
            stats.admitted += c.admitted.load(Ordering::Relaxed);
            // Relaxed: statistics.
            stats.dropped += c.dropped.load(Ordering::Relaxed);
        }
        for shard in self.shards.iter() {
            // Relaxed: statistics.
            stats.evicted += shard.evicted.load(Ordering::Relaxed);
            stats.entries += shard.entries(&guard);
        }
        stats
    }

    /// Keys evicted so far, summed over the shards (O(shards), unlike [`stats`](Self::stats)).
    #[doc(hidden)]
    pub fn evicted(&self) -> u64 {
        self.shards
            .iter()
            // Relaxed: statistics.
            .map(|shard| shard.evicted.load(Ordering::Relaxed))
            .sum()
    }

    /// The tracked keys (for differential tests against the reference model): every Live key as
    /// `(shard, hash)`, sorted. O(max_size).
    #[doc(hidden)]
    pub fn tracked_keys(&self) -> Vec<(u32, u64)> {
        let guard = self.collector.enter();
        let mut keys: Vec<(u32, u64)> = self
            .shards
            .iter()
            .enumerate()
            .flat_map(|(i, shard)| shard.live_keys(&guard).map(move |k| (i as u32, k)))
            .collect();
        keys.sort_unstable();
        keys
    }

    /// Number of nodes reclaimed by the collector in this process (debug builds; tests).
    #[doc(hidden)]
    #[cfg(all(debug_assertions, not(loom)))]
    pub fn reclaimed_nodes() -> u64 {
        crate::reclaim::reclaimed_nodes()
    }

    /// This thread's stripe of the decision counters.
    #[inline]
    fn counters(&self, guard: &crate::reclaim::Guard<'_>) -> &Counters {
        &self.counters[guard.thread_id() & (STRIPES - 1)]
    }

    #[inline]
    fn shard(&self, key: &AppKey) -> &Shard {
        &self.shards[key.shard as usize & (self.shards.len() - 1)]
    }

    /// The keys of a group's distinct non-zero app ids, in first-occurrence order.
    fn group_keys(&self, app_ids: &[u64], origin: &Origin) -> SmallBuf<AppKey, INLINE_GROUP> {
        let mut keys = SmallBuf::new(AppKey::default());
        for (i, &app) in app_ids.iter().enumerate() {
            if app != 0 && !app_ids[..i].contains(&app) {
                keys.push(self.app_key(app, origin));
            }
        }
        keys
    }

    /// Runs `f` with a guard (tests of the table).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn with_node<R>(&self, key: AppKey, f: impl FnOnce(Option<&Node>) -> R) -> R {
        let guard = self.collector.enter();
        f(self.shard(&key).get(key.hash, &guard))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    use std::time::Duration;

    use super::*;

    const T0: u64 = 1_700_000_010 * 1_000_000_000;

    fn limiter(rate: u64, max_size: usize, shards: usize) -> AppRateLimiter {
        AppRateLimiter::new(Config {
            rate_per_second: rate,
            window: Duration::from_secs(10),
            max_size,
            shards,
            salt: Some([1; 16]),
        })
        .unwrap()
    }

    /// Threads racing on one key, new to the table at the start, admit exactly L.
    #[test]
    fn racing_admits_on_a_new_key_admit_exactly_l() {
        let (threads, keys, per) = if cfg!(miri) { (3, 2, 6) } else { (4, 200, 40) };
        let l = limiter(2, 8192, 1); // L = 20; 200 keys never fill a window of 8,192 slots
        for k in 0..keys {
            let key = l.app_key(7, &Origin::from_peer_id(&[k as u8, (k >> 8) as u8]));
            let admitted = AtomicUsize::new(0);
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(|| {
                        for _ in 0..per {
                            if l.admit_key(key, T0).is_admit() {
                                admitted.fetch_add(1, Relaxed);
                            }
                        }
                    });
                }
            });
            let want = (threads * per).min(20);
            assert_eq!(admitted.load(Relaxed), want);
            l.with_node(key, |n| assert_eq!(n.unwrap().counts().cur as usize, want));
        }
        assert_eq!(l.stats().entries, keys);
    }

    /// Penalties racing admissions keep the arithmetic exact: every admission and penalty lands.
    #[test]
    fn penalize_racing_admit_is_exact() {
        let rounds = if cfg!(miri) { 3 } else { 100 };
        let l = limiter(100, 1024, 8); // L = 1000, penalty 250
        for r in 0..rounds {
            let key = l.app_key(3, &Origin::from_peer_id(&[r as u8, 1]));
            let admitted = AtomicUsize::new(0);
            std::thread::scope(|s| {
                s.spawn(|| {
                    for _ in 0..2 {
                        l.penalize_keys(&[key], T0);
                    }
                });
                s.spawn(|| {
                    for _ in 0..300 {
                        if l.admit_key(key, T0).is_admit() {
                            admitted.fetch_add(1, Relaxed);
                        }
                    }
                });
            });
            let a = admitted.load(Relaxed);
            // 500 penalty leaves room for 500 admissions, so all 300 land, in any order.
            assert_eq!(a, 300);
            l.with_node(key, |n| {
                assert_eq!(n.unwrap().counts().cur as usize, 500 + a)
            });
        }
    }

    /// Many threads inserting distinct keys into tiny shards: eviction and reclamation under
    /// contention; the bound holds and every decision is an admission (L = 1 per fresh key).
    #[test]
    fn concurrent_eviction_keeps_the_bound() {
        let (threads, per): (usize, usize) = if cfg!(miri) { (2, 40) } else { (4, 20_000) };
        let l = limiter(1, 16, 4); // capacity 4 per shard, L = 10
        std::thread::scope(|s| {
            for t in 0..threads {
                let l = &l;
                s.spawn(move || {
                    for i in 0..per {
                        let origin =
                            Origin::from_peer_id(&((t * 1_000_000 + i) as u64).to_le_bytes());
                        assert!(l.admit(&[1, 2, 3], &origin, T0).is_admit());
                    }
                });
            }
        });
        let s = l.stats();
        assert!(s.entries <= 16, "{s:?}");
        assert_eq!(s.admitted, (threads * per) as u64);
        // Each group inserts 3 keys; all but at most 16 were evicted (dead nodes are not counted).
        assert!(
            s.evicted >= (3 * threads * per - 16 - threads * 3) as u64,
            "{s:?}"
        );
    }

    /// A large shard (4,096 keys, 8,192 slots, 16-slot windows) fills before it evicts: the
    /// first 4,096 distinct keys evict at most 0.1% (a whole window taken while the shard has
    /// room; 0.03% measured by the `bytes_per_key` example), and once full every new key evicts
    /// exactly one, so the shard ends at exactly its capacity.
    #[test]
    fn large_shards_evict_only_when_full() {
        let cap = if cfg!(miri) { 64 } else { 4096 };
        let l = limiter(1, cap, 1);
        let origin = |i: usize| Origin::from_peer_id(&(i as u64).to_le_bytes());
        for i in 0..cap {
            assert!(l.admit(&[5], &origin(i), T0).is_admit());
        }
        let early = l.stats().evicted;
        assert!(
            early as usize * 1000 <= cap,
            "{early} evictions before full"
        );
        assert_eq!(l.stats().entries as u64, cap as u64 - early);
        for i in cap..3 * cap {
            assert!(l.admit(&[5], &origin(i), T0).is_admit());
        }
        // Every new key added one or evicted one; the shard ends exactly full.
        let s = l.stats();
        assert_eq!((s.entries, s.evicted), (cap, 2 * cap as u64));
    }

    /// Enough evictions to make seize reclaim (its batch is shrunk to 2 under Miri).
    #[test]
    #[cfg(debug_assertions)]
    fn evicted_nodes_are_reclaimed() {
        let before = crate::reclaim::reclaimed_nodes();
        let l = limiter(1, 4, 2); // capacity 2 per shard
        let n = if cfg!(miri) { 40 } else { 1000 };
        for i in 0..n {
            let _ = l.admit(&[1], &Origin::from_peer_id(&(i as u32).to_le_bytes()), T0);
        }
        assert_eq!(l.stats().evicted, n - 2);
        // Retirements were batched and freed while the limiter was alive: well over half of them
        // (the last partial batch waits for the collector's drop).
        let freed = crate::reclaim::reclaimed_nodes() - before;
        assert!(
            freed >= (n - 2) / 2,
            "freed {freed} of {} retired nodes",
            n - 2
        );
        drop(l);
    }
}
