//! The packed per-key state word and the sliding-window arithmetic.
//!
//! A key's state is `(interval, prev, cur)`, packed with three flags into one `u64` so that
//! check-and-increment is a single compare-and-swap:
//!
//! ```text
//! bit  63      MARKER   the word is a multi-word operation in flight (bits 0..63 its address;
//!                       see `group.rs`); resolved before anyone reads the counts
//! bit  62      EVICTED  the node left the table: terminal, no count changes after it
//! bit  61      TOUCHED  the key was accessed since a CLOCK sweep last passed it (the reference
//!                       bit); set by every access, cleared only by a sweep
//! bits 60..32  interval now / window, truncated to 29 bits (compared modulo 2^29)
//! bits 31..16  prev     admissions counted in the previous interval (saturating at 65,535)
//! bits 15..0   cur      admissions counted in the current interval (saturating at 65,535)
//! ```
//!
//! Everything here is plain integer arithmetic shared by the lock-free table and the reference
//! model, so both compute exactly the same decisions.

use std::num::NonZeroU32;

use strength_reduce::StrengthReducedU64;

use crate::decision::InsufficientCapacity;

/// The largest count a 16-bit counter holds; also the largest limit per window we accept.
pub(crate) const COUNTER_MAX: u16 = u16::MAX;

const INTERVAL_BITS: u32 = 29;
const INTERVAL_MASK: u32 = (1 << INTERVAL_BITS) - 1;
const INTERVAL_SHIFT: u32 = 32;
const PREV_SHIFT: u32 = 16;
/// The word holds a group operation's address instead of counts.
pub(crate) const MARKER: u64 = 1 << 63;
/// The node was evicted: its counts are final.
pub(crate) const EVICTED: u64 = 1 << 62;
/// The key was accessed since a CLOCK sweep last passed it (its reference bit).
pub(crate) const TOUCHED: u64 = 1 << 61;

/// The counts of one key, unpacked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Counts {
    /// `now / window`, truncated to 29 bits.
    pub(crate) interval: u32,
    /// Admissions in the interval before `interval`.
    pub(crate) prev: u16,
    /// Admissions in `interval`.
    pub(crate) cur: u16,
}

/// Packs counts into a state word (no flags; an access adds [`TOUCHED`]).
#[inline]
pub(crate) fn pack(c: Counts) -> u64 {
    debug_assert!(c.interval <= INTERVAL_MASK);
    (u64::from(c.interval) << INTERVAL_SHIFT) | (u64::from(c.prev) << PREV_SHIFT) | u64::from(c.cur)
}

/// The counts of a state word that is not a marker (the evicted and touched flags are
/// ignored).
#[inline]
pub(crate) fn counts(word: u64) -> Counts {
    debug_assert_eq!(word & MARKER, 0);
    Counts {
        interval: ((word >> INTERVAL_SHIFT) as u32) & INTERVAL_MASK,
        prev: (word >> PREV_SHIFT) as u16,
        cur: word as u16,
    }
}

/// A point in time as the window arithmetic sees it, made only by [`Limits::instant`].
///
/// Invariants: `interval <= INTERVAL_MASK` (29 bits: [`pack`] stores it as is, and intervals are
/// compared modulo 2^29 by `distance`); `offset < window_ns` of the [`Limits`] that made it, so
/// `window_ns - offset` in `Limits::weighted` is in `1..=window_ns` and the previous interval's
/// weight never exceeds `prev`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Instant {
    /// `now / window`, truncated to 29 bits.
    pub(crate) interval: u32,
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
    /// Admissions per window per key, `L` (1..=65,535; `Config::validate` rejects 0 and
    /// larger limits, which the 16-bit packed counters could not hold).
    pub(crate) limit: u16,
    /// What one penalty adds: `max(1, L / 4)`, so at least 1.
    pub(crate) penalty: u16,
}

impl Limits {
    /// Limits for a window of `window_ns` nanoseconds (> 0), `limit` admissions per window and
    /// `penalty` per penalty.
    pub(crate) fn new(window_ns: u64, limit: u16, penalty: u16) -> Self {
        debug_assert!(window_ns > 0);
        Self {
            window_ns,
            window: StrengthReducedU64::new(window_ns.max(1)),
            limit,
            penalty,
        }
    }

    /// A weighted admission's cost as the counters take it (`1..=L`), or the error for a cost
    /// above `L`, which no window admits.
    pub(crate) fn cost(&self, cost: NonZeroU32) -> Result<u16, InsufficientCapacity> {
        u16::try_from(cost.get())
            .ok()
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
            offset,
        }
    }

    /// `prev * (window - offset) / window`, floor division: the previous interval's weight at
    /// `offset` (go-algorand's sliding-window estimate, in integers).
    #[inline]
    fn weighted(&self, prev: u16, offset: u64) -> u64 {
        let remaining = self.window_ns - offset;
        match u64::from(prev).checked_mul(remaining) {
            // Nothing carried over (a key seen only in this interval): no division at all.
            Some(0) => 0,
            // The common case (windows up to 3.2 days): division by multiplication, exact.
            Some(product) => product / self.window,
            None => (u128::from(prev) * u128::from(remaining) / u128::from(self.window_ns)) as u64,
        }
    }
}

/// Signed distance in intervals from `from` to `to`, modulo 2^29 (in `-2^28..2^28`).
#[inline]
fn distance(from: u32, to: u32) -> i32 {
    let d = to.wrapping_sub(from) & INTERVAL_MASK;
    if d >= 1 << (INTERVAL_BITS - 1) {
        d as i32 - (1 << INTERVAL_BITS)
    } else {
        d as i32
    }
}

/// How far (in intervals) a key's interval may be ahead of a caller's and still be taken as a
/// clock skew between callers, not as aliasing: 2^20 intervals. Intervals are compared modulo
/// 2^29, so a key idle for almost 2^29 windows looks a little ahead of every caller; a key more
/// than `MAX_LAG` ahead is taken as such an idle key. So callers' clocks may differ by up to
/// 2^20 windows (17 minutes with 1 ms windows), and a key idle for between 2^29 - 2^20 and 2^29
/// windows looks ahead (counted in its old interval) until it is used or evicted.
pub(crate) const MAX_LAG: i32 = 1 << 20;

/// Rolls `c` forward to `at` and returns the rolled counts with the offset the estimate uses.
///
/// Same interval: keep. Next interval: `prev = cur, cur = 0`. Older: both 0 (go-algorand's
/// sliding window). A caller *behind* the key (its clock lags another caller's, by up to
/// [`MAX_LAG`] intervals) is counted in the key's interval at offset 0, the most conservative
/// estimate, and leaves the key as it is: a key never rolls backwards, so an access never makes
/// a key stale for a caller to whom it was current ([`is_stale`]). A key further ahead is one
/// idle for almost 2^29 windows (aliasing) and is reset like an older one.
#[inline]
pub(crate) fn roll(c: Counts, at: Instant) -> (Counts, u64) {
    match distance(c.interval, at.interval) {
        0 => (c, at.offset),
        1 => (
            Counts {
                interval: at.interval,
                prev: c.cur,
                cur: 0,
            },
            at.offset,
        ),
        d if (-MAX_LAG..0).contains(&d) => (c, 0),
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
/// more than [`MAX_LAG`] intervals ahead, an idle key aliased), so its state is worth nothing
/// (the first choice for eviction). A key behind the caller by at most one interval, or ahead
/// of it, is current. An access only moves a key's interval forward, to the accessor's (a key
/// ahead of its accessor is left as it is), so an access never makes a key stale for a caller
/// to whom it was current, as long as the two callers' clocks are within [`MAX_LAG`] intervals
/// of each other: whether a key is stale for an inserting caller changes only from stale to
/// current, and only by an access to it.
#[inline]
pub(crate) fn is_stale(c: Counts, at: Instant) -> bool {
    !(-MAX_LAG..=1).contains(&distance(c.interval, at.interval))
}

/// The sliding-window check on rolled counts for an admission of weight `cost`:
/// `prev * (window - offset) / window + cur + cost <= L`, floor division in integers
/// (go-algorand computes the same in floating point, for a cost of 1).
#[inline]
pub(crate) fn admits(c: Counts, offset: u64, limits: &Limits, cost: u16) -> bool {
    // `weighted <= prev <= 65,535`, so the sum cannot overflow.
    used(c, offset, limits) + u64::from(cost) <= u64::from(limits.limit)
}

/// The sliding-window estimate of rolled counts at `offset`: `prev * (window - offset) / window +
/// cur` (floor division), at most `2 * 65,535`.
#[inline]
pub(crate) fn used(c: Counts, offset: u64, limits: &Limits) -> u64 {
    limits.weighted(c.prev, offset) + u64::from(c.cur)
}

/// Counts after an admission of weight `cost` at `at` if the window allows it, else `None`.
#[inline]
pub(crate) fn admit(c: Counts, at: Instant, limits: &Limits, cost: u16) -> Option<Counts> {
    let (rolled, offset) = roll(c, at);
    admits(rolled, offset, limits, cost).then(|| Counts {
        // `cur + cost <= L <= 65,535`: no overflow.
        cur: rolled.cur + cost,
        ..rolled
    })
}

/// An admission of weight `cost` decided on a counts word: `Ok((the word after it, with
/// [`TOUCHED`] set, admissions left after it))`, or `Err(the counts)` if the window does not allow it. One roll and one
/// estimate, for the hit path.
#[inline]
pub(crate) fn check(
    word: u64,
    at: Instant,
    limits: &Limits,
    cost: u16,
) -> Result<(u64, u16), Counts> {
    let c = counts(word);
    let (rolled, offset) = roll(c, at);
    let used = limits.weighted(rolled.prev, offset) + u64::from(rolled.cur) + u64::from(cost);
    if used <= u64::from(limits.limit) {
        let next = Counts {
            // `cur + cost <= L <= 65,535`: no overflow.
            cur: rolled.cur + cost,
            ..rolled
        };
        // An access: the reference bit set in the same write.
        Ok((
            pack(next) | TOUCHED,
            (u64::from(limits.limit) - used) as u16,
        ))
    } else {
        Err(c)
    }
}

/// Counts after one penalty at `at`: `cur += max(1, L / 4)`, saturating.
#[inline]
pub(crate) fn penalize(c: Counts, at: Instant, limits: &Limits) -> Counts {
    let (rolled, _) = roll(c, at);
    Counts {
        cur: rolled.cur.saturating_add(limits.penalty),
        ..rolled
    }
}

/// Admissions the key has left at `at`: `L - (prev * (window - offset) / window + cur)`, at
/// least 0.
#[inline]
pub(crate) fn remaining(c: Counts, at: Instant, limits: &Limits) -> u16 {
    let (rolled, offset) = roll(c, at);
    let used = limits.weighted(rolled.prev, offset) + u64::from(rolled.cur);
    u64::from(limits.limit).saturating_sub(used) as u16
}

/// Windows up to this length (2^47 ns, 39 hours) take [`retry_after`]'s 64-bit path:
/// `(L - cur - cost + 1) * window <= 65,535 * 2^47 < 2^63` and `2 * window` fit in a `u64`.
const RETRY_FAST_WINDOW: u64 = 1 << 47;

/// Nanoseconds from `at` until the key would admit `cost` (at most `L`) again if nothing else
/// changed it (0 if it admits now), from the window rule: within the key's interval the previous
/// interval's weight `floor(prev * (window - offset) / window)` falls as the offset grows; in the
/// next interval the current count becomes `prev`; two intervals on, nothing is carried.
///
/// Computed in 64-bit integers when the caller is not behind the key and the window is at most
/// [`RETRY_FAST_WINDOW`] (a 64-bit `div`, instead of a 128-bit division's library call on every
/// drop), else in 128-bit integers ([`retry_after_wide`]); the two agree wherever the first
/// applies (the `retry_after_fast_path_equals_wide` property test). Inlined, so that a drop's
/// caller shares its roll with it.
#[inline(always)]
pub(crate) fn retry_after(c: Counts, at: Instant, limits: &Limits, cost: u16) -> u64 {
    debug_assert!(cost <= limits.limit);
    let w = limits.window_ns;
    if w > RETRY_FAST_WINDOW || (-MAX_LAG..0).contains(&distance(c.interval, at.interval)) {
        return retry_after_wide(c, at, limits, cost);
    }
    let (rolled, offset) = roll(c, at);
    if admits(rolled, offset, limits, cost) {
        return 0;
    }
    let limit = u64::from(limits.limit);
    let cost = u64::from(cost);
    // As in `retry_after_wide`, in `u64`: `limit - cur - cost + 1 <= 65,535` and `w <= 2^47`,
    // so the product is below 2^63; `w + 1` and `2 * w` are below 2^48.
    let first = |prev: u16, cur: u16, offset: u64| -> Option<u64> {
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
pub(crate) fn retry_after_wide(c: Counts, at: Instant, limits: &Limits, cost: u16) -> u64 {
    debug_assert!(cost <= limits.limit);
    let w = limits.window_ns;
    let (rolled, offset) = roll(c, at);
    if admits(rolled, offset, limits, cost) {
        return 0;
    }
    // A caller behind the key is decided at offset 0 of the key's interval: wait until its
    // clock reaches that interval too.
    let lag = match distance(c.interval, at.interval) {
        d if (-MAX_LAG..0).contains(&d) => {
            u128::from(d.unsigned_abs()) * u128::from(w) - u128::from(at.offset)
        }
        _ => 0,
    };
    let wait = |offset: u64| -> u128 {
        let w = u128::from(w);
        let limit = u128::from(limits.limit);
        let cost = u128::from(cost);
        // The first offset `o >= offset` in this interval with floor(prev * (W - o) / W) <= r,
        // where r = L - cur - cost: prev * (W - o) < (r + 1) * W, i.e. o >= W + 1 - ceil((r + 1)
        // W / prev).
        let first = |prev: u16, cur: u16, offset: u128| -> Option<u128> {
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

    fn limits(limit: u16) -> Limits {
        Limits::new(10 * SEC, limit, (limit / 4).max(1))
    }

    #[test]
    fn pack_round_trips_and_flags_stay_clear() {
        let c = Counts {
            interval: INTERVAL_MASK,
            prev: 65_535,
            cur: 1,
        };
        let w = pack(c);
        assert_eq!(w & (MARKER | EVICTED | TOUCHED), 0);
        assert_eq!(counts(w | TOUCHED), c);
        assert_eq!(counts(w), c);
        assert_eq!(counts(w | EVICTED), c);
    }

    #[test]
    fn interval_distance_wraps_modulo_2_pow_29() {
        assert_eq!(distance(INTERVAL_MASK, 0), 1);
        assert_eq!(distance(0, INTERVAL_MASK), -1);
        assert_eq!(distance(5, 3), -2);
        let l = limits(10);
        // An interval 2^29 later aliases to the same one: the documented horizon.
        assert_eq!(
            l.instant(0).interval,
            l.instant((1 << 29) * 10 * SEC).interval
        );
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
        // unchanged, and current for it. Further behind (2^20 + 1, modulo 2^29): an idle key,
        // reset and stale.
        assert_eq!(roll(c, at(6)), (c, 0));
        assert_eq!(roll(c, at(2)), (c, 0));
        let far = (7 + (1 << 29) - (1 << 20)) & INTERVAL_MASK;
        assert_eq!(roll(c, at(far)), (c, 0));
        let aliased = (far + (1 << 29) - 1) & INTERVAL_MASK;
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
        proptest!(|(window in 1..u64::MAX, now: u64, prev: u16, cur in 0..1000u16)| {
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
        proptest!(|(secs in 1..100_000u64, now in 1_500_000_000_000_000_000..2_500_000_000_000_000_000u64, prev: u16)| {
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
        assert_eq!(c.cur, COUNTER_MAX);
    }

    /// The 64-bit path of `retry_after` gives the 128-bit formula's value bit for bit, over
    /// random windows (the fast path's largest, 2^47, and the smallest among them), limits,
    /// costs, counts (saturated ones included), offsets (the window's first and last
    /// nanosecond among them) and intervals of the key relative to the caller's (same, next,
    /// older, behind, aliased).
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
            Just(10 * SEC),
            1..=RETRY_FAST_WINDOW,
        ];
        let limit = prop_oneof![
            Just(1u16),
            Just(COUNTER_MAX),
            Just(COUNTER_MAX - 1),
            1..=16u16,
            1..=COUNTER_MAX,
        ];
        // Small counts meet small limits: `L - cur - cost + 1` equal to, above and below `prev`.
        let count = prop_oneof![
            Just(0u16),
            Just(1),
            Just(COUNTER_MAX),
            0..=17u16,
            any::<u16>()
        ];
        let shift = prop_oneof![
            Just(0i64),
            Just(1),
            Just(2),
            Just(-1),
            Just(-(1 << 20)),
            Just(-(1 << 20) - 1),
            -3i64..=3,
            any::<i64>(),
        ];
        let config = ProptestConfig::with_cases(20_000);
        proptest!(config, |(
            w in window,
            limit in limit,
            cost_seed: u16,
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
                offset: offset_seed % w,
            };
            let c = Counts { interval, prev, cur };
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
        let limits: &[u16] = if miri { &[1, 3] } else { &[1, 2, 3, 7] };
        let prevs: &[u16] = if miri {
            &[0, 2, 200]
        } else {
            &[0, 1, 2, 3, 5, 9, 200]
        };
        let curs: &[u16] = if miri {
            &[0, 2, 300]
        } else {
            &[0, 1, 2, 3, 6, 7, 8, 300]
        };
        let nows: &[u64] = if miri { &[0, 25] } else { &[0, 1, 17, 25, 49] };
        let behinds: &[u64] = if miri { &[0, 1] } else { &[0, 1, 3] };
        let mut want = 0;
        for &limit in limits {
            let l = Limits::new(window, limit, 1);
            let costs: Vec<u16> = if miri {
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
