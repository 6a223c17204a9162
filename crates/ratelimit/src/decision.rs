//! What the limiter answers and reports: [`Decision`] (admit, or drop with the app's index and
//! the time until it would admit again), [`Stats`] (decision and eviction counters), and
//! [`Clock`] / [`SystemClock`] / [`ManualClock`], a source of `now_ns` for callers without a
//! timestamp.

use std::sync::Arc;
// The manual clock's word is std's even under loom: it carries a test's time, not data that the
// limiter's models publish through it, and loom atomics cannot live outside a model.
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What [`AppRateLimiter::admit`](crate::AppRateLimiter::admit) decided for a group, and why.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use txgate_ratelimit::{AppRateLimiter, Config, Decision, Origin};
///
/// let limiter = AppRateLimiter::new(
///     Config::default()
///         .with_rate_per_second(1)
///         .with_window(Duration::from_secs(10)) // L = 10 per window
///         .with_max_size(4096),
/// )?;
/// let peer = Origin::from_peer_id(b"peer-1");
/// let now = 1_700_000_000_000_000_000; // an interval boundary
/// for left in (0..10).rev() {
///     assert!(matches!(
///         limiter.admit(&[7], &peer, now),
///         Decision::Admit { remaining: Some(r), .. } if r == left
///     ));
/// }
/// // App 7 (index 1 of this group) is over its limit until its count leaves the window.
/// match limiter.admit(&[3, 7], &peer, now) {
///     Decision::Drop { index, retry_after_ns, .. } => {
///         assert_eq!(index, 1);
///         // The 10 admissions weigh floor(10 * (10 s - offset) / 10 s) in the next interval:
///         // 9 once 1 ns of it has passed, so the key admits again at 10 s + 1 ns.
///         assert_eq!(retry_after_ns, 10_000_000_001);
///     }
///     admitted => panic!("{admitted:?}"),
/// }
/// # Ok::<(), txgate_ratelimit::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use]
#[non_exhaustive]
pub enum Decision {
    /// Every app of the group was within its limit; each app's count went up by one (by the
    /// group's cost, for [`admit_n`](crate::AppRateLimiter::admit_n)).
    #[non_exhaustive]
    Admit {
        /// Admissions the tightest key of the group has left in the window after this one:
        /// the least over the group's apps of `L - (prev * (window - offset) / window + cur)`
        /// at `now`. `None` for a group without app ids (never limited).
        remaining: Option<u32>,
    },
    /// An app of the group had no room for it (was at its limit, for a cost of 1; for
    /// [`admit_n`](crate::AppRateLimiter::admit_n), had less than the cost left); no counter
    /// changed.
    #[non_exhaustive]
    Drop {
        /// Where the app over its limit is in the caller's slice (`app_ids` of
        /// [`admit`](crate::AppRateLimiter::admit), `keys` of
        /// [`admit_keys`](crate::AppRateLimiter::admit_keys)): its first occurrence. When several are
        /// over, the first in the limiter's key order (the order groups take their keys in, the
        /// same for every caller).
        index: usize,
        /// Nanoseconds from `now` until that key would admit the group again (its cost, for
        /// [`admit_n`](crate::AppRateLimiter::admit_n)) if nothing else changed it, from the
        /// window rule (the previous interval's weight falls as the window slides; see
        /// [`AppRateLimiter::admit`](crate::AppRateLimiter::admit)).
        retry_after_ns: u64,
    },
}

impl Decision {
    /// `true` for [`Decision::Admit`].
    pub fn is_admit(self) -> bool {
        matches!(self, Decision::Admit { .. })
    }

    /// `true` for [`Decision::Drop`].
    pub fn is_drop(self) -> bool {
        !self.is_admit()
    }

    /// For a drop, how long until the key without room would admit the group (its cost) again.
    pub fn retry_after(self) -> Option<Duration> {
        match self {
            Decision::Drop { retry_after_ns, .. } => Some(Duration::from_nanos(retry_after_ns)),
            Decision::Admit { .. } => None,
        }
    }

    pub(crate) fn admit(remaining: Option<u32>) -> Self {
        Decision::Admit { remaining }
    }

    pub(crate) fn drop(index: usize, retry_after_ns: u64) -> Self {
        Decision::Drop {
            index,
            retry_after_ns,
        }
    }
}

/// A weighted admission whose cost exceeds the limit per window `L`: no window can ever admit
/// it, so [`admit_n`](crate::AppRateLimiter::admit_n) refuses it instead of dropping it (governor's
/// `InsufficientCapacity` for `check_n` beyond the burst size, the same rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a cost of {cost} exceeds the limit of {limit} per window: no window can admit it")]
#[non_exhaustive]
pub struct InsufficientCapacity {
    /// The cost asked for.
    pub cost: u32,
    /// The limit per window `L`.
    pub limit: u64,
}

/// Counters of an [`AppRateLimiter`](crate::AppRateLimiter), summed over shards and threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
#[non_exhaustive]
pub struct Stats {
    /// Groups admitted (including groups without any app id).
    pub admitted: u64,
    /// Groups dropped.
    pub dropped: u64,
    /// Tracked keys evicted to make room for new ones.
    pub evicted: u64,
    /// Keys tracked now (never more than `max_size`; exact when no insertion is in flight).
    pub entries: usize,
}

/// A source of "now" for callers that do not have a timestamp at hand: nanoseconds since the Unix
/// epoch, the unit of every `now_ns` argument. A limiter built with
/// [`AppRateLimiter::with_clock`](crate::AppRateLimiter::with_clock) reads it in its `*_now`
/// calls ([`admit_now`](crate::AppRateLimiter::admit_now), ...).
pub trait Clock {
    /// Nanoseconds since the Unix epoch.
    fn now_ns(&self) -> u64;
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    /// The wall clock in nanoseconds since the Unix epoch; 0 for a clock set before 1970, and
    /// saturated at `u64::MAX` (the year 2554).
    fn now_ns(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, saturating_ns)
    }
}

/// A clock that moves only when told to: for tests and simulations that drive a limiter through
/// its `*_now` calls. Share it with the limiter through an `Arc` (`Arc<C>` is a [`Clock`] when
/// `C` is).
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use txgate_ratelimit::{AppRateLimiter, Config, ManualClock, Origin};
///
/// let clock = Arc::new(ManualClock::new(1_700_000_000_000_000_000));
/// let limiter = AppRateLimiter::with_clock(
///     Config::default()
///         .with_rate_per_second(1)
///         .with_window(Duration::from_secs(1))
///         .with_max_size(1024)
///         .with_shards(8),
///     Arc::clone(&clock),
/// )?;
/// let peer = Origin::from_peer_id(b"p");
/// assert!(limiter.admit_now(&[5], &peer).is_admit());
/// assert!(limiter.admit_now(&[5], &peer).is_drop()); // L = 1 per 1 s window
/// clock.advance(Duration::from_secs(2)); // two windows later the count is forgotten
/// assert!(limiter.admit_now(&[5], &peer).is_admit());
/// # Ok::<(), txgate_ratelimit::ConfigError>(())
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ns: AtomicU64,
}

impl ManualClock {
    /// A clock reading `now_ns` (nanoseconds since the Unix epoch).
    pub fn new(now_ns: u64) -> Self {
        Self {
            now_ns: AtomicU64::new(now_ns),
        }
    }

    /// Sets the time to `now_ns`, also backwards.
    pub fn set(&self, now_ns: u64) {
        // Relaxed: the value is the whole message; nothing else is published with it.
        self.now_ns.store(now_ns, Ordering::Relaxed);
    }

    /// Moves the time on by `by`, saturating at `u64::MAX` nanoseconds.
    pub fn advance(&self, by: Duration) {
        let by = saturating_ns(by);
        // Relaxed: as in `set`. A compare-and-swap loop (a saturating add has no single atomic
        // instruction) keeps concurrent advances from being lost.
        let mut t = self.now_ns.load(Ordering::Relaxed);
        while let Err(now) = self.now_ns.compare_exchange_weak(
            t,
            t.saturating_add(by),
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            t = now;
        }
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        // Relaxed: as in `set`.
        self.now_ns.load(Ordering::Relaxed)
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now_ns(&self) -> u64 {
        (**self).now_ns()
    }
}

/// `d` in nanoseconds, saturated at `u64::MAX` (584 years).
fn saturating_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// `advance` adds exactly, loses no concurrent advance and saturates at `u64::MAX`.
    #[test]
    fn manual_clock_advances_add_up_and_saturate() {
        let clock = Arc::new(ManualClock::new(1_000));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let c = Arc::clone(&clock);
                std::thread::spawn(move || {
                    for _ in 0..1_000 {
                        c.advance(Duration::from_nanos(3));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(clock.now_ns(), 1_000 + 2 * 1_000 * 3);
        clock.set(u64::MAX - 5);
        clock.advance(Duration::from_nanos(10));
        assert_eq!(clock.now_ns(), u64::MAX);
    }
}
