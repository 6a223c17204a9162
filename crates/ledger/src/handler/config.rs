//! [`HandlerConfig`], its go-algorand defaults and its check ([`HandlerConfig::validate`]); the
//! errors of building a handler and starting its workers.

use std::time::Duration;

use txgate_algorand::codec;

use super::interface::DecodeFn;

/// go-algorand `TxBacklogSize` default (config.Local, `version[27]:"26000"`): groups the backlog
/// holds before it drops.
pub const DEFAULT_BACKLOG_CAPACITY: usize = 26_000;

/// go-algorand `TxBacklogAppRateLimitingCongestionPct` default (config.Local,
/// `version[38]:"10"`): the app rate limiter runs once the backlog holds more than this percentage
/// of its capacity.
pub const DEFAULT_CONGESTION_PCT: u32 = 10;

/// go-algorand `TxIncomingFilterMaxSize` default (config.Local, `version[28]:"500000"`): keys in
/// the current generation of the raw-message dedup cache before it rotates.
pub const DEFAULT_DEDUP_MAX_SIZE: usize = 500_000;

/// go-algorand's dedup rotation period: `handler.msgCache.Start(handler.ctx, 60*time.Second)` in
/// `TxHandler.Start`.
pub const DEFAULT_DEDUP_INTERVAL: Duration = Duration::from_secs(60);

/// go-algorand `bounds.MaxTxGroupSize` (consensus `MaxTxGroupSize` = 16): transactions per group.
pub const DEFAULT_MAX_GROUP_SIZE: usize = 16;

/// Default of [`HandlerConfig::app_key_cache`]: (origin, app) keys remembered, 2^18 (16 bytes
/// each: 4 MiB, allocated when the handler is built). Sized from the handler bench's traffic
/// (93,743 distinct (peer, app) pairs from 4,096 peers over 4,096 Zipf-popular apps): in its
/// four-way sets about 2.5 % of the lookups miss once the cache is warm (simulated, each pair
/// looked up once per pass in a fixed order; 17 % at 2^17 keys).
pub const DEFAULT_APP_KEY_CACHE: usize = 262_144;

/// The largest [`HandlerConfig::backlog_capacity`] accepted: 4,194,304 groups, 161 times
/// go-algorand's default. The backlog is a ring allocated in full when the handler is built, one
/// slot of `size_of::<Group>()` plus a word per group (under 100 bytes: about 400 MB at this
/// size); go-algorand's backlog is a Go channel of that many pointers, also allocated up front
/// (`make(chan *txBacklogMsg, TxBacklogSize)`). A larger value fails
/// [`HandlerConfig::validate`] instead of failing to allocate (or aborting) in
/// [`TxHandler::new`](super::TxHandler::new).
pub const MAX_BACKLOG_CAPACITY: usize = 1 << 22;

/// The largest [`HandlerConfig::app_key_cache`] accepted: 16,777,216 keys (16 bytes each, 256
/// MiB, allocated when the handler is built), 64 times the default.
pub const MAX_APP_KEY_CACHE: usize = 1 << 24;

/// go-algorand `protocol.TxnTagMaxSize` (protocol/tags.go, returned by
/// `protocol.Tag.MaxMessageSize` for `TxnTag` = "TX"): bytes of a transaction message. Its
/// network layer drops a longer message of that tag before any handler reads it; upstream
/// chose it as "a bit bigger than a txn group can be" (see its `TestMaxSizesCorrect`).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 5_000_000;

/// Configuration of a [`TxHandler`](super::TxHandler). Defaults are go-algorand's (see each
/// constant).
///
/// Build one from [`HandlerConfig::default`] with the `with_*` setters: `with_x(value)` takes the
/// new value of field `x`, of that field's type, and returns the config, so the calls chain. They
/// check nothing; [`validate`](Self::validate) and [`TxHandler::new`](super::TxHandler::new) do.
/// The fields stay public for reading and assigning; the struct is `#[non_exhaustive]` (code
/// outside this crate cannot write it as a struct literal), so that a new field is not a breaking
/// change.
///
/// With feature `serde` it serializes every field but the decoder, which deserializes as the
/// default (a function pointer has no portable form); missing fields take their defaults.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use txgate_ledger::handler::HandlerConfig;
///
/// // No app rate limiter, a fixed dedup salt, a dedup cache that rotates every 30 s.
/// let config = HandlerConfig::default()
///     .with_app_rate_limiting(false)
///     .with_dedup_salt(Some([7; 16]))
///     .with_dedup_interval(Duration::from_secs(30));
/// assert!(config.validate().is_ok());
/// assert_eq!(config.backlog_capacity, 26_000); // go-algorand's TxBacklogSize, the default
/// ```
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
#[non_exhaustive]
pub struct HandlerConfig {
    /// Groups the backlog holds (default [`DEFAULT_BACKLOG_CAPACITY`] = 26,000; 1 to
    /// [`MAX_BACKLOG_CAPACITY`]).
    pub backlog_capacity: usize,
    /// Consult the app rate limiter under congestion (default `true`, go-algorand
    /// `EnableTxBacklogAppRateLimiting`). Needs a limiter passed to
    /// [`TxHandler::new`](super::TxHandler::new).
    pub app_rate_limiting: bool,
    /// Derived rate-limiter keys remembered, one per (origin, app id) pair, in a fixed
    /// set-associative cache (default [`DEFAULT_APP_KEY_CACHE`] = 262,144, rounded up to a power
    /// of two; 0 derives every key for every message, as go-algorand does; at most
    /// [`MAX_APP_KEY_CACHE`]). Only used with a limiter.
    pub app_key_cache: usize,
    /// Congestion threshold in percent of `backlog_capacity`, 0 to 100 (default
    /// [`DEFAULT_CONGESTION_PCT`] = 10): the limiter runs when `backlog.len() >
    /// backlog_capacity * congestion_pct / 100`.
    pub congestion_pct: u32,
    /// Deduplicate raw messages (default `true`, go-algorand `TxIncomingFilteringFlags` = 1).
    pub dedup: bool,
    /// Keys in the dedup cache's current generation before it rotates (default
    /// [`DEFAULT_DEDUP_MAX_SIZE`] = 500,000); up to twice this many are remembered.
    pub dedup_max_size: usize,
    /// Dedup rotation period (default [`DEFAULT_DEDUP_INTERVAL`] = 60 s), on the messages'
    /// clock.
    pub dedup_interval: Duration,
    /// The 16-byte dedup salt; `None` (default) draws one from the OS.
    pub dedup_salt: Option<[u8; 16]>,
    /// Most transactions in one group (default [`DEFAULT_MAX_GROUP_SIZE`] = 16).
    pub max_group_size: usize,
    /// Most bytes in one message (default [`DEFAULT_MAX_MESSAGE_SIZE`] = 5,000,000, go-algorand's
    /// limit for transaction messages); longer ones get
    /// [`Outcome::MessageTooLarge`](super::Outcome::MessageTooLarge) before any other step.
    pub max_message_size: usize,
    /// The message decoder (default [`codec::decode_txn_message`]).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub decoder: DecodeFn,
}

impl Default for HandlerConfig {
    fn default() -> Self {
        Self {
            backlog_capacity: DEFAULT_BACKLOG_CAPACITY,
            app_rate_limiting: true,
            app_key_cache: DEFAULT_APP_KEY_CACHE,
            congestion_pct: DEFAULT_CONGESTION_PCT,
            dedup: true,
            dedup_max_size: DEFAULT_DEDUP_MAX_SIZE,
            dedup_interval: DEFAULT_DEDUP_INTERVAL,
            dedup_salt: None,
            max_group_size: DEFAULT_MAX_GROUP_SIZE,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            decoder: codec::decode_txn_message,
        }
    }
}

/// The setters: each sets the field it is named after (see the field for its meaning and
/// default) and returns the config.
impl HandlerConfig {
    /// Sets [`backlog_capacity`](Self::backlog_capacity): groups the backlog holds (default
    /// [`DEFAULT_BACKLOG_CAPACITY`]; at least 1).
    #[must_use]
    pub fn with_backlog_capacity(mut self, backlog_capacity: usize) -> Self {
        self.backlog_capacity = backlog_capacity;
        self
    }

    /// Sets [`app_rate_limiting`](Self::app_rate_limiting): consult the app rate limiter under
    /// congestion (default true; needs a limiter).
    #[must_use]
    pub fn with_app_rate_limiting(mut self, app_rate_limiting: bool) -> Self {
        self.app_rate_limiting = app_rate_limiting;
        self
    }

    /// Sets [`app_key_cache`](Self::app_key_cache): rate-limiter keys remembered (default
    /// [`DEFAULT_APP_KEY_CACHE`], rounded up to a power of two; 0 caches none).
    #[must_use]
    pub fn with_app_key_cache(mut self, app_key_cache: usize) -> Self {
        self.app_key_cache = app_key_cache;
        self
    }

    /// Sets [`congestion_pct`](Self::congestion_pct): the congestion threshold in percent of
    /// the backlog capacity (default [`DEFAULT_CONGESTION_PCT`]; 0 to 100).
    #[must_use]
    pub fn with_congestion_pct(mut self, congestion_pct: u32) -> Self {
        self.congestion_pct = congestion_pct;
        self
    }

    /// Sets [`dedup`](Self::dedup): deduplicate raw messages (default true).
    #[must_use]
    pub fn with_dedup(mut self, dedup: bool) -> Self {
        self.dedup = dedup;
        self
    }

    /// Sets [`dedup_max_size`](Self::dedup_max_size): keys in the dedup cache's current
    /// generation (default [`DEFAULT_DEDUP_MAX_SIZE`]; at least 1 with dedup on).
    #[must_use]
    pub fn with_dedup_max_size(mut self, dedup_max_size: usize) -> Self {
        self.dedup_max_size = dedup_max_size;
        self
    }

    /// Sets [`dedup_interval`](Self::dedup_interval): the dedup rotation period (default
    /// [`DEFAULT_DEDUP_INTERVAL`]; longer than zero with dedup on).
    #[must_use]
    pub fn with_dedup_interval(mut self, dedup_interval: Duration) -> Self {
        self.dedup_interval = dedup_interval;
        self
    }

    /// Sets [`dedup_salt`](Self::dedup_salt): the 16-byte dedup salt (default `None`: drawn
    /// from the OS when the handler is built).
    #[must_use]
    pub fn with_dedup_salt(mut self, dedup_salt: Option<[u8; 16]>) -> Self {
        self.dedup_salt = dedup_salt;
        self
    }

    /// Sets [`max_group_size`](Self::max_group_size): most transactions in one group (default
    /// [`DEFAULT_MAX_GROUP_SIZE`]; at least 1).
    #[must_use]
    pub fn with_max_group_size(mut self, max_group_size: usize) -> Self {
        self.max_group_size = max_group_size;
        self
    }

    /// Sets [`max_message_size`](Self::max_message_size): most bytes in one message (default
    /// [`DEFAULT_MAX_MESSAGE_SIZE`]; at least 1).
    #[must_use]
    pub fn with_max_message_size(mut self, max_message_size: usize) -> Self {
        self.max_message_size = max_message_size;
        self
    }

    /// Sets [`decoder`](Self::decoder): the message decoder (default
    /// [`codec::decode_txn_message`]).
    #[must_use]
    pub fn with_decoder(mut self, decoder: DecodeFn) -> Self {
        self.decoder = decoder;
        self
    }
}

impl HandlerConfig {
    /// Checks the configuration as [`TxHandler::new`](super::TxHandler::new) does, without building
    /// anything: the checks a CLI or a node's config loader runs before it starts.
    ///
    /// ```
    /// use txgate_ledger::handler::{HandlerConfig, HandlerConfigError};
    /// let bad = HandlerConfig::default().with_congestion_pct(150);
    /// assert!(matches!(bad.validate(), Err(HandlerConfigError::CongestionPct(150))));
    /// assert!(HandlerConfig::default().validate().is_ok());
    /// // go-algorand's TxBacklogSize = 10^18 cannot be allocated: refused here, not in `new`.
    /// let huge = HandlerConfig::default().with_backlog_capacity(1_000_000_000_000_000_000);
    /// assert!(matches!(huge.validate(), Err(HandlerConfigError::BacklogCapacityTooLarge { .. })));
    /// ```
    ///
    /// # Errors
    ///
    /// [`HandlerConfigError`] for a zero backlog capacity, group size or message size, a backlog
    /// capacity above [`MAX_BACKLOG_CAPACITY`] or a key cache above [`MAX_APP_KEY_CACHE`] (sizes
    /// allocated in full when the handler is built), a congestion percentage above 100, or (with
    /// dedup on) a zero dedup size or interval; the first of these in that order. (Whether a limiter is at hand is `TxHandler::new`'s check:
    /// it comes after the message size and before the dedup checks.)
    pub fn validate(&self) -> Result<(), HandlerConfigError> {
        self.check(true)
    }

    /// The checks of [`validate`](Self::validate) in [`TxHandler::new`](super::TxHandler::new)'s
    /// order, with `MissingLimiter` when rate limiting is on and `has_limiter` is false.
    pub(super) fn check(&self, has_limiter: bool) -> Result<(), HandlerConfigError> {
        if self.backlog_capacity == 0 {
            return Err(HandlerConfigError::ZeroBacklogCapacity);
        }
        if self.backlog_capacity > MAX_BACKLOG_CAPACITY {
            return Err(HandlerConfigError::BacklogCapacityTooLarge {
                capacity: self.backlog_capacity,
                max: MAX_BACKLOG_CAPACITY,
            });
        }
        if self.app_key_cache > MAX_APP_KEY_CACHE {
            return Err(HandlerConfigError::AppKeyCacheTooLarge {
                keys: self.app_key_cache,
                max: MAX_APP_KEY_CACHE,
            });
        }
        if self.congestion_pct > 100 {
            return Err(HandlerConfigError::CongestionPct(self.congestion_pct));
        }
        if self.max_group_size == 0 {
            return Err(HandlerConfigError::ZeroMaxGroupSize);
        }
        if self.max_message_size == 0 {
            return Err(HandlerConfigError::ZeroMaxMessageSize);
        }
        if self.app_rate_limiting && !has_limiter {
            return Err(HandlerConfigError::MissingLimiter);
        }
        if self.dedup {
            if self.dedup_max_size == 0 {
                return Err(HandlerConfigError::ZeroDedupMaxSize);
            }
            if self.dedup_interval.is_zero() {
                return Err(HandlerConfigError::ZeroDedupInterval);
            }
        }
        Ok(())
    }

    /// The backlog length above which the app rate limiter runs:
    /// `backlog_capacity * congestion_pct / 100`, floored (2,600 by default). go-algorand computes
    /// `int(float64(TxBacklogSize) * float64(pct) / 100)`, the same value for these integers.
    pub fn congestion_threshold(&self) -> usize {
        let t = (self.backlog_capacity as u128) * u128::from(self.congestion_pct) / 100;
        usize::try_from(t).unwrap_or(usize::MAX)
    }
}

/// Why [`TxHandler::new`](super::TxHandler::new) refused a configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandlerConfigError {
    /// `backlog_capacity` is zero.
    #[error("backlog_capacity must be at least 1")]
    ZeroBacklogCapacity,
    /// `backlog_capacity` is above [`MAX_BACKLOG_CAPACITY`]: the backlog is allocated in full.
    #[error("backlog_capacity {capacity} is above the limit {max}")]
    BacklogCapacityTooLarge {
        /// The configured capacity.
        capacity: usize,
        /// [`MAX_BACKLOG_CAPACITY`].
        max: usize,
    },
    /// `app_key_cache` is above [`MAX_APP_KEY_CACHE`]: the cache is allocated in full.
    #[error("app_key_cache {keys} is above the limit {max}")]
    AppKeyCacheTooLarge {
        /// The configured number of keys.
        keys: usize,
        /// [`MAX_APP_KEY_CACHE`].
        max: usize,
    },
    /// `congestion_pct` is above 100 (go-algorand rejects the same).
    #[error("congestion_pct must be 0..=100, got {0}")]
    CongestionPct(u32),
    /// Dedup is on with `dedup_max_size` zero.
    #[error("dedup_max_size must be at least 1 when dedup is on")]
    ZeroDedupMaxSize,
    /// Dedup is on with a zero (or sub-nanosecond) `dedup_interval`.
    #[error("dedup_interval must be at least 1 ns when dedup is on")]
    ZeroDedupInterval,
    /// `max_group_size` is zero.
    #[error("max_group_size must be at least 1")]
    ZeroMaxGroupSize,
    /// `max_message_size` is zero (every message would be dropped).
    #[error("max_message_size must be at least 1")]
    ZeroMaxMessageSize,
    /// `app_rate_limiting` is on but no limiter was given (go-algorand rejects an enabled app
    /// limiter of size zero).
    #[error("app_rate_limiting is on but no AppRateLimiter was given (pass one, or turn it off)")]
    MissingLimiter,
    /// The OS random source failed while drawing the dedup salt or the key cache's seed.
    #[error("drawing the dedup salt or the key cache's seed from the OS failed")]
    Salt(#[source] txgate_ratelimit::RandomSourceError),
}

/// Why [`TxHandler::start_workers`](super::TxHandler::start_workers) refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// Workers were started already.
    #[error("workers already started")]
    AlreadyStarted,
    /// The handler is shut down.
    #[error("the handler is shut down")]
    ShutDown,
    /// `n` was zero.
    #[error("start at least one worker")]
    ZeroWorkers,
    /// The OS refused a thread.
    #[error("spawning worker {index} failed")]
    Spawn {
        /// Index of the worker that failed (those before it run and are joined at shutdown).
        index: usize,
        /// The OS error.
        source: std::io::Error,
    },
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use txgate_algorand::codec::{DecodeError, Txn};

    /// Every field of a config; the decoder as whether it accepts an empty message (the
    /// default decoder refuses it, [`no_txns`] accepts it).
    type Fields = (
        usize,
        bool,
        usize,
        u32,
        bool,
        usize,
        Duration,
        Option<[u8; 16]>,
        usize,
        usize,
        bool,
    );

    fn fields(c: &HandlerConfig) -> Fields {
        (
            c.backlog_capacity,
            c.app_rate_limiting,
            c.app_key_cache,
            c.congestion_pct,
            c.dedup,
            c.dedup_max_size,
            c.dedup_interval,
            c.dedup_salt,
            c.max_group_size,
            c.max_message_size,
            (c.decoder)(b"").is_ok(),
        )
    }

    fn no_txns(_: &[u8]) -> Result<Vec<Txn>, DecodeError> {
        Ok(Vec::new())
    }

    #[test]
    fn each_setter_sets_its_field() {
        // The defaults, field by field: go-algorand's values, no salt, the msgpack decoder.
        let default = (
            26_000,
            true,
            262_144,
            10,
            true,
            500_000,
            Duration::from_secs(60),
            None,
            16,
            5_000_000,
            false,
        );
        assert_eq!(fields(&HandlerConfig::default()), default);
        let set = HandlerConfig::default()
            .with_backlog_capacity(5)
            .with_app_rate_limiting(false)
            .with_app_key_cache(0)
            .with_congestion_pct(100)
            .with_dedup(false)
            .with_dedup_max_size(3)
            .with_dedup_interval(Duration::from_millis(250))
            .with_dedup_salt(Some([4; 16]))
            .with_max_group_size(2)
            .with_max_message_size(1000)
            .with_decoder(no_txns);
        let want = (
            5,
            false,
            0,
            100,
            false,
            3,
            Duration::from_millis(250),
            Some([4; 16]),
            2,
            1000,
            true,
        );
        assert_eq!(fields(&set), want);
        // Each set back to its default value: the default again.
        let back = set
            .with_backlog_capacity(DEFAULT_BACKLOG_CAPACITY)
            .with_app_rate_limiting(true)
            .with_app_key_cache(DEFAULT_APP_KEY_CACHE)
            .with_congestion_pct(DEFAULT_CONGESTION_PCT)
            .with_dedup(true)
            .with_dedup_max_size(DEFAULT_DEDUP_MAX_SIZE)
            .with_dedup_interval(DEFAULT_DEDUP_INTERVAL)
            .with_dedup_salt(None)
            .with_max_group_size(DEFAULT_MAX_GROUP_SIZE)
            .with_max_message_size(DEFAULT_MAX_MESSAGE_SIZE)
            .with_decoder(codec::decode_txn_message);
        assert_eq!(fields(&back), default);
    }

    #[test]
    fn sizes_allocated_in_full_are_capped() {
        let backlog = |n| HandlerConfig::default().with_backlog_capacity(n).validate();
        assert!(backlog(MAX_BACKLOG_CAPACITY).is_ok());
        for n in [
            MAX_BACKLOG_CAPACITY + 1,
            1_000_000_000_000_000_000,
            usize::MAX,
        ] {
            assert!(
                matches!(
                    backlog(n),
                    Err(HandlerConfigError::BacklogCapacityTooLarge { capacity, max })
                        if capacity == n && max == MAX_BACKLOG_CAPACITY
                ),
                "{n}"
            );
        }
        let keys = |n| HandlerConfig::default().with_app_key_cache(n).validate();
        assert!(keys(MAX_APP_KEY_CACHE).is_ok());
        assert!(matches!(
            keys(usize::MAX),
            Err(HandlerConfigError::AppKeyCacheTooLarge { keys, .. }) if keys == usize::MAX
        ));
        // The documented bound: a slot (a group and a stamp word) under 100 bytes.
        assert!(std::mem::size_of::<super::super::Group>() + 8 < 100);
    }

    #[test]
    fn congestion_threshold_floors() {
        let c = |cap, pct| {
            HandlerConfig {
                backlog_capacity: cap,
                congestion_pct: pct,
                ..HandlerConfig::default()
            }
            .congestion_threshold()
        };
        assert_eq!(HandlerConfig::default().congestion_threshold(), 2_600);
        assert_eq!(c(19, 10), 1);
        assert_eq!(c(20, 10), 2);
        assert_eq!(c(7, 0), 0);
        assert_eq!(c(7, 100), 7);
    }
}
