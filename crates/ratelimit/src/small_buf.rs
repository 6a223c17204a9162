//! A stack buffer that spills to the heap: a group's keys, nodes and counts without allocating
//! for the usual small groups.

use std::mem::MaybeUninit;

/// A stack buffer of `N` items that spills to the heap beyond (so groups of up to 16 distinct
/// apps never allocate). Its inline items are left uninitialized until pushed, so that making
/// one costs no writes.
pub(crate) struct SmallBuf<T: Copy, const N: usize> {
    /// Items pushed. Invariant: while `len <= N`, `inline[..len]` are initialized; beyond,
    /// `spill` holds all `len` items.
    len: usize,
    inline: [MaybeUninit<T>; N],
    spill: Vec<T>,
}

impl<T: Copy, const N: usize> SmallBuf<T, N> {
    pub(crate) fn new() -> Self {
        Self {
            len: 0,
            inline: [const { MaybeUninit::uninit() }; N],
            spill: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, item: T) {
        if self.len < N {
            self.inline[self.len] = MaybeUninit::new(item);
        } else {
            if self.spill.is_empty() {
                // SAFETY: `len == N` here, so every inline item is initialized (invariant).
                self.spill
                    .extend_from_slice(unsafe { assume_init(&self.inline[..]) });
            }
            self.spill.push(item);
        }
        self.len += 1;
    }

    /// Empties the buffer (keeping any heap spill's capacity).
    pub(crate) fn clear(&mut self) {
        self.len = 0;
        self.spill.clear();
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        if self.len <= N {
            // SAFETY: `inline[..len]` are initialized while `len <= N` (invariant).
            unsafe { assume_init(&self.inline[..self.len]) }
        } else {
            &self.spill
        }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        if self.len <= N {
            let init = &mut self.inline[..self.len];
            // SAFETY: `inline[..len]` are initialized while `len <= N` (invariant);
            // `MaybeUninit<T>` has `T`'s layout, and a `T: Copy` written through the slice stays
            // initialized.
            unsafe { &mut *(std::ptr::from_mut::<[MaybeUninit<T>]>(init) as *mut [T]) }
        } else {
            &mut self.spill
        }
    }
}

/// The items of a slice of initialized `MaybeUninit`s.
///
/// # Safety
///
/// Every item of `items` is initialized.
unsafe fn assume_init<T>(items: &[MaybeUninit<T>]) -> &[T] {
    // SAFETY: `MaybeUninit<T>` has `T`'s size, alignment and ABI, and the caller promises every
    // item is initialized.
    unsafe { &*(std::ptr::from_ref::<[MaybeUninit<T>]>(items) as *const [T]) }
}

#[cfg(test)]
mod tests {
    use super::SmallBuf;

    /// Items read back in push order inline, across the spill and after a clear; writes through
    /// the mutable slice stick (miri checks the uninitialized tail is never read).
    #[test]
    fn keeps_items_inline_and_spilled() {
        let mut b: SmallBuf<u64, 3> = SmallBuf::new();
        assert!(b.as_slice().is_empty());
        for i in 0..2 {
            b.push(10 + i);
        }
        assert_eq!(b.as_slice(), &[10, 11]);
        b.as_mut_slice()[1] = 7;
        assert_eq!(b.as_slice(), &[10, 7]);
        for i in 2..5 {
            b.push(10 + i);
        }
        assert_eq!(b.as_slice(), &[10, 7, 12, 13, 14]);
        b.as_mut_slice()[4] = 1;
        assert_eq!(b.as_slice(), &[10, 7, 12, 13, 1]);
        b.clear();
        assert!(b.as_slice().is_empty());
        b.push(5);
        assert_eq!(b.as_slice(), &[5]);
        for i in 0..3 {
            b.push(i);
        }
        assert_eq!(b.as_slice(), &[5, 0, 1, 2]);
    }
}
