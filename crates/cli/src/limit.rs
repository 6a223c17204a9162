//! `txgate limit`: the app rate limiter alone over a trace, with the trace's own timestamps as
//! the clock (the upstream "real traffic" experiment of go-algorand's app rate limiter change).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use txgate_ratelimit::{AppRateLimiter, Config, Stats};

use crate::error::CliError;
use crate::output::{JsonTarget, SCHEMA_VERSION};
use crate::trace::read_trace;

/// Arguments of `txgate limit`.
#[derive(Debug, clap::Args)]
pub(crate) struct LimitArgs {
    /// Trace CSV (`ts_ns,origin,app_ids`; see `txgate replay --help`). Lines are processed in
    /// file order, each at its own `ts_ns` (nanoseconds since the Unix epoch).
    #[arg(short, long, value_name = "CSV")]
    pub(crate) trace: PathBuf,
    /// Admissions per second per (app, origin) key (go-algorand TxBacklogAppTxPerSecondRate).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub(crate) rate: u64,
    /// Sliding window, in whole seconds (go-algorand TxBacklogServiceRateWindowSeconds). The
    /// limit per window is L = rate x window.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub(crate) window: u64,
    /// Keys tracked at most, over all shards (go-algorand TxBacklogAppTxRateLimiterMaxSize).
    #[arg(long, value_name = "N", default_value_t = 1 << 20)]
    pub(crate) max_size: usize,
    /// Shards, a power of two (go-algorand uses 128 buckets).
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub(crate) shards: usize,
    /// Seed of the key-derivation salt (the salt is the seed's 8 little-endian bytes, twice):
    /// fixes sharding and thus evictions, for reproducible runs.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub(crate) seed: u64,
    /// Write one line per trace message, `LINE,admitted` or `LINE,dropped`, with no header;
    /// LINE is the message's 1-based line number in the trace file, the header being line 1.
    #[arg(long, value_name = "FILE")]
    pub(crate) decisions: Option<PathBuf>,
    /// Also write the report as JSON to FILE; `-` writes it to stdout instead of the text.
    #[arg(short, long, value_name = "FILE", value_parser = crate::output::json_target)]
    pub(crate) json: Option<JsonTarget>,
}

/// `limit`'s JSON report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LimitJson {
    /// [`SCHEMA_VERSION`].
    pub(crate) schema_version: u32,
    /// The trace file.
    pub(crate) trace: String,
    /// Admissions per second per key (`--rate`).
    pub(crate) rate_per_second: u64,
    /// The sliding window (`--window`).
    pub(crate) window_ns: u64,
    /// L = rate x window seconds: admissions per key and window.
    pub(crate) limit_per_window: u64,
    /// Keys tracked at most (`--max-size`).
    pub(crate) max_size: usize,
    /// Shards (`--shards`).
    pub(crate) shards: usize,
    /// Messages in the trace.
    pub(crate) offered: u64,
    /// Admitted by the limiter.
    pub(crate) admitted: u64,
    /// Dropped by the limiter.
    pub(crate) dropped: u64,
    /// Keys evicted to make room.
    pub(crate) evicted: u64,
    /// Keys tracked at the end.
    pub(crate) entries: u64,
}

/// What `limit` counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LimitReport {
    /// Messages in the trace.
    pub(crate) offered: u64,
    /// The limiter's counters at the end (admitted, dropped, evicted, entries).
    pub(crate) stats: Stats,
}

/// The salt `--seed` stands for.
pub(crate) fn salt_of_seed(seed: u64) -> [u8; 16] {
    let mut salt = [0; 16];
    salt[..8].copy_from_slice(&seed.to_le_bytes());
    salt[8..].copy_from_slice(&seed.to_le_bytes());
    salt
}

/// Runs `limit` and prints its report on stdout (as text, or as JSON with `--json -`).
///
/// # Errors
///
/// Trace errors ([`CliError::Trace`], [`CliError::Io`]), a limiter configuration the limiter
/// refuses ([`CliError::Limiter`]), and a decisions file that cannot be written.
pub(crate) fn run(args: &LimitArgs) -> Result<LimitReport, CliError> {
    let limiter = AppRateLimiter::new(
        Config::default()
            .with_max_size(args.max_size)
            .with_rate_per_second(args.rate)
            .with_window(Duration::from_secs(args.window))
            .with_shards(args.shards)
            .with_salt(Some(salt_of_seed(args.seed))),
    )?;
    let trace = read_trace(&args.trace)?;
    let mut decisions = match &args.decisions {
        Some(path) => Some((
            std::io::BufWriter::new(std::fs::File::create(path).map_err(CliError::io(path))?),
            path,
        )),
        None => None,
    };
    for entry in &trace {
        let admitted = limiter
            .admit(&entry.app_ids, &entry.origin, entry.ts_ns)
            .is_admit();
        if let Some((out, path)) = decisions.as_mut() {
            let word = if admitted { "admitted" } else { "dropped" };
            writeln!(out, "{},{word}", entry.line).map_err(CliError::io(path.as_path()))?;
        }
    }
    if let Some((mut out, path)) = decisions {
        out.flush().map_err(CliError::io(path.as_path()))?;
    }
    let report = LimitReport {
        offered: trace.len() as u64,
        stats: limiter.stats(),
    };
    if let Some(target) = &args.json {
        target.write(&LimitJson {
            schema_version: SCHEMA_VERSION,
            trace: args.trace.display().to_string(),
            rate_per_second: args.rate,
            window_ns: args.window.saturating_mul(1_000_000_000),
            limit_per_window: limiter.limit(),
            max_size: args.max_size,
            shards: args.shards,
            offered: report.offered,
            admitted: report.stats.admitted,
            dropped: report.stats.dropped,
            evicted: report.stats.evicted,
            entries: report.stats.entries as u64,
        })?;
        if *target == JsonTarget::Stdout {
            return Ok(report);
        }
    }
    println!(
        "limit per window  {} (rate {}/s x window {} s)",
        limiter.limit(),
        args.rate,
        args.window
    );
    println!("offered   {}", report.offered);
    println!("admitted  {}", report.stats.admitted);
    println!("dropped   {}", report.stats.dropped);
    println!("evicted   {}", report.stats.evicted);
    println!("entries   {}", report.stats.entries);
    Ok(report)
}
