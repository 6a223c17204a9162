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
//! where `f(i)` is the false-positive rate of one block that holds `i` keys. In this crate's
//! split-block layout each key sets one bit in each of the block's 8 words of 32 bits, so a
//! word's bit is set after `i` keys with probability `1 - (1 - 1/32)^i` and
//! `f(i) = (1 - (1 - 1/32)^i)^8`. The classic formula undersizes blocked filters: at 10 bits per
//! key it promises 0.85 % (k = 8) where this layout gives 1.26 %.
//!
//! The Poisson load is the many-blocks limit of the true binomial load (`n` keys thrown into `B`
//! blocks); it is accurate for filters of more than a few blocks, which the tests confirm, and
//! conservative (too high) for filters of one or two blocks.

use crate::block::{BITS_PER_BLOCK, BITS_SET_PER_KEY, BLOCK_BYTES};
use crate::error::BuildError;

/// The most blocks a filter may have: its bytes must fit an `isize`.
pub const MAX_BLOCKS: u64 = (isize::MAX as u64) / BLOCK_BYTES as u64;

/// The false-positive rate of one block that holds `load` keys: `(1 - (1 - 1/32)^load)^8`.
fn block_false_positive_rate(load: f64) -> f64 {
    let word_bit_clear = (1.0 - 1.0 / 32.0f64).powf(load);
    (1.0 - word_bit_clear).powi(BITS_SET_PER_KEY as i32)
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

/// Expected false-positive rate of a filter of `num_blocks` blocks that holds `items` distinct
/// keys, by the blocked-filter formula of Putze, Sanders and Singler (see the module docs).
///
/// Returns 0 for an empty filter and 1 for `num_blocks == 0`. The Poisson sum is evaluated from
/// its mode outwards in log space (no underflow at any load) until the terms drop below 1e-17 of
/// the total.
///
/// # Examples
/// ```
/// use txgate_bloom::false_positive_rate;
/// // 2^20 keys at 10 bits per key: 40,960 blocks of 256 bits.
/// let fpr = false_positive_rate(1 << 20, 40_960);
/// assert!(fpr > 0.0125 && fpr < 0.0128, "{fpr}");
/// ```
pub fn false_positive_rate(items: u64, num_blocks: u64) -> f64 {
    if items == 0 {
        return 0.0;
    }
    if num_blocks == 0 {
        return 1.0;
    }
    let lambda = items as f64 / num_blocks as f64;
    if lambda >= 10_000.0 {
        // Every load within 12 standard deviations of the mean is above 8,800 keys per block,
        // where f(load) = (1 - e^(-279))^8 rounds to 1.0; skip the O(sqrt λ) sum.
        return 1.0;
    }
    let ln_lambda = lambda.ln();
    let mode = lambda.floor() as u64;
    let ln_pmf_mode = -lambda + mode as f64 * ln_lambda - ln_factorial(mode);
    let mut total = 0.0;
    // Upwards from the mode: pmf(i + 1) = pmf(i) * λ / (i + 1).
    let mut ln_pmf = ln_pmf_mode;
    let mut i = mode;
    loop {
        let term = ln_pmf.exp() * block_false_positive_rate(i as f64);
        total += term;
        if i > mode && term <= total * 1e-17 {
            break;
        }
        i += 1;
        ln_pmf += ln_lambda - (i as f64).ln();
    }
    // Downwards from the mode: pmf(i - 1) = pmf(i) * i / λ.
    let mut ln_pmf = ln_pmf_mode;
    let mut i = mode;
    while i > 0 {
        ln_pmf += (i as f64).ln() - ln_lambda;
        i -= 1;
        let term = ln_pmf.exp() * block_false_positive_rate(i as f64);
        total += term;
        if term <= total * 1e-17 {
            break;
        }
    }
    total.min(1.0)
}

/// The fewest blocks that keep `items` keys at or below false-positive rate `fpr`, by
/// [`false_positive_rate`] (a binary search: the rate falls as blocks are added).
///
/// `items == 0` gives one block.
///
/// # Errors
/// [`BuildError::InvalidFalsePositiveRate`] unless `0 < fpr < 1`;
/// [`BuildError::TooLarge`] when more than [`MAX_BLOCKS`] blocks would be needed.
///
/// # Examples
/// ```
/// use txgate_bloom::{false_positive_rate, num_blocks_for};
/// let blocks = num_blocks_for(1_000_000, 0.01).unwrap();
/// assert!(false_positive_rate(1_000_000, blocks) <= 0.01);
/// assert!(false_positive_rate(1_000_000, blocks - 1) > 0.01);
/// ```
pub fn num_blocks_for(items: u64, fpr: f64) -> Result<u64, BuildError> {
    if !(fpr > 0.0 && fpr < 1.0) {
        return Err(BuildError::InvalidFalsePositiveRate(fpr));
    }
    if items == 0 {
        return Ok(1);
    }
    // Find an upper bound by doubling, then the least sufficient count by bisection.
    let mut hi = items.div_ceil(32).clamp(1, MAX_BLOCKS);
    while false_positive_rate(items, hi) > fpr {
        if hi >= MAX_BLOCKS {
            // Even the largest addressable filter misses the target.
            return Err(BuildError::TooLarge {
                bits: u128::from(MAX_BLOCKS) * u128::from(BITS_PER_BLOCK) + 1,
            });
        }
        hi = hi.saturating_mul(2).min(MAX_BLOCKS);
    }
    let mut lo = 0; // invariant: fpr(lo) > target (or lo == 0), fpr(hi) <= target
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if false_positive_rate(items, mid) <= fpr {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// The blocks that hold `bits` bits, rounded up to whole blocks of 256 bits.
///
/// # Errors
/// [`BuildError::ZeroSize`] for `bits == 0`; [`BuildError::TooLarge`] past [`MAX_BLOCKS`].
pub fn num_blocks_for_bits(bits: u64) -> Result<u64, BuildError> {
    if bits == 0 {
        return Err(BuildError::ZeroSize);
    }
    let blocks = bits.div_ceil(BITS_PER_BLOCK);
    if blocks > MAX_BLOCKS {
        return Err(BuildError::TooLarge {
            bits: u128::from(bits),
        });
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same Poisson mixture summed naively from i = 0 with f64 pmf recurrences: an
    /// independent evaluation for moderate loads.
    fn naive(items: u64, blocks: u64) -> f64 {
        let lambda = items as f64 / blocks as f64;
        let mut pmf = (-lambda).exp();
        let mut total = 0.0;
        for i in 0..2000u32 {
            let f = (1.0 - (31.0f64 / 32.0).powi(i as i32)).powi(8);
            total += pmf * f;
            pmf *= lambda / f64::from(i + 1);
        }
        total
    }

    #[test]
    fn formula_matches_naive_sum() {
        for (items, blocks) in [
            (1000, 10),
            (1 << 20, 40_960),
            (1 << 20, 32_768),
            (500, 1),
            (3, 7),
        ] {
            let a = false_positive_rate(items, blocks);
            let b = naive(items, blocks);
            assert!(
                (a - b).abs() <= 1e-12 + b * 1e-9,
                "{items} {blocks}: {a} vs {b}"
            );
        }
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
        let blocked = false_positive_rate(1 << 20, (10 << 20) / 256);
        assert!(blocked > classic * 1.2, "{blocked} vs {classic}");
    }

    #[test]
    fn sizing_is_minimal() {
        for (items, fpr) in [
            (1u64, 0.5),
            (100, 0.01),
            (1_000_000, 0.001),
            (1 << 20, 0.0001),
        ] {
            let blocks = num_blocks_for(items, fpr).unwrap();
            assert!(false_positive_rate(items, blocks) <= fpr);
            assert!(blocks == 1 || false_positive_rate(items, blocks - 1) > fpr);
        }
    }

    #[test]
    fn sizing_rejects_bad_input() {
        for fpr in [0.0, 1.0, -0.5, 2.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                num_blocks_for(10, fpr),
                Err(BuildError::InvalidFalsePositiveRate(_))
            ));
        }
        assert!(matches!(
            num_blocks_for(u64::MAX, 1e-300),
            Err(BuildError::TooLarge { .. })
        ));
        assert_eq!(num_blocks_for(0, 0.01).unwrap(), 1);
        assert!(matches!(num_blocks_for_bits(0), Err(BuildError::ZeroSize)));
        assert_eq!(num_blocks_for_bits(1).unwrap(), 1);
        assert_eq!(num_blocks_for_bits(257).unwrap(), 2);
        assert_eq!(num_blocks_for_bits(1 << 33).unwrap(), 1 << 25);
        assert_eq!(num_blocks_for_bits(u64::MAX).unwrap(), 1 << 56);
    }
}
