//! The arguments of `txgate replay`, the built-in workload's default rounds, and the tx
//! handler's configuration the phases build from the arguments and the node config.

use std::path::PathBuf;

use txgate_algorand::Round;
use txgate_ledger::handler::HandlerConfig;

use crate::config::NodeConfig;
use crate::feed::SourceArgs;
use crate::limit::salt_of_seed;
use crate::output::JsonTarget;

/// Arguments of `txgate replay`.
#[derive(Debug, clap::Args)]
pub(crate) struct ReplayArgs {
    /// The blocks: --blocks or --algod, and --rounds. Without --blocks and --algod, the built-in
    /// deterministic workload is replayed.
    #[command(flatten)]
    pub(crate) source: SourceArgs,
    /// After the range, wait for each new round of the node (--algod; GET
    /// /v2/status/wait-for-block-after/{round}), ingest it and print one line per round; Ctrl-C
    /// (or SIGTERM) ends it with the report, the --db ledger valid.
    #[arg(short, long, requires = "algod")]
    pub(crate) follow: bool,
    /// Traffic trace CSV with header `ts_ns,origin,app_ids`: ts_ns = receive time in ns since
    /// the Unix epoch; origin = IPv4/IPv6 literal or hex peer id; app_ids = `;`-separated app
    /// ids, empty for a group without app calls. Lines are processed in file order (timestamps
    /// may go backwards). Without it, traffic is synthesized from the blocks' groups.
    #[arg(short, long, value_name = "CSV")]
    pub(crate) trace: Option<PathBuf>,
    /// Ledger directory, kept afterwards. An existing ledger is continued: rounds it holds are
    /// skipped, ingest resumes at its latest round + 1. Without it: a temporary directory,
    /// removed on every exit (errors and signals included).
    #[arg(short, long, value_name = "DIR")]
    pub(crate) db: Option<PathBuf>,
    /// Node configuration with go-algorand's names: TxBacklogSize,
    /// TxBacklogAppTxPerSecondRate, TxBacklogServiceRateWindowSeconds (seconds),
    /// TxBacklogAppTxRateLimiterMaxSize, TxBacklogAppRateLimitingCongestionPct (percent),
    /// EnableTxBacklogAppRateLimiting, plus BloomFalsePositiveRate and MaxTxnLife (rounds).
    /// TOML (unknown keys are an error) or go-algorand's config.json (keys txgate does not use
    /// are ignored, as go-algorand does). Without it: $ALGORAND_DATA/config.json when that
    /// exists.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Also write the report as JSON (same figures as the table) to FILE; `-` writes it to
    /// stdout instead of the table (follow lines then go to stderr).
    #[arg(short, long, value_name = "FILE", value_parser = crate::output::json_target)]
    pub(crate) json: Option<JsonTarget>,
    /// Also write an SVG chart of the acceptance rate (admitted / offered, per second of message
    /// time) with and without the app limiter, per traffic class; `-` writes it to stdout
    /// instead of the table (not with `--json -`).
    #[arg(short, long, value_name = "FILE.svg", value_parser = crate::output::json_target)]
    pub(crate) plot: Option<JsonTarget>,
    /// Built-in workload: transactions per round (not with --blocks or --algod, whose blocks
    /// have their own).
    #[arg(long, value_name = "M", default_value_t = 1_000, conflicts_with_all = ["blocks", "algod"])]
    pub(crate) txns_per_round: usize,
    /// Seed of the built-in workload, the synthesized traffic and the random lookups.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub(crate) seed: u64,
    /// Hit lookups and miss lookups with blooms (each; hits are capped at the txids read).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub(crate) lookups: usize,
    /// Hit and miss lookups without blooms (each; every one decodes a whole block).
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub(crate) baseline_lookups: usize,
    /// Random ids probed against the blooms to measure their false-positive rate.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub(crate) fpr_probes: u64,
    /// Synthesized traffic: seconds of message time.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub(crate) traffic_seconds: u64,
    /// Synthesized traffic: honest messages per second (groups modelled on the blocks' groups,
    /// from the senders' peers).
    #[arg(long, value_name = "N", default_value_t = 1_000)]
    pub(crate) honest_rate: u64,
    /// Synthesized traffic: spam messages per second, all from one peer calling one app (the
    /// most called app of the blocks).
    #[arg(long, value_name = "N", default_value_t = 2_000)]
    pub(crate) spam_rate: u64,
    /// Groups per second the simulated transaction pool takes from the backlog (message time);
    /// traffic above it congests the backlog.
    #[arg(long, value_name = "N", default_value_t = 1_500)]
    pub(crate) service_rate: u64,
}

/// Rounds of the built-in workload by default (`1..=2000`).
pub(crate) const DEFAULT_WORKLOAD_ROUNDS: Round = 2_000;

/// The tx handler's configuration: go-algorand's `TxBacklogSize` and
/// `TxBacklogAppRateLimitingCongestionPct`, dedup salted from the seed; the limiter is switched on
/// per run.
pub(crate) fn handler_config(args: &ReplayArgs, config: &NodeConfig) -> HandlerConfig {
    HandlerConfig::default()
        .with_backlog_capacity(config.tx_backlog_size)
        .with_congestion_pct(config.app_rate_limiting_congestion_pct)
        .with_dedup_salt(Some(salt_of_seed(args.seed)))
}
