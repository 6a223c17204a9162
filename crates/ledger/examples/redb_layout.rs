//! What a round's txid index row costs a synced redb commit, by where the row goes: the probe
//! behind BENCHMARKS.md's "where the index's cost on a synced disk comes from". Each variant
//! gets its own database in a temporary directory and `commits` durable write transactions,
//! each storing one value of [`BLOCK`] random bytes (a 1,000-payment block's size) under the
//! round, plus, per variant:
//!
//! - `value alone`: nothing else (the block row of a ledger with blooms and the index off,
//!   without the ledger's other rows);
//! - `+1.3 KB, second table`: a bloom-sized row in another table (blooms without the index);
//! - `+32 KB, second table`: a 1,000-txid index row in another table (the ledger's layout);
//! - `+32 KB, same table`: the row under another key of the value's own table;
//! - `+32 KB in the value`: the row's bytes appended to the value itself;
//! - `8 x 32 KB every 8th`: eight rows written together in every eighth commit.
//!
//! Each commit also updates one `meta` row, as the ledger's do. The variants take turns, one
//! pass of `commits` (a multiple of 8) each, `passes` times, so machine noise hits them alike.
//! Printed per variant, each also over the `value alone` variant's: the median over aligned
//! blocks of 8 commits of the block's mean time per commit (the figure to read: fair to the
//! batched variant, whose cost falls on one commit in eight, and robust to a rare slow sync),
//! the median per commit and the mean per commit.
//!
//! ```text
//! cargo run --release -p txgate-ledger --example redb_layout -- [commits, default 240] [passes, default 3]
//! ```
//!
//! Set `TMPDIR` to a directory on the disk to measure: the databases go there.

use std::path::Path;
use std::time::Instant;

use redb::{Database, Durability, TableDefinition};

/// Bytes of the value committed each round: the stored size of a 1,000-payment block of the
/// built-in workload (`add_block_ab` prints it).
const BLOCK: usize = 163_000;
/// Bytes of a 1,000-txid index row (32 bytes per txid).
const INDEX_ROW: usize = 32_000;
/// Bytes of a bloom row for 1,000 txids at about 10 bits per key.
const BLOOM_ROW: usize = 1_300;

const VALUES: TableDefinition<'static, u64, &[u8]> = TableDefinition::new("blocks");
const SIDE: TableDefinition<'static, u64, &[u8]> = TableDefinition::new("side");
const META: TableDefinition<'static, &str, u64> = TableDefinition::new("meta");

#[derive(Clone, Copy)]
enum Variant {
    Alone,
    SmallSideRow,
    SideRow,
    SameTable,
    InValue,
    Batched,
}

const VARIANTS: [(Variant, &str); 6] = [
    (Variant::Alone, "value alone"),
    (Variant::SmallSideRow, "+1.3 KB, second table"),
    (Variant::SideRow, "+32 KB, second table"),
    (Variant::SameTable, "+32 KB, same table"),
    (Variant::InValue, "+32 KB in the value"),
    (Variant::Batched, "8 x 32 KB every 8th"),
];

/// xorshift64: incompressible bytes without a dependency (redb stores values as given).
fn fill(state: &mut u64, n: usize) -> Vec<u8> {
    (0..n)
        .map(|_| {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            *state as u8
        })
        .collect()
}

/// One pass of `commits` durable commits of `variant` into a new database at `path`; returns
/// each commit's time in milliseconds.
fn pass(
    variant: Variant,
    commits: u64,
    path: &Path,
    seed: &mut u64,
) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
    let _ = std::fs::remove_file(path);
    let db = Database::create(path)?;
    let mut times = Vec::with_capacity(commits as usize);
    for round in 0..commits {
        let block = fill(seed, BLOCK);
        let row = fill(
            seed,
            match variant {
                Variant::SmallSideRow => BLOOM_ROW,
                _ => INDEX_ROW,
            },
        );
        // The in-value variant's value is built before the timer, as the others' are.
        let value = match variant {
            Variant::InValue => [block.as_slice(), row.as_slice()].concat(),
            _ => block,
        };
        let t = Instant::now();
        let mut txn = db.begin_write()?;
        txn.set_durability(Durability::Immediate);
        {
            let mut values = txn.open_table(VALUES)?;
            values.insert(round, value.as_slice())?;
            if let Variant::SameTable = variant {
                // Keys with the top bit set sort after every round.
                values.insert(round | 1 << 63, row.as_slice())?;
            }
        }
        match variant {
            Variant::SmallSideRow | Variant::SideRow => {
                txn.open_table(SIDE)?.insert(round, row.as_slice())?;
            }
            Variant::Batched if round % 8 == 7 => {
                let mut side = txn.open_table(SIDE)?;
                for r in round - 7..=round {
                    side.insert(r, row.as_slice())?;
                }
            }
            _ => {}
        }
        txn.open_table(META)?.insert("latest_round", round)?;
        txn.commit()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(times)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let commits: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(240);
    let passes: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(3);
    if commits == 0 || !commits.is_multiple_of(8) || passes == 0 {
        return Err("commits: a positive multiple of 8; passes: at least 1".into());
    }
    let dir = tempfile::tempdir()?;
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS.len()];
    for p in 0..passes {
        // Rotate which variant goes first.
        for k in 0..VARIANTS.len() {
            let i = (k + p) % VARIANTS.len();
            let path = dir.path().join(format!("v{i}.redb"));
            times[i].extend(pass(VARIANTS[i].0, commits, &path, &mut seed)?);
            std::fs::remove_file(&path)?;
        }
    }
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    // Passes are multiples of 8 commits, so the chunks align with the batched variant's cycle.
    let blocks = |v: &[f64]| median(&v.chunks(8).map(mean).collect::<Vec<_>>());
    let (b0, m0, a0) = (blocks(&times[0]), median(&times[0]), mean(&times[0]));
    println!(
        "{commits} durable commits of a {BLOCK}-byte value per pass, {passes} passes per variant \
         (times per commit, ms; ratios to `value alone`)"
    );
    for ((_, name), t) in VARIANTS.iter().zip(&times) {
        println!(
            "  {name:<24} blocks of 8 {:.3} ({:.3})   median {:.3} ({:.3})   mean {:.3} ({:.3})",
            blocks(t),
            blocks(t) / b0,
            median(t),
            median(t) / m0,
            mean(t),
            mean(t) / a0
        );
    }
    Ok(())
}
