//! The limiter's decision counters, striped by thread so that counting a decision on the hit
//! path is a plain load and store of a cache line no other thread writes.

use crossbeam_utils::CachePadded;
use txgate_sync::sync::{AtomicU64, Ordering};

use crate::decision::Stats;

/// Counter stripes owned by one thread each (seize's thread ids `0..STRIPES`); threads with
/// larger ids share one more stripe.
const STRIPES: usize = 64;

/// Which counter to add to.
#[derive(Clone, Copy)]
pub(crate) enum Counter {
    Admitted,
    Dropped,
    Evicted,
}

/// One stripe of the decision counters.
#[derive(Default)]
struct Stripe {
    admitted: AtomicU64,
    dropped: AtomicU64,
    evicted: AtomicU64,
}

/// `STRIPES + 1` stripes: stripe `i < STRIPES` is written only by the thread with seize id `i`
/// (so [`add`](Self::add) may increment it with a plain load and store); the last one is shared
/// by every other thread (and by all threads under loom).
pub(crate) struct DecisionCounters(Box<[CachePadded<Stripe>]>);

impl DecisionCounters {
    pub(crate) fn new() -> Self {
        Self(
            (0..=STRIPES)
                .map(|_| CachePadded::new(Stripe::default()))
                .collect(),
        )
    }

    /// Adds `n` to a counter of the stripe of the thread with seize id `thread_id`; the caller is
    /// that thread (its guard's id).
    #[inline]
    pub(crate) fn add(&self, thread_id: usize, counter: Counter, n: u64) {
        if n == 0 {
            return;
        }
        // Under loom every thread id is 0: all threads share the last stripe.
        let owned = thread_id < STRIPES && !cfg!(loom);
        let stripe = &self.0[if owned { thread_id } else { STRIPES }];
        let c = match counter {
            Counter::Admitted => &stripe.admitted,
            Counter::Dropped => &stripe.dropped,
            Counter::Evicted => &stripe.evicted,
        };
        if owned {
            // Relaxed (load and store): this thread is the stripe's only writer (seize ids are
            // unique among live threads), so a plain increment is exact and skips a locked
            // instruction on the hit path.
            c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
        } else {
            // Relaxed: a statistic; the threads without a stripe of their own share this one.
            c.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The counters summed over the stripes (`entries` left 0): relaxed loads, so under
    /// concurrent use a recent value, not a snapshot.
    pub(crate) fn sum(&self) -> Stats {
        let mut stats = Stats::default();
        for c in self.0.iter() {
            // Relaxed: statistics.
            stats.admitted += c.admitted.load(Ordering::Relaxed);
            // Relaxed: statistics.
            stats.dropped += c.dropped.load(Ordering::Relaxed);
            // Relaxed: statistics.
            stats.evicted += c.evicted.load(Ordering::Relaxed);
        }
        stats
    }
}
