//! 1,000-txn rounds of the CLI's built-in workload's shape (`txgate replay` without `--blocks`;
//! see `crates/cli/src/workload.rs`): 85 % app calls (one app, a foreign app one time in ten),
//! groups of 2 to 4 with probability 0.15, 5,000 senders, first valid the round minus 0 to 9, a
//! note `r{round}i{index}`; app ids uniform in 1,000..11,000 instead of the CLI's Zipf law (the
//! same msgpack widths). About 181 bytes of block per txn, a flat payset commitment.
//!
//! Shared by `crates/ledger/examples/add_block_split.rs` and `benches/benches/ledger_iai.rs`
//! (included by path; it lives in the ledger crate so that the published example has it), so
//! both measure the same blocks.

use txgate_algorand::Round;
use txgate_algorand::synth::{SynthTxn, encode_block};

/// The network of the blocks.
pub(crate) const GEN: &str = "bench-v1";
/// Its genesis hash.
pub(crate) const GH: [u8; 32] = [0x42; 32];
/// Transactions per round.
pub(crate) const TXNS: usize = 1000;

/// SplitMix64 (Steele, Lea and Flood 2014): the workload's deterministic draws.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// Round `round` of the workload: the block's msgpack bytes (`{block, cert}`).
pub(crate) fn workload_block(round: Round) -> Vec<u8> {
    let mut rng = SplitMix(round.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 1);
    let mut txns: Vec<SynthTxn> = Vec::with_capacity(TXNS);
    while txns.len() < TXNS {
        let size = if rng.chance(0.15) {
            (2 + rng.next() % 3).min((TXNS - txns.len()) as u64)
        } else {
            1
        };
        let group = (size > 1).then(|| {
            let mut id = [0x47; 32];
            id[..8].copy_from_slice(&round.to_le_bytes());
            id[8..16].copy_from_slice(&(txns.len() as u64).to_le_bytes());
            id
        });
        for _ in 0..size {
            let index = txns.len();
            let mut sender = [0xA5; 32];
            sender[..4].copy_from_slice(&((rng.next() % 5000) as u32).to_le_bytes());
            let first_valid = round.saturating_sub(rng.next() % 10).max(1);
            let mut txn = if rng.chance(0.85) {
                let mut apps = vec![1000 + rng.next() % 10_000];
                if rng.chance(0.1) {
                    apps.push(1000 + rng.next() % 10_000);
                }
                SynthTxn::app_call(sender, first_valid, first_valid + 1000, apps)
            } else {
                SynthTxn::payment(sender, first_valid, first_valid + 1000)
            };
            txn.group = group;
            txn.note = format!("r{round}i{index}").into_bytes();
            txns.push(txn);
        }
    }
    encode_block(round, GEN, &GH, 1_700_000_000 + 3 * round as i64, &txns)
}
