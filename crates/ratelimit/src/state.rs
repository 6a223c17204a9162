//! The packed per-key state word and the sliding-window arithmetic (DESIGN.md, "txgate-ratelimit").
//!
//! A key's state is `(interval, prev, cur)` plus a two-bit life-cycle tag, packed into one `u64`
//! so that check-and-increment is a single compare-and-swap (FIX 2):
//!
//! ```text
//! bits 63..62  life      Live / Tentative / Dead (see `table.rs` for the protocol)
//! bits 61..32  interval  now / window, truncated to 30 bits (compared modulo 2^30)
//! bits 31..16  prev      admissions counted in the previous interval (saturating at 65,535)
//! bits 15..0   cur       admissions counted in the current interval (saturating at 65,535)
//! ```
//!
//! Everything here is plain integer arithmetic shared by the lock-free table and the reference
//! model, so both compute exactly the same decisions.

use strength_reduce::StrengthReducedU64;

/// The largest count a 16-bit counter holds; also the largest limit per window we accept.
pub(crate) const COUNTER_MAX: u16 = u16::MAX;

const INTERVAL_BITS: u32 = 30;
const INTERVAL_MASK: u32 = (1 << INTERVAL_BITS) - 1;
const LIFE_SHIFT: u32 = 62;
const INTERVAL_SHIFT: u32 = 32;
const PREV_SHIFT: u32 = 16;

/// Where a node is in its life (see the insertion protocol in `table.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Life {
    /// Published and the only reachable node of its key: admissions count here. Terminal.
    Live = 0,
    /// Just published; not yet known to be the only node of its key. Never counts admissions.
    Tentative = 1,
    /// Lost a race to another node of the same key: a free slot to the next insertion. Terminal.
    Dead = 2,
}

/// The counters of one key, unpacked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Counts {
    /// `now / window`, truncated to 30 bits.
    pub(crate) interval: u32,
    /// Admissions in the interval before `interval`.
    pub(crate) prev: u16,
    /// Admissions in `interval`.
    pub(crate) cur: u16,
}

/// Packs a life tag and counts into a state word.
#[inline]
pub(crate) fn pack(life: Life, c: Counts) -> u64 {
    debug_assert!(c.interval <= INTERVAL_MASK);
    ((life as u64) << LIFE_SHIFT)
        | (u64::from(c.interval) << INTERVAL_SHIFT)
        | (u64::from(c.prev) << PREV_SHIFT)
        | u64::from(c.cur)
}

/// The life tag of a state word.
#[inline]
pub(crate) fn life(word: u64) -> Life {
    match word >> LIFE_SHIFT {
        0 => Life::Live,
        1 => Life::Tentative,
        _ => Life::Dead,
    }
}

/// The counts of a state word.
#[inline]
pub(crate) fn counts(word: u64) -> Counts {
    Counts {
        interval: ((word >> INTERVAL_SHIFT) as u32) & INTERVAL_MASK,
        prev: (word >> PREV_SHIFT) as u16,
        cur: word as u16,
    }
}

/// The same word with another life tag.
#[inline]
pub(crate) fn with_life(word: u64, life: Life) -> u64 {
    (word & !(0b11 << LIFE_SHIFT)) | ((life as u64) << LIFE_SHIFT)
}

/// A point in time as the window arithmetic sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Instant {
    /// `now / window`, truncated to 30 bits.
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
    /// by a divisor fixed in advance, without a `div` instruction (20-90 cycles on x86-64; two
    /// per admission otherwise). From the `strength_reduce` crate.
    window: StrengthReducedU64,
    /// Admissions per window per key, `L` (1..=65,535).
    pub(crate) limit: u16,
    /// What one penalty adds: `max(1, L / 4)`.
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

    /// `interval = now / window`, `offset = now % window` (DESIGN.md).
    #[inline]
    pub(crate) fn instant(&self, now_ns: u64) -> Instant {
        let (interval, offset) = StrengthReducedU64::div_rem(now_ns, self.window);
        Instant {
            interval: (interval as u32) & INTERVAL_MASK,
            offset,
        }
    }
}

/// Signed distance in intervals from `from` to `to`, modulo 2^30 (in `-2^29..2^29`).
#[inline]
fn distance(from: u32, to: u32) -> i32 {
    let d = to.wrapping_sub(from) & INTERVAL_MASK;
    if d >= 1 << (INTERVAL_BITS - 1) {
        d as i32 - (1 << INTERVAL_BITS)
    } else {
        d as i32
    }
}

/// Rolls `c` forward to `at` and returns the rolled counts with the offset the estimate uses.
///
/// Same interval: keep. Next interval: `prev = cur, cur = 0`. Older: both 0 (DESIGN.md). A caller
/// one interval *behind* the key (its clock lags another caller's) is counted in the key's
/// interval at offset 0, the most conservative estimate; a caller further behind or ahead resets
/// the key like an older interval does.
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
        -1 => (c, 0),
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

/// Stale: the key's interval is older than the previous one, so its state is worth nothing
/// (the first choice for eviction).
#[inline]
pub(crate) fn is_stale(c: Counts, at: Instant) -> bool {
    !(-1..=1).contains(&distance(c.interval, at.interval))
}

/// The sliding-window check on rolled counts: `prev * (window - offset) / window + cur + 1 <= L`,
/// floor division in integers (DESIGN.md; upstream computes the same in floating point).
#[inline]
pub(crate) fn admits(c: Counts, offset: u64, limits: &Limits) -> bool {
    let remaining = limits.window_ns - offset;
    let weighted = match u64::from(c.prev).checked_mul(remaining) {
        // Nothing carried over (a key seen only in this interval): no division at all.
        Some(0) => 0,
        // The common case (windows up to 3.2 days): division by multiplication, exact.
        Some(product) => product / limits.window,
        None => (u128::from(c.prev) * u128::from(remaining) / u128::from(limits.window_ns)) as u64,
    };
    // `weighted <= prev <= 65,535`, so the sum cannot overflow.
    weighted + u64::from(c.cur) < u64::from(limits.limit)
}

/// Counts after one admission at `at` if the window allows it, else `None`.
#[inline]
pub(crate) fn admit(c: Counts, at: Instant, limits: &Limits) -> Option<Counts> {
    let (rolled, offset) = roll(c, at);
    admits(rolled, offset, limits).then(|| Counts {
        // `cur + 1 <= L <= 65,535`: no overflow.
        cur: rolled.cur + 1,
        ..rolled
    })
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

/// Counts with one admission recorded in `interval` taken back (rollback of a group reservation).
/// If the key has moved on one interval the admission now sits in `prev`; further, it is gone.
#[inline]
pub(crate) fn unadmit(c: Counts, interval: u32) -> Counts {
    match distance(interval, c.interval) {
        0 => Counts {
            cur: c.cur.saturating_sub(1),
            ..c
        },
        1 => Counts {
            prev: c.prev.saturating_sub(1),
            ..c
        },
        _ => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    fn limits(limit: u16) -> Limits {
        Limits::new(10 * SEC, limit, (limit / 4).max(1))
    }

    #[test]
    fn pack_round_trips() {
        let c = Counts {
            interval: INTERVAL_MASK,
            prev: 65_535,
            cur: 1,
        };
        for life_tag in [Life::Live, Life::Tentative, Life::Dead] {
            let w = pack(life_tag, c);
            assert_eq!(life(w), life_tag);
            assert_eq!(counts(w), c);
        }
        let w = pack(Life::Tentative, c);
        assert_eq!(life(with_life(w, Life::Live)), Life::Live);
        assert_eq!(counts(with_life(w, Life::Dead)), c);
    }

    #[test]
    fn interval_distance_wraps_modulo_2_pow_30() {
        assert_eq!(distance(INTERVAL_MASK, 0), 1);
        assert_eq!(distance(0, INTERVAL_MASK), -1);
        assert_eq!(distance(5, 3), -2);
        let l = limits(10);
        // An interval 2^30 later aliases to the same one: the documented horizon.
        assert_eq!(
            l.instant(0).interval,
            l.instant((1 << 30) * 10 * SEC).interval
        );
    }

    #[test]
    fn roll_follows_the_three_cases() {
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
        assert_eq!(
            roll(c, at(8)),
            (
                Counts {
                    interval: 8,
                    prev: 5,
                    cur: 0
                },
                42
            )
        );
        assert_eq!(
            roll(c, at(9)),
            (
                Counts {
                    interval: 9,
                    prev: 0,
                    cur: 0
                },
                42
            )
        );
        assert_eq!(roll(c, at(6)), (c, 0));
        assert_eq!(
            roll(c, at(5)),
            (
                Counts {
                    interval: 5,
                    prev: 0,
                    cur: 0
                },
                42
            )
        );
        assert!(!is_stale(c, at(8)) && !is_stale(c, at(6)) && is_stale(c, at(9)));
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
        assert!(admits(c, SEC, &l)); // 7 + 2 + 1 = 10 <= 10
        assert!(!admits(Counts { cur: 3, ..c }, SEC, &l)); // 7 + 3 + 1 = 11
        // At offset 0 prev weighs fully; at the last nanosecond floor(8 * 1 / 10^10) = 0.
        assert!(!admits(Counts { cur: 2, ..c }, 0, &l));
        assert!(admits(Counts { cur: 9, ..c }, 10 * SEC - 1, &l));
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
            // The rule as DESIGN.md writes it: weighted + cur + 1 <= L.
            let weighted = u128::from(prev) * u128::from(window - at.offset) / u128::from(window);
            let exact = weighted + u128::from(cur) < 1000;
            prop_assert_eq!(admits(c, at.offset, &l), exact);
        });
        // Windows of the default shape (whole seconds) across the range of real clocks.
        proptest!(|(secs in 1..100_000u64, now in 1_500_000_000_000_000_000..2_500_000_000_000_000_000u64, prev: u16)| {
            let window = secs * SEC;
            let l = Limits::new(window, 1000, 250);
            let at = l.instant(now);
            prop_assert_eq!(at.offset, now % window);
            let c = Counts { interval: at.interval, prev, cur: 0 };
            let exact = u128::from(prev) * u128::from(window - at.offset) / u128::from(window) < 1000;
            prop_assert_eq!(admits(c, at.offset, &l), exact);
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
        assert!(admits(Counts { cur: 249, ..c }, 1 << 58, &l));
        assert!(!admits(Counts { cur: 250, ..c }, 1 << 58, &l));
    }

    #[test]
    fn penalty_saturates_and_unadmit_follows_the_roll() {
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
        let c = Counts {
            interval: 4,
            prev: 6,
            cur: 2,
        };
        assert_eq!(unadmit(c, 4), Counts { cur: 1, ..c });
        assert_eq!(unadmit(c, 3), Counts { prev: 5, ..c });
        assert_eq!(unadmit(c, 2), c);
    }
}
