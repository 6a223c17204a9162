//! A/B probe of `add_block` cost with blooms enabled vs disabled, and its split: six ledgers in
//! temporary directories, two per mode (blooms and the txid index, `on`; blooms without the
//! index, `bloom`; neither, `off`), are fed the same 1,000-txn synthetic rounds, rotating which
//! one goes first each round, so machine noise hits every mode alike. Prints, for `on` and
//! `bloom`, the median of per-round ratios to `off` and the ratio of totals; the index's own
//! share is `on` minus `bloom`; and, on Linux, the bytes each mode's `add_block` writes to its
//! database file (`wchar` of `/proc/self/io`, read outside the timings).
//!
//! ```text
//! cargo run --release -p txgate-ledger --example add_block_ab -- [rounds, default 300] [sync_every, default 1]
//! ```
//!
//! `sync_every` is [`LedgerConfig::sync_every`] for all six ledgers: 1 (the default) makes
//! every commit durable, so each `add_block` includes a sync of the file.

use std::time::Instant;

use txgate_algorand::synth::{SynthTxn, encode_block};
use txgate_ledger::Round;
use txgate_ledger::store::{Ledger, LedgerConfig};

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

/// Bytes this process has passed to write calls so far (`wchar` of `/proc/self/io`; `None`
/// where it cannot be read).
fn written() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("wchar: "))?
        .trim()
        .parse()
        .ok()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The modes, each run by two ledgers (placed symmetrically in the rotation).
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    On,
    Bloom,
    Off,
}

fn main() {
    let rounds: Round = std::env::args()
        .nth(1)
        .map_or(300, |s| s.parse().expect("rounds: a number"));
    let sync_every: u64 = std::env::args()
        .nth(2)
        .map_or(1, |s| s.parse().expect("sync_every: a number"));
    let modes = [
        Mode::On,
        Mode::Off,
        Mode::Bloom,
        Mode::Bloom,
        Mode::Off,
        Mode::On,
    ];
    let dirs: Vec<_> = modes.iter().map(|_| tempfile::tempdir().unwrap()).collect();
    let ledgers: Vec<Ledger> = modes
        .iter()
        .zip(&dirs)
        .map(|(&mode, dir)| {
            let config = LedgerConfig::default()
                .with_blooms(mode != Mode::Off)
                .with_txid_index(mode == Mode::On)
                .with_sync_every(sync_every);
            Ledger::open(dir.path(), config).unwrap()
        })
        .collect();
    // Warm-up rounds, not timed.
    let warm = 10;
    // Per round: seconds of each mode (two ledgers each).
    let mut times: Vec<[f64; 3]> = Vec::new();
    // Bytes written by each mode over the timed rounds (`None`: unknown).
    let mut bytes: [Option<u64>; 3] = [Some(0); 3];
    for round in 0..warm + rounds {
        let raw = round_block(round);
        let mut t = [0f64; 3];
        for k in 0..modes.len() {
            let i = (k + round as usize) % modes.len();
            let before = written();
            let start = Instant::now();
            ledgers[i].add_block(&raw).unwrap();
            t[modes[i] as usize] += start.elapsed().as_secs_f64();
            if round >= warm {
                let m = &mut bytes[modes[i] as usize];
                *m = match (*m, before, written()) {
                    (Some(sum), Some(b), Some(a)) => Some(sum + (a - b)),
                    _ => None,
                };
            }
        }
        if round >= warm {
            times.push(t);
        }
    }
    let total = |m: Mode| times.iter().map(|t| t[m as usize]).sum::<f64>();
    let per_round = |m: Mode| {
        let mut v: Vec<f64> = times.iter().map(|t| t[m as usize]).collect();
        median(&mut v) * 1e3 / 2.0
    };
    let ratio = |m: Mode| {
        let mut v: Vec<f64> = times
            .iter()
            .map(|t| t[m as usize] / t[Mode::Off as usize])
            .collect();
        median(&mut v)
    };
    println!(
        "{rounds} rounds, sync_every {sync_every}, median add_block: on {:.3} ms, bloom only {:.3} ms, off {:.3} ms",
        per_round(Mode::On),
        per_round(Mode::Bloom),
        per_round(Mode::Off),
    );
    println!(
        "on/off: median of ratios {:.4}, ratio of totals {:.4} | bloom/off: median of ratios \
         {:.4}, ratio of totals {:.4} | index share (on - bloom) / off: {:+.4}",
        ratio(Mode::On),
        total(Mode::On) / total(Mode::Off),
        ratio(Mode::Bloom),
        total(Mode::Bloom) / total(Mode::Off),
        (total(Mode::On) - total(Mode::Bloom)) / total(Mode::Off),
    );
    if let [Some(on), Some(bloom), Some(off)] =
        [Mode::On, Mode::Bloom, Mode::Off].map(|m| bytes[m as usize])
    {
        // Two ledgers per mode.
        let kb = |b: u64| b as f64 / (2 * rounds) as f64 / 1e3;
        println!(
            "written per add_block: on {:.1} KB, bloom only {:.1} KB, off {:.1} KB (block {:.1} KB)",
            kb(on),
            kb(bloom),
            kb(off),
            round_block(0).len() as f64 / 1e3,
        );
    }
}
