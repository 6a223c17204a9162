//! The lookup phases, timed one lookup at a time:
//! - with blooms: [`Ledger::lookup_txid`] of txids sampled from the blocks read (hits, each in
//!   its round) and of random txids in random rounds of the window (misses);
//!   [`Ledger::find_txid`] of the misses over the whole window;
//! - the baseline: a ledger opened without blooms (go-algorand's way: load the block, decode,
//!   compare) and the first `--baseline-lookups` of the same hits and misses.

use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, RngCore};
use txgate_algorand::{Round, Txid};
use txgate_ledger::store::{Ledger, LedgerError};

use crate::progress::Progress;
use crate::report::{Latency, LookupReport};

/// A hit: a txid of the blocks read, its round and its index in the block.
pub(super) type Hit = (Round, u32, Txid);
/// A miss: a random txid and a round of the window to look it up in.
pub(super) type Miss = (Round, Txid);

/// The rounds the lookups cover: the latest MaxTxnLife + 1 rounds the ledger holds (fewer when
/// it holds fewer); `None` for an empty ledger.
pub(super) fn window(ledger: &Ledger, max_txn_life: u64) -> Option<(Round, Round)> {
    match (ledger.first(), ledger.latest()) {
        (Some(first), Some(latest)) => {
            Some((first.max(latest.saturating_sub(max_txn_life)), latest))
        }
        _ => None,
    }
}

/// `n` misses: for each, a uniform round of `window`, then 32 random bytes (none without a
/// window).
pub(super) fn random_misses(
    window: Option<(Round, Round)>,
    n: usize,
    rng: &mut SmallRng,
) -> Vec<Miss> {
    match window {
        Some((lo, hi)) => (0..n)
            .map(|_| {
                let round = rng.random_range(lo..=hi);
                let mut id = [0; 32];
                rng.fill_bytes(&mut id);
                (round, Txid(id))
            })
            .collect(),
        None => Vec::new(),
    }
}

/// Lookups of one kind: each one's latency (ns, in the order of the items) and how many found
/// what they looked for.
struct Timed {
    samples: Vec<u64>,
    found: u64,
}

impl Timed {
    fn count(&self) -> u64 {
        self.samples.len() as u64
    }

    fn latency(&self) -> Latency {
        Latency::of(self.samples.clone())
    }
}

/// Runs `lookup` on each item, one at a time, timing each call (in ns); `lookup` says whether
/// the lookup found what it should count as found.
fn time_each<T>(
    items: impl IntoIterator<Item = T>,
    progress: &mut Progress,
    mut lookup: impl FnMut(T) -> Result<bool, LedgerError>,
) -> Result<Timed, LedgerError> {
    let (mut samples, mut found) = (Vec::new(), 0);
    for item in items {
        let t = Instant::now();
        let hit = lookup(item)?;
        samples.push(t.elapsed().as_nanos() as u64);
        found += u64::from(hit);
        progress.inc(1);
    }
    Ok(Timed { samples, found })
}

/// [`Ledger::lookup_txid`] of each hit (found: at its own round and index) and of each miss
/// (found: at all, which a miss never should be).
fn hits_and_misses(
    ledger: &Ledger,
    hits: &[Hit],
    misses: &[Miss],
    progress: &mut Progress,
) -> Result<(Timed, Timed), LedgerError> {
    let hit = time_each(hits, progress, |&(round, index, txid)| {
        let found = ledger.lookup_txid(&txid, round)?;
        Ok(found.is_some_and(|r| r.round == round && r.index == index))
    })?;
    let miss = time_each(misses, progress, |(round, txid)| {
        Ok(ledger.lookup_txid(txid, *round)?.is_some())
    })?;
    Ok((hit, miss))
}

/// The lookups with blooms: every hit and miss, then the misses over the whole `window`. The
/// hits' latencies are also reported split by their round: inside `window` (the rounds whose
/// blooms the ledger holds in memory) or older (kept rounds that left it).
///
/// # Errors
///
/// [`LedgerError`] of a lookup.
pub(super) fn with_blooms(
    ledger: &Ledger,
    hits: &[Hit],
    misses: &[Miss],
    window: Option<(Round, Round)>,
) -> Result<LookupReport, LedgerError> {
    let mut progress = Progress::start("lookups", Some((hits.len() + 2 * misses.len()) as u64));
    let (hit, miss) = hits_and_misses(ledger, hits, misses, &mut progress)?;
    let window_miss = match window {
        Some((lo, hi)) => time_each(misses, &mut progress, |(_, txid)| {
            Ok(ledger.find_txid(txid, lo..=hi)?.is_some())
        })?,
        None => time_each(&[] as &[Miss], &mut progress, |_| Ok(false))?,
    };
    let (in_window, older) = split_by_window(hits, &hit.samples, window);
    let lookups = LookupReport {
        hits: hit.count(),
        hits_found: hit.found,
        blooms_hit: hit.latency(),
        blooms_hit_window: Latency::of(in_window),
        blooms_hit_older: Latency::of(older),
        window_first_round: window.map(|(lo, _)| lo),
        misses: miss.count(),
        misses_found: miss.found + window_miss.found,
        blooms_miss: miss.latency(),
        blooms_window_miss: window_miss.latency(),
        ..LookupReport::default()
    };
    progress.finish(&format!(
        "{}/{} hits found, {} misses wrongly found",
        lookups.hits_found, lookups.hits, lookups.misses_found
    ));
    Ok(lookups)
}

/// The latencies `samples` of `hits` (same order) split into those of hits in a round of
/// `window` and those of hits in an older round (`window` `None`: no rounds, so all older).
fn split_by_window(
    hits: &[Hit],
    samples: &[u64],
    window: Option<(Round, Round)>,
) -> (Vec<u64>, Vec<u64>) {
    let mut split = (Vec::new(), Vec::new());
    for (&(round, _, _), &ns) in hits.iter().zip(samples) {
        if window.is_some_and(|(lo, hi)| (lo..=hi).contains(&round)) {
            split.0.push(ns);
        } else {
            split.1.push(ns);
        }
    }
    split
}

/// The baseline lookups through `base` (a ledger opened without blooms): the first `n` hits and
/// misses, into `lookups` with the median speedups of the blooms.
///
/// # Errors
///
/// [`LedgerError`] of a lookup.
pub(super) fn baseline(
    base: &Ledger,
    hits: &[Hit],
    misses: &[Miss],
    n: usize,
    lookups: &mut LookupReport,
) -> Result<(), LedgerError> {
    let (hits, misses) = (&hits[..hits.len().min(n)], &misses[..misses.len().min(n)]);
    let mut progress = Progress::start("baseline", Some((hits.len() + misses.len()) as u64));
    let (hit, miss) = hits_and_misses(base, hits, misses, &mut progress)?;
    lookups.baseline_hits = hit.count();
    lookups.baseline_hits_found = hit.found;
    lookups.baseline_hit = hit.latency();
    lookups.baseline_misses = miss.count();
    lookups.baseline_misses_found = miss.found;
    lookups.baseline_miss = miss.latency();
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    lookups.speedup_hit_p50 = ratio(lookups.baseline_hit.p50_ns, lookups.blooms_hit.p50_ns);
    lookups.speedup_miss_p50 = ratio(lookups.baseline_miss.p50_ns, lookups.blooms_miss.p50_ns);
    progress.finish(&format!(
        "{}/{} hits found",
        lookups.baseline_hits_found, lookups.baseline_hits
    ));
    Ok(())
}
