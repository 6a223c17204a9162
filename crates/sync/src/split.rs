//! [`split`]: items `0..n` shared by the calling thread, which takes them from the front, and
//! one helper, which takes them from the back ([`Claims`]), with the helper's handover of its
//! work.
//!
//! The two take items until the ends of the run meet, so neither waits for the other to take
//! its share: a helper that starts late (a pool thread can take a millisecond to wake on a
//! virtual machine) takes less, and one that starts after the caller has taken everything takes
//! nothing. The caller then finishes ([`Caller::finish`]):
//!
//! - if the helper took no item, the caller does not wait for it (it may never have started),
//!   and gets `None`;
//! - if it took some, the caller waits for its result (the helper is then running, and hands
//!   its result over when its last item is done) and gets it; a panic in the helper's part is
//!   resumed on the caller.
//!
//! Which case holds is read from the claims, not from a count either side keeps: once the run
//! is done (the ends met, or someone closed it) its back end no longer moves, and the helper
//! took an item exactly when that end is below `n`. A caller that stops early (an error) just
//! drops its [`Caller`], which closes the run: the helper takes nothing more, and nobody waits.
//!
//! Each side sees only its own end of the run ([`Front`], [`Back`]): an item the helper took
//! from the front would not be counted as the helper's, and one the caller took from the back
//! would make it wait for a handover the helper does not owe.
//!
//! Checked by loom models (the two threads in every interleaving: the run used up, a caller
//! that finishes after one item while the helper takes from the back, a caller that drops its
//! side) and by unit tests (a helper that never runs, a helper that panics on another thread,
//! a drop that closes the run, many short two-thread trials).

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::PoisonError;

use crate::claims::Claims;
use crate::sync::{Arc, Mutex, MutexGuard};

/// What the caller and the helper share.
struct Shared<H> {
    claims: Claims,
    /// The run's length.
    n: usize,
    /// The helper's result, or its panic; set once, when the helper is done.
    handed: Mutex<Option<std::thread::Result<H>>>,
}

/// A run of items `0..n` (`n < 2^32`) split between the calling thread ([`Caller`]) and one
/// helper ([`Helper`]), whose part returns an `H`. Send the helper to another thread (a pool
/// job, a spawned thread) and take items from the front on the caller.
///
/// # Examples
///
/// ```
/// use txgate_sync::split::split;
///
/// let n = 100u32;
/// let (caller, helper) = split::<Vec<(usize, u64)>>(n);
/// let job = std::thread::spawn(move || {
///     helper.run(|back| {
///         let mut done = Vec::new();
///         loop {
///             let items = back.take(4);
///             if items.is_empty() {
///                 return done;
///             }
///             done.extend(items.map(|i| (i, (i as u64).pow(2))));
///         }
///     })
/// });
/// let mut out = vec![None; n as usize];
/// loop {
///     let items = caller.front().take(4);
///     if items.is_empty() {
///         break;
///     }
///     for i in items {
///         out[i] = Some((i as u64).pow(2));
///     }
/// }
/// // `None`: the helper took nothing (and was not waited for).
/// for (i, square) in caller.finish().unwrap_or_default() {
///     out[i] = Some(square);
/// }
/// assert!(out.iter().enumerate().all(|(i, s)| *s == Some((i as u64).pow(2))));
/// job.join().unwrap();
/// ```
pub fn split<H>(n: u32) -> (Caller<H>, Helper<H>) {
    let shared = Arc::new(Shared {
        claims: Claims::new(n),
        n: n as usize,
        handed: Mutex::new(None),
    });
    (
        Caller {
            shared: Arc::clone(&shared),
        },
        Helper { shared },
    )
}

/// The calling thread's side of a [`split`]: takes items from its [`front`](Caller::front),
/// then [`finish`](Caller::finish)es. Dropped without finishing, it closes the run (the helper
/// takes nothing more) and waits for nothing.
pub struct Caller<H> {
    shared: Arc<Shared<H>>,
}

/// The helper's side of a [`split`]: runs its part once ([`run`](Helper::run)), taking items
/// from the back. `Send` when `H` is, to go to another thread.
pub struct Helper<H> {
    shared: Arc<Shared<H>>,
}

impl<H> std::fmt::Debug for Caller<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("claims", &self.shared.claims)
            .finish_non_exhaustive()
    }
}

impl<H> std::fmt::Debug for Helper<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Helper")
            .field("claims", &self.shared.claims)
            .finish_non_exhaustive()
    }
}

impl<H> Caller<H> {
    /// The run's front end, which the caller takes its items from.
    pub fn front(&self) -> Front<'_> {
        Front(&self.shared.claims)
    }

    /// Ends the caller's part (closing the run if items are left, which then stay untaken):
    /// `None` if the helper took no item, without waiting for it; else the helper's result,
    /// waited for. The wait spins for up to [`SPIN`] (the helper is running, at most its last
    /// chunk of items from done), then yields the processor between looks.
    ///
    /// # Panics
    ///
    /// Resumes the helper's panic, if its part panicked after taking an item.
    pub fn finish(self) -> Option<H> {
        let claims = &self.shared.claims;
        claims.close();
        // Done now, so the back end no longer moves (`Claims::back_end`): the helper took items
        // `back..n`.
        if claims.back_end() == self.shared.n {
            return None;
        }
        Some(self.wait().unwrap_or_else(|panic| resume_unwind(panic)))
    }

    /// The helper's handover, which the caller knows is coming.
    fn wait(&self) -> std::thread::Result<H> {
        #[cfg(not(loom))]
        let start = std::time::Instant::now();
        loop {
            if let Some(handed) = lock(&self.shared.handed).take() {
                return handed;
            }
            #[cfg(not(loom))]
            if start.elapsed() >= SPIN {
                crate::sync::thread::yield_now();
                continue;
            }
            crate::sync::spin_loop();
        }
    }
}

impl<H> Drop for Caller<H> {
    fn drop(&mut self) {
        // A caller that stops early leaves nothing for the helper to take (a no-op once done).
        self.shared.claims.close();
    }
}

impl<H> Helper<H> {
    /// Runs the helper's part on the run's back end (it takes items with [`Back::take`]) and
    /// hands its result over to the caller, or its panic, caught here, to be resumed on the
    /// caller if the helper had taken an item. The part may look at [`Back::is_done`] to stop
    /// early once the caller has taken everything, and should return once `take` comes back
    /// empty: a caller that waits for it is waiting for that return.
    pub fn run(self, part: impl FnOnce(Back<'_>) -> H) {
        let result = catch_unwind(AssertUnwindSafe(|| part(Back(&self.shared.claims))));
        *lock(&self.shared.handed) = Some(result);
    }
}

/// A run's front end: the items the calling thread of a [`split`] takes, from 0 upwards. Only
/// the front: the caller's side cannot take from the back, which would make
/// [`Caller::finish`] wait for a handover the helper owes nothing for.
#[derive(Clone, Copy, Debug)]
pub struct Front<'a>(&'a Claims);

/// A run's back end: the items the helper of a [`split`] takes, from `n` downwards. Only the
/// back: an item the helper took from the front would not be counted as the helper's, and
/// [`Caller::finish`] would not wait for it.
#[derive(Clone, Copy, Debug)]
pub struct Back<'a>(&'a Claims);

impl<'a> Front<'a> {
    /// The front end of `claims`, for code that takes a run's items the way a split's caller
    /// does (a test of one side alone, say).
    pub fn of(claims: &'a Claims) -> Self {
        Self(claims)
    }

    /// Takes up to `chunk` items ([`Claims::front`]): empty once the ends have met or the run
    /// was closed.
    pub fn take(&self, chunk: u32) -> Range<usize> {
        self.0.front(chunk)
    }

    /// Closes the run ([`Claims::close`]): the items not yet taken stay untaken.
    pub fn close(&self) {
        self.0.close();
    }

    /// Whether nothing is left to take ([`Claims::is_done`]).
    pub fn is_done(&self) -> bool {
        self.0.is_done()
    }
}

impl<'a> Back<'a> {
    /// The back end of `claims`, for code that takes a run's items the way a split's helper
    /// does (a test of one side alone, say).
    pub fn of(claims: &'a Claims) -> Self {
        Self(claims)
    }

    /// Takes up to `chunk` items ([`Claims::back`]): empty once the ends have met or the run
    /// was closed.
    pub fn take(&self, chunk: u32) -> Range<usize> {
        self.0.back(chunk)
    }

    /// Whether nothing is left to take ([`Claims::is_done`]).
    pub fn is_done(&self) -> bool {
        self.0.is_done()
    }
}

/// How long [`Caller::finish`] spins for the helper's handover before it yields between looks:
/// 200 us, a few chunks of a payset's decode (a chunk of 16 entries of a 1,000-txn block takes
/// about 25 us on one core). A helper the caller waits for is running, and, as its part returns
/// once its last take comes back empty ([`Helper::run`]), at most its last chunk from done; a
/// caller that slept instead would wait about as long again to be woken.
pub const SPIN: std::time::Duration = std::time::Duration::from_micros(200);

/// The handover's lock. Nothing panics while holding it (the helper's panic is caught before it
/// is taken), but a poisoned lock still holds its value.
fn lock<T>(handed: &Mutex<T>) -> MutexGuard<'_, T> {
    handed.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes every item `claim` gives, recording `(item, item * 10)` (the tests' and models' work).
#[cfg(test)]
fn take_all(mut claim: impl FnMut() -> Range<usize>) -> Vec<(usize, usize)> {
    let mut done = Vec::new();
    loop {
        let items = claim();
        if items.is_empty() {
            return done;
        }
        done.extend(items.map(|i| (i, i * 10)));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_helper_that_never_runs_is_not_waited_for() {
        // As a pool job that never starts: the caller takes everything and does not wait.
        let (caller, helper) = split::<Vec<(usize, usize)>>(5);
        let mine = take_all(|| caller.front().take(2));
        assert_eq!(mine.len(), 5);
        assert!(caller.finish().is_none());
        drop(helper);
    }

    #[test]
    fn a_helper_that_took_everything_is_waited_for() {
        let (caller, helper) = split::<Vec<(usize, usize)>>(5);
        // The helper runs first, on this thread: the caller finds nothing and takes its result.
        helper.run(|back| take_all(|| back.take(2)));
        let got = caller.finish().expect("the helper took items");
        // Chunks of two from the back: 3..5, 1..3, 0..1.
        assert_eq!(got, [(3, 30), (4, 40), (1, 10), (2, 20), (0, 0)]);
    }

    #[test]
    fn a_callers_early_finish_leaves_the_rest_untaken() {
        let (caller, helper) = split::<Vec<usize>>(10);
        let shared = Arc::clone(&helper.shared);
        assert_eq!(caller.front().take(3), 0..3);
        helper.run(|back| back.take(3).collect());
        // The caller gives up on 3..7 and still gets the helper's 7..10.
        assert_eq!(caller.finish(), Some(vec![7, 8, 9]));
        assert!(shared.claims.is_done());
        assert!(shared.claims.front(1).is_empty() && shared.claims.back(1).is_empty());
        assert_eq!(shared.claims.back_end(), 7, "3..7 stay untaken");
    }

    #[test]
    fn a_dropped_caller_closes_the_run() {
        let (caller, helper) = split::<(bool, Range<usize>)>(10);
        let shared = Arc::clone(&helper.shared);
        assert_eq!(caller.front().take(3), 0..3);
        drop(caller);
        // The helper's view, handed over (a panic inside `run` would be caught, not seen).
        helper.run(|back| (back.is_done(), back.take(1)));
        let handed = lock(&shared.handed).take().expect("handed over");
        let (done, taken) = handed.expect("no panic");
        assert!(done, "the run is closed");
        assert!(taken.is_empty(), "the helper took {taken:?} after the drop");
        assert_eq!(shared.claims.back_end(), 10);
    }

    #[test]
    fn a_helpers_panic_is_resumed_on_the_caller() {
        let (caller, helper) = split::<()>(4);
        let job = std::thread::spawn(move || {
            helper.run(|back| {
                let _ = back.take(4);
                panic!("helper failed");
            })
        });
        // Whatever the caller took, the helper took something unless the caller took all.
        let mine = take_all(|| caller.front().take(1));
        job.join().expect("the panic is caught in `run`");
        let finished = catch_unwind(AssertUnwindSafe(|| caller.finish()));
        match finished {
            Err(panic) => {
                assert!(mine.len() < 4);
                assert_eq!(panic.downcast_ref::<&str>(), Some(&"helper failed"));
            }
            Ok(none) => {
                // The caller took every item before the helper's claim.
                assert_eq!(mine.len(), 4);
                assert!(none.is_none());
            }
        }
    }

    #[test]
    fn two_threads_do_every_item_once() {
        // Under miri (an interpreter) a few trials only.
        let trials = if cfg!(miri) { 4 } else { 500 };
        let (mut helped, mut alone) = (0, 0);
        for trial in 0..trials {
            let n = 1 + trial % 40;
            let (caller, helper) = split::<Vec<(usize, usize)>>(n as u32);
            let job = std::thread::spawn(move || helper.run(|back| take_all(|| back.take(3))));
            let mut out = vec![None; n];
            for (i, v) in take_all(|| caller.front().take(2)) {
                out[i] = Some(v);
            }
            match caller.finish() {
                Some(theirs) => {
                    helped += 1;
                    assert!(!theirs.is_empty());
                    for (i, v) in theirs {
                        assert!(out[i].replace(v).is_none(), "item {i} twice");
                    }
                }
                None => alone += 1,
            }
            assert_eq!(
                out,
                (0..n).map(|i| Some(i * 10)).collect::<Vec<_>>(),
                "trial {trial}"
            );
            job.join().unwrap();
        }
        assert_eq!(helped + alone, trials);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::thread;

    /// The caller and the helper take single items until the ends meet: every item is done
    /// exactly once, the caller waits exactly when the helper took something (and then gets
    /// every item the helper did), and no interleaving deadlocks.
    #[test]
    fn every_item_is_done_once_and_handed_over() {
        loom::model(|| {
            let n = 3;
            let (caller, helper) = split::<Vec<(usize, usize)>>(n as u32);
            let job = thread::spawn(move || helper.run(|back| take_all(|| back.take(1))));
            let mine = take_all(|| caller.front().take(1));
            let theirs = caller.finish();
            // The caller waited exactly when the helper took something, and got all of it.
            match &theirs {
                None => assert_eq!(mine.len(), n),
                Some(t) => {
                    assert!(!t.is_empty());
                    assert_eq!(mine.len() + t.len(), n);
                }
            }
            let mut out = vec![None; n];
            for (i, v) in mine.into_iter().chain(theirs.unwrap_or_default()) {
                assert!(out[i].replace(v).is_none(), "item {i} twice");
            }
            assert_eq!(out, (0..n).map(|i| Some(i * 10)).collect::<Vec<_>>());
            job.join().unwrap();
        });
    }

    /// The caller finishes after one item (closing the run) while the helper takes single items
    /// from the back: `finish` returns exactly what the helper took (`None` for nothing), so no
    /// item the helper did is lost, whenever the close falls among its claims.
    #[test]
    fn an_early_finish_gets_everything_the_helper_took() {
        loom::model(|| {
            let n = 3;
            let (caller, helper) = split::<Vec<usize>>(n as u32);
            let job = thread::spawn(move || {
                let mut took = Vec::new();
                helper.run(|back| {
                    took = take_all(|| back.take(1))
                        .into_iter()
                        .map(|(i, _)| i)
                        .collect();
                    took.clone()
                });
                took
            });
            let first = caller.front().take(1);
            let got = caller.finish();
            let took = job.join().unwrap();
            assert_eq!(got.is_some(), !took.is_empty(), "first {first:?}");
            assert_eq!(got.unwrap_or_default(), took, "first {first:?}");
        });
    }

    /// A caller that drops its side closes the run: a helper that runs after the drop takes
    /// nothing.
    #[test]
    fn a_dropped_caller_leaves_nothing_to_take() {
        loom::model(|| {
            let (caller, helper) = split::<bool>(3);
            let first = caller.front().take(1);
            assert_eq!(first, 0..1);
            drop(caller);
            let job = thread::spawn(move || {
                let mut nothing = false;
                helper.run(|back| {
                    nothing = back.take(1).is_empty();
                    nothing
                });
                nothing
            });
            assert!(
                job.join().unwrap(),
                "the helper took an item after the drop"
            );
        });
    }

    /// The caller gives up after its first item (drops its side, as a decode that meets bad
    /// bytes does) while the helper takes from the back: nothing is taken twice, the helper
    /// stops, and nobody waits for anybody.
    #[test]
    fn a_caller_that_gives_up_waits_for_nothing() {
        loom::model(|| {
            let n = 3;
            let (caller, helper) = split::<()>(n as u32);
            let job = thread::spawn(move || {
                let mut mine = None;
                helper.run(|back| {
                    mine = Some(take_all(|| back.take(1)));
                });
                mine.unwrap()
            });
            let first = caller.front().take(1);
            drop(caller);
            let theirs = job.join().unwrap();
            for (i, _) in &theirs {
                assert!(!first.contains(i), "item {i} taken by both");
            }
            // The helper's items descend from the end without gaps.
            for (k, (i, _)) in theirs.iter().enumerate() {
                assert_eq!(*i, n - 1 - k);
            }
        });
    }
}
