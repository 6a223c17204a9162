//! Where `add_block`'s time goes, phase by phase, on the built-in workload's shape (synthetic
//! 1,000-payment rounds with a flat payset commitment, as `add_block_ab` and the replay's
//! workload write them):
//!
//! - `decode`: `decode_block`, the whole block read and every txid computed;
//! - `txids`: the txid hashes alone (SHA-512/256 over "TX" and each canonical `txn` map, the maps
//!   prepared beforehand and checked against the decoder's txids), a part of `decode`;
//! - `verify`: `Block::verify` (the flat commitment: one SHA-512/256 pass over the payset; for
//!   `v42`, its own walk over the entries for the three trees' leaves, then the trees);
//! - `bloom`: the round's bloom built as the ledger builds it (sized for the round at 0.1 %);
//! - `index`: the round's txid index row (its txids, 32 bytes each);
//! - `write, off` / `write, on`: `add_verified_block` of the verified block (the writer's checks,
//!   one redb write transaction and its commit) into a ledger without and with blooms and the
//!   index; `on` includes the bloom's build and the index row's build, insert and write (a
//!   round with an index row stores no bloom row);
//! - `add_block, on`: the whole public path, `add_block` of the bytes (decode, verify, write),
//!   the payset decoded with a helper thread (the default);
//! - `decode, parallel`: `decode_block_parallel`, the same block as `decode`, decoded on the
//!   calling thread and a helper;
//! - `add_block, 1 thread`: `add_block, on, disk` with `parallel_decode` off;
//! - `decode+verify, 1 thr` / `decode+verify, par`: `decode_for_verify` or
//!   `decode_for_verify_parallel` then `DecodedBlock::verify`, as `add_block` runs them (with a
//!   helper, the flat commitment is hashed on it while the caller decodes; the trees' leaves
//!   are computed with each entry's decode, on whichever thread decodes it).
//!
//! Each write is measured twice: in a temporary directory on disk (the commit's fsync
//! included) and, where `/dev/shm` exists, on tmpfs (an fsync costs nothing there), so the
//! difference is the cost of making a commit durable on this machine. Prints each phase's median
//! and minimum per round in microseconds per txn, and its minimum as a share of `add_block,
//! on`'s (on a loaded machine a phase's median includes time spent waiting for a CPU; the
//! minimum is the round least disturbed).
//!
//! ```text
//! cargo run --release -p txgate-ledger --example add_block_split -- [rounds, default 200] [payments|workload|v42, default payments]
//! ```
//!
//! `v42`: the `payments` rounds under go-algorand protocol v42 (the current one: a SHA-512/256
//! Merkle `txn`, `txn256` and `txn512`).
//!
//! `payments`: 1,000 payments a round, one sender, a note `bench {round}/{i}` (the shape of the
//! ledger benches and `add_block_ab`). `workload`: the shape of the CLI's built-in workload
//! (`txgate replay` without `--blocks`; see `crates/cli/src/workload.rs`): 85 % app calls (one
//! app, a foreign app one time in ten), groups of 2 to 4 with probability 0.15, 5,000 senders,
//! first valid the round minus 0 to 9, a note `r{round}i{index}`; app ids uniform in
//! 1,000..11,000 instead of the CLI's Zipf law (the same msgpack widths).

use std::path::Path;
use std::time::Instant;

use rmpv::Value;
use txgate_algorand::codec::{
    Expected, TxidHasher, decode_block, decode_block_parallel, decode_for_verify,
    decode_for_verify_parallel,
};
use txgate_algorand::synth::{SynthTxn, encode_block, encode_block_with_protocol};
use txgate_bloom::{BloomBuilder, Bytes};
use txgate_ledger::store::{Ledger, LedgerConfig, VerifiedBlock};
use txgate_ledger::{Round, Txid};

// The workload's generator, shared with the ledger's iai bench.
#[path = "support/workload.rs"]
mod workload;

use workload::{GEN, GH, TXNS, workload_block};

fn round_txns(round: Round) -> Vec<SynthTxn> {
    (0..TXNS)
        .map(|i| SynthTxn {
            note: format!("bench {round}/{i}").into_bytes(),
            ..SynthTxn::payment([9; 32], round.max(1), round + 1000)
        })
        .collect()
}

fn round_block(round: Round) -> Vec<u8> {
    encode_block(
        round,
        GEN,
        &GH,
        1_700_000_000 + round as i64,
        &round_txns(round),
    )
}

fn v42_block(round: Round) -> Vec<u8> {
    let time = 1_700_000_000 + round as i64;
    encode_block_with_protocol(round, GEN, &GH, time, &round_txns(round), 42)
}

/// Each payset entry's `txn` map completed with `gen` (when the entry has `hgi`) and `gh`, keys
/// sorted, re-encoded: the bytes the txid hashes (go-algorand `Transaction.ID`).
fn canonical_txns(raw: &[u8]) -> Vec<Vec<u8>> {
    let value = rmpv::decode::read_value(&mut &raw[..]).unwrap();
    let get = |map: &Value, key: &str| -> Option<Value> {
        map.as_map()?
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v.clone())
    };
    let block = get(&value, "block").unwrap();
    let entries = get(&block, "txns").unwrap();
    entries
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            let mut txn = get(entry, "txn").unwrap().as_map().unwrap().clone();
            if get(entry, "hgi").and_then(|v| v.as_bool()) == Some(true) {
                txn.push((Value::from("gen"), Value::from(GEN)));
            }
            txn.push((Value::from("gh"), Value::Binary(GH.to_vec())));
            txn.sort_by(|a, b| a.0.as_str().cmp(&b.0.as_str()));
            let mut out = Vec::new();
            rmpv::encode::write_value(&mut out, &Value::Map(txn)).unwrap();
            out
        })
        .collect()
}

/// Wall seconds of `f`.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed().as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A ledger in a new temporary directory under `parent` (the system's default when `None`).
fn ledger(parent: Option<&Path>, blooms: bool) -> (tempfile::TempDir, Ledger) {
    let dir = match parent {
        Some(p) => tempfile::tempdir_in(p).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let config = LedgerConfig::default().with_blooms(blooms);
    let ledger = Ledger::open(dir.path(), config).unwrap();
    (dir, ledger)
}

fn main() {
    let rounds: Round = std::env::args()
        .nth(1)
        .map_or(200, |s| s.parse().expect("rounds: a number"));
    let shape = std::env::args().nth(2).unwrap_or_else(|| "payments".into());
    let block_of: fn(Round) -> Vec<u8> = match shape.as_str() {
        "payments" => round_block,
        "workload" => workload_block,
        "v42" => v42_block,
        other => panic!("shape: payments, workload or v42, not {other:?}"),
    };
    let shm = Path::new("/dev/shm");
    let shm = shm.is_dir().then_some(shm);
    // (name, parent directory, blooms)
    let mut targets = vec![("disk", None, false), ("disk", None, true)];
    if let Some(shm) = shm {
        targets.extend([("tmpfs", Some(shm), false), ("tmpfs", Some(shm), true)]);
    }
    let writers: Vec<_> = targets.iter().map(|&(_, p, b)| ledger(p, b)).collect();
    let whole = [ledger(None, true), ledger(shm, true)];
    let config = LedgerConfig::default();
    let one_thread = {
        let dir = tempfile::tempdir().unwrap();
        let config = LedgerConfig::default().with_parallel_decode(false);
        let ledger = Ledger::open(dir.path(), config).unwrap();
        (dir, ledger)
    };

    let names = [
        "decode",
        "txids",
        "verify",
        "bloom",
        "index",
        "write, off, disk",
        "write, on, disk",
        "write, off, tmpfs",
        "write, on, tmpfs",
        "add_block, on, disk",
        "add_block, on, tmpfs",
        "decode, parallel",
        "add_block, 1 thread",
        "decode+verify, 1 thr",
        "decode+verify, par",
    ];
    // Per phase: seconds of each timed round.
    let mut t: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    let warm = 5;
    // Every round's bytes and canonical maps, prepared before anything is timed.
    let inputs: Vec<(Vec<u8>, Vec<Vec<u8>>)> = (0..warm + rounds)
        .map(|round| {
            let raw = block_of(round);
            let maps = canonical_txns(&raw);
            (raw, maps)
        })
        .collect();
    for (round, (raw, maps)) in (0..).zip(&inputs) {
        let raw = raw.as_slice();
        let mut s = [f64::NAN; 15];
        let (block, wall) = timed(|| decode_block(raw).unwrap());
        s[0] = wall;
        let (threaded, wall) = timed(|| decode_block_parallel(raw).unwrap());
        s[11] = wall;
        assert_eq!(threaded, block);
        for (i, parallel) in [(13, false), (14, true)] {
            let (_, wall) = timed(|| {
                let decoded = if parallel {
                    decode_for_verify_parallel(raw).unwrap()
                } else {
                    decode_for_verify(raw).unwrap()
                };
                decoded.verify(&Expected::default()).unwrap();
            });
            s[i] = wall;
        }

        let (ids, wall) = timed(|| {
            maps.iter()
                .map(|m| TxidHasher::txid_of(m))
                .collect::<Vec<Txid>>()
        });
        s[1] = wall;
        assert!(ids.iter().zip(&block.txns).all(|(a, b)| *a == b.txid));

        let ((), wall) = timed(|| block.verify(raw, &Expected::default()).unwrap());
        s[2] = wall;

        let (bloom, wall) = timed(|| {
            let mut bloom = BloomBuilder::with_false_positive_rate(TXNS as u64, 0.001)
                .seed(config.bloom_seed)
                .build_any(config.bloom_layout)
                .unwrap();
            for txn in &block.txns {
                bloom.insert(Bytes(txn.txid.as_bytes()));
            }
            bloom
        });
        s[3] = wall;
        std::hint::black_box(&bloom);

        let (row, wall) = timed(|| {
            let mut row = Vec::with_capacity(TXNS * 32);
            for txn in &block.txns {
                row.extend_from_slice(txn.txid.as_bytes());
            }
            row
        });
        s[4] = wall;
        std::hint::black_box(&row);

        let verified = VerifiedBlock::assume_verified(&block, raw);
        // Rotate which ledger writes first, so that machine noise hits them alike.
        for k in 0..writers.len() {
            let i = (k + round as usize) % writers.len();
            let (_, wall) = timed(|| writers[i].1.add_verified_block(&verified).unwrap());
            s[5 + i] = wall;
        }
        for (i, (_, l)) in whole.iter().enumerate() {
            let (_, wall) = timed(|| l.add_block(raw).unwrap());
            s[9 + i] = wall;
        }
        let (_, wall) = timed(|| one_thread.1.add_block(raw).unwrap());
        s[12] = wall;
        if round >= warm {
            for (v, x) in t.iter_mut().zip(s) {
                v.push(x);
            }
        }
    }
    // Median and minimum per phase, in us per txn.
    let per_txn: Vec<(f64, f64)> = t
        .into_iter()
        .map(|v| {
            if v.iter().any(|x| x.is_nan()) {
                return (f64::NAN, f64::NAN);
            }
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let scale = 1e6 / TXNS as f64;
            (median(v) * scale, min * scale)
        })
        .collect();
    let bytes: usize = inputs.iter().map(|(raw, _)| raw.len()).sum();
    println!(
        "{shape}: {:.0} bytes of block per txn",
        bytes as f64 / (inputs.len() * TXNS) as f64
    );
    println!(
        "{rounds} rounds of {TXNS} txns; per round, in us per txn (the minimum: the round least \
         disturbed by other processes)"
    );
    println!(
        "{:<22} {:>8} {:>8} {:>13} {:>13}",
        "phase", "median", "min", "min of add,", "min of add,"
    );
    println!(
        "{:<22} {:>8} {:>8} {:>13} {:>13}",
        "", "", "", "disk", "tmpfs"
    );
    for (name, (med, min)) in names.iter().zip(&per_txn) {
        println!(
            "{name:<22} {med:>8.3} {min:>8.3} {:>12.1}% {:>12.1}%",
            100.0 * min / per_txn[9].1,
            100.0 * min / per_txn[10].1,
        );
    }
}
