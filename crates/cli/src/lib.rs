//! `txgate`: replay Algorand blocks and incoming transaction traffic through txgate's ledger
//! (per-round txid blooms) and transaction handler (app rate limiter), and report.
//!
//! Commands:
//! - `txgate replay`: ingest, lookups with and without blooms, the blooms' measured
//!   false-positive rate, and traffic through the tx handler with and without the app rate
//!   limiter; a table on stdout, `--json` and `--plot` (SVG) on request. Without `--blocks` it
//!   replays a built-in deterministic workload (2,000 rounds of 1,000 transactions by default).
//!   Blocks come from `--blocks` (files, directories, archives) or `--algod URL` (a running
//!   node's REST API); `--follow` then goes on with every new round until Ctrl-C.
//! - `txgate txids --blocks PATH | --algod URL`: every transaction as CSV
//!   `round,intra,txid,type,app_id`.
//! - `txgate limit --trace CSV`: the app rate limiter alone over a trace, on the trace's clock.
//!
//! `--json FILE` (`-`: stdout) writes a command's report for machines; `--quiet` drops progress.
//!
//! Exit status: 0 on success; 2 for bad input or usage (clap's usage errors too); 1 for a
//! runtime failure (I/O, the network, the database); 130, 143 or 129 when SIGINT (Ctrl-C),
//! SIGTERM or SIGHUP ends it (while following: a second one), the temporary ledger removed.
//! Errors print one line, `txgate: error: ...`, naming the file, line, round or node.
//!
//! The command-line tool is this library's [`main`]; the library exists so that the fuzz targets
//! can call the readers of what operators feed the CLI ([`fuzzing`]). It is not an API.
//!
//! Modules, one line each (txids are computed by `txgate_algorand::codec::TxidHasher`):
//! - [`replay`]: `txgate replay`, one submodule per phase (ingest, lookups, fpr, traffic) plus
//!   the traffic's messages and the chart.
//! - [`txids`]: `txgate txids`, the CSV of every transaction.
//! - [`limit`]: `txgate limit`, the app rate limiter alone over a trace.
//! - [`feed`]: block feeds (files, directories, archives, algod, the built-in workload).
//! - [`algod`]: the algod REST client (blocks, status, wait-for-block-after), with retries.
//! - [`follow`]: `replay --follow`: each new round after the range, one line each.
//! - [`workload`]: the built-in deterministic workload (synthetic blocks, senders' peers).
//! - [`trace`]: traffic trace CSV (`ts_ns,origin,app_ids`).
//! - [`config`]: the node configuration (TOML or go-algorand's config.json).
//! - [`rounds`]: `--rounds` ranges.
//! - [`report`]: the replay report's figures and its table.
//! - [`output`]: `--json` targets and the schema version.
//! - [`plot`]: the SVG line-chart writer of `--plot`.
//! - [`progress`]: phase progress on stderr.
//! - [`signals`]: SIGINT, SIGTERM, SIGHUP and the temporary ledger.
//! - [`error`]: [`CliError`] and the exit codes.

mod algod;
mod config;
mod error;
mod feed;
mod follow;
mod limit;
mod output;
mod plot;
mod progress;
mod replay;
mod report;
mod rounds;
mod signals;
mod trace;
mod txids;
mod workload;

use clap::{Parser, Subcommand};

use crate::error::CliError;

/// What `txgate help` says after the commands: the exit statuses and the waits.
const AFTER_HELP: &str = "\
Exit status: 0 success; 2 bad input or usage (a flag, a configuration value, a trace line, a \
block, a --rounds that selects nothing); 1 a runtime failure (I/O, the network, the database); \
130 / 143 / 129 when SIGINT (Ctrl-C) / SIGTERM / SIGHUP ends the run (while following: a \
second one; the first ends it with the report). A temporary ledger is removed on every exit.

A node that does not answer: each try of a request may take --algod-timeout (default 15 s), \
each retry prints a warning, and a request gives up after --algod-max-wait (default 60 s) with \
its retries (--algod-retries, default 5) before following starts.";

/// Replay Algorand blocks and transaction traffic through txgate's ledger and tx handler.
#[derive(Debug, Parser)]
#[command(name = "txgate", version, about, long_about = None, after_help = AFTER_HELP)]
struct Cli {
    /// No progress on stderr (nor follow lines): the report only.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Replay blocks (built-in workload or real algod blocks) and traffic; print the report.
    Replay(replay::ReplayArgs),
    /// Print every transaction of the blocks (files or algod) as CSV:
    /// round,intra,txid,type,app_id (app_id: the transaction's application id, empty when none:
    /// not an app call, or an app creation).
    Txids(txids::TxidsArgs),
    /// Run the app rate limiter alone over a trace, with the trace's timestamps as the clock.
    Limit(limit::LimitArgs),
}

fn run(cli: Cli) -> Result<(), CliError> {
    progress::set_quiet(cli.quiet);
    match cli.command {
        Command::Replay(args) => {
            let report = replay::run(&args)?;
            let stdout = Some(output::JsonTarget::Stdout);
            if args.json != stdout && args.plot != stdout {
                print!("{}", report.table());
            }
            Ok(())
        }
        Command::Txids(args) => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            txids::run(&args, &mut out).map(|_| ())
        }
        Command::Limit(args) => limit::run(&args).map(|_| ()),
    }
}

/// The `txgate` command: parses the command line, runs the command, prints an error as one
/// line and exits with its status.
#[doc(hidden)]
pub fn main() {
    let cli = Cli::parse();
    // Before any other thread starts: they inherit the blocked signals.
    if let Err(e) = signals::install().and_then(|()| run(cli)) {
        // A reader that stopped reading (`txgate txids ... | head`) is not a failure: like the
        // Unix tools, stop quietly (Rust ignores SIGPIPE, so the write returns EPIPE instead).
        // Everything the run created is already cleaned up by the time `run` returns.
        if e.is_broken_pipe() {
            return;
        }
        eprintln!("txgate: error: {}", error::one_line(&e));
        std::process::exit(e.exit_code());
    }
}

/// The CLI's readers of what operators feed it, for the fuzz targets (`fuzz/`). Not an API:
/// hidden, and free to change with the CLI.
#[doc(hidden)]
pub mod fuzzing {
    use std::path::Path;

    use crate::config::NodeConfig;

    /// One trace message as the trace reader gives it: (1-based line, ts_ns, origin bytes,
    /// app ids).
    pub type TraceLine = (u64, u64, Vec<u8>, Vec<u64>);

    /// Parses trace bytes as `--trace` reads a file; the error is its one-line message.
    ///
    /// # Errors
    ///
    /// The reader's error, as the CLI prints it.
    pub fn trace(bytes: &[u8]) -> Result<Vec<TraceLine>, String> {
        crate::trace::parse_trace(Path::new("fuzz.csv"), bytes)
            .map(|entries| {
                entries
                    .into_iter()
                    .map(|e| (e.line, e.ts_ns, e.origin.as_bytes().to_vec(), e.app_ids))
                    .collect()
            })
            .map_err(|e| crate::error::one_line(&e))
    }

    /// The configuration's values by key, as JSON (go-algorand's names).
    pub type Values = serde_json::Value;

    /// Parses and checks configuration bytes as `--config FILE` does, the format chosen by
    /// `json` (a `.json` name) or by the text; returns the values, the format and the JSON keys
    /// ignored. The error is (line, one-line message).
    ///
    /// # Errors
    ///
    /// The reader's error (a parse error or a value out of range).
    pub fn config(
        bytes: &[u8],
        json: bool,
    ) -> Result<(Values, &'static str, u64), (Option<u64>, String)> {
        let name = if json { "fuzz.json" } else { "fuzz.toml" };
        let (config, format, ignored, _) = NodeConfig::parse_bytes(Path::new(name), bytes)?;
        let values = serde_json::to_value(&config).map_err(|e| (None, e.to_string()))?;
        // The limiter's check allocates its tables: above go-algorand's default size the
        // harness checks the default size instead, so that a fuzzer's huge value costs no
        // gigabytes (the CLI checks the value as given).
        let mut checked = config.clone();
        checked.app_tx_rate_limiter_max_size = checked.app_tx_rate_limiter_max_size.min(1 << 20);
        checked.check().map_err(|(_, message)| (None, message))?;
        Ok((values, format, ignored))
    }

    /// `values` written as a TOML configuration file (the keys go-algorand's).
    ///
    /// # Errors
    ///
    /// When the values are not a configuration.
    pub fn config_to_toml(values: &Values) -> Result<String, String> {
        let config: NodeConfig =
            serde_json::from_value(values.clone()).map_err(|e| e.to_string())?;
        toml::to_string(&config).map_err(|e| e.to_string())
    }

    /// `values` written as a go-algorand config.json.
    ///
    /// # Errors
    ///
    /// When the values are not a configuration.
    pub fn config_to_json(values: &Values) -> Result<String, String> {
        let config: NodeConfig =
            serde_json::from_value(values.clone()).map_err(|e| e.to_string())?;
        serde_json::to_string(&config).map_err(|e| e.to_string())
    }
}
