//! A sharded, sliding-window rate limiter for application-call transaction groups, keyed by
//! (application id, origin): the app rate limiter of go-algorand's transaction handler, rebuilt
//! lock-free for its default geometry (shards of more than 64 keys, CLOCK eviction); shards of
//! up to 64 keys keep exact LRU behind a mutex each, as go-algorand's buckets do.
//!
//! # When to use it
//!
//! A node's transaction ingress takes groups from many peers. When the backlog is congested,
//! groups that call one application far more often than a fair share are dropped before they
//! reach the backlog. [`AppRateLimiter`] answers "admit this group from this origin now?" from
//! many threads at once (without a lock in the default geometry), in bounded memory, and says
//! why when it drops one.
//!
//! # Rules
//!
//! Each (app id, origin) pair has a key (the first 8 bytes of a salted BLAKE2b-256 digest, see
//! [`derive_key_hash`]) and per-key state `(interval, prev, cur)` with
//! `interval = now / window`, `offset = now % window`:
//!
//! - On access, same interval: keep; next interval: `prev = cur, cur = 0`; older: both 0. A
//!   caller whose clock is behind the key's (by up to 2^20 intervals; 2^5 with `L` above 65,535)
//!   is counted in the key's interval at offset 0 and leaves the key's interval as it is: a key
//!   never rolls backwards. Intervals are kept modulo 2^28, so a key more than that bound
//!   "ahead" is taken as one idle for almost 2^28 windows and reset (a key counting more than
//!   65,535 admissions in an interval, possible only with `L` above 65,535: modulo 2^10; see the
//!   limits below).
//! - A group is admitted iff for every distinct non-zero app id in it
//!   `prev * (window - offset) / window + cur + 1 <= L` (integer floor division), where
//!   `L = rate_per_second x window` ([`AppRateLimiter::limit`]). Admitted: each app's `cur += 1`.
//! - A dropped group changes no count (go-algorand increments the apps checked before the
//!   failing one), but like every access it leaves each key it touched current: rolled to `now`
//!   and stored, its recency refreshed.
//! - Linearizable, evictions included. Every concurrent history of admissions, penalties,
//!   insertions and evictions has the outcome of a sequential run of [`model::Model`] (the rule
//!   below, exactly; the condition that a sweep follows a scan that found its key missing is
//!   the caller's to place, see [`model::Model::sweep_step`]), each step taking effect at one
//!   instant:
//!   - **E0**: admissions and penalties are linearizable. So `N` threads racing on a key with
//!     limit `L` admit exactly `L` in a window (admissions of cost one) while the key stays
//!     (go-algorand reads, compares and adds in three steps and can admit more), a group is
//!     all-or-nothing, and no caller is ever dropped because of a count that is later taken back.
//!   - **E1**: each eviction takes effect at one instant, atomically with the insertion that
//!     causes it, and its victim is the rule's choice in the state of that instant: in shards of
//!     up to 64 keys (searched whole) a stale key first, else the least recently used; in larger
//!     shards CLOCK, with the reference bit in the key's own state word (a victim has had no
//!     access since a sweep last passed it; a sweep's clearing of a bit is a step of its own,
//!     [`model::Model::sweep_step`]; a sweep belongs to one operation's insertion of one key:
//!     it starts after a scan of that operation found the key missing, its steps may go on
//!     after another operation inserted the key, and its position stays the operation's until
//!     the operation's insertion of the key takes effect, so its eviction goes on from where
//!     its own steps left it, round the set again if a use set a bit it had cleared, also when
//!     the operation inserts the key only after an earlier try found it present).
//!     Every access that takes effect before the eviction (admitted, dropped, penalty) is a use;
//!     every access after it finds the key absent and starts it afresh.
//!   - **E2**: a group is its per-key lookup steps (each a touch, an insertion, or an insertion
//!     with an eviction, under E1), then one atomic admit-or-drop step; the lookups of an
//!     attempt that another operation aborts stand (go-algorand also creates and evicts keys for
//!     groups it drops). A key that a later lookup of the same attempt evicted is decided on its
//!     counts at that eviction (its final counts), and the decision stores nothing for it, also
//!     where another operation has inserted the key again since (a new life of the key, which
//!     the group did not look up).
//!   - **E3** (a bounded escape, forcing an eviction after failed commits) is not used: in a
//!     CLOCK shard an insertion whose victim keeps being used plans again, so an insertion and
//!     the uses of its victim are obstruction-free against each other.
//!
//!   E0-E3 hold for both eviction policies. In shards of up to 64 keys (exact LRU) every
//!   operation runs under its shard's mutex and takes effect there: an access changes its key's
//!   counts and recency at one instant, and a group locks all its shards (in ascending shard
//!   index) and takes effect as one step, lookups and decision together (a special case of E2).
//!   In larger shards (CLOCK, lock-free) each step takes effect at an atomic instruction (the
//!   `table` module's `# Protocol`).
//! - A weighted admission ([`AppRateLimiter::admit_n`]) of cost `c` (`1..=L`) asks
//!   `prev * (window - offset) / window + cur + c <= L` of every app and adds `c` to each; a
//!   cost above `L` is refused with [`InsufficientCapacity`]. A cost of 1 is [`admit`](AppRateLimiter::admit).
//! - [`AppRateLimiter::penalize`] adds `max(1, L / 4)` to each app's `cur`.
//! - Every attempt refreshes each touched key's recency. In shards of up to 64 keys a new key
//!   evicts only when its shard is full: a stale key first (its interval older than the
//!   inserting caller's previous one; a key ahead of the caller is current, so an access never
//!   makes a key stale while all callers' clocks, the one that last moved the key's interval
//!   included, are within the lag bound of each other: 2^20 windows, 2^5 with `L` above
//!   65,535), else the
//!   least recently used. Shards of up to 64 keys are searched whole, so they evict only when full, by
//!   that rule. Larger shards are sets of 31 ways (32 words with the set's claim word) with two
//!   ways per key; a new key evicts in its own set by CLOCK (second chance, an LRU
//!   approximation; the reference bit is in the key's state word, set by every access, a new
//!   key's clear), when the shard is full or, rarely, when its set is (measured by the
//!   `bytes_per_key` example: see the README).
//!
//! # Example
//!
//! ```
//! use std::net::IpAddr;
//! use std::time::Duration;
//! use txgate_ratelimit::{AppRateLimiter, Config, Decision, Origin};
//!
//! let limiter = AppRateLimiter::new(
//!     Config::default()
//!         .with_rate_per_second(1)
//!         .with_window(Duration::from_secs(3)) // L = 3 per window
//!         .with_max_size(4096), // 128 shards of 32 keys
//! )?;
//! let peer = Origin::from_ip("203.0.113.9".parse::<IpAddr>().unwrap());
//! let now = 1_700_000_001_000_000_000; // ns since the Unix epoch, at an interval boundary
//!
//! // A group calling app 42 twice and app 7 once counts once for each app.
//! for _ in 0..3 {
//!     assert!(limiter.admit(&[42, 42, 7], &peer, now).is_admit());
//! }
//! // App 7 is at its limit: dropped, and the decision says which app and for how long (its
//! // 3 admissions weigh floor(3 * (3 s - offset) / 3 s) in the next interval, 2 from 1 ns on).
//! let d = limiter.admit(&[7], &peer, now);
//! assert!(matches!(d, Decision::Drop { index: 0, .. }));
//! assert_eq!(d.retry_after(), Some(Duration::from_nanos(3_000_000_001)));
//! // Another origin has its own budget.
//! let other = Origin::from_peer_id(b"peer-2");
//! assert!(limiter.admit(&[7], &other, now).is_admit());
//!
//! // Hot paths derive the key once per (peer, app) and skip the BLAKE2b.
//! let key = limiter.app_key(9, &peer);
//! assert!(matches!(limiter.admit_key(key, now), Decision::Admit { remaining: Some(2), .. }));
//!
//! let stats = limiter.stats();
//! assert_eq!((stats.admitted, stats.dropped, stats.entries), (5, 1, 4));
//! # Ok::<(), txgate_ratelimit::ConfigError>(())
//! ```
//!
//! # Guarantees and costs
//!
//! - Progress. Shards of up to 64 keys block: every operation takes its shard's mutex (a group
//!   all its shards' mutexes, in ascending shard index, so no deadlock), for a scan of at most
//!   64 entries and the decision; see the `lru` module for why a lock. Larger shards, every
//!   shard of the default geometry, take no lock in txgate's code on any path. There a tracked
//!   key's admission is a set scan (tags in the slot pointers spare dereferencing other keys'
//!   nodes) and one compare-and-swap on the key's packed 64-bit state, which also carries its
//!   CLOCK reference bit (a dropped hit writes only when it rolls the key or sets the bit).
//!   A new key is one claim of its set, one slot switch and the claim's release; one that evicts
//!   adds a marker on its victim and its resolution (a one-entry multi-word compare-and-swap):
//!   duplicates of a key cannot arise (the `table` module's `# Protocol` section). While a
//!   shard fills, a new key joining a non-empty set also takes a unit of the shard's spare room
//!   at the instant of its claim: a small record (from a per-thread cache) installed on the
//!   shard's unit count and about three more compare-and-swaps, helped to its end by any
//!   thread that needs a unit meanwhile (so an insertion evicts while the shard has a free
//!   unit only when its own set's ways are all taken, the early eviction of the `table`
//!   module).
//!   Beneath it, seize takes a mutex when a thread first enters (its thread ids) and, where the
//!   `membarrier` system call is missing, in the barrier it runs once per 512 retirements; a new
//!   key's node comes from a per-thread cache or the allocator.
//! - Groups of several apps take effect on all their keys at one instant: in CLOCK shards
//!   through a multi-word compare-and-swap (see the `group` module source), in LRU shards under
//!   their shards' locks. In CLOCK shards, operations on keys no group or eviction is applying
//!   to are lock-free, evicting insertions among themselves included (a CLOCK sweep that meets
//!   another insertion's eviction finishes it instead of aborting it; the `table` module's
//!   "Progress"). A group in flight is aborted by any operation that needs one of its keys
//!   before all its keys are marked (rather than finished for it: that would mean touching its
//!   other keys' nodes, which may already be reclaimed), so a group and operations on its keys
//!   are only obstruction-free against each other: a group that keeps retrying (with exponential
//!   backoff) and an operation that keeps meeting its fresh markers can, under an adversarial
//!   schedule, stall each other.
//! - Memory: tracked keys never exceed `max_size`. A shard of more than 64 keys costs two 8-byte
//!   slots per key plus a 24-byte node per tracked key (32 bytes with glibc's allocator); see the
//!   README for the measured bytes per key. Evicted nodes wait for reclamation by
//!   [seize](https://docs.rs/seize), at most 512 per thread. A shard of up to 64 keys is 24
//!   bytes per key of capacity (hash, state word, last access), allocated once, and its mutex.
//! - The hit path (an existing key) allocates nothing; a new key in a CLOCK shard allocates one
//!   node (nothing in an LRU shard); a group reuses its operation record after warm-up.
//! - Time is the caller's (`now_ns`, nanoseconds since the Unix epoch; see [`Clock`]). Intervals
//!   are compared modulo 2^28, so a key untouched for a multiple of 2^28 windows, give or take
//!   one, aliases (85 years at 10 s windows, 3.1 days at 1 ms), and one untouched for between
//!   2^28 minus the lag bound and 2^28 windows looks ahead of its callers (charged its old
//!   counts at offset 0, not reset) until it is used or evicted.
//! - Limits per window up to 2^25 - 1 (33,554,431) are accepted; go-algorand's
//!   `TxBacklogAppTxPerSecondRate: 10000` over 10 s is 100,000. A key's state is one 64-bit
//!   word: counts of up to 65,535 share it with a 28-bit interval; a key that counts more (only
//!   with `L` above 65,535) has 25-bit counts and a 10-bit interval while it does, so such a
//!   key untouched for a multiple of 2^10 windows (or one more) takes its old counts as current
//!   (or previous), and one untouched for between 2^10 - 2^5 and 2^10 windows (plus a multiple
//!   of 2^10) looks ahead (2.8 hours at 10 s windows); and with `L` above 65,535 callers' clocks
//!   may differ by at most 2^5 windows (for every key). Exact intervals at that size would need
//!   a 128-bit word. Larger limits are rejected.
//! - 64-bit targets keep a 16-bit key tag in the top bits of node pointers, which needs heap
//!   addresses below 2^48 (true of user space on x86-64 and AArch64 without pointer tagging); a
//!   node allocated above panics with that message.
//!
//! # Modules
//! - `limiter`: [`AppRateLimiter`]: sharding, the eviction policy (chosen once per limiter),
//!   the single-key, weighted and group admission and penalty paths.
//! - `counters`: the decision counters, striped by thread.
//! - `small_buf`: a group's keys, nodes and counts on the stack up to 16.
//! - `decision`: [`Decision`], [`Stats`], [`InsufficientCapacity`], and [`Clock`] / [`SystemClock`] / [`ManualClock`].
//! - `config`: [`Config`], its validation into limits and table sizes, and [`ConfigError`].
//! - `origin`: [`Origin`], [`AppKey`] and [`derive_key_hash`] (salted BLAKE2b-256 keys), and the
//!   shard hash of an app id.
//! - `state`: the packed per-key state word `(interval, prev, cur)` and the sliding-window
//!   arithmetic: the estimate `prev * (window - offset) / window + cur`, rolling intervals,
//!   `remaining` and `retry_after`.
//! - `node`: a tracked key's node and the compare-and-swap loops on its state word.
//! - `table`: one CLOCK shard's lock-free set-associative table (tagged slot pointers, set
//!   claims, CLOCK eviction) and its structural validator; its module docs hold the `# Protocol`
//!   (states, numbered invariants, linearization points, progress, known limits).
//! - `lru`: one exact-LRU shard (up to 64 keys): a plain table behind a mutex, the group over
//!   such shards, and its validator; its module docs give the rule, the lock order and why a
//!   lock.
//! - `group`: the multi-word compare-and-swap that applies a group to all its keys at once, and
//!   commits an eviction (one entry).
//! - [`model`]: a single-threaded reference model for differential tests and fuzzing (hidden).
//! - `stress` (tests only): threaded trials against the linearizability rules.
//! - `checker` (loom builds and tests only): the linearizability checker of two threads'
//!   histories against [`model`], shared by the loom models and the threaded trials.

#[cfg(any(test, loom))]
#[doc(hidden)]
pub mod checker;
mod config;
mod counters;
mod decision;
mod group;
mod limiter;
mod lru;
#[doc(hidden)]
pub mod model;
mod node;
mod origin;
#[cfg(not(loom))]
mod pool;
mod small_buf;
mod state;
mod table;

#[cfg(all(test, not(loom)))]
mod stress;

pub use config::{Config, ConfigError, RandomSourceError};
pub use decision::{Clock, Decision, InsufficientCapacity, ManualClock, Stats, SystemClock};
pub use limiter::AppRateLimiter;
pub use origin::{AppKey, Origin, OriginParseError, derive_key_hash};
#[doc(hidden)]
pub use origin::{derive_in_lanes, derives_in_lanes};

/// The crate README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

// Shared across threads by design (`Arc<AppRateLimiter>` in a node's ingress): a change that
// made it lose `Send` or `Sync` fails to compile here rather than in a user's crate.
const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<AppRateLimiter>();
    shareable::<AppKey>();
    shareable::<Origin>();
};
