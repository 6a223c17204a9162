//! The main job until the txgate CLI exists: per-round bloom filters over real Algorand txids,
//! then the false-positive rate of txgate-bloom measured against the blocked-filter formula.
//!
//! ```text
//! cargo run --release -p txgate-tests --example bloom_rounds
//! ```
//! Reads `../shared/data` (or `$TXGATE_DATA`); see `shared/data/SOURCES.md`.

use std::time::Instant;

use txgate_bloom::{
    Backend, Block256, Block512, BlockLayout, BlockedBloom, BloomBuilder, Bytes, Filter, Hashed,
};
use txgate_testkit::real_round_txids;
use txgate_testkit::rng::SplitMix64;

fn main() {
    println!("txgate-bloom: per-round txid filters on real Algorand rounds\n");
    if txgate_testkit::data_dir().is_dir() {
        real_rounds(&real_round_txids());
    } else {
        println!("(real data missing: skipped the per-round part)\n");
    }
    fpr_table();
}

fn real_rounds(rounds: &[txgate_testkit::RoundTxids]) {
    let fpr = 0.001;
    let started = Instant::now();
    let filters: Vec<BlockedBloom> = rounds
        .iter()
        .map(|r| {
            let mut f = BloomBuilder::with_false_positive_rate(r.txids.len() as u64, fpr)
                .build()
                .expect("small filter");
            for t in &r.txids {
                f.insert(Bytes(t));
            }
            f
        })
        .collect();
    let built = started.elapsed();
    let (mut hits, mut queries, mut false_positives) = (0u64, 0u64, 0u64);
    for (i, r) in rounds.iter().enumerate() {
        for t in &r.txids {
            for (j, f) in filters.iter().enumerate() {
                let present = f.contains(Bytes(t));
                if i == j {
                    hits += u64::from(present);
                } else {
                    queries += 1;
                    false_positives += u64::from(present);
                }
            }
        }
    }
    let txids: usize = rounds.iter().map(|r| r.txids.len()).sum();
    let bytes: u64 = filters.iter().map(BlockedBloom::memory_bytes).sum();
    println!(
        "rounds                 {:>10}  ({} networks)",
        rounds.len(),
        {
            let mut n: Vec<&str> = rounds.iter().map(|r| r.network.as_str()).collect();
            n.sort_unstable();
            n.dedup();
            n.len()
        }
    );
    println!("txids                  {txids:>10}");
    println!(
        "filter memory          {bytes:>10} bytes  (built in {built:?}; a round of a few txids still takes a whole 256-bit block)"
    );
    println!("found in own round     {hits:>10} / {txids}");
    println!(
        "other-round queries    {queries:>10}  false positives {false_positives} ({:.4} %, configured {:.4} %)\n",
        100.0 * false_positives as f64 / queries as f64,
        100.0 * fpr
    );
}

fn fpr_table() {
    const KEYS: u64 = 1 << 20;
    const PROBES: u64 = 10_000_000;
    println!(
        "false-positive rate, {KEYS} keys, {PROBES} probes (fixed seeds), measured vs Putze et al. formula"
    );
    println!(
        "{:<8} {:<8} {:<9} {:<7} {:>12} {:>12} {:>9}",
        "bits/key", "layout", "variant", "backend", "measured %", "formula %", "ratio"
    );
    for bits_per_key in [8u64, 10, 16] {
        fpr_rows::<Block256>(KEYS, PROBES, bits_per_key);
        fpr_rows::<Block512>(KEYS, PROBES, bits_per_key);
    }
}

/// The table's rows of layout `B` at `bits_per_key`: plain and atomic, every backend.
fn fpr_rows<B: BlockLayout>(keys: u64, probes: u64, bits_per_key: u64) {
    let blocks = keys * bits_per_key / B::LAYOUT.bits_per_block();
    let expected = B::LAYOUT.false_positive_rate(keys, blocks);
    let layout = format!("{}-bit", B::LAYOUT.bits_per_block());
    for backend in Backend::available() {
        let builder = BloomBuilder::with_num_blocks(blocks)
            .seed(1)
            .backend(backend)
            .layout::<B>();
        let mut plain = builder.build().expect("filter");
        let atomic = builder.build_atomic().expect("filter");
        let mut s = SplitMix64(0xfeed);
        for _ in 0..keys {
            let h = s.next_u64();
            plain.insert(Hashed(h));
            atomic.insert(Hashed(h));
        }
        let plain_contains = |h| plain.contains(Hashed(h));
        let atomic_contains = |h| atomic.contains(Hashed(h));
        let variants: [(&str, &dyn Fn(u64) -> bool); 2] =
            [("plain", &plain_contains), ("atomic", &atomic_contains)];
        for (variant, contains) in variants {
            let mut s = SplitMix64(0xbeef);
            let hits = (0..probes).filter(|_| contains(s.next_u64())).count();
            let got = hits as f64 / probes as f64;
            println!(
                "{bits_per_key:<8} {layout:<8} {variant:<9} {:<7} {:>12.4} {:>12.4} {:>9.3}",
                format!("{backend:?}"),
                100.0 * got,
                100.0 * expected,
                got / expected
            );
        }
    }
}
