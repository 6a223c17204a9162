//! The txid rule and the canonical `txn` map it hashes.
//!
//! go-algorand `Transaction.ID` is `crypto.HashObj(tx)`: SHA-512/256 over the domain prefix
//! `"TX"` (`protocol.Transaction`) followed by `protocol.Encode(tx)`, the canonical msgpack map
//! of the transaction (see the [`codec`](super) docs for "canonical"). [`TxidHasher`] is that
//! hash, the only one in this crate: the decoder feeds it a [`TxnMap`], the synthetic encoder
//! the map it wrote.

use rmp::encode::ByteBuf;
use sha2::{Digest, Sha512_256};

use super::msgpack;
use crate::ids::Txid;

/// Domain-separation prefix of a transaction id (go-algorand `protocol.Transaction`).
pub const TXID_PREFIX: &[u8; 2] = b"TX";

/// SHA-512/256 over `"TX"` and the canonical msgpack bytes of a `txn` map, fed in pieces
/// (go-algorand `Transaction.ID`).
///
/// The hasher does not check that the bytes are canonical: bytes that are not give a txid no
/// go-algorand node computes.
///
/// # Examples
///
/// ```
/// use txgate_algorand::codec::{TxidHasher, decode_txn_message};
///
/// // {"txn": {"type": "pay"}}: the txid is over the inner map's bytes.
/// let txn_map = [0x81, 0xa4, b't', b'y', b'p', b'e', 0xa3, b'p', b'a', b'y'];
/// let mut message = vec![0x81, 0xa3, b't', b'x', b'n'];
/// message.extend_from_slice(&txn_map);
/// let decoded = decode_txn_message(&message)?;
/// assert_eq!(decoded[0].txid, TxidHasher::txid_of(&txn_map));
///
/// let mut h = TxidHasher::new();
/// h.update(&txn_map[..4]);
/// h.update(&txn_map[4..]);
/// assert_eq!(h.finish(), decoded[0].txid);
/// # Ok::<(), txgate_algorand::codec::DecodeError>(())
/// ```
#[derive(Debug, Clone)]
pub struct TxidHasher(Sha512_256);

impl Default for TxidHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl TxidHasher {
    /// A hasher that has taken the `"TX"` prefix.
    pub fn new() -> Self {
        let mut h = Sha512_256::new();
        h.update(TXID_PREFIX);
        Self(h)
    }

    /// Feeds the next bytes of the canonical `txn` map.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The txid of everything fed.
    pub fn finish(self) -> Txid {
        Txid(self.0.finalize().into())
    }

    /// The txid of one whole canonical `txn` map.
    pub fn txid_of(canonical_txn: &[u8]) -> Txid {
        let mut h = Self::new();
        h.update(canonical_txn);
        h.finish()
    }
}

/// Where an entry's value bytes are.
#[derive(Debug, Clone)]
pub(super) enum EntryValue<'a> {
    /// Canonical bytes of the input, `start..end`.
    Span(usize, usize),
    /// Re-encoded bytes (the input's were not canonical).
    Owned(Vec<u8>),
    /// The block's pre-encoded `gen` or `gh` value (a payset entry's completion).
    Completion(&'a [u8]),
}

/// One non-empty entry of a `txn` map.
#[derive(Debug, Clone)]
pub(super) struct Entry<'a> {
    /// The key's bytes (written back as str).
    pub(super) key: &'a [u8],
    /// Offset of the key in the input (for duplicate-key errors).
    pub(super) key_at: usize,
    pub(super) value: EntryValue<'a>,
}

/// A `txn` map on its way to the hash (or to a gossip message), in one of two forms:
///
/// - verbatim: the input's key/value pairs as they stand, one byte range, plus the completion's
///   `gen`/`gh` at the places their keys sort to. [`read_txn_map`](super::txn::read_txn_map)
///   keeps this form while every key is a minimal str, the keys strictly increase and every
///   value is canonical and not empty: then the pairs are already the canonical map's, and
///   nothing is collected per entry (everything a go-algorand node writes is canonical);
/// - entries: the map's non-empty entries, in key order once [`TxnMap::sort`] has run, values
///   pointing into `input` or at the completion values (the first input that breaks the
///   verbatim form moves the pairs read so far here).
///
/// Invariant the writers rely on: after `sort`, keys are strictly increasing (a duplicate is an
/// error there), so the written map is canonical whenever each value is.
#[derive(Debug)]
pub(super) struct TxnMap<'a> {
    pub(super) entries: Vec<Entry<'a>>,
    /// Whether the keys came in strictly increasing order so far.
    sorted: bool,
    /// The verbatim form, while it holds (`None`: the entries form).
    verbatim: Option<Verbatim<'a>>,
    /// The canonical map's bytes, assembled for one hash call (kept between maps).
    buf: Vec<u8>,
}

/// A `txn` map whose pairs are the input's bytes as they stand (see [`TxnMap`]).
#[derive(Debug, Clone, Copy)]
struct Verbatim<'a> {
    /// Where the pairs start in the input (after the map header).
    start: usize,
    /// Where the pairs read so far end.
    end: usize,
    /// Pairs read so far.
    count: usize,
    /// The last key read (the next must sort after it).
    last: &'a [u8],
    /// Where the first key that sorts after `gen` and after `gh` starts (`None`: none so far).
    after_gen: Option<usize>,
    after_gh: Option<usize>,
    /// The completion's pre-encoded values, when added ([`TxnMap::complete_verbatim`]).
    gen_value: Option<&'a [u8]>,
    gh_value: Option<&'a [u8]>,
}

impl Default for TxnMap<'_> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            sorted: true,
            verbatim: None,
            buf: Vec::new(),
        }
    }
}

impl<'a> TxnMap<'a> {
    /// Empties the map for the next `txn` (the allocation is kept), in the verbatim form with
    /// its pairs starting at byte `start` of the input.
    pub(super) fn clear(&mut self, start: usize) {
        self.entries.clear();
        self.sorted = true;
        self.verbatim = Some(Verbatim {
            start,
            end: start,
            count: 0,
            last: &[],
            after_gen: None,
            after_gh: None,
            gen_value: None,
            gh_value: None,
        });
    }

    /// Whether the map is still in the verbatim form.
    pub(super) fn is_verbatim(&self) -> bool {
        self.verbatim.is_some()
    }

    /// Extends the verbatim form by the pair `input[key_at..value.1]` whose key is `key`, when
    /// the pair keeps it canonical: its key is a minimal str right before its value (at
    /// `value.0`), sorting after the last key, and its value (`scan`) canonical and not empty.
    /// Returns `false` (nothing changed) otherwise, and in the entries form.
    #[inline]
    pub(super) fn push_verbatim(
        &mut self,
        key: &'a [u8],
        key_at: usize,
        value: (usize, usize),
        scan: msgpack::Scan,
        input: &[u8],
    ) -> bool {
        let Some(v) = &mut self.verbatim else {
            return false;
        };
        let header = msgpack::str_header(key.len());
        let header = header.as_ref();
        if !scan.canonical
            || scan.empty
            || key_at != v.end
            || key_at + header.len() + key.len() != value.0
            || input.get(key_at..key_at + header.len()) != Some(header)
            || (v.count > 0 && !msgpack::bytes_lt(v.last, key))
        {
            return false;
        }
        if v.after_gen.is_none() && msgpack::bytes_lt(b"gen", key) {
            v.after_gen = Some(key_at);
        }
        if v.after_gh.is_none() && msgpack::bytes_lt(b"gh", key) {
            v.after_gh = Some(key_at);
        }
        v.last = key;
        v.count += 1;
        v.end = value.1;
        true
    }

    /// Moves the verbatim form's pairs to the entries form (each a whole key and canonical
    /// value of `input`, at `depth` + 1), before an entry that breaks it is pushed.
    pub(super) fn leave_verbatim(
        &mut self,
        input: &'a [u8],
        depth: usize,
    ) -> Result<(), super::msgpack::RawError> {
        let Some(v) = self.verbatim.take() else {
            return Ok(());
        };
        let mut r = super::msgpack::Reader::span(input, v.start, v.end);
        while !r.at_end() {
            let key_at = r.pos();
            let key = match r.token()?.0 {
                super::msgpack::Token::Str(k) => k,
                // Unreachable: `push_verbatim` took str keys only.
                _ => &[],
            };
            let (s, t) = r.skip_span(depth + 1)?;
            self.entries.push(Entry {
                key,
                key_at,
                value: EntryValue::Span(s, t),
            });
        }
        Ok(())
    }

    /// Adds the completion's pre-encoded values to the verbatim form (`gen` when given, `gh`
    /// always), where their keys sort to. The input's keys must not include them.
    pub(super) fn complete_verbatim(&mut self, gen_value: Option<&'a [u8]>, gh_value: &'a [u8]) {
        if let Some(v) = &mut self.verbatim {
            v.gen_value = gen_value;
            v.gh_value = Some(gh_value);
        }
    }

    /// Appends an entry read from the input.
    pub(super) fn push(&mut self, entry: Entry<'a>) {
        debug_assert!(self.verbatim.is_none(), "push in the verbatim form");
        if let Some(last) = self.entries.last() {
            self.sorted &= msgpack::bytes_lt(last.key, entry.key);
        }
        self.entries.push(entry);
    }

    /// Adds a key the input does not hold (`gen`, `gh`), keeping sorted maps sorted.
    pub(super) fn insert(&mut self, entry: Entry<'a>) {
        debug_assert!(self.verbatim.is_none(), "insert in the verbatim form");
        if self.sorted {
            let pos = self
                .entries
                .partition_point(|e| msgpack::bytes_lt(e.key, entry.key));
            self.entries.insert(pos, entry);
        } else {
            self.entries.push(entry);
        }
    }

    /// Sorts the keys; returns the offset of a duplicate key (the later occurrence), if any.
    pub(super) fn sort(&mut self) -> Result<(), usize> {
        if self.sorted {
            return Ok(());
        }
        self.entries.sort_by(|a, b| a.key.cmp(b.key));
        self.sorted = true;
        match self.entries.windows(2).find(|w| w[0].key == w[1].key) {
            Some(w) => Err(w[0].key_at.max(w[1].key_at)),
            None => Ok(()),
        }
    }

    /// Writes the canonical map, piece by piece, to `sink`; `input` is what spans point into.
    ///
    /// An entry whose key and value the input holds back to back, the key a str with the
    /// header this writes (the canonical form), is the input's bytes `key_at..value end`; a
    /// run of such entries that follow each other in the input (a canonical map between the
    /// completion's `gen` and `gh`) goes out as one piece. So a canonical `txn` of a block is
    /// written in at most five pieces besides the header and the completion's keys and values.
    pub(super) fn write(&self, input: &[u8], sink: &mut impl FnMut(&[u8])) {
        if let Some(v) = &self.verbatim {
            Self::write_verbatim(v, input, sink);
            return;
        }
        sink(msgpack::map_header(self.entries.len()).as_ref());
        // The input range of the current run of verbatim entries.
        let mut run: Option<(usize, usize)> = None;
        for e in &self.entries {
            let header = msgpack::str_header(e.key.len());
            let header = header.as_ref();
            if let EntryValue::Span(s, t) = e.value
                && e.key_at + header.len() + e.key.len() == s
                && input.get(e.key_at..e.key_at + header.len()) == Some(header)
            {
                // `input[key_at..s]` is the key as read (its bytes are `e.key`) with the
                // header written below: the entry is `input[key_at..t]` verbatim.
                run = match run {
                    Some((from, end)) if end == e.key_at => Some((from, t)),
                    other => {
                        if let Some((from, end)) = other {
                            sink(&input[from..end]);
                        }
                        Some((e.key_at, t))
                    }
                };
                continue;
            }
            if let Some((from, end)) = run.take() {
                sink(&input[from..end]);
            }
            sink(header);
            sink(e.key);
            match &e.value {
                EntryValue::Span(s, t) => sink(&input[*s..*t]),
                EntryValue::Owned(v) => sink(v),
                EntryValue::Completion(v) => sink(v),
            }
        }
        if let Some((from, end)) = run {
            sink(&input[from..end]);
        }
    }

    /// The verbatim form's canonical map: the header, then the input's pairs with `gen` and
    /// `gh` (when added) written before the first key that sorts after each.
    fn write_verbatim(v: &Verbatim<'_>, input: &[u8], sink: &mut impl FnMut(&[u8])) {
        let count =
            v.count + usize::from(v.gen_value.is_some()) + usize::from(v.gh_value.is_some());
        sink(msgpack::map_header(count).as_ref());
        let mut from = v.start;
        // `gen` sorts before `gh`, so its place is never after `gh`'s.
        for (key, value, at) in [
            (&b"gen"[..], v.gen_value, v.after_gen),
            (&b"gh"[..], v.gh_value, v.after_gh),
        ] {
            if let Some(value) = value {
                let at = at.unwrap_or(v.end);
                sink(&input[from..at]);
                sink(msgpack::str_header(key.len()).as_ref());
                sink(key);
                sink(value);
                from = at;
            }
        }
        sink(&input[from..v.end]);
    }

    /// The txid of the map. `"TX"` and the pieces are copied into one buffer and hashed in one
    /// call: a hash update per piece costs more than the copy.
    pub(super) fn txid(&mut self, input: &[u8]) -> Txid {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf.extend_from_slice(TXID_PREFIX);
        self.write(input, &mut |b| buf.extend_from_slice(b));
        let txid = Txid(Sha512_256::digest(&buf).into());
        self.buf = buf;
        txid
    }

    /// Appends the canonical map to `out`.
    pub(super) fn write_to(&self, input: &[u8], out: &mut ByteBuf) {
        self.write(input, &mut |b| out.as_mut_vec().extend_from_slice(b));
    }
}
