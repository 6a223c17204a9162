//! [`parts`]: a limiter [`Decision`] as comparable parts, for the differential tests of the
//! lock-free limiter against its reference model: a drop's index is mapped to the place of its
//! key in the caller's slice before the two decisions are compared. Shared by tests/model.rs and
//! the workspace's `ratelimit_model` fuzz target (each includes this file as its own module).

// Each user takes its own subset.
#![allow(dead_code)]

use txgate_ratelimit::Decision;

/// A decision's parts: admitted, the admit's `remaining`, and a drop's place and
/// `retry_after_ns`.
pub(crate) type Parts = (bool, Option<u32>, Option<(usize, u64)>);

/// The parts of `d`, a drop's `index` mapped through `place` (from the keys the decision was
/// taken over to the caller's slice).
///
/// # Panics
/// Panics on a variant other than `Admit` and `Drop`.
pub(crate) fn parts(d: Decision, place: impl FnOnce(usize) -> usize) -> Parts {
    match d {
        Decision::Admit { remaining, .. } => (true, remaining, None),
        Decision::Drop {
            index,
            retry_after_ns,
            ..
        } => (false, None, Some((place(index), retry_after_ns))),
        _ => unreachable!(),
    }
}
