//! Memory reclamation of nodes that eviction or a lost insertion race took out of the table.
//!
//! Normally this is [seize](https://docs.rs/seize/0.5): a reader enters a [`Guard`] before it
//! loads a slot, and a node unlinked from its slot is handed to [`Guard::defer_retire`], which
//! frees it only once no guard that could have seen it is alive.
//!
//! seize has no loom support, so under `cfg(loom)` this module is a stand-in with the same
//! contract, as eager as the contract allows: a node retired while guards `g1..gk` are alive is
//! *poisoned* (marked as reclaimed) as soon as the last of `g1..gk` is dropped, which is the
//! earliest moment any collector honouring `defer_retire`'s contract (seize included) may free
//! it. The table asserts on every node access that the node is not poisoned, so loom reports any
//! interleaving in which a reader touches a node after a collector could have freed it. Poisoned
//! nodes are freed when the collector is dropped.
//!
//! The stand-in's bookkeeping sits behind a `std` mutex, not a loom one: loom runs one thread at
//! a time, so the mutex never blocks, and being invisible to loom it adds no happens-before edge
//! between the model's threads that seize would not provide (a loom mutex would synchronize every
//! guard entry with every earlier guard exit and hide ordering bugs). What it does model is
//! seize's barrier pair: a `SeqCst` fence after a guard registers and one before a retirement
//! reads the active guards, so a guard that the retirement did not wait for cannot load the
//! retired node from a stale slot.

use crate::sync::{AtomicPtr, Ordering};
use crate::table::Node;

/// Frees reclaimed nodes; its batch size is shrunk under Miri so reclamation really runs there.
pub(crate) struct Collector {
    #[cfg(not(loom))]
    inner: seize::Collector,
    #[cfg(loom)]
    inner: std::sync::Mutex<standin::State>,
}

/// Marks the current thread active: nodes loaded through it stay allocated while it lives.
pub(crate) struct Guard<'c> {
    #[cfg(not(loom))]
    inner: seize::LocalGuard<'c>,
    #[cfg(loom)]
    collector: &'c Collector,
    /// This guard's id in the stand-in's bookkeeping.
    #[cfg(loom)]
    id: u64,
}

#[cfg(debug_assertions)]
static RECLAIMED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Number of nodes freed by reclamation in this process so far (debug builds only; tests use it
/// to check that retired nodes are really freed).
#[cfg(debug_assertions)]
pub(crate) fn reclaimed_nodes() -> u64 {
    // Relaxed: a statistic; no memory is published through it.
    RECLAIMED.load(std::sync::atomic::Ordering::Relaxed)
}

impl Collector {
    /// A collector; `batch_size` retired nodes are batched before a reclamation attempt.
    pub(crate) fn new() -> Self {
        #[cfg(not(loom))]
        {
            // seize's default batch is max(32, CPUs). Under Miri we shrink it so that a test of a
            // few dozen evictions makes seize actually free nodes.
            let batch = if cfg!(miri) { 2 } else { 64 };
            Self {
                inner: seize::Collector::new().batch_size(batch),
            }
        }
        #[cfg(loom)]
        {
            Self {
                inner: std::sync::Mutex::new(standin::State::default()),
            }
        }
    }

    /// Enters a read-side critical section.
    #[inline]
    pub(crate) fn enter(&self) -> Guard<'_> {
        #[cfg(not(loom))]
        {
            Guard {
                inner: self.inner.enter(),
            }
        }
        #[cfg(loom)]
        {
            let mut state = self.inner.lock().unwrap();
            let id = state.next_id;
            state.next_id += 1;
            state.active.push(id);
            drop(state);
            // SeqCst fence, as seize's entry barrier: a retirement whose snapshot of the active
            // guards missed this guard came earlier in the SeqCst order, so this guard's loads
            // see the unlinking of the retired node (C++20 [atomics.order] p4.4 with the fence in
            // `defer_retire`).
            crate::sync::fence(Ordering::SeqCst);
            Guard {
                collector: self,
                id,
            }
        }
    }
}

impl Guard<'_> {
    /// Loads a slot with `order` and protects the loaded node for the guard's lifetime.
    #[inline]
    pub(crate) fn protect(&self, slot: &AtomicPtr<Node>, order: Ordering) -> *mut Node {
        #[cfg(not(loom))]
        {
            use seize::Guard as _;
            // seize upgrades `order` as its barrier scheme needs (to SeqCst).
            self.inner.protect(slot, order)
        }
        #[cfg(loom)]
        {
            slot.load(order)
        }
    }

    /// A small number identifying the current thread (seize's thread id; 0 under loom), for
    /// striping counters.
    #[inline]
    pub(crate) fn thread_id(&self) -> usize {
        #[cfg(not(loom))]
        {
            use seize::Guard as _;
            self.inner.thread_id()
        }
        #[cfg(loom)]
        {
            0
        }
    }

    /// Hands a node unlinked from the table to the collector, to be freed once no guard can
    /// reach it (never before this guard is dropped).
    ///
    /// # Safety
    ///
    /// 1. `node` came from `Box::into_raw` and is retired at most once.
    /// 2. `node` is no longer reachable from the table: no thread that enters after this call can
    ///    load it.
    #[inline]
    pub(crate) unsafe fn defer_retire(&self, node: *mut Node) {
        #[cfg(not(loom))]
        {
            use seize::Guard as _;
            // SAFETY: (1) and (2) are this function's preconditions, which are seize's
            // `defer_retire` contract; `free_node` matches the `Box` allocation of (1).
            unsafe { self.inner.defer_retire(node, free_node) };
        }
        #[cfg(loom)]
        {
            // SeqCst fence, as seize's retirement barrier: pairs with the fence in `enter`.
            crate::sync::fence(Ordering::SeqCst);
            let mut state = self.collector.inner.lock().unwrap();
            // Every guard alive now may hold the node; guards entered later cannot load it
            // (precondition 2), so only these are waited for.
            let waiting = state.active.clone();
            state.retired.push((standin::NodePtr(node), waiting));
        }
    }
}

/// seize's reclaimer for nodes: drops the box and counts the reclamation (debug builds).
///
/// # Safety
///
/// `node` came from `Box::into_raw`, was retired once, and no thread can still reach it (seize
/// calls this only then).
#[cfg(not(loom))]
unsafe fn free_node(node: *mut Node, _collector: &seize::Collector) {
    // SAFETY: by this function's contract the box is ours alone to drop.
    drop(unsafe { Box::from_raw(node) });
    #[cfg(debug_assertions)]
    // Relaxed: a statistic; no memory is published through it.
    RECLAIMED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

#[cfg(loom)]
mod standin {
    use crate::table::Node;

    /// A retired node pointer; the stand-in owns it.
    pub(super) struct NodePtr(pub(super) *mut Node);

    // SAFETY: a retired node is owned by the collector alone (the table unlinked it and gave up
    // its pointer), and `Node` itself is `Send + Sync`.
    unsafe impl Send for NodePtr {}

    #[derive(Default)]
    pub(super) struct State {
        /// The id of the next guard.
        pub(super) next_id: u64,
        /// Ids of the guards alive now.
        pub(super) active: Vec<u64>,
        /// Retired nodes, each with the ids of the guards that were alive when it was retired
        /// and still are.
        pub(super) retired: Vec<(NodePtr, Vec<u64>)>,
        /// Retired while no guard could see them: poisoned, freed with the collector.
        pub(super) reclaimed: Vec<NodePtr>,
    }
}

#[cfg(loom)]
impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let mut state = self.collector.inner.lock().unwrap();
        let id = self.id;
        state.active.retain(|&g| g != id);
        let retired = std::mem::take(&mut state.retired);
        for (node, mut waiting) in retired {
            waiting.retain(|&g| g != id);
            if waiting.is_empty() {
                // No guard that could have loaded the node is alive: a collector may free it
                // now.
                // SAFETY: retired nodes stay allocated until the collector drops.
                unsafe { (*node.0).poison() };
                state.reclaimed.push(node);
            } else {
                state.retired.push((node, waiting));
            }
        }
    }
}

#[cfg(loom)]
impl Drop for Collector {
    fn drop(&mut self) {
        let state = self.inner.get_mut().unwrap();
        let retired = state.retired.drain(..).map(|(node, _)| node);
        for node in retired.chain(state.reclaimed.drain(..)) {
            // SAFETY: `&mut self`: no guard is alive, and each retired pointer came from
            // `Box::into_raw` and was retired once.
            drop(unsafe { Box::from_raw(node.0) });
        }
    }
}
