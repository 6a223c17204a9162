//! The replay report: the figures of every phase, printed as a table (stdout) and serialised as
//! JSON (`--json`) with the same numbers (field units: see [`crate::output`]).

use std::fmt;

use serde::Serialize;

use crate::config::{ConfigSource, NodeConfig};
use crate::follow::FollowReport;

/// Everything `txgate replay` measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Report {
    /// [`crate::output::SCHEMA_VERSION`].
    pub(crate) schema_version: u32,
    /// What was replayed: the built-in workload's parameters, the block paths, or the node.
    pub(crate) source: String,
    /// The ledger directory, or `null` for a temporary one.
    pub(crate) db: Option<String>,
    /// Where the configuration came from.
    pub(crate) config_source: ConfigSource,
    /// The configuration in force.
    pub(crate) config: NodeConfig,
    /// Ingest phase (the range, and the rounds followed).
    pub(crate) ingest: IngestReport,
    /// The rounds ingested while following (`null` without `--follow`).
    pub(crate) follow: Option<FollowReport>,
    /// Lookup phase.
    pub(crate) lookups: LookupReport,
    /// Bloom false-positive rate phase.
    pub(crate) bloom: BloomReport,
    /// Traffic phase.
    pub(crate) traffic: TrafficReport,
}

/// Ingest: blocks read from the source and added to the ledger.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct IngestReport {
    /// Blocks read from the source (decoded), including skipped ones.
    pub(crate) rounds_read: u64,
    /// Blocks whose round the ledger already held (a continued `--db`): not added again.
    pub(crate) rounds_skipped: u64,
    /// Blocks added (`add_block`).
    pub(crate) rounds_ingested: u64,
    /// Transactions in the blocks read.
    pub(crate) txns_read: u64,
    /// Transactions in the blocks added.
    pub(crate) txns_ingested: u64,
    /// Bytes of the blocks added.
    pub(crate) ingested_bytes: u64,
    /// The ledger's oldest and latest round after ingest (`null`: empty).
    pub(crate) first_round: Option<u64>,
    /// The ledger's latest round after ingest.
    pub(crate) latest_round: Option<u64>,
    /// Wall time of the phase (fetching or reading, decoding, adding; following included).
    pub(crate) time_ns: u64,
    /// Time getting the blocks, summed over blocks: reading files, generating the workload, or
    /// algod requests with their retries (these run on several threads at once, ahead of
    /// ingest, so the sum may exceed the wall time).
    pub(crate) fetch_ns: u64,
    /// Time the ingest loop waited for the next block of the range (the part of fetching that
    /// prefetching did not hide; waiting for new rounds while following is not counted).
    pub(crate) fetch_wait_ns: u64,
    /// Time inside `add_decoded_block` (bloom, index, commit).
    pub(crate) add_block_ns: u64,
    /// rounds_ingested / seconds.
    pub(crate) rounds_per_second: f64,
    /// txns_ingested / seconds.
    pub(crate) txns_per_second: f64,
}

/// Latency percentiles of one kind of lookup, nanoseconds (nearest-rank percentiles, each
/// lookup timed on its own with `Instant`, which adds some tens of ns).
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Latency {
    /// Lookups timed.
    pub(crate) count: u64,
    /// Mean.
    pub(crate) mean_ns: f64,
    /// Median.
    pub(crate) p50_ns: u64,
    /// 90th percentile.
    pub(crate) p90_ns: u64,
    /// 99th percentile.
    pub(crate) p99_ns: u64,
    /// Largest.
    pub(crate) max_ns: u64,
}

impl Latency {
    /// Percentiles of `samples` (ns); all zero when empty.
    pub(crate) fn of(mut samples: Vec<u64>) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        samples.sort_unstable();
        let n = samples.len();
        let rank = |q: f64| samples[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Self {
            count: n as u64,
            mean_ns: samples.iter().map(|&s| s as f64).sum::<f64>() / n as f64,
            p50_ns: rank(0.50),
            p90_ns: rank(0.90),
            p99_ns: rank(0.99),
            max_ns: samples[n - 1],
        }
    }
}

/// Lookups: `lookup_txid` of known txids (hits) and random txids (misses).
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct LookupReport {
    /// Hit lookups with blooms (txids sampled from the blocks read, each in its own round).
    pub(crate) hits: u64,
    /// Of those, found in their round at their payset index.
    pub(crate) hits_found: u64,
    /// Miss lookups with blooms (random txids, random rounds of the window).
    pub(crate) misses: u64,
    /// Of those, wrongly found (must be 0).
    pub(crate) misses_found: u64,
    /// Hit latency with blooms.
    pub(crate) blooms_hit: Latency,
    /// Hit latency with blooms of the hits in a round of the bloom window (the latest
    /// MaxTxnLife + 1 rounds the ledger holds, from `window_first_round`: their blooms are in
    /// memory); with `blooms_hit_older`, `blooms_hit` split by round.
    pub(crate) blooms_hit_window: Latency,
    /// Hit latency with blooms of the hits in a kept round older than the bloom window.
    pub(crate) blooms_hit_older: Latency,
    /// The bloom window's first round (its last is the ledger's latest); `null` for an empty
    /// ledger.
    pub(crate) window_first_round: Option<u64>,
    /// Miss latency with blooms.
    pub(crate) blooms_miss: Latency,
    /// `find_txid` of a random txid over a whole validity window (MaxTxnLife + 1 rounds, or
    /// all rounds when fewer) with blooms.
    pub(crate) blooms_window_miss: Latency,
    /// Hit lookups without blooms (go-algorand's baseline: load and decode the block).
    pub(crate) baseline_hits: u64,
    /// Of those, found.
    pub(crate) baseline_hits_found: u64,
    /// Miss lookups without blooms; of those wrongly found must be 0.
    pub(crate) baseline_misses: u64,
    /// Baseline misses wrongly found.
    pub(crate) baseline_misses_found: u64,
    /// Hit latency without blooms.
    pub(crate) baseline_hit: Latency,
    /// Miss latency without blooms.
    pub(crate) baseline_miss: Latency,
    /// Median speedup of blooms on hits: baseline p50 / blooms p50.
    pub(crate) speedup_hit_p50: f64,
    /// Median speedup of blooms on misses.
    pub(crate) speedup_miss_p50: f64,
}

/// Bloom false-positive rate: random txids probed against the stored blooms of the window.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct BloomReport {
    /// Rounds (with at least one transaction) whose bloom was probed.
    pub(crate) rounds: u64,
    /// Probes (random 32-byte ids, none of them a member).
    pub(crate) probes: u64,
    /// Probes the blooms answered "maybe".
    pub(crate) false_positives: u64,
    /// The configured target rate (BloomFalsePositiveRate).
    pub(crate) configured_fpr: f64,
    /// The rate the blocked-bloom formula gives for each bloom's shape and item count,
    /// averaged over the probes.
    pub(crate) expected_fpr: f64,
    /// false_positives / probes.
    pub(crate) measured_fpr: f64,
    /// Bloom bytes per transaction, over the probed rounds.
    pub(crate) memory_per_txn_bytes: f64,
}

/// Traffic: messages through the tx handler, with and without the app rate limiter.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct TrafficReport {
    /// `synthesized` (from the blocks' groups) or the trace path.
    pub(crate) source: String,
    /// Messages offered (per run).
    pub(crate) messages: u64,
    /// Message time from the first to the last message.
    pub(crate) span_ns: u64,
    /// Groups per second the simulated pool takes from the backlog.
    pub(crate) service_rate_per_second: u64,
    /// Backlog length above which the limiter runs.
    pub(crate) congestion_threshold: u64,
    /// The run with the app rate limiter (as configured: `null` when
    /// EnableTxBacklogAppRateLimiting is false).
    pub(crate) with_limiter: Option<RunReport>,
    /// The run without it.
    pub(crate) without_limiter: RunReport,
}

/// One traffic run.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct RunReport {
    /// Messages offered.
    pub(crate) offered: u64,
    /// Messages admitted onto the backlog.
    pub(crate) admitted: u64,
    /// Dropped: the same bytes seen recently.
    pub(crate) duplicate: u64,
    /// Dropped: not a transaction group.
    pub(crate) decode_error: u64,
    /// Dropped: more transactions than a group may hold.
    pub(crate) group_too_large: u64,
    /// Dropped: a transaction is already committed.
    pub(crate) already_committed: u64,
    /// Dropped by the app rate limiter.
    pub(crate) rate_limited: u64,
    /// Dropped: backlog full.
    pub(crate) backlog_full: u64,
    /// Times the limiter was consulted (congested backlog, group with an app call).
    pub(crate) limiter_checks: u64,
    /// Groups the pool took.
    pub(crate) pool_accepted: u64,
    /// Longest backlog seen.
    pub(crate) max_backlog: u64,
    /// Per traffic class (`honest`, `spam`, or `trace`).
    pub(crate) classes: Vec<ClassReport>,
}

/// One traffic class of a run.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct ClassReport {
    /// The class.
    pub(crate) name: String,
    /// Messages offered.
    pub(crate) offered: u64,
    /// Messages admitted.
    pub(crate) admitted: u64,
    /// The seconds of message time that had messages of the class, in order: (second since
    /// the earliest message, offered, admitted). Sparse, so its length is bounded by the
    /// messages, whatever the span of their timestamps.
    pub(crate) seconds: Vec<(u64, u64, u64)>,
}

/// `part` as a percentage of `whole` with one decimal (`-` when `whole` is 0).
fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * part as f64 / whole as f64)
    }
}

/// Nanoseconds as microseconds with two decimals.
fn us(ns: u64) -> String {
    format!("{:.2}", ns as f64 / 1e3)
}

/// Nanoseconds as seconds (for `{:.N}` formatting).
fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// A round, or `-` for none.
fn round_or_dash(round: Option<u64>) -> String {
    round.map_or("-".into(), |r| r.to_string())
}

impl Report {
    /// The human-readable table: the header ([`Report`]'s `Display`), then one section per
    /// phase, each the `Display` of its report.
    pub(crate) fn table(&self) -> String {
        self.to_string()
    }
}

/// The whole table: what was replayed, the ledger, the configuration (its source, then the
/// values in force by go-algorand's names), then the sections
/// (ingest with its follow line, lookups, bloom false-positive rate, traffic), each after an
/// empty line.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "txgate replay: {}", self.source)?;
        let ledger = self
            .db
            .as_deref()
            .unwrap_or("temporary directory (deleted at exit)");
        writeln!(f, "ledger: {ledger}")?;
        writeln!(f, "config: {}", self.config_source.describe())?;
        write!(f, "{}", self.config)?;
        write!(f, "\n{}", self.ingest)?;
        if let Some(follow) = &self.follow {
            write!(f, "{follow}")?;
        }
        write!(f, "\n{}", self.lookups)?;
        write!(f, "\n{}", self.bloom)?;
        write!(f, "\n{}", self.traffic)
    }
}

/// `== ingest`: rounds, transactions and bytes, then times and rates (seconds).
impl fmt::Display for IngestReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "== ingest")?;
        writeln!(
            f,
            "rounds read {} | skipped (already in db) {} | ingested {} | ledger rounds {}..={}",
            self.rounds_read,
            self.rounds_skipped,
            self.rounds_ingested,
            round_or_dash(self.first_round),
            round_or_dash(self.latest_round),
        )?;
        writeln!(
            f,
            "txns read {} | ingested {} | {:.1} MB of blocks",
            self.txns_read,
            self.txns_ingested,
            self.ingested_bytes as f64 / 1e6
        )?;
        writeln!(
            f,
            "time {:.2} s | add_block {:.2} s | fetch {:.2} s, ingest waited {:.2} s for it | {:.0} rounds/s | {:.0} txns/s",
            secs(self.time_ns),
            secs(self.add_block_ns),
            secs(self.fetch_ns),
            secs(self.fetch_wait_ns),
            self.rounds_per_second,
            self.txns_per_second
        )
    }
}

/// The ingest section's `followed` line: rounds, times (seconds) and the running lookup
/// figures (means in microseconds).
impl fmt::Display for FollowReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "followed {} rounds ({}..={}) | {} txns | fetch {:.3} s | add_block {:.3} s | lookups: hits found {}/{} (mean {:.2} us), misses wrongly found {}/{} (mean {:.2} us)",
            self.rounds,
            round_or_dash(self.first_round),
            round_or_dash(self.last_round),
            self.txns,
            secs(self.fetch_ns),
            secs(self.add_block_ns),
            self.hits_found,
            self.hits,
            self.hit_mean_ns / 1e3,
            self.misses_found,
            self.misses,
            self.miss_mean_ns / 1e3
        )
    }
}

/// One row of the lookups table: count, then mean and percentiles in microseconds, in columns
/// under [`LookupReport`]'s heading, which puts the row's name (28 wide) before it.
impl fmt::Display for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>7} {:>9.2} {:>9} {:>9} {:>9} {:>9}",
            self.count,
            self.mean_ns / 1e3,
            us(self.p50_ns),
            us(self.p90_ns),
            us(self.p99_ns),
            us(self.max_ns)
        )
    }
}

/// `== lookups`: one row of latencies per kind of lookup, then the counts found and the median
/// speedups.
impl fmt::Display for LookupReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "== lookups (latency in us)")?;
        writeln!(
            f,
            "{:<28} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "", "count", "mean", "p50", "p90", "p99", "max"
        )?;
        for (name, latency) in [
            ("hit, blooms", &self.blooms_hit),
            ("hit, blooms, in window", &self.blooms_hit_window),
            ("hit, blooms, older rounds", &self.blooms_hit_older),
            ("hit, no blooms (baseline)", &self.baseline_hit),
            ("miss, blooms", &self.blooms_miss),
            ("miss, no blooms (baseline)", &self.baseline_miss),
            ("window miss (find_txid)", &self.blooms_window_miss),
        ] {
            writeln!(f, "{name:<28} {latency}")?;
        }
        writeln!(
            f,
            "hits found {}/{} (baseline {}/{}) | misses wrongly found {} (baseline {})",
            self.hits_found,
            self.hits,
            self.baseline_hits_found,
            self.baseline_hits,
            self.misses_found,
            self.baseline_misses_found
        )?;
        writeln!(
            f,
            "median speedup of blooms: hit {:.1}x, miss {:.1}x",
            self.speedup_hit_p50, self.speedup_miss_p50
        )
    }
}

/// `== bloom false-positive rate`: one line.
impl fmt::Display for BloomReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "== bloom false-positive rate")?;
        writeln!(
            f,
            "{} probes over {} rounds: {} false positives | measured {:.5} | formula {:.5} | configured {} | {:.2} bytes/txn",
            self.probes,
            self.rounds,
            self.false_positives,
            self.measured_fpr,
            self.expected_fpr,
            self.configured_fpr,
            self.memory_per_txn_bytes
        )
    }
}

/// A counted field of a traffic run.
type RunField = fn(&RunReport) -> u64;

/// The traffic table's counted rows: label and field of a run.
const TRAFFIC_ROWS: [(&str, RunField); 10] = [
    ("offered", |r| r.offered),
    ("admitted", |r| r.admitted),
    ("dropped: duplicate", |r| r.duplicate),
    ("dropped: decode error", |r| r.decode_error),
    ("dropped: group too large", |r| r.group_too_large),
    ("dropped: committed", |r| r.already_committed),
    ("dropped: rate limited", |r| r.rate_limited),
    ("dropped: backlog full", |r| r.backlog_full),
    ("limiter checks", |r| r.limiter_checks),
    ("max backlog", |r| r.max_backlog),
];

/// `== traffic`: the messages and the pool, then a column per run (limiter on, when enabled,
/// and off): the counted rows, then each class's accepted percentage.
impl fmt::Display for TrafficReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "== traffic ({})", self.source)?;
        writeln!(
            f,
            "{} messages over {:.1} s | pool takes {} groups/s | limiter runs above {} queued",
            self.messages,
            secs(self.span_ns),
            self.service_rate_per_second,
            self.congestion_threshold
        )?;
        let mut runs: Vec<(&str, &RunReport)> = Vec::new();
        if let Some(with) = &self.with_limiter {
            runs.push(("app limiter on", with));
        }
        runs.push(("app limiter off", &self.without_limiter));
        // One row: a label 26 wide, then a cell 16 wide per run.
        let row = |f: &mut fmt::Formatter<'_>, label: &str, cell: &dyn Fn(&RunReport) -> String| {
            write!(f, "{label:<26}")?;
            for (_, run) in &runs {
                write!(f, " {:>16}", cell(run))?;
            }
            writeln!(f)
        };
        write!(f, "{:<26}", "")?;
        for (name, _) in &runs {
            write!(f, " {name:>16}")?;
        }
        writeln!(f)?;
        for (label, field) in TRAFFIC_ROWS {
            row(f, label, &|run| field(run).to_string())?;
        }
        // Every run has the same classes, in the same order.
        for (k, class) in self.without_limiter.classes.iter().enumerate() {
            row(f, &format!("accepted: {}", class.name), &|run| {
                run.classes
                    .get(k)
                    .map_or("-".into(), |c| pct(c.admitted, c.offered))
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let l = Latency::of((1..=100).rev().collect());
        assert_eq!((l.p50_ns, l.p90_ns, l.p99_ns, l.max_ns), (50, 90, 99, 100));
        assert_eq!(l.mean_ns, 50.5);
        assert_eq!(Latency::of(vec![]).count, 0);
    }

    fn latency(base: u64) -> Latency {
        Latency {
            count: base,
            mean_ns: base as f64 * 1.5 + 0.25,
            p50_ns: base + 1,
            p90_ns: base * 2 + 3,
            p99_ns: base * 3 + 5,
            max_ns: base * 10 + 7,
        }
    }

    fn run(offered: u64, step: u64) -> RunReport {
        let class = |name: &str, offered: u64, admitted: u64| ClassReport {
            name: name.into(),
            offered,
            admitted,
            seconds: vec![(0, offered, admitted)],
        };
        RunReport {
            offered,
            admitted: offered - 10 * step,
            duplicate: step,
            decode_error: step + 1,
            group_too_large: step + 2,
            already_committed: step + 3,
            rate_limited: step + 4,
            backlog_full: step + 5,
            limiter_checks: step * 100,
            pool_accepted: offered - 10 * step,
            max_backlog: step * 7,
            classes: vec![
                class("honest", 600, 600 - step),
                class("spam", 300, 100 + step),
                class("resent", 0, 0),
            ],
        }
    }

    /// A report with a distinct value in every field the table prints.
    fn sample() -> Report {
        Report {
            schema_version: crate::output::SCHEMA_VERSION,
            source: "built-in workload, seed 7".into(),
            db: Some("/tmp/ledger".into()),
            config_source: ConfigSource {
                path: Some("node.toml".into()),
                from: "--config",
                format: Some("toml"),
                ignored_keys: 0,
            },
            config: NodeConfig {
                tx_backlog_size: 400,
                bloom_false_positive_rate: 0.01,
                ..NodeConfig::default()
            },
            ingest: IngestReport {
                rounds_read: 12,
                rounds_skipped: 2,
                rounds_ingested: 10,
                txns_read: 1_234,
                txns_ingested: 1_000,
                ingested_bytes: 2_345_678,
                first_round: Some(3),
                latest_round: Some(14),
                time_ns: 1_234_567_890,
                fetch_ns: 345_678_901,
                fetch_wait_ns: 45_678_901,
                add_block_ns: 987_654_321,
                rounds_per_second: 8.1,
                txns_per_second: 810.4,
            },
            follow: Some(FollowReport {
                rounds: 4,
                txns: 40,
                first_round: Some(11),
                last_round: Some(14),
                fetch_ns: 12_345_678,
                add_block_ns: 23_456_789,
                hits: 40,
                hits_found: 39,
                hit_mean_ns: 6_280.0,
                misses: 400,
                misses_found: 1,
                miss_mean_ns: 51.0,
            }),
            lookups: LookupReport {
                hits: 1_000,
                hits_found: 999,
                misses: 2_000,
                misses_found: 3,
                blooms_hit: latency(1_000),
                blooms_hit_window: latency(600),
                blooms_hit_older: latency(400),
                window_first_round: Some(4),
                blooms_miss: latency(2_000),
                blooms_window_miss: latency(3_000),
                baseline_hits: 100,
                baseline_hits_found: 98,
                baseline_misses: 50,
                baseline_misses_found: 4,
                baseline_hit: latency(100),
                baseline_miss: latency(50),
                speedup_hit_p50: 6.94,
                speedup_miss_p50: 21.86,
            },
            bloom: BloomReport {
                rounds: 45,
                probes: 1_000_035,
                false_positives: 18,
                configured_fpr: 0.01,
                expected_fpr: 0.000_041_7,
                measured_fpr: 0.000_018_2,
                memory_per_txn_bytes: 8.976,
            },
            traffic: TrafficReport {
                source: "synthesized from the blocks' groups".into(),
                messages: 900,
                span_ns: 2_049_000_000,
                service_rate_per_second: 300,
                congestion_threshold: 40,
                with_limiter: Some(run(900, 11)),
                without_limiter: run(900, 22),
            },
        }
    }

    /// The table of [`sample`], byte for byte.
    const SAMPLE_TABLE: &str = r#"txgate replay: built-in workload, seed 7
ledger: /tmp/ledger
config: node.toml
  TxBacklogSize=400 TxBacklogAppTxPerSecondRate=100 TxBacklogServiceRateWindowSeconds=10 TxBacklogAppTxRateLimiterMaxSize=1048576
  TxBacklogAppRateLimitingCongestionPct=10 EnableTxBacklogAppRateLimiting=true BloomFalsePositiveRate=0.01 MaxTxnLife=1000

== ingest
rounds read 12 | skipped (already in db) 2 | ingested 10 | ledger rounds 3..=14
txns read 1234 | ingested 1000 | 2.3 MB of blocks
time 1.23 s | add_block 0.99 s | fetch 0.35 s, ingest waited 0.05 s for it | 8 rounds/s | 810 txns/s
followed 4 rounds (11..=14) | 40 txns | fetch 0.012 s | add_block 0.023 s | lookups: hits found 39/40 (mean 6.28 us), misses wrongly found 1/400 (mean 0.05 us)

== lookups (latency in us)
                               count      mean       p50       p90       p99       max
hit, blooms                     1000      1.50      1.00      2.00      3.00     10.01
hit, blooms, in window           600      0.90      0.60      1.20      1.80      6.01
hit, blooms, older rounds        400      0.60      0.40      0.80      1.21      4.01
hit, no blooms (baseline)        100      0.15      0.10      0.20      0.30      1.01
miss, blooms                    2000      3.00      2.00      4.00      6.00     20.01
miss, no blooms (baseline)        50      0.08      0.05      0.10      0.15      0.51
window miss (find_txid)         3000      4.50      3.00      6.00      9.01     30.01
hits found 999/1000 (baseline 98/100) | misses wrongly found 3 (baseline 4)
median speedup of blooms: hit 6.9x, miss 21.9x

== bloom false-positive rate
1000035 probes over 45 rounds: 18 false positives | measured 0.00002 | formula 0.00004 | configured 0.01 | 8.98 bytes/txn

== traffic (synthesized from the blocks' groups)
900 messages over 2.0 s | pool takes 300 groups/s | limiter runs above 40 queued
                             app limiter on  app limiter off
offered                                 900              900
admitted                                790              680
dropped: duplicate                       11               22
dropped: decode error                    12               23
dropped: group too large                 13               24
dropped: committed                       14               25
dropped: rate limited                    15               26
dropped: backlog full                    16               27
limiter checks                         1100             2200
max backlog                              77              154
accepted: honest                      98.2%            96.3%
accepted: spam                        37.0%            40.7%
accepted: resent                          -                -
"#;

    /// The table of [`sample`] without the optional parts: no `--db`, no config file, no follow
    /// line, no limiter column.
    const SAMPLE_TABLE_BARE: &str = r#"txgate replay: built-in workload, seed 7
ledger: temporary directory (deleted at exit)
config: go-algorand defaults
  TxBacklogSize=26000 TxBacklogAppTxPerSecondRate=100 TxBacklogServiceRateWindowSeconds=10 TxBacklogAppTxRateLimiterMaxSize=1048576
  TxBacklogAppRateLimitingCongestionPct=10 EnableTxBacklogAppRateLimiting=true BloomFalsePositiveRate=0.001 MaxTxnLife=1000

== ingest
rounds read 12 | skipped (already in db) 2 | ingested 10 | ledger rounds 3..=14
txns read 1234 | ingested 1000 | 2.3 MB of blocks
time 1.23 s | add_block 0.99 s | fetch 0.35 s, ingest waited 0.05 s for it | 8 rounds/s | 810 txns/s

== lookups (latency in us)
                               count      mean       p50       p90       p99       max
hit, blooms                     1000      1.50      1.00      2.00      3.00     10.01
hit, blooms, in window           600      0.90      0.60      1.20      1.80      6.01
hit, blooms, older rounds        400      0.60      0.40      0.80      1.21      4.01
hit, no blooms (baseline)        100      0.15      0.10      0.20      0.30      1.01
miss, blooms                    2000      3.00      2.00      4.00      6.00     20.01
miss, no blooms (baseline)        50      0.08      0.05      0.10      0.15      0.51
window miss (find_txid)         3000      4.50      3.00      6.00      9.01     30.01
hits found 999/1000 (baseline 98/100) | misses wrongly found 3 (baseline 4)
median speedup of blooms: hit 6.9x, miss 21.9x

== bloom false-positive rate
1000035 probes over 45 rounds: 18 false positives | measured 0.00002 | formula 0.00004 | configured 0.01 | 8.98 bytes/txn

== traffic (synthesized from the blocks' groups)
900 messages over 2.0 s | pool takes 300 groups/s | limiter runs above 40 queued
                            app limiter off
offered                                 900
admitted                                680
dropped: duplicate                       22
dropped: decode error                    23
dropped: group too large                 24
dropped: committed                       25
dropped: rate limited                    26
dropped: backlog full                    27
limiter checks                         2200
max backlog                             154
accepted: honest                      96.3%
accepted: spam                        40.7%
accepted: resent                          -
"#;

    #[test]
    fn table_of_every_section_byte_for_byte() {
        let table = sample().table();
        assert_eq!(table, SAMPLE_TABLE, "\n{table}");
    }

    #[test]
    fn table_without_the_optional_parts_byte_for_byte() {
        let mut report = sample();
        report.db = None;
        report.config_source = ConfigSource {
            from: "defaults",
            ..ConfigSource::default()
        };
        report.config = NodeConfig::default();
        report.follow = None;
        report.traffic.with_limiter = None;
        let table = report.table();
        assert_eq!(table, SAMPLE_TABLE_BARE, "\n{table}");
    }
}
