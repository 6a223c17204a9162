//! Allocations of `Ledger::add_block`, counted by a per-thread counting global allocator: with
//! blooms and the txid index on, a round of payments costs about the same allocations whatever
//! its number of transactions (decoding allocates nothing per transaction without apps, the
//! bloom and the index row are one buffer each, redb writes the block as one value, a larger
//! one with a few more allocations of its own), and an app call adds only its app list.
#![cfg(not(loom))]

use txgate_algorand::synth::{SynthTxn, encode_block};
use txgate_ledger::Round;
use txgate_ledger::store::{Ledger, LedgerConfig};
use txgate_testkit::alloc::{Counting, allocations_during};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Round `round` of `n` transactions: payments, or app calls to one app.
fn block(round: Round, n: usize, apps: bool) -> Vec<u8> {
    let txns: Vec<SynthTxn> = (0..n as u64)
        .map(|i| {
            let mut t = if apps {
                SynthTxn::app_call([7; 32], round, round + 1000, vec![1000 + i])
            } else {
                SynthTxn::payment([7; 32], round, round + 1000)
            };
            t.note = format!("r{round:04}n{i:04}").into_bytes();
            t
        })
        .collect();
    encode_block(round, "alloc-v1", &[0x11; 32], 1_700_000_000, &txns)
}

/// Allocations of adding rounds 1..=8 of `n` txns each to a ledger holding round 0, the
/// fewest of any round (the first rounds of a new file grow redb's own structures). The payset
/// is decoded on the calling thread alone: the counter counts that thread's allocations, and a
/// parallel decode has part of the entries decoded on a helper thread.
fn fewest(n: usize, apps: bool) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let config = LedgerConfig::default().with_parallel_decode(false);
    let ledger = Ledger::open(dir.path(), config).unwrap();
    ledger.add_block(&block(0, n, apps)).unwrap();
    (1..=8)
        .map(|round| {
            let raw = block(round, n, apps);
            allocations_during(|| {
                ledger.add_block(&raw).unwrap();
            })
        })
        .min()
        .unwrap()
}

#[test]
fn add_block_allocates_per_round_not_per_payment() {
    for (apps, per_txn) in [(false, 0), (true, 1)] {
        let (small, large) = (fewest(10, apps), fewest(1000, apps));
        // 990 more transactions: their app lists, and a few more of redb's (a larger value
        // takes a larger page) — not one per transaction.
        let extra = large - small;
        assert!(
            (990 * per_txn..990 * per_txn + 40).contains(&extra),
            "apps {apps}: {small} allocations for 10 txns, {large} for 1000"
        );
    }
}
