//! [`SplitMix64`]: the one reproducible generator of well-mixed test and bench inputs.
//!
//! SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA
//! 2014): the state advances by the golden-ratio increment `0x9e37_79b9_7f4a_7c15` and each output
//! is the state through [`mix`], the finalizer of that paper (the variant with the constants
//! `0xbf58_476d_1ce4_e5b9` and `0x94d0_49bb_1331_11eb`). Every output is a bijection of its state,
//! so a stream has no repeats within 2^64 draws.

/// The golden-ratio increment of the state.
pub const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// The SplitMix64 finalizer: a bijection of `u64` whose outputs pass as uniform.
#[inline]
pub const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A SplitMix64 stream. The field is the state; `SplitMix64(seed)` starts a stream, and the first
/// output is `mix(seed + GOLDEN_GAMMA)`.
///
/// # Examples
/// ```
/// use txgate_testkit::rng::{GOLDEN_GAMMA, SplitMix64, mix};
/// let mut rng = SplitMix64(7);
/// assert_eq!(rng.next_u64(), mix(7 + GOLDEN_GAMMA));
/// assert!(rng.below(10) < 10);
/// // The i-th output of the stream from 0, without the stream.
/// assert_eq!(SplitMix64(0).nth_output(2), { let mut r = SplitMix64(0); r.next_u64(); r.next_u64() });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next output.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA);
        mix(self.0)
    }

    /// The next output reduced to `0..n` by `%` (a slight bias for `n` that is not a power of
    /// two, which reproducible tests accept).
    ///
    /// # Panics
    /// Panics if `n == 0`.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Output `i` (from 1) of this stream, without advancing it: `mix(state + i * GOLDEN_GAMMA)`.
    #[inline]
    pub const fn nth_output(&self, i: u64) -> u64 {
        mix(self.0.wrapping_add(i.wrapping_mul(GOLDEN_GAMMA)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_outputs() {
        // The first outputs of Vigna's reference `splitmix64.c` (prng.di.unimi.it) from state 0.
        let mut rng = SplitMix64(0);
        let outputs = [rng.next_u64(), rng.next_u64(), rng.next_u64()];
        assert_eq!(
            outputs,
            [
                0xe220_a839_7b1d_cdaf,
                0x6e78_9e6a_a1b9_65f4,
                0x06c4_5d18_8009_454f
            ]
        );
        assert_eq!(SplitMix64(0).nth_output(3), outputs[2]);
        assert_eq!(rng, SplitMix64(3u64.wrapping_mul(GOLDEN_GAMMA)));
    }
}
