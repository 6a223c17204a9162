//! The unsafe core: one shard's lock-free, set-associative table of key nodes, evicting by
//! CLOCK.
//!
//! This is the table of shards of more than 64 keys (every shard of the default geometry) and
//! of shards built with the CLOCK test geometry. Shards of up to 64 keys keep exact LRU in a
//! plain table behind a per-shard mutex instead (the `lru` module, which says why); nothing
//! below applies to them.
//!
//! # Shape
//!
//! A shard of capacity `C` is `S` sets of `W` ways; a key lives only in its set (the high bits of
//! its hash pick it), in one of the set's ways. Each way is a slot: an atomic pointer to a heap
//! [`Node`] (key, packed counts), with the key's low 16 bits kept in the pointer's unused top 16
//! bits as a tag, so a scan dereferences only nodes whose tag matches. A set is one run of words
//! starting on a cache line: its claim word (below), then its slots, so the claim and the first
//! seven ways share a line. Ways fill in order and are never emptied again (an eviction replaces
//! a node in place), so a set's nodes are a prefix of its ways and a scan stops at the first
//! empty way.
//!
//! - Sets have `W = 31` ways (a set with its claim word is four cache lines), two ways per key
//!   of capacity (`S = ceil(2 C / 31)`). Each set may always hold one key; beyond that a new
//!   key takes a unit of the shard's spare room (`C - S` units). A new key evicts when no unit is
//!   left, or when its set's 31 ways are all taken while units remain (an early eviction: a set
//!   with twice the mean load; measured by the `bytes_per_key` example). A set that is still
//!   empty when the units run out keeps its one key of room unused until a key of its own comes
//!   (at full load a set is empty with probability e^-15.5, 2e-7). The victim is chosen by
//!   CLOCK (second chance) over the set's ways: a reference bit per key, `TOUCHED` in its state
//!   word, is set by every access (in the write the access makes anyway, or alone when clear) and
//!   cleared as a sweep passes; the sweep starts at a position drawn from the new key's hash.
//! - The CLOCK test geometry (`Config::with_clock_ways`) gives any shard CLOCK sets of a chosen
//!   number of ways, so that the model checker can run CLOCK on a shard of two keys.
//!
//! # Protocol
//!
//! The whole correctness argument of the limiter's lock-free paths, in one place. SAFETY and
//! ordering comments elsewhere cite the invariants by number (I1 ... I7).
//!
//! ## States and transitions
//!
//! - **A set's claim word** (`AtomicPtr` before the set's slots):
//!   - `idle(X)` (`X` with its low bit set): no insertion in flight; `X` is the node of the last
//!     insertion that completed in the set (or null).
//!   - `N` (a node, low two bits clear): the insertion of `N` into an empty way is in flight.
//!   - `E | 2` (an eviction record: a [`GroupOp`] of one entry, the victim): an insertion that evicts is in
//!     flight.
//!
//!   `idle(X) -> N` and `idle(X) -> E | 2`: the planner's compare-and-swap (its owner);
//!   `idle(X) -> E | 2` also by a thread helping `E` (a CLOCK sweep that met `E`'s marker and
//!   holds a reference on `E`), from the word `idle(X)` that `E`'s owner's scan saw, while `E`
//!   is undecided (a helper's install may land just after `E` was decided `FAILED`: a *late*
//!   claim, I3). `N -> idle(N)`: any thread that completes it, once `N` is in its way. `E | 2
//!   -> idle(N)` (`N` the new node) once `E` succeeded and `N` is in its way, `E | 2 ->
//!   idle(X)` (the word it replaced) once `E` failed: any thread that completes it.
//! - **A slot** (one way): `null -> N` (an empty way's insertion, any completer) or `v -> N`
//!   (an eviction's victim replaced by its new node, any completer, only after the eviction
//!   succeeded). Never back to null; `v` is retired with the eviction's record, by its last
//!   holder (I1).
//! - **A node's state word** ([`crate::state`]): counts words (`interval, prev, cur` and the
//!   reference bit `TOUCHED`), changed by accesses (compare-and-swap); `counts -> marker(G)` by a
//!   group's owner and back to counts by whoever resolves it; `w -> marker(E)` by an eviction's
//!   owner (`w` the victim's word as planned, `TOUCHED` clear), then `-> w` if `E` failed, by
//!   whoever completes or resolves it, or, if `E` succeeded, `-> w | EVICTED` (terminal) by a
//!   thread that meets the marker later (completers leave it: the victim has left its slot,
//!   and a reader that still reaches it treats `marker(E)` of a succeeded `E` as evicted, I5);
//!   `TOUCHED` cleared by a CLOCK sweep.
//! - **The units word** (`units`, one per shard): `free << 1` (`free` units of spare
//!   room, none being taken) or `R | 1`, a pending [`Reservation`] `R` (its node `N`, the claim
//!   word `idle(X)` its owner's scan saw, its set, the free units `f >= 1` when it was
//!   installed, and `status`). `f << 1 -> R | 1` (`f >= 1`): the owner of a later key of a
//!   non-empty set, by compare-and-swap. `R | 1 -> (f - 1) << 1` once `R` succeeded, `R | 1 ->
//!   f << 1` once it failed: any thread that helps `R` (every thread that loads `R | 1` and
//!   needs a unit, the owner, and a completer of `N`'s claim). `R.status` `UNDECIDED ->
//!   SUCCEEDED` by a helper that finds the set's claim word holding `N`; `UNDECIDED -> FAILED`
//!   by a helper that finds it `idle(Y)`, `Y != X`. The set's claim word `idle(X) -> N`: any
//!   helper, while `R` is undecided. Nothing else changes the word: it never rises (a unit is
//!   never given back; keys are only ever replaced), so once it is `0 << 1` it stays so (the
//!   shard is *stable-full*).
//! - **An operation record** ([`GroupOp`], a group or an eviction): its status word's decision
//!   `UNDECIDED -> SUCCEEDED | FAILED`, once, by compare-and-swap, by the owner or any thread
//!   that meets one of its markers (or, for an eviction, its claim, or a claim word that moved
//!   past its owner's scan: a helper); `settled` advanced by the owner only (a group: after each
//!   marker; an eviction: once its marker is in place and its claim held, by its owner). An
//!   eviction's status word also counts the references of its helpers (taken by
//!   compare-and-swap only while it is undecided, a decision keeps them, released after the
//!   helper's completion of it) and an `OWNER_DONE` bit (set by its owner when it is done and
//!   helpers still hold references). A group is retired by its owner once no marker of it is
//!   left; an eviction, with its victim if it succeeded or its new node if it failed, by
//!   whichever of its owner and its helpers releases last (I1, I5).
//!
//! ## Invariants
//!
//! - **I1** A node is published in one slot, once, and retired exactly once: by the last holder of
//!   an eviction's record (I5), the victim of an eviction that succeeded (out of its slot by then)
//!   or the new node of an eviction that failed (never in a slot); or, the node of a reservation
//!   that failed (never in a slot or a claim word), by its owner (I7). Not at the slot's
//!   compare-and-swap: a completer that holds no reference on the record (it loaded `E | 2` from
//!   the claim word) compares the victim's address with the slot, and that address must stay the
//!   victim's while it can (its guard entered before the claim word moved past `E | 2`, so before
//!   the last release). A group's record is retired once, by its owner; an eviction's once, by its
//!   last holder. The new node of an eviction whose marker was installed is never reused by its
//!   owner, even if the eviction fails: a helper may have published it in the claim word.
//! - **I2** While a set's claim word holds `N`, way `N.way` is empty or holds `N`, and no other
//!   slot of the set changes: every change of a set's slots happens while its claim word holds
//!   that change's claim. Each set's non-null slots are a prefix of its ways.
//! - **I3** While a claim word holds `E | 2`, either `E` is decided `FAILED` (a use of its victim
//!   may abort it between its marker and its claim; a late claim lands on an `E` already
//!   failed) or `E`'s marker is on its victim (installed before any claim) and the set's
//!   membership is the one `E`'s owner's scan saw (whoever installed the claim did so from that
//!   scan's word `idle(X)` while `E` was undecided, I6); the victim is in `E`'s way, and no
//!   slot of the set changes until `E` is decided; a failed `E` restores the claim word it
//!   replaced, with the set's slots as they were. What completers rely on: an undecided `E` has
//!   its marker in place and holds the claim it was installed with (a claim word leaves `E | 2`
//!   only after `E` is decided), so deciding it `SUCCEEDED` then is valid. A late claim (a
//!   helper's install after `E` failed, the claim word being `idle(X)` again) is transient:
//!   the next completer, the installer's own completion at the latest, finds `E` failed and
//!   restores `idle(X)`.
//! - **I4** An eviction commits the victim's word as planned: its marker replaces exactly that
//!   word, so it succeeds only if no access wrote the word since the plan read it. Every access
//!   writes a key's word unless the word already shows it (same interval, reference bit set),
//!   and the planned word has the bit clear, so every access after the plan read it fails the
//!   eviction. A sweep's clearing of a bit is itself a step.
//! - **I5** A marker's record stays allocated while any thread can load the marker: it is retired
//!   only once no thread entering a guard after can load one, every marker of it replaced, or, for
//!   an eviction that succeeded, its victim out of its slot (below; seize frees it once every guard
//!   that could have loaded one has dropped). An eviction's record `E`, and its new node `N` while
//!   `E` is not known to have succeeded, also stay allocated while any thread can load `E | 2` from
//!   the claim word: the owner and every helper hold `E` (helpers by a reference in the status
//!   word, taken only while `E` is undecided) from before their first install of the claim until
//!   their own completion of `E` returned, so after the claim word left their install; only the
//!   last release retires `E` (with its victim if `E` succeeded, `N` if it failed). No install
//!   comes after it: the owner's precede its release, and a helper installs only while holding a
//!   reference, which it can take no more once `E` is decided (so an owner that finds `E` decided
//!   with no reference retires at once, one load, no read-modify-write). So every load of `E | 2`
//!   or `marker(E)` happens before the word moves past it for the last time, which happens before
//!   the last release, which happens before the retirement: the loading thread's guard is one seize
//!   waits for. A helper reads `E` before taking its reference under the guard with which it loaded
//!   `marker(E)` while the marker was in place (so before the retirement). One marker stays past
//!   the retirement: a succeeded `E` leaves `marker(E)` on its victim (no completer writes the
//!   victim's line). The victim is then out of its slot before the last release: each holder's
//!   completion of a succeeded `E` ends with the slot past the victim, changed by its own
//!   compare-and-swap or seen changed by its Acquire load (the load, or the compare-and-swap's
//!   failure), and the last release follows every holder's completion. A thread reaches the victim
//!   only through its slot (a claim word `idle(X)` is compared, never followed), through `E` (a
//!   completer), or through the claim word of the insertion that placed it (`N` or the `E0 | 2`
//!   whose new node it was: a late completer of that insertion, whose guard entered before that
//!   claim word moved on, so before `E` claimed the set); and `E` only through the victim or the
//!   claim word. So no thread whose guard enters after the retirement of `E` and its victim can
//!   load `marker(E)` or the victim (seize's contract), and one that did load them did so under a
//!   guard that entered before, which seize waits for.
//! - **I6** `idle(X)` does not recur while a planner that loaded it holds its guard, except as
//!   restored by a failed eviction, which changed no slot: so when a planner's claim succeeds, the
//!   set's membership is the one its scan saw (the key is still missing, the planned way still
//!   empty or holding the planned victim). Duplicates of a key cannot arise.
//! - **I7** The units word names at most one reservation `R`, and only while `R` is pending:
//!   installed with `f >= 1` free units, `f` does not change until `R` is resolved, after its
//!   decision; `R` is retired by its owner after that, and never named again. `R` succeeds only
//!   at an instant the set's claim word holds `N` (so the set's membership is the owner's scan's,
//!   I6, and the word's `f` units are free: the unit is taken then), and fails only once the
//!   claim word has moved past `idle(X)` through a completed insertion, after which `idle(X)`
//!   never recurs while a helper that read it can act on it: a helper acts only on a claim word
//!   `idle(X)` it loaded itself, under its guard, and while a claim word is `idle(X)` its `X` is
//!   in one of the set's ways (no slot changes while a claim word is idle), so `X` is retired,
//!   if ever, after that guard began, and its address is not reused before the helper is done
//!   (as in I6). (Helpers also read the claim word before the status; that order is not what
//!   this rests on.) Hence the helpers' `idle(X) -> N` succeeds at most once and never after
//!   `R` is decided, and `N` holds the claim word only if `R` succeeds. A completer of a claim word
//!   `N` whose node took a unit (`adds`, way > 0) decides `R` before it places `N` in its way,
//!   so before it frees the claim word (`N -> idle(N)`): if the units word still names a
//!   reservation of `N`, that reservation is undecided or succeeded. So a node seen in a slot
//!   is a key whose insertion took effect, and a scan that finds a set's ways all taken finds a
//!   set that the model holds full (sets never shrink), where a sweep step is a step the model
//!   can take (`Model::sweep_step`; the key itself may have been inserted by another operation
//!   since the scan: the sweep's insertion then gives up, its steps standing). A failed `R`'s
//!   node was never in a claim word or a slot but may still be compared by helpers: it is
//!   retired, not reused (conservative: helpers compare it only with claim words they read
//!   before the decision).
//!
//! ## Linearization points
//!
//! - **Hit, admitted**: its compare-and-swap on the key's word (which also rolls the key and
//!   sets its reference bit).
//! - **Hit, dropped**: its load of the word, or the compare-and-swap that rolls the key or sets
//!   its bit when that changes the word.
//! - **New key, a set's first key**: the claim's compare-and-swap (the node is born holding
//!   its first admission or penalty).
//! - **New key, a later key of a non-empty set (takes a unit)**: its reservation's decision
//!   `UNDECIDED -> SUCCEEDED`, made while the set's claim word holds its node (membership as
//!   scanned, I6) and the units word holds the reservation with `f >= 1` free units (the model
//!   takes one then, I7).
//! - **New key with an eviction because the shard is stable-full**: as below; the insertion
//!   read the units word `0 << 1` before its decision, and that state is permanent (I7), so
//!   the shard has no free unit at its instant. An early eviction (the set's ways all taken)
//!   needs no unit.
//! - **New key with an eviction, and the eviction**: one instant, while the victim's marker is
//!   in place (its word unchanged since the plan, I4): the decision of the eviction's record
//!   (`UNDECIDED -> SUCCEEDED`, by whichever thread completes its claim, a helper's included),
//!   with the claim held (the membership unchanged since the scan, I3, I6).
//! - **Group admitted**: the decision `UNDECIDED -> SUCCEEDED` (all markers in place); its
//!   lookups are steps of their own before it (E2), or, on a first attempt that found every
//!   key tracked and only read them, take effect with it: each marker replaced the word the
//!   attempt read, and its entry holds that word as the lookup leaves it (rolled, reference bit
//!   set), which the decision writes (or an abort restores).
//! - **Group dropped**: the load of the failing key's word in a validated snapshot, with no
//!   record and no marker (`group::decide_drop`): after the lookups, the group reads its keys'
//!   words in canonical order up to the first key over its limit, then reads the earlier keys'
//!   words again; equal counts both times were those counts throughout (a key's counts only
//!   move forward: its interval never decreases, `cur` only grows within one, an evicted word
//!   is final, an aborted marker restores the counts it replaced), so at that load every
//!   earlier key admitted and the failing key did not. On a first attempt that found every
//!   key tracked, the words are those its lookup steps read or wrote, one key after another
//!   (a key whose word already showed the access: the read was its step), and the keys up to
//!   the failing one, it included, are read again: the drop takes effect at the instant after
//!   the last lookup step, when each of them held its word.
//! - **Penalty**: as an admitted hit (one key) or an admitted group (several).
//! - **Weighted admission**: as an admission of its cost.
//!
//! ## Progress
//!
//! Operations on keys that no group or eviction is applying to are lock-free, and so are
//! insertions into empty ways among themselves (any thread that needs a set completes the
//! insertion in flight in it, and any thread that needs a unit helps the reservation pending
//! on the units word to its decision: each of its passes decides it, completes an insertion in
//! flight, or moves the claim word, and it fails only when another insertion into its set
//! completed, possibly before the reservation was installed: the owner's scan was stale).
//!
//! Evicting insertions are lock-free among themselves too: a CLOCK sweep that meets an
//! eviction's marker helps that eviction instead of aborting it (`help_eviction`: it takes a
//! reference, claims the set for it while the claim word is still the owner's scan's word,
//! completes what is in flight in the set first, decides it `FAILED` once that word is gone,
//! and completes it), then plans again, its sweep going on from the way after the bits it
//! cleared; the owner, its claim failing, does the same. Each pass of that loop decides the
//! eviction, completes an insertion in flight or moves the claim word, so one of two evictions
//! whose sweeps meet each other's markers always completes, and an eviction fails only when
//! another insertion into its set completed (its plan was stale) or a use of its victim came
//! first.
//!
//! What stays obstruction-free: a group and the operations on its keys (sweeps that meet a
//! group's marker included), and an eviction and the uses of its victim (E3, a forced eviction
//! after failed commits, is not used). A group in flight, or an eviction not yet claimed, is
//! aborted by any operation that needs one of its keys (its victim) before it is settled. A
//! sweep cannot cheaply help a group's marker (that means finishing the group: installing its
//! markers on its other keys, whose nodes the sweep may not dereference, the group module's
//! reclamation argument), nor skip a key under one: the key's reference bit is held inside the
//! marker's record, and a sweep that skipped it would leave it set where the sequential CLOCK
//! model cleared it (a sweep step of its own, E1). So it aborts the group, as any access does.
//!
//! ## Known limits
//!
//! - A CLOCK sweep whose insertion gives up (its replan finds the key present) leaves the bits
//!   it cleared: they are sweep steps (E1) of an insertion that has not happened, some possibly
//!   taken after another operation inserted the key (a sweep does not look for its key again
//!   before each step; E1 allows such steps once a scan of the operation found the key
//!   missing, `Model::sweep_step`). The operation keeps its sweep of that key
//!   (`get_or_insert`'s `swept`, across a single key's look-agains and a group's attempts): if
//!   the key is evicted before the operation's access and the operation inserts it after all,
//!   that insertion goes on from the way after the bits it cleared, as the model's one sweep
//!   per operation and key does (`model::Sweeps`). An insertion that takes effect ends its
//!   sweep. (An insertion that plans again, after a failed claim, a stale plan or a help, goes
//!   on likewise.)
//!   The linearizability checker (`checker`, run by the loom models and by the threaded
//!   trials of `stress`) searches the orders of two threads' model steps: each operation's
//!   sweep steps (`Model::sweep_step`; each key's after a step at which the model does not
//!   track it, the scan that found it missing, and before the key's lookup; as many as the
//!   operation cleared), each of a group's lookups as a step of its own, in as many attempts
//!   as it takes (an attempt aborts only after its first lookup and after a step of the other
//!   thread that can change a key, or while the other thread's operation overlaps it in real
//!   time: an operation that meets its marker aborts it, possibly before a step of its own; it
//!   cannot decide once another operation evicted a key it looked up, since the table's attempt
//!   then finds that node evicted), and its decision. It compares the reference bits left at
//!   the end and, per operation, the bits its sweeps cleared with the model's clearings (a
//!   count kept in loom builds and, once a test asks, unit tests), so a clearing that is no
//!   model step, or one by an operation that never found its key missing, fails it. Its
//!   search is bounded in steps; a history that needs more is undecided, and the threaded
//!   trials fail if such histories are not rare.
//! - What rests on addresses not being reused while a guard that loaded them lives (I6, I7:
//!   `idle(X)` not recurring, a reservation's or record's word not recurring) is argued from
//!   seize's guarantee, not model-checked: loom's stand-in for the collector never reuses an
//!   address (and the per-thread pools are off under loom). The threaded stress tests, with
//!   the pools, run reuse on real threads.
//!
//! Nothing on the hit path allocates.

use txgate_sync::reclaim::Guard;
use txgate_sync::sync::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};

use crate::group::GroupOp;
use crate::node::{Node, Swept, Update};
use crate::state::{self, Counts};

/// Ways per set of a larger shard (with the claim word, 32 words: four cache lines). With two
/// ways per key a full shard holds 15.5 keys per set on average: a set fills up while its shard
/// has room (an early eviction) for under 0.001% of the keys that fill a shard of 1,024 to
/// 8,192 keys (a simulation of uniform keys; the `bytes_per_key` example measures it), and a
/// set is still empty when its shard is full with probability e^-15.5 (2e-7), which would leave
/// its one key of reserved room unused (23 ways, 11.5 keys per set: e^-11.5, about one empty
/// set in 128 default shards, and hundreds of early evictions until a key of its own comes).
const WAYS: usize = 31;
/// Ways per key of capacity in a larger shard.
const WAYS_PER_KEY: usize = 2;

/// Bit position of the key tag in a slot pointer (64-bit targets: user-space addresses are below
/// 2^48 on x86-64, AArch64 and the other 64-bit targets Rust supports without pointer tagging).
#[cfg(target_pointer_width = "64")]
const TAG_SHIFT: u32 = 48;

/// The slot value of `node` (key `key`): the pointer with the key's tag in its top bits.
#[inline]
fn tagged(node: *mut Node, key: u64) -> *mut Node {
    #[cfg(target_pointer_width = "64")]
    {
        node.map_addr(|a| a | ((key as u16 as usize) << TAG_SHIFT))
    }
    #[cfg(not(target_pointer_width = "64"))]
    {
        let _ = key;
        node
    }
}

/// The node pointer of a slot value (without its tag).
#[inline]
fn untag(slot: *mut Node) -> *mut Node {
    #[cfg(target_pointer_width = "64")]
    {
        slot.map_addr(|a| a & ((1 << TAG_SHIFT) - 1))
    }
    #[cfg(not(target_pointer_width = "64"))]
    {
        slot
    }
}

/// Whether a slot value may hold `key` (its tag matches; always, without tags).
#[inline]
fn may_hold(slot: *mut Node, key: u64) -> bool {
    #[cfg(target_pointer_width = "64")]
    {
        slot.addr() >> TAG_SHIFT == key as u16 as usize
    }
    #[cfg(not(target_pointer_width = "64"))]
    {
        let _ = (slot, key);
        true
    }
}

/// `idle(x)`: the claim word of a set whose last insertion was `x`.
#[inline]
fn idle(x: *mut Node) -> *mut Node {
    x.map_addr(|a| a | 1)
}

/// The bit of a claim word that names an eviction operation (a [`GroupOp`]) rather than an
/// empty way's new node (records are 8-byte aligned).
const EVICTION: usize = 2;

/// The claim word of eviction `op`.
#[inline]
fn tag_eviction(op: *mut GroupOp) -> *mut Node {
    op.cast::<Node>().map_addr(|a| a | EVICTION)
}

/// Whether a claim word is an insertion in flight (an untagged node pointer) rather than free.
#[inline]
fn is_claim(word: *mut Node) -> bool {
    word.addr() & 1 == 0
}

/// A unit reservation's status: not decided yet.
const UNDECIDED: u8 = 0;
/// A unit reservation's status: its node holds its set's claim; the unit is taken.
const SUCCEEDED: u8 = 1;
/// A unit reservation's status: another insertion completed in its set first; no unit taken.
const FAILED: u8 = 2;

/// A new key's take of one unit of spare room, in flight (the pending form of the units word,
/// module docs, "The units word"): decided `SUCCEEDED` at the instant its node is seen holding
/// its set's claim word, or `FAILED` once that claim word has moved past `expected`.
struct Reservation {
    /// The new key's node (never dereferenced through the reservation, only compared).
    node: *mut Node,
    /// The claim word the insertion's scan saw (`idle(X)`); the claim moves from it to `node`.
    expected: *mut Node,
    /// The set.
    set: usize,
    /// Free units when the reservation was installed (at least 1; unchanged while it is
    /// pending, I7).
    free: usize,
    /// `UNDECIDED -> SUCCEEDED | FAILED`, once, by compare-and-swap.
    status: AtomicU8,
}

// SAFETY: the node pointers are only compared, never dereferenced, through a reservation;
// every shared field is atomic or immutable while the reservation is shared.
unsafe impl Send for Reservation {}
// SAFETY: as above.
unsafe impl Sync for Reservation {}

#[cfg(not(loom))]
thread_local! {
    /// Reservations reclaimed on this thread, for reuse, so that filling a shard does not call
    /// the allocator per new key.
    static RESERVATIONS: crate::pool::Pool<Reservation> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl txgate_sync::reclaim::Reclaim for Reservation {
    unsafe fn reclaim(ptr: *mut Self) {
        // SAFETY: the trait's contract: the record came from `Box::into_raw` and no thread can
        // reach it any more.
        let record = unsafe { Box::from_raw(ptr) };
        #[cfg(not(loom))]
        crate::pool::give(&RESERVATIONS, record);
        #[cfg(loom)]
        drop(record);
    }
}

impl Reservation {
    /// A new undecided reservation, unshared, from this thread's reclaimed records when it has
    /// one.
    fn boxed(node: *mut Node, expected: *mut Node, set: usize, free: usize) -> Box<Self> {
        let fresh = Self {
            node,
            expected,
            set,
            free,
            status: AtomicU8::new(UNDECIDED),
        };
        #[cfg(not(loom))]
        if let Some(mut record) = crate::pool::take(&RESERVATIONS) {
            *record = fresh;
            return record;
        }
        Box::new(fresh)
    }
}

/// The units word of `free` free units and no reservation pending (`free << 1`; an address
/// with no provenance: never dereferenced).
#[inline]
fn units_word(free: usize) -> *mut Reservation {
    std::ptr::without_provenance_mut(free << 1)
}

/// The units word naming pending reservation `r` (records are 8-byte aligned).
#[inline]
fn pending(r: *mut Reservation) -> *mut Reservation {
    r.map_addr(|a| a | 1)
}

/// The reservation a units word names, if it is pending; else `Err(free units)`.
#[inline]
fn reservation(word: *mut Reservation) -> Result<*mut Reservation, usize> {
    if word.addr() & 1 == 1 {
        Ok(word.map_addr(|a| a & !1))
    } else {
        Err(word.addr() >> 1)
    }
}

/// Room for a new key joining a set without a victim, or not.
enum Room {
    /// An empty way: `None` for the set's first key (no unit), `Some(free)` for a later key,
    /// which takes one of the `free` free units (at least 1).
    Way(Option<usize>),
    /// No room: evict (the set's ways are all taken, or the shard is stable-full, I7).
    Evict,
    /// A reservation was pending and this thread helped it to its end: plan again.
    Helped,
}

/// What [`Shard::take_unit`] did with its node.
enum Taken {
    /// The reservation succeeded: the node is in its set.
    Inserted,
    /// The reservation failed (another insertion completed in the set first): the node went to
    /// the collector; plan again.
    Failed,
    /// The units word changed before the reservation was installed: the node is still the
    /// caller's, unpublished; plan again.
    NotInstalled,
}

/// Eight words on one cache line: the unit the words of the sets are allocated in.
#[repr(C, align(64))]
struct Line([AtomicPtr<Node>; 8]);

/// A key found by a scan.
struct Hit<'g> {
    node: &'g Node,
}

/// The node an insertion replaced.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Victim {
    /// The replaced node (evicted).
    pub(crate) node: *const Node,
    /// Its final state word (its planned word with `EVICTED`: the eviction succeeded only if the
    /// victim's word was still the planned one, I4), so that the caller never reads the node
    /// again (the last holder of the eviction's record retired it, possibly this thread).
    pub(crate) word: u64,
}

/// What [`Shard::get_or_insert`] found.
pub(crate) struct Got<'g> {
    /// The key's node.
    pub(crate) node: &'g Node,
    /// Whether this call inserted it (born with the `born` counts).
    pub(crate) inserted: bool,
    /// The node this call's own insertion replaced, if any (it is evicted).
    pub(crate) victim: Option<Victim>,
    /// Keys this call's own insertion evicted (0 or 1; an eviction is counted by its owner).
    pub(crate) evicted: u32,
}

/// One shard: per set a claim word and `ways` slots, and room accounting.
pub(crate) struct Shard {
    /// Set `s` is words `s * stride ..`: its claim word, then its slots. A claim word holds `N`
    /// while node `N`'s insertion is in flight, else `idle(X)` (module docs). Invariants: every
    /// change of a set's slots happens while its claim word holds that change's claim; a node is
    /// published in one slot, once, and retired exactly once, with the record of the eviction
    /// that took it out of that slot (I1); each set's non-null slots are a prefix of its ways.
    words: Box<[Line]>,
    /// Number of sets.
    sets: usize,
    /// Ways per set.
    ways: usize,
    /// Words per set: `1 + ways`, rounded up to whole cache lines.
    stride: usize,
    /// Most keys the shard holds (`max_size / shards`, at least 2; read by the validator).
    #[cfg_attr(not(any(test, fuzzing, loom)), allow(dead_code))]
    capacity: usize,
    /// The units word: units of room beyond each set's first key, `free << 1`, or a pending
    /// [`Reservation`] `R | 1` (module docs, "The units word", I7). A unit is taken at the
    /// instant its insertion's node is seen holding its set's claim word, and never given back
    /// (keys are only ever replaced). Invariant (quiescent): no reservation pending and `free ==
    /// capacity - sets - sum over sets of max(0, keys - 1)`.
    units: AtomicPtr<Reservation>,
    /// Keys tracked (exact when no insertion is in flight).
    entries: AtomicUsize,
    /// Under loom and in unit tests (while `recording`): the hashes of the keys evicted, each
    /// pushed by its eviction's owner once it learnt the eviction succeeded (possibly completed
    /// by a helper first; the checker sorts them), for the model checker (a plain mutex: loom
    /// runs one thread at a time and none blocks while holding it; on real threads, a test's
    /// lock).
    #[cfg(any(loom, test))]
    victims: std::sync::Mutex<Vec<u64>>,
    /// Under loom: evictions attempted (markers installed on a victim), for models that bound
    /// the retries of racing evictions (a plain atomic: it adds no interleavings).
    #[cfg(loom)]
    attempts: std::sync::atomic::AtomicUsize,
    /// Under loom: evictions a sweep helped (`help_eviction` calls that took a reference), for
    /// models that check what follows a help (a plain atomic: it adds no interleavings).
    #[cfg(loom)]
    helps: std::sync::atomic::AtomicUsize,
    /// Under loom and in unit tests: per thread, the reference bits its sweeps cleared
    /// (`Swept::Cleared`), for a checker that matches each clearing with a step of the
    /// sequential model (a plain mutex, as `victims`).
    #[cfg(any(loom, test))]
    cleared: std::sync::Mutex<Vec<(txgate_sync::sync::thread::ThreadId, usize)>>,
    /// Whether `victims` and `cleared` are kept: always under loom; in unit tests only once a
    /// test asks (`record_history`), since on real threads their mutexes order the threads'
    /// evictions and sweeps, which would hide races from the sanitizers and miri elsewhere.
    #[cfg(any(loom, test))]
    recording: std::sync::atomic::AtomicBool,
}

impl Shard {
    /// The bytes of the table of a shard of `capacity` keys (`None` if that overflows).
    pub(crate) fn bytes_for(capacity: usize, clock_ways: Option<usize>) -> Option<usize> {
        let (sets, ways) = Self::geometry(capacity, clock_ways)?;
        sets.checked_mul((1 + ways).div_ceil(8))?.checked_mul(64)
    }

    /// Sets and ways of a CLOCK shard of `capacity` keys: sets of [`WAYS`] ways, two ways per
    /// key. `clock_ways` (a test knob, 2 to 31) sets another number of ways per set, so that a
    /// CLOCK shard can be small enough for a model checker.
    pub(crate) fn geometry(capacity: usize, clock_ways: Option<usize>) -> Option<(usize, usize)> {
        let ways = clock_ways.unwrap_or(WAYS);
        Some((capacity.checked_mul(WAYS_PER_KEY)?.div_ceil(ways), ways))
    }

    /// An empty shard holding at most `capacity` keys (`clock_ways`: see
    /// [`Shard::geometry`]), or `Err` if its table cannot be allocated (its size:
    /// [`Shard::bytes_for`]).
    pub(crate) fn new(
        capacity: usize,
        clock_ways: Option<usize>,
    ) -> Result<Self, std::collections::TryReserveError> {
        debug_assert!(capacity >= 2);
        let (sets, ways) =
            Self::geometry(capacity, clock_ways).expect("capacity checked by the config");
        let stride = (1 + ways).next_multiple_of(8);
        let mut words = Vec::new();
        words.try_reserve_exact(sets * stride / 8)?;
        words.extend((0..sets * stride / 8).map(|_| {
            Line(std::array::from_fn(
                |_| AtomicPtr::new(std::ptr::null_mut()),
            ))
        }));
        let words = words.into_boxed_slice();
        let shard = Self {
            words,
            sets,
            ways,
            stride,
            capacity,
            units: AtomicPtr::new(units_word(capacity.saturating_sub(sets))),
            entries: AtomicUsize::new(0),
            #[cfg(any(loom, test))]
            victims: std::sync::Mutex::new(Vec::new()),
            #[cfg(loom)]
            attempts: std::sync::atomic::AtomicUsize::new(0),
            #[cfg(loom)]
            helps: std::sync::atomic::AtomicUsize::new(0),
            #[cfg(any(loom, test))]
            cleared: std::sync::Mutex::new(Vec::new()),
            #[cfg(any(loom, test))]
            recording: std::sync::atomic::AtomicBool::new(cfg!(loom)),
        };
        for set in 0..sets {
            // Relaxed: not shared yet.
            shard
                .claim(set)
                .store(idle(std::ptr::null_mut()), Ordering::Relaxed);
        }
        Ok(shard)
    }

    /// Keys tracked now (exact when no insertion is in flight).
    pub(crate) fn entries(&self) -> usize {
        // Relaxed: a statistic.
        self.entries.load(Ordering::Relaxed)
    }

    /// Under loom and in unit tests: the hashes of the keys this shard evicted (see `victims`).
    #[cfg(any(loom, test))]
    pub(crate) fn victims(&self) -> Vec<u64> {
        self.victims.lock().expect("not poisoned").clone()
    }

    /// Under loom: the evictions this shard attempted (see `attempts`).
    #[cfg(loom)]
    pub(crate) fn eviction_attempts(&self) -> usize {
        self.attempts.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Under loom and in unit tests: keeps the victims and the cleared bits from now on (see
    /// `recording`).
    #[cfg(any(loom, test))]
    pub(crate) fn record_history(&self) {
        // Relaxed: set before the recording threads are spawned, which orders it for them.
        self.recording
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the victims and cleared bits are kept (see `recording`).
    #[cfg(any(loom, test))]
    fn recording(&self) -> bool {
        // Relaxed: as in `record_history`.
        self.recording.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Under loom and in unit tests: one more reference bit cleared by the calling thread's
    /// sweep, if recording.
    #[cfg(any(loom, test))]
    fn count_cleared(&self) {
        if !self.recording() {
            return;
        }
        let me = txgate_sync::sync::thread::current().id();
        let mut cleared = self.cleared.lock().unwrap();
        match cleared.iter_mut().find(|(t, _)| *t == me) {
            Some((_, n)) => *n += 1,
            None => cleared.push((me, 1)),
        }
    }

    /// Under loom and in unit tests: the reference bits the calling thread's sweeps have cleared
    /// in this shard.
    #[cfg(any(loom, test))]
    pub(crate) fn cleared_by_this_thread(&self) -> usize {
        let me = txgate_sync::sync::thread::current().id();
        let cleared = self.cleared.lock().unwrap();
        cleared
            .iter()
            .find(|(t, _)| *t == me)
            .map_or(0, |(_, n)| *n)
    }

    /// Under loom: the evictions this shard's sweeps helped (see `helps`).
    #[cfg(loom)]
    pub(crate) fn eviction_helps(&self) -> usize {
        self.helps.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// All words, as one slice.
    #[inline]
    fn flat(&self) -> &[AtomicPtr<Node>] {
        // SAFETY: `Line` is `repr(C)` over `[AtomicPtr<Node>; 8]`, 64 bytes with no padding, so
        // the lines are `8 * len` contiguous, aligned, initialized words.
        unsafe {
            std::slice::from_raw_parts(
                self.words.as_ptr().cast::<AtomicPtr<Node>>(),
                self.words.len() * 8,
            )
        }
    }

    /// A set's words: its claim word, then its `ways` slots.
    #[inline]
    fn set(&self, set: usize) -> &[AtomicPtr<Node>] {
        let start = set * self.stride;
        &self.flat()[start..start + 1 + self.ways]
    }

    /// A set's claim word.
    #[inline]
    fn claim(&self, set: usize) -> &AtomicPtr<Node> {
        &self.set(set)[0]
    }

    /// Asks the CPU to start loading the first line of `key`'s set (its claim word and first
    /// seven slots), so that a group's lookups overlap their cache misses instead of taking them
    /// one after another. A hint only: no memory is read or written, nothing changes.
    #[inline]
    pub(crate) fn prefetch(&self, key: u64) {
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        {
            let word: *const AtomicPtr<Node> = self.claim(self.set_of(key));
            // SAFETY: `_mm_prefetch` needs SSE, part of every x86-64 target's baseline; and a
            // prefetch hint has no memory effect (Intel SDM, PREFETCHh: it "does not affect
            // program behavior"), on a pointer that is in bounds anyway.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(word.cast());
            }
        }
        #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
        let _ = key;
    }

    /// The set of a key: the high bits of `key * sets` (keys are uniform BLAKE2b output; the tag
    /// uses the low bits).
    #[inline]
    fn set_of(&self, key: u64) -> usize {
        ((u128::from(key) * self.sets as u128) >> 64) as usize
    }

    #[inline]
    fn slot(&self, set: usize, way: usize) -> &AtomicPtr<Node> {
        &self.set(set)[1 + way]
    }

    /// Dereferences a node loaded under `guard` from this table.
    ///
    /// # Safety
    ///
    /// `ptr` is an untagged node pointer loaded under `guard` from a slot or a claim word of this
    /// table.
    #[inline]
    unsafe fn deref<'g>(&self, ptr: *mut Node, guard: &'g Guard<'_>) -> &'g Node {
        guard.check(ptr);
        // SAFETY: (1) nodes come from `Box::into_raw` and are freed only by the collector after
        // being retired; (2) the caller loaded `ptr` through `guard` while the node was in the
        // table (or its insertion in flight), so it is retired after `guard` entered and freed
        // after `guard` (and so `'g`) ends; (3) after publication nodes are only accessed
        // through shared references and atomics.
        unsafe { &*ptr }
    }

    /// Scans a set for `key`: its way, slot value and node if present, and the number of nodes
    /// in the set.
    #[inline(always)]
    fn scan<'g>(&self, set: usize, key: u64, guard: &'g Guard<'_>) -> (Option<Hit<'g>>, usize) {
        for (way, word) in self.set(set)[1..].iter().enumerate() {
            // Acquire: pairs with the Release of the compare-and-swap that placed the node, so
            // its key and counts are visible.
            let slot = guard.protect(word, Ordering::Acquire);
            if slot.is_null() {
                return (None, way);
            }
            if may_hold(slot, key) {
                // SAFETY: loaded under `guard` from our slot.
                let node = unsafe { self.deref(untag(slot), guard) };
                if node.key == key {
                    return (Some(Hit { node }), way);
                }
            }
        }
        (None, self.ways)
    }

    /// The answer for a key [`Shard::scan`] found: nothing inserted; `evicted` as counted by the
    /// caller. (Its reference bit is set by the access's own write of its word.)
    #[inline(always)]
    fn found<'g>(hit: Hit<'g>, evicted: u32) -> Got<'g> {
        Got {
            node: hit.node,
            inserted: false,
            victim: None,
            evicted,
        }
    }

    /// Applies `f` to the counts of the key `got` found, as [`Node::update`] does, as one access
    /// that also sets the key's reference bit (in the same write; no write if the word already
    /// shows it). `Evicted`: the node was evicted first (look the key up again).
    pub(crate) fn update<T>(
        &self,
        got: &Got<'_>,
        guard: &Guard<'_>,
        mut f: impl FnMut(Counts) -> (Option<Counts>, T),
    ) -> Update<T> {
        let node = got.node;
        let mut word = node.load();
        loop {
            if word & state::MARKER != 0 {
                crate::group::resolve(node, word, guard);
                word = node.load();
                continue;
            }
            if word & state::EVICTED != 0 {
                return Update::Evicted(state::counts(word));
            }
            let (next, out) = f(state::counts(word));
            // An access: the reference bit set in the same write; no write if nothing changes.
            let Some(next) = next
                .map(|c| state::pack(c) | state::TOUCHED)
                .filter(|&next| next != word)
            else {
                return Update::Done(out);
            };
            // Release on success, SeqCst on failure: as in `Node::update`.
            match node
                .state
                .compare_exchange_weak(word, next, Ordering::Release, Ordering::SeqCst)
            {
                Ok(_) => return Update::Done(out),
                Err(now) => word = now,
            }
        }
    }

    /// The node of `key` if tracked, without an access (tests and reports).
    pub(crate) fn peek<'g>(&self, key: u64, guard: &'g Guard<'_>) -> Option<&'g Node> {
        self.scan(self.set_of(key), key, guard)
            .0
            .map(|hit| hit.node)
    }

    /// Returns `key`'s node, inserting it with counts `born` if missing (evicting if the shard
    /// or the set is full). The hit path (claim word, scan) is inlined; a miss goes to
    /// [`Shard::insert`]. The caller's access to a found node sets its reference bit.
    ///
    /// `swept`: the reference bits the operation's insertion of `key` has cleared so far, `0`
    /// for an operation's first lookup of the key. The caller keeps it across its lookups of
    /// `key` in one operation (a look-again after its node was found evicted, a group's
    /// attempts), so that the operation's insertion of the key is one sweep, as the model's
    /// (E1): a sweep whose insertion gave up (the key turned out present) goes on where it
    /// stopped if the operation inserts the key later. An insertion that takes effect sets it
    /// back to `0` (the next insertion of the key is another one, with a sweep of its own).
    #[inline(always)]
    pub(crate) fn get_or_insert<'g>(
        &self,
        key: u64,
        born: Counts,
        swept: &mut usize,
        guard: &'g Guard<'_>,
    ) -> Got<'g> {
        let set = self.set_of(key);
        // Acquire: pairs with the Release that freed the claim word, so the scan below sees
        // every slot change of the insertions that completed before.
        let c = guard.protect(self.claim(set), Ordering::Acquire);
        if !is_claim(c) {
            let (hit, len) = self.scan(set, key, guard);
            if let Some(hit) = hit {
                return Self::found(hit, 0);
            }
            return self.insert(set, key, born, c, Some(len), swept, guard);
        }
        self.insert(set, key, born, c, None, swept, guard)
    }

    /// The miss path of [`Shard::get_or_insert`]: `c` is the claim word as loaded, `len` the
    /// set's length if the scan that followed it missed the key, and `swept` the operation's
    /// sweep of the key so far (as in `get_or_insert`).
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn insert<'g>(
        &self,
        set: usize,
        key: u64,
        born: Counts,
        mut c: *mut Node,
        mut scanned: Option<usize>,
        swept: &mut usize,
        guard: &'g Guard<'_>,
    ) -> Got<'g> {
        let claim = self.claim(set);
        // A node allocated for an insertion whose claim failed, reused by the retry (never one
        // that an eviction published: see below).
        let mut unused: Option<Box<Node>> = None;
        loop {
            if is_claim(c) {
                self.complete(set, c, guard);
                // Acquire: as in `get_or_insert`.
                c = guard.protect(claim, Ordering::Acquire);
                continue;
            }
            let len = match scanned.take() {
                Some(len) => len,
                None => {
                    let (hit, len) = self.scan(set, key, guard);
                    if let Some(hit) = hit {
                        return Self::found(hit, 0);
                    }
                    len
                }
            };
            #[cfg(any(debug_assertions, loom))]
            self.check_free_word(set, c, guard);
            let room = self.room(len, guard);
            // A set whose ways the scan found all taken is full in the model too (I7: a node
            // is in a slot only once its insertion took effect; sets never shrink), so the
            // sweep's steps are model steps. A set with
            // room in its ways evicts only because the shard's units are gone; its
            // scan may be older than the last unit's taking (by an insertion into this set).
            // The claim word still as scanned once the units read `0` (final, I7) fixes the
            // set's length for good: a non-empty set grows only by a unit, and no set shrinks.
            // So the sweep runs over the set's real length, as the model's (a sweep over a
            // stale length clears bits the model cannot place, E1).
            if matches!(room, Room::Evict) && len < self.ways {
                // Acquire: as in `get_or_insert`; after the Acquire load of the units word in
                // `room`, so a unit taken for this set shows as a claim word moved on.
                let now = guard.protect(claim, Ordering::Acquire);
                if now != c {
                    c = now;
                    continue;
                }
            }
            // The plan: the first empty way, or a victim (module docs).
            let (way, unit, plan) = match room {
                Room::Way(unit) => (len, unit, None),
                Room::Evict => match self.victim(set, len, key, swept, guard) {
                    Some((way, victim, word)) => (way, None, Some((victim, word))),
                    None => {
                        // A stale plan (the set changed under the scan): look again.
                        // Acquire: as in `get_or_insert`.
                        c = guard.protect(claim, Ordering::Acquire);
                        continue;
                    }
                },
                Room::Helped => {
                    // Acquire: as in `get_or_insert`.
                    c = guard.protect(claim, Ordering::Acquire);
                    continue;
                }
            };
            let mut node = match unused.take() {
                Some(mut b) => {
                    *b = Node::new(key, born);
                    b
                }
                None => Node::boxed(key, born),
            };
            node.way = way as u8;
            node.adds = plan.is_none();
            let ptr = Box::into_raw(node);
            #[cfg(target_pointer_width = "64")]
            assert!(
                ptr.addr() >> TAG_SHIFT == 0,
                "txgate-ratelimit needs heap addresses below 2^48 (key tags use the top 16 bits)"
            );
            if let Some(free) = unit {
                match self.take_unit(set, ptr, c, free, guard) {
                    Taken::Inserted => {
                        *swept = 0;
                        return Got {
                            // SAFETY: our node, published in our set and not retired before our
                            // guard drops (it can only be evicted by a later insertion).
                            node: unsafe { self.deref(ptr, guard) },
                            inserted: true,
                            victim: None,
                            evicted: 0,
                        };
                    }
                    Taken::Failed => {}
                    Taken::NotInstalled => {
                        // SAFETY: never published.
                        unused = Some(unsafe { Box::from_raw(ptr) });
                    }
                }
                // Acquire: as in `get_or_insert`.
                c = guard.protect(claim, Ordering::Acquire);
                continue;
            }
            let Some((victim, word)) = plan else {
                // The set's first key, into way 0: the claim is the insertion (I2).
                // AcqRel on success: Release publishes the node (key, counts, plan) to whoever
                // loads the claim and completes it; Acquire keeps our completion after the claim.
                // SeqCst on failure: the newer claim word is the next one we act on (complete
                // it, or plan on the scan it orders), as if loaded by `protect`, whose SeqCst it
                // matches.
                match claim.compare_exchange(c, ptr, Ordering::AcqRel, Ordering::SeqCst) {
                    Ok(_) => {
                        self.complete(set, ptr, guard);
                        *swept = 0;
                        return Got {
                            // SAFETY: our node, published in our set and not retired before our
                            // guard drops (it can only be evicted by a later insertion).
                            node: unsafe { self.deref(ptr, guard) },
                            inserted: true,
                            victim: None,
                            evicted: 0,
                        };
                    }
                    Err(now) => {
                        // SAFETY: the claim failed, so the node was never published: still ours.
                        unused = Some(unsafe { Box::from_raw(ptr) });
                        c = now;
                        continue;
                    }
                }
            };
            // An eviction: a one-entry multi-word compare-and-swap on the victim's word,
            // committed together with the claim (module docs, "Eviction").
            let op = GroupOp::eviction(victim, ptr, c);
            // SAFETY: `victim` was loaded under `guard` from our slot.
            let victim_node = unsafe { self.deref(victim.cast_mut(), guard) };
            // Read now: once the eviction completes, this thread may have retired the victim.
            #[cfg(any(loom, test))]
            let victim_key = victim_node.key;
            if !GroupOp::install_victim(op, victim_node, word, guard) {
                // The victim was used (or swept) since the plan: plan again. Nothing was shared.
                // SAFETY: no marker of `op` was installed: no other thread saw it.
                unsafe { GroupOp::recycle(op) };
                // SAFETY: never published.
                unused = Some(unsafe { Box::from_raw(ptr) });
                // Acquire: as in `get_or_insert`.
                c = guard.protect(claim, Ordering::Acquire);
                continue;
            }
            #[cfg(loom)]
            self.attempts
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // From here a sweep that meets the marker may claim the set for the eviction and
            // complete it (`help_eviction`): the new node may be published by another thread at
            // any time, so it is never reused; the record and, if the eviction fails, the node
            // go to the collector through the last release of the record (I1, I5).
            // AcqRel on success: Release publishes the operation and the new node to whoever
            // loads the claim (I3); Acquire orders our completion after it. SeqCst on failure:
            // as above.
            let evicted = match claim.compare_exchange(
                c,
                tag_eviction(op),
                Ordering::AcqRel,
                Ordering::SeqCst,
            ) {
                Err(now) if now != tag_eviction(op) => {
                    // Another insertion holds the set, or a helper claimed it for us and it moved
                    // on already: help the set on, and claim it if the set comes back to our
                    // scan's word while the eviction is undecided; else it is decided (possibly
                    // `SUCCEEDED` by a helper: the new node is in its way).
                    self.drive(set, op, guard)
                }
                _ => {
                    // The marker is in place and the claim held (ours, or a helper's for us): the
                    // eviction may be decided `SUCCEEDED` (by us in `complete`, or by any thread
                    // that meets it).
                    GroupOp::settle(op, guard);
                    self.complete(set, tag_eviction(op), guard)
                }
            };
            // SAFETY: `complete` (also at the end of `drive`) returned after the record was
            // decided, its marker replaced if it failed or its victim out of its slot if it
            // succeeded, and our install of its claim, if any, completed; the owner's hold is
            // ours to release.
            let retired = unsafe { GroupOp::release(op, true, guard) };
            #[cfg(any(debug_assertions, loom))]
            self.assert_claim_gone(set, op, retired);
            #[cfg(not(any(debug_assertions, loom)))]
            let _ = retired;
            if evicted {
                #[cfg(any(loom, test))]
                if self.recording() {
                    self.victims.lock().expect("not poisoned").push(victim_key);
                }
                *swept = 0;
                return Got {
                    // SAFETY: our node, placed in its way by the completion; it leaves its slot
                    // (and is retired) only after our guard entered.
                    node: unsafe { self.deref(ptr, guard) },
                    inserted: true,
                    victim: Some(Victim {
                        node: victim,
                        word: word | state::EVICTED,
                    }),
                    evicted: 1,
                };
            }
            // Aborted: the victim was used first, or the plan went stale. The new node goes to
            // the collector with the record; plan again.
            // Acquire: as in `get_or_insert`.
            c = guard.protect(claim, Ordering::Acquire);
        }
    }

    /// Completes whatever insertion holds `key`'s set now, so that a node found evicted (which
    /// only an insertion in flight does) is out of its slot before the caller looks again.
    pub(crate) fn settle(&self, key: u64, guard: &Guard<'_>) {
        let set = self.set_of(key);
        // Acquire: as in `get_or_insert`.
        let c = guard.protect(self.claim(set), Ordering::Acquire);
        if is_claim(c) {
            self.complete(set, c, guard);
        }
    }

    /// Checks (debug builds and loom) that the free claim word `c` of `set` names the node of
    /// the set's last completed insertion, which is in one of its ways, or null for a set that
    /// never had one (I3: a failed eviction restores the word it replaced; I6). Checked only if
    /// the claim word still holds `c` after the ways were read, so that no insertion completed
    /// in between.
    #[cfg(any(debug_assertions, loom))]
    fn check_free_word(&self, set: usize, c: *mut Node, guard: &Guard<'_>) {
        let last = c.map_addr(|a| a & !1);
        let mut found = last.is_null();
        for way in 0..self.ways {
            // Acquire: as in `scan`.
            let slot = guard.protect(self.slot(set, way), Ordering::Acquire);
            if slot.is_null() {
                break;
            }
            found |= untag(slot) == last;
        }
        // Acquire: as in `get_or_insert`.
        if guard.protect(self.claim(set), Ordering::Acquire) == c {
            assert!(
                found,
                "set {set}: a free claim word names no node of the set"
            );
        }
    }

    /// Inserts node `ptr` (unpublished, ours) as a later key of `set`, whose claim word the
    /// owner's scan saw as `c`, taking one of the `free` free units at the instant its node is
    /// seen holding the claim (I7), through a reservation that any thread needing a unit helps
    /// to its decision. Out of line: only a shard that fills runs it.
    #[inline(never)]
    fn take_unit(
        &self,
        set: usize,
        ptr: *mut Node,
        c: *mut Node,
        free: usize,
        guard: &Guard<'_>,
    ) -> Taken {
        let r = Box::into_raw(Reservation::boxed(ptr, c, set, free));
        // AcqRel on success: Release publishes the reservation and its node (key, counts, way)
        // to the Acquire loads of the units word by helpers, who claim the set with it. Relaxed
        // on failure: the plan is abandoned; the caller loads the claim word again.
        if self
            .units
            .compare_exchange(
                units_word(free),
                pending(r),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_err()
        {
            // SAFETY: the install failed, so no other thread saw the reservation: it is ours
            // alone to reclaim (from `Box::into_raw`).
            unsafe { <Reservation as txgate_sync::reclaim::Reclaim>::reclaim(r) };
            return Taken::NotInstalled;
        }
        let taken = self.help(r, guard);
        // SAFETY: (1) from `Box::into_raw`, retired once, by us; (2) `help` returned after the
        // units word stopped naming it, which it never does again (I7), and no other word ever
        // held it: no thread entering now can load it.
        unsafe { guard.retire(r) };
        if taken {
            self.complete(set, ptr, guard);
            return Taken::Inserted;
        }
        // Failed: another insertion completed in the set first. The node never held a claim
        // word, but helpers may still compare it with one: to the collector, not reused (its
        // address stays unique while they hold their guards).
        // SAFETY: (1) from `Box::into_raw`, retired once; (2) it was never in a slot or a claim
        // word, and the reservation that named it is unreachable.
        unsafe { guard.retire(ptr) };
        Taken::Failed
    }

    /// Room for a key joining a set of `len` nodes without eviction (module docs, "The units
    /// word"): the set's first key needs no unit; a later one needs a free unit; a full set, or
    /// a stable-full shard (no unit free, no reservation pending, I7), evicts. A pending
    /// reservation is helped to its end first ([`Room::Helped`]).
    #[inline]
    fn room(&self, len: usize, guard: &Guard<'_>) -> Room {
        if len == self.ways {
            return Room::Evict;
        }
        if len == 0 {
            // Every set may hold one key without a unit.
            return Room::Way(None);
        }
        // Acquire: a `0` read here (final, I7) may send the caller to evict in a set with room
        // in its ways, which it does only if the set's claim word is still as scanned
        // (`insert`); the Acquire pairs with the Release of the resolution that wrote the `0`,
        // which follows the last unit's claim, so that claim word, or a later one, is what the
        // caller then loads. Otherwise a count is only a plan (the install's compare-and-swap
        // checks it); a pending word is loaded again under the guard before its record is read.
        match reservation(self.units.load(Ordering::Acquire)) {
            Err(0) => Room::Evict,
            Err(free) => Room::Way(Some(free)),
            Ok(_) => self.help_pending(guard),
        }
    }

    /// Helps the reservation pending on the units word, if any (the fill-up path, kept out of
    /// line).
    #[cold]
    #[inline(never)]
    fn help_pending(&self, guard: &Guard<'_>) -> Room {
        // Acquire: pairs with the Release of the reservation's install (its fields) or
        // resolution.
        if let Ok(r) = reservation(guard.protect(&self.units, Ordering::Acquire)) {
            self.help(r, guard);
        }
        Room::Helped
    }

    /// Helps the pending reservation `r` (loaded from the units word under `guard`, or the
    /// caller's own) to its decision, then resolves the units word (module docs, "The units
    /// word"). Returns whether the unit was taken. Each pass either decides, or completes an
    /// insertion in flight in the set, or moves the claim word; so it ends (lock-free, I7).
    #[inline(never)]
    fn help(&self, r: *mut Reservation, guard: &Guard<'_>) -> bool {
        guard.check(r);
        // SAFETY: loaded under `guard` from the units word (or the caller's own): it is retired
        // only after the units word stopped naming it (I7), so allocated until `guard` drops.
        let rec = unsafe { &*r };
        let claim = self.claim(rec.set);
        loop {
            // The claim word first, then the status: a claim word read before an undecided
            // status is one of the reservation's lifetime, whose `expected` cannot recur (I7).
            // Acquire: as in `get_or_insert`.
            let c = guard.protect(claim, Ordering::Acquire);
            // Acquire: pairs with the decision's AcqRel.
            if rec.status.load(Ordering::Acquire) != UNDECIDED {
                break;
            }
            if c == rec.node {
                // The node holds the claim: the unit is taken now (the insertion's
                // linearization point). AcqRel (failure Acquire): the decision orders after
                // the claim it saw and publishes itself to the status loads.
                let _ = rec.status.compare_exchange(
                    UNDECIDED,
                    SUCCEEDED,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            } else if c == rec.expected {
                // The set's membership is still the one the owner's scan saw (I6): claim it for
                // the node. AcqRel on success: Release passes the node's fields (acquired with
                // the reservation) on to whoever loads the claim and completes it. Relaxed on
                // failure: the claim word is loaded again.
                let _ = claim.compare_exchange(c, rec.node, Ordering::AcqRel, Ordering::Relaxed);
            } else if is_claim(c) {
                // Another insertion in flight in the set: complete it first.
                self.complete(rec.set, c, guard);
            } else {
                // `idle(Y)`, `Y` not the owner's `X`: an insertion completed in the set since
                // the scan, and `idle(X)` never recurs (I6, I7). AcqRel (failure Acquire): as
                // above.
                let _ = rec.status.compare_exchange(
                    UNDECIDED,
                    FAILED,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }
        }
        self.resolve(r, guard)
    }

    /// Resolves the units word of the decided reservation `r` (loaded under `guard`): `R | 1 ->
    /// (free - 1) << 1` if it succeeded, `-> free << 1` if it failed. Idempotent: a later call
    /// finds the word moved on. Returns whether it succeeded.
    fn resolve(&self, r: *mut Reservation, guard: &Guard<'_>) -> bool {
        guard.check(r);
        // SAFETY: as in `help`.
        let rec = unsafe { &*r };
        // Acquire: pairs with the decision's AcqRel.
        let status = rec.status.load(Ordering::Acquire);
        #[cfg(any(debug_assertions, loom))]
        assert_ne!(status, UNDECIDED, "a reservation resolved undecided");
        let taken = status == SUCCEEDED;
        let free = if taken { rec.free - 1 } else { rec.free };
        // AcqRel on success: Acquire orders our retirement of the record, if ours, after the
        // resolution. Release: a thread whose Acquire load in `room` reads the new count
        // happens after the decision, so after the claim word held the node (for `SUCCEEDED`):
        // its later load of that set's claim word sees that claim or a later word (a `0` that
        // sends it to evict is checked that way, `insert`). Relaxed on failure: resolved by
        // another thread.
        let _ = self.units.compare_exchange(
            pending(r),
            units_word(free),
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
        taken
    }

    /// The victim in a full set of `len` nodes, for new key `key`: its way, node and counts
    /// word (the one its eviction must still find, I4). `None` if a node is found evicted (the
    /// planner's scan is stale), or after helping another insertion's eviction that the sweep
    /// met ([`Shard::help_eviction`]): plan again. `swept`: the reference bits this insertion's
    /// sweep has cleared so far, over all its plans; the sweep goes on that many ways after its
    /// start way and adds the bits it clears now. The sequential CLOCK model's sweep is one pass
    /// that goes on from the way after its last step; a replan that started over would pass the
    /// ways it cleared again and could take a key whose bit it cleared itself, which no
    /// sequential order evicts (E1).
    fn victim(
        &self,
        set: usize,
        len: usize,
        key: u64,
        swept: &mut usize,
        guard: &Guard<'_>,
    ) -> Option<(usize, *const Node, u64)> {
        debug_assert!(len > 0);
        // CLOCK (second chance) from a position drawn from hash bits 16..48 of the new key,
        // which pick neither its set (the high bits) nor its tag (the low 16): the first way
        // whose key's reference bit (`TOUCHED`, in its state word) is clear; the sweep clears the
        // bits it passes (each clearing a step of its own, I4). If every bit was set, the start
        // way's key goes once its bit reads clear (the sweep goes round again).
        let start = ((((key >> 16) & 0xFFFF_FFFF) * len as u64) >> 32) as usize;
        let start = (start + *swept) % len;
        let mut way = start;
        loop {
            // Acquire: as in `scan`.
            let slot = guard.protect(self.slot(set, way), Ordering::Acquire);
            let ptr = untag(slot);
            // SAFETY: loaded under `guard` from our slot; the prefix is non-null.
            let node = unsafe { self.deref(ptr, guard) };
            match node.sweep(guard) {
                Swept::Evicted => return None,
                Swept::Cleared => {
                    *swept += 1;
                    #[cfg(any(loom, test))]
                    self.count_cleared();
                }
                Swept::Victim(word) => return Some((way, ptr.cast_const(), word)),
                Swept::Eviction(op, marker) => {
                    // Another insertion's eviction of this key, in flight: finish it (the set
                    // changes), then plan again.
                    self.help_eviction(set, op, node, marker, guard);
                    return None;
                }
            }
            way = if way + 1 == len { 0 } else { way + 1 };
        }
    }

    /// A sweep met the marker `marker` of eviction `op` on `node` (a key of `set`): helps that
    /// eviction to its end instead of aborting it, so that of two evictions whose sweeps meet
    /// each other's marker one always completes (module docs, "Progress"). If the record is
    /// already decided only its marker is resolved (as `group::resolve` does).
    #[cold]
    #[inline(never)]
    fn help_eviction(
        &self,
        set: usize,
        op: *mut GroupOp,
        node: &Node,
        marker: u64,
        guard: &Guard<'_>,
    ) {
        // The marker was loaded under `guard` while in place: `op` is allocated until `guard`
        // drops (I5), so the reference can be taken (or refused) safely.
        if !GroupOp::take_ref(op, guard) {
            crate::group::resolve(node, marker, guard);
            return;
        }
        #[cfg(loom)]
        self.helps
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.drive(set, op, guard);
        // SAFETY: `drive` decided the eviction (its `complete` decides), replaced its marker if
        // it failed or saw its victim out of its slot if it succeeded, and our installs of its
        // claim, if any, were completed by it; we hold a reference.
        let retired = unsafe { GroupOp::release(op, false, guard) };
        #[cfg(any(debug_assertions, loom))]
        self.assert_claim_gone(set, op, retired);
        #[cfg(not(any(debug_assertions, loom)))]
        let _ = retired;
    }

    /// Debug builds and loom: once eviction `op` is retired, no claim word holds it (I5: every
    /// install was by a holder and was completed before its release).
    #[cfg(any(debug_assertions, loom))]
    fn assert_claim_gone(&self, set: usize, op: *mut GroupOp, retired: bool) {
        // Relaxed: a check of this thread's own view; the holders' completions happen before
        // the last release (its Acquire), so the claim word has moved past `op` in it.
        if retired && self.claim(set).load(Ordering::Relaxed) == tag_eviction(op) {
            panic!("an eviction was retired while the claim word still held it");
        }
    }

    /// Drives eviction `op` of `set` (the caller's own, or one it holds a reference on) to its
    /// decision: installs its claim on its owner's behalf while the claim word still holds the
    /// word the owner's scan saw, completes insertions in flight in the set first, and decides
    /// it `FAILED` once the claim word moved past that word; then completes it. Returns whether
    /// it succeeded. Each pass decides, completes an insertion in flight, or moves the claim
    /// word, so it ends (lock-free).
    fn drive(&self, set: usize, op: *mut GroupOp, guard: &Guard<'_>) -> bool {
        let claim = self.claim(set);
        let mine = tag_eviction(op);
        guard.check(op);
        // SAFETY: the caller owns `op` or holds a reference on it (I5).
        let expected = unsafe { &*op }.prev;
        loop {
            #[cfg(any(debug_assertions, loom))]
            GroupOp::assert_held(op, guard);
            // The claim word first, then the status (Acquire, so not performed before this
            // load): a claim word `expected` read before an undecided status is read while the
            // eviction's owner still holds the guard under which it loaded `idle(X)`, so `X`'s
            // address was not reused: it is `X` itself, in one of the set's ways (I6). Then `X`
            // leaves its way, if ever, after our guard entered, so the address stays `X`'s
            // while we hold it, and our compare-and-swap below lands only on `idle(X)` itself:
            // the set's membership as the owner's scan saw it (I6), or a late claim if the
            // record was decided meanwhile (I3).
            // Acquire: as in `get_or_insert`.
            let c = guard.protect(claim, Ordering::Acquire);
            if !GroupOp::undecided(op, guard) || c == mine {
                break;
            }
            if c == expected {
                // The set's membership is the one the owner's scan saw and the marker is in
                // place (the record is undecided): claim the set for the eviction (I3). If the
                // record is decided `FAILED` before this lands, the claim is a late one, which
                // `complete` below (or any completer) takes back; the references keep the
                // record and its node allocated while it is there (I5). AcqRel on success:
                // Release passes the record and its node (acquired with the marker) on to whoever
                // loads the claim, Acquire orders our completion after it. Relaxed on failure:
                // the claim word is loaded again.
                let _ = claim.compare_exchange(c, mine, Ordering::AcqRel, Ordering::Relaxed);
            } else if is_claim(c) {
                // Another insertion in flight in the set: complete it first.
                self.complete(set, c, guard);
            } else {
                // `idle(Y)`, `Y` not the owner's `X`: an insertion completed in the set since
                // the owner's scan, and `idle(X)` never recurs while the record is undecided
                // (I6): its plan is stale.
                let _ = GroupOp::decide(op, false, guard);
                break;
            }
        }
        // Decided, or its claim seen in place: complete it (idempotent when decided).
        self.complete(set, mine, guard)
    }

    /// Carries out the insertion that claim word `c` names (an empty way's node, or an eviction
    /// operation), as loaded from `set`'s claim word (steps in the module docs; every step is a
    /// compare-and-swap that succeeds at most once, so a late helper changes nothing). Returns
    /// whether it was an eviction that succeeded.
    fn complete(&self, set: usize, c: *mut Node, guard: &Guard<'_>) -> bool {
        let claim = self.claim(set);
        if c.addr() & EVICTION == 0 {
            // SAFETY: `c` was loaded under `guard` from the set's claim word.
            let node = unsafe { self.deref(c, guard) };
            if node.adds && node.way > 0 {
                // A later key of a non-empty set: it took a unit through a reservation, which
                // is decided before the node leaves the claim word (I7). If the units word still
                // names it, it is undecided or succeeded (the claim holds its node): decide it
                // and resolve the word.
                // Acquire: as in `help_pending` (pairs with the Release of the reservation's
                // install: its fields).
                if let Ok(r) = reservation(guard.protect(&self.units, Ordering::Acquire)) {
                    guard.check(r);
                    // SAFETY: as in `help`.
                    let rec = unsafe { &*r };
                    if rec.node == c {
                        // AcqRel (failure Acquire): as in `help`.
                        let _ = rec.status.compare_exchange(
                            UNDECIDED,
                            SUCCEEDED,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        );
                        let taken = self.resolve(r, guard);
                        #[cfg(any(debug_assertions, loom))]
                        assert!(taken, "a reservation failed while its node held the claim");
                        #[cfg(not(any(debug_assertions, loom)))]
                        let _ = taken;
                    }
                }
            }
            let slot = self.slot(set, usize::from(node.way));
            // Acquire: as in `scan`.
            let v = guard.protect(slot, Ordering::Acquire);
            // An empty way's insertion: the way is empty while the claim holds `c` (I2), or
            // holds `c` once placed. AcqRel on success: Release publishes the node to the
            // Acquire loads of `scan`. Relaxed on failure: placed by another thread.
            if v.is_null() && claim.load(Ordering::Acquire) == c {
                let _ = slot.compare_exchange(
                    v,
                    tagged(c, node.key),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                );
            }
            // Release on success: every change of this insertion happens before the next
            // planner's Acquire load of the freed word. Relaxed on failure: another thread freed
            // it.
            if claim
                .compare_exchange(c, idle(c), Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                // Relaxed: a statistic, counted once by the thread that freed the claim.
                self.entries.fetch_add(1, Ordering::Relaxed);
            }
            return false;
        }
        let op: *const GroupOp = c.map_addr(|a| a & !EVICTION).cast();
        let (victim, _, n) = GroupOp::eviction_parts(op, guard);
        // The victim's address is compared with the slot below, and compares true only while
        // it is the victim's: the victim is not reclaimed while `guard` lives (I1, I5).
        guard.check(victim);
        // SAFETY: the new node was published through the operation, which the caller loaded
        // from the claim word under `guard`; it is retired only after the claim moved past it.
        let node = unsafe { self.deref(n, guard) };
        let way = usize::from(node.way);
        let slot = self.slot(set, way);
        // Undecided, so the claim still holds `c` and the marker is in place (I3): decide. (The
        // caller loaded `c` from the claim word or installed it; a claim word leaves `c` only
        // after the record is decided, whoever installed it: the owner, or a helper, which
        // installs only while the record is undecided and the set's membership the owner's,
        // I6. Callers that never saw `c` in place call this only on a decided record.)
        let evicts = GroupOp::decide(op, true, guard);
        // Acquire: as in `scan`; and a slot seen past the victim was changed by the
        // compare-and-swap below, which then happens before our release of the record (I5).
        let v = guard.protect(slot, Ordering::Acquire);
        if untag(v) == victim.cast_mut() {
            if evicts {
                // The victim keeps the marker: a thread that meets it later, while it can still
                // reach the victim, resolves it to the final word (I5). No write of the victim's
                // line here.
                // The victim is retired with the record, by its last holder (I1, I5): a
                // completer that holds no reference (it loaded `c` from the claim word) compares
                // the victim's address with the slot, and the address must not be reused while
                // it can. Release on success: publishes `n` to the Acquire loads of `scan`.
                // Acquire on failure: the slot was changed by another completer, whose change
                // then happens before our release of the record (I5).
                let _ = slot.compare_exchange(
                    v,
                    tagged(n, node.key),
                    Ordering::Release,
                    Ordering::Acquire,
                );
            } else {
                // SAFETY: the victim is still in its way, so not retired before `guard` entered.
                let victim_node = unsafe { self.deref(victim.cast_mut(), guard) };
                GroupOp::restore(op, victim_node, guard);
            }
        }
        // Release on success: as above. Relaxed on failure: another thread freed it. An abort
        // restores the claim word it replaced: the set's ways are as they were (I3).
        let freed = if evicts {
            idle(n)
        } else {
            // SAFETY: `op` was loaded under `guard` from the claim word, and is retired only after
            // the claim word moved past it (I5).
            unsafe { &*op }.prev
        };
        let _ = claim.compare_exchange(c, freed, Ordering::Release, Ordering::Relaxed);
        evicts
    }

    /// The hashes of the keys in this shard, in slot order.
    pub(crate) fn keys<'g>(&'g self, guard: &'g Guard<'_>) -> impl Iterator<Item = u64> + 'g {
        self.nodes(guard).map(|node| node.key)
    }

    /// The nodes in the shard's slots, loaded under `guard`.
    fn nodes<'g>(&'g self, guard: &'g Guard<'_>) -> impl Iterator<Item = &'g Node> + 'g {
        (0..self.sets)
            .flat_map(move |set| (0..self.ways).map(move |way| self.slot(set, way)))
            .filter_map(move |slot| {
                // Acquire: as in `scan`.
                let slot = guard.protect(slot, Ordering::Acquire);
                // SAFETY: loaded under `guard` from our slot.
                (!slot.is_null()).then(|| unsafe { self.deref(untag(slot), guard) })
            })
    }

    /// The keys whose reference bit is set; call only when no operation is in flight (no
    /// marker is left on a node then).
    #[cfg(any(loom, test))]
    pub(crate) fn referenced_keys<'g>(
        &'g self,
        guard: &'g Guard<'_>,
    ) -> impl Iterator<Item = u64> + 'g {
        self.nodes(guard).filter_map(|node| {
            let word = node.load();
            assert_eq!(word & state::MARKER, 0, "a marker left on a quiescent node");
            (word & state::TOUCHED != 0).then_some(node.key)
        })
    }

    /// Checks the shard's invariants; call only when no operation is in flight (after a stress
    /// trial, a fuzz step). Panics with the broken invariant.
    #[cfg(any(test, fuzzing, loom))]
    pub(crate) fn validate(&self, guard: &Guard<'_>) {
        let mut keys = std::collections::HashSet::new();
        let mut total = 0;
        let mut extra = 0;
        for set in 0..self.sets {
            // Relaxed: quiescent.
            let c = self.claim(set).load(Ordering::Relaxed);
            assert!(!is_claim(c), "set {set}: an insertion is still in flight");
            // `idle(X)`: X is the node of the last insertion that completed in the set, so it
            // is in one of the set's ways (an eviction of it would have completed a later
            // insertion), or null if none did; a failed eviction restored the word it replaced
            // (I3).
            let last = c.map_addr(|a| a & !1);
            let mut last_found = last.is_null();
            let mut len = 0;
            for way in 0..self.ways {
                // Relaxed: quiescent.
                let slot = self.slot(set, way).load(Ordering::Relaxed);
                if slot.is_null() {
                    break;
                }
                last_found |= untag(slot) == last;
                len += 1;
                // SAFETY: loaded under `guard` from our slot.
                let node = unsafe { self.deref(untag(slot), guard) };
                assert!(may_hold(slot, node.key), "set {set} way {way}: wrong tag");
                assert_eq!(
                    self.set_of(node.key),
                    set,
                    "way {way}: key in a foreign set"
                );
                // Relaxed: quiescent.
                let word = node.state.load(Ordering::Relaxed);
                assert_eq!(word & state::MARKER, 0, "a group operation left a marker");
                assert_eq!(
                    word & state::EVICTED,
                    0,
                    "an evicted node is still in a slot"
                );
                assert!(keys.insert(node.key), "key {:#x} tracked twice", node.key);
            }
            for way in len..self.ways {
                // Relaxed: quiescent.
                let slot = self.slot(set, way).load(Ordering::Relaxed);
                assert!(slot.is_null(), "set {set}: way {way} after an empty way");
            }
            assert!(
                last_found && last.is_null() == (len == 0),
                "set {set}: the claim word names no node of the set"
            );
            total += len;
            extra += len.saturating_sub(1);
        }
        assert!(
            total <= self.capacity,
            "{total} keys over capacity {}",
            self.capacity
        );
        assert_eq!(self.entries(), total, "entries counter");
        // Relaxed: quiescent.
        let units = reservation(self.units.load(Ordering::Relaxed))
            .expect_err("a unit reservation is still pending");
        assert_eq!(units, self.capacity - self.sets - extra, "spare room");
    }
}

impl Drop for Shard {
    fn drop(&mut self) {
        for set in 0..self.sets {
            for word in &self.set(set)[1..] {
                // Relaxed: `&mut self`, no other thread can touch the table any more.
                let ptr = word.load(Ordering::Relaxed);
                if ptr.is_null() {
                    break;
                }
                // SAFETY: `&mut self` means no guard of this limiter is alive; a node in a slot
                // was never retired (slot invariant), so this is its only owner.
                drop(unsafe { Box::from_raw(untag(ptr)) });
            }
        }
    }
}
