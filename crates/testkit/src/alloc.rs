//! [`Counting`]: a global allocator that counts this thread's allocations, for tests that hold a
//! path to "allocates nothing" (or to a known number of allocations).
//!
//! A test binary installs it with `#[global_allocator]` and measures with
//! [`allocations_during`]:
//! ```
//! use txgate_testkit::alloc::{Counting, allocations_during};
//!
//! #[global_allocator]
//! static GLOBAL: Counting = Counting;
//!
//! let mut v: Vec<u64> = Vec::with_capacity(4);
//! assert_eq!(allocations_during(|| v.extend([1, 2, 3, 4])), 0);
//! assert_eq!(allocations_during(|| drop(std::hint::black_box(vec![0u8; 16]))), 1);
//! ```
//!
//! The count is per thread, so the test harness's own threads (and other tests running at the
//! same time) do not disturb it. `alloc` and `realloc` count; `dealloc` does not. Without the
//! `#[global_allocator]` line the count stays 0.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The counting allocator: every call goes to [`System`] unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counting;

thread_local! {
    // A const-initialised `Cell<u64>` has no destructor, so touching it from inside the
    // allocator never allocates (no registration of a thread-local destructor).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call to `System` unchanged; only counts on the side.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // `try_with`: during thread teardown the counter may be gone; the allocation still goes
        // through, uncounted.
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `System` shares.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with `layout` (every allocation goes there).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: as in `dealloc`, and the caller upholds `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations (and reallocations) this thread made while running `f`.
pub fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}
