//! A stack buffer that spills to the heap: a group's keys, nodes and counts without allocating
//! for the usual small groups.

/// A stack buffer of `N` items that spills to the heap beyond (so groups of up to 16 distinct
/// apps never allocate).
pub(crate) struct SmallBuf<T: Copy, const N: usize> {
    len: usize,
    inline: [T; N],
    spill: Vec<T>,
}

impl<T: Copy, const N: usize> SmallBuf<T, N> {
    pub(crate) fn new(fill: T) -> Self {
        Self {
            len: 0,
            inline: [fill; N],
            spill: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, item: T) {
        if self.len < N {
            self.inline[self.len] = item;
        } else {
            if self.spill.is_empty() {
                self.spill.extend_from_slice(&self.inline);
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
            &self.inline[..self.len]
        } else {
            &self.spill
        }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        if self.len <= N {
            &mut self.inline[..self.len]
        } else {
            &mut self.spill
        }
    }
}
