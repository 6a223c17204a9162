//! `txgate replay`: blocks through the ledger, lookups with and without blooms, the blooms'
//! measured false-positive rate, and traffic through the tx handler with and without the app
//! rate limiter; then the report.
//!
//! Phases, in order, one module each:
//! 1. [`ingest`]: the blocks of the feed decoded and added to the ledger (and `--follow`).
//! 2. [`lookups`] with blooms: hits and misses by `lookup_txid`, misses over a whole window by
//!    `find_txid`, timed one by one.
//! 3. [`traffic`]: messages ([`messages`]: the `--trace`, else synthesized from the blocks'
//!    groups) through a `TxHandler` whose backlog a simulated pool drains at `--service-rate`
//!    groups per second of message time; once with the app rate limiter (when enabled), once
//!    without.
//! 4. [`fpr`]: the stored blooms of the window's rounds probed with random ids.
//! 5. [`lookups`] baseline: the ledger reopened without blooms (go-algorand's baseline: load the
//!    block, decode, compare) and a subset of the same lookups timed.
//!
//! The phases share the flags and the handler configuration from [`args`].
//!
//! Then the report, `--json` and `--plot` ([`chart`]). One seeded generator draws every random
//! choice, in phase order, so a seed gives the same counts run after run.

mod args;
mod chart;
mod fpr;
mod ingest;
mod lookups;
mod messages;
mod traffic;

use std::path::PathBuf;
use std::sync::Arc;

use rand::SeedableRng;
use rand::rngs::SmallRng;
use txgate_ledger::store::{Ledger, LedgerConfig, LedgerError};

pub(crate) use self::args::ReplayArgs;
use self::args::handler_config;
use crate::config::NodeConfig;
use crate::error::CliError;
use crate::output::{JsonTarget, SCHEMA_VERSION};
use crate::report::Report;
use crate::signals::TempLedger;
use crate::trace::read_trace;

/// Runs the replay: see the module docs.
///
/// # Errors
///
/// [`CliError`] naming the file, line or round for bad input; ledger and algod errors.
pub(crate) fn run(args: &ReplayArgs) -> Result<Report, CliError> {
    let (config, config_source) = crate::config::resolve(args.config.as_deref())?;
    validate(args, &config)?;
    // Read the trace before ingesting, so that a bad trace fails fast.
    let trace = args.trace.as_deref().map(read_trace).transpose()?;
    let db = Db::new(args, &config)?;
    let ledger = db.open(true)?;
    let mut rng = SmallRng::seed_from_u64(args.seed ^ 0x7478_6761_7465);

    let mut ing = ingest::run(args, &config, &ledger, &mut rng)?;
    if let Some(rounds) = args.source.rounds
        && !args.source.blocks.is_empty()
        && ing.report.rounds_read == 0
    {
        return Err(CliError::Usage(format!(
            "--rounds {rounds}: no block of {} is in that range",
            args.source.paths()
        )));
    }
    let window = lookups::window(&ledger, config.max_txn_life);
    let misses = lookups::random_misses(window, args.lookups, &mut rng);
    let mut lookups = lookups::with_blooms(&ledger, &ing.hits, &misses, window)
        .map_err(db.error("lookups in"))?;
    let ledger = Arc::new(ledger);
    let traffic = traffic::run(args, &config, &ledger, &ing, trace.as_deref(), &mut rng)?;
    let bloom = fpr::measure(
        &ledger,
        &config,
        window,
        &ing.round_txns,
        args.fpr_probes,
        &mut rng,
    )
    .map_err(db.error("bloom fpr in"))?;
    // The handlers are gone: this closes the ledger, for the baseline to open it.
    drop(ledger);
    let base = db.open(false)?;
    lookups::baseline(
        &base,
        &ing.hits,
        &misses,
        args.baseline_lookups,
        &mut lookups,
    )
    .map_err(db.error("baseline lookups in"))?;

    let report = Report {
        schema_version: SCHEMA_VERSION,
        source: std::mem::take(&mut ing.source),
        db: args.db.as_ref().map(|d| d.display().to_string()),
        config_source,
        config,
        ingest: std::mem::take(&mut ing.report),
        follow: ing.follow.take(),
        lookups,
        bloom,
        traffic,
    };
    if let Some(target) = &args.json {
        target.write(&report)?;
    }
    if let Some(target) = &args.plot {
        target.write_text(&chart::acceptance_chart(&report.traffic))?;
    }
    Ok(report)
}

/// The ledger directory (`--db`, else a temporary directory deleted when this is dropped or a
/// signal ends the process) and the ledger configuration of the node config.
struct Db {
    dir: PathBuf,
    config: LedgerConfig,
    _temp: Option<TempLedger>,
}

impl Db {
    fn new(args: &ReplayArgs, config: &NodeConfig) -> Result<Self, CliError> {
        let (dir, temp) = match &args.db {
            Some(dir) => (dir.clone(), None),
            None => {
                let temp = TempLedger::new()?;
                (temp.path().to_owned(), Some(temp))
            }
        };
        let sync_every = if temp.is_some() { TEMP_SYNC_EVERY } else { 1 };
        let config = LedgerConfig::default()
            .with_false_positive_rate(config.bloom_false_positive_rate)
            .with_max_txn_life(config.max_txn_life)
            .with_cache_bytes(LEDGER_CACHE_BYTES)
            .with_sync_every(sync_every);
        Ok(Self {
            dir,
            config,
            _temp: temp,
        })
    }

    /// Opens the ledger, with its blooms (saying on stderr how many it rebuilt) or without
    /// them (the baseline).
    fn open(&self, blooms: bool) -> Result<Ledger, CliError> {
        let config = self.config.clone().with_blooms(blooms);
        let ledger = Ledger::open(&self.dir, config).map_err(self.error("ledger"))?;
        let open = ledger.open_report();
        if blooms && !open.rebuilt.is_empty() {
            eprintln!(
                "open: rebuilt {} missing or corrupt blooms from their blocks",
                open.rebuilt.len()
            );
        }
        Ok(ledger)
    }

    /// A ledger error in `what` the directory.
    fn error(&self, what: &str) -> impl FnOnce(LedgerError) -> CliError + use<> {
        let context = format!("{what} {}", self.dir.display());
        move |source| CliError::Ledger { context, source }
    }
}

/// Bound of the ledger's page cache during the replay (redb's default is 1 GiB). The lookups
/// read rounds all over the ledger; with redb's default every page read stayed cached, which was
/// most of the default job's 653 MB peak (511 MB of the blocks' pages read by the hit lookups).
/// 128 MiB holds the txid index and bloom pages the phases share for the default job's 2,000
/// rounds of 1,000 txns; a page read again after it left the cache comes from the file (the OS
/// page cache).
const LEDGER_CACHE_BYTES: usize = 128 << 20;

/// Every how many rounds a temporary ledger's commit is made durable: it is deleted when the
/// run ends, so a sync of the file per round (most of `add_block`'s time on a disk) buys
/// nothing; its commits stay atomic and seen by lookups at once. A `--db` ledger makes every
/// round durable.
const TEMP_SYNC_EVERY: u64 = 1024;

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
    if args.json == Some(JsonTarget::Stdout) && args.plot == Some(JsonTarget::Stdout) {
        return usage("--json - and --plot - both want stdout: give one of them a file".into());
    }
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
    // The node configuration's values were checked when it was read (`config::resolve`).
    handler_config(args, config)
        .validate()
        .map_err(CliError::Handler)?;
    Ok(())
}
