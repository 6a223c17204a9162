//! A payset's commitment trees built from their leaves ([`Leaves`]), whole or in parts.
//!
//! go-algorand `crypto/merklearray`: `Build` (the `txn` Merkle tree) pairs a layer's nodes left
//! to right, a last node without a sibling being paired with 32 zero bytes, until one is left;
//! `BuildVectorCommitmentTree` (`txn256`, `txn512`) first pads the leaves to a power of two with
//! H(`"MB"`) and puts leaf `i` at the position of `i`'s bits reversed. An inner node is
//! H(`"MA"` ‖ left ‖ right).
//!
//! A tree of two leaves or more is also the node over two subtrees that can be built apart
//! ([`Part::Left`], [`Part::Right`]), which lets two threads share one tree:
//! - `Build` over `n` leaves: the left subtree is the complete tree over the first `m` leaves,
//!   `m` the largest power of two below `n` (every layer pairs within it, `m` being a multiple
//!   of each pair's width); the right one is the tree over the rest, raised to the left one's
//!   height by pairing it with zeros (what `Build` does to a layer's last node).
//! - A vector commitment of `P` padded positions: the complete trees over positions `0..P/2`
//!   and `P/2..P`.

// Without feature `parallel` every tree is built whole: the parts go unused.
#![cfg_attr(not(feature = "parallel"), allow(dead_code))]

use std::ops::Range;

use sha2::digest::Output;
use sha2::{Digest, Sha256, Sha512, Sha512_256};

use super::leaves::{Leaves, Trees};
use super::verify::{MERKLE_BOTTOM_LEAF_PREFIX, MERKLE_NODE_PREFIX};

/// The roots of a payset's trees, each `None` when not asked for (the `txn` Merkle root also
/// when there are no leaves: go-algorand's empty root, which `txn` shows as all zero).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Roots {
    pub(super) merkle: Option<Output<Sha512_256>>,
    pub(super) sha256: Option<Output<Sha256>>,
    pub(super) sha512: Option<Output<Sha512>>,
}

/// The roots of `trees` over `leaves`, each tree built whole.
pub(super) fn roots(leaves: &Leaves, trees: Trees) -> Roots {
    Roots {
        merkle: trees
            .merkle
            .then(|| merkle_root::<Sha512_256>(&leaves.native))
            .flatten(),
        sha256: trees
            .sha256
            .then(|| vector_commitment_root::<Sha256>(&leaves.sha256)),
        sha512: trees
            .sha512
            .then(|| vector_commitment_root::<Sha512>(&leaves.sha512)),
    }
}

/// A part of a tree that is built on its own: the whole tree, or the subtree on one side of
/// its root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    Whole,
    Left,
    Right,
}

/// A part of one of the three trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Piece {
    Merkle(Part),
    Sha256(Part),
    Sha512(Part),
}

/// What building a [`Piece`] gives: its root, in its tree's hash (`None`: a whole `txn` tree
/// of no leaves).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Built {
    Merkle(Option<Output<Sha512_256>>),
    Sha256(Output<Sha256>),
    Sha512(Output<Sha512>),
}

/// The pieces that build `trees` over `n` leaves, a tree of two leaves or more in two parts.
/// Ordered for two threads that take pieces from the two ends: the costliest parts come first
/// and last, so that each thread's last piece is a cheap one. An inner node takes two
/// compressions in each tree (130 bytes in SHA-512's 128-byte blocks, 66 in SHA-256's 64-byte
/// ones) but one in `txn`'s (66 bytes in SHA-512/256's 128-byte blocks); a SHA-512
/// compression costs about three SHA-256 ones with SHA extensions (x86 SHA-NI covers SHA-256
/// only), so `txn512`'s parts cost most, then `txn`'s, then `txn256`'s.
pub(super) fn pieces(trees: Trees, n: usize) -> Vec<Piece> {
    let split = n >= 2;
    let mut front = Vec::new();
    let mut back = Vec::new();
    for (wanted, piece) in [
        (trees.sha512, Piece::Sha512 as fn(Part) -> Piece),
        (trees.merkle, Piece::Merkle),
        (trees.sha256, Piece::Sha256),
    ] {
        match (wanted, split) {
            (false, _) => {}
            (true, false) => front.push(piece(Part::Whole)),
            (true, true) => {
                front.push(piece(Part::Left));
                back.push(piece(Part::Right));
            }
        }
    }
    front.extend(back.into_iter().rev());
    front
}

/// Builds `piece` over `leaves`.
pub(super) fn build(leaves: &Leaves, piece: Piece) -> Built {
    match piece {
        Piece::Merkle(part) => Built::Merkle(merkle_part::<Sha512_256>(&leaves.native, part)),
        Piece::Sha256(part) => Built::Sha256(vector_part::<Sha256>(&leaves.sha256, part)),
        Piece::Sha512(part) => Built::Sha512(vector_part::<Sha512>(&leaves.sha512, part)),
    }
}

/// The roots from the pieces that [`pieces`] gave for `trees` and `n` leaves, built in that
/// order: the same as [`roots`] over those leaves. `None` when `built` does not hold those
/// pieces' outputs.
pub(super) fn join(trees: Trees, n: usize, built: &[Built]) -> Option<Roots> {
    let order = pieces(trees, n);
    if built.len() != order.len() {
        return None;
    }
    let get = |want: Piece| {
        let i = order.iter().position(|p| *p == want)?;
        Some(built[i].clone())
    };
    let mut out = Roots::default();
    if trees.merkle {
        out.merkle = if n >= 2 {
            let (Built::Merkle(Some(l)), Built::Merkle(Some(r))) = (
                get(Piece::Merkle(Part::Left))?,
                get(Piece::Merkle(Part::Right))?,
            ) else {
                return None;
            };
            Some(node::<Sha512_256>(&l, Some(&r)))
        } else {
            let Built::Merkle(root) = get(Piece::Merkle(Part::Whole))? else {
                return None;
            };
            root
        };
    }
    if trees.sha256 {
        out.sha256 = Some(join_vector::<Sha256>(
            n,
            &get,
            Piece::Sha256,
            |b| match b {
                Built::Sha256(root) => Some(root),
                _ => None,
            },
        )?);
    }
    if trees.sha512 {
        out.sha512 = Some(join_vector::<Sha512>(
            n,
            &get,
            Piece::Sha512,
            |b| match b {
                Built::Sha512(root) => Some(root),
                _ => None,
            },
        )?);
    }
    Some(out)
}

/// A vector commitment's root from its pieces (`get`, as in [`join`]): the whole tree's root
/// below two leaves, else the node over its two halves' roots. `root` takes the digest out of a
/// [`Built`] of this tree (`None`: another tree's).
fn join_vector<D: Digest>(
    n: usize,
    get: &impl Fn(Piece) -> Option<Built>,
    piece: fn(Part) -> Piece,
    root: fn(Built) -> Option<Output<D>>,
) -> Option<Output<D>> {
    if n < 2 {
        return root(get(piece(Part::Whole))?);
    }
    let left = root(get(piece(Part::Left))?)?;
    let right = root(get(piece(Part::Right))?)?;
    Some(node::<D>(&left, Some(&right)))
}

/// An inner node: H(`"MA"` ‖ left ‖ right), a missing right child being all zero.
fn node<D: Digest>(left: &Output<D>, right: Option<&Output<D>>) -> Output<D> {
    let mut h = D::new_with_prefix(MERKLE_NODE_PREFIX);
    h.update(left);
    match right {
        Some(r) => h.update(r),
        None => h.update(Output::<D>::default()),
    }
    h.finalize()
}

/// The root of go-algorand's `merklearray.Build` over `leaves` (hashed leaves), `None` for no
/// leaves.
pub(super) fn merkle_root<D: Digest>(leaves: &[Output<D>]) -> Option<Output<D>> {
    let mut layer: Vec<Output<D>> = leaves.to_vec();
    while layer.len() > 1 {
        layer = layer
            .chunks(2)
            .map(|pair| node::<D>(&pair[0], pair.get(1)))
            .collect();
    }
    layer.pop()
}

/// The layers `Build` makes over `n` leaves: 0 for one leaf, else the bits of `n - 1`.
fn height(n: usize) -> u32 {
    if n <= 1 {
        0
    } else {
        usize::BITS - (n - 1).leading_zeros()
    }
}

/// `part` of the `Build` tree over `leaves` (see the module docs; a side needs two leaves or
/// more, else it is the whole tree).
fn merkle_part<D: Digest>(leaves: &[Output<D>], part: Part) -> Option<Output<D>> {
    let n = leaves.len();
    if n < 2 || part == Part::Whole {
        return merkle_root::<D>(leaves);
    }
    // The largest power of two below `n`, and its tree's height.
    let m = 1usize << (height(n) - 1);
    if part == Part::Left {
        return merkle_root::<D>(&leaves[..m]);
    }
    let mut right = merkle_root::<D>(&leaves[m..])?;
    for _ in height(n - m)..m.trailing_zeros() {
        right = node::<D>(&right, None);
    }
    Some(right)
}

/// A vector commitment's shape over `n` leaves: its path length (at least 1, for the bit
/// reversal) and its padded leaf count (a power of two, at least 1).
fn vector_shape(n: usize) -> (u32, usize) {
    if n <= 1 {
        (1, 1)
    } else {
        let path = height(n);
        (path, 1usize << path)
    }
}

/// The bottom layer of a vector commitment over `leaves` at `positions`: leaf `i` at the
/// position of `i`'s bits reversed, H(`"MB"`) where no leaf falls.
fn vector_layer<D: Digest>(leaves: &[Output<D>], positions: Range<usize>) -> Vec<Output<D>> {
    let (path, _) = vector_shape(leaves.len());
    let bottom = D::new_with_prefix(MERKLE_BOTTOM_LEAF_PREFIX).finalize();
    positions
        .map(|pos| {
            let index = ((pos as u64).reverse_bits() >> (64 - path)) as usize;
            leaves.get(index).cloned().unwrap_or_else(|| bottom.clone())
        })
        .collect()
}

/// The root of go-algorand's `merklearray.BuildVectorCommitmentTree` over `leaves`.
pub(super) fn vector_commitment_root<D: Digest>(leaves: &[Output<D>]) -> Output<D> {
    vector_part::<D>(leaves, Part::Whole)
}

/// `part` of the vector commitment over `leaves` (a side needs two leaves or more, else it is
/// the whole tree).
fn vector_part<D: Digest>(leaves: &[Output<D>], part: Part) -> Output<D> {
    let (_, padded) = vector_shape(leaves.len());
    let positions = match part {
        _ if padded < 2 => 0..padded,
        Part::Whole => 0..padded,
        Part::Left => 0..padded / 2,
        Part::Right => padded / 2..padded,
    };
    let layer = vector_layer::<D>(leaves, positions);
    // A layer is never empty: `padded` is at least 1, each half at least 1.
    merkle_root::<D>(&layer)
        .unwrap_or_else(|| D::new_with_prefix(MERKLE_BOTTOM_LEAF_PREFIX).finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Leaves of every tree, distinct per entry.
    fn leaves(n: usize) -> Leaves {
        let trees = Trees {
            merkle: true,
            sha256: true,
            sha512: true,
        };
        let mut l = Leaves::new(trees, n);
        for i in 0..n {
            let seed = (i as u64).to_le_bytes();
            l.native.push(Sha512_256::digest(seed));
            l.sha256.push(Sha256::digest(seed));
            l.sha512.push(Sha512::digest(seed));
        }
        l.set_len(n);
        l
    }

    /// Built in parts and joined, every tree's root is the whole tree's, for every count up to
    /// 70 and at the power-of-two edges above, with any set of trees asked for; and the pieces
    /// are each wanted tree's parts once.
    #[test]
    fn parts_joined_are_the_whole_tree() {
        let counts = (0..=70).chain([127, 128, 129, 255, 256, 257, 1000, 1024, 1025]);
        let mut checked = 0;
        for n in counts {
            let l = leaves(n);
            for bits in 1..8u8 {
                let trees = Trees {
                    merkle: bits & 1 != 0,
                    sha256: bits & 2 != 0,
                    sha512: bits & 4 != 0,
                };
                let order = pieces(trees, n);
                let per_tree = if n >= 2 { 2 } else { 1 };
                assert_eq!(order.len(), bits.count_ones() as usize * per_tree);
                let built: Vec<Built> = order.iter().map(|p| build(&l, *p)).collect();
                let whole = roots(&l, trees);
                assert_eq!(join(trees, n, &built), Some(whole), "n {n} trees {trees:?}");
                // Pieces out of their order are refused or give other roots, never a panic.
                let mut shuffled = built.clone();
                shuffled.reverse();
                if shuffled != built {
                    assert_ne!(join(trees, n, &shuffled), Some(roots(&l, trees)));
                }
                assert_eq!(join(trees, n, &built[1..]), None);
                checked += 1;
            }
        }
        assert_eq!(checked, (71 + 9) * 7);
    }

    /// The Merkle parts by hand for five leaves: `Build` pairs [a b c d e] into [ab cd e0], then
    /// [abcd e00], then the root; the right part is e raised twice.
    #[test]
    fn five_leaves_by_hand() {
        let l = leaves(5);
        let [a, b, c, d, e] = [0, 1, 2, 3, 4].map(|i| l.native[i]);
        let n = |x: &Output<Sha512_256>, y: Option<&Output<Sha512_256>>| node::<Sha512_256>(x, y);
        let (ab, cd, e0) = (n(&a, Some(&b)), n(&c, Some(&d)), n(&e, None));
        let (abcd, e00) = (n(&ab, Some(&cd)), n(&e0, None));
        assert_eq!(merkle_part::<Sha512_256>(&l.native, Part::Left), Some(abcd));
        assert_eq!(merkle_part::<Sha512_256>(&l.native, Part::Right), Some(e00));
        assert_eq!(
            merkle_root::<Sha512_256>(&l.native),
            Some(n(&abcd, Some(&e00)))
        );
    }
}
