//! [`TxHandler`]: building a handler, the entry point of every message
//! ([`TxHandler::handle`]), starting workers, draining, shutting down and the counters.

use std::sync::{Arc, OnceLock, PoisonError};

use crossbeam_utils::CachePadded;
use txgate_ratelimit::AppRateLimiter;
use txgate_sync::sync::thread;
use txgate_sync::sync::{AtomicUsize, Condvar, Mutex, Ordering};

use super::backlog::Backlog;
use super::config::{HandlerConfig, HandlerConfigError, WorkerError};
use super::dedup::DedupCache;
use super::inner::{CLOSED, IN_FLIGHT_ONE, Inner, Phase};
use super::interface::{CommittedTxids, Message, Outcome, PoolSink};
use super::keys::KeyCache;
use super::stats::{Counters, HandlerStats};

/// go-algorand's transaction handler without signature checks: see the [module docs](super).
///
/// `handle` takes `&self` and may be called from any number of threads; the handler is
/// `Send + Sync` (share it in an [`Arc`]). Dropping it shuts it down.
pub struct TxHandler {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TxHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxHandler")
            .field("backlog_capacity", &self.inner.backlog.capacity())
            .field("congestion_threshold", &self.inner.congestion_threshold)
            .field("limiter", &self.inner.limiter.is_some())
            .finish_non_exhaustive()
    }
}

impl TxHandler {
    /// A handler with `config`, checking commits through `committed`, rate limiting through
    /// `limiter` (when `config.app_rate_limiting`), and handing groups to `sink`. No worker runs
    /// until [`start_workers`](Self::start_workers).
    ///
    /// # Errors
    ///
    /// [`HandlerConfigError`] for a zero capacity, size, interval, group size or message size, a
    /// backlog or key cache above its limit ([`HandlerConfig::validate`]), a percentage above
    /// 100, rate limiting on without a limiter, or a failing OS random source.
    pub fn new(
        config: HandlerConfig,
        committed: Arc<dyn CommittedTxids + Send + Sync>,
        limiter: Option<Arc<AppRateLimiter>>,
        sink: Arc<dyn PoolSink>,
    ) -> Result<Self, HandlerConfigError> {
        // `check` refuses rate limiting without a limiter, so `limiter` is `Some` when it is on.
        config.check(limiter.is_some())?;
        let limiter = limiter.filter(|_| config.app_rate_limiting);
        let dedup = if config.dedup {
            let interval_ns = u64::try_from(config.dedup_interval.as_nanos()).unwrap_or(u64::MAX);
            let salt = match config.dedup_salt {
                Some(salt) => salt,
                None => {
                    let mut salt = [0; 16];
                    txgate_ratelimit::RandomSourceError::fill(&mut salt)
                        .map_err(HandlerConfigError::Salt)?;
                    salt
                }
            };
            Some(DedupCache::new(salt, config.dedup_max_size, interval_ns))
        } else {
            None
        };
        let key_cache = match &limiter {
            Some(limiter) if config.app_key_cache > 0 => {
                let mut seed = [0; 16];
                txgate_ratelimit::RandomSourceError::fill(&mut seed)
                    .map_err(HandlerConfigError::Salt)?;
                Some(KeyCache::new(
                    config.app_key_cache,
                    limiter.config().shards,
                    seed,
                ))
            }
            _ => None,
        };
        Ok(Self {
            inner: Arc::new(Inner {
                dedup,
                decoder: config.decoder,
                max_group_size: config.max_group_size,
                max_message_size: config.max_message_size,
                committed,
                key_cache,
                limiter,
                congestion_threshold: config.congestion_threshold(),
                sink,
                backlog: Backlog::new(config.backlog_capacity),
                counters: Counters::default(),
                gate: AtomicUsize::new(0),
                slots: OnceLock::new(),
                workers: Mutex::new(Vec::new()),
                phase: Mutex::new(Phase::Open),
                phase_done: Condvar::new(),
            }),
        })
    }

    /// Runs the synchronous part of the pipeline on `msg` (see the [module docs](super)) and
    /// counts its outcome. Never blocks, beyond dashmap's shard locks in the dedup cache and, at
    /// a dedup rotation tick, the few atomic operations of the thread that steps the generation;
    /// never panics on any input.
    pub fn handle(&self, msg: &Message<'_>) -> Outcome {
        let inner = &*self.inner;
        // Relaxed: a refusal that leaves the gate's count alone once the close is visible, so
        // calls arriving after shutdown began cannot keep the count above zero and starve the
        // wait for it; the RMW below decides for calls that race the close.
        if inner.gate.load(Ordering::Relaxed) & CLOSED != 0 {
            inner.counters.count(Outcome::ShutDown);
            return Outcome::ShutDown;
        }
        // Relaxed: entering orders nothing before it; what matters is this RMW's place in the
        // gate's modification order relative to shutdown's `fetch_or` (see `Inner::gate`).
        let gate = inner.gate.fetch_add(IN_FLIGHT_ONE, Ordering::Relaxed);
        // Leaves the gate even if the pipeline unwinds (a panicking `CommittedTxids`, decoder or
        // clock of the caller's), so `shutdown` never waits for a call that is gone.
        let in_flight = InFlight(&inner.gate);
        let outcome = if gate & CLOSED != 0 {
            Outcome::ShutDown
        } else {
            inner.pipeline(msg)
        };
        inner.counters.count(outcome);
        if outcome == Outcome::Enqueued {
            inner.wake_one();
        }
        drop(in_flight);
        outcome
    }

    /// Starts `n` worker threads that pop groups and hand them to the sink until shutdown.
    ///
    /// # Errors
    ///
    /// [`WorkerError`] when `n` is zero, workers already run, the handler is shut down, or the OS
    /// refuses a thread (those already spawned keep running).
    pub fn start_workers(&self, n: usize) -> Result<(), WorkerError> {
        if n == 0 {
            return Err(WorkerError::ZeroWorkers);
        }
        let mut workers = self
            .inner
            .workers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Relaxed: shutdown sets the bit before it takes this lock, so under the lock the bit
        // is visible iff shutdown already took the workers.
        if self.inner.gate.load(Ordering::Relaxed) & CLOSED != 0 {
            return Err(WorkerError::ShutDown);
        }
        if self.inner.slots.get().is_some() {
            return Err(WorkerError::AlreadyStarted);
        }
        // Set before any worker runs: a worker indexes its slot, and the spawn orders the set
        // before the worker's first step.
        let _ = self
            .inner
            .slots
            .set((0..n).map(|_| CachePadded::default()).collect());
        for index in 0..n {
            let inner = Arc::clone(&self.inner);
            match thread::Builder::new()
                .name(format!("txgate-handler-{index}"))
                .spawn(move || inner.worker_loop(index))
            {
                Ok(handle) => workers.push(handle),
                // The slots of workers never spawned stay unset and are never woken.
                Err(source) => return Err(WorkerError::Spawn { index, source }),
            }
        }
        Ok(())
    }

    /// Pops one group from the backlog and hands it to the sink on the caller's thread (the
    /// worker step, for deterministic tests and single-threaded embedders). Returns `false` when
    /// the backlog was empty.
    pub fn drain_once(&self) -> bool {
        match self.inner.backlog.pop() {
            Some(group) => {
                self.inner.process(group);
                true
            }
            None => false,
        }
    }

    /// Runs [`drain_once`](Self::drain_once) until the backlog is empty; returns how many groups
    /// it processed.
    pub fn drain(&self) -> usize {
        let mut n = 0;
        while self.drain_once() {
            n += 1;
        }
        n
    }

    /// Closes the handler (later messages get [`Outcome::ShutDown`]), waits for `handle` calls in
    /// flight, joins the workers once the backlog is empty, and drains any remainder on the
    /// caller's thread. Afterwards every enqueued group has been handed to the sink exactly once.
    /// Idempotent; also run on drop.
    ///
    /// Concurrent calls: one of them does the work and the others wait until it is done, so
    /// every call returns only once the backlog has reached the sink. Two calls cannot wait:
    ///
    /// - on one of the handler's own workers (a [`PoolSink`] that shuts the handler down, or
    ///   drops its last reference to it), the call closes the handler and returns at once: a
    ///   thread cannot join itself. The workers still empty the backlog and exit; a later
    ///   `shutdown` on another thread (or the drop) waits for them.
    /// - from inside the sink while this same thread runs the shutdown's final drain, the call
    ///   returns at once (the outer call finishes the work).
    ///
    /// Calling it from a [`CommittedTxids`] or decoder, inside a `handle` call, never returns:
    /// shutdown waits for every `handle` call in flight, that one included.
    ///
    /// A worker that panicked (only possible through a bug in the handler itself: sink panics
    /// are caught and counted) is joined and ignored; its backlog share is drained here.
    pub fn shutdown(&self) {
        self.inner.shutdown();
    }

    /// A snapshot of the counters and gauges.
    pub fn stats(&self) -> HandlerStats {
        let inner = &*self.inner;
        let mut stats = inner.counters.snapshot();
        stats.backlog_len = inner.backlog.len();
        stats.dedup_rotations = inner.dedup.as_ref().map_or(0, DedupCache::rotations);
        stats
    }

    /// The backlog length above which the app rate limiter runs.
    pub fn congestion_threshold(&self) -> usize {
        self.inner.congestion_threshold
    }

    /// Groups in the backlog now.
    pub fn backlog_len(&self) -> usize {
        self.inner.backlog.len()
    }

    /// Messages remembered by the dedup cache now (current + previous generation; 0 with dedup
    /// off). Walks the cache: for tests and diagnostics.
    pub fn dedup_len(&self) -> usize {
        self.inner.dedup.as_ref().map_or(0, DedupCache::live_len)
    }
}

impl Drop for TxHandler {
    fn drop(&mut self) {
        self.inner.shutdown();
    }
}

/// One `handle` call inside the shutdown gate; leaving it (on drop, so also on unwind)
/// decrements the gate's count.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        // Release: the push and the counter of the call happen before shutdown's Acquire read
        // of a zero count, so its drain sees the pushed group.
        self.0.fetch_sub(IN_FLIGHT_ONE, Ordering::Release);
    }
}
