//! `txgate replay`: blocks through the ledger, lookups with and without blooms, the blooms'
//! measured false-positive rate, and traffic through the tx handler with and without the app
//! rate limiter; then the report.
//!
//! Phases, in order:
//! 1. **ingest**: each block of the feed (the built-in [`Workload`], `--blocks` sources in order,
//!    or `--algod`; see [`crate::feed`]) is decoded with [`decode_block`] and added with
//!    [`Ledger::add_decoded_block`]; rounds the ledger already holds are skipped (a continued
//!    `--db`), after a check that they are of the ledger's network. With `--follow`, every new
//!    round after the range too, one line each, until Ctrl-C (see [`crate::follow`]).
//! 2. **lookups**: [`Ledger::lookup_txid`] of txids sampled from the blocks read (hits, each in
//!    its round) and of random txids in random rounds of the window (misses), timed one by one;
//!    [`Ledger::find_txid`] of random txids over a whole validity window.
//! 3. **traffic**: messages (the `--trace`, else synthesized from the blocks' groups, see
//!    [`synthesize`]) through a [`TxHandler`] whose backlog a simulated pool drains at
//!    `--service-rate` groups per second of message time; once with the app rate limiter (when
//!    enabled), once without.
//! 4. **bloom FPR**: the ledger is closed and the stored blooms of the window's rounds are probed
//!    with random ids.
//! 5. **baseline**: the ledger is reopened without blooms (go-algorand's baseline: load the block,
//!    decode, compare) and a subset of the same lookups is timed.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use txgate_algorand::codec::{Block, Txn, decode_block, gossip_messages};
use txgate_algorand::synth::{SynthTxn, encode_txn_message};
use txgate_algorand::{Round, Txid};
use txgate_ledger::handler::{
    Group, HandlerConfig, Message, Outcome, PoolReject, PoolSink, Source, TxHandler,
};
use txgate_ledger::store::{Ledger, LedgerConfig, LedgerError};
use txgate_ratelimit::{AppRateLimiter, Origin};

use crate::config::NodeConfig;
use crate::error::CliError;
use crate::feed::{Feed, Fetched, Next, SourceArgs, WorkloadFeed};
use crate::follow::Follow;
use crate::limit::salt_of_seed;
use crate::output::{JsonTarget, SCHEMA_VERSION};
use crate::plot::{Series, line_chart};
use crate::progress::Progress;
use crate::report::{
    BloomReport, ClassReport, IngestReport, Latency, LookupReport, Report, RunReport, TrafficReport,
};
use crate::rounds::RoundRange;
use crate::trace::read_trace;
use crate::workload::{Workload, peer_origin};

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
    /// deleted at exit.
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
    /// time) with and without the app limiter, per traffic class.
    #[arg(short, long, value_name = "FILE.svg")]
    pub(crate) plot: Option<PathBuf>,
    /// Built-in workload: transactions per round.
    #[arg(long, value_name = "M", default_value_t = 1_000)]
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

/// Share of honest messages that resend a committed group byte for byte (late gossip).
const RESEND_SHARE: f64 = 0.05;
/// Share of honest messages that repeat the previous honest message from another peer.
const DUPLICATE_SHARE: f64 = 0.03;
/// Recent blocks kept for exact resends.
const RESEND_ROUNDS: usize = 8;
/// Groups kept as honest-traffic templates (from the latest blocks).
const TEMPLATE_GROUPS: usize = 20_000;
/// The spamming peer (TEST-NET-3, RFC 5737).
const SPAM_PEER: [u8; 4] = [203, 0, 113, 66];

/// What ingest keeps for the later phases.
#[derive(Default)]
struct Ingested {
    report: IngestReport,
    /// Reservoir sample of (round, index, txid) of the txns read.
    hits: Vec<(Round, u32, Txid)>,
    seen: u64,
    /// (round, distinct txids) of every block read.
    round_txns: Vec<(Round, u64)>,
    templates: VecDeque<Vec<Txn>>,
    recent_raw: VecDeque<Vec<u8>>,
    genesis: Option<(String, [u8; 32])>,
}

/// Rounds of the built-in workload by default (`1..=2000`).
pub(crate) const DEFAULT_WORKLOAD_ROUNDS: Round = 2_000;
/// How long the ingest loop waits for a block before it looks at the stop flag again.
const POLL: Duration = Duration::from_millis(100);

/// Runs the replay: see the module docs.
///
/// # Errors
///
/// [`CliError`] naming the file, line or round for bad input; ledger and algod errors.
pub(crate) fn run(args: &ReplayArgs) -> Result<Report, CliError> {
    let (config, config_source) = crate::config::resolve(args.config.as_deref())?;
    validate(args, &config)?;
    // Read the trace before ingesting, so that a bad trace fails fast.
    let trace = match &args.trace {
        Some(path) => Some(read_trace(path)?),
        None => None,
    };
    let temp;
    let dir: PathBuf = match &args.db {
        Some(dir) => dir.clone(),
        None => {
            temp = tempfile::Builder::new()
                .prefix("txgate-replay-")
                .tempdir()
                .map_err(CliError::io(std::env::temp_dir()))?;
            temp.path().to_owned()
        }
    };
    let ledger_config = LedgerConfig {
        false_positive_rate: config.bloom_false_positive_rate,
        max_txn_life: config.max_txn_life,
        ..LedgerConfig::default()
    };
    let ledger_err = |context: String| move |source| CliError::Ledger { context, source };
    let dir_name = format!("ledger {}", dir.display());
    let (ledger, open) =
        Ledger::open(&dir, ledger_config.clone()).map_err(ledger_err(dir_name.clone()))?;
    if !open.rebuilt.is_empty() {
        eprintln!(
            "open: rebuilt {} missing or corrupt blooms from their blocks",
            open.rebuilt.len()
        );
    }
    let mut rng = SmallRng::seed_from_u64(args.seed ^ 0x7478_6761_7465);

    // 1. Ingest.
    let next = ledger.latest().map(|l| l.saturating_add(1));
    let (mut feed, source, skipped, range_end): (Box<dyn Feed>, String, u64, Option<Round>) =
        match args.source.open(next, config.max_txn_life, args.follow)? {
            Some(opened) => (
                opened.feed,
                opened.describe,
                opened.skipped,
                opened.range_end,
            ),
            None => {
                let (first, last) = args
                    .source
                    .rounds
                    .unwrap_or(RoundRange::ALL)
                    .or(1, DEFAULT_WORKLOAD_ROUNDS);
                let workload = Workload::new(args.seed, args.txns_per_round);
                (
                    Box::new(WorkloadFeed::new(workload, first, last)),
                    format!(
                        "built-in workload (seed {}, rounds {first}..={last} x {} txns)",
                        args.seed, args.txns_per_round
                    ),
                    0,
                    None,
                )
            }
        };
    if args.follow {
        crate::follow::install_stop_handler()?;
    }
    let rounds = args.source.rounds.unwrap_or(RoundRange::ALL);
    let mut ing = Ingested::default();
    ing.report.rounds_skipped = skipped;
    let started = Instant::now();
    let (mut fetch, mut fetch_wait, mut add_time) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let mut follow: Option<Follow> = None;
    // Follow lines go to stdout, unless stdout carries the JSON.
    let lines_to_stderr = args.json == Some(JsonTarget::Stdout);
    let say = |line: &str| match (crate::progress::quiet(), lines_to_stderr) {
        (true, _) => {}
        (false, true) => eprintln!("{line}"),
        (false, false) => println!("{line}"),
    };
    let mut progress = Some(Progress::start("ingest", feed.len_hint()));
    // Since the last block was taken: the wait for the next one, across idle polls.
    let mut waiting_since = Instant::now();
    loop {
        if args.follow && crate::follow::stop_requested() {
            break;
        }
        let fetched = match feed.next(POLL)? {
            Next::Block(f) => f,
            Next::Idle => continue,
            Next::End => break,
        };
        if fetched.follow && follow.is_none() {
            if let Some(p) = progress.take() {
                p.finish(&format!("{} rounds", ing.report.rounds_read));
            }
            say(&Follow::header(range_end));
            follow = Some(Follow::default());
        } else if follow.is_none() {
            fetch_wait += waiting_since.elapsed();
        }
        fetch += fetched.fetch;
        let fetch_one = fetched.fetch;
        let is_follow = fetched.follow;
        // Rounds followed come after the range by design.
        let filter = if is_follow { &RoundRange::ALL } else { &rounds };
        let ingested = ingest_one(&ledger, &mut ing, &mut rng, args.lookups, fetched, filter)?;
        if let Some(p) = progress.as_mut() {
            p.inc(1);
        }
        if let Some((block, Some(add))) = &ingested {
            add_time += *add;
            if is_follow && let Some(f) = follow.as_mut() {
                let line = f.round(&ledger, block, fetch_one, *add, &mut rng)?;
                say(&line);
            }
        }
        waiting_since = Instant::now();
    }
    if let Some(p) = progress.take() {
        p.finish(&format!("{} rounds", ing.report.rounds_read));
    }
    drop(feed);
    let elapsed = started.elapsed();
    let secs = elapsed.as_secs_f64();
    let mut ingest = std::mem::take(&mut ing.report);
    ingest.time_ns = elapsed.as_nanos() as u64;
    ingest.fetch_ns = fetch.as_nanos() as u64;
    ingest.fetch_wait_ns = fetch_wait.as_nanos() as u64;
    ingest.add_block_ns = add_time.as_nanos() as u64;
    ingest.rounds_per_second = ingest.rounds_ingested as f64 / secs.max(1e-9);
    ingest.txns_per_second = ingest.txns_ingested as f64 / secs.max(1e-9);
    ingest.first_round = ledger.first();
    ingest.latest_round = ledger.latest();
    let follow_report = match (&follow, args.follow) {
        (Some(f), _) => Some(f.report()),
        (None, true) => Some(Default::default()),
        (None, false) => None,
    };

    // 2. Lookups with blooms.
    let mut lookups = LookupReport::default();
    let window = match (ledger.first(), ledger.latest()) {
        (Some(first), Some(latest)) => Some((
            first.max(latest.saturating_sub(config.max_txn_life)),
            latest,
        )),
        _ => None,
    };
    let misses: Vec<(Round, Txid)> = match window {
        Some((lo, hi)) => (0..args.lookups)
            .map(|_| (rng.random_range(lo..=hi), random_txid(&mut rng)))
            .collect(),
        None => Vec::new(),
    };
    {
        let mut progress =
            Progress::start("lookups", Some((ing.hits.len() + 2 * misses.len()) as u64));
        let ctx = || format!("lookups in {}", dir.display());
        let mut samples = Vec::with_capacity(ing.hits.len());
        for &(round, index, txid) in &ing.hits {
            let t = Instant::now();
            let found = ledger
                .lookup_txid(&txid, round)
                .map_err(ledger_err(ctx()))?;
            samples.push(t.elapsed().as_nanos() as u64);
            lookups.hits += 1;
            if found.is_some_and(|r| r.round == round && r.index == index) {
                lookups.hits_found += 1;
            }
            progress.inc(1);
        }
        lookups.blooms_hit = Latency::of(samples);
        let mut samples = Vec::with_capacity(misses.len());
        for (round, txid) in &misses {
            let t = Instant::now();
            let found = ledger
                .lookup_txid(txid, *round)
                .map_err(ledger_err(ctx()))?;
            samples.push(t.elapsed().as_nanos() as u64);
            lookups.misses += 1;
            lookups.misses_found += u64::from(found.is_some());
            progress.inc(1);
        }
        lookups.blooms_miss = Latency::of(samples);
        let mut samples = Vec::with_capacity(misses.len());
        if let Some((lo, hi)) = window {
            for (_, txid) in &misses {
                let t = Instant::now();
                let found = ledger.find_txid(txid, lo..=hi).map_err(ledger_err(ctx()))?;
                samples.push(t.elapsed().as_nanos() as u64);
                lookups.misses_found += u64::from(found.is_some());
                progress.inc(1);
            }
        }
        lookups.blooms_window_miss = Latency::of(samples);
        progress.finish(&format!(
            "{}/{} hits found, {} misses wrongly found",
            lookups.hits_found, lookups.hits, lookups.misses_found
        ));
    }

    // 3. Traffic.
    let ledger = Arc::new(ledger);
    let traffic = traffic_phase(args, &config, &ledger, &ing, trace.as_deref(), &mut rng)?;

    // 4. Bloom false-positive rate, from the stored blooms.
    let bloom = measure_fpr(
        &ledger,
        &config,
        window,
        &ing.round_txns,
        args.fpr_probes,
        &mut rng,
    )
    .map_err(ledger_err(format!("bloom fpr in {}", dir.display())))?;
    drop(ledger);

    // 5. Baseline lookups without blooms.
    {
        let (base, _) = Ledger::open(
            &dir,
            LedgerConfig {
                blooms: false,
                ..ledger_config
            },
        )
        .map_err(ledger_err(dir_name))?;
        let n = args.baseline_lookups;
        let mut progress = Progress::start(
            "baseline",
            Some((ing.hits.len().min(n) + misses.len().min(n)) as u64),
        );
        let ctx = || format!("baseline lookups in {}", dir.display());
        let mut samples = Vec::new();
        for &(round, index, txid) in ing.hits.iter().take(n) {
            let t = Instant::now();
            let found = base.lookup_txid(&txid, round).map_err(ledger_err(ctx()))?;
            samples.push(t.elapsed().as_nanos() as u64);
            lookups.baseline_hits += 1;
            if found.is_some_and(|r| r.round == round && r.index == index) {
                lookups.baseline_hits_found += 1;
            }
            progress.inc(1);
        }
        lookups.baseline_hit = Latency::of(samples);
        let mut samples = Vec::new();
        for (round, txid) in misses.iter().take(n) {
            let t = Instant::now();
            let found = base.lookup_txid(txid, *round).map_err(ledger_err(ctx()))?;
            samples.push(t.elapsed().as_nanos() as u64);
            lookups.baseline_misses += 1;
            lookups.baseline_misses_found += u64::from(found.is_some());
            progress.inc(1);
        }
        lookups.baseline_miss = Latency::of(samples);
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        lookups.speedup_hit_p50 = ratio(lookups.baseline_hit.p50_ns, lookups.blooms_hit.p50_ns);
        lookups.speedup_miss_p50 = ratio(lookups.baseline_miss.p50_ns, lookups.blooms_miss.p50_ns);
        progress.finish(&format!(
            "{}/{} hits found",
            lookups.baseline_hits_found, lookups.baseline_hits
        ));
    }

    let report = Report {
        schema_version: SCHEMA_VERSION,
        source,
        db: args.db.as_ref().map(|d| d.display().to_string()),
        config_source,
        config,
        ingest,
        follow: follow_report,
        lookups,
        bloom,
        traffic,
    };
    if let Some(target) = &args.json {
        target.write(&report)?;
    }
    if let Some(path) = &args.plot {
        std::fs::write(path, acceptance_chart(&report.traffic)).map_err(CliError::io(path))?;
    }
    Ok(report)
}

/// Most messages the synthesized traffic may hold (they are built in memory first).
const MAX_MESSAGES: u64 = 50_000_000;
/// Most lookups of one kind (their samples are kept in memory).
const MAX_LOOKUPS: usize = 100_000_000;
/// Most transactions per round of the built-in workload (go-algorand blocks hold ~25,000).
const MAX_TXNS_PER_ROUND: usize = 1_000_000;

/// Checks the flags and the configuration before anything is ingested, so that a bad value
/// fails at once instead of after the ingest.
fn validate(args: &ReplayArgs, config: &NodeConfig) -> Result<(), CliError> {
    let usage = |m: String| Err(CliError::Usage(m));
    if args.service_rate == 0 {
        return usage("--service-rate must be at least 1".into());
    }
    let messages = args
        .honest_rate
        .checked_add(args.spam_rate)
        .and_then(|r| r.checked_mul(args.traffic_seconds));
    if args.trace.is_none() && messages.is_none_or(|m| m > MAX_MESSAGES) {
        return usage(format!(
            "(--honest-rate + --spam-rate) x --traffic-seconds must be at most {MAX_MESSAGES} messages"
        ));
    }
    if args.lookups > MAX_LOOKUPS || args.baseline_lookups > MAX_LOOKUPS {
        return usage(format!(
            "--lookups and --baseline-lookups must be at most {MAX_LOOKUPS}"
        ));
    }
    if args.txns_per_round > MAX_TXNS_PER_ROUND {
        return usage(format!(
            "--txns-per-round must be at most {MAX_TXNS_PER_ROUND}"
        ));
    }
    handler_config(args, config)
        .validate()
        .map_err(CliError::Handler)?;
    if config.enable_app_rate_limiting {
        AppRateLimiter::new(limiter_config(config, args.seed))?;
    }
    Ok(())
}

/// The tx handler's configuration: go-algorand's `TxBacklogSize` and
/// `TxBacklogAppRateLimitingCongestionPct`, dedup salted from the seed; the limiter is switched on
/// per run.
fn handler_config(args: &ReplayArgs, config: &NodeConfig) -> HandlerConfig {
    HandlerConfig {
        backlog_capacity: config.tx_backlog_size,
        congestion_pct: config.app_rate_limiting_congestion_pct,
        dedup_salt: Some(salt_of_seed(args.seed)),
        ..HandlerConfig::default()
    }
}

/// The app rate limiter's configuration: go-algorand's parameters, 128 shards (its bucket
/// count; fewer for a max size below 256, each shard holding at least 2 keys).
fn limiter_config(config: &NodeConfig, seed: u64) -> txgate_ratelimit::Config {
    let max_size = config.app_tx_rate_limiter_max_size;
    let mut shards = 128;
    while shards > 1 && max_size < 2 * shards {
        shards /= 2;
    }
    txgate_ratelimit::Config {
        max_size,
        rate_per_second: config.app_tx_per_second_rate,
        window: Duration::from_secs(config.service_rate_window_seconds),
        shards,
        salt: Some(salt_of_seed(seed)),
    }
}

/// Decodes one block and, when its round is in `rounds`, adds it unless the ledger holds its
/// round (then it only checks the block's network), and keeps what later phases need. Returns
/// the block and the `add_block` time (`None`: skipped), or `None` for a round outside `rounds`.
fn ingest_one(
    ledger: &Ledger,
    ing: &mut Ingested,
    rng: &mut SmallRng,
    sample: usize,
    fetched: Fetched,
    rounds: &RoundRange,
) -> Result<Option<(Block, Option<Duration>)>, CliError> {
    let Fetched {
        name, round, bytes, ..
    } = fetched;
    let block: Block = decode_block(&bytes).map_err(|source| CliError::Block {
        round: source.round().or(round),
        name: name.clone(),
        source,
    })?;
    if !rounds.contains(block.round) {
        return Ok(None);
    }
    let ledger_err = |source| CliError::Ledger {
        context: format!("{name} (round {})", block.round),
        source,
    };
    let r = &mut ing.report;
    r.rounds_read += 1;
    r.txns_read += block.txns.len() as u64;
    let added = if ledger.latest().is_some_and(|latest| block.round <= latest) {
        ledger.check_network(&block).map_err(ledger_err)?;
        r.rounds_skipped += 1;
        None
    } else {
        let t = Instant::now();
        ledger
            .add_decoded_block(&block, &bytes)
            .map_err(ledger_err)?;
        let add = t.elapsed();
        r.rounds_ingested += 1;
        r.txns_ingested += block.txns.len() as u64;
        r.ingested_bytes += bytes.len() as u64;
        Some(add)
    };
    let mut distinct: Vec<Txid> = block.txns.iter().map(|t| t.txid).collect();
    distinct.sort_unstable();
    distinct.dedup();
    ing.round_txns.push((block.round, distinct.len() as u64));
    // Reservoir sampling (Algorithm R) of hits; the first index of a repeated txid is the
    // one the ledger reports.
    for (index, txn) in block.txns.iter().enumerate() {
        let first = block.txns.iter().position(|t| t.txid == txn.txid) == Some(index);
        if !first {
            continue;
        }
        let item = (block.round, index as u32, txn.txid);
        ing.seen += 1;
        if ing.hits.len() < sample {
            ing.hits.push(item);
        } else {
            let j = rng.random_range(0..ing.seen);
            if (j as usize) < sample {
                ing.hits[j as usize] = item;
            }
        }
    }
    // Honest-traffic templates: the latest blocks' groups.
    let mut i = 0;
    while i < block.txns.len() {
        let mut j = i + 1;
        if let Some(g) = block.txns[i].group {
            while j < block.txns.len() && block.txns[j].group == Some(g) {
                j += 1;
            }
        }
        ing.templates.push_back(block.txns[i..j].to_vec());
        if ing.templates.len() > TEMPLATE_GROUPS {
            ing.templates.pop_front();
        }
        i = j;
    }
    if !block.txns.is_empty() {
        ing.recent_raw.push_back(bytes);
        if ing.recent_raw.len() > RESEND_ROUNDS {
            ing.recent_raw.pop_front();
        }
    }
    ing.genesis = Some((
        String::from_utf8_lossy(&block.genesis_id).into_owned(),
        block.genesis_hash,
    ));
    Ok(Some((block, added)))
}

fn random_txid(rng: &mut SmallRng) -> Txid {
    let mut id = [0; 32];
    rng.fill_bytes(&mut id);
    Txid(id)
}

/// The simulated pool: takes every group.
struct AcceptAll;

impl PoolSink for AcceptAll {
    fn submit(&self, _: &Group) -> Result<(), PoolReject> {
        Ok(())
    }
}

/// One message of the traffic phase.
struct TrafficMsg {
    t_ns: u64,
    class: usize,
    origin: Origin,
    bytes: Vec<u8>,
}

/// Synthesized traffic over `args.traffic_seconds` from `start_ns`: honest messages at
/// `honest_rate` per second, cycling through the latest blocks' groups as new transactions
/// (note `traffic {i}`, validity from latest - 5 for MaxTxnLife rounds, from the first sender's
/// peer); [`RESEND_SHARE`] of them resend a committed group byte for byte and
/// [`DUPLICATE_SHARE`] repeat the previous new honest message from another peer, up to 50 ms
/// after it. Spam: `spam_rate`
/// per second from one peer ([`SPAM_PEER`]) calling the blocks' most called app. Arrival times
/// are uniform over the span (so the classes compete for backlog slots at random), merged in
/// time order. Classes: 0 honest (new groups), 1 spam, 2 resent (exact resends and duplicates,
/// which dedup and the committed check drop whatever the limiter does).
fn synthesize(
    args: &ReplayArgs,
    ing: &Ingested,
    latest: Round,
    max_txn_life: u64,
    start_ns: u64,
    rng: &mut SmallRng,
) -> Vec<TrafficMsg> {
    let (gen_id, gen_hash) = ing.genesis.clone().unwrap_or_default();
    let first_valid = latest.saturating_sub(5).max(1);
    let last_valid = first_valid + max_txn_life;
    let resends: Vec<Vec<u8>> = ing
        .recent_raw
        .iter()
        // Blocks read decoded already; one that does not give no resends.
        .flat_map(|r| gossip_messages(r).unwrap_or_default())
        .collect();
    let mut counts = std::collections::HashMap::<u64, u64>::new();
    for group in &ing.templates {
        for txn in group {
            for &app in &txn.app_ids {
                *counts.entry(app).or_default() += 1;
            }
        }
    }
    let spam_app = counts
        .iter()
        .max_by_key(|(app, n)| (**n, std::cmp::Reverse(**app)))
        .map_or(1, |(app, _)| *app);
    let secs = args.traffic_seconds;
    let mut honest = Vec::new();
    let templates: Vec<&Vec<Txn>> = ing.templates.iter().collect();
    let n_honest = if templates.is_empty() {
        0
    } else {
        args.honest_rate * secs
    };
    let span_ns = secs.max(1) * 1_000_000_000;
    let mut previous: Option<(Vec<u8>, u64)> = None;
    for i in 0..n_honest {
        let t_ns = start_ns + rng.random_range(0..span_ns);
        let template = templates[(i as usize) % templates.len()];
        let (origin, peer) = peer_origin(&template[0].sender);
        let roll: f64 = rng.random();
        let bytes = if roll < RESEND_SHARE && !resends.is_empty() {
            honest.push(TrafficMsg {
                t_ns,
                class: 2,
                origin,
                bytes: resends[rng.random_range(0..resends.len())].clone(),
            });
            continue;
        } else if roll < RESEND_SHARE + DUPLICATE_SHARE
            && let Some((prev, prev_t)) = &previous
        {
            let other = (peer + 1) % crate::workload::PEERS;
            let (origin, _) = peer_origin(&crate::workload::sender_of_peer(other));
            // Relayed by a second peer shortly after the first (up to 50 ms later).
            honest.push(TrafficMsg {
                t_ns: prev_t + rng.random_range(0..50_000_000),
                class: 2,
                origin,
                bytes: prev.clone(),
            });
            continue;
        } else {
            let group_id = (template.len() > 1).then(|| {
                let mut id = [0x54; 32];
                id[..8].copy_from_slice(&i.to_le_bytes());
                id
            });
            let txns: Vec<SynthTxn> = template
                .iter()
                .enumerate()
                .map(|(j, t)| SynthTxn {
                    tx_type: t.tx_type.clone(),
                    sender: t.sender,
                    first_valid,
                    last_valid,
                    app_ids: t.app_ids.clone(),
                    group: group_id,
                    note: format!("traffic {i} {j}").into_bytes(),
                })
                .collect();
            let bytes = encode_txn_message(&txns, &gen_id, &gen_hash);
            previous = Some((bytes.clone(), t_ns));
            bytes
        };
        honest.push(TrafficMsg {
            t_ns,
            class: 0,
            origin,
            bytes,
        });
    }
    let spam_origin = Origin::from_ipv4(SPAM_PEER.into());
    let mut spam_sender = [0x53; 32];
    spam_sender[..4].copy_from_slice(&SPAM_PEER);
    let n_spam = args.spam_rate * secs;
    let spam: Vec<TrafficMsg> = (0..n_spam)
        .map(|i| {
            let mut txn = SynthTxn::app_call(spam_sender, first_valid, last_valid, vec![spam_app]);
            txn.note = format!("spam {i}").into_bytes();
            TrafficMsg {
                t_ns: start_ns + rng.random_range(0..span_ns),
                class: 1,
                origin: spam_origin,
                bytes: encode_txn_message(&[txn], &gen_id, &gen_hash),
            }
        })
        .collect();
    let mut all: Vec<TrafficMsg> = honest.into_iter().chain(spam).collect();
    all.sort_by_key(|m| m.t_ns);
    all
}

/// Messages of a trace: one transaction per line, an app call to its app ids (the first as the
/// application id, the others as foreign apps) or a payment when it has none, from a sender
/// derived from its origin, noted with its line number so that every line is a distinct
/// message.
fn trace_messages(
    trace: &[crate::trace::TraceEntry],
    ing: &Ingested,
    first_valid: Round,
    last_valid: Round,
) -> Vec<TrafficMsg> {
    let (gen_id, gen_hash) = ing.genesis.clone().unwrap_or_default();
    trace
        .iter()
        .map(|e| {
            let mut sender = [0x4f; 32];
            let o = e.origin.as_bytes();
            sender[..o.len()].copy_from_slice(o);
            let mut txn = if e.app_ids.is_empty() {
                SynthTxn::payment(sender, first_valid, last_valid)
            } else {
                SynthTxn::app_call(sender, first_valid, last_valid, e.app_ids.clone())
            };
            txn.note = format!("trace line {}", e.line).into_bytes();
            TrafficMsg {
                t_ns: e.ts_ns,
                class: 0,
                origin: e.origin,
                bytes: encode_txn_message(&[txn], &gen_id, &gen_hash),
            }
        })
        .collect()
}

fn traffic_phase(
    args: &ReplayArgs,
    config: &NodeConfig,
    ledger: &Arc<Ledger>,
    ing: &Ingested,
    trace: Option<&[crate::trace::TraceEntry]>,
    rng: &mut SmallRng,
) -> Result<TrafficReport, CliError> {
    let latest = ledger.latest().unwrap_or(0);
    let first_valid = latest.saturating_sub(5).max(1);
    let (msgs, classes, source) = match (trace, &args.trace) {
        (Some(trace), Some(path)) => (
            trace_messages(trace, ing, first_valid, first_valid + config.max_txn_life),
            vec!["trace"],
            format!("trace {}", path.display()),
        ),
        _ => {
            let start = u64::try_from(crate::workload::Workload::timestamp(latest))
                .unwrap_or(0)
                .saturating_mul(1_000_000_000);
            (
                synthesize(args, ing, latest, config.max_txn_life, start, rng),
                vec!["honest", "spam", "resent"],
                "synthesized from the blocks' groups".to_owned(),
            )
        }
    };
    let span_ns = match (
        msgs.iter().map(|m| m.t_ns).min(),
        msgs.iter().map(|m| m.t_ns).max(),
    ) {
        (Some(a), Some(b)) => b - a,
        _ => 0,
    };
    let handler_config = handler_config(args, config);
    let mut report = TrafficReport {
        source,
        messages: msgs.len() as u64,
        span_ns,
        service_rate_per_second: args.service_rate,
        congestion_threshold: handler_config.congestion_threshold() as u64,
        ..TrafficReport::default()
    };
    let mut progress = Progress::start(
        "traffic",
        Some(msgs.len() as u64 * (1 + u64::from(config.enable_app_rate_limiting))),
    );
    if config.enable_app_rate_limiting {
        report.with_limiter = Some(simulate(
            &msgs,
            &classes,
            config,
            &handler_config,
            ledger,
            true,
            args,
            &mut progress,
        )?);
    }
    report.without_limiter = simulate(
        &msgs,
        &classes,
        config,
        &handler_config,
        ledger,
        false,
        args,
        &mut progress,
    )?;
    progress.finish(&format!("{} messages per run", msgs.len()));
    Ok(report)
}

/// One run of the messages through a fresh handler; the pool drains the backlog at
/// `args.service_rate` groups per second of message time (capacity unused while the backlog is
/// empty is lost); the clock is the latest message time seen (traces may go backwards).
#[allow(clippy::too_many_arguments)]
fn simulate(
    msgs: &[TrafficMsg],
    classes: &[&str],
    config: &NodeConfig,
    handler_config: &HandlerConfig,
    ledger: &Arc<Ledger>,
    limited: bool,
    args: &ReplayArgs,
    progress: &mut Progress,
) -> Result<RunReport, CliError> {
    let limiter = if limited {
        Some(Arc::new(AppRateLimiter::new(limiter_config(
            config, args.seed,
        ))?))
    } else {
        None
    };
    let handler = TxHandler::new(
        HandlerConfig {
            app_rate_limiting: limited,
            ..handler_config.clone()
        },
        // The ledger is the committed check (`find_txid` over each txn's validity window).
        Arc::<Ledger>::clone(ledger),
        limiter,
        Arc::new(AcceptAll),
    )?;
    let mut run = RunReport {
        classes: classes
            .iter()
            .map(|c| ClassReport {
                name: (*c).to_owned(),
                ..ClassReport::default()
            })
            .collect(),
        ..RunReport::default()
    };
    let t0 = msgs.first().map_or(0, |m| m.t_ns);
    let mut clock = t0;
    let mut credit = 0.0f64;
    for m in msgs {
        if m.t_ns > clock {
            credit += (m.t_ns - clock) as f64 * args.service_rate as f64 / 1e9;
            clock = m.t_ns;
            while credit >= 1.0 {
                if !handler.drain_once() {
                    credit = 0.0;
                    break;
                }
                credit -= 1.0;
            }
        }
        let outcome = handler.handle(&Message {
            bytes: &m.bytes,
            source: Source::Peer(m.origin),
            received_ns: m.t_ns,
        });
        let second = (m.t_ns.saturating_sub(t0) / 1_000_000_000) as usize;
        let class = &mut run.classes[m.class];
        if class.per_second.len() <= second {
            class.per_second.resize(second + 1, (0, 0));
        }
        class.offered += 1;
        class.per_second[second].0 += 1;
        if outcome == Outcome::Enqueued {
            class.admitted += 1;
            class.per_second[second].1 += 1;
        }
        run.max_backlog = run.max_backlog.max(handler.backlog_len() as u64);
        progress.inc(1);
    }
    handler.shutdown();
    let s = handler.stats();
    run.offered = msgs.len() as u64;
    run.admitted = s.enqueued;
    run.duplicate = s.duplicate;
    run.decode_error = s.decode_error;
    run.group_too_large = s.group_too_large;
    run.already_committed = s.already_committed;
    run.rate_limited = s.rate_limited;
    run.backlog_full = s.backlog_full;
    run.limiter_checks = s.limiter_checks;
    run.pool_accepted = s.pool_accepted;
    Ok(run)
}

/// Probes the stored blooms ([`Ledger::round_bloom`]) of the window's rounds with random ids,
/// `probes` spread evenly over the rounds that have transactions.
fn measure_fpr(
    ledger: &Ledger,
    config: &NodeConfig,
    window: Option<(Round, Round)>,
    round_txns: &[(Round, u64)],
    probes: u64,
    rng: &mut SmallRng,
) -> Result<BloomReport, LedgerError> {
    let mut report = BloomReport {
        configured_fpr: config.bloom_false_positive_rate,
        ..BloomReport::default()
    };
    let Some((lo, hi)) = window else {
        return Ok(report);
    };
    let rounds: Vec<(Round, u64)> = round_txns
        .iter()
        .copied()
        .filter(|&(r, n)| n > 0 && (lo..=hi).contains(&r))
        .collect();
    if rounds.is_empty() || probes == 0 {
        return Ok(report);
    }
    let per_round = probes.div_ceil(rounds.len() as u64);
    let mut progress = Progress::start("bloom fpr", Some(rounds.len() as u64));
    let (mut expected_sum, mut bytes, mut txns) = (0.0, 0u64, 0u64);
    for &(round, items) in &rounds {
        let Some(bloom) = ledger.round_bloom(round)? else {
            continue;
        };
        let mut id = [0u8; 32];
        let mut fp = 0;
        for _ in 0..per_round {
            rng.fill_bytes(&mut id);
            fp += u64::from(bloom.contains_id(&id));
        }
        report.rounds += 1;
        report.probes += per_round;
        report.false_positives += fp;
        expected_sum += bloom.expected_false_positive_rate(items) * per_round as f64;
        bytes += bloom.memory_bytes();
        txns += items;
        progress.inc(1);
    }
    if report.probes > 0 {
        report.measured_fpr = report.false_positives as f64 / report.probes as f64;
        report.expected_fpr = expected_sum / report.probes as f64;
    }
    report.memory_per_txn_bytes = bytes as f64 / txns.max(1) as f64;
    progress.finish(&format!(
        "measured {:.5}, formula {:.5}",
        report.measured_fpr, report.expected_fpr
    ));
    Ok(report)
}

/// The acceptance chart: per class, admitted / offered per second, with and without the
/// limiter.
pub(crate) fn acceptance_chart(traffic: &TrafficReport) -> String {
    const COLORS: [&str; 3] = ["#1a9850", "#d73027", "#4575b4"];
    let mut series = Vec::new();
    let runs = [
        (traffic.with_limiter.as_ref(), "app limiter on", false),
        (Some(&traffic.without_limiter), "app limiter off", true),
    ];
    for (run, label, dashed) in runs {
        let Some(run) = run else { continue };
        for (k, class) in run.classes.iter().enumerate() {
            if class.name == "resent" {
                // Dropped by dedup and the committed check, limiter or not: not the point.
                continue;
            }
            let points = class
                .per_second
                .iter()
                .enumerate()
                .filter(|(_, (offered, _))| *offered > 0)
                .map(|(s, &(offered, admitted))| {
                    (s as f64, 100.0 * admitted as f64 / offered as f64)
                })
                .collect();
            series.push(Series {
                label: format!("{}, {label}", class.name),
                color: COLORS[k % COLORS.len()],
                dashed,
                points,
            });
        }
    }
    line_chart(
        &format!(
            "Acceptance rate: {} (pool takes {} groups/s)",
            traffic.source, traffic.service_rate_per_second
        ),
        "seconds since the first message",
        "admitted / offered, %",
        100.0,
        &series,
    )
}
