//! The packed per-key state word and the sliding-window arithmetic.
//!
//! A key's state is `(interval, prev, cur)`, packed with four flags into one `u64` so that
//! check-and-increment is a single compare-and-swap. A word whose counts fit in 16 bits each is
//! *narrow*; one with a count above 65,535 (possible only with a limit per window above 65,535)
//! is *wide*, trading interval bits for count bits:
//!
//! ```text
//! bit  63      MARKER   the word is a multi-word operation in flight (bits 0..63 its address;
//!                       see `group.rs`); resolved before anyone reads the counts
//! bit  62      EVICTED  the node left the table: terminal, no count changes after it (a node
//!                       that left keeps its eviction's marker until someone resolves it)
//! bit  61      TOUCHED  the key was accessed since a CLOCK sweep last passed it (the reference
//!                       bit); set by every access, cleared only by a sweep
//! bit  60      WIDE     the layout of bits 59..0 below
//!
//! narrow:
//! bits 59..32  interval now / window, truncated to 28 bits (compared modulo 2^28)
//! bits 31..16  prev     admissions counted in the previous interval
//! bits 15..0   cur      admissions counted in the current interval
//! wide:
//! bits 59..50  interval truncated to 10 bits (compared modulo 2^10)
//! bits 49..25  prev
//! bits 24..0   cur
//! ```
//!
//! Whether a word is wide is a function of its counts alone (`prev` or `cur` above 65,535), so
//! the limiter needs no per-configuration layout. A limit of at most 65,535 never makes a wide
//! word (penalties saturate at 65,535 there), and keeps 28-bit intervals. With a larger limit
//! (up to [`LIMIT_MAX`]), a key is wide while it counts more than 65,535 admissions in an
//! interval, and its interval is then compared modulo 2^10: such a key idle for about 2^10
//! windows (under 3 hours with 10 s windows) may alias (see [`MAX_LAG_WIDE`]). The cost of
//! exact intervals at that size would be a 128-bit state word.
//!
//! Everything here is plain integer arithmetic shared by the lock-free table and the reference
//! model, so both compute exactly the same decisions.

use std::num::NonZeroU32;

use strength_reduce::StrengthReducedU64;

use crate::decision::InsufficientCapacity;

/// The largest count a narrow word holds: where penalties saturate when `L <= NARROW_MAX`.
pub(crate) const NARROW_MAX: u32 = u16::MAX as u32;
/// The largest count a wide word holds (25 bits): the largest limit per window accepted, and
/// where penalties saturate when `L > NARROW_MAX`.
pub(crate) const LIMIT_MAX: u32 = (1 << WIDE_COUNT_BITS) - 1;

/// Interval bits of a narrow word.
const INTERVAL_BITS: u32 = 28;
const INTERVAL_MASK: u32 = (1 << INTERVAL_BITS) - 1;
const INTERVAL_SHIFT: u32 = 32;
const PREV_SHIFT: u32 = 16;
/// Interval and count bits of a wide word.
const WIDE_INTERVAL_BITS: u32 = 10;
const WIDE_INTERVAL_MASK: u32 = (1 << WIDE_INTERVAL_BITS) - 1;
const WIDE_COUNT_BITS: u32 = 25;
const WIDE_COUNT_MASK: u64 = (1 << WIDE_COUNT_BITS) - 1;
const WIDE_INTERVAL_SHIFT: u32 = 2 * WIDE_COUNT_BITS;
/// Bits 59..0 are the wide layout.
const WIDE: u64 = 1 << 60;
/// The word holds a group operation's address instead of counts.
pub(crate) const MARKER: u64 = 1 << 63;
/// The node was evicted: its counts are final.
pub(crate) const EVICTED: u64 = 1 << 62;
/// The key was accessed since a CLOCK sweep last passed it (its reference bit).
pub(crate) const TOUCHED: u64 = 1 << 61;

/// The counts of one key, unpacked.
///
/// Invariants (the state functions keep them): `prev, cur <= LIMIT_MAX`; `interval` fits its
/// layout: 28 bits, or 10 when the counts are wide ([`is_wide`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Counts {
    /// `now / window`, truncated to 28 bits (10 bits for wide counts).
    pub(crate) interval: u32,
    /// Admissions in the interval before `interval`.
    pub(crate) prev: u32,
    /// Admissions in `interval`.
    pub(crate) cur: u32,
}

/// Whether counts need a wide word: a count above 65,535.
#[inline(always)]
pub(crate) fn is_wide(c: Counts) -> bool {
    (c.prev | c.cur) > NARROW_MAX
}

/// `c` with its interval truncated to its layout's width (a no-op for narrow counts).
#[inline(always)]
pub(crate) fn fit(mut c: Counts) -> Counts {
    if is_wide(c) {
        c.interval &= WIDE_INTERVAL_MASK;
    }
    c
}

/// Packs counts into a state word (no flags but [`WIDE`]; an access adds [`TOUCHED`]): wide
/// counts keep the low 10 bits of their interval (as [`fit`] does).
#[inline(always)]
pub(crate) fn pack(c: Counts) -> u64 {
    if is_wide(c) {
        debug_assert!(c.prev <= LIMIT_MAX && c.cur <= LIMIT_MAX);
        WIDE | (u64::from(c.interval & WIDE_INTERVAL_MASK) << WIDE_INTERVAL_SHIFT)
            | (u64::from(c.prev) << WIDE_COUNT_BITS)
            | u64::from(c.cur)
    } else {
        debug_assert!(c.interval <= INTERVAL_MASK);
        (u64::from(c.interval) << INTERVAL_SHIFT)
            | (u64::from(c.prev) << PREV_SHIFT)
            | u64::from(c.cur)
    }
}

/// The counts of a state word that is not a marker (the evicted and touched flags are
/// ignored).
#[inline(always)]
pub(crate) fn counts(word: u64) -> Counts {
    if word & WIDE == 0 {
        counts_in::<false>(word)
    } else {
        wide_counts(word)
    }
}

/// [`counts`] of a wide word, out of line: the narrow words of the usual limits keep the
/// inlined paths as short as before wide words existed (the same holds for the other `wide_`
/// functions here).
#[cold]
#[inline(never)]
fn wide_counts(word: u64) -> Counts {
    counts_in::<true>(word)
}

/// [`counts`] of a word of the given layout (`W`: wide).
#[inline(always)]
fn counts_in<const W: bool>(word: u64) -> Counts {
    debug_assert_eq!(word & MARKER, 0);
    debug_assert_eq!(word & WIDE != 0, W);
    if W {
        Counts {
            interval: ((word >> WIDE_INTERVAL_SHIFT) as u32) & WIDE_INTERVAL_MASK,
            prev: ((word >> WIDE_COUNT_BITS) & WIDE_COUNT_MASK) as u32,
            cur: (word & WIDE_COUNT_MASK) as u32,
        }
    } else {
        Counts {
            interval: ((word >> INTERVAL_SHIFT) as u32) & INTERVAL_MASK,
            prev: u32::from((word >> PREV_SHIFT) as u16),
            cur: u32::from(word as u16),
        }
    }
}

/// A point in time as the window arithmetic sees it, made only by [`Limits::instant`].
///
/// Invariants: `interval <= INTERVAL_MASK` (28 bits: [`pack`] stores it as is in a narrow word,
/// its low 10 bits in a wide one, and `distance` compares modulo the key's width); `offset < window_ns` of the [`Limits`] that made it, so
/// `window_ns - offset` in `Limits::weighted` is in `1..=window_ns` and the previous interval's
/// weight never exceeds `prev`; `max_lag` is the limiter's lag bound (`Limits::max_lag`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Instant {
    /// `now / window`, truncated to 28 bits.
    pub(crate) interval: u32,
    /// How far behind a key a caller may be and be counted in the key's interval:
    /// [`MAX_LAG`], or [`MAX_LAG_WIDE`] for a limit above 65,535. Carried by the instant so that
    /// the window functions need nothing else.
    pub(crate) max_lag: i32,
    /// `now % window`, in nanoseconds.
    pub(crate) offset: u64,
}

/// The limits every decision uses, derived once from the configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Window length in nanoseconds (> 0).
    pub(crate) window_ns: u64,
    /// `window_ns` as a divisor by multiplication: exact quotients and remainders of any `u64`
    /// by a divisor fixed in advance, without a `div` instruction (tens of cycles for a 64-bit
    /// divide on x86-64, per Agner Fog's instruction tables; two per admission otherwise). From
    /// the `strength_reduce` crate.
    window: StrengthReducedU64,
    /// Admissions per window per key, `L` (1..=[`LIMIT_MAX`]; `Config::validate` rejects 0 and
    /// larger limits, which a wide word's 25-bit counts could not hold).
    pub(crate) limit: u32,
    /// What one penalty adds: `max(1, L / 4)`, so at least 1.
    pub(crate) penalty: u32,
    /// Where penalties saturate: [`NARROW_MAX`] for `L <= NARROW_MAX` (so that such a limiter
    /// never makes a wide word), else [`LIMIT_MAX`].
    pub(crate) counter_max: u32,
    /// [`retry_after`]'s 64-bit path takes windows up to this length: [`RETRY_FAST_WINDOW`]
    /// for `L <= NARROW_MAX`, else [`RETRY_FAST_WINDOW_WIDE`].
    fast_window: u64,
    /// The lag bound its instants carry: [`MAX_LAG`] for `L <= NARROW_MAX`, else
    /// [`MAX_LAG_WIDE`].
    pub(crate) max_lag: i32,
}

impl Limits {
    /// Limits for a window of `window_ns` nanoseconds (> 0), `limit` admissions per window and
    /// `penalty` per penalty.
    pub(crate) fn new(window_ns: u64, limit: u32, penalty: u32) -> Self {
        debug_assert!(window_ns > 0 && (1..=LIMIT_MAX).contains(&limit) && penalty >= 1);
        let narrow = limit <= NARROW_MAX;
        Self {
            window_ns,
            window: StrengthReducedU64::new(window_ns.max(1)),
            limit,
            penalty,
            counter_max: if narrow { NARROW_MAX } else { LIMIT_MAX },
            fast_window: if narrow {
                RETRY_FAST_WINDOW
            } else {
                RETRY_FAST_WINDOW_WIDE
            },
            max_lag: if narrow { MAX_LAG } else { MAX_LAG_WIDE },
        }
    }

    /// A weighted admission's cost as the counters take it (`1..=L`), or the error for a cost
    /// above `L`, which no window admits.
    pub(crate) fn cost(&self, cost: NonZeroU32) -> Result<u32, InsufficientCapacity> {
        Some(cost.get())
            .filter(|&c| c <= self.limit)
            .ok_or(InsufficientCapacity {
                cost: cost.get(),
                limit: u64::from(self.limit),
            })
    }

    /// `interval = now / window`, `offset = now % window`.
    #[inline]
    pub(crate) fn instant(&self, now_ns: u64) -> Instant {
        let (interval, offset) = StrengthReducedU64::div_rem(now_ns, self.window);
        Instant {
            interval: (interval as u32) & INTERVAL_MASK,
            max_lag: self.max_lag,
            offset,
        }
    }

    /// `prev * (window - offset) / window`, floor division: the previous interval's weight at
    /// `offset` (go-algorand's sliding-window estimate, in integers).
    #[inline]
    fn weighted(&self, prev: u32, offset: u64) -> u64 {
        let remaining = self.window_ns - offset;
        match u64::from(prev).checked_mul(remaining) {
            // Nothing carried over (a key seen only in this interval): no division at all.
            Some(0) => 0,
            // The common case (a product below 2^64: any window up to 3.2 days while `prev` is at
            // most 65,535): division by multiplication, exact.
            Some(product) => product / self.window,
            None => (u128::from(prev) * u128::from(remaining) / u128::from(self.window_ns)) as u64,
        }
    }
}

/// Signed distance in intervals from a key's interval `from` to `to`, modulo the interval
/// width of the key's layout (`W`: wide; 2^28, or 2^10 for a wide key), in `-2^27..2^27`
/// (`-2^9..2^9`).
#[inline(always)]
fn distance_in<const W: bool>(from: u32, to: u32) -> i32 {
    let bits = if W { WIDE_INTERVAL_BITS } else { INTERVAL_BITS };
    // The difference's low `bits` bits, sign-extended: `d - 2^bits` for `d >= 2^(bits - 1)`.
    ((to.wrapping_sub(from) << (32 - bits)) as i32) >> (32 - bits)
}

/// How far (in intervals) a key's interval may be ahead of a caller's and still be taken as a
/// clock skew between callers, not as aliasing, with a limit of at most 65,535: 2^20
/// intervals. Intervals are compared modulo 2^28, so a key idle for almost 2^28 windows looks a
/// little ahead of every caller; a key more than `MAX_LAG` ahead is taken as such an idle key.
/// So callers' clocks may differ by up to 2^20 windows (17 minutes with 1 ms windows), and a
/// key idle for between 2^28 - 2^20 and 2^28 windows looks ahead (counted in its old interval)
/// until it is used or evicted.
pub(crate) const MAX_LAG: i32 = 1 << 20;

/// [`MAX_LAG`] of a limiter whose limit is above 65,535, for all its keys, narrow and wide: 2^5
/// intervals of clock skew between callers. A wide key's interval is compared modulo 2^10, which
/// tells lags up to 2^9 apart exactly, so the bound holds for a key whatever its layout, and an
/// access that widens a key never makes it stale for a caller to whom it was current. A wide key
/// idle for between 2^10 - 2^5 and 2^10 windows (or that plus a multiple of 2^10) looks ahead,
/// and one idle for a multiple of 2^10 windows (or one more) takes its old counts as current (or
/// previous), until it is used or evicted.
pub(crate) const MAX_LAG_WIDE: i32 = 1 << 5;

/// [`distance_in`] from `c`'s interval to `to` in `c`'s layout.
#[inline]
fn distance(c: Counts, to: u32) -> i32 {
    if is_wide(c) {
        distance_in::<true>(c.interval, to)
    } else {
        distance_in::<false>(c.interval, to)
    }
}

/// Whether a caller at `at` is behind the key (by up to the limiter's lag bound: counted in the
/// key's interval at offset 0, by [`roll`]); the intervals it is behind by.
#[inline]
fn behind(c: Counts, at: Instant) -> Option<u32> {
    let d = distance(c, at.interval);
    (-at.max_lag..0).contains(&d).then(|| d.unsigned_abs())
}

/// Rolls `c` forward to `at` and returns the rolled counts with the offset the estimate uses.
///
/// Same interval: keep. Next interval: `prev = cur, cur = 0`. Older: both 0 (go-algorand's
/// sliding window). A caller *behind* the key (its clock lags another caller's, by up to the
/// limiter's lag bound, `at.max_lag`: [`MAX_LAG`] intervals, or [`MAX_LAG_WIDE`] with a limit
/// above 65,535) is counted in the key's interval at
/// offset 0, the most conservative estimate, and leaves the key as it is: a key never rolls
/// backwards, so an access never makes a key stale for a caller to whom it was current
/// ([`is_stale`]). A key further ahead is one idle for almost a full period of its interval
/// width (aliasing) and is reset like an older one.
#[inline(always)]
pub(crate) fn roll(c: Counts, at: Instant) -> (Counts, u64) {
    if is_wide(c) {
        wide_roll(c, at)
    } else {
        roll_in::<false>(c, at)
    }
}

/// [`roll`] of wide counts, out of line (see [`wide_counts`]).
#[cold]
#[inline(never)]
fn wide_roll(c: Counts, at: Instant) -> (Counts, u64) {
    roll_in::<true>(c, at)
}

/// [`roll`] of counts of the given layout (`W`: wide).
#[inline(always)]
fn roll_in<const W: bool>(c: Counts, at: Instant) -> (Counts, u64) {
    debug_assert_eq!(is_wide(c), W);
    match distance_in::<W>(c.interval, at.interval) {
        0 => (c, at.offset),
        1 => {
            let next = Counts {
                interval: at.interval,
                prev: c.cur,
                cur: 0,
            };
            // Narrow counts stay narrow (`prev = cur <= 65,535`).
            (if W { fit(next) } else { next }, at.offset)
        }
        d if (-at.max_lag..0).contains(&d) => (c, 0),
        _ => (
            Counts {
                interval: at.interval,
                prev: 0,
                cur: 0,
            },
            at.offset,
        ),
    }
}

/// Stale for a caller at `at`: the key's interval is older than the caller's previous one (or
/// more than the lag bound `at.max_lag` ahead: an idle key aliased), so its state is worth
/// nothing
/// (the first choice for eviction). A key behind the caller by at most one interval, or ahead
/// of it, is current. An access only moves a key's interval forward, to the accessor's (a key
/// ahead of its accessor is left as it is), so an access never makes a key stale for a caller
/// to whom it was current, as long as all callers' clocks, the one that last moved the key's
/// interval included, are within the lag bound of each other (a widening access included: the
/// bound is the limiter's, not the layout's): whether a key is stale for an inserting caller changes only from stale to
/// current, and only by an access to it.
#[inline(always)]
pub(crate) fn is_stale(c: Counts, at: Instant) -> bool {
    if is_wide(c) {
        wide_stale(c.interval, at)
    } else {
        stale_in::<false>(c.interval, at)
    }
}

/// [`stale_in`] of a wide key, out of line (see [`wide_counts`]).
#[cold]
#[inline(never)]
fn wide_stale(interval: u32, at: Instant) -> bool {
    stale_in::<true>(interval, at)
}

/// [`is_stale`] of a state word (not a marker), deciding its layout once (the exact-LRU victim
/// scan's test of every key in its shard).
#[inline(always)]
pub(crate) fn is_stale_word(word: u64, at: Instant) -> bool {
    if word & WIDE == 0 {
        stale_in::<false>(counts_in::<false>(word).interval, at)
    } else {
        wide_stale(wide_counts(word).interval, at)
    }
}

/// [`is_stale`] of a key of the given layout (`W`: wide) whose interval is `interval`.
#[inline(always)]
fn stale_in<const W: bool>(interval: u32, at: Instant) -> bool {
    !(-at.max_lag..=1).contains(&distance_in::<W>(interval, at.interval))
}

/// The sliding-window check on rolled counts for an admission of weight `cost`:
/// `prev * (window - offset) / window + cur + cost <= L`, floor division in integers
/// (go-algorand computes the same in floating point, for a cost of 1).
#[inline(always)]
pub(crate) fn admits(c: Counts, offset: u64, limits: &Limits, cost: u32) -> bool {
    // `weighted <= prev <= LIMIT_MAX`, so the sum cannot overflow.
    used(c, offset, limits) + u64::from(cost) <= u64::from(limits.limit)
}

/// The sliding-window estimate of rolled counts at `offset`: `prev * (window - offset) / window +
/// cur` (floor division), at most `2 * LIMIT_MAX`.
#[inline(always)]
pub(crate) fn used(c: Counts, offset: u64, limits: &Limits) -> u64 {
    limits.weighted(c.prev, offset) + u64::from(c.cur)
}

/// Counts after an admission of weight `cost` at `at` if the window allows it, else `None`.
#[inline(always)]
pub(crate) fn admit(c: Counts, at: Instant, limits: &Limits, cost: u32) -> Option<Counts> {
    let (rolled, offset) = roll(c, at);
    admits(rolled, offset, limits, cost).then(|| {
        fit(Counts {
            // `cur + cost <= L <= LIMIT_MAX`: no overflow.
            cur: rolled.cur + cost,
            ..rolled
        })
    })
}

/// An admission of weight `cost` decided on a counts word: `Ok((the word after it, with
/// [`TOUCHED`] set, admissions left after it))`, or `Err(the counts)` if the window does not
/// allow it. For the hit path: [`plan_admit`] of the access (one roll and one estimate, the
/// layout decided once), whose rolled `old` word the hit does not use.
#[inline(always)]
pub(crate) fn check(
    word: u64,
    at: Instant,
    limits: &Limits,
    cost: u32,
) -> Result<(u64, u32), Counts> {
    match plan_admit(word, at, limits, cost, true) {
        // `new` has `old`'s reference bit, which the access set.
        Some((_, new, left)) => Ok((new, left)),
        None => Err(counts(word)),
    }
}

/// A group's admission of weight `cost` planned on a counts word (neither marker nor evicted):
/// `Some((old, new, left))`, or `None` if the window does not allow it. `old` is the word as the
/// key's lookup leaves it: with `touch`, `word` rolled to `at` with [`TOUCHED`] set, else `word`
/// itself; `new` is `old` with the admission applied and `old`'s reference bit; `left` the
/// admissions the key has left after it. One roll and one estimate, the layout decided once.
#[inline(always)]
pub(crate) fn plan_admit(
    word: u64,
    at: Instant,
    limits: &Limits,
    cost: u32,
    touch: bool,
) -> Option<(u64, u64, u32)> {
    if word & WIDE == 0 {
        plan_admit_in::<false>(word, at, limits, cost, touch)
    } else {
        wide_plan_admit(word, at, limits, cost, touch)
    }
}

/// [`plan_admit`] of a wide word, out of line (see [`wide_counts`]).
#[cold]
#[inline(never)]
fn wide_plan_admit(
    word: u64,
    at: Instant,
    limits: &Limits,
    cost: u32,
    touch: bool,
) -> Option<(u64, u64, u32)> {
    plan_admit_in::<true>(word, at, limits, cost, touch)
}

/// [`plan_admit`] of a word of the given layout (`W`: wide).
#[inline(always)]
fn plan_admit_in<const W: bool>(
    word: u64,
    at: Instant,
    limits: &Limits,
    cost: u32,
    touch: bool,
) -> Option<(u64, u64, u32)> {
    let (rolled, offset) = roll_in::<W>(counts_in::<W>(word), at);
    let old = if !touch {
        word
    } else if W {
        pack(rolled) | TOUCHED
    } else {
        // Narrow counts roll to narrow counts (`roll_in`), so the narrow layout as is.
        debug_assert!(!is_wide(rolled));
        (u64::from(rolled.interval) << INTERVAL_SHIFT)
            | (u64::from(rolled.prev) << PREV_SHIFT)
            | u64::from(rolled.cur)
            | TOUCHED
    };
    let used = limits.weighted(rolled.prev, offset) + u64::from(rolled.cur) + u64::from(cost);
    let limit = u64::from(limits.limit);
    (used <= limit).then(|| {
        let next = Counts {
            // `cur + cost <= L <= LIMIT_MAX`: no overflow.
            cur: rolled.cur + cost,
            ..rolled
        };
        // `pack` widens counts that an admission took above 65,535.
        (old, pack(next) | (old & TOUCHED), (limit - used) as u32)
    })
}

/// Counts after one penalty at `at`: `cur += max(1, L / 4)`, saturating at 65,535 when `L` is at
/// most 65,535, else at [`LIMIT_MAX`] (`Limits::counter_max`).
#[inline(always)]
pub(crate) fn penalize(c: Counts, at: Instant, limits: &Limits) -> Counts {
    let (rolled, _) = roll(c, at);
    fit(Counts {
        // `cur <= counter_max` and `penalty <= L / 4`, both below 2^25: no overflow.
        cur: (rolled.cur + limits.penalty).min(limits.counter_max),
        ..rolled
    })
}

/// Admissions the key has left at `at`: `L - (prev * (window - offset) / window + cur)`, at
/// least 0.
#[inline(always)]
pub(crate) fn remaining(c: Counts, at: Instant, limits: &Limits) -> u32 {
    let (rolled, offset) = roll(c, at);
    let used = limits.weighted(rolled.prev, offset) + u64::from(rolled.cur);
    u64::from(limits.limit).saturating_sub(used) as u32
}

/// With `L <= 65,535`, windows up to this length (2^47 ns, 39 hours) take [`retry_after`]'s
/// 64-bit path: `(L - cur - cost + 1) * window <= 65,535 * 2^47 < 2^63` and `2 * window` fit in a
/// `u64`.
const RETRY_FAST_WINDOW: u64 = 1 << 47;

/// [`RETRY_FAST_WINDOW`] for `L` up to [`LIMIT_MAX`] (2^38 ns, 4.6 minutes): `(2^25 - 1) * 2^38
/// < 2^63`.
const RETRY_FAST_WINDOW_WIDE: u64 = 1 << 38;

/// Nanoseconds from `at` until the key would admit `cost` (at most `L`) again if nothing else
/// changed it (0 if it admits now), from the window rule: within the key's interval the previous
/// interval's weight `floor(prev * (window - offset) / window)` falls as the offset grows; in the
/// next interval the current count becomes `prev`; two intervals on, nothing is carried.
///
/// Computed in 64-bit integers when the caller is not behind the key and the window is at most
/// [`RETRY_FAST_WINDOW`] ([`RETRY_FAST_WINDOW_WIDE`] with `L` above 65,535) (a 64-bit `div`, instead of a 128-bit division's library call on every
/// drop), else in 128-bit integers ([`retry_after_wide`]); the two agree wherever the first
/// applies (the `retry_after_fast_path_equals_wide` property test). Inlined, so that a drop's
/// caller shares its roll with it.
#[inline(always)]
pub(crate) fn retry_after(c: Counts, at: Instant, limits: &Limits, cost: u32) -> u64 {
    debug_assert!(cost <= limits.limit);
    let w = limits.window_ns;
    if w > limits.fast_window || behind(c, at).is_some() {
        return retry_after_wide(c, at, limits, cost);
    }
    let (rolled, offset) = roll(c, at);
    if admits(rolled, offset, limits, cost) {
        return 0;
    }
    let limit = u64::from(limits.limit);
    let cost = u64::from(cost);
    // As in `retry_after_wide`, in `u64`: `limit - cur - cost + 1 <= L` and `w <= fast_window`,
    // so the product is below 2^63 (65,535 * 2^47, or (2^25 - 1) * 2^38); `w + 1` and `2 * w`
    // are below 2^48.
    let first = |prev: u32, cur: u32, offset: u64| -> Option<u64> {
        let cur = u64::from(cur);
        if cur + cost > limit {
            return None;
        }
        let prev = u64::from(prev);
        if prev == 0 {
            return Some(offset);
        }
        // `w + 1 - ceil(k w / prev)`, saturating at 0, without a division when `k >= prev`
        // (a key at its limit in one interval, dropped in the next: `k = L - cost + 1` and
        // `prev = L` for a cost of 1): `k = prev` gives `ceil(k w / prev) = w`, so 1; `k > prev`
        // gives at least `w + ceil(w / prev) > w`, so 0.
        let k = limit - cur - cost + 1;
        let from = match k.cmp(&prev) {
            std::cmp::Ordering::Greater => 0,
            std::cmp::Ordering::Equal => 1,
            std::cmp::Ordering::Less => (w + 1).saturating_sub((k * w).div_ceil(prev)),
        };
        let o = from.max(offset);
        (o < w).then_some(o)
    };
    if let Some(o) = first(rolled.prev, rolled.cur, offset) {
        return o - offset;
    }
    if let Some(o) = first(rolled.cur, 0, 0) {
        return w - offset + o;
    }
    2 * w - offset
}

/// [`retry_after`] in 128-bit integers, for any window and a caller behind the key (the
/// reference the 64-bit path is tested against).
#[inline(never)]
pub(crate) fn retry_after_wide(c: Counts, at: Instant, limits: &Limits, cost: u32) -> u64 {
    debug_assert!(cost <= limits.limit);
    let w = limits.window_ns;
    let (rolled, offset) = roll(c, at);
    if admits(rolled, offset, limits, cost) {
        return 0;
    }
    // A caller behind the key is decided at offset 0 of the key's interval: wait until its
    // clock reaches that interval too.
    let lag = match behind(c, at) {
        Some(d) => u128::from(d) * u128::from(w) - u128::from(at.offset),
        None => 0,
    };
    let wait = |offset: u64| -> u128 {
        let w = u128::from(w);
        let limit = u128::from(limits.limit);
        let cost = u128::from(cost);
        // The first offset `o >= offset` in this interval with floor(prev * (W - o) / W) <= r,
        // where r = L - cur - cost: prev * (W - o) < (r + 1) * W, i.e. o >= W + 1 - ceil((r + 1)
        // W / prev).
        let first = |prev: u32, cur: u32, offset: u128| -> Option<u128> {
            let cur = u128::from(cur);
            if cur + cost > limit {
                return None;
            }
            let prev = u128::from(prev);
            if prev == 0 {
                return Some(offset);
            }
            let bound = ((limit - cur - cost + 1) * w).div_ceil(prev);
            let o = (w + 1).saturating_sub(bound).max(offset);
            (o < w).then_some(o)
        };
        let offset = u128::from(offset);
        if let Some(o) = first(rolled.prev, rolled.cur, offset) {
            return o - offset;
        }
        if let Some(o) = first(rolled.cur, 0, 0) {
            return w - offset + o;
        }
        2 * w - offset
    };
    u64::try_from(lag + wait(offset)).unwrap_or(u64::MAX)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    fn limits(limit: u32) -> Limits {
        Limits::new(10 * SEC, limit, (limit / 4).max(1))
    }

    #[test]
    fn pack_round_trips_and_flags_stay_clear() {
        let narrow = Counts {
            interval: INTERVAL_MASK,
            prev: 65_535,
            cur: 1,
        };
        let wide = Counts {
            interval: WIDE_INTERVAL_MASK,
            prev: LIMIT_MAX,
            cur: 65_536,
        };
        for (c, layout) in [(narrow, 0), (wide, WIDE)] {
            let w = pack(c);
            assert_eq!(w & (MARKER | EVICTED | TOUCHED | WIDE), layout, "{c:?}");
            assert_eq!(counts(w | TOUCHED), c);
            assert_eq!(counts(w), c);
            assert_eq!(counts(w | EVICTED), c);
        }
        // Bit by bit: each field's lowest and highest bit land where the layout says.
        assert_eq!(
            pack(Counts {
                interval: 1,
                prev: 0,
                cur: 0
            }),
            1 << 32
        );
        assert_eq!(
            pack(Counts {
                interval: 1 << 27,
                prev: 1 << 15,
                cur: 1 << 15
            }),
            (1 << 59) | (1 << 31) | (1 << 15)
        );
        assert_eq!(
            pack(Counts {
                interval: 1,
                prev: 1 << 16,
                cur: 0
            }),
            WIDE | (1 << 50) | (1 << 41)
        );
        assert_eq!(
            pack(Counts {
                interval: 1 << 9,
                prev: 1,
                cur: 1 << 24
            }),
            WIDE | (1 << 59) | (1 << 25) | (1 << 24)
        );
    }

    #[test]
    fn interval_distance_wraps_modulo_the_keys_width() {
        let narrow = |interval| Counts {
            interval,
            prev: 1,
            cur: 1,
        };
        assert_eq!(distance(narrow(INTERVAL_MASK), 0), 1);
        assert_eq!(distance(narrow(0), INTERVAL_MASK), -1);
        assert_eq!(distance(narrow(5), 3), -2);
        // A wide key compares the low 10 bits of the caller's interval.
        let wide = |interval| Counts {
            interval,
            prev: 70_000,
            cur: 1,
        };
        assert_eq!(distance(wide(WIDE_INTERVAL_MASK), 1 << 10), 1);
        assert_eq!(distance(wide(5), (7 << 10) + 5), 0);
        assert_eq!(distance(wide(5), (7 << 10) + 6), 1);
        assert_eq!(distance(wide(5), 3), -2);
        assert_eq!(distance(wide(0), 1 << 9), -(1 << 9));
        let l = limits(10);
        // An interval 2^28 later aliases to the same one: the documented horizon.
        assert_eq!(
            l.instant(0).interval,
            l.instant((1 << 28) * 10 * SEC).interval
        );
    }

    /// An access never makes a key stale for a caller within the lag bound, an admission that
    /// widens the key included (the bound is the limiter's, 2^5 windows above 65,535, not the
    /// layout's); beyond the bound the key is stale before and after alike.
    #[test]
    fn a_widening_access_keeps_a_key_current_within_the_lag_bound() {
        let l = limits(100_000);
        assert_eq!(l.max_lag, MAX_LAG_WIDE);
        let at = |interval| Instant {
            interval,
            max_lag: l.max_lag,
            offset: 0,
        };
        let key = Counts {
            interval: 5_000,
            prev: 0,
            cur: 65_535,
        };
        let after = admit(key, at(5_000), &l, 1).unwrap();
        assert!(is_wide(after));
        for behind in [1, 20, 32] {
            let b = at(5_000 - behind);
            assert!(!is_stale(key, b) && !is_stale(after, b), "{behind}");
        }
        for behind in [33, 40, 100] {
            let b = at(5_000 - behind);
            assert!(is_stale(key, b) && is_stale(after, b), "{behind}");
        }
    }

    /// Counts above 65,535 make a word wide and back: an admission past 65,535 widens it (its
    /// interval truncated to 10 bits), and the roll that leaves both counts at most 65,535
    /// narrows it again (with the caller's whole interval).
    #[test]
    fn counts_above_65535_widen_the_word_and_narrow_it_again() {
        let l = limits(100_000);
        let t = |interval: u32| Instant {
            interval,
            max_lag: l.max_lag,
            offset: 0,
        };
        let at = t(5_000);
        let c = Counts {
            interval: 5_000,
            prev: 0,
            cur: 65_535,
        };
        let next = admit(c, at, &l, 1).unwrap();
        assert_eq!(
            next,
            Counts {
                interval: 5_000 & WIDE_INTERVAL_MASK,
                prev: 0,
                cur: 65_536
            }
        );
        assert_ne!(pack(next) & WIDE, 0);
        let Ok((word, left)) = check(pack(c), at, &l, 1) else {
            panic!()
        };
        assert_eq!((counts(word), left), (next, 100_000 - 65_536));
        // Same interval: counted on; the next: prev = 65,536, still wide; two on: narrow.
        let more = admit(next, at, &l, 10).unwrap();
        assert_eq!(more.cur, 65_546);
        let (rolled, _) = roll(more, t(5_001));
        assert_eq!(
            rolled,
            Counts {
                interval: 5_001 & WIDE_INTERVAL_MASK,
                prev: 65_546,
                cur: 0
            }
        );
        let (rolled, _) = roll(rolled, t(5_002));
        assert_eq!(
            rolled,
            Counts {
                interval: 5_002,
                prev: 0,
                cur: 0
            }
        );
        assert_eq!(pack(rolled) & WIDE, 0);
        // A caller behind a wide key by up to 2^5 intervals is counted in the key's; by 2^5 + 1,
        // the key is taken as an idle one aliased and reset.
        assert_eq!(roll(more, t(5_000 - 32)), (more, 0));
        assert!(!is_stale(more, t(5_000 - 32)));
        assert!(is_stale(more, t(5_000 - 33)));
        assert_eq!(
            roll(more, t(5_000 - 33)).0,
            Counts {
                interval: 5_000 - 33,
                prev: 0,
                cur: 0
            }
        );
        // ... and one idle for exactly 2^10 intervals takes its old counts as current: the
        // documented cost of the 10-bit interval.
        assert_eq!(roll(more, t(5_000 + 1024)), (more, 0));
    }

    #[test]
    fn roll_follows_the_window_rules() {
        let c = Counts {
            interval: 7,
            prev: 3,
            cur: 5,
        };
        let at = |interval| Instant {
            interval,
            max_lag: MAX_LAG,
            offset: 42,
        };
        assert_eq!(roll(c, at(7)), (c, 42));
        let next = Counts {
            interval: 8,
            prev: 5,
            cur: 0,
        };
        assert_eq!(roll(c, at(8)), (next, 42));
        let reset = Counts {
            interval: 9,
            prev: 0,
            cur: 0,
        };
        assert_eq!(roll(c, at(9)), (reset, 42));
        // A caller behind, by one interval or by 2^20: the key's interval at offset 0, the key
        // unchanged, and current for it. Further behind (2^20 + 1, modulo 2^28): an idle key,
        // reset and stale.
        assert_eq!(roll(c, at(6)), (c, 0));
        assert_eq!(roll(c, at(2)), (c, 0));
        let far = (7 + (1 << 28) - (1 << 20)) & INTERVAL_MASK;
        assert_eq!(roll(c, at(far)), (c, 0));
        let aliased = (far + (1 << 28) - 1) & INTERVAL_MASK;
        let reset = Counts {
            interval: aliased,
            prev: 0,
            cur: 0,
        };
        assert_eq!(roll(c, at(aliased)), (reset, 42));
        assert!(!is_stale(c, at(8)) && !is_stale(c, at(6)) && !is_stale(c, at(2)));
        assert!(!is_stale(c, at(far)) && is_stale(c, at(aliased)));
        assert!(is_stale(c, at(9)));
    }

    #[test]
    fn estimate_is_floor_of_weighted_prev_plus_cur() {
        let l = limits(10);
        // 1 s into the window: prev 8 weighs floor(8 * 9 / 10) = 7.
        let c = Counts {
            interval: 1,
            prev: 8,
            cur: 2,
        };
        assert!(admits(c, SEC, &l, 1)); // 7 + 2 + 1 = 10 <= 10
        assert!(!admits(Counts { cur: 3, ..c }, SEC, &l, 1)); // 7 + 3 + 1 = 11
        // At offset 0 prev weighs fully; at the last nanosecond floor(8 * 1 / 10^10) = 0.
        assert!(!admits(Counts { cur: 2, ..c }, 0, &l, 1));
        assert!(admits(Counts { cur: 9, ..c }, 10 * SEC - 1, &l, 1));
        // A cost of n asks for n admissions at once: 7 + 2 + 1 fits, 7 + 1 + 2 = 10 fits,
        // 7 + 2 + 2 = 11 does not; a fresh key takes up to L at once.
        assert!(admits(Counts { cur: 1, ..c }, SEC, &l, 2));
        assert!(!admits(c, SEC, &l, 2));
        let fresh = Counts {
            interval: 1,
            prev: 0,
            cur: 0,
        };
        assert!(admits(fresh, 0, &l, 10) && !admits(fresh, 0, &l, 11));
        let at0 = Instant {
            interval: 1,
            max_lag: MAX_LAG,
            offset: 0,
        };
        assert_eq!(admit(fresh, at0, &l, 4).map(|n| n.cur), Some(4));
        assert_eq!(
            check(pack(Counts { cur: 4, ..fresh }), at0, &l, 6),
            Ok((pack(Counts { cur: 10, ..fresh }) | TOUCHED, 0))
        );
        assert_eq!(
            check(pack(Counts { cur: 5, ..fresh }), at0, &l, 6),
            Err(Counts { cur: 5, ..fresh })
        );
        let at = Instant {
            interval: 1,
            max_lag: MAX_LAG,
            offset: SEC,
        };
        assert_eq!(remaining(c, at, &l), 1);
        assert_eq!(remaining(Counts { cur: 9, ..c }, at, &l), 0);
    }

    /// The multiply-based division agrees with `div` for any window and time, and the estimate
    /// with the formula computed in 128-bit integers.
    #[cfg(not(miri))]
    #[test]
    fn division_by_multiplication_is_exact() {
        use proptest::prelude::*;
        proptest!(|(window in 1..u64::MAX, now: u64, prev in 0..=NARROW_MAX, cur in 0..1000u32)| {
            let l = Limits::new(window, 1000, 250);
            let at = l.instant(now);
            prop_assert_eq!(at.offset, now % window);
            prop_assert_eq!(at.interval, ((now / window) as u32) & INTERVAL_MASK);
            let c = Counts { interval: at.interval, prev, cur };
            // The rule: weighted + cur + 1 <= L.
            let weighted = u128::from(prev) * u128::from(window - at.offset) / u128::from(window);
            let exact = weighted + u128::from(cur) < 1000;
            prop_assert_eq!(admits(c, at.offset, &l, 1), exact);
        });
        // Windows of the default shape (whole seconds) across the range of real clocks.
        proptest!(|(secs in 1..100_000u64, now in 1_500_000_000_000_000_000..2_500_000_000_000_000_000u64, prev in 0..=NARROW_MAX)| {
            let window = secs * SEC;
            let l = Limits::new(window, 1000, 250);
            let at = l.instant(now);
            prop_assert_eq!(at.offset, now % window);
            let c = Counts { interval: at.interval, prev, cur: 0 };
            let exact = u128::from(prev) * u128::from(window - at.offset) / u128::from(window) < 1000;
            prop_assert_eq!(admits(c, at.offset, &l, 1), exact);
        });
    }

    #[test]
    fn estimate_is_exact_for_windows_past_the_64_bit_product() {
        // window 2^60 ns: prev * (window - offset) overflows u64 and takes the 128-bit path.
        let l = Limits::new(1 << 60, 1000, 250);
        let c = Counts {
            interval: 0,
            prev: 1000,
            cur: 0,
        };
        // floor(1000 * (2^60 - 2^58) / 2^60) = 750: 750 + cur + 1 <= 1000 iff cur <= 249.
        assert!(admits(Counts { cur: 249, ..c }, 1 << 58, &l, 1));
        assert!(!admits(Counts { cur: 250, ..c }, 1 << 58, &l, 1));
    }

    #[test]
    fn penalty_saturates() {
        let l = limits(200);
        assert_eq!(l.penalty, 50);
        let at = Instant {
            interval: 3,
            max_lag: MAX_LAG,
            offset: 0,
        };
        let c = penalize(
            Counts {
                interval: 3,
                prev: 0,
                cur: 65_500,
            },
            at,
            &l,
        );
        assert_eq!(c.cur, NARROW_MAX);
        assert_eq!(
            pack(c) & WIDE,
            0,
            "a limit up to 65,535 never makes a wide word"
        );
        // Above 65,535: saturating at 2^25 - 1, the word wide.
        let l = limits(100_000);
        assert_eq!((l.penalty, l.counter_max), (25_000, LIMIT_MAX));
        let c = penalize(
            Counts {
                interval: 3,
                prev: 0,
                cur: 60_000,
            },
            at,
            &l,
        );
        assert_eq!(
            c,
            Counts {
                interval: 3,
                prev: 0,
                cur: 85_000
            }
        );
        assert_ne!(pack(c) & WIDE, 0);
        let c = penalize(
            Counts {
                interval: 3,
                prev: 0,
                cur: LIMIT_MAX - 10,
            },
            at,
            &l,
        );
        assert_eq!(c.cur, LIMIT_MAX);
    }

    /// The 64-bit path of `retry_after` gives the 128-bit formula's value bit for bit, over
    /// random windows (the fast path's largest for either range of limits, 2^47 and 2^38, and
    /// the smallest among them), limits (up to 2^25 - 1), costs, counts (saturated and wide ones
    /// included), offsets (the window's first and last nanosecond among them) and intervals of
    /// the key relative to the caller's (same, next, older, behind, aliased).
    #[cfg(not(miri))]
    #[test]
    fn retry_after_fast_path_equals_wide() {
        use proptest::prelude::*;
        let window = prop_oneof![
            Just(1u64),
            Just(2),
            Just(RETRY_FAST_WINDOW),
            Just(RETRY_FAST_WINDOW - 1),
            Just(RETRY_FAST_WINDOW + 1),
            Just(RETRY_FAST_WINDOW_WIDE),
            Just(RETRY_FAST_WINDOW_WIDE - 1),
            Just(RETRY_FAST_WINDOW_WIDE + 1),
            Just(10 * SEC),
            1..=RETRY_FAST_WINDOW,
        ];
        let limit = prop_oneof![
            Just(1u32),
            Just(NARROW_MAX),
            Just(NARROW_MAX - 1),
            Just(NARROW_MAX + 1),
            Just(LIMIT_MAX),
            1..=16u32,
            1..=NARROW_MAX,
            1..=LIMIT_MAX,
        ];
        // Small counts meet small limits: `L - cur - cost + 1` equal to, above and below `prev`.
        let count = prop_oneof![
            Just(0u32),
            Just(1),
            Just(NARROW_MAX),
            Just(NARROW_MAX + 1),
            Just(LIMIT_MAX),
            0..=17u32,
            0..=NARROW_MAX,
            0..=LIMIT_MAX,
        ];
        let shift = prop_oneof![
            Just(0i64),
            Just(1),
            Just(2),
            Just(-1),
            Just(-(1 << 20)),
            Just(-(1 << 20) - 1),
            Just(-(1 << 5)),
            Just(-(1 << 5) - 1),
            Just(1 << 10),
            -3i64..=3,
            any::<i64>(),
        ];
        let config = ProptestConfig::with_cases(20_000);
        proptest!(config, |(
            w in window,
            limit in limit,
            cost_seed: u32,
            prev in count.clone(),
            cur in count,
            shift in shift,
            interval in 0..=INTERVAL_MASK,
            offset_seed in prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()],
        )| {
            let l = Limits::new(w, limit, (limit / 4).max(1));
            let cost = 1 + cost_seed % limit;
            let at = Instant {
                interval: (i64::from(interval) + shift).rem_euclid(1 << INTERVAL_BITS) as u32,
                max_lag: l.max_lag,
                offset: offset_seed % w,
            };
            // A key's counts as the state functions leave them: at most the counter's bound,
            // a wide key's interval in 10 bits.
            let (prev, cur) = (prev.min(l.counter_max), cur.min(l.counter_max));
            let c = fit(Counts { interval, prev, cur });
            prop_assert_eq!(
                retry_after(c, at, &l, cost),
                retry_after_wide(c, at, &l, cost),
                "w {} L {} cost {} {:?} {:?}", w, limit, cost, c, at
            );
        });
    }

    /// `retry_after` is the first nanosecond at which `admit` of the same cost succeeds again,
    /// found by brute force over a small window (every nanosecond of three windows), for every
    /// cost from 1 to `L` (1 and `L` under Miri).
    #[test]
    fn retry_after_is_the_first_admitting_instant() {
        let window = 50;
        let mut cases = 0;
        // A subset under Miri, where each case costs a brute-force scan of 300 instants.
        let miri = cfg!(miri);
        let limits: &[u32] = if miri { &[1, 3] } else { &[1, 2, 3, 7] };
        let prevs: &[u32] = if miri {
            &[0, 2, 200]
        } else {
            &[0, 1, 2, 3, 5, 9, 200]
        };
        let curs: &[u32] = if miri {
            &[0, 2, 300]
        } else {
            &[0, 1, 2, 3, 6, 7, 8, 300]
        };
        let nows: &[u64] = if miri { &[0, 25] } else { &[0, 1, 17, 25, 49] };
        let behinds: &[u64] = if miri { &[0, 1] } else { &[0, 1, 3] };
        let mut want = 0;
        for &limit in limits {
            let l = Limits::new(window, limit, 1);
            let costs: Vec<u32> = if miri {
                vec![1, limit]
            } else {
                (1..=limit).collect()
            };
            want += costs.len() * prevs.len() * curs.len() * nows.len() * behinds.len();
            for (&cost, &prev) in costs.iter().flat_map(|c| prevs.iter().map(move |p| (c, p))) {
                for &cur in curs {
                    for &now in nows {
                        // The key's state lives in interval 10; the caller is at `10 * window +
                        // now`, or one or three intervals behind it (counted in the key's).
                        for &behind in behinds {
                            let c = Counts {
                                interval: 10,
                                prev,
                                cur,
                            };
                            let t0 = (10 - behind) * window + now;
                            let got = retry_after(c, l.instant(t0), &l, cost);
                            let want = (0..6 * window)
                                .find(|&dt| {
                                    let t = t0 + dt;
                                    // Decided as a caller at `t` would see the key.
                                    admit(c, l.instant(t), &l, cost).is_some()
                                })
                                .expect("admits within two windows of the key's interval");
                            assert_eq!(
                                got, want,
                                "L {limit} cost {cost} prev {prev} cur {cur} t0 {t0}"
                            );
                            cases += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(cases, want);
    }
}
