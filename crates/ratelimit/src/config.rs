//! Configuration of an [`AppRateLimiter`](crate::AppRateLimiter) and its typed errors.

use std::time::Duration;

use crate::state::{LIMIT_MAX, Limits};

/// Configuration of an [`AppRateLimiter`](crate::AppRateLimiter).
///
/// The defaults are go-algorand's (`TxBacklogAppTxRateLimiterMaxSize` = 1,048,576,
/// `TxBacklogAppTxPerSecondRate` = 100, `TxBacklogServiceRateWindowSeconds` = 10, 128 buckets),
/// with a random salt.
///
/// Build one from [`Config::default`] with the `with_*` setters: `with_x(value)` takes the new
/// value of field `x`, of that field's type, and returns the config, so the calls chain. They
/// check nothing; [`AppRateLimiter::new`](crate::AppRateLimiter::new) does. The fields stay public
/// for reading and assigning; the struct is `#[non_exhaustive]` (code outside this crate cannot
/// write it as a struct literal), so that a new field is not a breaking change.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use txgate_ratelimit::{AppRateLimiter, Config};
///
/// let limiter = AppRateLimiter::new(
///     Config::default()
///         .with_max_size(4096)
///         .with_rate_per_second(5)
///         .with_window(Duration::from_secs(2))
///         .with_salt(Some([7; 16])), // reproducible keys
/// )?;
/// assert_eq!(limiter.limit(), 10); // L = 5 per second x 2 s
/// # Ok::<(), txgate_ratelimit::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
#[non_exhaustive]
pub struct Config {
    /// Total number of (app, origin) keys tracked, over all shards (default 1,048,576). Each shard
    /// holds `max_size / shards` keys, so the limiter never tracks more than `max_size`.
    pub max_size: usize,
    /// Admissions per second per key (default 100).
    pub rate_per_second: u64,
    /// Length of the sliding window (default 10 s). Intervals are `now / window`.
    pub window: Duration,
    /// Number of shards, a power of two (default 128, upstream's bucket count).
    pub shards: usize,
    /// The 16-byte salt of key derivation; `None` (the default) draws one from the OS.
    pub salt: Option<[u8; 16]>,
    /// Tests only: every shard evicts by CLOCK in sets of this many ways (2 to 31), two ways per
    /// key, however small (see `Config::with_clock_ways`).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) clock_ways: Option<usize>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_size: 1 << 20,
            rate_per_second: 100,
            window: Duration::from_secs(10),
            shards: 128,
            salt: None,
            clock_ways: None,
        }
    }
}

/// The setters: each sets the field it is named after (see the field for its unit and default)
/// and returns the config.
impl Config {
    /// Sets [`max_size`](Self::max_size): keys tracked over all shards (default 1,048,576; at
    /// least `2 * shards`).
    #[must_use]
    pub fn with_max_size(mut self, max_size: usize) -> Self {
        self.max_size = max_size;
        self
    }

    /// Sets [`rate_per_second`](Self::rate_per_second): admissions per second per key (default
    /// 100; at least 1).
    #[must_use]
    pub fn with_rate_per_second(mut self, rate_per_second: u64) -> Self {
        self.rate_per_second = rate_per_second;
        self
    }

    /// Sets [`window`](Self::window): the sliding window's length (default 10 s; longer than
    /// zero, and `rate_per_second x window` between 1 and 33,554,431 (2^25 - 1) admissions).
    #[must_use]
    pub fn with_window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// Sets [`shards`](Self::shards): the shard count (default 128; a power of two).
    #[must_use]
    pub fn with_shards(mut self, shards: usize) -> Self {
        self.shards = shards;
        self
    }

    /// Tests only (hidden, not a stable API): every shard evicts by CLOCK in sets of `ways` ways
    /// (clamped to 2..=31), two ways per key, as shards of more than 64 keys do with 31, so that a
    /// CLOCK shard can be small enough for a model checker. `None`: the normal geometry.
    #[doc(hidden)]
    #[must_use]
    pub fn with_clock_ways(mut self, ways: Option<usize>) -> Self {
        self.clock_ways = ways.map(|w| w.clamp(2, 31));
        self
    }

    /// Sets [`salt`](Self::salt): the 16-byte key-derivation salt (default `None`: drawn from
    /// the OS when the limiter is built).
    #[must_use]
    pub fn with_salt(mut self, salt: Option<[u8; 16]>) -> Self {
        self.salt = salt;
        self
    }
}

/// Why a [`Config`] was rejected by [`AppRateLimiter::new`](crate::AppRateLimiter::new).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `max_size` is zero.
    #[error("max_size must be at least 1")]
    ZeroMaxSize,
    /// `rate_per_second` is zero.
    #[error("rate_per_second must be at least 1")]
    ZeroRate,
    /// `window` is zero.
    #[error("window must be longer than zero")]
    ZeroWindow,
    /// `window` does not fit in a `u64` of nanoseconds (about 584 years).
    #[error("window {window:?} is longer than u64::MAX nanoseconds")]
    WindowTooLong {
        /// The configured window.
        window: Duration,
    },
    /// `shards` is not a power of two (zero included).
    #[error("shards must be a power of two, got {shards}")]
    ShardsNotPowerOfTwo {
        /// The configured shard count.
        shards: usize,
    },
    /// Each shard holds at least two keys and the total stays within `max_size`, so `max_size`
    /// must be at least `2 * shards`.
    #[error("max_size {max_size} is below 2 keys per shard for {shards} shards")]
    MaxSizeBelowShards {
        /// The configured maximum size.
        max_size: usize,
        /// The configured shard count.
        shards: usize,
    },
    /// `L = rate_per_second * window` (in whole admissions, rounded down) is below 1.
    #[error("limit per window is below 1 ({rate_per_second}/s over {window:?})")]
    LimitBelowOne {
        /// The configured rate.
        rate_per_second: u64,
        /// The configured window.
        window: Duration,
    },
    /// `L` exceeds 33,554,431 (2^25 - 1), the largest count a key's packed state word holds.
    #[error("limit per window {limit} exceeds the maximum {max}")]
    LimitTooLarge {
        /// The computed limit per window.
        limit: u128,
        /// The largest accepted limit (33,554,431).
        max: u32,
    },
    /// The tables for `max_size` keys do not fit in memory (or in the address space): the
    /// allocation of `bytes` failed.
    #[error("the limiter's tables ({bytes} bytes) cannot be allocated")]
    TableTooLarge {
        /// Bytes the tables would take (`usize::MAX` if that overflows).
        bytes: usize,
    },
    /// No salt was given and the OS random source failed.
    #[error("drawing a random salt from the OS failed")]
    Salt(#[source] RandomSourceError),
}

/// The OS random source failed (its message, and the OS error code where there is one, are in
/// [`Display`](std::fmt::Display)); the error type of the random-source crate is not part of this
/// crate's API.
#[derive(Debug)]
pub struct RandomSourceError(getrandom::Error);

impl std::fmt::Display for RandomSourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

/// No source: the random source's error is the root cause (its OS code is in the message and in
/// [`raw_os_error`](Self::raw_os_error)).
impl std::error::Error for RandomSourceError {}

impl RandomSourceError {
    /// Fills `buf` from the OS random source.
    ///
    /// # Errors
    ///
    /// The OS random source's failure.
    pub fn fill(buf: &mut [u8]) -> Result<(), Self> {
        getrandom::fill(buf).map_err(Self)
    }

    /// The raw OS error code, when the failure came from the OS.
    pub fn raw_os_error(&self) -> Option<i32> {
        self.0.raw_os_error()
    }
}

/// What [`Config::validate`] derives: the arithmetic limits, per-shard capacity and salt.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Validated {
    pub(crate) limits: Limits,
    pub(crate) capacity: usize,
    pub(crate) salt: [u8; 16],
    /// The CLOCK test geometry (`Config::with_clock_ways`).
    pub(crate) clock_ways: Option<usize>,
}

impl Config {
    /// Checks the configuration and derives the limit per window `L`.
    pub(crate) fn validate(&self) -> Result<Validated, ConfigError> {
        if self.max_size == 0 {
            return Err(ConfigError::ZeroMaxSize);
        }
        if self.rate_per_second == 0 {
            return Err(ConfigError::ZeroRate);
        }
        if self.window.is_zero() {
            return Err(ConfigError::ZeroWindow);
        }
        let window_ns =
            u64::try_from(self.window.as_nanos()).map_err(|_| ConfigError::WindowTooLong {
                window: self.window,
            })?;
        if !self.shards.is_power_of_two() {
            return Err(ConfigError::ShardsNotPowerOfTwo {
                shards: self.shards,
            });
        }
        if self.max_size / self.shards < 2 {
            return Err(ConfigError::MaxSizeBelowShards {
                max_size: self.max_size,
                shards: self.shards,
            });
        }
        let capacity = self.max_size / self.shards;
        if crate::limiter::Shards::bytes_for(capacity, self.clock_ways)
            .and_then(|b| b.checked_mul(self.shards))
            .is_none_or(|b| b > isize::MAX as usize)
        {
            return Err(ConfigError::TableTooLarge { bytes: usize::MAX });
        }
        // L = rate x window seconds, exactly: rate * window_ns / 10^9, rounded down.
        let limit = u128::from(self.rate_per_second) * u128::from(window_ns) / 1_000_000_000;
        if limit == 0 {
            return Err(ConfigError::LimitBelowOne {
                rate_per_second: self.rate_per_second,
                window: self.window,
            });
        }
        let limit = u32::try_from(limit)
            .ok()
            .filter(|&l| l <= LIMIT_MAX)
            .ok_or(ConfigError::LimitTooLarge {
                limit,
                max: LIMIT_MAX,
            })?;
        let salt = match self.salt {
            Some(salt) => salt,
            None => {
                let mut salt = [0; 16];
                RandomSourceError::fill(&mut salt).map_err(ConfigError::Salt)?;
                salt
            }
        };
        Ok(Validated {
            limits: Limits::new(window_ns, limit, (limit / 4).max(1)),
            capacity,
            salt,
            clock_ways: self.clock_ways,
        })
    }
}
