//! What block verification adds to `add_block`: two ledgers in temporary directories are fed the
//! same 1,000-txn synthetic rounds, one through `add_decoded_block` (which verifies) and one
//! through `add_verified_block` with `VerifiedBlock::assume_verified` (which does not), taking
//! turns at going first. `Block::verify` and `decode_block` are also timed alone. Run with flat
//! blocks (a header `txn` over the payset bytes, protocols before v26), then blocks of protocol
//! v30 (a Merkle `txn`), v34 (and `txn256`) and v42 (and `txn512`).
//!
//! ```text
//! cargo run --profile test -p txgate-ledger --example verify_cost -- [rounds, default 200]
//! ```

use std::time::Instant;

use txgate_algorand::codec::{Expected, decode_block};
use txgate_algorand::synth::{SynthTxn, encode_block, encode_block_with_protocol};
use txgate_ledger::Round;
use txgate_ledger::store::{Ledger, LedgerConfig, VerifiedBlock};

const GEN: &str = "bench-v1";
const GH: [u8; 32] = [0x42; 32];
const TXNS: usize = 1000;

fn round_block(round: Round, version: Option<u32>) -> Vec<u8> {
    let txns: Vec<SynthTxn> = (0..TXNS)
        .map(|i| SynthTxn {
            note: format!("bench {round}/{i}").into_bytes(),
            ..SynthTxn::payment([9; 32], round.max(1), round + 1000)
        })
        .collect();
    match version {
        Some(v) => encode_block_with_protocol(round, GEN, &GH, 1_700_000_000, &txns, v),
        None => encode_block(round, GEN, &GH, 1_700_000_000, &txns),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run(rounds: Round, version: Option<u32>) {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let ledgers: Vec<Ledger> = dirs
        .iter()
        .map(|d| Ledger::open(d.path(), LedgerConfig::default()).unwrap())
        .collect();
    let warm = 10;
    // Per round: seconds of (decode, verify, add with verification, add without).
    let mut t: Vec<[f64; 4]> = Vec::new();
    for round in 1..=warm + rounds {
        let raw = round_block(round, version);
        let s = Instant::now();
        let block = decode_block(&raw).unwrap();
        let decode = s.elapsed().as_secs_f64();
        let s = Instant::now();
        block.verify(&raw, &Expected::default()).unwrap();
        let verify = s.elapsed().as_secs_f64();
        let mut add = [0f64; 2];
        for k in 0..2 {
            let i = (k + round as usize) % 2;
            let s = Instant::now();
            if i == 0 {
                ledgers[0].add_decoded_block(&block, &raw).unwrap();
            } else {
                let v = VerifiedBlock::assume_verified(&block, &raw);
                ledgers[1].add_verified_block(&v).unwrap();
            }
            add[i] = s.elapsed().as_secs_f64();
        }
        if round > warm {
            t.push([decode, verify, add[0], add[1]]);
        }
    }
    let col = |c: usize| t.iter().map(|r| r[c]).collect::<Vec<_>>();
    let total = |c: usize| col(c).iter().sum::<f64>();
    let us_per_txn = |c: usize| median(col(c)) * 1e6 / TXNS as f64;
    println!(
        "{} blocks, {rounds} rounds of {TXNS} txns: median per txn: decode {:.3} us, verify {:.3} us, \
         add_block with verification {:.3} us, without {:.3} us",
        match version {
            None => "flat",
            Some(30) => "v30 (Merkle)",
            Some(34) => "v34 (Merkle + txn256)",
            _ => "v42 (Merkle + txn256 + txn512)",
        },
        us_per_txn(0),
        us_per_txn(1),
        us_per_txn(2),
        us_per_txn(3),
    );
    println!(
        "  verify / decode: {:.3}; add_block with / without verification: median of ratios {:.4}, \
         ratio of totals {:.4}; verify / add_block without: {:.4}",
        total(1) / total(0),
        median(t.iter().map(|r| r[2] / r[3]).collect()),
        total(2) / total(3),
        total(1) / total(3),
    );
}

fn main() {
    let rounds: Round = std::env::args()
        .nth(1)
        .map_or(200, |s| s.parse().expect("rounds: a number"));
    for version in [None, Some(30), Some(34), Some(42)] {
        run(rounds, version);
    }
}
