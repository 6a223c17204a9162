//! A lock-free, sharded, sliding-window rate limiter for application-call transaction groups,
//! keyed by (application id, origin): the app rate limiter of go-algorand's transaction handler,
//! rebuilt without locks.
//!
//! # When to use it
//!
//! A node's transaction ingress takes groups from many peers. When the backlog is congested,
//! groups that call one application far more often than a fair share are dropped before they
//! reach the backlog. [`AppRateLimiter`] answers "admit this group from this origin now?" in tens
//! of nanoseconds, from many threads at once, in bounded memory.
//!
//! # Rules
//!
//! Each (app id, origin) pair has a key (the first 8 bytes of a salted BLAKE2b-256 digest, see
//! [`derive_key_hash`]) and per-key state `(interval, prev, cur)` with
//! `interval = now / window`, `offset = now % window`:
//!
//! - On access, same interval: keep; next interval: `prev = cur, cur = 0`; older: both 0.
//! - A group is admitted iff for every distinct non-zero app id in it
//!   `prev * (window - offset) / window + cur + 1 <= L` (integer floor division), where
//!   `L = rate_per_second x window` ([`AppRateLimiter::limit`]). Admitted: each app's `cur += 1`.
//! - FIX 1 (DESIGN.md): a dropped group changes no counter (upstream incremented the apps checked
//!   before the failing one). FIX 2: check-and-increment is one CAS per key, so `N` threads racing
//!   on one key with limit `L` admit exactly `L` in a window, never more (upstream read, compared
//!   and added in three steps). One corner: a shard whose capacity is below the number of
//!   threads inserting new keys into it at once can have all its room reserved by insertions
//!   in flight; a lookup then decides on a node it does not keep rather than wait (lock-free),
//!   which can admit one more. The default shard capacity is 8,192 keys.
//! - [`AppRateLimiter::penalize`] adds `max(1, L / 4)` to each app's `cur`.
//! - Every attempt refreshes each touched key's recency. A new key evicts only when its shard
//!   is full: a stale key first (its interval older than the previous one), else the least
//!   recently used. Shards of up to 8 keys are searched whole, so their eviction is exact LRU
//!   (single-threaded; under concurrency recency ties are possible). In larger shards the
//!   candidates are the nodes of the new key's 16-slot probe window (about 8 when the shard is
//!   full: DESIGN.md's bounded-window design, sampled LRU). A shard has two slots per key of
//!   capacity, so a window is rarely full while its shard has room; when it is, the key evicts
//!   early. Measured at the default 1,048,576 keys (example `bytes_per_key`): 341 of 1,048,917
//!   new keys offered to shards with room evicted (0.03%).
//!
//! # Example
//!
//! ```
//! use std::net::IpAddr;
//! use std::time::Duration;
//! use txgate_ratelimit::{AppRateLimiter, Config, Decision, Origin};
//!
//! let limiter = AppRateLimiter::new(Config {
//!     rate_per_second: 1,
//!     window: Duration::from_secs(3), // L = 3 per window
//!     max_size: 4096,                 // 128 shards of 32 keys
//!     ..Config::default()
//! })?;
//! let peer = Origin::from_ip("203.0.113.9".parse::<IpAddr>().unwrap());
//! let now = 1_700_000_000_000_000_000; // ns since the Unix epoch, at an interval boundary
//!
//! // A group calling app 42 twice and app 7 once counts once for each app.
//! for _ in 0..3 {
//!     assert_eq!(limiter.admit(&[42, 42, 7], &peer, now), Decision::Admit);
//! }
//! assert_eq!(limiter.admit(&[7], &peer, now), Decision::Drop);
//! // Another origin has its own budget.
//! let other = Origin::from_peer_id(b"peer-2");
//! assert_eq!(limiter.admit(&[7], &other, now), Decision::Admit);
//!
//! // Hot paths derive the key once per (peer, app) and skip the blake2b.
//! let key = limiter.app_key(9, &peer);
//! assert!(limiter.admit_key(key, now).is_admit());
//!
//! let stats = limiter.stats();
//! assert_eq!((stats.admitted, stats.dropped, stats.entries), (5, 1, 4));
//! # Ok::<(), txgate_ratelimit::ConfigError>(())
//! ```
//!
//! # Guarantees and costs
//!
//! - No lock on any path: lookups are loads, updates are CASes on one packed 64-bit word per key.
//!   New keys are published with a CAS and a short lock-free protocol that keeps one node per key
//!   (see the `table` module source).
//! - Memory: tracked keys never exceed `max_size`. Each key costs two 8-byte slots plus a
//!   24-byte node: 40 bytes requested, 48.5 bytes resident with glibc's allocator overhead
//!   (measured by the `bytes_per_key` example at 1,048,576 keys). Nodes taken out of the table wait for
//!   reclamation by [seize](https://docs.rs/seize), bounded by its batch size (64) times the
//!   number of threads.
//! - Per admission of a tracked key: a seize guard, one window scan (usually one slot), one CAS
//!   on the key's state, a recency stamp and a counter on the thread's own cache line.
//! - The hit path (an existing key) allocates nothing; a new key allocates one node.
//! - Time is the caller's (`now_ns`, nanoseconds since the Unix epoch; see [`Clock`]). Callers'
//!   clocks should agree within one window: a caller one interval behind a key is counted in the
//!   key's interval at offset 0; further behind resets the key. Intervals are compared modulo
//!   2^30, so a key untouched for exactly a multiple of 2^30 windows (340 years at 10 s) aliases.
//! - Limits per window above 65,535 are rejected (16-bit packed counters).

mod config;
mod limiter;
#[doc(hidden)]
pub mod model;
mod origin;
mod reclaim;
mod state;
mod sync;
mod table;

pub use config::{Config, ConfigError};
pub use limiter::{AppRateLimiter, Clock, Decision, Stats, SystemClock};
pub use origin::{AppKey, Origin, derive_key_hash};
