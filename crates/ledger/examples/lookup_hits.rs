//! Lookup latency of hits in rounds of the bloom window against hits in older rounds (archival:
//! every block kept), and of misses, one `lookup_txid` at a time: the rows behind the claim
//! "a hit in any kept round is as cheap as one in the window".
//!
//! A ledger in a temporary directory gets `rounds` synthetic rounds of `txns` payments each
//! (default 2,000 rounds of 1,000 txns, the built-in replay workload's shape); the window is the
//! latest MaxTxnLife + 1 = 1,001 rounds (go-algorand's MaxTxnLife), so with the defaults rounds
//! 0..=998 are older than the window. Then `samples` hits of each kind (a random txn of a random
//! round of the kind) and as many misses (random txids in random window rounds) are timed,
//! interleaved (hit in window, hit outside, miss) so that machine noise hits all three alike.
//! Prints p50, p90, p99, max and mean per kind, in microseconds, and checks every answer.
//!
//! ```text
//! cargo run --release -p txgate-ledger --example lookup_hits -- [rounds] [txns] [samples]
//! ```

use std::time::Instant;

use txgate_algorand::synth::{SynthTxn, encode_block};
use txgate_ledger::store::{Ledger, LedgerConfig, TxRecord};
use txgate_ledger::{Round, Txid};
use txgate_testkit::rng::SplitMix64;

const GEN: &str = "bench-v1";
const GH: [u8; 32] = [0x42; 32];

fn round_txns(round: Round, txns: usize) -> Vec<SynthTxn> {
    (0..txns)
        .map(|i| SynthTxn {
            note: format!("bench {round}/{i}").into_bytes(),
            ..SynthTxn::payment([9; 32], round.max(1), round + 1000)
        })
        .collect()
}

/// Percentiles (nearest rank) and mean of `ns`, in microseconds.
fn summary(name: &str, mut ns: Vec<u64>) {
    ns.sort_unstable();
    let at = |q: f64| ns[((ns.len() as f64 * q).ceil() as usize).clamp(1, ns.len()) - 1] as f64;
    let mean = ns.iter().sum::<u64>() as f64 / ns.len() as f64;
    println!(
        "{name:<24} {:>6} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
        ns.len(),
        at(0.50) / 1e3,
        at(0.90) / 1e3,
        at(0.99) / 1e3,
        ns[ns.len() - 1] as f64 / 1e3,
        mean / 1e3,
    );
}

fn main() {
    let arg = |i: usize, default: u64| {
        std::env::args()
            .nth(i)
            .map_or(default, |s| s.parse().expect("arguments: numbers"))
    };
    let rounds = arg(1, 2000);
    let txns = arg(2, 1000) as usize;
    let samples = arg(3, 20_000) as usize;
    assert!(rounds > 0 && txns > 0, "at least one round of one txn");

    let dir = tempfile::tempdir().unwrap();
    let config = LedgerConfig::default();
    let life = config.max_txn_life;
    let ledger = Ledger::open(dir.path(), config).unwrap();
    let started = Instant::now();
    // Every txid, by round (the answers to check).
    let mut ids: Vec<Vec<Txid>> = Vec::with_capacity(rounds as usize);
    for round in 0..rounds {
        let block = round_txns(round, txns);
        ids.push(block.iter().map(|t| t.txid(GEN, &GH)).collect());
        let raw = encode_block(round, GEN, &GH, 1_700_000_000 + round as i64, &block);
        ledger.add_block(&raw).unwrap();
    }
    let latest = rounds - 1;
    let window_start = latest.saturating_sub(life);
    println!(
        "{rounds} rounds of {txns} txns in {:.1} s; window {window_start}..={latest}, \
         older rounds 0..{window_start}",
        started.elapsed().as_secs_f64()
    );

    let mut rng = SplitMix64(21);
    let mut pick = |lo: Round, hi: Round| lo + rng.next_u64() % (hi - lo + 1);
    let (mut inside, mut outside, mut misses) = (Vec::new(), Vec::new(), Vec::new());
    let time = |txid: &Txid, round: Round| {
        let t = Instant::now();
        let found = ledger.lookup_txid(txid, round).unwrap();
        (t.elapsed().as_nanos() as u64, found)
    };
    for _ in 0..samples {
        let round = pick(window_start, latest);
        let index = pick(0, txns as u64 - 1) as u32;
        let (ns, found) = time(&ids[round as usize][index as usize], round);
        assert_eq!(found, Some(TxRecord { round, index }));
        inside.push(ns);
        if window_start > 0 {
            let round = pick(0, window_start - 1);
            let index = pick(0, txns as u64 - 1) as u32;
            let (ns, found) = time(&ids[round as usize][index as usize], round);
            assert_eq!(found, Some(TxRecord { round, index }));
            outside.push(ns);
        }
        let round = pick(window_start, latest);
        let mut id = [0u8; 32];
        for chunk in id.chunks_mut(8) {
            chunk.copy_from_slice(&pick(0, u64::MAX - 1).to_le_bytes());
        }
        let (ns, found) = time(&Txid(id), round);
        assert_eq!(found, None);
        misses.push(ns);
    }
    println!(
        "{:<24} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "lookup_txid (us)", "n", "p50", "p90", "p99", "max", "mean"
    );
    summary("hit, in the window", inside);
    if !outside.is_empty() {
        summary("hit, older round", outside);
    }
    summary("miss, in the window", misses);
}
