//! The ingest phase: each block of the feed (the built-in [`Workload`], `--blocks` sources in
//! order, or `--algod`; see [`crate::feed`]) is decoded with [`decode_block`], verified
//! ([`Block::verify`]: its payset commitments, and the round its source names: a file's name,
//! the round asked of algod) before any of its txids is used, and added with
//! [`Ledger::add_verified_block`]; rounds the ledger already holds are skipped (a continued
//! `--db`): the ledger refuses them as [`LedgerError::AlreadyHeld`] after checking that they are
//! of its network. With `--follow`, every new round
//! after the range too, one line each, until Ctrl-C (see [`crate::follow`]).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rand::Rng;
use rand::rngs::SmallRng;
use txgate_algorand::codec::{Block, Expected, Txn, decode_block};
use txgate_algorand::{Round, Txid};
use txgate_ledger::store::{Ledger, LedgerError, VerifiedBlock};

use super::args::{DEFAULT_WORKLOAD_ROUNDS, ReplayArgs};
use crate::config::NodeConfig;
use crate::error::CliError;
use crate::feed::{Fetched, Next, Opened, WorkloadFeed};
use crate::follow::{Follow, FollowReport};
use crate::output::JsonTarget;
use crate::progress::Progress;
use crate::report::IngestReport;
use crate::rounds::RoundRange;
use crate::workload::Workload;

/// Recent blocks kept for exact resends.
const RESEND_ROUNDS: usize = 8;
/// Groups kept as honest-traffic templates (from the latest blocks).
const TEMPLATE_GROUPS: usize = 20_000;
/// How long the ingest loop waits for a block before it looks at the stop flag again.
const POLL: Duration = Duration::from_millis(100);

/// What ingest keeps for the later phases.
#[derive(Default)]
pub(super) struct Ingested {
    /// The ingest figures of the report.
    pub(super) report: IngestReport,
    /// What the blocks came from, for the report.
    pub(super) source: String,
    /// The follow figures (`--follow` only).
    pub(super) follow: Option<FollowReport>,
    /// Reservoir sample of (round, index, txid) of the txns read, at most `--lookups`.
    pub(super) hits: Vec<(Round, u32, Txid)>,
    /// Distinct txids seen so far (the reservoir's denominator).
    seen: u64,
    /// (round, distinct txids) of every block read.
    pub(super) round_txns: Vec<(Round, u64)>,
    /// The latest blocks' groups, oldest first, at most [`TEMPLATE_GROUPS`] (filled at the end
    /// of the phase from `recent_txns`).
    pub(super) templates: VecDeque<Vec<Txn>>,
    /// The latest non-empty blocks' transactions with their number of groups, oldest first:
    /// only as many blocks as the last [`TEMPLATE_GROUPS`] groups span.
    recent_txns: VecDeque<(Vec<Txn>, usize)>,
    /// Groups in `recent_txns`.
    recent_groups: usize,
    /// The latest non-empty blocks' bytes, oldest first, at most [`RESEND_ROUNDS`].
    pub(super) recent_raw: VecDeque<Vec<u8>>,
    /// The latest block's genesis id (lossy UTF-8) and hash.
    pub(super) genesis: Option<(String, [u8; 32])>,
}

/// Runs the ingest phase: see the module docs. `rng` draws the reservoir sample (and the
/// follow lines' probes).
///
/// # Errors
///
/// [`CliError`] for a block that does not decode, a ledger error, a source or algod error.
pub(super) fn run(
    args: &ReplayArgs,
    config: &NodeConfig,
    ledger: &Ledger,
    rng: &mut SmallRng,
) -> Result<Ingested, CliError> {
    let next = ledger.latest().map(|l| l.saturating_add(1));
    let Opened {
        mut feed,
        describe: source,
        skipped,
        range_end,
    } = open_feed(args, config, next)?;
    if args.follow {
        crate::follow::install_stop_handler()?;
    }
    let rounds = args.source.rounds.unwrap_or(RoundRange::ALL);
    let mut ing = Ingested {
        source,
        ..Ingested::default()
    };
    ing.report.rounds_skipped = skipped;
    let started = Instant::now();
    let (mut fetch, mut fetch_wait, mut add_time) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let mut follow: Option<Follow> = None;
    // Follow lines go to stdout, unless stdout carries the JSON or the chart.
    let lines_to_stderr =
        args.json == Some(JsonTarget::Stdout) || args.plot == Some(JsonTarget::Stdout);
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
        let ingested = ingest_one(ledger, &mut ing, rng, args.lookups, fetched, filter)?;
        if let Some(p) = progress.as_mut() {
            p.inc(1);
        }
        if let Some((block, Some(add))) = &ingested {
            add_time += *add;
            if is_follow && let Some(f) = follow.as_mut() {
                let line = f.round(ledger, block, fetch_one, *add, rng)?;
                say(&line);
            }
        }
        if let Some((block, _)) = ingested {
            ing.keep_groups(block.txns);
        }
        waiting_since = Instant::now();
    }
    if let Some(p) = progress.take() {
        p.finish(&format!("{} rounds", ing.report.rounds_read));
    }
    drop(feed);
    ing.fill_templates();
    let elapsed = started.elapsed();
    let secs = elapsed.as_secs_f64();
    let ingest = &mut ing.report;
    ingest.time_ns = elapsed.as_nanos() as u64;
    ingest.fetch_ns = fetch.as_nanos() as u64;
    ingest.fetch_wait_ns = fetch_wait.as_nanos() as u64;
    ingest.add_block_ns = add_time.as_nanos() as u64;
    ingest.rounds_per_second = ingest.rounds_ingested as f64 / secs.max(1e-9);
    ingest.txns_per_second = ingest.txns_ingested as f64 / secs.max(1e-9);
    ingest.first_round = ledger.first();
    ingest.latest_round = ledger.latest();
    ing.follow = match (&follow, args.follow) {
        (Some(f), _) => Some(f.report()),
        (None, true) => Some(Default::default()),
        (None, false) => None,
    };
    Ok(ing)
}

/// The feed of blocks (`--blocks`, `--algod`, else the built-in workload) from `next` on.
fn open_feed(
    args: &ReplayArgs,
    config: &NodeConfig,
    next: Option<Round>,
) -> Result<Opened, CliError> {
    if let Some(opened) = args.source.open(next, config.max_txn_life, args.follow)? {
        return Ok(opened);
    }
    let (first, last) = args
        .source
        .rounds
        .unwrap_or(RoundRange::ALL)
        .or(1, DEFAULT_WORKLOAD_ROUNDS);
    let workload = Workload::new(args.seed, args.txns_per_round);
    Ok(Opened {
        feed: Box::new(WorkloadFeed::new(workload, first, last)),
        describe: format!(
            "built-in workload (seed {}, rounds {first}..={last} x {} txns)",
            args.seed, args.txns_per_round
        ),
        skipped: 0,
        range_end: None,
    })
}

impl Ingested {
    /// Keeps the transactions of a block read (moved, not copied) for the traffic templates,
    /// dropping the oldest kept blocks that the latest [`TEMPLATE_GROUPS`] groups no longer
    /// reach.
    fn keep_groups(&mut self, txns: Vec<Txn>) {
        let groups = groups_of(&txns).count();
        if groups == 0 {
            return;
        }
        self.recent_txns.push_back((txns, groups));
        self.recent_groups += groups;
        while let Some(&(_, oldest)) = self.recent_txns.front() {
            if self.recent_groups - oldest < TEMPLATE_GROUPS {
                break;
            }
            self.recent_groups -= oldest;
            self.recent_txns.pop_front();
        }
    }

    /// `templates`: the latest [`TEMPLATE_GROUPS`] groups of the kept blocks, oldest first.
    fn fill_templates(&mut self) {
        for (txns, _) in std::mem::take(&mut self.recent_txns) {
            for group in groups_of(&txns) {
                self.templates.push_back(group.to_vec());
                if self.templates.len() > TEMPLATE_GROUPS {
                    self.templates.pop_front();
                }
            }
        }
        self.recent_groups = 0;
    }
}

/// The groups of a payset in order: each run of transactions sharing a group id, and each
/// transaction without one on its own.
fn groups_of(txns: &[Txn]) -> impl Iterator<Item = &[Txn]> {
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= txns.len() {
            return None;
        }
        let mut j = i + 1;
        if let Some(g) = txns[i].group {
            while j < txns.len() && txns[j].group == Some(g) {
                j += 1;
            }
        }
        let group = &txns[i..j];
        i = j;
        Some(group)
    })
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
    // `add_block` time as the ledger's `add_block` spends it: decode, verification and the
    // write (the block is decoded and verified here, once, for the later phases too).
    let t = Instant::now();
    let block: Block = decode_block(&bytes).map_err(|source| CliError::Block {
        round: source.round().or(round),
        name: name.clone(),
        source,
    })?;
    let verified = VerifiedBlock::verify(&block, &bytes, &Expected::default().with_round(round))
        .map_err(|source| CliError::Verify {
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
    let added = match ledger.add_verified_block(&verified) {
        Ok(_) => {
            let add = t.elapsed();
            r.rounds_ingested += 1;
            r.txns_ingested += block.txns.len() as u64;
            r.ingested_bytes += bytes.len() as u64;
            Some(add)
        }
        // A round the ledger holds, of its network (a continued `--db`): skipped.
        Err(LedgerError::AlreadyHeld { .. }) => {
            r.rounds_skipped += 1;
            None
        }
        Err(e) => return Err(ledger_err(e)),
    };
    let mut distinct: Vec<Txid> = block.txns.iter().map(|t| t.txid).collect();
    distinct.sort_unstable();
    distinct.dedup();
    ing.round_txns.push((block.round, distinct.len() as u64));
    // Reservoir sampling (Algorithm R) of hits; the first index of a repeated txid is the
    // one the ledger reports. Only rounds the ledger keeps: a skipped block of a continued
    // `--db` may be older than the ledger's first round.
    let kept = added.is_some() || ledger.first().is_some_and(|first| block.round >= first);
    // A chain's block never repeats a txid (go-algorand's evaluator refuses a transaction the
    // ledger already holds: `TransactionInLedgerError`), so the set is only built for a block
    // that does, e.g. a hand-made one.
    let repeats = distinct.len() < block.txns.len();
    let mut earlier = std::collections::HashSet::new();
    for (index, txn) in block.txns.iter().enumerate().filter(|_| kept) {
        if repeats && !earlier.insert(txn.txid) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use txgate_algorand::codec::decode_block;

    #[test]
    fn templates_are_the_latest_groups_of_every_block_kept() {
        // 40 rounds of 700 txns: about 40 x 620 groups, more than TEMPLATE_GROUPS.
        let w = Workload::new(5, 700);
        let blocks: Vec<Vec<Txn>> = (1..=40)
            .map(|r| decode_block(&w.block(r)).unwrap().txns)
            .collect();
        // Every group of every block, in order: the templates are its last TEMPLATE_GROUPS.
        let all: Vec<Vec<Txn>> = blocks
            .iter()
            .flat_map(|txns| {
                let mut groups = Vec::new();
                let mut i = 0;
                while i < txns.len() {
                    let mut j = i + 1;
                    while txns[i].group.is_some()
                        && j < txns.len()
                        && txns[j].group == txns[i].group
                    {
                        j += 1;
                    }
                    groups.push(txns[i..j].to_vec());
                    i = j;
                }
                groups
            })
            .collect();
        assert!(all.len() > TEMPLATE_GROUPS + 700, "{}", all.len());
        assert!(all.iter().any(|g| g.len() > 1));
        let mut ing = Ingested::default();
        for txns in blocks {
            ing.keep_groups(txns);
            // Never more blocks than the last TEMPLATE_GROUPS groups span (+ the newest).
            let without_oldest = ing.recent_groups - ing.recent_txns.front().unwrap().1;
            assert!(without_oldest < TEMPLATE_GROUPS, "{without_oldest}");
        }
        ing.fill_templates();
        let want: Vec<Vec<Txn>> = all[all.len() - TEMPLATE_GROUPS..].to_vec();
        assert_eq!(ing.templates.len(), TEMPLATE_GROUPS);
        assert!(ing.templates.iter().eq(want.iter()));
        assert!(ing.recent_txns.is_empty());
    }
}
