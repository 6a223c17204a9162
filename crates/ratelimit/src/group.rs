//! Group operations: an admission (or penalty) of several keys that takes effect on all of them
//! at one instant, or on none of them.
//!
//! A group's counts live in several nodes, so "all within their limits, then all + 1" cannot be
//! one compare-and-swap. Reserving the keys one by one and taking the reservations back on a
//! failure is not linearizable: a concurrent caller may be dropped because of a reservation that
//! is then taken back, an outcome no sequential order gives. Instead a group runs a multi-word
//! compare-and-swap in the style of Harris, Fraser and Pratt ("A Practical Multi-Word
//! Compare-and-Swap Operation", DISC 2002):
//!
//! A group whose keys are all tracked first only reads: it finds each key's node by a scan and
//! reads its word, and if every key admits it commits at once ([`commit`] below), each entry
//! holding the word as the key's lookup step leaves it (rolled to the group's instant,
//! reference bit set), so that the lookups take effect with the decision (E2 allows any
//! placement of the lookup steps before the decision, this one included) and an admission
//! costs no compare-and-swap beyond the multi-word one. Otherwise the group looks its keys up
//! (each found key rolled to the group's instant with its reference bit set: its lookup step;
//! a missing one inserted) and reads their words again (after a read-only attempt that found
//! a key over its limit, the words its lookup steps themselves read or wrote: a key whose word
//! already shows the access needs no step beyond that read). If a key refuses the admission,
//! the group is dropped on those words once the words of the keys before it (and, for words
//! left by the steps, its own) read the same again ([`decide_drop`]): no record, no marker, no
//! compare-and-swap beyond the lookups' own writes (under attack most group checks are drops).
//! Only a group that admits (or a penalty) pays for the multi-word compare-and-swap
//! ([`commit`]):
//!
//! 1. The owner builds a [`GroupOp`] (one entry per node) and, in the
//!    limiter's canonical key order, replaces each node's counts word `w` with a *marker* (the
//!    operation's address with the `MARKER` bit) by compare-and-swap, storing in the entry
//!    first `w` as the key's lookup leaves it (`w` itself after a lookup step; rolled, with the
//!    reference bit set, on a read-only attempt). For an admission it installs only words that admit; a word that does not aborts
//!    the record (`FAILED`) and the group is decided from a new snapshot as above.
//! 2. Once every entry is settled the owner decides with one compare-and-swap of the status,
//!    `UNDECIDED -> SUCCEEDED`. That is the group's linearization point: every node then holds
//!    the operation's marker, so no other operation has changed any of their counts since they
//!    were checked.
//! 3. Every marker is then resolved to the entry's new counts (`SUCCEEDED`) or its old ones
//!    (`FAILED`).
//!
//! Any other operation that finds a marker on a node it needs resolves it before reading the
//! counts ([`resolve`]; a CLOCK sweep that meets the marker of an eviction, a one-entry record
//! with a new node, helps that eviction to its end instead: `table`'s "Progress"): if the group is undecided it decides it, `SUCCEEDED` when every entry
//! is settled (all markers are in place, so the decision is valid at that instant) and `FAILED`
//! otherwise (an abort: the owner takes its markers back and retries with a new operation), then
//! it replaces the marker on *its* node with the decided value. So nobody ever reads a count that
//! could still be taken back, and nobody waits: a marker is resolved by whoever meets it.
//! Touching only its own node keeps the resolver safe from memory reclamation: it dereferences
//! the operation (retired only once no thread entering after can load a marker of it, so
//! protected by the resolver's guard: a group's after all its markers are gone, an eviction's
//! that succeeded after its victim, which keeps the marker, left its slot; `table`'s I5) and
//! the node it already holds, never the group's other nodes.
//!
//! A marker is unique to one operation while any guard that saw it is alive (an operation is
//! recycled only after reclamation), so a late compare-and-swap expecting a marker fails
//! instead of undoing a newer change; the only compare-and-swap that expects a counts word is
//! the owner's install of a word it has just read, which, if the word returned to that value
//! meanwhile, installs on a state the check still holds for.
//!
//! Progress: resolving a marker takes a bounded number of steps, but an operation may meet a new
//! marker of the same group after it aborted the last one: a group and the operations on its
//! keys are obstruction-free against each other (lock-free multi-word CAS would have resolvers
//! finish installing a group, dereferencing its other nodes, which this scheme avoids). A group
//! backs off exponentially before retrying, so that the operation it met gets through.

#[cfg(not(loom))]
use std::cell::RefCell;

use txgate_sync::reclaim::{Guard, Reclaim};
use txgate_sync::sync::{AtomicU64, AtomicUsize, Ordering};

use crate::node::{Node, Update};
use crate::small_buf::SmallBuf;
use crate::state::{self, Counts, Instant, Limits, MARKER, TOUCHED};
use crate::table::Got;

// A record's status word: the decision in its low two bits (`UNDECIDED -> SUCCEEDED | FAILED`,
// once), and for an eviction the references helpers hold on it (above `OWNER_DONE`; module
// docs of `table`, I5). A group never has helpers: its word is just the decision.
const UNDECIDED: usize = 0;
const SUCCEEDED: usize = 1;
const FAILED: usize = 2;
/// The decision bits of a status word.
const DECISION: usize = 3;
/// The eviction's owner is done with it: the helper whose release leaves no reference retires
/// it.
const OWNER_DONE: usize = 4;
/// One helper's reference.
const REF: usize = 8;

/// An entry's `old` for a node evicted by the group's own lookups: its counts are final, so it
/// needs no marker, and its admission is not stored (as for a key the group evicted itself in a
/// sequential run). Never a counts word (the `MARKER` bit is set).
const FROZEN: u64 = u64::MAX;

/// What a group operation does to each of its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An admission of the operation's cost on each key, if every key admits it.
    Admit,
    /// One penalty each (never fails).
    Penalize,
}

struct Entry {
    node: *const Node,
    /// The node's counts word when the marker replaced it; `FROZEN` for a self-evicted node.
    /// Invariant: written before the entry's marker is installed, never after.
    old: AtomicU64,
    /// The node's counts word if the operation succeeds (`old` with the operation applied),
    /// computed once by the owner. Invariant: as `old`.
    new: AtomicU64,
}

impl Entry {
    /// The entry's word as decided: `new` if the operation succeeded, else `old`. Relaxed loads:
    /// the caller has synchronized with the install that published them (it loaded the marker
    /// with Acquire, or is the owner).
    fn decided(&self, succeeded: bool) -> u64 {
        if succeeded {
            self.new.load(Ordering::Relaxed)
        } else {
            self.old.load(Ordering::Relaxed)
        }
    }
}

/// One group operation in flight (the multi-word compare-and-swap's descriptor).
pub(crate) struct GroupOp {
    /// The decision (`UNDECIDED` until decided once, by compare-and-swap, then final) in the low
    /// two bits; for an eviction also `OWNER_DONE` and the count of helpers' references (`REF`
    /// each), which a decision keeps.
    status: AtomicUsize,
    /// Entries settled so far, in order (installed, or frozen). Invariant: only the owner
    /// advances it, after the entry's marker is in place.
    settled: AtomicUsize,
    /// One per node. Invariant: filled before the operation is shared, then only `old` changes.
    entries: Vec<Entry>,
    /// Evictions: the new node whose insertion the eviction makes room for (its way is
    /// `Node::way`). Invariant: written before the operation is shared, never after.
    pub(crate) insert: *mut Node,
    /// Evictions: the set's claim word before the claim (`idle(X)`), restored by an abort.
    /// Invariant: as `insert`.
    pub(crate) prev: *mut Node,
    /// Debug builds and loom: set when the record is retired, so that a holder that finds it
    /// retired (a hold released too early) fails an assertion (I5).
    #[cfg(any(debug_assertions, loom))]
    retired: std::sync::atomic::AtomicBool,
}

// SAFETY: the raw node pointers are only dereferenced under a guard that protects them (see the
// module docs), and every shared field is atomic or immutable while the operation is shared.
unsafe impl Send for GroupOp {}
// SAFETY: as above.
unsafe impl Sync for GroupOp {}

#[cfg(not(loom))]
thread_local! {
    /// Operations reclaimed on this thread, for reuse: after warm-up a group allocates nothing.
    static POOL: crate::pool::Pool<GroupOp> = const { RefCell::new(Vec::new()) };
}

/// A record from this thread's pool, if any.
fn pooled() -> Option<Box<GroupOp>> {
    #[cfg(not(loom))]
    {
        crate::pool::take(&POOL)
    }
    #[cfg(loom)]
    {
        None
    }
}

impl Reclaim for GroupOp {
    unsafe fn reclaim(ptr: *mut Self) {
        // SAFETY: the trait's contract: the operation came from `Box::into_raw` (`GroupOp::new`)
        // and no thread can reach it any more.
        let mut op = unsafe { Box::from_raw(ptr) };
        op.entries.clear();
        #[cfg(not(loom))]
        crate::pool::give(&POOL, op);
    }
}

impl GroupOp {
    /// Recycles an operation that was never shared (no marker of it was ever installed), without
    /// waiting for the collector.
    ///
    /// # Safety
    ///
    /// `op` came from [`GroupOp::new`] and no marker of it was installed: no other thread can
    /// have seen it.
    pub(crate) unsafe fn recycle(op: *mut Self) {
        // SAFETY: the caller's contract is `reclaim`'s: no thread can reach it.
        unsafe { Self::reclaim(op) };
    }

    /// A new undecided operation over `nodes` (in canonical key order), unshared: the caller
    /// publishes it by installing its markers (each entry carries the word it decides, so the
    /// record needs no window arithmetic of its own).
    pub(crate) fn new(nodes: impl IntoIterator<Item = *const Node>) -> *mut Self {
        let mut op = pooled().unwrap_or_else(|| {
            Box::new(GroupOp {
                status: AtomicUsize::new(UNDECIDED),
                settled: AtomicUsize::new(0),
                entries: Vec::new(),
                insert: std::ptr::null_mut(),
                prev: std::ptr::null_mut(),
                #[cfg(any(debug_assertions, loom))]
                retired: std::sync::atomic::AtomicBool::new(false),
            })
        });
        #[cfg(any(debug_assertions, loom))]
        {
            op.retired = std::sync::atomic::AtomicBool::new(false);
        }
        op.status = AtomicUsize::new(UNDECIDED);
        op.settled = AtomicUsize::new(0);
        op.entries.clear();
        op.entries.extend(nodes.into_iter().map(|node| Entry {
            node,
            old: AtomicU64::new(FROZEN),
            new: AtomicU64::new(FROZEN),
        }));
        op.insert = std::ptr::null_mut();
        op.prev = std::ptr::null_mut();
        Box::into_raw(op)
    }

    /// A new undecided eviction of `victim` for the insertion of `insert` into a set whose claim
    /// word was `prev`. Unshared: the
    /// caller publishes it with [`GroupOp::install_victim`].
    pub(crate) fn eviction(victim: *const Node, insert: *mut Node, prev: *mut Node) -> *mut Self {
        let op = Self::new([victim]);
        // SAFETY: just allocated and unshared.
        let this = unsafe { &mut *op };
        this.insert = insert;
        this.prev = prev;
        op
    }

    /// Owner of an eviction: replaces the victim's counts word `word` (as planned) with the
    /// operation's marker, storing `word` first, without settling the entry (the claim settles
    /// it: [`GroupOp::settle`]). `false`: the word changed since the plan.
    pub(crate) fn install_victim(
        op: *const Self,
        node: &Node,
        word: u64,
        guard: &Guard<'_>,
    ) -> bool {
        guard.check(op);
        // SAFETY: only the operation's owner calls this, before its end: a record is retired
        // only at or after its owner's end (by the owner, or by the last helper holding a
        // reference to an eviction record, I5).
        let this = unsafe { &*op };
        // Relaxed (both): published by the install below. A success makes the word final.
        this.entries[0].old.store(word, Ordering::Relaxed);
        this.entries[0]
            .new
            .store(word | state::EVICTED, Ordering::Relaxed);
        // Release on success: publishes the operation's fields and the entry's `old` to the
        // Acquire loads of whoever meets the marker (as `install`). Relaxed on failure: the plan
        // is abandoned.
        node.state
            .compare_exchange(word, Self::marker(op), Ordering::Release, Ordering::Relaxed)
            .is_ok()
    }

    /// An eviction's entry settled: its marker is in place and its claim held, so a resolver
    /// may decide it `SUCCEEDED`.
    pub(crate) fn settle(op: *const Self, guard: &Guard<'_>) {
        guard.check(op);
        // SAFETY: as in `install_victim` (only the owner calls it, once its claim is held).
        let this = unsafe { &*op };
        // Release: a resolver that reads it (Acquire) decides on a settled operation.
        this.settled.store(this.entries.len(), Ordering::Release);
    }

    /// Decides the operation `target` if it is still undecided; returns whether it succeeded
    /// (the decision, by whoever made it).
    pub(crate) fn decide(op: *const Self, target: bool, guard: &Guard<'_>) -> bool {
        guard.check(op);
        // SAFETY: called under a guard that loaded `op` from a claim word or a marker, or owns
        // it (or holds a reference on it).
        let this = unsafe { &*op };
        this.decide_status(if target { SUCCEEDED } else { FAILED }) == SUCCEEDED
    }

    /// Decides `target` if undecided, keeping the reference bits; returns the decision.
    fn decide_status(&self, target: usize) -> usize {
        // First try the word of a record no helper holds (one compare-and-swap, as for a
        // group); a count in the word costs a retry.
        let mut expected = UNDECIDED;
        loop {
            // AcqRel (failure Acquire): the single decision; Release publishes it with
            // everything before it, Acquire (also on failure) sees another thread's decision.
            match self.status.compare_exchange(
                expected,
                expected | target,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return target,
                Err(now) if now & DECISION != UNDECIDED => return now & DECISION,
                Err(now) => expected = now,
            }
        }
    }

    /// A helper of an eviction (a sweep that met its marker, loaded under `guard`): takes a
    /// reference on it if it is still undecided (`false`: it is decided; do not help it, and
    /// do not release). While a reference is held the record, and its new node, stay
    /// allocated (I5).
    pub(crate) fn take_ref(op: *const Self, guard: &Guard<'_>) -> bool {
        guard.check(op);
        // SAFETY: the marker was loaded under `guard`; the record is retired only once no thread
        // entering after can load a marker of it (I5), so it is allocated until `guard` drops.
        let this = unsafe { &*op };
        let mut word = UNDECIDED;
        loop {
            // Acquire (both): a decided word found here is acted on (its marker replaced with
            // the decided value); the count needs only the atomicity of the read-modify-write.
            match this.status.compare_exchange_weak(
                word,
                word + REF,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) if now & DECISION != UNDECIDED => return false,
                Err(now) => word = now,
            }
        }
    }

    /// Releases the caller's hold on the decided eviction `op` (the owner's, `owner`, or a
    /// helper's reference from [`GroupOp::take_ref`]) and retires the record, with its victim
    /// if it succeeded (then the new node is in the victim's slot) or its new node if it failed,
    /// if that hold was the last (I1, I5): returns whether it did.
    /// The owner's release is one load when no helper holds a reference (no read-modify-write).
    ///
    /// # Safety
    ///
    /// `op` is an eviction record from [`GroupOp::eviction`], decided, whose marker has been
    /// replaced if it failed, and whose victim is out of its slot if it succeeded; the caller
    /// holds the hold it releases and has finished with the record: its own installs of the
    /// eviction's claim word, if any, were completed ([`crate::table`]'s `complete` returned
    /// after each).
    #[inline]
    pub(crate) unsafe fn release(op: *mut Self, owner: bool, guard: &Guard<'_>) -> bool {
        guard.check(op);
        // SAFETY: the caller's hold keeps it allocated.
        let this = unsafe { &*op };
        // The decision as the releasing access read it (the last holder's read-modify-write or
        // load follows the decision in the word's modification order: a decision keeps the
        // count, so a holder never releases an undecided record).
        let (last, word) = if owner {
            // Acquire: pairs with the Release of the helpers' decrements, so that all they
            // did happens before our retirement. A decided word with no reference is final:
            // helpers take references only from an undecided word.
            let mut word = this.status.load(Ordering::Acquire);
            debug_assert_ne!(word & DECISION, UNDECIDED, "an eviction released undecided");
            loop {
                if word < REF {
                    break (true, word);
                }
                // AcqRel (failure Acquire): Release passes our work on to the helper that
                // retires; Acquire (on failure) sees the decrement that changed the count.
                match this.status.compare_exchange_weak(
                    word,
                    word | OWNER_DONE,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => break (false, word),
                    Err(now) => word = now,
                }
            }
        } else {
            // AcqRel: Release makes this helper's work (its install and completion of the claim
            // word) happen before the retirement by whoever releases last; Acquire, if that is
            // us, makes the owner's and other helpers' work happen before ours.
            let word = this.status.fetch_sub(REF, Ordering::AcqRel);
            debug_assert!(word >= REF, "a helper released a reference it did not hold");
            (word >> 3 == 1 && word & OWNER_DONE != 0, word)
        };
        if !last {
            return false;
        }
        #[cfg(any(debug_assertions, loom))]
        assert!(
            !this
                .retired
                .swap(true, std::sync::atomic::Ordering::Relaxed),
            "an eviction record retired twice"
        );
        let succeeded = word & DECISION == SUCCEEDED;
        // The victim if it succeeded (out of its slot), the new node if it failed (never in
        // one).
        let node = if succeeded {
            this.entries[0].node.cast_mut()
        } else {
            this.insert
        };
        // SAFETY: (1) the record came from `Box::into_raw` and is retired once, by the last
        // holder; (2) its marker was replaced (failed) or its victim left its slot (succeeded,
        // the marker staying on the victim) before the last release, and no claim word
        // holds it: each install was by a holder (the owner's claim, a helper's) and each
        // holder's completion moved the claim word past it before its release; no helper can
        // take a reference any more (the record is decided), so no thread entering now can
        // load it (I5).
        unsafe { guard.retire(op) };
        // SAFETY: (1) from `Box::into_raw`, retired once, here (I1); (2) a succeeded eviction's
        // victim is out of its slot, and a failed one's new node was never in a slot: either is
        // reachable only through the record (its entry, its new node), the slot the victim has
        // left and the claim words the claim word has moved past, so no thread entering now can
        // load it (I1, I5).
        unsafe { guard.retire(node) };
        true
    }

    /// Debug builds and loom: asserts that a holder's record is not retired (I5: a holder's
    /// reference keeps it).
    #[cfg(any(debug_assertions, loom))]
    pub(crate) fn assert_held(op: *const Self, guard: &Guard<'_>) {
        guard.check(op);
        // SAFETY: the caller holds the record (or the assertion is about to fail on a record
        // whose collector has not freed it: the holder's guard keeps it).
        let retired = unsafe { &*op }
            .retired
            .load(std::sync::atomic::Ordering::Relaxed);
        assert!(!retired, "a holder of an eviction record found it retired");
    }

    /// The victim, its planned word and the new node of an eviction.
    pub(crate) fn eviction_parts(
        op: *const Self,
        guard: &Guard<'_>,
    ) -> (*const Node, u64, *mut Node) {
        guard.check(op);
        // SAFETY: as in `decide`.
        let this = unsafe { &*op };
        // Relaxed: published by the marker's install, which happens before the claim that the
        // caller loaded the operation from (Release/Acquire).
        (
            this.entries[0].node,
            this.entries[0].old.load(Ordering::Relaxed),
            this.insert,
        )
    }

    /// Puts a failed eviction's planned word back on its victim `node` in place of its marker.
    /// Idempotent: a later call finds the marker gone. (A successful eviction leaves its marker
    /// on the victim, which has left its slot: whoever meets it resolves it to the final word,
    /// [`resolve`].)
    pub(crate) fn restore(op: *const Self, node: &Node, guard: &Guard<'_>) {
        guard.check(op);
        // SAFETY: as in `decide`.
        let this = unsafe { &*op };
        // Acquire: pairs with the decision's Release.
        debug_assert_eq!(this.status.load(Ordering::Acquire) & DECISION, FAILED);
        // Relaxed (in `decided`): as in `eviction_parts`.
        let value = this.entries[0].decided(false);
        // Release on success: as in `resolve`. Acquire on failure: as in `finish` (the owner
        // retires the operation after this).
        let _ = node.state.compare_exchange(
            Self::marker(op),
            value,
            Ordering::Release,
            Ordering::Acquire,
        );
    }

    /// The marker word of the operation at `op`.
    fn marker(op: *const Self) -> u64 {
        // Exposed provenance: a marker is a counts-word-sized integer; `resolve` turns it back
        // into a pointer with `with_exposed_provenance`.
        let addr = op.expose_provenance() as u64;
        debug_assert_eq!(addr & MARKER, 0, "user-space addresses are below 2^63");
        addr | MARKER
    }

    /// Owner: settles entry `i` on the node's counts word `word` (neither marker nor evicted):
    /// stores `old` (the word as the group's lookup leaves it: `word` rolled to the group's
    /// instant with the reference bit set, or `word` itself for a key the lookup created) and
    /// `new` (`old` with the operation applied) and replaces `word` with the marker. The lookup
    /// takes effect at that compare-and-swap: a resolver that aborts the group writes `old`
    /// back. `false` if the word changed meanwhile (read it again).
    pub(crate) fn install(
        op: *const Self,
        i: usize,
        node: &Node,
        word: u64,
        (old, new): (u64, u64),
        guard: &Guard<'_>,
    ) -> bool {
        guard.check(op);
        // SAFETY: only the operation's owner calls this, before its end: a record is retired
        // only at or after its owner's end (by the owner, or by the last helper holding a
        // reference to an eviction record, I5).
        let this = unsafe { &*op };
        debug_assert!(std::ptr::eq(this.entries[i].node, node));
        debug_assert_eq!(old & (MARKER | state::EVICTED), 0);
        // Relaxed (both): published by the Release of the install below.
        this.entries[i].old.store(old, Ordering::Relaxed);
        this.entries[i].new.store(new, Ordering::Relaxed);
        // Release on success: publishes the operation's fields and this entry's words to the
        // Acquire loads of whoever meets the marker. Relaxed on failure: we read the word again.
        if node
            .state
            .compare_exchange(word, Self::marker(op), Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        // Release: a resolver that reads `settled == len` (Acquire) knows every marker is in
        // place.
        this.settled.store(i + 1, Ordering::Release);
        true
    }

    /// Owner: settles entry `i`, a node the group's own lookups evicted, on its final word.
    pub(crate) fn freeze(op: *const Self, i: usize, guard: &Guard<'_>) {
        guard.check(op);
        // SAFETY: as in `install`.
        let this = unsafe { &*op };
        // Release: as in `install`.
        this.settled.store(i + 1, Ordering::Release);
    }

    /// Owner: whether the operation is still undecided (another operation may abort it).
    pub(crate) fn undecided(op: *const Self, guard: &Guard<'_>) -> bool {
        guard.check(op);
        // SAFETY: as in `install`.
        // Acquire: pairs with a resolver's AcqRel decision, so that the owner stops installing
        // markers on a record already aborted (an early exit only: `finish` decides, once).
        unsafe { &*op }.status.load(Ordering::Acquire) & DECISION == UNDECIDED
    }

    /// Owner: decides the operation (`SUCCEEDED` if still undecided, or `FAILED` with `fail`),
    /// resolves every marker it installed (the first `installed` entries) and returns whether it
    /// succeeded (`false` with `fail`, or when another operation aborted it: retry). The caller
    /// then retires the operation.
    pub(crate) fn finish(op: *const Self, fail: bool, installed: usize, guard: &Guard<'_>) -> bool {
        guard.check(op);
        // SAFETY: as in `install`.
        let this = unsafe { &*op };
        let status = this.decide_status(if fail { FAILED } else { SUCCEEDED });
        for entry in &this.entries[..installed] {
            // Relaxed (in `decided` too): written by this thread.
            if entry.old.load(Ordering::Relaxed) == FROZEN {
                continue;
            }
            let value = entry.decided(status == SUCCEEDED);
            guard.check(entry.node);
            // SAFETY: the owner's nodes are protected by the owner's guard (an installed entry's
            // node is not one the owner retired: those are frozen).
            let node = unsafe { &*entry.node };
            // Relaxed on success: the counts word is self-contained. Acquire on failure: a
            // resolver already replaced the marker (with the same value); its Release makes that
            // replacement happen before our retirement of the operation, so that seize's barrier
            // at retirement orders every later load of this word after it (C++20
            // [atomics.order] p4.2: a load that still saw the marker precedes the barrier, and
            // its thread is waited for). With a relaxed failure a resolver's thread could load
            // the stale marker after the record was freed.
            let _ = node.state.compare_exchange(
                Self::marker(op),
                value,
                Ordering::Relaxed,
                Ordering::Acquire,
            );
        }
        status == SUCCEEDED
    }
}

/// Resolves the marker `word`, which another operation installed on `node`: decides that
/// operation if it is undecided (`SUCCEEDED` if all its entries are settled, else `FAILED`),
/// then replaces the marker with the node's decided counts. Dereferences only the operation and
/// `node`.
pub(crate) fn resolve(node: &Node, word: u64, guard: &Guard<'_>) {
    debug_assert_ne!(word & MARKER, 0);
    let ptr: *const GroupOp = std::ptr::with_exposed_provenance((word & !MARKER) as usize);
    guard.check(ptr);
    // SAFETY: the marker was loaded from `node` under `guard`; an operation is retired only
    // once no thread entering after can load a marker of it (every marker replaced, or, for an
    // eviction that succeeded, its victim out of its slot, I5), so it was not retired before
    // `guard` entered and the collector keeps it allocated until `guard` drops.
    let op = unsafe { &*ptr };
    // Acquire: pairs with the decision's Release.
    let mut status = op.status.load(Ordering::Acquire) & DECISION;
    if status == UNDECIDED {
        // Acquire: pairs with the owner's Release after each install.
        let target = if op.settled.load(Ordering::Acquire) == op.entries.len() {
            SUCCEEDED
        } else {
            FAILED
        };
        status = op.decide_status(target);
    }
    let Some(entry) = op.entries.iter().find(|e| std::ptr::eq(e.node, node)) else {
        debug_assert!(false, "a marker's node is one of its entries");
        return;
    };
    // Relaxed (in `decided`): published by the marker's Release install, which our Acquire
    // load of `word` synchronized with.
    let value = entry.decided(status == SUCCEEDED);
    // Release on success: the owner, whose own replacement then fails, acquires this one before
    // it retires the operation (see `finish`). Relaxed on failure: someone else replaced it.
    let _ = node
        .state
        .compare_exchange(word, value, Ordering::Release, Ordering::Relaxed);
}

/// The eviction record whose marker is `word` (loaded from a node under `guard`), or `None` if
/// the marker is a group's. A sweep helps an eviction instead of aborting it (`table`'s
/// "Progress"); a group's marker it resolves.
pub(crate) fn eviction_of(word: u64, guard: &Guard<'_>) -> Option<*mut GroupOp> {
    debug_assert_ne!(word & MARKER, 0);
    let ptr: *mut GroupOp = std::ptr::with_exposed_provenance_mut((word & !MARKER) as usize);
    guard.check(ptr);
    // SAFETY: as in `resolve`; `insert` is immutable while the record is shared, published by
    // the marker's Release install, which the caller's load of the marker acquired.
    (!unsafe { &*ptr }.insert.is_null()).then_some(ptr)
}

/// Backs off before the `attempt`-th retry of an aborted group (exponential, capped).
pub(crate) fn backoff(attempt: u32) {
    for _ in 0..1u32 << attempt.min(10) {
        txgate_sync::sync::spin_loop();
    }
}

/// Distinct keys a group holds without allocating (go-algorand groups hold at most 16
/// transactions).
pub(crate) const INLINE: usize = 16;

/// What a group of two or more keys asks for: the kind (an admission or a penalty), an
/// admission's weight (`1..=L`), the instant and the limits.
pub(crate) struct Group<'a> {
    pub(crate) kind: Kind,
    pub(crate) cost: u32,
    pub(crate) at: Instant,
    pub(crate) limits: &'a Limits,
}

/// How a group ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Applied to every key at one instant; for an admission, the admissions its tightest key
    /// has left.
    Applied { remaining: Option<u32> },
    /// Dropped: key `key` (canonical order) was the first over its limit, with these counts.
    Dropped { key: usize, counts: Counts },
}

/// One key of a group as the group's lookup left it.
#[derive(Clone, Copy)]
struct Key {
    /// Its node, from `Shard::get_or_insert` or `Shard::peek` under the caller's guard.
    node: *const Node,
    /// Evicted by a later lookup of the same group (more of its keys in one shard than the shard
    /// holds): its final word, which decides for it, and which is never installed on (as in a
    /// sequential run, where the group's own insertion evicted it).
    frozen: Option<u64>,
}

/// A group's state words, one per key.
type Words = SmallBuf<u64, INLINE>;

/// What a group does to one key whose word admits it, worked out once from the word read.
#[derive(Clone, Copy)]
struct Plan {
    /// The word as the key's lookup leaves it (the entry's `old`).
    old: u64,
    /// `old` with the group applied (the entry's `new`).
    new: u64,
    /// For an admission, the admissions the key has left after the group.
    left: u32,
}

/// Each key's [`Plan`], one per key.
type Plans = SmallBuf<Plan, INLINE>;

/// Runs a group of `n >= 2` distinct keys in canonical order. `find(i)` is key `i`'s node if
/// its shard tracks it (a scan, no write); `look_up(i)` is key `i`'s lookup step (E2): it finds
/// or creates the key (`Shard::get_or_insert` with fresh counts, evictions counted by the
/// caller) and rolls a found key to the group's instant, looking it up again if it was evicted
/// before the roll took effect.
///
/// The first attempt, when every key is tracked, only reads: the keys' words are read, and an
/// admission commits with markers whose entries hold the words as the lookups would leave them
/// (rolled to the group's instant, reference bit set), so that the lookups take effect with the
/// decision, at the record's `SUCCEEDED` (or, if the record is aborted, at the restoring
/// compare-and-swap of each key: an aborted attempt's lookups stand, E2). A drop, or any other
/// attempt, first runs the lookup steps, reads the words (resolving other groups' markers) and
/// is decided from that snapshot, validated, without any record ([`decide_drop`]), or
/// committed by the multi-word compare-and-swap of the module docs ([`commit`]). An attempt
/// that meets an eviction of one of its keys, or that another operation aborts, starts over
/// after a back-off.
pub(crate) fn run<'g>(
    g: &Group<'_>,
    n: usize,
    mut find: impl FnMut(usize) -> Option<&'g Node>,
    mut look_up: impl FnMut(usize) -> Got<'g>,
    guard: &'g Guard<'_>,
) -> Outcome {
    let mut attempt = 0;
    // Filled afresh by each attempt (kept across attempts so that no attempt copies them).
    let mut keys = SmallBuf::new();
    let mut words = SmallBuf::new();
    let mut plans = SmallBuf::new();
    if let Some(found) = try_found(g, n, &mut find, &mut keys, &mut words, &mut plans, guard) {
        match found {
            Found::Applied(outcome) => return outcome,
            // A key refuses: the lookup steps on the nodes found (each leaving the word it
            // read or wrote in `words`), then the drop decided on those words, validated (or,
            // if the keys changed meanwhile, a commit).
            Found::Over(over) => {
                if let Some(same) = touch_all(g, keys.as_slice(), &mut words, guard)
                    // The key found over on the words read stays the first over on the words
                    // the steps left if each step left its word as read, rolled and touched:
                    // the window check rolls the counts to the group's instant first.
                    && let Some(outcome) = decide(
                        g,
                        keys.as_slice(),
                        &mut words,
                        &mut plans,
                        Some(over.filter(|_| same)),
                        guard,
                    )
                {
                    return outcome;
                }
                backoff(attempt);
                attempt += 1;
            }
            Found::Aborted => {
                backoff(attempt);
                attempt += 1;
            }
        }
    }
    loop {
        look_up_all(n, &mut look_up, &mut keys);
        if let Some(outcome) = try_once(g, keys.as_slice(), &mut words, &mut plans, guard) {
            return outcome;
        }
        backoff(attempt);
        attempt += 1;
    }
}

/// The lookup steps of tracked keys (`keys`, none frozen) whose words were just read into
/// `words`: each word rolled to the group's instant with its reference bit set, written only
/// if that changes it (`Node::update`), and `words[i]` replaced with the word the step left (as
/// it wrote it, or read it). A word read that already shows the access (current, reference bit
/// set) needs no step of its own: its read was the step, and it is not read again.
/// `Some(whether every step left its word as read, rolled and touched)`; `None` if a key was
/// evicted since it was found (look the keys up again).
fn touch_all(g: &Group<'_>, keys: &[Key], words: &mut Words, guard: &Guard<'_>) -> Option<bool> {
    let mut same = true;
    for (key, word) in keys.iter().zip(words.as_mut_slice()) {
        let expect = touched(*word, g.at);
        if expect == *word {
            continue;
        }
        // The word the step leaves: written if it changes the word, else as read.
        let touch = |c| {
            let rolled = state::roll(c, g.at).0;
            (Some(rolled), state::pack(rolled) | TOUCHED)
        };
        match node(key, guard).update(guard, touch) {
            Update::Done(left) => {
                same &= left == expect;
                *word = left;
            }
            Update::Evicted(_) => return None,
        }
    }
    Some(same)
}

/// How a read-only attempt ended.
enum Found {
    /// Admitted (or penalized) at the record's decision, the lookups with it.
    Applied(Outcome),
    /// A key refuses the admission: decide the drop after the lookup steps. The first key over
    /// on the words read, if the attempt stopped there (not in its commit).
    Over(Option<usize>),
    /// A key was evicted, or another operation aborted the record: start over.
    Aborted,
}

/// A read-only attempt: finds each key's node (`find`, a scan, no write), reads its word and
/// plans it, one key after another, into `keys`, `words` and `plans` (no plan after the first
/// key that refuses), and, if every key admits, commits with entries that hold each word as its
/// lookup leaves it. `None` at the first key that is not tracked (the words read before it
/// change nothing: a read only resolves markers, as any operation may).
fn try_found<'g>(
    g: &Group<'_>,
    n: usize,
    find: &mut impl FnMut(usize) -> Option<&'g Node>,
    keys: &mut SmallBuf<Key, INLINE>,
    words: &mut Words,
    plans: &mut Plans,
    guard: &Guard<'_>,
) -> Option<Found> {
    keys.clear();
    words.clear();
    plans.clear();
    let mut over = None;
    for i in 0..n {
        let key = Key {
            node: find(i)?,
            frozen: None,
        };
        let Some(word) = read(&key, guard) else {
            return Some(Found::Aborted);
        };
        keys.push(key);
        words.push(word);
        if over.is_none() {
            match plan(g, word, true) {
                Some(p) => plans.push(p),
                None => over = Some(i),
            }
        }
    }
    if over.is_some() {
        return Some(Found::Over(over));
    }
    Some(
        match commit(g, keys.as_slice(), words, plans.as_slice(), true, guard) {
            Commit::Applied(outcome) => Found::Applied(outcome),
            Commit::Over => Found::Over(None),
            Commit::Aborted => Found::Aborted,
        },
    )
}

/// The word a lookup step leaves for a tracked key whose word is `word`: rolled to the group's
/// instant, reference bit set (unchanged if it already shows both).
#[inline]
fn touched(word: u64, at: Instant) -> u64 {
    state::pack(state::roll(state::counts(word), at).0) | TOUCHED
}

/// Looks every key up, in canonical order; marks the keys a later lookup of the same group
/// evicted as frozen, with their final words.
fn look_up_all<'g>(
    n: usize,
    look_up: &mut impl FnMut(usize) -> Got<'g>,
    keys: &mut SmallBuf<Key, INLINE>,
) {
    keys.clear();
    for i in 0..n {
        // The lookup step (`look_up`'s contract): a found key is rolled to the group's instant
        // with its reference bit set before the next key's lookup (which may evict by staleness
        // or recency). Evicted since: the snapshot sees it and the attempt starts over.
        let got = look_up(i);
        keys.push(Key {
            node: got.node,
            frozen: None,
        });
        // A node this lookup evicted is no longer in the table, so no later lookup returns it:
        // only an earlier key of the group can be it.
        if let Some(v) = got.victim
            && let Some(key) = keys.as_mut_slice()[..i]
                .iter_mut()
                .find(|k| k.node == v.node)
        {
            // An evicted node is not read again (the last holder of the eviction's record, this
            // thread possibly, retired it): its final word came with the eviction.
            key.frozen = Some(v.word);
        }
    }
}

/// The node of a group's key.
fn node<'g>(key: &Key, guard: &'g Guard<'_>) -> &'g Node {
    guard.check(key.node);
    // SAFETY: returned by `get_or_insert` or `peek` under `guard`, loaded from its slot, so it
    // was retired, if at all, after `guard` entered (by any thread, this one included: a lookup
    // may have helped another eviction of it and released that record last), and the collector
    // keeps it allocated until `guard` drops. (A key whose node this group's own insertion
    // evicted is frozen with its final word and not read here.)
    unsafe { &*key.node }
}

/// A key's counts word, any marker on it resolved first; `None` if another operation evicted
/// it since the lookup (look it up again). A frozen key's final word.
fn read(key: &Key, guard: &Guard<'_>) -> Option<u64> {
    if let Some(word) = key.frozen {
        return Some(word);
    }
    let node = node(key, guard);
    loop {
        let word = node.load();
        if word & MARKER != 0 {
            resolve(node, word, guard);
        } else if word & state::EVICTED != 0 {
            return None;
        } else {
            return Some(word);
        }
    }
}

/// Every key's word into `words`, in canonical order; `None` if one was evicted since its
/// lookup.
fn snapshot(keys: &[Key], words: &mut Words, guard: &Guard<'_>) -> Option<()> {
    words.clear();
    for key in keys {
        words.push(read(key, guard)?);
    }
    Some(())
}

/// Each key's [`Plan`] on `words` into `plans` (`touch`: as in [`commit`]); `Err(i)` at the
/// first key (canonical order) that refuses the admission (the key [`first_over`] finds).
fn plan_all(g: &Group<'_>, words: &[u64], touch: bool, plans: &mut Plans) -> Result<(), usize> {
    plans.clear();
    for (i, &word) in words.iter().enumerate() {
        plans.push(plan(g, word, touch).ok_or(i)?);
    }
    Ok(())
}

/// The first key (canonical order) whose counts refuse an admission of the group's cost.
fn first_over(g: &Group<'_>, words: &[u64]) -> Option<usize> {
    if g.kind != Kind::Admit {
        return None;
    }
    words
        .iter()
        .position(|&w| state::admit(state::counts(w), g.at, g.limits, g.cost).is_none())
}

/// One attempt: `None` to look the keys up again.
fn try_once(
    g: &Group<'_>,
    keys: &[Key],
    words: &mut Words,
    plans: &mut Plans,
    guard: &Guard<'_>,
) -> Option<Outcome> {
    snapshot(keys, words, guard)?;
    decide(g, keys, words, plans, None, guard)
}

/// Decides an attempt on `words`, each key's word as its lookup step left it: dropped on them,
/// validated ([`decide_drop`]), or committed ([`commit`]). `None` to look the keys up again.
/// `stepped` (`Some`): `words` are the words the lookup steps themselves read or wrote, one key
/// after another (`touch_all`), not a snapshot taken after every step: the drop then re-reads
/// the key over its limit too; `Some(Some(i))`: key `i` is known to be the first over on them.
fn decide(
    g: &Group<'_>,
    keys: &[Key],
    words: &mut Words,
    plans: &mut Plans,
    stepped: Option<Option<usize>>,
    guard: &Guard<'_>,
) -> Option<Outcome> {
    let over = match stepped {
        Some(Some(i)) => Some(i),
        _ => plan_all(g, words.as_slice(), false, plans).err(),
    };
    if let Some(i) = over {
        return decide_drop(
            g,
            keys,
            words.as_slice(),
            i,
            i + usize::from(stepped.is_some()),
            guard,
        );
    }
    match commit(g, keys, words, plans.as_slice(), false, guard) {
        Commit::Applied(outcome) => Some(outcome),
        Commit::Over => {
            snapshot(keys, words, guard)?;
            let i = first_over(g, words.as_slice())?;
            decide_drop(g, keys, words.as_slice(), i, i, guard)
        }
        Commit::Aborted => None,
    }
}

/// A drop decided from a validated snapshot, with no record and no marker: `words` were read
/// in canonical order, each after the key's own lookup step (or by it); `i` is the first key
/// over its limit among them, and the words of the first `recheck` keys are read again. A
/// key's counts only move forward (its interval never decreases; within an interval `cur` only
/// grows; an evicted word is final; a marker that is aborted restores the counts it replaced),
/// so counts read equal twice were those counts throughout. Two cases:
///
/// - `recheck == i` (`words` read after every lookup step, [`try_once`]): the keys before `i`
///   held their words when key `i`'s word was read; at that instant, the group's
///   linearization point, every earlier key admitted and key `i` did not.
/// - `recheck == i + 1` (`words` left by the lookup steps themselves, one key after another,
///   `touch_all`: a later key's step may follow key `i`'s read): keys `0..=i` held their words
///   from their steps to the re-reads, so at the instant after the last lookup step (before
///   the first re-read), the group's linearization point, every key before `i` admitted and key
///   `i` did not.
///
/// `None` if the snapshot does not hold (a key changed, was evicted, or now admits): look the
/// keys up again.
fn decide_drop(
    g: &Group<'_>,
    keys: &[Key],
    words: &[u64],
    i: usize,
    recheck: usize,
    guard: &Guard<'_>,
) -> Option<Outcome> {
    debug_assert_eq!(first_over(g, words), Some(i));
    debug_assert!(recheck == i || recheck == i + 1);
    for (key, &word) in keys[..recheck].iter().zip(words) {
        if read(key, guard)? & !TOUCHED != word & !TOUCHED {
            return None;
        }
    }
    Some(Outcome::Dropped {
        key: i,
        counts: state::counts(words[i]),
    })
}

/// How a commit ended.
enum Commit {
    /// Decided `SUCCEEDED`.
    Applied(Outcome),
    /// A key no longer admits: the group is to be dropped (the record aborted).
    Over,
    /// Aborted by another operation, or a key was evicted: start over.
    Aborted,
}

/// Applies the group to every key at one instant with a [`GroupOp`]: the owner's half of the
/// multi-word compare-and-swap in the module docs. `words`: the snapshot the keys admitted on,
/// and `plans` each key's [`Plan`] on it ([`plan_all`]). `touch`: the lookups have not run
/// (every key was found by a read): each entry's `old` is the word as its lookup leaves it
/// ([`touched`]), so that the lookup takes effect with the record's decision (or with the
/// restore of an abort).
fn commit(
    g: &Group<'_>,
    keys: &[Key],
    words: &mut Words,
    plans: &[Plan],
    touch: bool,
    guard: &Guard<'_>,
) -> Commit {
    let op = GroupOp::new(keys.iter().map(|k| k.node));
    let mut stopped = None;
    let mut installed = 0;
    // The admissions the tightest key has left after the group.
    let mut left = u32::MAX;
    for (i, key) in keys.iter().enumerate() {
        if let Some(word) = key.frozen {
            GroupOp::freeze(op, i, guard);
            left = left.min(remaining(g, word));
        } else {
            let word = &mut words.as_mut_slice()[i];
            match settle(g, op, i, key, word, plans[i], touch, guard) {
                Ok(l) => {
                    left = left.min(l);
                    installed = i + 1;
                }
                Err(why) => {
                    stopped = Some(why);
                    break;
                }
            }
        }
        if !GroupOp::undecided(op, guard) {
            break;
        }
    }
    let succeeded = GroupOp::finish(op, stopped.is_some(), installed, guard);
    if installed > 0 {
        // SAFETY: (1) `op` came from `Box::into_raw` in `GroupOp::new` and is retired once;
        // (2) `finish` replaced every marker of it, so no thread entering now can load it (I5).
        unsafe { guard.retire(op) };
    } else {
        // SAFETY: no marker of `op` was installed: no other thread saw it.
        unsafe { GroupOp::recycle(op) };
    }
    if succeeded {
        return Commit::Applied(Outcome::Applied {
            remaining: Some(left),
        });
    }
    stopped.unwrap_or(Commit::Aborted)
}

/// Settles entry `i` of `op` on key `key`, whose word `*word` admitted when last read, with
/// `planned` its [`Plan`]: installs the marker, re-reading the word (and planning again) as
/// often as another operation changes it. `touch`: as in [`commit`].
/// `Ok(admissions the key has left after the group)`; `Err(Over)`: the key no longer admits;
/// `Err(Aborted)`: it was evicted.
#[allow(clippy::too_many_arguments)]
fn settle(
    g: &Group<'_>,
    op: *const GroupOp,
    i: usize,
    key: &Key,
    word: &mut u64,
    planned: Plan,
    touch: bool,
    guard: &Guard<'_>,
) -> Result<u32, Commit> {
    let node = node(key, guard);
    let mut p = planned;
    loop {
        // The install expects the word as read, so it fails if any operation wrote the word
        // since; the entry's `old` is what an abort restores.
        if GroupOp::install(op, i, node, *word, (p.old, p.new), guard) {
            return Ok(p.left);
        }
        *word = read(key, guard).ok_or(Commit::Aborted)?;
        p = plan(g, *word, touch).ok_or(Commit::Over)?;
    }
}

/// The [`Plan`] for a key whose word is `word` (neither marker nor evicted); `None` if it does
/// not admit. The entry's `old` is the word as the lookup leaves it: with `touch` the lookup
/// itself, applied here (rolled to the group's instant, reference bit set), else `word` as the
/// lookup step left it (the reference bit as the lookup and any sweep since left it). `new` is
/// `old` with the group applied, its reference bit as `old` has it (set for a key that was
/// found, clear for one the group's lookup created: a new key's bit starts clear).
#[inline(always)]
fn plan(g: &Group<'_>, word: u64, touch: bool) -> Option<Plan> {
    if g.kind == Kind::Admit {
        // One roll and one estimate, the word's layout decided once.
        let (old, new, left) = state::plan_admit(word, g.at, g.limits, g.cost, touch)?;
        return Some(Plan { old, new, left });
    }
    // A penalty. One roll for both words: rolling rolled counts again changes neither the
    // counts nor the offset (`state::roll`).
    let (rolled, _) = state::roll(state::counts(word), g.at);
    let old = if touch {
        state::pack(rolled) | TOUCHED
    } else {
        word
    };
    Some(Plan {
        old,
        new: state::pack(state::penalize(rolled, g.at, g.limits)) | (old & TOUCHED),
        // A penalty's answer is not used.
        left: 0,
    })
}

/// The admissions left after the group to a key its own lookups evicted (frozen with its final
/// word `word`): as if the group applied to it.
fn remaining(g: &Group<'_>, word: u64) -> u32 {
    let c = state::counts(word);
    let after = match g.kind {
        Kind::Admit => state::admit(c, g.at, g.limits, g.cost).unwrap_or(c),
        Kind::Penalize => c,
    };
    state::remaining(after, g.at, g.limits)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Group, Kind, plan};
    use crate::state::{self, Counts, Limits, MAX_LAG, MAX_LAG_WIDE, TOUCHED};

    /// A key's plan equals the window rule applied on its own: the word's counts rolled to the
    /// group's instant, admitted (or penalized) by `state`'s functions, the entry's `old` the
    /// lookup's word (rolled and touched, or as read), the bit of `new` as `old` has it, and the
    /// admissions left those of the counts after the group; no plan exactly when the window
    /// refuses. Over keys behind, current, one interval on, stale and far ahead, counts at and
    /// around the limit, and both reference bits.
    #[test]
    #[cfg_attr(miri, ignore = "pure arithmetic, no unsafe code: run natively")]
    fn a_plan_is_the_window_rule_on_the_word_read() {
        let window = 10_000_000_000;
        let (mut admitted, mut refused) = (0, 0);
        for limit in [1u32, 3, 10, 65_535, 100_000, state::LIMIT_MAX] {
            let limits = Limits::new(window, limit, (limit / 4).max(1));
            for now in [T0, T0 + 1, T0 + window / 3, T0 + window - 1] {
                let at = limits.instant(now);
                // The lag bounds of both ranges of limits, and a wide key's aliasing (2^10).
                for d in [
                    -MAX_LAG - 1,
                    -MAX_LAG,
                    -MAX_LAG_WIDE - 1,
                    -MAX_LAG_WIDE,
                    -5,
                    -1,
                    0,
                    1,
                    2,
                    7,
                    1 << 10,
                ] {
                    let interval = (at.interval as i64 - i64::from(d)) as u32 & ((1 << 28) - 1);
                    for (prev, cur) in counts_around(limit) {
                        // As the state functions leave counts: a wide key's interval in 10 bits.
                        let c = state::fit(Counts {
                            interval,
                            prev,
                            cur,
                        });
                        for bit in [0, TOUCHED] {
                            let word = state::pack(c) | bit;
                            for kind in [Kind::Admit, Kind::Penalize] {
                                for cost in [1, 2, limit].into_iter().filter(|&k| k <= limit) {
                                    let g = Group {
                                        kind,
                                        cost,
                                        at,
                                        limits: &limits,
                                    };
                                    for touch in [false, true] {
                                        let rolled = state::roll(c, at).0;
                                        let old = if touch {
                                            state::pack(rolled) | TOUCHED
                                        } else {
                                            word
                                        };
                                        let after = match kind {
                                            Kind::Admit => state::admit(c, at, &limits, cost),
                                            Kind::Penalize => Some(state::penalize(c, at, &limits)),
                                        };
                                        let got =
                                            plan(&g, word, touch).map(|p| (p.old, p.new, p.left));
                                        let want = after.map(|a| {
                                            let left = match kind {
                                                Kind::Admit => state::remaining(a, at, &limits),
                                                Kind::Penalize => 0,
                                            };
                                            (old, state::pack(a) | (old & TOUCHED), left)
                                        });
                                        assert_eq!(
                                            got, want,
                                            "L {limit}, now {now}, {c:?}, bit {bit:x}, {kind:?}, \
                                             cost {cost}, touch {touch}"
                                        );
                                        match (kind, got) {
                                            (Kind::Penalize, _) => {}
                                            (Kind::Admit, Some(_)) => admitted += 1,
                                            (Kind::Admit, None) => refused += 1,
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        // Admissions both admitted and refused are compared, many times each.
        assert!(admitted > 1_000 && refused > 1_000, "{admitted} {refused}");
    }

    const T0: u64 = 1_700_000_000 * 1_000_000_000;

    /// `(prev, cur)` pairs at, below and around `limit`.
    fn counts_around(limit: u32) -> Vec<(u32, u32)> {
        let near = [0, 1, limit / 2, limit.saturating_sub(2), limit - 1, limit];
        near.iter()
            .flat_map(|&p| near.iter().map(move |&c| (p, c)))
            .collect()
    }
}
