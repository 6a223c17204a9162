//! Instruction counts (callgrind) of `Ledger::add_block` with blooms and the txid index on, off,
//! and blooms without the index: the same [`ROUNDS`] 1,000-txn rounds of the built-in
//! workload's shape (`crates/ledger/examples/support/workload.rs`) into a ledger that already
//! holds the round before them. Deterministic where the wall-clock A/B (`add_block_ab`) swings by several percent, so
//! the blooms' and the index's cost shows as a count ratio (`on` / `off`). The file writes and
//! syncs are system calls, which callgrind does not count: the rows count the CPU work of
//! decoding, verifying, building the rows and redb's page handling. Run only with
//! `cargo bench -p txgate-benches --bench ledger_iai` (needs valgrind and
//! `iai-callgrind-runner` 0.16.1); never through `cargo test`.
//!
//! Rows: `add_block_rounds` `blooms_index_on`, `blooms_index_off`, `bloom_only`; `decode`
//! (`decode_block` of one round) and `decode_verify` (`decode_for_verify` and
//! `DecodedBlock::verify`, as `add_block` runs them).

// The `library_benchmark` macros generate undocumented public modules.
#![allow(missing_docs)]

use std::hint::black_box;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use tempfile::TempDir;
use txgate_algorand::Round;
use txgate_algorand::codec::{Block, Expected, decode_block, decode_for_verify};
use txgate_ledger::store::{Ledger, LedgerConfig};

#[path = "../../crates/ledger/examples/support/workload.rs"]
mod workload;

use workload::workload_block;

/// Rounds added per `add_block_rounds` row.
const ROUNDS: Round = 3;
/// The first round the rows add (the ledger holds the one before).
const FIRST: Round = 100;

/// A ledger with `config` holding round `FIRST - 1`, and the bytes of the rounds to add.
fn ledger(config: LedgerConfig) -> (TempDir, Ledger, Vec<Vec<u8>>) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(dir.path(), config).unwrap();
    ledger.add_block(&workload_block(FIRST - 1)).unwrap();
    let blocks = (FIRST..FIRST + ROUNDS).map(workload_block).collect();
    (dir, ledger, blocks)
}

// Every row decodes on the calling thread alone (`with_parallel_decode(false)`): a parallel
// decode's split between the threads and its wait for the helper depend on timing, and the
// counts must not.
fn setup_on() -> (TempDir, Ledger, Vec<Vec<u8>>) {
    ledger(LedgerConfig::default().with_parallel_decode(false))
}

fn setup_off() -> (TempDir, Ledger, Vec<Vec<u8>>) {
    ledger(
        LedgerConfig::default()
            .with_blooms(false)
            .with_parallel_decode(false),
    )
}

fn setup_bloom_only() -> (TempDir, Ledger, Vec<Vec<u8>>) {
    ledger(
        LedgerConfig::default()
            .with_txid_index(false)
            .with_parallel_decode(false),
    )
}

#[library_benchmark]
#[bench::blooms_index_on(setup_on())]
#[bench::blooms_index_off(setup_off())]
#[bench::bloom_only(setup_bloom_only())]
fn add_block_rounds(
    (dir, ledger, blocks): (TempDir, Ledger, Vec<Vec<u8>>),
) -> (TempDir, Ledger, Vec<Vec<u8>>) {
    for raw in &blocks {
        black_box(ledger.add_block(black_box(raw)).unwrap());
    }
    (dir, ledger, blocks)
}

fn one_round() -> Vec<u8> {
    workload_block(FIRST)
}

#[library_benchmark]
#[bench::decode(one_round())]
fn decode(raw: Vec<u8>) -> (Block, Vec<u8>) {
    (black_box(decode_block(black_box(&raw)).unwrap()), raw)
}

#[library_benchmark]
#[bench::decode_verify(one_round())]
fn decode_verify(raw: Vec<u8>) -> (Block, Vec<u8>) {
    let decoded = decode_for_verify(black_box(&raw)).unwrap();
    decoded.verify(&Expected::default()).unwrap();
    (black_box(decoded.into_block()), raw)
}

library_benchmark_group!(name = add_block_group; benchmarks = add_block_rounds);
library_benchmark_group!(name = ingest_group; benchmarks = decode, decode_verify);

main!(library_benchmark_groups = add_block_group, ingest_group);
