//! The replay report: the figures of every phase, printed as a table (stdout) and serialised as
//! JSON (`--json`) with the same numbers (field units: see [`crate::output`]).

use std::fmt::Write;

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

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * part as f64 / whole as f64)
    }
}

fn us(ns: u64) -> String {
    format!("{:.2}", ns as f64 / 1e3)
}

impl Report {
    /// The human-readable table.
    pub(crate) fn table(&self) -> String {
        let mut t = String::new();
        let i = &self.ingest;
        // `write!` into a String cannot fail.
        let _ = writeln!(t, "txgate replay: {}", self.source);
        let _ = writeln!(
            t,
            "ledger: {}",
            self.db
                .as_deref()
                .unwrap_or("temporary directory (deleted at exit)")
        );
        let _ = writeln!(t, "config: {}", self.config_source.describe());
        let _ = writeln!(t, "\n== ingest");
        let _ = writeln!(
            t,
            "rounds read {} | skipped (already in db) {} | ingested {} | ledger rounds {}..={}",
            i.rounds_read,
            i.rounds_skipped,
            i.rounds_ingested,
            i.first_round.map_or("-".into(), |r| r.to_string()),
            i.latest_round.map_or("-".into(), |r| r.to_string()),
        );
        let _ = writeln!(
            t,
            "txns read {} | ingested {} | {:.1} MB of blocks",
            i.txns_read,
            i.txns_ingested,
            i.ingested_bytes as f64 / 1e6
        );
        let s = |ns: u64| ns as f64 / 1e9;
        let _ = writeln!(
            t,
            "time {:.2} s | add_block {:.2} s | fetch {:.2} s, ingest waited {:.2} s for it | {:.0} rounds/s | {:.0} txns/s",
            s(i.time_ns),
            s(i.add_block_ns),
            s(i.fetch_ns),
            s(i.fetch_wait_ns),
            i.rounds_per_second,
            i.txns_per_second
        );
        if let Some(f) = &self.follow {
            let _ = writeln!(
                t,
                "followed {} rounds ({}..={}) | {} txns | fetch {:.3} s | add_block {:.3} s | lookups: hits found {}/{} (mean {:.2} us), misses wrongly found {}/{} (mean {:.2} us)",
                f.rounds,
                f.first_round.map_or("-".into(), |r| r.to_string()),
                f.last_round.map_or("-".into(), |r| r.to_string()),
                f.txns,
                s(f.fetch_ns),
                s(f.add_block_ns),
                f.hits_found,
                f.hits,
                f.hit_mean_ns / 1e3,
                f.misses_found,
                f.misses,
                f.miss_mean_ns / 1e3
            );
        }
        let l = &self.lookups;
        let _ = writeln!(t, "\n== lookups (latency in us)");
        let _ = writeln!(
            t,
            "{:<28} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "", "count", "mean", "p50", "p90", "p99", "max"
        );
        let row = |t: &mut String, name: &str, x: &Latency| {
            let _ = writeln!(
                t,
                "{:<28} {:>7} {:>9.2} {:>9} {:>9} {:>9} {:>9}",
                name,
                x.count,
                x.mean_ns / 1e3,
                us(x.p50_ns),
                us(x.p90_ns),
                us(x.p99_ns),
                us(x.max_ns)
            );
        };
        row(&mut t, "hit, blooms", &l.blooms_hit);
        row(&mut t, "hit, blooms, in window", &l.blooms_hit_window);
        row(&mut t, "hit, blooms, older rounds", &l.blooms_hit_older);
        row(&mut t, "hit, no blooms (baseline)", &l.baseline_hit);
        row(&mut t, "miss, blooms", &l.blooms_miss);
        row(&mut t, "miss, no blooms (baseline)", &l.baseline_miss);
        row(&mut t, "window miss (find_txid)", &l.blooms_window_miss);
        let _ = writeln!(
            t,
            "hits found {}/{} (baseline {}/{}) | misses wrongly found {} (baseline {})",
            l.hits_found,
            l.hits,
            l.baseline_hits_found,
            l.baseline_hits,
            l.misses_found,
            l.baseline_misses_found
        );
        let _ = writeln!(
            t,
            "median speedup of blooms: hit {:.1}x, miss {:.1}x",
            l.speedup_hit_p50, l.speedup_miss_p50
        );
        let b = &self.bloom;
        let _ = writeln!(t, "\n== bloom false-positive rate");
        let _ = writeln!(
            t,
            "{} probes over {} rounds: {} false positives | measured {:.5} | formula {:.5} | configured {} | {:.2} bytes/txn",
            b.probes,
            b.rounds,
            b.false_positives,
            b.measured_fpr,
            b.expected_fpr,
            b.configured_fpr,
            b.memory_per_txn_bytes
        );
        let tr = &self.traffic;
        let _ = writeln!(t, "\n== traffic ({})", tr.source);
        let _ = writeln!(
            t,
            "{} messages over {:.1} s | pool takes {} groups/s | limiter runs above {} queued",
            tr.messages,
            tr.span_ns as f64 / 1e9,
            tr.service_rate_per_second,
            tr.congestion_threshold
        );
        let mut runs: Vec<(&str, &RunReport)> = Vec::new();
        if let Some(w) = &tr.with_limiter {
            runs.push(("app limiter on", w));
        }
        runs.push(("app limiter off", &tr.without_limiter));
        let _ = write!(t, "{:<26}", "");
        for (name, _) in &runs {
            let _ = write!(t, " {name:>16}");
        }
        let _ = writeln!(t);
        type Field = fn(&RunReport) -> u64;
        let fields: [(&str, Field); 10] = [
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
        for (name, f) in fields {
            let _ = write!(t, "{name:<26}");
            for (_, r) in &runs {
                let _ = write!(t, " {:>16}", f(r));
            }
            let _ = writeln!(t);
        }
        if let Some((_, first)) = runs.first() {
            for (k, class) in first.classes.iter().enumerate() {
                let _ = write!(t, "{:<26}", format!("accepted: {}", class.name));
                for (_, r) in &runs {
                    let c = &r.classes[k];
                    let _ = write!(t, " {:>16}", pct(c.admitted, c.offered));
                }
                let _ = writeln!(t);
            }
        }
        t
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
