//! `replay --follow`: after the range, every new round as the node makes it, one line per round,
//! until Ctrl-C (SIGINT), SIGTERM or SIGHUP; then the report of the whole run.
//!
//! The first signal asks the ingest loop to stop after the round it is adding (each `add_block`
//! is one ACID write transaction, so the `--db` ledger stays valid whenever the process ends);
//! a second one ends the process at once (status 128 + the signal's number; see
//! [`crate::signals`]).
//!
//! Each line: the round, its transactions, the fetch time (HTTP request with retries), the
//! `add_block` time, the bytes of the round's bloom, and running lookup figures over the rounds
//! followed so far: every distinct txid of each round (at most [`HITS_PER_ROUND`]) looked up in
//! its round and [`MISSES_PER_ROUND`] random txids in it, with their mean latency and how many
//! were found.

use std::time::{Duration, Instant};
use txgate_bloom::Filter;

use rand::RngCore;
use rand::rngs::SmallRng;
use serde::Serialize;
use txgate_algorand::codec::Block;
use txgate_algorand::{Round, Txid};
use txgate_ledger::store::Ledger;

use crate::error::CliError;

/// Hit lookups per followed round, at most.
pub(crate) const HITS_PER_ROUND: usize = 1_000;
/// Miss lookups (random txids) per followed round.
pub(crate) const MISSES_PER_ROUND: usize = 100;

/// Whether a stop was asked for (see the module docs).
pub(crate) fn stop_requested() -> bool {
    crate::signals::stop_requested()
}

/// From here on the first SIGINT, SIGTERM or SIGHUP asks for a stop and a second one ends the
/// process ([`crate::signals`], installed by `main`).
///
/// # Errors
///
/// None today; the signature leaves room for a platform that needs a handler installed here.
pub(crate) fn install_stop_handler() -> Result<(), CliError> {
    crate::signals::set_following();
    Ok(())
}

/// What the follow phase measured, in the JSON report's `follow` object.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct FollowReport {
    /// Rounds ingested while following.
    pub(crate) rounds: u64,
    /// Their transactions.
    pub(crate) txns: u64,
    /// The first and the last of them (`null`: none).
    pub(crate) first_round: Option<Round>,
    /// The last.
    pub(crate) last_round: Option<Round>,
    /// Fetch time of those rounds, summed.
    pub(crate) fetch_ns: u64,
    /// `add_block` time of those rounds, summed.
    pub(crate) add_block_ns: u64,
    /// Hit lookups made (each round's txids in their round).
    pub(crate) hits: u64,
    /// Of those, found in their round at their payset index.
    pub(crate) hits_found: u64,
    /// Mean hit latency.
    pub(crate) hit_mean_ns: f64,
    /// Miss lookups made (random txids).
    pub(crate) misses: u64,
    /// Of those, wrongly found (must be 0).
    pub(crate) misses_found: u64,
    /// Mean miss latency.
    pub(crate) miss_mean_ns: f64,
}

/// The running figures of a follow run and its lines.
#[derive(Debug, Default)]
pub(crate) struct Follow {
    report: FollowReport,
    hit_ns: u128,
    miss_ns: u128,
}

impl Follow {
    /// The lines before the first round: what follows, and the column names.
    pub(crate) fn header(after: Option<Round>) -> String {
        let after = after.map_or("the range".to_owned(), |r| format!("round {r}"));
        format!(
            "follow: each new round after {after} as the node makes it (Ctrl-C ends with the report)\n\
             {:>10} {:>6} {:>9} {:>13} {:>12} {:>9} {:>9} {:>11} {:>13}",
            "round",
            "txns",
            "fetch_ms",
            "add_block_ms",
            "bloom_bytes",
            "hit_us",
            "miss_us",
            "hits_found",
            "misses_found"
        )
    }

    /// Looks the round's txids (hits) and random txids (misses) up in `ledger`, adds the round to
    /// the figures and returns its line (`hit_us`, `miss_us`: running means).
    ///
    /// # Errors
    ///
    /// [`CliError::Ledger`] when a lookup fails.
    pub(crate) fn round(
        &mut self,
        ledger: &Ledger,
        block: &Block,
        fetch: Duration,
        add_block: Duration,
        rng: &mut SmallRng,
    ) -> Result<String, CliError> {
        let round = block.round;
        let err = |source| CliError::Ledger {
            context: format!("lookups in followed round {round}"),
            source,
        };
        let r = &mut self.report;
        r.rounds += 1;
        r.txns += block.txns.len() as u64;
        r.first_round.get_or_insert(round);
        r.last_round = Some(round);
        r.fetch_ns += fetch.as_nanos() as u64;
        r.add_block_ns += add_block.as_nanos() as u64;
        let mut seen = std::collections::HashSet::new();
        for (index, txn) in block.txns.iter().enumerate() {
            if seen.len() >= HITS_PER_ROUND {
                break;
            }
            if !seen.insert(txn.txid) {
                continue;
            }
            let t = Instant::now();
            let found = ledger.lookup_txid(&txn.txid, round).map_err(err)?;
            self.hit_ns += t.elapsed().as_nanos();
            r.hits += 1;
            r.hits_found +=
                u64::from(found.is_some_and(|f| f.round == round && f.index as usize == index));
        }
        for _ in 0..MISSES_PER_ROUND {
            let mut id = [0; 32];
            rng.fill_bytes(&mut id);
            let t = Instant::now();
            let found = ledger.lookup_txid(&Txid(id), round).map_err(err)?;
            self.miss_ns += t.elapsed().as_nanos();
            r.misses += 1;
            r.misses_found += u64::from(found.is_some());
        }
        r.hit_mean_ns = self.hit_ns as f64 / r.hits.max(1) as f64;
        r.miss_mean_ns = self.miss_ns as f64 / r.misses.max(1) as f64;
        // The round's stored bloom, whatever its layout (0 when the ledger keeps no blooms).
        let bloom_bytes = ledger
            .round_bloom(round)
            .map_err(err)?
            .map_or(0, |bloom| bloom.memory_bytes());
        Ok(format!(
            "{:>10} {:>6} {:>9.2} {:>13.2} {:>12} {:>9.2} {:>9.2} {:>11} {:>13}",
            round,
            block.txns.len(),
            fetch.as_secs_f64() * 1e3,
            add_block.as_secs_f64() * 1e3,
            bloom_bytes,
            r.hit_mean_ns / 1e3,
            r.miss_mean_ns / 1e3,
            format!("{}/{}", r.hits_found, r.hits),
            r.misses_found
        ))
    }

    /// The figures so far.
    pub(crate) fn report(&self) -> FollowReport {
        self.report.clone()
    }
}
