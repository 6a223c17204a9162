//! Allocations of decoding and verifying a block, counted by a per-thread counting global
//! allocator: a transaction of one of go-algorand's types costs none of its own but the list of
//! its apps (one allocation when it calls apps, a second when it names foreign apps, which are
//! gathered before the distinct list is built); the rest is per block (the payset's vectors, the
//! completion values, the hash buffer), whatever the block's size.

use txgate_algorand::codec::{Expected, decode_block, decode_for_verify};
use txgate_algorand::synth::{SynthTxn, encode_block};
use txgate_testkit::alloc::{Counting, allocations_during};

#[global_allocator]
static GLOBAL: Counting = Counting;

const GEN: &str = "alloc-v1";
const GH: [u8; 32] = [0x11; 32];

/// A block of `n` transactions of `shape`: 0 payments, 1 app calls to one app, 2 app calls
/// naming a foreign app too, 3 transactions of a type go-algorand does not have.
fn block(n: usize, shape: u8) -> Vec<u8> {
    let txns: Vec<SynthTxn> = (0..n as u64)
        .map(|i| {
            let sender = [7; 32];
            let mut t = match shape {
                0 => SynthTxn::payment(sender, 10, 1010),
                1 => SynthTxn::app_call(sender, 10, 1010, vec![1000 + i]),
                2 => SynthTxn::app_call(sender, 10, 1010, vec![1000 + i, 5]),
                _ => SynthTxn {
                    tx_type: b"custom".to_vec(),
                    ..SynthTxn::payment(sender, 10, 1010)
                },
            };
            t.note = format!("n{i:04}").into_bytes();
            t
        })
        .collect();
    encode_block(3, GEN, &GH, 1_700_000_000, &txns)
}

/// Allocations of `decode_block` and of `decode_for_verify` with `verify`, for `raw`.
fn allocations(raw: &[u8]) -> (u64, u64) {
    let decode = allocations_during(|| drop(std::hint::black_box(decode_block(raw).unwrap())));
    let verified = allocations_during(|| {
        let decoded = decode_for_verify(raw).unwrap();
        decoded.verify(&Expected::round(3)).unwrap();
        drop(std::hint::black_box(decoded.into_block()));
    });
    (decode, verified)
}

#[test]
fn a_transaction_allocates_only_its_app_list() {
    // Per transaction: (shape, allocations).
    for (shape, per_txn) in [(0u8, 0u64), (1, 1), (2, 2), (3, 1)] {
        let (small, large) = (
            allocations(&block(10, shape)),
            allocations(&block(1000, shape)),
        );
        for (what, s, l) in [("decode", small.0, large.0), ("verify", small.1, large.1)] {
            assert_eq!(
                l - s,
                990 * per_txn,
                "shape {shape}, {what}: {s} allocations for 10 txns, {l} for 1000"
            );
            // The per-block part: a handful, not a growth with the block.
            assert!(
                s - 10 * per_txn <= 16,
                "shape {shape}, {what}: {s} for 10 txns"
            );
        }
    }
}
