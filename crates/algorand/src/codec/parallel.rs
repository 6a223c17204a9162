//! A payset decoded on two threads: the calling thread and a helper job on a one-thread rayon
//! pool ([`helpers`]); then, for a verification, its commitment trees built the same way
//! ([`roots_split`]: each tree's two subtrees, taken from the two ends of a list).
//!
//! The calling thread starts at once, decoding chunks of entries from the front. The helper,
//! whenever a pool thread takes it up, walks the payset structurally (without decoding, about a
//! tenth of a decode's cost) to find where each entry starts, computes the payset's flat
//! commitment when a verification will need it, then decodes chunks from the back. For a
//! verification of a tree commitment, each thread also hashes the leaves of the entries it
//! decodes, which the caller puts in entry order with the txns. The two take their chunks from
//! the two ends of one run ([`split`]), so they meet wherever their speeds put them: a helper that
//! starts late (a sleeping pool thread can take a millisecond to wake on a virtual machine)
//! decodes less, and one that has taken nothing when the caller is done is not waited for. The
//! helper works on its own copy of the block's bytes (a memory copy, about a hundredth of the
//! decode's time), so that the caller can return without it.
//!
//! The result is the one thread's, bad bytes included:
//! - the caller's entries come first and end where the helper's begin, so the first error in
//!   entry order is the caller's if it has one, else the lowest of the helper's chunks' (the
//!   helper stops at its first failing chunk; chunks above it decoded fine);
//! - the helper's walk and the decoder read the same bytes as values; every place they must
//!   agree (each helper chunk ending where the walk put the next entry, the caller ending where
//!   the helper's first chunk begins) is checked, and should one ever differ, the caller decodes
//!   the helper's entries itself;
//! - the flat commitment is kept only when the walk's payset span is the one the decode read.
//!
//! The split and the handover are [`txgate_sync::split`]'s (loom-checked there): when the
//! helper has taken entries, the caller waits for its result by spinning for up to 200 us, then
//! yielding between looks: the helper is then running, one chunk of entries from its end (16
//! entries, about 25 us of a 1,000-txn block's; entries of megabytes take longer), and a
//! sleeping caller would wait as long again to be woken.
//!
//! The helper's work is bounded by the input, not by the count in the payset's header: its
//! walk's allocation grows with the entries it finds, and it stops walking (and hashing) once
//! the caller has taken every entry.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use txgate_sync::split::{Back, Front, split};

use super::block::{Entries, Extras, Payset as Decoded, decode_entries_onto};
use super::entry::Genesis;
use super::error::DecodeError;
use super::leaves::{Leaves, Trees};
use super::msgpack::Reader;
use super::payset::payset_digest;
use super::trees::{Roots, build, join, pieces};
use super::txid::TxnMap;
use super::txn::Txn;
use crate::ids::Round;

/// A payset to decode with a helper: the array's place and shape, read by the caller.
#[derive(Debug, Clone, Copy)]
pub(super) struct Payset {
    /// Where the payset array (its header) starts in the input.
    pub(super) at: usize,
    /// Its entry count, from its header (at most the bytes left, each entry taking at least one).
    pub(super) n: usize,
    /// Its nesting depth.
    pub(super) depth: usize,
    /// The block's round as far as known, for errors.
    pub(super) round: Option<Round>,
    /// Entries taken at a time.
    pub(super) chunk: u32,
    /// What to compute besides the entries: the flat commitment (on the helper) and the trees'
    /// leaves (each thread for its entries).
    pub(super) extras: Extras,
}

/// What the helper did (positions are offsets into the input).
///
/// The entries it decoded are handed over with their app ids moved out of their txns into one
/// list, and the caller gives each txn its list back: memory the helper allocates and the
/// caller frees goes back to the helper's allocator arena, under that arena's lock, while the
/// helper allocates from it for the next block. Measured with glibc on an AMD EPYC Zen 4
/// (2026-12-03): before this handover a two-thread decode of the app-call workload took 0.95 of
/// one thread's time, against 0.70 for payments, which allocate nothing per txn; with it, 0.73
/// to 0.86. What is left crosses in a few buffers.
#[derive(Debug)]
struct Helped {
    /// Where its walk over every entry ended: the payset's end.
    end: usize,
    /// Where each entry starts, from the walk.
    walked: Vec<usize>,
    /// Each chunk it decoded ended where the walk put the next entry (or the payset's end).
    consistent: bool,
    /// The payset's flat commitment, when asked for.
    flat: Option<[u8; 32]>,
    /// The chunks it took, highest first, with the error of the last one if it failed (the
    /// helper stops at its first error).
    chunks: Vec<(Range<usize>, Option<DecodeError>)>,
    /// The txns of the chunks that decoded, in the order of `chunks`, their app ids taken out.
    txns: Vec<Txn>,
    /// Where each of those entries starts.
    offsets: Vec<usize>,
    /// Each of those txns' app ids, one after the other.
    apps: Vec<u64>,
    /// How many app ids each of those txns has.
    app_counts: Vec<u32>,
    /// Those entries' tree leaves, in the order of `txns` (`None`: not asked for, or not
    /// computed).
    leaves: Option<Leaves>,
}

impl Payset {
    /// Decodes the payset's entries under `r` (at the first entry) with a helper, `genesis`
    /// being the block's `gen` and `gh`; on success `r` is after the payset, as after a decode
    /// on one thread.
    pub(super) fn decode(
        &self,
        r: &mut Reader<'_>,
        genesis: (&[u8], &[u8; 32]),
        helpers: &rayon::ThreadPool,
    ) -> Result<Decoded, DecodeError> {
        let genesis_id = Genesis::new(genesis.0, genesis.1);
        // `n` is at most the bytes left (the caller checks), which a `u32` count header bounds;
        // should it not fit the claims, one thread decodes.
        let Ok(count) = u32::try_from(self.n) else {
            return self.decode_rest(r, &genesis_id, Entries::new(self.extras.trees, 0), 0);
        };
        // The helper's result: its work, `None` if it took nothing.
        let (caller, helper) = split::<Option<Helped>>(count);
        {
            let job = *self;
            let input: Arc<[u8]> = Arc::from(r.input());
            let (start, end) = (r.pos(), r.pos() + r.remaining());
            let (id, hash) = (genesis.0.to_vec(), *genesis.1);
            helpers.spawn(move || {
                helper.run(|back| {
                    let genesis = Genesis::new(&id, &hash);
                    job.help(Reader::span(&input, start, end), &genesis, back)
                });
            });
        }
        let mut front = Entries::new(self.extras.trees, 0);
        // On an error, `caller` drops: the run is closed and the helper is not waited for.
        self.take_front(r, &genesis_id, caller.front(), &mut front, usize::MAX)?;
        match caller.finish() {
            // The helper took nothing: not waited for (it stops at its next look at the claims).
            None => Ok(Decoded {
                entries: front,
                flat: None,
            }),
            // It took the rest, and handed its work over when its last chunk was decoded.
            Some(helped) => self.finish(r, &genesis_id, front, helped),
        }
    }

    /// The caller's part: chunks taken from the run's front end `ends` and decoded under `r`
    /// onto `front`, until the run is done or `front` holds at least `until` entries. On an
    /// error, the first in entry order (the helper's entries come after it), the run is closed
    /// so that the helper stops at its next take.
    fn take_front(
        &self,
        r: &mut Reader<'_>,
        genesis: &Genesis<'_>,
        ends: Front<'_>,
        front: &mut Entries,
        until: usize,
    ) -> Result<(), DecodeError> {
        let mut scratch = TxnMap::default();
        while front.txns.len() < until {
            let range = ends.take(self.chunk);
            if range.is_empty() {
                break;
            }
            let decoded = decode_entries_onto(
                r,
                range,
                self.depth,
                genesis,
                self.round,
                &mut scratch,
                front,
            );
            if let Err(e) = decoded {
                ends.close();
                return Err(e);
            }
        }
        Ok(())
    }

    /// The one thread's result from what the two did: `front`, the caller's entries from the
    /// front, and what the helper did; `r` is where the caller's decode ended.
    fn finish(
        &self,
        r: &mut Reader<'_>,
        genesis: &Genesis<'_>,
        front: Entries,
        helped: Option<Helped>,
    ) -> Result<Decoded, DecodeError> {
        let Some(helped) = helped else {
            // The helper reports nothing only when it took nothing, and `split` waits for it only
            // when it took entries, so this is not expected; should it happen, the caller
            // decodes the entries after its own, and the result is still one thread's.
            debug_assert!(false, "the helper took entries and reported none");
            let from = front.txns.len();
            return self.decode_rest(r, genesis, front, from);
        };
        let from = helped
            .chunks
            .last()
            .map_or(self.n, |(range, _)| range.start);
        let at = helped.walked.get(from).copied().unwrap_or(helped.end);
        if !helped.consistent || at != r.pos() {
            // The walk put an entry (or the payset's end) elsewhere than a decode ended. Over
            // entries that decode, the structural walk reads what the decoder reads, so this is
            // not expected (tests and the fuzzer, with debug assertions, stop on it); should the
            // two ever differ, the caller decodes the helper's entries, and the result is still
            // one thread's.
            debug_assert!(false, "walk and decode differ: {at} against {}", r.pos());
            return self.decode_rest(r, genesis, front, from);
        }
        // The helper's chunks as they were taken (highest first), then put in entry order.
        let mut taken = helped.txns.into_iter().zip(helped.offsets);
        let (mut apps, mut counts) = (&helped.apps[..], helped.app_counts.into_iter());
        // Each chunk's entries, and where they start in the helper's order.
        let mut chunks = Vec::with_capacity(helped.chunks.len());
        let mut position = 0;
        for (range, error) in helped.chunks {
            if let Some(e) = error {
                // The lowest chunk, the first error in entry order.
                return Err(e);
            }
            let mut chunk = Vec::with_capacity(range.len());
            for (mut t, at) in taken.by_ref().take(range.len()) {
                let count = counts.next().unwrap_or(0) as usize;
                let (own, rest) = apps.split_at(count.min(apps.len()));
                t.app_ids = own.to_vec();
                apps = rest;
                chunk.push((t, at));
            }
            chunks.push((position, chunk));
            position += range.len();
        }
        let mut out = front;
        // Both threads' leaves, or none.
        out.leaves = match (out.leaves, &helped.leaves) {
            (Some(mut leaves), Some(theirs)) if theirs.len() == position => {
                for (at, chunk) in chunks.iter().rev() {
                    leaves.extend_from(theirs, *at..*at + chunk.len());
                }
                Some(leaves)
            }
            _ => None,
        };
        for (t, at) in chunks.into_iter().rev().flat_map(|(_, chunk)| chunk) {
            out.txns.push(t);
            out.offsets.push(at);
        }
        // The caller goes on after the payset, where the walk ended: the end of the span the
        // flat commitment hashed.
        *r = r.at(helped.end);
        Ok(Decoded {
            entries: out,
            flat: helped.flat,
        })
    }

    /// The one thread's result when the caller decodes entries `from..n` itself under `r`
    /// (where its own entries, `front`, ended) rather than take the helper's.
    fn decode_rest(
        &self,
        r: &mut Reader<'_>,
        genesis: &Genesis<'_>,
        front: Entries,
        from: usize,
    ) -> Result<Decoded, DecodeError> {
        let mut out = front;
        let mut scratch = TxnMap::default();
        decode_entries_onto(
            r,
            from..self.n,
            self.depth,
            genesis,
            self.round,
            &mut scratch,
            &mut out,
        )?;
        Ok(Decoded {
            entries: out,
            flat: None,
        })
    }

    /// The helper: the walk from `first` (a reader at the first entry, over the caller's window)
    /// that finds where each entry starts, the flat commitment when asked for, then chunks
    /// claimed from the back and decoded until the claims are done or a chunk fails. `None`
    /// when nothing was left to take when it looked, or its walk met bad bytes: it took nothing.
    fn help(&self, mut first: Reader<'_>, genesis: &Genesis<'_>, ends: Back<'_>) -> Option<Helped> {
        if ends.is_done() {
            return None;
        }
        // Grown by the entries found, not sized by the header's count; given up (nothing taken
        // yet) once the caller has taken every entry.
        let mut walked = Vec::with_capacity(self.n.min(WALK_CAPACITY));
        for i in 0..self.n {
            if i % WALK_CHECK == 0 && i > 0 && ends.is_done() {
                return None;
            }
            walked.push(first.pos());
            first.skip(self.depth + 1).ok()?;
        }
        let end = first.pos();
        // Hashed only while there is something to take: a caller that is done does not wait.
        let flat = (self.extras.flat && !ends.is_done())
            .then(|| payset_digest(&first.input()[self.at..end]));
        let mut helped = Helped {
            end,
            walked,
            consistent: true,
            flat,
            chunks: Vec::new(),
            txns: Vec::new(),
            offsets: Vec::new(),
            apps: Vec::new(),
            app_counts: Vec::new(),
            leaves: None,
        };
        let mut scratch = TxnMap::default();
        // Its txns and offsets are moved out after each chunk; its leaves stay until the end.
        let mut out = Entries::new(self.extras.trees, 0);
        loop {
            let range = ends.take(self.chunk);
            if range.is_empty() {
                break;
            }
            // The caller's window, from the chunk's first entry: a decode reads what it would
            // read on one thread.
            let mut r = first.at(helped.walked[range.start]);
            let depth = self.depth;
            let decoded = decode_entries_onto(
                &mut r,
                range.clone(),
                depth,
                genesis,
                self.round,
                &mut scratch,
                &mut out,
            );
            if let Err(e) = decoded {
                helped.chunks.push((range, Some(e)));
                break;
            }
            let next = helped.walked.get(range.end).copied().unwrap_or(end);
            helped.consistent = r.pos() == next;
            for mut t in out.txns.drain(..) {
                helped.apps.extend_from_slice(&t.app_ids);
                helped.app_counts.push(t.app_ids.len() as u32);
                // Freed here, on the thread that allocated it.
                t.app_ids = Vec::new();
                helped.txns.push(t);
            }
            helped.offsets.append(&mut out.offsets);
            helped.chunks.push((range, None));
            if !helped.consistent {
                break;
            }
        }
        helped.leaves = out.leaves;
        Some(helped)
    }
}

/// The helpers' pool: one thread for the process, named `txgate-decode`, started on first use.
/// `None` (every payset then decoded on the calling thread) on a machine with one processor,
/// where a helper could only take turns with the caller; if the thread could not be started;
/// and in a child process forked after it was (the child has no such thread: a job sent to the
/// pool would wait forever, holding its copy of a block).
///
/// Its own pool rather than rayon's global one: an idle worker of a pool spins (yielding) for a
/// while before it sleeps, and the global pool's other workers would compete with the caller
/// and the helper for a two-core machine's processors at each block.
pub(super) fn helpers() -> Option<&'static rayon::ThreadPool> {
    // The pool, and the process it was started in.
    static POOL: OnceLock<Option<(rayon::ThreadPool, u32)>> = OnceLock::new();
    let (pool, started_in) = POOL
        .get_or_init(|| {
            let processors = std::thread::available_parallelism().map_or(1, |n| n.get());
            if processors < 2 {
                return None;
            }
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(|_| "txgate-decode".to_owned())
                .build()
                .ok()?;
            Some((pool, std::process::id()))
        })
        .as_ref()?;
    (*started_in == std::process::id()).then_some(pool)
}

/// Entries the helper's walk reserves room for at first (a header's count is not trusted for an
/// allocation).
const WALK_CAPACITY: usize = 4096;

/// Every how many entries the helper's walk looks whether the caller has taken them all.
const WALK_CHECK: usize = 64;

/// The roots of `trees` over `leaves`, built by the calling thread and a helper, which take
/// the trees' parts ([`pieces`]: each tree of two leaves or more as its two subtrees) from the
/// two ends of one run ([`split`]); the same roots as on one thread. `None` without a helper.
pub(super) fn roots_split(leaves: &Arc<Leaves>, trees: Trees) -> Option<Roots> {
    let pool = helpers()?;
    let n = leaves.len();
    let order: Arc<[_]> = pieces(trees, n).into();
    let (shared, work) = (Arc::clone(leaves), Arc::clone(&order));
    let built = run_split(order.len(), move |i| build(&shared, work[i]), pool);
    join(trees, n, &built)
}

/// `work(i)` for every `i` in `0..n`, in that order: the calling thread claims indices one at a
/// time from the front and a helper job on `pool` from the back. As with a payset's decode, the
/// caller does not wait for a helper that took nothing, and waits for one that took some, which
/// is then one index from done; a panic in the helper is resumed on the caller. The split and
/// its handover are [`txgate_sync::split`]'s, loom-checked there.
fn run_split<T, F>(n: usize, work: F, pool: &rayon::ThreadPool) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(usize) -> T + Send + Sync + 'static,
{
    let Ok(count) = u32::try_from(n) else {
        return (0..n).map(work).collect();
    };
    let work = Arc::new(work);
    // The helper's result: the indices it took, with their outputs.
    let (caller, helper) = split::<Vec<(usize, T)>>(count);
    {
        let work = Arc::clone(&work);
        pool.spawn(move || {
            helper.run(|back| {
                let mut taken = Vec::new();
                loop {
                    let range = back.take(1);
                    if range.is_empty() {
                        return taken;
                    }
                    taken.extend(range.map(|i| (i, work(i))));
                }
            });
        });
    }
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    loop {
        let range = caller.front().take(1);
        if range.is_empty() {
            break;
        }
        for i in range {
            out[i] = Some(work(i));
        }
    }
    // `None`: the helper took nothing, and is not waited for.
    for (i, t) in caller.finish().unwrap_or_default() {
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(t);
        }
    }
    // Each index was claimed once, by one thread (the claims' invariant): none is missing. Should
    // one ever be, it is built here.
    out.into_iter()
        .enumerate()
        .map(|(i, t)| t.unwrap_or_else(|| work(i)))
        .collect()
}

#[cfg(test)]
mod tests {
    //! The caller's and the helper's parts run one after the other, the caller taking the first
    //! `k` entries (rounded up to its chunks) and the helper the rest (the caller what a failed
    //! helper chunk leaves): every meeting point of the two, on good and damaged paysets, gives
    //! the one thread's result. The threads' races over the run and the handover are
    //! `txgate_sync::split`'s loom models; the codec's tests run the two threads.

    use std::panic::{AssertUnwindSafe, catch_unwind};

    use super::*;
    use crate::codec::block::decode_entries;
    use crate::codec::entry::read_payset_len;
    use crate::codec::leaves::Trees;
    use crate::codec::payset::locate_payset;
    use crate::synth::{SynthTxn, encode_block};
    use txgate_sync::claims::Claims;

    const GEN: &str = "parallel-v1";
    const GH: [u8; 32] = [0x33; 32];

    /// Every tree's leaves: the decode computes them whatever the header's rule says.
    const ALL: Trees = Trees {
        merkle: true,
        sha256: true,
        sha512: true,
    };

    /// The entries' txns and offsets, and their leaves as bytes (`None`: not computed).
    type Seen<'e> = (&'e [Txn], &'e [usize], Option<[Vec<u8>; 3]>);

    fn seen(e: &Entries) -> Seen<'_> {
        let leaves = e.leaves.as_ref().map(|l| {
            assert_eq!(l.len(), e.txns.len(), "a leaf per entry");
            [l.native.concat(), l.sha256.concat(), l.sha512.concat()]
        });
        (&e.txns, &e.offsets, leaves)
    }

    /// A block of `n` txns, app calls and payments.
    fn block(n: u64) -> Vec<u8> {
        let txns: Vec<SynthTxn> = (0..n)
            .map(|i| {
                let mut t = if i % 3 == 0 {
                    SynthTxn::payment([1; 32], 5, 900 + i)
                } else {
                    SynthTxn::app_call([2; 32], 5, 900 + i, vec![1000 + i])
                };
                t.note = format!("n{i}").into_bytes();
                t
            })
            .collect();
        encode_block(7, GEN, &GH, 1, &txns)
    }

    /// The payset of `bytes` (its place from the undamaged `clean`), the reader at its first
    /// entry, on one thread: its entries (or error) and where the decode ended.
    fn one_thread(
        bytes: &[u8],
        clean: &[u8],
    ) -> (Payset, Reader<'static>, Result<Entries, DecodeError>, usize) {
        let located = locate_payset(clean).unwrap();
        let at = located.payset.as_ptr() as usize - clean.as_ptr() as usize;
        let bytes: &'static [u8] = bytes.to_vec().leak();
        let mut r = Reader::new(bytes).at(at);
        let n = read_payset_len(&mut r, None).unwrap() as usize;
        let genesis = Genesis::new(GEN.as_bytes(), &GH);
        let payset = Payset {
            at,
            n,
            depth: located.payset_depth,
            round: None,
            chunk: 1,
            extras: Extras {
                flat: true,
                trees: ALL,
            },
        };
        let first = r.clone();
        let mut seq = r.clone();
        let want = decode_entries(&mut seq, 0..n, payset.depth, &genesis, None, ALL);
        (payset, first, want, seq.pos())
    }

    /// The caller takes chunks from the front until it holds at least `k` entries (or fails),
    /// then the helper runs whole, then the two are put together.
    fn split_at(
        payset: &Payset,
        first: &Reader<'static>,
        k: usize,
    ) -> (Result<Decoded, DecodeError>, usize, bool) {
        let genesis = Genesis::new(GEN.as_bytes(), &GH);
        let claims = Claims::new(payset.n as u32);
        let mut r = first.clone();
        let mut front = Entries::new(ALL, 0);
        let mut failed = payset
            .take_front(&mut r, &genesis, Front::of(&claims), &mut front, k)
            .err();
        let helped = payset.help(first.clone(), &genesis, Back::of(&claims));
        let helper_ran = helped.is_some();
        // What the helper left (after a failed chunk of its own), the caller takes.
        if failed.is_none() {
            failed = payset
                .take_front(&mut r, &genesis, Front::of(&claims), &mut front, usize::MAX)
                .err();
        }
        let out = match failed {
            Some(e) => Err(e),
            // As in `decode` (`split`'s rule): a helper that took no entry is not waited for.
            None if claims.back_end() == payset.n => Ok(Decoded {
                entries: front,
                flat: None,
            }),
            None => payset.finish(&mut r, &genesis, front, helped),
        };
        (out, r.pos(), helper_ran)
    }

    #[test]
    fn every_meeting_point_gives_the_one_threads_entries() {
        let clean = block(23);
        for chunk in [1, 2, 5, 64] {
            let (mut payset, first, want, end) = one_thread(&clean, &clean);
            payset.chunk = chunk;
            let want = want.unwrap();
            assert!(seen(&want).2.is_some(), "one thread computed the leaves");
            let digest = payset_digest(&clean[payset.at..end]);
            for k in 0..=payset.n {
                let (got, pos, helper_ran) = split_at(&payset, &first, k);
                let got = got.unwrap();
                assert_eq!(seen(&got.entries), seen(&want), "chunk {chunk} k {k}");
                assert_eq!(pos, end, "the caller goes on after the payset");
                // The helper ran unless the caller's chunks had taken every entry.
                let taken = (k.div_ceil(chunk as usize) * chunk as usize).min(payset.n);
                assert_eq!(helper_ran, taken < payset.n, "chunk {chunk} k {k}");
                // The flat commitment, when the helper ran: of the payset's bytes.
                assert_eq!(
                    got.flat,
                    helper_ran.then_some(digest),
                    "chunk {chunk} k {k}"
                );
            }
        }
    }

    #[test]
    fn a_damaged_entry_gives_the_one_threads_error_at_every_meeting_point() {
        let clean = block(12);
        let located = locate_payset(&clean).unwrap();
        let at = located.payset.as_ptr() as usize - clean.as_ptr() as usize;
        let mut checked = 0;
        // Each byte of the payset in turn, set to a msgpack type that breaks its value.
        for i in (at + 3..at + located.payset.len()).step_by(5) {
            for bad in [0xc1u8, 0xdf, 0x00] {
                let mut bytes = clean.clone();
                bytes[i] = bad;
                let (payset, first, want, end) = one_thread(&bytes, &clean);
                for k in [0, 1, payset.n / 2, payset.n] {
                    let (got, pos, _) = split_at(&payset, &first, k);
                    match (&want, got) {
                        (Ok(w), Ok(g)) => {
                            assert_eq!(seen(&g.entries), seen(w), "byte {i} k {k}");
                            assert_eq!(pos, end);
                        }
                        (Err(w), Err(g)) => assert_eq!(*w, g, "byte {i} k {k}"),
                        (w, g) => panic!("byte {i} k {k}: one thread {w:?}, split {g:?}"),
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 100, "{checked}");
    }

    /// `run_split` on real threads, many short trials: every output in index order, however
    /// the two threads met (both meetings seen: the helper taking some, and taking none); a
    /// panic on the helper reaches the caller whenever the helper took an index.
    #[test]
    fn run_split_gives_every_output_in_order_and_resumes_a_helpers_panic() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "split-test".to_owned())
            .build()
            .unwrap();
        let on_helper = || std::thread::current().name() == Some("split-test");
        let (mut helped, mut alone) = (0, 0);
        for n in [0usize, 1, 2, 3, 6, 50] {
            for trial in 0..200 {
                let took = Arc::new(std::sync::atomic::AtomicUsize::new(0));
                let counter = Arc::clone(&took);
                let out = run_split(
                    n,
                    move |i| {
                        if on_helper() {
                            // Relaxed: a count read after `run_split` returns (which waited for
                            // the helper if it took an index), or polled below.
                            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        } else if i == 0 && n >= 2 && trial % 8 == 0 {
                            // Some trials hold the caller at its first index until the helper
                            // has done one (or 5 s have passed), so that the helped case is
                            // seen however the threads are scheduled (a loaded machine can
                            // start the pool's thread late in every other trial).
                            let start = std::time::Instant::now();
                            while counter.load(std::sync::atomic::Ordering::Relaxed) == 0
                                && start.elapsed() < std::time::Duration::from_secs(5)
                            {
                                std::thread::yield_now();
                            }
                        }
                        if (i + trial) % 4 == 0 {
                            std::thread::yield_now();
                        }
                        i * i
                    },
                    &pool,
                );
                assert_eq!(out, (0..n).map(|i| i * i).collect::<Vec<_>>(), "n {n}");
                if n > 0 {
                    match took.load(std::sync::atomic::Ordering::Relaxed) {
                        0 => alone += 1,
                        _ => helped += 1,
                    }
                }
            }
        }
        assert!(helped > 0 && alone > 0, "helped {helped}, alone {alone}");
        let (mut resumed, mut returned) = (0, 0);
        for _ in 0..200 {
            let got = catch_unwind(AssertUnwindSafe(|| {
                run_split(
                    8,
                    move |i| {
                        if on_helper() {
                            panic!("helper {i}");
                        }
                        std::thread::yield_now();
                        i
                    },
                    &pool,
                )
            }));
            match got {
                Ok(out) => {
                    assert_eq!(out, (0..8).collect::<Vec<_>>());
                    returned += 1;
                }
                Err(payload) => {
                    let text = payload
                        .downcast_ref::<String>()
                        .expect("the helper's message");
                    assert!(text.starts_with("helper "), "{text}");
                    resumed += 1;
                }
            }
        }
        assert_eq!(resumed + returned, 200);
    }

    #[test]
    fn a_helper_with_nothing_to_take_or_bad_bytes_takes_nothing() {
        let clean = block(8);
        let (payset, first, want, _) = one_thread(&clean, &clean);
        let genesis = Genesis::new(GEN.as_bytes(), &GH);
        // The caller took everything before the helper started.
        let claims = Claims::new(payset.n as u32);
        assert_eq!(claims.front(100).len(), payset.n);
        assert!(
            payset
                .help(first.clone(), &genesis, Back::of(&claims))
                .is_none()
        );
        // A payset cut short: the walk fails, and nothing is claimed.
        let cut = &clean[..clean.len() - 10];
        let (payset, first, _, _) = one_thread(cut, &clean);
        let claims = Claims::new(payset.n as u32);
        assert!(payset.help(first, &genesis, Back::of(&claims)).is_none());
        assert_eq!(claims.front(100), 0..payset.n);
        assert!(want.is_ok());
    }
}
