//! The linearizability checker of two threads' histories (hidden; built for loom models and for
//! the crate's own threaded trials).
//!
//! A history is what two threads' operations returned on a limiter, when each started and ended
//! (stamps from one counter), the reference bits each operation's CLOCK sweeps cleared, and the
//! limiter's end state: its tracked keys, some keys' counts, the keys whose reference bit is set,
//! and the keys it evicted. [`explained`] searches for a sequential order of the operations'
//! steps on [`Model`] that gives all of it and keeps real time (an operation that ended before
//! another began has all its steps before the other's), as the crate docs' E0-E2 define the
//! steps:
//!
//! - a single key's operation is one step, perhaps preceded by sweep steps of its insertion
//!   (E1: each clears one reference bit, after the scan that found the key missing);
//! - a group of two keys or more is its lookup steps, one per key, then its admit-or-drop step;
//!   before its last attempt it may have taken the lookups of attempts that another operation
//!   aborted (they stand, E2), and sweep steps of its insertions.
//!
//! A group's attempt aborts only after its first lookup, and only while the other thread could
//! be aborting it: after a step of the other thread that can change a key (since the attempt's
//! first lookup), or while the other thread's current operation overlaps the group's in real
//! time (an operation that meets the group's marker aborts it, possibly before it takes a step
//! of its own). It cannot decide once the other thread evicted a key it looked up (the table's
//! attempt then finds that node evicted and starts over).
//!
//! The search is depth-first over both threads' next steps. It cuts a branch as soon as a
//! decision, a victim or a count of cleared bits differs from the history's, and remembers
//! every state it reached (up to what no later step can tell apart, [`Model::fingerprint`]),
//! exploring none twice: two groups can abort each other's attempts without end. Its work is
//! bounded ([`BUDGET`]): a history that needs more is undecided.

use std::num::NonZeroU32;

use crate::model::{Model, Seen, Sweeps};
use crate::{AppKey, AppRateLimiter, Config, Decision};

/// The instant, in ns since the Unix epoch, that [`Op`]s count from.
pub const T0: u64 = 1_700_000_000 * 1_000_000_000;

/// An operation of a history: a weighted admission of a group at `T0 + dt` (keys, cost, `dt`),
/// or a penalty of a group at `T0`.
#[derive(Clone, Debug)]
pub enum Op {
    /// `admit_keys_n(keys, cost, T0 + dt)`.
    Admit(Vec<AppKey>, u32, u64),
    /// `penalize_keys(keys, T0)`.
    Penalize(Vec<AppKey>),
}

impl Op {
    fn keys(&self) -> &[AppKey] {
        match self {
            Op::Admit(k, ..) | Op::Penalize(k) => k,
        }
    }
}

/// `n` as a weighted admission's cost.
///
/// # Panics
///
/// If `n` is 0.
pub fn cost(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).expect("a cost is at least 1")
}

/// Runs `op` on the limiter: its decision, or `None` for a penalty.
pub fn on_limiter(l: &AppRateLimiter, op: &Op) -> Option<Decision> {
    match op {
        Op::Admit(k, c, dt) => Some(l.admit_keys_n(k, cost(*c), T0 + dt).expect("a cost <= L")),
        Op::Penalize(k) => {
            l.penalize_keys(k, T0);
            None
        }
    }
}

/// Runs `op` on the model: its decision, or `None` for a penalty.
pub fn on_model(m: &mut Model, op: &Op) -> Option<Decision> {
    match op {
        Op::Admit(k, c, dt) => Some(m.admit_keys_n(k, cost(*c), T0 + dt).expect("a cost <= L")),
        Op::Penalize(k) => {
            m.penalize_keys(k, T0);
            None
        }
    }
}

/// The end state a history compares: the tracked keys, the compared keys' counts, and the keys
/// whose reference bit is set (E1: a sweep clears a bit only in a step the sequential model
/// takes too).
pub type Outcome = (Vec<(u32, u64)>, Vec<Option<(u32, u32)>>, Vec<(u32, u64)>);

/// The limiter's end state, for `keys`' counts (call only when no operation is in flight).
pub fn outcome(l: &AppRateLimiter, keys: &[AppKey]) -> Outcome {
    (
        l.tracked_keys(),
        keys.iter().map(|k| l.counts(*k)).collect(),
        l.referenced_keys(),
    )
}

/// The end state of the model, as [`outcome`].
fn model_outcome(m: &Model, keys: &[AppKey]) -> Outcome {
    (
        m.tracked_keys(),
        keys.iter().map(|k| m.counts(k)).collect(),
        m.referenced_keys(),
    )
}

/// What one thread's operations gave.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// Per operation, its decision (`None`: a penalty).
    pub got: Vec<Option<Decision>>,
    /// Per operation, its start and end stamps, from a counter shared by both threads.
    pub spans: Vec<(usize, usize)>,
    /// Per operation, the reference bits its CLOCK sweeps cleared.
    pub cleared: Vec<usize>,
}

/// Runs `ops` on the limiter in the calling thread, stamping each operation's start and end
/// with `stamp` (each call takes the next stamp of a counter both threads share).
pub fn run(l: &AppRateLimiter, ops: &[Op], stamp: impl Fn() -> usize) -> Run {
    let mut r = Run::default();
    for op in ops {
        let before = l.cleared_by_this_thread();
        let start = stamp();
        r.got.push(on_limiter(l, op));
        let end = stamp();
        r.spans.push((start, end));
        r.cleared.push(l.cleared_by_this_thread() - before);
    }
    r
}

/// A history of two threads: the set-up run first on one thread, each thread's operations and
/// what they gave, the keys whose counts are compared, and the limiter's end state.
#[derive(Clone, Debug)]
pub struct History {
    /// Operations run alone before the two threads started.
    pub setup: Vec<Op>,
    /// Each thread's operations, in program order.
    pub threads: [Vec<Op>; 2],
    /// What each thread's operations gave.
    pub runs: [Run; 2],
    /// The keys whose counts [`History::outcome`] holds.
    pub keys: Vec<AppKey>,
    /// The limiter's end state ([`outcome`]).
    pub outcome: Outcome,
    /// The keys the limiter evicted, the set-up's included, sorted (`victims`).
    pub victims: Vec<(u32, u64)>,
}

/// A step of the sequential model in the checker.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// A single key's operation, whole.
    Whole,
    /// One step of the CLOCK sweep of the insertion of an operation's `j`-th key (canonical
    /// order), before that key's lookup (clears one bit).
    Sweep(usize),
    /// The scan that found an operation's `j`-th key missing, before its sweep's first step
    /// (E1: a sweep runs from such a scan; its later steps may come after another operation
    /// inserted the key). Changes nothing; allowed only where the model does not track the key.
    Miss(usize),
    /// The lookup of a group's next key (canonical order) in its current attempt.
    Lookup,
    /// Another operation aborted the group's current attempt after some of its lookups (which
    /// stand, E2): the next attempt looks its keys up again from the first. Allowed only after
    /// the other thread took a step since the attempt's first lookup: an attempt starts over
    /// only when another operation evicts one of its keys or aborts it after the attempt read
    /// it, each such change in one of that operation's steps.
    Abort,
    /// A group's admit-or-drop (or penalty) step.
    Decide,
}

/// Where one thread is in its operations, for the search.
#[derive(Clone, Debug, Default)]
struct Thread {
    /// The operation in flight or next (its index in the thread's program order).
    op: usize,
    /// Whether that operation has taken a step.
    started: bool,
    /// A group: the lookups its current attempt has taken.
    next: usize,
    /// The steps that may change a key (not `Miss` nor `Abort`) the other thread took since
    /// the current attempt's first lookup.
    others: usize,
    /// A group: another operation evicted a key after the current attempt looked it up. The
    /// table's attempt then aborts (it finds the node it looked up evicted), so it cannot
    /// decide.
    lost: bool,
    /// A group: what its current attempt's lookups saw.
    seen: Vec<Seen>,
    /// A group: the victims its current attempt's lookups made, each with the lookup's key.
    made: Vec<(usize, (u32, u64))>,
    /// Per key of the operation: a `Miss` step taken, not yet followed by the key's insertion.
    missed: Vec<bool>,
    /// The operation's sweep steps (E1: they belong to its insertions).
    sweeps: Sweeps,
    /// The reference bits the operation's steps cleared in the model so far.
    cleared: usize,
}

/// A state of the search: the model and where each thread is.
#[derive(Clone, Debug)]
struct State {
    m: Model,
    threads: [Thread; 2],
}

impl State {
    /// The state up to what no later step can tell apart (see [`Model::fingerprint`]).
    fn fingerprint(&self) -> String {
        let [a, b] = &self.threads;
        let thread = |t: &Thread| {
            format!(
                "{} {} {} {} {} {:?} {:?} {:?} {}",
                t.op,
                t.started,
                t.next,
                t.others.min(1),
                t.lost,
                t.seen,
                t.made,
                t.missed,
                t.cleared
            )
        };
        format!(
            "{} / {} / {}",
            self.m.fingerprint(&[&a.sweeps, &b.sweeps]),
            thread(a),
            thread(b)
        )
    }
}

/// What the search compares with, computed once.
struct Search<'h> {
    h: &'h History,
    /// Per thread and operation, the operation's distinct keys in canonical order, each with
    /// the index of its first occurrence ([`Model::group_keys`]).
    keys: [Vec<Vec<(AppKey, usize)>>; 2],
    /// Whether the shards evict by CLOCK (only then do sweep steps exist).
    clock: bool,
    /// The recorded victims, with how many times each was evicted.
    victims: std::collections::HashMap<(u32, u64), usize>,
    /// The states the search has reached (their fingerprints). Two groups can abort each
    /// other's attempts in turn without end, so the steps' graph has cycles: a state reached
    /// again is not explored again (if an order from it exists, the first visit finds it).
    visited: std::collections::HashSet<String>,
    /// Steps the search may still take before it gives up.
    budget: usize,
}

impl Search<'_> {
    /// The steps thread `t` may take next in `s`.
    fn steps(&self, s: &State, t: usize) -> Vec<Step> {
        let (h, th) = (self.h, &s.threads[t]);
        let Some(span) = h.runs[t].spans.get(th.op) else {
            return Vec::new();
        };
        // Real time: an operation of the other thread that ended before this one started has
        // all its steps before this one's first.
        let other = &s.threads[1 - t];
        if !th.started
            && h.runs[1 - t]
                .spans
                .iter()
                .enumerate()
                .any(|(j, &(_, end))| end < span.0 && other.op <= j)
        {
            return Vec::new();
        }
        let keys = &self.keys[t][th.op];
        let mut v = Vec::new();
        if self.clock && th.cleared < h.runs[t].cleared[th.op] {
            // A key's sweep runs in its lookup (its insertion), so only keys the current
            // attempt has still to look up take sweep steps.
            for (j, (key, _)) in keys.iter().enumerate().skip(th.next) {
                if th.missed.get(j) == Some(&true) || th.sweeps.steps(key) > 0 {
                    v.push(Step::Sweep(j));
                } else if s.m.counts(key).is_none() {
                    v.push(Step::Miss(j));
                }
            }
        }
        if keys.len() < 2 {
            v.push(Step::Whole);
        } else {
            if th.next < keys.len() {
                v.push(Step::Lookup);
            } else {
                v.push(Step::Decide);
            }
            // An abort follows a step of the other thread that can change a key, or comes from
            // the other thread's operation in progress (overlapping this one in real time),
            // which may resolve the attempt's marker before it takes a step of its own.
            let concurrent = h.runs[1 - t]
                .spans
                .get(other.op)
                .is_some_and(|&(start, end)| start < span.1 && span.0 < end);
            if th.next > 0 && (th.others > 0 || concurrent) {
                v.push(Step::Abort);
            }
        }
        v
    }

    /// `s` after thread `t` takes `step`, or `None` if the step does not give what the history
    /// recorded (a decision, a victim, a reference bit cleared).
    fn take(&self, s: &State, t: usize, step: Step) -> Option<State> {
        let h = self.h;
        let mut s = s.clone();
        let State { m, threads } = &mut s;
        let th = &mut threads[t];
        let op = &h.threads[t][th.op];
        let keys = &self.keys[t][th.op];
        let (c, dt) = match op {
            Op::Admit(_, c, dt) => (Some(*c), *dt),
            Op::Penalize(_) => (None, 0),
        };
        if !th.started {
            th.started = true;
            th.missed = vec![false; keys.len()];
        }
        m.swap_sweeps(&mut th.sweeps);
        let (cleared, victims) = (m.cleared(), m.victims().len());
        let mut done = false;
        let ok = match step {
            Step::Whole => {
                th.missed[0] = false;
                done = true;
                on_model(m, op) == h.runs[t].got[th.op]
            }
            Step::Sweep(j) => {
                th.missed[j] = false;
                m.sweep_step(&keys[j].0)
            }
            Step::Miss(j) => {
                th.missed[j] = true;
                true
            }
            Step::Lookup => {
                let j = th.next;
                if j == 0 {
                    // The attempt's first read: only the other thread's later steps can abort
                    // it.
                    th.others = 0;
                }
                th.missed[j] = false;
                th.next += 1;
                let (key, index) = keys[j];
                let before = m.victims().len();
                m.lookup_in_attempt(&mut th.seen, key, index, T0 + dt);
                th.made
                    .extend(m.victims()[before..].iter().map(|&v| (j, v)));
                true
            }
            Step::Abort => {
                th.next = 0;
                th.lost = false;
                th.seen.clear();
                th.made.clear();
                true
            }
            Step::Decide if th.lost => false,
            Step::Decide => {
                done = true;
                let own: Vec<bool> = keys
                    .iter()
                    .enumerate()
                    .map(|(i, (key, _))| {
                        // Evicted by a later lookup of the same attempt.
                        th.made
                            .iter()
                            .any(|&(j, v)| j > i && v == (key.shard(), key.hash()))
                    })
                    .collect();
                match c {
                    Some(c) => {
                        let d = m.decide_step(&th.seen, &own, cost(c), T0 + dt);
                        d.is_some() && d == h.runs[t].got[th.op]
                    }
                    None => m.penalize_step(&th.seen, &own, T0).is_some(),
                }
            }
        };
        m.swap_sweeps(&mut th.sweeps);
        th.cleared += (m.cleared() - cleared) as usize;
        // Every victim the step made was recorded, as often.
        let mut made = std::collections::HashMap::new();
        for v in m.victims() {
            *made.entry(*v).or_insert(0) += 1;
        }
        let recorded = m.victims()[victims..]
            .iter()
            .all(|v| made[v] <= self.victims.get(v).copied().unwrap_or(0));
        let budget = h.runs[t].cleared[th.op];
        if !ok || !recorded || th.cleared > budget || (done && th.cleared != budget) {
            return None;
        }
        if done {
            // The operation ended, and its sweep with it.
            *th = Thread {
                op: th.op + 1,
                ..Thread::default()
            };
        }
        if !matches!(step, Step::Miss(_) | Step::Abort) {
            let other = &mut threads[1 - t];
            other.others += 1;
            // A key the other thread's current attempt looked up, evicted by this step.
            if let Some(keys) = self.keys[1 - t].get(other.op) {
                other.lost |= m.victims()[victims..].iter().any(|&v| {
                    keys[..other.next]
                        .iter()
                        .any(|(k, _)| v == (k.shard(), k.hash()))
                });
            }
        }
        Some(s)
    }

    /// Whether `s` has taken every operation's steps and ends as the history does: `None` if
    /// steps are left.
    fn finished(&self, s: &State) -> Option<bool> {
        let h = self.h;
        if (0..2).any(|t| s.threads[t].op < h.threads[t].len()) {
            return None;
        }
        let mut v = s.m.victims().to_vec();
        v.sort_unstable();
        Some(v == h.victims && model_outcome(&s.m, &h.keys) == h.outcome)
    }

    /// `s`'s frame for the search: the steps to try from it; `None` if the search reached it
    /// before.
    fn frame(&mut self, s: State) -> Option<Frame> {
        let key = s.fingerprint();
        if !self.visited.insert(key) {
            return None;
        }
        let mut next: Vec<(usize, Step)> = (0..2)
            .flat_map(|t| self.steps(&s, t).into_iter().map(move |step| (t, step)))
            .collect();
        // Tried from the end.
        next.reverse();
        Some(Frame { state: s, next })
    }

    /// Whether some order of the steps left from `root` gives the rest of the history; `Err` if
    /// the search ran out of its budget first. Depth-first, on a stack of its own (a model's
    /// thread under loom has a small stack).
    fn explains(&mut self, root: State) -> Result<bool, Exhausted> {
        if let Some(same) = self.finished(&root) {
            return Ok(same);
        }
        let mut stack: Vec<Frame> = self.frame(root).into_iter().collect();
        while let Some(top) = stack.last_mut() {
            let Some((t, step)) = top.next.pop() else {
                // Every step from here was tried: no order from this state.
                stack.pop();
                continue;
            };
            self.budget = self.budget.checked_sub(1).ok_or(Exhausted)?;
            let Some(next) = self.take(&top.state, t, step) else {
                continue;
            };
            match self.finished(&next) {
                Some(true) => return Ok(true),
                Some(false) => {}
                None => stack.extend(self.frame(next)),
            }
        }
        Ok(false)
    }
}

/// A state on the search's stack.
struct Frame {
    state: State,
    /// The steps not yet tried from it, the next one last.
    next: Vec<(usize, Step)>,
}

/// The checker's search took more steps than its budget allowed (the history is too large to
/// decide).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exhausted;

/// Most steps [`explained`]'s search takes: a history that needs more is [`Exhausted`]. The
/// histories of the loom models and the threaded trials need far fewer.
pub const BUDGET: usize = 1_000_000;

/// Whether some sequential order of `h`'s operations' steps on the model of `config` gives what
/// the limiter gave (see the module docs): every decision, the end state, the victims, and for
/// each operation the number of reference bits its sweeps cleared (E1: each clearing is a step
/// of the model, so a stray clearing fails even where the end state hides it). The search is
/// depth-first over the threads' next steps, cut short where a step's decision, victim or
/// clearing differs from the history's, and remembers the states it found no order from.
///
/// # Errors
///
/// [`Exhausted`] if the search takes more than [`BUDGET`] steps.
///
/// # Panics
///
/// If `config` is refused.
pub fn explained(config: &Config, h: &History) -> Result<bool, Exhausted> {
    let mut m = Model::new(config).expect("a valid config");
    for op in &h.setup {
        let _ = on_model(&mut m, op);
    }
    let keys = [0, 1].map(|t| {
        h.threads[t]
            .iter()
            .map(|op| m.group_keys(op.keys()))
            .collect()
    });
    let mut victims = std::collections::HashMap::new();
    for v in &h.victims {
        *victims.entry(*v).or_insert(0) += 1;
    }
    let mut search = Search {
        h,
        keys,
        clock: m.clock(),

        victims,
        visited: std::collections::HashSet::new(),
        budget: BUDGET,
    };
    search.explains(State {
        m,
        threads: Default::default(),
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::Origin;

    /// One shard of `max_size` keys, L = `limit` per 1 s window (CLOCK sets of `ways` ways if
    /// given, else exact LRU), salted with `salt`.
    fn one_shard(limit: u64, max_size: usize, ways: Option<usize>, salt: u8) -> Config {
        Config::default()
            .with_rate_per_second(limit)
            .with_window(std::time::Duration::from_secs(1))
            .with_max_size(max_size)
            .with_shards(1)
            .with_clock_ways(ways)
            .with_salt(Some([salt; 16]))
    }

    /// A history of one key at L = 1: thread 0 admitted once, thread 1 was dropped (`Drop`
    /// as the limiter answers the second admission). With the drop first in real time, no
    /// order explains it; overlapping, the admission first does. A history whose end state
    /// lies fails too.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "the checker's search (pure Rust, no unsafe code of its own) takes minutes under miri: run natively"
    )]
    fn a_history_no_order_gives_is_refused() {
        let config = one_shard(1, 8, None, 3);
        let l = AppRateLimiter::new(config.clone()).unwrap();
        let a = l.app_key(1, &Origin::from_peer_id(b"p"));
        let first = on_limiter(&l, &Op::Admit(vec![a], 1, 0));
        let second = on_limiter(&l, &Op::Admit(vec![a], 1, 0));
        assert!(first.unwrap().is_admit() && second.unwrap().is_drop());
        let history = |spans: [(usize, usize); 2]| History {
            setup: vec![],
            threads: [
                vec![Op::Admit(vec![a], 1, 0)],
                vec![Op::Admit(vec![a], 1, 0)],
            ],
            runs: [
                Run {
                    got: vec![first],
                    spans: vec![spans[0]],
                    cleared: vec![0],
                },
                Run {
                    got: vec![second],
                    spans: vec![spans[1]],
                    cleared: vec![0],
                },
            ],
            keys: vec![a],
            outcome: outcome(&l, &[a]),
            victims: l.victims(),
        };
        assert_eq!(explained(&config, &history([(0, 1), (2, 3)])), Ok(true));
        assert_eq!(explained(&config, &history([(0, 2), (1, 3)])), Ok(true));
        assert_eq!(explained(&config, &history([(2, 3), (0, 1)])), Ok(false));
        let mut lying = history([(0, 1), (2, 3)]);
        lying.outcome.1 = vec![Some((0, 2))];
        assert_eq!(explained(&config, &lying), Ok(false));
    }

    /// A history the threaded trials met (CLOCK, one set of four ways holding two keys, L =
    /// 1): a penalty of {K1, K2} looks K1 up, and its lookup of K2 evicts K1 (E2: a key a later
    /// lookup of the group evicted); the other thread inserts K1 again (evicting K0) and admits
    /// K2 before the penalty's decision, which penalizes K2 and stores nothing for K1's new
    /// life. That order explains it; a model that made the penalty start over there would not.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "the checker's search (pure Rust, no unsafe code of its own) takes minutes under miri: run natively"
    )]
    fn a_key_the_group_evicted_and_another_operation_inserted_again_keeps_its_new_counts() {
        let config = one_shard(1, 2, Some(4), 9);
        let l = AppRateLimiter::new(config.clone()).unwrap();
        let origin = |i: u64| Origin::from_peer_id(&i.to_le_bytes());
        let keys: Vec<AppKey> = (0..6u64)
            .map(|i| l.app_key(1 + i % 2, &origin(i / 2)))
            .collect();
        let (k1, k2, k0) = (keys[0], keys[1], keys[2]);
        let admit = |k: AppKey| Op::Admit(vec![k], 1, 0);
        let mut victims = vec![(0, k1.hash()), (0, k0.hash())];
        victims.sort_unstable();
        let h = History {
            setup: vec![admit(k0), admit(k0)],
            threads: [
                vec![admit(k1), admit(k1), admit(k2)],
                vec![admit(k0), Op::Penalize(vec![k1, k2]), admit(k2)],
            ],
            runs: [
                Run {
                    got: vec![Some(Decision::admit(Some(0))); 3],
                    spans: vec![(1, 4), (5, 6), (7, 8)],
                    cleared: vec![0, 0, 0],
                },
                Run {
                    got: vec![
                        Some(Decision::drop(0, 1_000_000_001)),
                        None,
                        Some(Decision::drop(0, 1_500_000_001)),
                    ],
                    spans: vec![(0, 2), (3, 9), (10, 11)],
                    cleared: vec![0, 2, 0],
                },
            ],
            keys: keys.clone(),
            outcome: (
                vec![(0, k1.hash()), (0, k2.hash())],
                vec![Some((0, 1)), Some((0, 2)), None, None, None, None],
                vec![(0, k2.hash())],
            ),
            victims,
        };
        assert_eq!(explained(&config, &h), Ok(true));
        // K1's new life penalized as well: no order gives that.
        let mut penalized = h.clone();
        penalized.outcome.1[0] = Some((0, 2));
        assert_eq!(explained(&config, &penalized), Ok(false));
    }

    /// An LRU shard of 8 keys at L = 1, the history's set-up, its runs and its victims as
    /// given, its end state as the limiter's after `real` ran alone.
    fn lru_history(
        real: &[Op],
        threads: [Vec<Op>; 2],
        runs: [Run; 2],
        victims: Vec<(u32, u64)>,
        keys: &[AppKey],
        l: &AppRateLimiter,
    ) -> History {
        for op in real {
            let _ = on_limiter(l, op);
        }
        History {
            setup: vec![],
            threads,
            runs,
            keys: keys.to_vec(),
            outcome: outcome(l, keys),
            victims,
        }
    }

    fn run_of(got: Vec<Option<Decision>>, spans: Vec<(usize, usize)>) -> Run {
        let cleared = vec![0; got.len()];
        Run {
            got,
            spans,
            cleared,
        }
    }

    /// Two overlapping groups {a, b} at L = 1 both admitted: no order gives that (one of them
    /// finds the other's admissions), however often either aborts; the search must refuse it,
    /// not give up on the two groups aborting each other without end.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "the checker's search (pure Rust, no unsafe code of its own) takes minutes under miri: run natively"
    )]
    fn two_overlapping_groups_both_admitted_at_l_1_are_refused() {
        let config = one_shard(1, 8, None, 5);
        let l = AppRateLimiter::new(config.clone()).unwrap();
        let (a, b) = (
            l.app_key(1, &Origin::from_peer_id(b"a")),
            l.app_key(2, &Origin::from_peer_id(b"a")),
        );
        let group = Op::Admit(vec![a, b], 1, 0);
        let admitted = Some(Decision::admit(Some(0)));
        let h = lru_history(
            std::slice::from_ref(&group),
            [vec![group.clone()], vec![group.clone()]],
            [
                run_of(vec![admitted], vec![(0, 3)]),
                run_of(vec![admitted], vec![(1, 2)]),
            ],
            vec![],
            &[a, b],
            &l,
        );
        assert_eq!(explained(&config, &h), Ok(false));
    }

    /// A history the threaded trials met under load (CLOCK, one set of four ways holding two
    /// keys, L = 2; A..E below): thread 1's group {A, B} spans all of thread 0's operations,
    /// and its first attempt was aborted by thread 0's operation in progress, which met the
    /// group's marker before it took a step of its own. Only an abort without a prior step of
    /// the other thread explains it (refused while the checker required such a step).
    #[test]
    #[cfg_attr(
        miri,
        ignore = "the checker's search (pure Rust, no unsafe code of its own) takes minutes under miri: run natively"
    )]
    fn an_operation_in_progress_may_abort_a_group_before_its_own_step() {
        let config = one_shard(2, 2, Some(4), 9);
        let key = |h: u64| AppKey::from_parts(0, h);
        let [a, b, c, d, e, f] = [
            4_664_626_402_457_047_798,
            13_613_728_493_441_216_920,
            9_462_601_221_547_956_992,
            15_598_500_206_040_861_789,
            5_003_510_990_448_377_593,
            16_172_284_865_326_367_723,
        ]
        .map(key);
        let admitted = Some(Decision::admit(Some(1)));
        let mut victims: Vec<(u32, u64)> = [(a, 3), (b, 3), (c, 2), (d, 3)]
            .iter()
            .flat_map(|&(k, n)| std::iter::repeat_n((0, k.hash()), n))
            .collect();
        victims.sort_unstable();
        let history = |group_span: (usize, usize)| History {
            setup: vec![],
            threads: [
                vec![
                    Op::Admit(vec![d, b], 1, 0),
                    Op::Admit(vec![d], 1, 0),
                    Op::Admit(vec![c], 1, 0),
                ],
                vec![
                    Op::Admit(vec![a, b], 1, 0),
                    Op::Penalize(vec![c, b]),
                    Op::Admit(vec![e], 1, 0),
                ],
            ],
            runs: [
                Run {
                    got: vec![admitted; 3],
                    spans: vec![(0, 2), (3, 4), (5, 6)],
                    cleared: vec![0, 2, 0],
                },
                Run {
                    got: vec![admitted, None, admitted],
                    spans: vec![group_span, (8, 9), (10, 11)],
                    cleared: vec![0, 0, 0],
                },
            ],
            keys: vec![a, b, c, d, e, f],
            outcome: (
                vec![(0, e.hash()), (0, b.hash())],
                vec![None, Some((0, 1)), None, None, Some((0, 1)), None],
                vec![],
            ),
            victims: victims.clone(),
        };
        let mut h = history((1, 7));
        h.outcome.0.sort_unstable();
        assert_eq!(explained(&config, &h), Ok(true));
        // The same group after thread 0's operations (no overlap): no abort, and no order.
        let mut alone = history((7, 8));
        alone.outcome.0.sort_unstable();
        assert_eq!(explained(&config, &alone), Ok(false));
    }

    /// A group that ran alone (thread 1's only operation ended before it began) cannot abort.
    /// The history below is what the model gives if the group's first attempt was aborted
    /// after its lookups (capacity 2: its third key evicts its first, then a second attempt
    /// evicts again); no other thread ran beside it to abort it, so it is refused.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "the checker's search (pure Rust, no unsafe code of its own) takes minutes under miri: run natively"
    )]
    fn a_group_that_ran_alone_takes_one_attempt() {
        let config = one_shard(10, 2, None, 5);
        let l = AppRateLimiter::new(config.clone()).unwrap();
        let o = Origin::from_peer_id(b"a");
        let keys = [l.app_key(1, &o), l.app_key(2, &o), l.app_key(3, &o)];
        let single = Op::Admit(vec![keys[0]], 1, 0);
        let group = Op::Admit(keys.to_vec(), 1, 0);
        let history = |aborted: bool| {
            let mut m = Model::new(&config).unwrap();
            let first = on_model(&mut m, &single);
            if aborted {
                m.lookup_keys(&keys, 3, T0);
            }
            let second = on_model(&mut m, &group);
            let mut victims = m.victims().to_vec();
            victims.sort_unstable();
            History {
                setup: vec![],
                threads: [vec![group.clone()], vec![single.clone()]],
                runs: [
                    run_of(vec![second], vec![(2, 3)]),
                    run_of(vec![first], vec![(0, 1)]),
                ],
                keys: keys.to_vec(),
                outcome: model_outcome(&m, &keys),
                victims,
            }
        };
        assert_eq!(explained(&config, &history(false)), Ok(true));
        let twice = history(true);
        assert_ne!(twice.victims, history(false).victims, "the abort must show");
        assert_eq!(explained(&config, &twice), Ok(false));
    }
}
