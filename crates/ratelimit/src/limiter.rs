//! [`AppRateLimiter`]: the public limiter. Sharding (the shard hash and the per-shard tables),
//! the admission and penalty paths for one key and for groups, and [`Stats`]. The decision types
//! themselves are in `decision`, the counters' striping in `counters`.

use std::num::NonZeroU32;

use crossbeam_utils::CachePadded;
use txgate_sync::reclaim::{Collector, Guard};
use txgate_sync::sync::Ordering;

use crate::config::{Config, ConfigError};
use crate::counters::{Counter, DecisionCounters};
use crate::decision::{Clock, Decision, InsufficientCapacity, Stats, SystemClock};
use crate::group::{self, Group, Kind, Outcome};
use crate::lru::{self, LruShard, Verb};
use crate::node::Update;
use crate::origin::{self, AppKey, Origin};
use crate::small_buf::SmallBuf;
use crate::state::{self, Counts, EVICTED, Instant, Limits, MARKER, TOUCHED};
use crate::table::{Got, Shard};

/// Retired nodes batched per thread before a reclamation pass (seize's batch). seize runs one
/// barrier per batch (a `membarrier` system call on Linux, microseconds), so a bigger batch keeps
/// it off the evicting path; it holds at most this many nodes per thread (24 bytes each) waiting.
const RECLAIM_BATCH: usize = 512;

/// Groups with up to this many distinct app ids are handled without allocating (go-algorand
/// groups hold at most 16 transactions).
const INLINE_GROUP: usize = group::INLINE;

/// The shards, all of one eviction policy, chosen once at construction from the shard
/// capacity (`lru::exact`).
pub(crate) enum Shards {
    /// Shards of up to 64 keys: exact LRU, each a plain table behind a mutex (`lru`).
    Lru(Box<[CachePadded<LruShard>]>),
    /// Larger shards (and the CLOCK test geometry): the lock-free set-associative table,
    /// evicting by CLOCK (`table`).
    Clock(Box<[CachePadded<Shard>]>),
}

impl Shards {
    fn len(&self) -> usize {
        match self {
            Shards::Lru(s) => s.len(),
            Shards::Clock(s) => s.len(),
        }
    }

    /// The bytes of one shard's table (`None` if that overflows).
    pub(crate) fn bytes_for(capacity: usize, clock_ways: Option<usize>) -> Option<usize> {
        if lru::exact(capacity, clock_ways) {
            LruShard::bytes_for(capacity)
        } else {
            Shard::bytes_for(capacity, clock_ways)
        }
    }
}

/// A sharded, sliding-window rate limiter of transaction groups per (application id, origin),
/// after go-algorand's app rate limiter (`appRateLimiter` in its `data` package): lock-free in
/// shards of more than 64 keys (CLOCK eviction), a mutex per shard in smaller ones (exact LRU).
///
/// See the [crate documentation](crate) for the rules, the guarantees and an example.
pub struct AppRateLimiter {
    /// The shards, all of one policy (so a group's keys are all in LRU shards or all in CLOCK
    /// shards: one enum variant holds every shard). Invariant: `shards.len()` is a power of two
    /// (`Config::validate` rejects any other count), so a shard index reduces with `& (len - 1)`
    /// (`shard_index`, `canonical`, `origin::shard_of`) and every reduced index is in bounds.
    shards: Shards,
    limits: Limits,
    salt: [u8; 16],
    /// Seed of the shard hash, derived from the salt.
    shard_seed: u64,
    config: Config,
    /// Decision counters, striped by thread.
    counters: DecisionCounters,
    /// The time of the `*_now` calls.
    clock: Box<dyn Clock + Send + Sync>,
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

/// A distinct key of a group: its shard (reduced), hash, and first index in the caller's slice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Member {
    pub(crate) shard: u32,
    pub(crate) hash: u64,
    pub(crate) index: usize,
}

/// A group's keys, inline up to [`INLINE_GROUP`].
type Members = SmallBuf<Member, INLINE_GROUP>;

impl AppRateLimiter {
    /// Builds a limiter.
    ///
    /// Allocates the tables up front: 16 bytes of slots per key of `max_size` in shards of more
    /// than 64 keys (two 8-byte slots per key; nodes, one 24-byte allocation per key, come as keys
    /// arrive), 24 bytes per key in smaller ones (hash, state word and last access, in place)
    /// plus the shard's mutex.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when `max_size`, `rate_per_second` or `window` is zero, `shards` is not a
    /// power of two, `max_size < 2 * shards`, the limit per window `L = rate x window` is below 1
    /// or above 33,554,431 (2^25 - 1), no salt was given and the OS random source fails, or the tables cannot
    /// be allocated ([`ConfigError::TableTooLarge`]).
    pub fn new(config: Config) -> Result<Self, ConfigError> {
        Self::with_clock(config, SystemClock)
    }

    /// A limiter as [`new`](Self::new) builds it, whose `*_now` calls
    /// ([`admit_now`](Self::admit_now), [`admit_keys_now`](Self::admit_keys_now),
    /// [`penalize_now`](Self::penalize_now)) read `clock` ([`SystemClock`] for `new`; a
    /// [`ManualClock`](crate::ManualClock) in tests). The calls that take `now_ns` ignore it.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn with_clock(
        config: Config,
        clock: impl Clock + Send + Sync + 'static,
    ) -> Result<Self, ConfigError> {
        let v = config.validate()?;
        let shard_seed = u64::from_le_bytes(v.salt[..8].try_into().expect("8 bytes"))
            ^ u64::from_le_bytes(v.salt[8..].try_into().expect("8 bytes")).rotate_left(17);
        let table_error = || ConfigError::TableTooLarge {
            bytes: Shards::bytes_for(v.capacity, v.clock_ways)
                .and_then(|b| b.checked_mul(config.shards))
                .unwrap_or(usize::MAX),
        };
        // One policy for every shard; a table that cannot be allocated is an error, not an abort.
        let shards = if lru::exact(v.capacity, v.clock_ways) {
            Shards::Lru(
                padded(config.shards, || LruShard::new(v.capacity).ok()).ok_or_else(table_error)?,
            )
        } else {
            Shards::Clock(
                padded(config.shards, || Shard::new(v.capacity, v.clock_ways).ok())
                    .ok_or_else(table_error)?,
            )
        };
        Ok(Self {
            shards,
            limits: v.limits,
            salt: v.salt,
            shard_seed,
            config,
            counters: DecisionCounters::new(),
            clock: Box::new(clock),
            collector: Collector::new(RECLAIM_BATCH),
        })
    }

    /// The limiter's clock's time, in nanoseconds since the Unix epoch (see
    /// [`with_clock`](Self::with_clock)).
    pub fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    /// [`admit`](Self::admit) at the limiter's clock's time ([`now_ns`](Self::now_ns)).
    pub fn admit_now(&self, app_ids: &[u64], origin: &Origin) -> Decision {
        self.admit(app_ids, origin, self.now_ns())
    }

    /// [`admit_keys`](Self::admit_keys) at the limiter's clock's time.
    pub fn admit_keys_now(&self, keys: &[AppKey]) -> Decision {
        self.admit_keys(keys, self.now_ns())
    }

    /// [`admit_n`](Self::admit_n) at the limiter's clock's time.
    ///
    /// # Errors
    ///
    /// As [`admit_n`](Self::admit_n).
    pub fn admit_n_now(
        &self,
        app_ids: &[u64],
        origin: &Origin,
        cost: NonZeroU32,
    ) -> Result<Decision, InsufficientCapacity> {
        self.admit_n(app_ids, origin, cost, self.now_ns())
    }

    /// [`penalize`](Self::penalize) at the limiter's clock's time.
    pub fn penalize_now(&self, app_ids: &[u64], origin: &Origin) {
        self.penalize(app_ids, origin, self.now_ns())
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

    /// Derives the key of one (app id, origin) pair: one BLAKE2b-256 (see
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
    /// division) holds; then each distinct app's count goes up by one, all at one instant. A
    /// dropped group changes no counter; every key of the group is created if missing and its
    /// recency refreshed either way. A group with no app id is always admitted.
    ///
    /// A [`Decision::Drop`] names the app over its limit (its index in `app_ids`) and the time
    /// until its key would admit again; a [`Decision::Admit`] the admissions its tightest key
    /// has left. (For a weighted group, see [`admit_n`](Self::admit_n).)
    ///
    /// Costs one BLAKE2b per distinct app (up to four side by side on Intel CPUs with AVX2);
    /// see [`admit_keys`](Self::admit_keys) to skip that.
    /// Allocates only for the node of a new key, or for groups of more than 16 app ids.
    pub fn admit(&self, app_ids: &[u64], origin: &Origin, now_ns: u64) -> Decision {
        let mut members = SmallBuf::new();
        self.app_members(app_ids, origin, &mut members);
        self.decide(&mut members, 1, now_ns)
    }

    /// The keys of a group's distinct non-zero app ids, each with the index of the app's first
    /// occurrence: one BLAKE2b per distinct app, up to four side by side where the CPU takes
    /// the lanes (`derive_key_hashes`).
    /// O(n log n) in the group's length (a sort beyond 16 apps), so a hostile group of many app
    /// ids costs no more than sorting them. (Filled in place, as
    /// [`key_members`](Self::key_members).)
    fn app_members(&self, app_ids: &[u64], origin: &Origin, members: &mut Members) {
        if let [app] = *app_ids {
            if app != 0 {
                self.push_keys(&[(app, 0)], origin, members);
            }
            return;
        }
        if app_ids.len() <= INLINE_GROUP {
            let mut apps = [(0, 0); INLINE_GROUP];
            let mut n = 0;
            for (i, &app) in app_ids.iter().enumerate() {
                if app != 0 && !app_ids[..i].contains(&app) {
                    apps[n] = (app, i);
                    n += 1;
                }
            }
            self.push_keys(&apps[..n], origin, members);
            return;
        }
        let mut apps: Vec<(u64, usize)> = app_ids
            .iter()
            .enumerate()
            .filter(|&(_, &app)| app != 0)
            .map(|(i, &app)| (app, i))
            .collect();
        apps.sort_unstable();
        apps.dedup_by_key(|&mut (app, _)| app);
        self.push_keys(&apps, origin, members);
    }

    /// Derives the keys of distinct `(app id, index)` pairs from `origin` (as
    /// [`app_key`](Self::app_key) does, [`origin::LANES`] digests at a time where the CPU takes
    /// the lanes) and pushes them in order.
    fn push_keys(&self, apps: &[(u64, usize)], origin: &Origin, members: &mut Members) {
        // The usual group of one app: its key alone, with no lanes to fill.
        if let [(app, index)] = *apps {
            let key = self.app_key(app, origin);
            members.push(Member {
                shard: key.shard,
                hash: key.hash,
                index,
            });
            return;
        }
        for chunk in apps.chunks(origin::LANES) {
            let mut ids = [0; origin::LANES];
            for (id, &(app, _)) in ids.iter_mut().zip(chunk) {
                *id = app;
            }
            let mut hashes = [0; origin::LANES];
            let n = chunk.len();
            origin::derive_key_hashes(&ids[..n], &self.salt, origin, &mut hashes[..n]);
            for (&(app, index), &hash) in chunk.iter().zip(&hashes) {
                members.push(Member {
                    shard: origin::shard_of(app, self.shard_seed, self.shards.len()),
                    hash,
                    index,
                });
            }
        }
    }

    /// [`admit`](Self::admit) for a group of one app with a pre-derived key.
    pub fn admit_key(&self, key: AppKey, now_ns: u64) -> Decision {
        let at = self.limits.instant(now_ns);
        let guard = self.collector.enter();
        let member = Member {
            shard: self.shard_index(key.shard),
            hash: key.hash,
            index: 0,
        };
        self.admit_one(member, 1, at, &guard)
    }

    /// [`admit`](Self::admit) with pre-derived keys (from [`app_key`](Self::app_key)); keys
    /// that are equal once their shard is reduced modulo the shard count count once.
    pub fn admit_keys(&self, keys: &[AppKey], now_ns: u64) -> Decision {
        let mut members = SmallBuf::new();
        Self::key_members(keys, &mut members);
        self.decide(&mut members, 1, now_ns)
    }

    /// A weighted admission: [`admit`](Self::admit) of a group that weighs `cost` admissions,
    /// taken at one instant (governor's `check_n`), e.g. a group charged by its transaction count
    /// or its size.
    ///
    /// The group is admitted iff for every distinct non-zero app
    /// `prev * (window - offset) / window + cur + cost <= L` (integer floor division); then each
    /// distinct app's count goes up by `cost`, all at one instant. A dropped group changes no
    /// counter, and its [`Decision::Drop`] gives the time until that key would admit `cost`.
    /// [`Stats`] count groups, whatever their cost. A cost of 1 decides exactly as
    /// [`admit`](Self::admit).
    ///
    /// # Errors
    ///
    /// [`InsufficientCapacity`] when `cost > L` ([`limit`](Self::limit)): no window could admit
    /// it. Nothing is touched then (no key created, no counter changed). The cost is checked
    /// before the apps, so a group without app ids, which [`admit`](Self::admit) always admits,
    /// is refused too (governor's `check_n` refuses a cost above its burst the same way,
    /// whatever the key).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::num::NonZeroU32;
    /// use std::time::Duration;
    /// use txgate_ratelimit::{AppRateLimiter, Config, Decision, InsufficientCapacity, Origin};
    ///
    /// let limiter = AppRateLimiter::new(
    ///     Config::default()
    ///         .with_rate_per_second(1)
    ///         .with_window(Duration::from_secs(10)) // L = 10 per window
    ///         .with_max_size(4096),
    /// )?;
    /// let peer = Origin::from_peer_id(b"peer-1");
    /// let now = 1_700_000_000_000_000_000; // an interval boundary
    /// let cost = |n| NonZeroU32::new(n).unwrap();
    ///
    /// // A group of 6 transactions calling app 7, charged 6: 4 left.
    /// let d = limiter.admit_n(&[7], &peer, cost(6), now)?;
    /// assert!(matches!(d, Decision::Admit { remaining: Some(4), .. }));
    /// // 5 more do not fit (6 + 5 > 10) and change nothing; 4 do.
    /// assert!(limiter.admit_n(&[7], &peer, cost(5), now)?.is_drop());
    /// assert!(limiter.admit_n(&[7], &peer, cost(4), now)?.is_admit());
    /// // More than L never fits: an error, not a drop.
    /// let err: InsufficientCapacity = limiter.admit_n(&[7], &peer, cost(11), now).unwrap_err();
    /// assert_eq!((err.cost, err.limit), (11, 10));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn admit_n(
        &self,
        app_ids: &[u64],
        origin: &Origin,
        cost: NonZeroU32,
        now_ns: u64,
    ) -> Result<Decision, InsufficientCapacity> {
        let cost = self.limits.cost(cost)?;
        let mut members = SmallBuf::new();
        self.app_members(app_ids, origin, &mut members);
        Ok(self.decide(&mut members, cost, now_ns))
    }

    /// [`admit_n`](Self::admit_n) with pre-derived keys, as [`admit_keys`](Self::admit_keys).
    ///
    /// # Errors
    ///
    /// [`InsufficientCapacity`] when `cost > L`, as [`admit_n`](Self::admit_n).
    pub fn admit_keys_n(
        &self,
        keys: &[AppKey],
        cost: NonZeroU32,
        now_ns: u64,
    ) -> Result<Decision, InsufficientCapacity> {
        let cost = self.limits.cost(cost)?;
        let mut members = SmallBuf::new();
        Self::key_members(keys, &mut members);
        Ok(self.decide(&mut members, cost, now_ns))
    }

    /// Pre-derived keys as group members, each with its index in `keys`.
    /// (Filled in place: a `Members` returned by value is copied whole, 400 bytes.)
    fn key_members(keys: &[AppKey], members: &mut Members) {
        for (i, key) in keys.iter().enumerate() {
            members.push(Member {
                shard: key.shard,
                hash: key.hash,
                index: i,
            });
        }
    }

    /// Penalizes `origin` for each distinct non-zero app id: the key is created if missing,
    /// rolled to `now_ns`, and `cur += max(1, L / 4)` (saturating at 65,535, or at 2^25 - 1 when
    /// `L` is above 65,535), on all keys at one
    /// instant.
    pub fn penalize(&self, app_ids: &[u64], origin: &Origin, now_ns: u64) {
        let mut members = SmallBuf::new();
        self.app_members(app_ids, origin, &mut members);
        self.penalize_members(&mut members, now_ns);
    }

    /// [`penalize`](Self::penalize) with pre-derived keys; equal keys count once.
    pub fn penalize_keys(&self, keys: &[AppKey], now_ns: u64) {
        let mut members = SmallBuf::new();
        Self::key_members(keys, &mut members);
        self.penalize_members(&mut members, now_ns);
    }

    fn penalize_members(&self, members: &mut Members, now_ns: u64) {
        let at = self.limits.instant(now_ns);
        let guard = self.collector.enter();
        let members = self.canonical(members);
        match members {
            [] => {}
            [m] => self.penalize_one(*m, at, &guard),
            _ => {
                // The cost is an admission's: a penalty adds max(1, L / 4) whatever it is.
                let _ = self.run_group(Kind::Penalize, 1, members, at, &guard);
            }
        }
    }

    /// Statistics: O(shards + threads); the counters are relaxed, so under concurrent use the
    /// sum is a recent value, not a snapshot.
    pub fn stats(&self) -> Stats {
        let mut stats = self.counters.sum();
        stats.entries = self.entries();
        stats
    }

    /// Keys tracked now, over all shards (exact when no operation is in flight).
    fn entries(&self) -> usize {
        match &self.shards {
            Shards::Lru(shards) => shards.iter().map(|s| s.lock().len()).sum(),
            Shards::Clock(shards) => shards.iter().map(|s| s.entries()).sum(),
        }
    }

    /// The tracked keys (for differential tests against the reference model): every key as
    /// `(shard, hash)`, sorted. O(max_size).
    #[doc(hidden)]
    pub fn tracked_keys(&self) -> Vec<(u32, u64)> {
        let mut keys: Vec<(u32, u64)> = match &self.shards {
            Shards::Lru(shards) => shards
                .iter()
                .enumerate()
                .flat_map(|(i, shard)| {
                    let keys: Vec<u64> = shard.lock().keys().collect();
                    keys.into_iter().map(move |k| (i as u32, k))
                })
                .collect(),
            Shards::Clock(shards) => {
                let guard = self.collector.enter();
                shards
                    .iter()
                    .enumerate()
                    .flat_map(|(i, shard)| shard.keys(&guard).map(move |k| (i as u32, k)))
                    .collect()
            }
        };
        keys.sort_unstable();
        keys
    }

    /// The tracked keys whose CLOCK reference bit is set, as `(shard, hash)`, sorted (loom
    /// builds and unit tests; for the model checker, to compare with
    /// `model::Model::referenced_keys`); empty for exact-LRU shards, which keep no bits. Call
    /// only when no operation is in flight.
    #[cfg(any(loom, test))]
    #[doc(hidden)]
    pub fn referenced_keys(&self) -> Vec<(u32, u64)> {
        let mut keys: Vec<(u32, u64)> = match &self.shards {
            Shards::Lru(_) => Vec::new(),
            Shards::Clock(shards) => {
                let guard = self.collector.enter();
                shards
                    .iter()
                    .enumerate()
                    .flat_map(|(i, shard)| {
                        shard.referenced_keys(&guard).map(move |k| (i as u32, k))
                    })
                    .collect()
            }
        };
        keys.sort_unstable();
        keys
    }

    /// Under loom and in unit tests: from now on, keeps what [`victims`](Self::victims) and
    /// [`cleared_by_this_thread`](Self::cleared_by_this_thread) report (always kept under
    /// loom; in unit tests, keeping them orders the threads' CLOCK evictions and sweeps through
    /// a mutex, so only a history checker asks). Call before the threads start.
    #[cfg(any(loom, test))]
    #[doc(hidden)]
    pub fn record_history(&self) {
        if let Shards::Clock(shards) = &self.shards {
            shards.iter().for_each(|s| s.record_history());
        }
    }

    /// The keys evicted so far, as `(shard, hash)`, sorted (loom builds and unit tests, CLOCK
    /// shards once [`record_history`](Self::record_history) was called; for the model checker,
    /// to compare with `model::Model::victims`).
    #[cfg(any(loom, test))]
    #[doc(hidden)]
    pub fn victims(&self) -> Vec<(u32, u64)> {
        let mut v: Vec<(u32, u64)> = match &self.shards {
            Shards::Lru(shards) => shards
                .iter()
                .enumerate()
                .flat_map(|(i, s)| s.lock().victims().into_iter().map(move |k| (i as u32, k)))
                .collect(),
            Shards::Clock(shards) => shards
                .iter()
                .enumerate()
                .flat_map(|(i, s)| s.victims().into_iter().map(move |k| (i as u32, k)))
                .collect(),
        };
        v.sort_unstable();
        v
    }

    /// Evictions attempted so far in CLOCK shards (markers installed on victims; 0 for LRU
    /// shards), for models that bound the retries of racing evictions (loom builds).
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn eviction_attempts(&self) -> usize {
        match &self.shards {
            Shards::Lru(_) => 0,
            Shards::Clock(shards) => shards.iter().map(|s| s.eviction_attempts()).sum(),
        }
    }

    /// Under loom and in unit tests: the reference bits the calling thread's CLOCK sweeps have
    /// cleared so far, for the model checker, to match with `model::Model::cleared` (0 for LRU
    /// shards).
    #[cfg(any(loom, test))]
    #[doc(hidden)]
    pub fn cleared_by_this_thread(&self) -> usize {
        match &self.shards {
            Shards::Lru(_) => 0,
            Shards::Clock(shards) => shards.iter().map(|s| s.cleared_by_this_thread()).sum(),
        }
    }

    /// Under loom: the evictions that CLOCK sweeps have helped so far, for models that check
    /// what follows a help.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn eviction_helps(&self) -> usize {
        match &self.shards {
            Shards::Lru(_) => 0,
            Shards::Clock(shards) => shards.iter().map(|s| s.eviction_helps()).sum(),
        }
    }

    /// The `(prev, cur)` of a tracked key as stored (not rolled), for differential tests; does
    /// not refresh its recency.
    #[doc(hidden)]
    pub fn counts(&self, key: AppKey) -> Option<(u32, u32)> {
        let i = self.shard_index(key.shard) as usize;
        let c = match &self.shards {
            Shards::Lru(shards) => shards[i].lock().peek(key.hash)?,
            Shards::Clock(shards) => {
                let guard = self.collector.enter();
                let node = shards[i].peek(key.hash, &guard)?;
                node.counts(&guard).0
            }
        };
        Some((c.prev, c.cur))
    }

    /// Checks every shard's invariants (no key twice, occupancy, room accounting, no group
    /// operation left over); call only when no operation is in flight. Panics on a violation.
    #[cfg(any(test, fuzzing, loom))]
    #[doc(hidden)]
    pub fn validate(&self) {
        match &self.shards {
            Shards::Lru(shards) => shards.iter().for_each(|s| s.validate()),
            Shards::Clock(shards) => {
                let guard = self.collector.enter();
                shards.iter().for_each(|s| s.validate(&guard));
            }
        }
        assert!(self.entries() <= self.config.max_size);
    }

    #[inline]
    fn shard_index(&self, shard: u32) -> u32 {
        shard & (self.shards.len() as u32 - 1)
    }

    /// Adds `n` to a counter of this thread's stripe.
    #[inline]
    fn count(&self, guard: &Guard<'_>, counter: Counter, n: u64) {
        self.counters.add(guard.thread_id(), counter, n);
    }

    /// Reduces shards, removes repeated keys (keeping first indices) and sorts the rest into
    /// the canonical order `(shard, hash)`. Inlined for two keys (the usual multi-app group:
    /// one comparison); other lengths go to [`sorted`](Self::sorted).
    #[inline(always)]
    fn canonical<'a>(&self, members: &'a mut Members) -> &'a [Member] {
        let mask = self.shards.len() as u32 - 1;
        let all = members.as_mut_slice();
        if let [a, b] = all {
            a.shard &= mask;
            b.shard &= mask;
            return match (a.shard, a.hash).cmp(&(b.shard, b.hash)) {
                std::cmp::Ordering::Less => &all[..2],
                std::cmp::Ordering::Greater => {
                    all.swap(0, 1);
                    &all[..2]
                }
                // Equal keys count once, with the first index (the first is `a`).
                std::cmp::Ordering::Equal => &all[..1],
            };
        }
        Self::sorted(all, mask)
    }

    /// [`canonical`](Self::canonical) of any number of keys but two (`mask`: shards - 1).
    #[inline(never)]
    fn sorted(all: &mut [Member], mask: u32) -> &[Member] {
        for m in all.iter_mut() {
            m.shard &= mask;
        }
        // By (shard, hash, index): an insertion sort for the usual small groups, a sort beyond.
        if all.len() > INLINE_GROUP {
            all.sort_unstable_by_key(|m| (m.shard, m.hash, m.index));
        }
        for i in 1..all.len() {
            let mut j = i;
            while j > 0
                && (all[j - 1].shard, all[j - 1].hash, all[j - 1].index)
                    > (all[j].shard, all[j].hash, all[j].index)
            {
                all.swap(j - 1, j);
                j -= 1;
            }
        }
        let mut len = 0;
        for i in 0..all.len() {
            if len == 0 || (all[len - 1].shard, all[len - 1].hash) != (all[i].shard, all[i].hash) {
                all[len] = all[i];
                len += 1;
            }
        }
        &all[..len]
    }

    /// Decides a group of weight `cost` (`1..=L`). Inlined, so that the unweighted calls'
    /// constant cost folds into the single-key path.
    #[inline(always)]
    fn decide(&self, members: &mut Members, cost: u32, now_ns: u64) -> Decision {
        let at = self.limits.instant(now_ns);
        let guard = self.collector.enter();
        let members = self.canonical(members);
        match members {
            [] => {
                self.count(&guard, Counter::Admitted, 1);
                Decision::admit(None)
            }
            [m] => self.admit_one(*m, cost, at, &guard),
            _ => {
                let d = self.run_group(Kind::Admit, cost, members, at, &guard);
                let counter = if d.is_admit() {
                    Counter::Admitted
                } else {
                    Counter::Dropped
                };
                self.count(&guard, counter, 1);
                d
            }
        }
    }

    #[inline]
    fn fresh(at: Instant) -> Counts {
        Counts {
            interval: at.interval,
            prev: 0,
            cur: 0,
        }
    }

    /// One key's admission of weight `cost` (`1..=L`) in the shard's policy.
    #[inline(always)]
    fn admit_one(&self, m: Member, cost: u32, at: Instant, guard: &Guard<'_>) -> Decision {
        debug_assert!((1..=self.limits.limit).contains(&cost));
        match &self.shards {
            Shards::Clock(shards) => {
                self.admit_clock(&shards[m.shard as usize], m, cost, at, guard)
            }
            Shards::Lru(shards) => self.admit_lru(&shards[m.shard as usize], m, cost, at, guard),
        }
    }

    /// One key's admission in an exact-LRU shard: one critical section (the access, the
    /// decision on the counts it left, the write).
    #[inline(never)]
    fn admit_lru(
        &self,
        shard: &LruShard,
        m: Member,
        cost: u32,
        at: Instant,
        guard: &Guard<'_>,
    ) -> Decision {
        let limits = &self.limits;
        let mut table = shard.lock();
        let touched = table.touch(m.hash, at);
        let next = state::admit(touched.counts, at, limits, cost);
        if let Some(next) = next {
            table.store(touched.slot, m.hash, next);
        }
        drop(table);
        self.count(guard, Counter::Evicted, u64::from(touched.evicted));
        match next {
            Some(next) => {
                self.count(guard, Counter::Admitted, 1);
                Decision::admit(Some(state::remaining(next, at, limits)))
            }
            None => {
                self.count(guard, Counter::Dropped, 1);
                Decision::drop(
                    m.index,
                    state::retry_after(touched.counts, at, limits, cost),
                )
            }
        }
    }

    /// One key's admission in a CLOCK shard: a lookup and one compare-and-swap on its counts (a
    /// new key is born holding its admission).
    #[inline(always)]
    fn admit_clock(
        &self,
        shard: &Shard,
        m: Member,
        cost: u32,
        at: Instant,
        guard: &Guard<'_>,
    ) -> Decision {
        let limits = &self.limits;
        // The operation's sweep of the key, kept across its look-agains (`Shard::get_or_insert`).
        let mut swept = 0;
        loop {
            // A fresh key admits any cost up to L (checked by the callers); a cost above 65,535
            // makes its word wide (`state::pack` keeps its interval's low 10 bits).
            let born = Counts {
                cur: cost,
                ..Self::fresh(at)
            };
            let got = shard.get_or_insert(m.hash, born, &mut swept, guard);
            self.count(guard, Counter::Evicted, u64::from(got.evicted));
            if got.inserted {
                self.count(guard, Counter::Admitted, 1);
                return Decision::admit(Some(limits.limit - cost));
            }
            // The access's word: a compare-and-swap from it is the access (which also sets the
            // key's reference bit); a failed one decides again on the newer word.
            let mut word = got.node.load();
            loop {
                if word & (MARKER | EVICTED) != 0 {
                    // A group operation to resolve, or an eviction in flight: the general path.
                    break;
                }
                match state::check(word, at, limits, cost) {
                    Ok((next, remaining)) => {
                        // Release on success, SeqCst on failure: as in `Node::update` (a group
                        // this thread aborted before must see its abort once it reads this).
                        match got.node.state.compare_exchange_weak(
                            word,
                            next,
                            Ordering::Release,
                            Ordering::SeqCst,
                        ) {
                            Ok(_) => {
                                self.count(guard, Counter::Admitted, 1);
                                return Decision::admit(Some(remaining));
                            }
                            Err(now) => word = now,
                        }
                    }
                    Err(_) => {
                        // The counts from the word in a register, not from the error (whose
                        // fields, stored one by one and reloaded whole, stall store forwarding).
                        let c = state::counts(word);
                        // A dropped access leaves its key current too: its interval rolled
                        // and written (the crate's rule "on access, roll"), so that a key in
                        // use is never evicted as stale, and its reference bit set. A write
                        // only when that changes the word (a new interval, or the first access
                        // since a CLOCK sweep). Release on success, SeqCst on failure: as in
                        // `Node::update` (a rolled interval is counts a group may drop on); a
                        // failure re-decides on the newer word.
                        let rolled = state::pack(state::roll(c, at).0) | TOUCHED;
                        if rolled != word
                            && let Err(now) = got.node.state.compare_exchange_weak(
                                word,
                                rolled,
                                Ordering::Release,
                                Ordering::SeqCst,
                            )
                        {
                            word = now;
                            continue;
                        }
                        self.count(guard, Counter::Dropped, 1);
                        return Decision::drop(m.index, state::retry_after(c, at, limits, cost));
                    }
                }
            }
            if let Some(d) = self.admit_contended(shard, m, cost, &got, at, guard) {
                return d;
            }
        }
    }

    /// The general path of [`admit_one`](Self::admit_one) on a node whose word holds a group
    /// operation or the evicted flag: `None` to look the key up again.
    #[inline(never)]
    fn admit_contended(
        &self,
        shard: &Shard,
        m: Member,
        cost: u32,
        got: &Got<'_>,
        at: Instant,
        guard: &Guard<'_>,
    ) -> Option<Decision> {
        let limits = &self.limits;
        let update = shard.update(got, guard, |c| match state::admit(c, at, limits, cost) {
            Some(next) => (Some(next), Ok(next)),
            // Dropped: the key rolled to `at` all the same (as in `admit_one`).
            None => (Some(state::roll(c, at).0), Err(c)),
        });
        match update {
            Update::Done(Ok(next)) => {
                self.count(guard, Counter::Admitted, 1);
                Some(Decision::admit(Some(state::remaining(next, at, limits))))
            }
            Update::Done(Err(c)) => {
                self.count(guard, Counter::Dropped, 1);
                Some(Decision::drop(
                    m.index,
                    state::retry_after(c, at, limits, cost),
                ))
            }
            Update::Evicted(_) => {
                // Evicted by an insertion in flight: finish it, then look again.
                shard.settle(m.hash, guard);
                None
            }
        }
    }

    /// One key's penalty in the shard's policy.
    fn penalize_one(&self, m: Member, at: Instant, guard: &Guard<'_>) {
        let limits = &self.limits;
        let shard = match &self.shards {
            Shards::Clock(shards) => &shards[m.shard as usize],
            Shards::Lru(shards) => {
                // One critical section: the access and the penalty on the counts it left.
                let mut table = shards[m.shard as usize].lock();
                let touched = table.touch(m.hash, at);
                table.store(
                    touched.slot,
                    m.hash,
                    state::penalize(touched.counts, at, limits),
                );
                drop(table);
                self.count(guard, Counter::Evicted, u64::from(touched.evicted));
                return;
            }
        };
        // As in `admit_clock`.
        let mut swept = 0;
        loop {
            let born = state::penalize(Self::fresh(at), at, limits);
            let got = shard.get_or_insert(m.hash, born, &mut swept, guard);
            self.count(guard, Counter::Evicted, u64::from(got.evicted));
            if got.inserted {
                return;
            }
            match shard.update(&got, guard, |c| (Some(state::penalize(c, at, limits)), ())) {
                Update::Done(()) => return,
                Update::Evicted(_) => shard.settle(m.hash, guard),
            }
        }
    }

    /// A group of two or more distinct keys (canonical order): the admission (of weight `cost`)
    /// or penalty, applied to all of them at one instant or dropped: under the locks of its
    /// shards ([`lru::group`]) or by the lock-free group protocol ([`group::run`]).
    fn run_group(
        &self,
        kind: Kind,
        cost: u32,
        members: &[Member],
        at: Instant,
        guard: &Guard<'_>,
    ) -> Decision {
        let limits = &self.limits;
        let shards = match &self.shards {
            Shards::Clock(shards) => shards,
            Shards::Lru(shards) => {
                let verb = match kind {
                    Kind::Admit => Verb::Admit(cost),
                    Kind::Penalize => Verb::Penalize,
                };
                let (outcome, evicted) = lru::group(shards, members, verb, at, limits);
                self.count(guard, Counter::Evicted, evicted);
                return Self::group_decision(outcome, members, at, limits, cost);
            }
        };
        // The keys' set lines load side by side while the first lookup runs.
        for m in members {
            shards[m.shard as usize].prefetch(m.hash);
        }
        let g = Group {
            kind,
            cost,
            at,
            limits,
        };
        // Per key (by index), the group's sweep of it so far where it is not 0: kept across
        // the look-agains and attempts of this operation (`Shard::get_or_insert`). Only an
        // insertion that gave up its sweep leaves an entry, so it stays empty (no allocation)
        // but in races.
        let mut sweeps: Vec<(usize, usize)> = Vec::new();
        // One lookup step (E2): the key touched (rolled to `at`, whatever the group's outcome:
        // a dropped group leaves its keys current), or inserted (evicting). A node found
        // evicted before the lookup took effect is looked up again, so that every lookup leaves
        // its key tracked and current.
        let look_up = |i: usize| {
            let m = &members[i];
            let shard = &shards[m.shard as usize];
            let mut swept = if sweeps.is_empty() {
                0
            } else {
                swept_of(&sweeps, i)
            };
            let got = loop {
                let got = shard.get_or_insert(m.hash, Self::fresh(at), &mut swept, guard);
                self.count(guard, Counter::Evicted, u64::from(got.evicted));
                if !got.inserted
                    && let Update::Evicted(_) =
                        shard.update(&got, guard, |c| (Some(state::roll(c, at).0), ()))
                {
                    shard.settle(m.hash, guard);
                    continue;
                }
                break got;
            };
            if swept != 0 || !sweeps.is_empty() {
                keep_swept(&mut sweeps, i, swept);
            }
            got
        };
        // A key's node if its shard tracks it, by a scan alone (no write): the first attempt's
        // lookups take effect with its decision when every key is found (`group::run`).
        let find = |i: usize| {
            let m = &members[i];
            shards[m.shard as usize].peek(m.hash, guard)
        };
        let outcome = group::run(&g, members.len(), find, look_up, guard);
        Self::group_decision(outcome, members, at, limits, cost)
    }

    /// A group's decision from its outcome.
    #[inline(always)]
    fn group_decision(
        outcome: Outcome,
        members: &[Member],
        at: Instant,
        limits: &Limits,
        cost: u32,
    ) -> Decision {
        match outcome {
            Outcome::Applied { remaining } => Decision::admit(remaining),
            Outcome::Dropped { key, counts } => Decision::drop(
                members[key].index,
                state::retry_after(counts, at, limits, cost),
            ),
        }
    }
}

/// Key `i`'s sweep so far in a group's list of the sweeps it kept (0 if none).
#[cold]
#[inline(never)]
fn swept_of(sweeps: &[(usize, usize)], i: usize) -> usize {
    sweeps.iter().find(|&&(j, _)| j == i).map_or(0, |&(_, s)| s)
}

/// Keeps key `i`'s sweep so far (`swept`) in a group's list of the sweeps it kept.
#[cold]
#[inline(never)]
fn keep_swept(sweeps: &mut Vec<(usize, usize)>, i: usize, swept: usize) {
    match sweeps.iter_mut().find(|(j, _)| *j == i) {
        Some(entry) => entry.1 = swept,
        None if swept != 0 => sweeps.push((i, swept)),
        None => {}
    }
}

/// `n` shards made by `make`, each padded to its own cache lines; `None` if the slice or a shard
/// cannot be allocated.
fn padded<S>(n: usize, mut make: impl FnMut() -> Option<S>) -> Option<Box<[CachePadded<S>]>> {
    let mut shards = Vec::new();
    shards.try_reserve_exact(n).ok()?;
    for _ in 0..n {
        shards.push(CachePadded::new(make()?));
    }
    Some(shards.into_boxed_slice())
}
