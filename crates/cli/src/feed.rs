//! Block feeds: where the blocks of `replay` and `txids` come from, one raw block at a time in
//! round order, with the time it took to get each.
//!
//! - [`WorkloadFeed`]: the built-in deterministic workload, generated a few blocks ahead on a
//!   thread of its own (bounded channel);
//! - [`FilesFeed`]: block files, directories and archives ([`BlockSource`]), in order;
//! - [`AlgodFeed`]: a running algod. A feeder thread hands the rounds to [`FETCH_WORKERS`]
//!   fetch threads, keeping at most [`PREFETCH_ROUNDS`] requests ahead of the caller, and passes
//!   the blocks on in round order through a bounded channel, so that fetching overlaps the
//!   caller's `add_block` and memory stays bounded. With `follow`, after the range it waits for
//!   each new round (`wait-for-block-after`) and fetches it as the node makes it, until the
//!   caller drops the feed; a node that stays unreachable past the retries is then waited for
//!   (a warning on stderr each time, backoff as for retries) instead of ending the run.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use txgate_algorand::Round;
use txgate_algorand::source::BlockSource;

use crate::algod::{
    Algod, AlgodError, DEFAULT_RETRIES, FIRST_BACKOFF, MAX_BACKOFF, Patience, Token,
};
use crate::error::CliError;
use crate::rounds::RoundRange;
use crate::workload::Workload;

/// Where the blocks come from: `--blocks` or `--algod`, and `--rounds` (shared by `replay` and
/// `txids`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SourceArgs {
    /// Real algod blocks: a block file, a directory of block files named by round, or a tar /
    /// tar.bz2 archive of them (nested archives too). Repeatable: sources are read in order.
    #[arg(short, long, value_name = "PATH")]
    pub(crate) blocks: Vec<PathBuf>,
    /// A running algod's REST API, e.g. http://127.0.0.1:8080 (a bare host:port, as in the data
    /// directory's algod.net, means http://): the latest round from GET /v2/status, then each
    /// round's GET /v2/blocks/{round}?format=msgpack.
    #[arg(short, long, value_name = "URL", conflicts_with = "blocks")]
    pub(crate) algod: Option<String>,
    /// algod's API token, sent in the X-Algo-API-Token header and never printed. Without it and
    /// $ALGOD_TOKEN: $ALGORAND_DATA/algod.token when that file exists.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "ALGOD_TOKEN",
        hide_env_values = true
    )]
    pub(crate) algod_token: Option<Token>,
    /// Retries of an algod request after a connection error, a timeout or a 5xx answer
    /// (waiting 0.25 s, then twice as long each time, at most 8 s; a warning line on stderr
    /// for each).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RETRIES)]
    pub(crate) algod_retries: u32,
    /// Seconds one try of an algod request may take, from connecting to the answer's last byte
    /// (a wait-for-block-after request: algod's one-minute wait on top); then it is retried.
    #[arg(long, value_name = "SECS", value_parser = parse_secs, default_value = "15")]
    pub(crate) algod_timeout: Duration,
    /// Seconds one algod request may take with all its retries: a node that does not answer
    /// ends the command after about this long (exit 1). While following, such a node is waited
    /// for instead, with a warning each time.
    #[arg(long, value_name = "SECS", value_parser = parse_secs, default_value = "60")]
    pub(crate) algod_max_wait: Duration,
    /// Rounds to read: A..=B, A..B, A.., ..=B, or N (= 1..=N, N >= 1); a range that selects
    /// no block of --blocks is an error. Defaults: the built-in
    /// workload 1..=2000; files and archives every round; algod the last MaxTxnLife + 1 rounds
    /// up to its latest (with a --db that holds rounds: from the ledger's next round).
    #[arg(short, long, value_name = "RANGE")]
    pub(crate) rounds: Option<RoundRange>,
}

/// Parses a number of seconds: positive, finite, at most a day (fractions allowed: `0.5`).
fn parse_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{}` is not a number of seconds", crate::error::excerpt(s)))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!(
            "{secs} s: give more than 0 and at most 86400 seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// What [`SourceArgs::open`] opened.
pub(crate) struct Opened {
    /// The blocks.
    pub(crate) feed: Box<dyn Feed>,
    /// What is read, for the report: the paths, or the node's URL and the rounds.
    pub(crate) describe: String,
    /// Rounds of the range that the ledger already holds and that are not fetched (algod).
    pub(crate) skipped: u64,
    /// The last round of the range (algod), after which following starts.
    pub(crate) range_end: Option<Round>,
}

impl SourceArgs {
    /// Opens the feed of the files or the node (`None` when neither is given). `next` is the
    /// ledger's next round (`None`: an empty ledger): algod rounds before it are not fetched.
    /// With `follow`, the algod range ends at the node's latest round at most, and the feed goes
    /// on with every later round.
    ///
    /// # Errors
    ///
    /// [`CliError::Algod`] for a bad URL or token and a failed status request.
    pub(crate) fn open(
        &self,
        next: Option<Round>,
        max_txn_life: u64,
        follow: bool,
    ) -> Result<Option<Opened>, CliError> {
        let rounds = self.rounds.unwrap_or(RoundRange::ALL);
        if let Some(url) = &self.algod {
            let patience = Patience {
                retries: self.algod_retries,
                timeout: self.algod_timeout,
                max_wait: self.algod_max_wait,
            };
            let algod = Arc::new(Algod::new(url, self.token(), patience)?);
            let latest = algod.status()?.value.last_round;
            let default_start = next.unwrap_or(latest.saturating_sub(max_txn_life));
            let (mut first, mut last) = rounds.or(default_start, latest);
            if follow {
                last = last.min(latest);
            }
            let mut skipped = 0;
            if let Some(next) = next
                && first < next
            {
                if first <= last {
                    skipped = last.min(next - 1) - first + 1;
                }
                first = next;
            }
            let rounds = match (first <= last, follow) {
                (true, false) => format!("rounds {first}..={last}"),
                (true, true) => format!("rounds {first}..={last}, then following"),
                (false, true) => format!("following from round {first}"),
                (false, false) => "no new rounds".to_owned(),
            };
            let describe = format!("algod {} {rounds}", algod.url());
            return Ok(Some(Opened {
                feed: Box::new(AlgodFeed::start(algod, first, last, follow)),
                describe,
                skipped,
                range_end: Some(last.max(first.saturating_sub(1))),
            }));
        }
        if self.blocks.is_empty() {
            return Ok(None);
        }
        let mut describe = self.paths();
        if let Some(r) = self.rounds {
            describe.push_str(&format!(" rounds {r}"));
        }
        Ok(Some(Opened {
            feed: Box::new(FilesFeed::new(self.blocks.clone(), rounds)),
            describe,
            skipped: 0,
            range_end: None,
        }))
    }

    /// The `--blocks` paths, comma-separated.
    pub(crate) fn paths(&self) -> String {
        self.blocks
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `--algod-token`, `$ALGOD_TOKEN`, or `$ALGORAND_DATA/algod.token` (go-algorand's data
    /// directory keeps the node's API token there).
    fn token(&self) -> Option<Token> {
        self.algod_token.clone().or_else(|| {
            let dir = std::env::var_os("ALGORAND_DATA")?;
            let text =
                std::fs::read_to_string(std::path::Path::new(&dir).join("algod.token")).ok()?;
            text.parse().ok()
        })
    }
}

/// Threads fetching blocks from algod at once.
pub(crate) const FETCH_WORKERS: usize = 4;
/// Block requests in flight or fetched but not yet taken by the caller, at most (the feeder's
/// own queue); the channel to the caller holds [`HANDOFF_ROUNDS`] more.
pub(crate) const PREFETCH_ROUNDS: usize = 16;
/// Blocks waiting in the channel between the feeder and the caller.
pub(crate) const HANDOFF_ROUNDS: usize = 2;

/// One raw block from a feed.
#[derive(Debug)]
pub(crate) struct Fetched {
    /// Where it came from: a file, an archive entry, `algod round N`, `workload round N`.
    pub(crate) name: String,
    /// Its round as the source names it (file name, requested round), when known.
    pub(crate) round: Option<Round>,
    /// The block's msgpack bytes.
    pub(crate) bytes: Vec<u8>,
    /// Time spent getting the bytes: reading (for an archive's first block, reading the whole
    /// archive), generating, or the HTTP request with its retries.
    pub(crate) fetch: Duration,
    /// Fetched after the range, while following the node.
    pub(crate) follow: bool,
}

/// What [`Feed::next`] found.
#[derive(Debug)]
pub(crate) enum Next {
    /// The next block.
    Block(Fetched),
    /// Nothing within the wait (a follow feed waiting for the node); ask again.
    Idle,
    /// The feed is done.
    End,
}

/// A source of raw blocks in round order.
pub(crate) trait Feed {
    /// The next block, waiting at most `wait` for it where blocks come from another thread.
    ///
    /// # Errors
    ///
    /// The source's errors ([`CliError::Source`], [`CliError::Algod`]); after one, the feed
    /// ends.
    fn next(&mut self, wait: Duration) -> Result<Next, CliError>;

    /// Blocks the feed will give, when known (for progress).
    fn len_hint(&self) -> Option<u64>;
}

/// Blocks of the built-in workload generated ahead of the caller and waiting in the channel, at
/// most: with the one being generated and the one the caller holds, the workload feed keeps at
/// most this + 2 blocks in memory, whatever the number of rounds.
pub(crate) const WORKLOAD_AHEAD: usize = 2;

/// The built-in workload's rounds `first..=last`, generated in round order on a thread of their
/// own (named `workload`) and handed over through a channel of [`WORKLOAD_AHEAD`] blocks, so
/// that generating a block overlaps the caller's ingest of the previous one and memory stays
/// bounded. When the thread cannot be started, the blocks are generated on the caller's thread
/// instead (same blocks, no overlap).
pub(crate) struct WorkloadFeed {
    source: WorkloadSource,
    remaining: u64,
}

enum WorkloadSource {
    /// The generator thread and the channel from it (`None` once the feed has ended).
    Thread {
        blocks: Option<Receiver<Fetched>>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
    /// Generated on the caller's thread.
    Inline {
        workload: Workload,
        rounds: std::ops::RangeInclusive<Round>,
    },
}

impl WorkloadFeed {
    /// Rounds `first..=last` of `workload` (none when `first > last`); starts the generator.
    pub(crate) fn new(workload: Workload, first: Round, last: Round) -> Self {
        let remaining = rounds_in(first, last);
        let (tx, rx) = mpsc::sync_channel(WORKLOAD_AHEAD);
        let generator = workload.clone();
        let spawned = std::thread::Builder::new()
            .name("workload".into())
            .spawn(move || {
                for round in first..=last {
                    // The caller dropped the feed: stop generating.
                    if tx.send(generate(&generator, round)).is_err() {
                        return;
                    }
                }
            });
        let source = match spawned {
            Ok(thread) => WorkloadSource::Thread {
                blocks: Some(rx),
                thread: Some(thread),
            },
            Err(_) => return Self::inline(workload, first, last),
        };
        Self { source, remaining }
    }

    /// Rounds `first..=last` of `workload` generated on the caller's thread (the fallback of
    /// [`WorkloadFeed::new`]).
    fn inline(workload: Workload, first: Round, last: Round) -> Self {
        let remaining = rounds_in(first, last);
        Self {
            source: WorkloadSource::Inline {
                workload,
                rounds: first..=last,
            },
            remaining,
        }
    }
}

/// Rounds in `first..=last` (0 when `first > last`; saturating at `u64::MAX`).
fn rounds_in(first: Round, last: Round) -> u64 {
    if first > last {
        0
    } else {
        (last - first).saturating_add(1)
    }
}

/// Round `round` of `workload`, timed.
fn generate(workload: &Workload, round: Round) -> Fetched {
    let t = Instant::now();
    let bytes = workload.block(round);
    Fetched {
        name: format!("workload round {round}"),
        round: Some(round),
        bytes,
        fetch: t.elapsed(),
        follow: false,
    }
}

impl Feed for WorkloadFeed {
    fn next(&mut self, wait: Duration) -> Result<Next, CliError> {
        let fetched = match &mut self.source {
            WorkloadSource::Inline { workload, rounds } => {
                rounds.next().map(|round| generate(workload, round))
            }
            WorkloadSource::Thread { blocks, .. } => {
                let Some(rx) = blocks else {
                    return Ok(Next::End);
                };
                match rx.recv_timeout(wait) {
                    Ok(f) => Some(f),
                    Err(RecvTimeoutError::Timeout) => return Ok(Next::Idle),
                    // The generator has sent its last round (or ended early: it only stops
                    // when the receiver is gone, so this is the end of the range).
                    Err(RecvTimeoutError::Disconnected) => {
                        *blocks = None;
                        None
                    }
                }
            }
        };
        Ok(match fetched {
            Some(f) => {
                self.remaining = self.remaining.saturating_sub(1);
                Next::Block(f)
            }
            None => Next::End,
        })
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.remaining)
    }
}

impl Drop for WorkloadFeed {
    /// Stops the generator: the channel goes first, so that its next send fails, then the thread
    /// is joined (it finishes at most the block it is generating).
    fn drop(&mut self) {
        if let WorkloadSource::Thread { blocks, thread } = &mut self.source {
            drop(blocks.take());
            if let Some(thread) = thread.take() {
                // A panic of the generator (none is expected) was already reported on stderr.
                let _ = thread.join();
            }
        }
    }
}

/// Block files, directories and archives, read in order; blocks whose name says a round outside
/// `rounds` are skipped before they are decoded.
pub(crate) struct FilesFeed {
    paths: std::vec::IntoIter<PathBuf>,
    current: Option<BlockSource>,
    rounds: RoundRange,
}

impl FilesFeed {
    /// The blocks of `paths`, in order.
    pub(crate) fn new(paths: Vec<PathBuf>, rounds: RoundRange) -> Self {
        Self {
            paths: paths.into_iter(),
            current: None,
            rounds,
        }
    }
}

impl Feed for FilesFeed {
    fn next(&mut self, _: Duration) -> Result<Next, CliError> {
        loop {
            let t = Instant::now();
            let source = match &mut self.current {
                Some(source) => source,
                None => match self.paths.next() {
                    Some(path) => self.current.insert(BlockSource::open(path)?),
                    None => return Ok(Next::End),
                },
            };
            match source.next() {
                None => self.current = None,
                Some(raw) => {
                    let raw = raw?;
                    if raw.round.is_some_and(|r| !self.rounds.contains(r)) {
                        continue;
                    }
                    return Ok(Next::Block(Fetched {
                        name: raw.name,
                        round: raw.round,
                        bytes: raw.bytes,
                        fetch: t.elapsed(),
                        follow: false,
                    }));
                }
            }
        }
    }

    fn len_hint(&self) -> Option<u64> {
        None
    }
}

type FetchResult = Result<Fetched, AlgodError>;

/// Blocks from algod through the prefetch pipeline (see the module docs).
pub(crate) struct AlgodFeed {
    blocks: Receiver<FetchResult>,
    remaining: Option<u64>,
    done: bool,
}

impl AlgodFeed {
    /// Starts fetching rounds `first..=last` (none when `first > last`) from `algod`; with
    /// `follow`, then every later round as the node makes it.
    pub(crate) fn start(algod: Arc<Algod>, first: Round, last: Round, follow: bool) -> Self {
        let (tx, blocks) = mpsc::sync_channel(HANDOFF_ROUNDS);
        let count = if first > last { 0 } else { last - first + 1 };
        std::thread::spawn(move || feeder(&algod, first, last, follow, &tx));
        Self {
            blocks,
            remaining: (!follow).then_some(count),
            done: false,
        }
    }
}

impl Feed for AlgodFeed {
    fn next(&mut self, wait: Duration) -> Result<Next, CliError> {
        if self.done {
            return Ok(Next::End);
        }
        match self.blocks.recv_timeout(wait) {
            Ok(Ok(block)) => Ok(Next::Block(block)),
            Ok(Err(e)) => {
                self.done = true;
                Err(CliError::Algod(e))
            }
            Err(RecvTimeoutError::Timeout) => Ok(Next::Idle),
            Err(RecvTimeoutError::Disconnected) => {
                self.done = true;
                Ok(Next::End)
            }
        }
    }

    fn len_hint(&self) -> Option<u64> {
        self.remaining
    }
}

/// A fetch job: the round, whether it is a follow round, where the answer goes.
type Job = (Round, bool, SyncSender<FetchResult>);

/// The feeder thread: the range, then (following) each new round. It ends when the caller drops
/// its receiver (the next hand-off fails) or after forwarding an error. Threads blocked in a
/// request when the caller is gone end when the request does (the process may exit first).
fn feeder(
    algod: &Arc<Algod>,
    first: Round,
    last: Round,
    follow: bool,
    out: &SyncSender<FetchResult>,
) {
    let (jobs, queue) = mpsc::channel::<Job>();
    let queue = Arc::new(Mutex::new(queue));
    for _ in 0..FETCH_WORKERS {
        let (algod, queue) = (Arc::clone(algod), Arc::clone(&queue));
        std::thread::spawn(move || fetch_worker(&algod, &queue));
    }
    let mut pipeline = Pipeline {
        jobs,
        pending: VecDeque::new(),
        out,
    };
    if first <= last {
        match pipeline.run(first, last, false) {
            Ok(()) => {}
            Err(Stop::Gone) => return,
            Err(Stop::Failed(_, e)) => {
                let _ = out.send(Err(e));
                return;
            }
        }
    }
    if !follow {
        return;
    }
    // The first round not yet handed on.
    let mut next = if first <= last {
        last.saturating_add(1)
    } else {
        first
    };
    let mut backoff = FIRST_BACKOFF;
    loop {
        let status = match next.checked_sub(1) {
            Some(after) => algod.wait_for_block_after(after),
            None => algod.status(),
        };
        let step = match status {
            Ok(status) if status.value.last_round >= next => {
                let latest = status.value.last_round;
                match pipeline.run(next, latest, true) {
                    Ok(()) => {
                        next = latest.saturating_add(1);
                        Ok(())
                    }
                    Err(Stop::Gone) => return,
                    // The rounds before it were handed on.
                    Err(Stop::Failed(round, e)) => {
                        next = round;
                        Err(e)
                    }
                }
            }
            // algod's wait timed out with no new round: wait again.
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        };
        match step {
            Ok(()) => backoff = FIRST_BACKOFF,
            Err(e) if e.is_usage() => {
                let _ = out.send(Err(e));
                return;
            }
            // While following, a node that goes away (a restart, a network cut) is waited for
            // past the retries, the way `tail -F` waits for its file: a warning each time.
            Err(e) => {
                eprintln!(
                    "txgate: warning: {e}; following again in {:.2} s",
                    backoff.as_secs_f64()
                );
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

fn fetch_worker(algod: &Algod, queue: &Mutex<Receiver<Job>>) {
    loop {
        // The lock is held only while taking a job; a poisoned lock still holds the queue.
        let job = queue.lock().unwrap_or_else(|e| e.into_inner()).recv();
        let Ok((round, follow, reply)) = job else {
            return;
        };
        let result = algod.block(round).map(|answer| Fetched {
            name: format!("algod round {round}"),
            round: Some(round),
            bytes: answer.value,
            fetch: answer.took,
            follow,
        });
        // The feeder gave up on this round (an earlier error, or the caller left).
        let _ = reply.send(result);
    }
}

/// In-order hand-off of out-of-order fetches: one reply channel per round, oldest first.
struct Pipeline<'a> {
    jobs: mpsc::Sender<Job>,
    pending: VecDeque<(Round, Receiver<FetchResult>)>,
    out: &'a SyncSender<FetchResult>,
}

/// Why [`Pipeline::run`] stopped early.
enum Stop {
    /// The caller left, or the workers are gone.
    Gone,
    /// The fetch of this round failed; every round before it was handed on, none after.
    Failed(Round, AlgodError),
}

impl Pipeline<'_> {
    /// Fetches `first..=last` (first <= last) and hands every block on in order. After a
    /// failed fetch the later requests are abandoned (their answers are dropped).
    fn run(&mut self, first: Round, last: Round, follow: bool) -> Result<(), Stop> {
        let result = self.run_inner(first, last, follow);
        if result.is_err() {
            self.pending.clear();
        }
        result
    }

    fn run_inner(&mut self, first: Round, last: Round, follow: bool) -> Result<(), Stop> {
        let mut round = first;
        loop {
            if self.pending.len() >= PREFETCH_ROUNDS {
                self.hand_on_oldest()?;
            }
            let (reply, answer) = mpsc::sync_channel(1);
            self.jobs
                .send((round, follow, reply))
                .map_err(|_| Stop::Gone)?;
            self.pending.push_back((round, answer));
            if round == last {
                break;
            }
            round += 1;
        }
        while !self.pending.is_empty() {
            self.hand_on_oldest()?;
        }
        Ok(())
    }

    fn hand_on_oldest(&mut self) -> Result<(), Stop> {
        let Some((round, answer)) = self.pending.pop_front() else {
            return Ok(());
        };
        match answer.recv() {
            Ok(Ok(block)) => self.out.send(Ok(block)).map_err(|_| Stop::Gone),
            Ok(Err(e)) => Err(Stop::Failed(round, e)),
            Err(_) => Err(Stop::Gone),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algod::{DEFAULT_MAX_WAIT, DEFAULT_TIMEOUT};

    /// Every block of a feed, in order: (name, round, bytes).
    fn drain(mut feed: WorkloadFeed) -> Vec<(String, Option<Round>, Vec<u8>)> {
        let mut got = Vec::new();
        loop {
            match feed.next(Duration::from_secs(60)).unwrap() {
                Next::Block(f) => got.push((f.name, f.round, f.bytes)),
                Next::Idle => {}
                Next::End => return got,
            }
        }
    }

    #[test]
    fn workload_feed_gives_each_round_once_in_order_threaded_or_not() {
        let w = Workload::new(3, 20);
        let want: Vec<_> = (5..=9)
            .map(|r| (format!("workload round {r}"), Some(r), w.block(r)))
            .collect();
        let feed = WorkloadFeed::new(w.clone(), 5, 9);
        assert_eq!(feed.len_hint(), Some(5));
        assert!(matches!(feed.source, WorkloadSource::Thread { .. }));
        assert_eq!(drain(feed), want);
        let inline = WorkloadFeed::inline(w.clone(), 5, 9);
        assert_eq!(inline.len_hint(), Some(5));
        assert_eq!(drain(inline), want);
        assert!(drain(WorkloadFeed::new(w.clone(), 9, 5)).is_empty());
        assert_eq!(WorkloadFeed::new(w, 9, 5).len_hint(), Some(0));
    }

    #[test]
    fn dropping_a_workload_feed_early_stops_its_generator() {
        // Far more rounds than the channel holds: the generator is blocked on a full channel
        // when the feed is dropped, and the drop joins it (a generator left running would
        // make the drop hang and the test time out).
        let mut feed = WorkloadFeed::new(Workload::new(1, 10), 1, 1_000_000);
        assert!(matches!(
            feed.next(Duration::from_secs(60)).unwrap(),
            Next::Block(Fetched { round: Some(1), .. })
        ));
        drop(feed);
    }

    #[test]
    fn flag_defaults_are_the_constants_and_seconds_parse() {
        // The flags' defaults are written as text for clap: they must say the constants.
        assert_eq!(parse_secs("15"), Ok(DEFAULT_TIMEOUT));
        assert_eq!(parse_secs("60"), Ok(DEFAULT_MAX_WAIT));
        assert_eq!(parse_secs(" 0.5 "), Ok(Duration::from_millis(500)));
        for bad in ["0", "-1", "nan", "inf", "86401", "x", ""] {
            assert!(parse_secs(bad).is_err(), "{bad}");
        }
        let help = <crate::Cli as clap::CommandFactory>::command()
            .find_subcommand_mut("replay")
            .map(|c| c.render_long_help().to_string())
            .unwrap_or_default();
        assert!(help.contains("--algod-timeout <SECS>"), "{help}");
        assert!(
            help.contains("[default: 15]") && help.contains("[default: 60]"),
            "{help}"
        );
    }
}
