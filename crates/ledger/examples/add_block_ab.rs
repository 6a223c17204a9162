//! A/B probe of `add_block` cost with blooms enabled vs disabled: four ledgers in temporary
//! directories (on, off, off, on, so file placement favours neither mode) are fed the same
//! 1,000-txn synthetic rounds, rotating which one goes first each round, so machine noise hits
//! both modes alike. Prints the median of per-round ratios
//! (blooms / baseline) and the ratio of totals.
//!
//! ```text
//! cargo run --release -p txgate-ledger --example add_block_ab -- [rounds, default 300]
//! ```

use std::time::Instant;

use txgate_ledger::Round;
use txgate_ledger::store::{Ledger, LedgerConfig};
use txgate_ledger::synth::{SynthTxn, encode_block};

const GEN: &str = "bench-v1";
const GH: [u8; 32] = [0x42; 32];

fn round_block(round: Round) -> Vec<u8> {
    let txns: Vec<SynthTxn> = (0..1000)
        .map(|i| SynthTxn {
            note: format!("bench {round}/{i}").into_bytes(),
            ..SynthTxn::payment([9; 32], round.max(1), round + 1000)
        })
        .collect();
    encode_block(round, GEN, &GH, 1_700_000_000 + round as i64, &txns)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: Round = std::env::args()
        .nth(1)
        .map_or(300, |s| s.parse().expect("rounds: a number"));
    let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    let open = |i: usize, blooms: bool| {
        Ledger::open(
            dirs[i].path(),
            LedgerConfig {
                blooms,
                ..LedgerConfig::default()
            },
        )
        .unwrap()
        .0
    };
    let ledgers = [open(0, true), open(1, false), open(2, false), open(3, true)];
    // Warm-up rounds, not timed.
    let warm = 10;
    let (mut on, mut off, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..warm + rounds {
        let raw = round_block(round);
        let mut t = [0f64; 4];
        for k in 0..4 {
            let i = (k + round as usize) % 4;
            let start = Instant::now();
            ledgers[i].add_block(&raw).unwrap();
            t[i] = start.elapsed().as_secs_f64();
        }
        let t = [t[0] + t[3], t[1] + t[2]];
        if round >= warm {
            on.push(t[0]);
            off.push(t[1]);
            ratios.push(t[0] / t[1]);
        }
    }
    let (sum_on, sum_off): (f64, f64) = (on.iter().sum(), off.iter().sum());
    println!(
        "{rounds} rounds: median blooms {:.3} ms, baseline {:.3} ms (two ledgers each); median of ratios {:.4}; \
         ratio of medians {:.4}; ratio of totals {:.4}",
        median(&mut on.clone()) * 1e3,
        median(&mut off.clone()) * 1e3,
        median(&mut ratios),
        median(&mut on) / median(&mut off),
        sum_on / sum_off,
    );
}
