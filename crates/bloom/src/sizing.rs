//! Sizing a blocked filter: the false-positive rate of Putze, Sanders and Singler.
//!
//! A classic bloom filter of `m` bits, `k` hashes and `n` keys has false-positive rate
//! `(1 - e^(-kn/m))^k`. A blocked filter is worse than that, because keys do not spread evenly
//! over blocks: a query's block holds a Poisson-distributed number of keys with mean
//! `λ = n / num_blocks`, and overloaded blocks answer "maybe" far more often. Putze, Sanders and
//! Singler ("Cache-, Hash- and Space-Efficient Bloom Filters", WEA 2007 / JEA 2009, section 3)
//! give the rate as the Poisson mixture
//!
//! ```text
//! FPR(n, B) = Σ_{i ≥ 0}  Poisson(i; λ = n / B) · f(i)
//! ```
//!
//! where `f(i)` is the false-positive rate of one block that holds `i` keys. In both native
//! layouts each key sets one bit in each of the block's 8 words of `w` bits (`w` = 32 for
//! [`Block256`](crate::Block256), 64 for [`Block512`](crate::Block512)), so a word's bit is set
//! after `i` keys with probability `1 - (1 - 1/w)^i` and `f(i) = (1 - (1 - 1/w)^i)^8`. The
//! classic formula undersizes blocked filters: at 10 bits per key it promises 0.85 % (k = 8)
//! where the 256-bit layout gives 1.26 % and the 512-bit one 1.05 %.
//!
//! The Poisson load is the many-blocks limit of the true binomial load (`n` keys thrown into `B`
//! blocks); it is accurate for filters of more than a few blocks, which the tests confirm, and
//! conservative (too high) for filters of one or two blocks.

use crate::error::BuildError;
use crate::layout::Layout;

/// The sizing rules of each layout (the blocked-filter formula and the searches built on it).
impl Layout {
    /// The expected false-positive rate of `num_blocks` blocks of this layout holding `items`
    /// distinct keys (the blocked-filter formula of Putze, Sanders and Singler, "Cache-, Hash-
    /// and Space-Efficient Bloom Filters", section 3: a Poisson mixture over the keys per
    /// block). Returns 0 for an empty filter and 1 for `num_blocks == 0`.
    ///
    /// # Examples
    /// ```
    /// use txgate_bloom::Layout;
    /// // 2^20 keys at 10 bits per key.
    /// let small = Layout::Block256.false_positive_rate(1 << 20, 40_960);
    /// let large = Layout::Block512.false_positive_rate(1 << 20, 20_480);
    /// assert!((0.0125..0.0128).contains(&small) && (0.0104..0.0106).contains(&large));
    /// ```
    pub fn false_positive_rate(self, items: u64, num_blocks: u64) -> f64 {
        blocked_false_positive_rate(self.word_bits(), items, num_blocks)
    }

    /// The fewest blocks of this layout that keep `items` keys at or below false-positive rate
    /// `fpr` (`items == 0` gives one block), by [`Layout::false_positive_rate`].
    ///
    /// # Errors
    /// [`BuildError::InvalidFalsePositiveRate`] unless `0 < fpr < 1`; [`BuildError::TooLarge`]
    /// past [`Layout::max_blocks`].
    ///
    /// # Examples
    /// ```
    /// use txgate_bloom::Layout;
    /// let layout = Layout::Block256;
    /// let blocks = layout.num_blocks_for(1_000_000, 0.01)?;
    /// assert!(layout.false_positive_rate(1_000_000, blocks) <= 0.01);
    /// assert!(layout.false_positive_rate(1_000_000, blocks - 1) > 0.01);
    /// # Ok::<(), txgate_bloom::BuildError>(())
    pub fn num_blocks_for(self, items: u64, fpr: f64) -> Result<u64, BuildError> {
        blocks_for_rate(self, items, fpr)
    }

    /// The blocks that hold `bits` bits, rounded up to whole blocks.
    ///
    /// # Errors
    /// [`BuildError::ZeroSize`] for `bits == 0`; [`BuildError::TooLarge`] past
    /// [`Layout::max_blocks`].
    pub fn num_blocks_for_bits(self, bits: u64) -> Result<u64, BuildError> {
        blocks_for_bits(self, bits)
    }
}

/// `ln(k!)`, exact by summation for small `k`, Stirling's series beyond (error below 1e-12).
fn ln_factorial(k: u64) -> f64 {
    if k < 64 {
        return (2..=k).map(|i| (i as f64).ln()).sum();
    }
    let x = k as f64 + 1.0;
    // ln Γ(x) = (x - 1/2) ln x - x + ln(2π)/2 + 1/(12x) - 1/(360x^3) + 1/(1260x^5)
    (x - 0.5) * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI).ln() + 1.0 / (12.0 * x)
        - 1.0 / (360.0 * x.powi(3))
        + 1.0 / (1260.0 * x.powi(5))
}

/// The Poisson mixture of the module docs for blocks of 8 words of `word_bits` bits.
///
/// Evaluated from the mode outwards (the terms fall monotonically on both sides) with the
/// recurrences `pmf(i ± 1)` from `pmf(i)` and `(1 - 1/w)^(i ± 1)` from `(1 - 1/w)^i`, starting from
/// the mode's values in log space (no underflow at any load), until a term drops below 1e-17 of
/// the total: a few arithmetic operations per term, no transcendental function.
pub(crate) fn blocked_false_positive_rate(word_bits: u32, items: u64, num_blocks: u64) -> f64 {
    if items == 0 {
        return 0.0;
    }
    if num_blocks == 0 {
        return 1.0;
    }
    let lambda = items as f64 / num_blocks as f64;
    if lambda >= 10_000.0 {
        // Every load within 12 standard deviations of the mean is above 8,800 keys per block,
        // where f(load) >= (1 - e^(-138))^8 (64-bit words; 32-bit ones: e^(-278)) rounds to
        // 1.0; skip the O(sqrt λ) sum.
        return 1.0;
    }
    let q = 1.0 - 1.0 / f64::from(word_bits);
    let f = |clear: f64| (1.0 - clear).powi(Layout::BITS_SET_PER_KEY as i32);
    let mode = lambda.floor() as u64;
    let pmf_mode = (-lambda + mode as f64 * lambda.ln() - ln_factorial(mode)).exp();
    let clear_mode = q.powf(mode as f64);
    let mut total = pmf_mode * f(clear_mode);
    // Upwards from the mode: pmf(i + 1) = pmf(i) * λ / (i + 1).
    let (mut pmf, mut clear, mut i) = (pmf_mode, clear_mode, mode);
    loop {
        i += 1;
        pmf *= lambda / i as f64;
        clear *= q;
        let term = pmf * f(clear);
        total += term;
        if term <= total * 1e-17 {
            break;
        }
    }
    // Downwards from the mode: pmf(i - 1) = pmf(i) * i / λ.
    let (mut pmf, mut clear, mut i) = (pmf_mode, clear_mode, mode);
    while i > 0 {
        pmf *= i as f64 / lambda;
        clear /= q;
        i -= 1;
        let term = pmf * f(clear);
        total += term;
        if term <= total * 1e-17 {
            break;
        }
    }
    total.min(1.0)
}

/// [`Layout::num_blocks_for`]: a search over the block count (the rate falls as blocks are
/// added), starting from the 10-bits-per-key size and doubling or halving to a bracket, then
/// bisecting it.
pub(crate) fn blocks_for_rate(layout: Layout, items: u64, fpr: f64) -> Result<u64, BuildError> {
    if !(fpr > 0.0 && fpr < 1.0) {
        return Err(BuildError::InvalidFalsePositiveRate(fpr));
    }
    if items == 0 {
        return Ok(1);
    }
    let max = layout.max_blocks();
    let meets = |blocks: u64| layout.false_positive_rate(items, blocks) <= fpr;
    // Invariant after the bracketing: lo == 0 or !meets(lo); meets(hi).
    let mut hi = (items.saturating_mul(10) / layout.bits_per_block()).clamp(1, max);
    let mut lo = 0;
    if meets(hi) {
        while hi > 1 && meets(hi / 2) {
            hi /= 2;
        }
        lo = hi / 2;
    } else {
        while !meets(hi) {
            if hi >= max {
                // Even the largest addressable filter misses the target.
                return Err(BuildError::TooLarge {
                    bits: u128::from(max) * u128::from(layout.bits_per_block()) + 1,
                });
            }
            lo = hi;
            hi = hi.saturating_mul(2).min(max);
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if meets(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// [`Layout::num_blocks_for_bits`].
pub(crate) fn blocks_for_bits(layout: Layout, bits: u64) -> Result<u64, BuildError> {
    if bits == 0 {
        return Err(BuildError::ZeroSize);
    }
    let blocks = bits.div_ceil(layout.bits_per_block());
    if blocks > layout.max_blocks() {
        return Err(BuildError::TooLarge {
            bits: u128::from(bits),
        });
    }
    Ok(blocks)
}

/// The answer to "which layout, and how many bytes, for `items` keys at false-positive rate
/// `fpr`?", for one layout ([`Sizing::new`]) or both ([`Sizing::all`], [`Sizing::smallest`]).
///
/// The 512-bit layout always needs at most as many bytes (give or take one 64-byte block): at
/// equal memory it has 12-31 % fewer false positives (8 to 16 bits per key). Which is faster
/// depends on the CPU: see the crate's benches.
///
/// `#[non_exhaustive]`: this crate computes sizings, and a later version may report more about
/// one; [`Sizing::new`] computes the sizing of one layout.
///
/// # Examples
/// ```
/// use txgate_bloom::{Layout, Sizing};
/// let [small, large] = Sizing::all(1_000_000, 0.001)?;
/// assert_eq!((small.layout, large.layout), (Layout::Block256, Layout::Block512));
/// assert!(large.bytes < small.bytes);
/// assert!(small.false_positive_rate <= 0.001 && large.false_positive_rate <= 0.001);
/// assert_eq!(Sizing::smallest(1_000_000, 0.001)?, large);
/// # Ok::<(), txgate_bloom::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Sizing {
    /// The layout.
    pub layout: Layout,
    /// Keys the filter is sized for.
    pub items: u64,
    /// Blocks: the fewest that meet the target ([`Layout::num_blocks_for`]).
    pub num_blocks: u64,
    /// Bytes of filter memory (`num_blocks * block bytes`; the serialized form adds a header
    /// and a checksum, see [`format`](crate::format)).
    pub bytes: u64,
    /// The rate the formula expects at `items` keys ([`Layout::false_positive_rate`]), at most
    /// the target.
    pub false_positive_rate: f64,
}

impl Sizing {
    /// The sizing of `layout` for `items` keys at false-positive rate `fpr`.
    ///
    /// # Errors
    /// As [`Layout::num_blocks_for`].
    pub fn new(layout: Layout, items: u64, fpr: f64) -> Result<Sizing, BuildError> {
        let num_blocks = layout.num_blocks_for(items, fpr)?;
        Ok(Sizing {
            layout,
            items,
            num_blocks,
            bytes: num_blocks * layout.block_bytes() as u64,
            false_positive_rate: layout.false_positive_rate(items, num_blocks),
        })
    }

    /// The sizings of both layouts, in [`Layout::ALL`] order.
    ///
    /// # Errors
    /// As [`Layout::num_blocks_for`].
    pub fn all(items: u64, fpr: f64) -> Result<[Sizing; 2], BuildError> {
        Ok([
            Sizing::new(Layout::Block256, items, fpr)?,
            Sizing::new(Layout::Block512, items, fpr)?,
        ])
    }

    /// The layout that needs the fewest bytes (the 256-bit one on a tie, as its queries do less
    /// vector work).
    ///
    /// # Errors
    /// As [`Layout::num_blocks_for`].
    pub fn smallest(items: u64, fpr: f64) -> Result<Sizing, BuildError> {
        let [small, large] = Sizing::all(items, fpr)?;
        Ok(if large.bytes < small.bytes {
            large
        } else {
            small
        })
    }

    /// Bits of filter memory per key (`8 * bytes / items`; infinite for zero items).
    pub fn bits_per_key(&self) -> f64 {
        8.0 * self.bytes as f64 / self.items as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same Poisson mixture summed naively from i = 0 with f64 pmf recurrences and `powi`:
    /// an independent evaluation for moderate loads.
    fn naive(word_bits: u32, items: u64, blocks: u64) -> f64 {
        let lambda = items as f64 / blocks as f64;
        let q = 1.0 - 1.0 / f64::from(word_bits);
        let mut pmf = (-lambda).exp();
        let mut total = 0.0;
        for i in 0..2000u32 {
            let f = (1.0 - q.powi(i as i32)).powi(8);
            total += pmf * f;
            pmf *= lambda / f64::from(i + 1);
        }
        total
    }

    #[test]
    fn formula_matches_naive_sum() {
        for layout in Layout::ALL {
            for (items, blocks) in [
                (1000, 10),
                (1 << 20, 40_960),
                (1 << 20, 32_768),
                (1 << 20, 20_480),
                (500, 1),
                (3, 7),
                (1, 1),
            ] {
                let a = layout.false_positive_rate(items, blocks);
                let b = naive(layout.word_bits(), items, blocks);
                assert!(
                    (a - b).abs() <= 1e-12 + b * 1e-9,
                    "{layout:?} {items} {blocks}: {a} vs {b}"
                );
            }
        }
    }

    /// The rates the layout docs quote: 1.26 % vs 1.05 % at 10 bits per key, 0.132 % vs
    /// 0.091 % at 16, 3.32 % vs 2.93 % at 8.
    #[test]
    fn quoted_rates() {
        let n = 1u64 << 20;
        let at = |layout: Layout, bits_per_key: u64| {
            layout.false_positive_rate(n, n * bits_per_key / layout.bits_per_block())
        };
        for (layout, bits_per_key, want, tolerance) in [
            (Layout::Block256, 10, 0.01265, 0.00005),
            (Layout::Block512, 10, 0.0105, 0.00005),
            (Layout::Block256, 16, 0.00132, 0.000005),
            (Layout::Block512, 16, 0.00091, 0.000005),
            (Layout::Block256, 8, 0.0332, 0.00005),
            (Layout::Block512, 8, 0.0293, 0.00005),
        ] {
            let got = at(layout, bits_per_key);
            assert!(
                (got - want).abs() <= tolerance,
                "{layout:?} {bits_per_key}: {got}"
            );
        }
        // At equal memory: at least 15 % fewer false positives from 10 bits per key on (17 % at
        // 10, 31 % at 16); 12 % at 8, where both blocks are crowded.
        for bits_per_key in [10, 12, 16, 20] {
            assert!(
                at(Layout::Block512, bits_per_key) <= 0.85 * at(Layout::Block256, bits_per_key)
            );
        }
        assert!(at(Layout::Block512, 8) <= 0.89 * at(Layout::Block256, 8));
    }

    #[test]
    fn ln_factorial_is_continuous_at_the_switch() {
        let exact: f64 = (2..=64u64).map(|i| (i as f64).ln()).sum();
        assert!((ln_factorial(64) - exact).abs() < 1e-10);
    }

    #[test]
    fn blocked_is_worse_than_classic() {
        // 10 bits per key, k = 8: classic (1 - e^(-0.8))^8.
        let classic = (1.0 - (-0.8f64).exp()).powi(8);
        let blocked = Layout::Block256.false_positive_rate(1 << 20, (10 << 20) / 256);
        assert!(blocked > classic * 1.2, "{blocked} vs {classic}");
        let blocked = Layout::Block512.false_positive_rate(1 << 20, (10 << 20) / 512);
        assert!(blocked > classic * 1.1, "{blocked} vs {classic}");
    }

    #[test]
    fn sizing_is_minimal() {
        for layout in Layout::ALL {
            for (items, fpr) in [
                (1u64, 0.5),
                (1, 1e-9),
                (100, 0.01),
                (1000, 0.001),
                (1_000_000, 0.001),
                (1 << 20, 0.0001),
                (1 << 40, 0.3),
            ] {
                let blocks = layout.num_blocks_for(items, fpr).unwrap();
                assert!(layout.false_positive_rate(items, blocks) <= fpr);
                assert!(blocks == 1 || layout.false_positive_rate(items, blocks - 1) > fpr);
            }
        }
    }

    #[test]
    fn sizing_compares_layouts() {
        for (items, fpr) in [
            (1u64, 0.1),
            (1000, 0.001),
            (1 << 20, 0.01),
            (1 << 20, 0.0001),
        ] {
            let [small, large] = Sizing::all(items, fpr).unwrap();
            assert!(large.bytes <= small.bytes + 64, "{items} {fpr}");
            for s in [small, large] {
                assert_eq!(s.items, items);
                assert_eq!(s.bytes, s.num_blocks * s.layout.block_bytes() as u64);
                assert_eq!(s.num_blocks, s.layout.num_blocks_for(items, fpr).unwrap());
                assert!(s.false_positive_rate <= fpr);
            }
            let best = Sizing::smallest(items, fpr).unwrap();
            assert_eq!(best.bytes, small.bytes.min(large.bytes));
        }
        // One key at 10 %: one block of either layout; the tie goes to the 256-bit one.
        assert_eq!(Sizing::smallest(1, 0.1).unwrap().layout, Layout::Block256);
        // Memory at equal rate: 10.5 vs 10.1 bits per key at 1 %, 26.3 vs 23.6 at 0.01 %.
        let [small, large] = Sizing::all(1 << 20, 0.01).unwrap();
        assert!(large.bits_per_key() < 0.97 * small.bits_per_key());
        let [small, large] = Sizing::all(1 << 20, 0.0001).unwrap();
        assert!(large.bits_per_key() < 0.92 * small.bits_per_key());
    }

    #[test]
    fn sizing_rejects_bad_input() {
        for layout in Layout::ALL {
            for fpr in [0.0, 1.0, -0.5, 2.0, f64::NAN, f64::INFINITY] {
                assert!(matches!(
                    layout.num_blocks_for(10, fpr),
                    Err(BuildError::InvalidFalsePositiveRate(_))
                ));
                assert!(Sizing::new(layout, 10, fpr).is_err());
            }
            assert!(matches!(
                layout.num_blocks_for(u64::MAX, 1e-300),
                Err(BuildError::TooLarge { .. })
            ));
            assert_eq!(layout.num_blocks_for(0, 0.01).unwrap(), 1);
            assert!(matches!(
                layout.num_blocks_for_bits(0),
                Err(BuildError::ZeroSize)
            ));
            assert_eq!(layout.num_blocks_for_bits(1).unwrap(), 1);
        }
        assert_eq!(Layout::Block256.num_blocks_for_bits(257).unwrap(), 2);
        assert_eq!(
            Layout::Block256.num_blocks_for_bits(1 << 33).unwrap(),
            1 << 25
        );
        assert_eq!(
            Layout::Block256.num_blocks_for_bits(u64::MAX).unwrap(),
            1 << 56
        );
        assert_eq!(Layout::Block512.num_blocks_for_bits(513).unwrap(), 2);
        assert_eq!(
            Layout::Block512.num_blocks_for_bits(u64::MAX).unwrap(),
            1 << 55
        );
    }
}
