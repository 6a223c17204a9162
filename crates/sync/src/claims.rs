//! [`Claims`]: a run of work items that two threads take in chunks from its two ends, lock-free.
//!
//! One thread takes chunks from the front, the other from the back, until they meet; either may
//! [`close`](Claims::close) the run, after which no one takes anything. A split of ordered work
//! whose two halves cannot be sized in advance: the thread that has more to do first (or starts
//! later) takes fewer items, and a thread never waits for the other to take its share.

use std::ops::Range;

use crate::sync::{AtomicU64, Ordering};

/// Items `0..n` of a run, `n < 2^32`, taken by [`front`](Claims::front) and
/// [`back`](Claims::back) in chunks until the two ends meet.
///
/// The items not yet taken are always one range `front..back`, kept in one word (`front` in its
/// low 32 bits, `back` in its high 32 bits), so each claim is a single compare-and-swap and two
/// claims never return the same item. The front's claims are consecutive ranges from 0 upwards,
/// the back's consecutive ranges from `n` downwards; together with what is left they partition
/// `0..n` at every instant.
///
/// Ordering: every access to the word is `Relaxed`. A claim is a read-modify-write of that one
/// word, so it reads the latest value in the word's modification order and the ranges are
/// disjoint whatever the ordering; the word carries no other data between the threads. Whatever
/// the threads produce for their items is handed over by whatever ends their work (a join, a
/// scope), which orders it.
///
/// # Examples
///
/// ```
/// use txgate_sync::claims::Claims;
///
/// let claims = Claims::new(10);
/// assert_eq!(claims.front(4), 0..4);
/// assert_eq!(claims.back(4), 6..10);
/// assert_eq!(claims.back(4), 4..6); // what is left, fewer than asked for
/// assert!(claims.front(4).is_empty());
/// assert!(claims.is_done());
/// ```
#[derive(Debug)]
pub struct Claims {
    word: AtomicU64,
}

/// The word of the range `front..back`.
fn pack(front: u32, back: u32) -> u64 {
    u64::from(back) << 32 | u64::from(front)
}

/// The range `front..back` of a word.
fn unpack(word: u64) -> (u32, u32) {
    (word as u32, (word >> 32) as u32)
}

impl Claims {
    /// A run of items `0..n`, none taken.
    pub fn new(n: u32) -> Self {
        Self {
            word: AtomicU64::new(pack(0, n)),
        }
    }

    /// Takes up to `chunk` items from the front: the next ones after the front's earlier claims
    /// (empty once the ends have met or the run is closed; `chunk` 0 takes nothing).
    pub fn front(&self, chunk: u32) -> Range<usize> {
        self.claim(|front, back| {
            let to = front + chunk.min(back - front);
            ((to, back), front..to)
        })
    }

    /// Takes up to `chunk` items from the back: the ones before the back's earlier claims
    /// (empty once the ends have met or the run is closed; `chunk` 0 takes nothing).
    pub fn back(&self, chunk: u32) -> Range<usize> {
        self.claim(|front, back| {
            let from = back - chunk.min(back - front);
            ((front, from), from..back)
        })
    }

    /// Closes the run: every item not yet taken is left untaken, and later claims are empty.
    pub fn close(&self) {
        // The front end moves onto the back end in one compare-and-swap, so a concurrent claim
        // either took its items before or takes none.
        self.claim(|_, back| ((back, back), back..back));
    }

    /// Whether nothing is left to take (the ends have met, or the run was closed).
    pub fn is_done(&self) -> bool {
        // Relaxed: a hint; a later claim is what decides.
        let (front, back) = unpack(self.word.load(Ordering::Relaxed));
        front == back
    }

    /// Where the back's claims end (`n` if the back took nothing): exact once the run is done
    /// ([`is_done`](Self::is_done) was seen true, or a claim of at least one item came back
    /// empty, or [`close`](Self::close) returned, on this thread), as a done run's word never
    /// changes again (a claim with nothing to take writes nothing, and `close` moves only the
    /// front end); a hint before.
    pub fn back_end(&self) -> usize {
        // Relaxed: once done, the word is final and this thread has read it (read-read
        // coherence: no older value can be read after it).
        unpack(self.word.load(Ordering::Relaxed)).1 as usize
    }

    /// Replaces the untaken range `front..back` by the one `take` returns, with the items it
    /// takes: `take(front, back)` gives `((front', back'), taken)`, `front..back` less `taken`
    /// being `front'..back'`.
    fn claim(&self, take: impl Fn(u32, u32) -> ((u32, u32), Range<u32>)) -> Range<usize> {
        // Relaxed load and compare-and-swap: see the type's docs.
        let mut word = self.word.load(Ordering::Relaxed);
        loop {
            let (front, back) = unpack(word);
            let (left, taken) = take(front, back);
            let taken = taken.start as usize..taken.end as usize;
            if left == (front, back) {
                // Nothing to take (and nothing to write).
                return taken;
            }
            match self.word.compare_exchange_weak(
                word,
                pack(left.0, left.1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return taken,
                Err(now) => word = now,
            }
        }
    }
}

/// Checks that the front's claims `fronts` ascend from 0 and the back's `backs` descend from
/// `n`, each without gaps; returns where the front's end and the back's begin.
#[cfg(test)]
fn check_ends(fronts: &[Range<usize>], backs: &[Range<usize>], n: usize) -> (usize, usize) {
    let mut at = 0;
    for r in fronts {
        assert_eq!(r.start, at, "front {fronts:?}");
        at = r.end;
    }
    let mut end = n;
    for r in backs {
        assert_eq!(r.end, end, "back {backs:?}");
        end = r.start;
    }
    (at, end)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_ends_meet_and_partition_the_run() {
        // Under miri (an interpreter) the small runs only.
        let runs: &[u32] = if cfg!(miri) {
            &[0, 1, 2, 7, 64]
        } else {
            &[0, 1, 2, 7, 64, 1000]
        };
        for &n in runs {
            for chunk in [1u32, 3, 16, 2000] {
                let c = Claims::new(n);
                let (mut fronts, mut backs) = (Vec::new(), Vec::new());
                // Alternate the ends, the back twice as often.
                for i in 0.. {
                    let r = if i % 3 == 0 {
                        c.front(chunk)
                    } else {
                        c.back(chunk)
                    };
                    if r.is_empty() {
                        if c.is_done() {
                            break;
                        }
                        continue;
                    }
                    assert!(r.len() <= chunk as usize);
                    if i % 3 == 0 {
                        fronts.push(r)
                    } else {
                        backs.push(r)
                    }
                }
                let mut all: Vec<usize> = fronts
                    .iter()
                    .chain(&backs)
                    .flat_map(|r| r.clone())
                    .collect();
                all.sort_unstable();
                assert_eq!(
                    all,
                    (0..n as usize).collect::<Vec<_>>(),
                    "n {n} chunk {chunk}"
                );
                check_ends(&fronts, &backs, n as usize);
            }
        }
    }

    #[test]
    fn a_closed_run_gives_nothing_more() {
        let c = Claims::new(100);
        assert_eq!(c.front(10), 0..10);
        assert_eq!(c.back(10), 90..100);
        c.close();
        assert!(c.is_done());
        assert!(c.front(10).is_empty());
        assert!(c.back(10).is_empty());
        // The largest run: the ends' arithmetic stays in 32 bits.
        let c = Claims::new(u32::MAX);
        assert_eq!(c.back(u32::MAX), 0..u32::MAX as usize);
        assert!(c.is_done());
        assert_eq!(Claims::new(5).front(0), 0..0);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::{Arc, thread};

    /// Every range `claim` gives, until it gives an empty one.
    fn take_all(claim: impl Fn() -> Range<usize>) -> Vec<Range<usize>> {
        std::iter::repeat_with(claim)
            .take_while(|r| !r.is_empty())
            .collect()
    }

    /// Both ends taken by two threads until they meet, with chunks that do not divide the run:
    /// the claims partition the run, the front's ascending from 0 and the back's descending from
    /// its end.
    #[test]
    fn two_threads_partition_the_run() {
        loom::model(|| {
            let n = 5u32;
            let c = Arc::new(Claims::new(n));
            let back = {
                let c = c.clone();
                thread::spawn(move || take_all(|| c.back(2)))
            };
            let fronts = take_all(|| c.front(1));
            let backs = back.join().unwrap();
            let (at, end) = check_ends(&fronts, &backs, n as usize);
            assert_eq!(at, end, "front {fronts:?} back {backs:?}");
        });
    }

    /// One thread closes the run after its first claim while the other takes from the back:
    /// nothing is taken twice, nothing after the close, and what is left is never taken.
    #[test]
    fn a_close_races_the_other_end() {
        loom::model(|| {
            let c = Arc::new(Claims::new(4));
            let back = {
                let c = c.clone();
                thread::spawn(move || take_all(|| c.back(1)))
            };
            let first = c.front(1);
            c.close();
            assert!(c.is_done());
            assert!(c.front(1).is_empty());
            let backs = back.join().unwrap();
            // The back's claims descend from the end; the front's one item (if the back left it)
            // is below them.
            let (_, end) = check_ends(&[], &backs, 4);
            if first.is_empty() {
                assert_eq!(
                    end, 0,
                    "front took nothing, so the back took all: {backs:?}"
                );
            } else {
                assert_eq!(first, 0..1);
                assert!(end >= 1, "back took the front's item: {backs:?}");
            }
        });
    }
}
