//! txgate-ledger: lookups, add_block, find_txid and reopening, each with per-round blooms and
//! with blooms disabled (go-algorand's baseline: load the block, decode it, compare txids), in
//! one run. Blocks are real msgpack from `txgate_algorand::synth` (1,000 payments a round, about
//! 250 bytes each), in temporary directories.
//!
//! ```text
//! cargo bench -p txgate-benches --bench ledger
//! ```
//! Groups:
//! - `lookup_miss`: `lookup_txid` of random absent txids (seeded, never the all-zero id) in
//!   random rounds of the window; `blooms` (the default layout) vs `baseline`, and `blooms256`,
//!   `blooms512` with each bloom layout.
//! - `lookup_hit`: `lookup_txid` of present txids in their rounds. Also `blooms_in_window` and
//!   `blooms_old_round`: one archival ledger whose window (MaxTxnLife + 1 rounds) holds its last
//!   16 of 48 rounds, hits in those rounds against hits in the 32 older ones, taking turns; a
//!   hit reads the round's txid index row and no block in both.
//! - `add_block`: one 1,000-txn round per iteration (encoding outside the timing; each commit
//!   is durable, so the figure includes an fsync); `blooms`, `baseline`, and `bloom_only`
//!   (blooms without the txid index: what the index adds is `blooms` minus `bloom_only`).
//! - `ingest_1000_txns`: the parts of `add_block` before the write, on one 1,000-txn round
//!   (the same blocks): `decode` (`decode_block`: the whole block read, every txid hashed),
//!   `verify` (`Block::verify`: the flat payset commitment, one SHA-512/256 pass over the payset
//!   and a structural walk to find it), `decode_verify` (both, as `add_block` runs them:
//!   `decode_for_verify` finds the payset while decoding, so verification does not walk again).
//! - `find_txid_miss_1000_rounds`: `find_txid` of an absent txid over the whole 1,001-round
//!   window (blooms only: the baseline would decode 1,001 blocks per query).
//! - `reopen_1000_rounds`: `Ledger::open` of a 1,000-round ledger that loads its blooms (`load_blooms`:
//!   built from the rounds' txid index rows, which hold the txids; the ledger stores no bloom row
//!   beside an index row), vs
//!   opening it without blooms and rebuilding the 1,000 blooms from the blocks (what go-algorand
//!   does at every start).
//!
//! Targets: miss with blooms >= 100x faster than baseline; hit <= 3 % slower; add_block
//! <= 5 % slower; find_txid miss over 1,000 rounds < 20 us; reopen <= 10 % of rebuild.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use txgate_algorand::codec::{Expected, decode_block, decode_for_verify};
use txgate_algorand::synth::{SynthTxn, encode_block};
use txgate_algorand::{Round, Txid};
use txgate_bloom::{BloomBuilder, Bytes, Layout};
use txgate_ledger::store::{Ledger, LedgerConfig};

const GEN: &str = "bench-v1";
const GH: [u8; 32] = [0x42; 32];
const TXNS_PER_ROUND: usize = 1000;
/// Rounds of the ledger that `find_txid` and reopen run on.
const ROUNDS: Round = 1000;
/// Rounds of the lookup ledgers (a lookup touches one round; more rounds only cost set-up).
const LOOKUP_ROUNDS: Round = 32;
/// MaxTxnLife of the ledger of `lookup_hit/blooms_{in_window,old_round}`: its window is the last
/// 16 of its `LOOKUP_ROUNDS + 16` rounds.
const SHORT_LIFE: Round = 15;

fn round_txns(round: Round) -> Vec<SynthTxn> {
    (0..TXNS_PER_ROUND)
        .map(|i| SynthTxn {
            note: format!("bench {round}/{i}").into_bytes(),
            ..SynthTxn::payment([9; 32], round.max(1), round + 1000)
        })
        .collect()
}

/// Round `round`'s block and txids.
fn round_block(round: Round) -> (Vec<u8>, Vec<Txid>) {
    let txns = round_txns(round);
    let ids = txns.iter().map(|t| t.txid(GEN, &GH)).collect();
    (
        encode_block(round, GEN, &GH, 1_700_000_000 + round as i64, &txns),
        ids,
    )
}

fn config(blooms: bool) -> LedgerConfig {
    LedgerConfig::default().with_blooms(blooms)
}

fn bloom_only() -> LedgerConfig {
    LedgerConfig::default().with_txid_index(false)
}

/// A ledger of rounds `0..rounds` in `dir`; returns each round's txids.
fn build(dir: &Path, blooms: bool, rounds: Round) -> (Ledger, Vec<Vec<Txid>>) {
    build_with(dir, config(blooms), rounds)
}

fn build_with(dir: &Path, config: LedgerConfig, rounds: Round) -> (Ledger, Vec<Vec<Txid>>) {
    let ledger = Ledger::open(dir, config).unwrap();
    let mut ids = Vec::new();
    for round in 0..rounds {
        let (raw, txids) = round_block(round);
        ledger.add_block(&raw).unwrap();
        ids.push(txids);
    }
    (ledger, ids)
}

fn random_txid(rng: &mut SmallRng) -> Txid {
    let mut id = [0u8; 32];
    rng.fill(&mut id);
    id[0] |= 1; // never the all-zero id
    Txid(id)
}

fn lookups(c: &mut Criterion) {
    let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    let (with, ids) = build(dirs[0].path(), true, LOOKUP_ROUNDS);
    let (without, _) = build(dirs[1].path(), false, LOOKUP_ROUNDS);
    let in_layout = |dir: &Path, bloom_layout| {
        let config = config(true).with_bloom_layout(bloom_layout);
        build_with(dir, config, LOOKUP_ROUNDS).0
    };
    let small = in_layout(dirs[2].path(), Layout::Block256);
    let large = in_layout(dirs[3].path(), Layout::Block512);
    let mut rng = SmallRng::seed_from_u64(7);
    let misses: Vec<(Txid, Round)> = (0..1024)
        .map(|_| (random_txid(&mut rng), rng.random_range(0..LOOKUP_ROUNDS)))
        .collect();
    let hits: Vec<(Txid, Round)> = (0..1024)
        .map(|_| {
            let round = rng.random_range(0..LOOKUP_ROUNDS);
            (
                ids[round as usize][rng.random_range(0..TXNS_PER_ROUND)],
                round,
            )
        })
        .collect();
    for (name, queries, present) in [("lookup_miss", &misses, false), ("lookup_hit", &hits, true)] {
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Elements(1));
        for (mode, ledger) in [
            ("blooms", &with),
            ("baseline", &without),
            ("blooms256", &small),
            ("blooms512", &large),
        ] {
            bench_lookups(&mut g, mode, ledger, queries, present);
        }
        if present {
            hits_by_age(&mut g, &mut rng);
        }
        g.finish();
    }
}

/// `lookup_hit/blooms_in_window` vs `lookup_hit/blooms_old_round`: an archival ledger of
/// `LOOKUP_ROUNDS + SHORT_LIFE + 1` rounds whose window is the last `SHORT_LIFE + 1`; hits in
/// window rounds and in the older ones (whose blooms are no longer in memory).
fn hits_by_age(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rng: &mut SmallRng,
) {
    let dir = tempfile::tempdir().unwrap();
    let rounds = LOOKUP_ROUNDS + SHORT_LIFE + 1;
    let config = config(true).with_max_txn_life(SHORT_LIFE);
    let (ledger, ids) = build_with(dir.path(), config, rounds);
    let window_start = rounds - 1 - SHORT_LIFE;
    let mut sample = |lo: Round, hi: Round| -> Vec<(Txid, Round)> {
        (0..1024)
            .map(|_| {
                let round = rng.random_range(lo..hi);
                (
                    ids[round as usize][rng.random_range(0..TXNS_PER_ROUND)],
                    round,
                )
            })
            .collect()
    };
    let inside = sample(window_start, rounds);
    let outside = sample(0, window_start);
    for (mode, queries) in [
        ("blooms_in_window", &inside),
        ("blooms_old_round", &outside),
    ] {
        bench_lookups(g, mode, &ledger, queries, true);
    }
}

/// One row of `g`: `lookup_txid` of `queries` in turn (each `present` in its round or not).
fn bench_lookups(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    mode: &str,
    ledger: &Ledger,
    queries: &[(Txid, Round)],
    present: bool,
) {
    let mut i = 0;
    g.bench_function(mode, |b| {
        b.iter(|| {
            let (id, round) = &queries[i % queries.len()];
            i += 1;
            let found = ledger.lookup_txid(black_box(id), *round).unwrap();
            debug_assert_eq!(found.is_some(), present);
            black_box(found)
        })
    });
}

fn add_block(c: &mut Criterion) {
    let mut g = c.benchmark_group("add_block");
    g.throughput(Throughput::Elements(TXNS_PER_ROUND as u64));
    g.sample_size(10);
    for (mode, config) in [
        ("blooms", config(true)),
        ("baseline", config(false)),
        ("bloom_only", bloom_only()),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(dir.path(), config).unwrap();
        let mut next: Round = 0;
        g.bench_function(mode, |b| {
            b.iter_custom(|iters| {
                let blocks: Vec<Vec<u8>> = (next..next + iters).map(|r| round_block(r).0).collect();
                next += iters;
                let start = Instant::now();
                for raw in &blocks {
                    ledger.add_block(raw).unwrap();
                }
                start.elapsed()
            })
        });
    }
    g.finish();
}

fn ingest(c: &mut Criterion) {
    let mut g = c.benchmark_group("ingest_1000_txns");
    g.throughput(Throughput::Elements(TXNS_PER_ROUND as u64));
    let (raw, ids) = round_block(7);
    let block = decode_block(&raw).unwrap();
    assert!(block.txns.iter().map(|t| t.txid).eq(ids));
    g.bench_function("decode", |b| {
        b.iter(|| black_box(decode_block(black_box(&raw)).unwrap()))
    });
    g.bench_function("verify", |b| {
        b.iter(|| block.verify(black_box(&raw), &Expected::default()).unwrap())
    });
    g.bench_function("decode_verify", |b| {
        b.iter(|| {
            let decoded = decode_for_verify(black_box(&raw)).unwrap();
            decoded.verify(&Expected::default()).unwrap();
            black_box(decoded.into_block())
        })
    });
    g.finish();
}

fn window_and_reopen(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (ledger, _) = build(dir.path(), true, ROUNDS);
    eprintln!("built a {ROUNDS}-round ledger in {:?}", started.elapsed());

    let mut g = c.benchmark_group("find_txid_miss_1000_rounds");
    let mut rng = SmallRng::seed_from_u64(8);
    let absent: Vec<Txid> = (0..1024).map(|_| random_txid(&mut rng)).collect();
    let mut i = 0;
    g.bench_function("blooms", |b| {
        b.iter(|| {
            let id = &absent[i % absent.len()];
            i += 1;
            black_box(ledger.find_txid(black_box(id), 0..=ROUNDS + 1000).unwrap())
        })
    });
    g.finish();
    drop(ledger);

    let mut g = c.benchmark_group("reopen_1000_rounds");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("load_blooms", |b| {
        b.iter(|| {
            let ledger = Ledger::open(dir.path(), config(true)).unwrap();
            let report = ledger.open_report();
            assert_eq!(report.blooms_loaded, ROUNDS);
            black_box(ledger)
        })
    });
    g.bench_function("rebuild_from_blocks", |b| {
        b.iter(|| {
            let ledger = Ledger::open(dir.path(), config(false)).unwrap();
            let seed = ledger.bloom_seed();
            let blooms: Vec<_> = (0..ROUNDS)
                .map(|round| {
                    let block = decode_block(&ledger.block(round).unwrap()).unwrap();
                    let mut bloom = BloomBuilder::with_false_positive_rate(
                        block.txns.len() as u64,
                        ledger.config().false_positive_rate,
                    )
                    .seed(seed)
                    .build_any(ledger.config().bloom_layout)
                    .unwrap();
                    for t in &block.txns {
                        bloom.insert(Bytes(t.txid.as_bytes()));
                    }
                    bloom
                })
                .collect();
            black_box((ledger, blooms))
        })
    });
    g.finish();
}

fn criterion_config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group!(
    name = benches;
    config = criterion_config();
    targets = lookups, add_block, ingest, window_and_reopen
);
criterion_main!(benches);
