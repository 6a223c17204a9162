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
//! runtime failure (I/O, the network, the database); 130 for a second Ctrl-C while following.
//! Errors print one line, `txgate: error: ...`, naming the file, line, round or node.
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
mod trace;
mod txids;
mod workload;

use clap::{Parser, Subcommand};

use crate::error::CliError;

/// Replay Algorand blocks and transaction traffic through txgate's ledger and tx handler.
#[derive(Debug, Parser)]
#[command(name = "txgate", version, about, long_about = None)]
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
            if args.json != Some(output::JsonTarget::Stdout) {
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

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("txgate: error: {}", error::one_line(&e));
        std::process::exit(e.exit_code());
    }
}
