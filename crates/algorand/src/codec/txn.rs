//! Transactions: the `txn` map (its fields, its canonical form and txid) and transaction
//! messages as peers gossip them.

use std::borrow::Cow;

use rmp::encode::ByteBuf;

use super::error::DecodeError;
use super::msgpack::{self, Reader, Scan, Token};
use super::read::{read_32, read_array_len, read_bytes, read_key, read_map_len, read_uint};
use super::txid::{Entry, EntryValue, TxnMap};
use crate::ids::{Round, Txid};

/// One transaction of a block (or of a transaction message), with what the ledger and the
/// handler need from it.
///
/// The decoders build it ([`decode_block`](super::decode_block),
/// [`decode_txn_message`]). It is `#[non_exhaustive]`, so that a later version can read another
/// field of the `txn` map without breaking anyone: outside this crate (tests, a decoder of one's
/// own for the ledger's tx handler) build one with [`Txn::new`] and the `with_*` setters, which
/// take the new value of the field they are named after and return the transaction. The fields
/// stay public for reading and assigning.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Txn {
    /// The txid by the go-algorand rule.
    pub txid: Txid,
    /// The `type` field as bytes (`pay`, `appl`, ...): one of go-algorand's types
    /// ([`KNOWN_TX_TYPES`]) borrowed from a static, so decoding allocates nothing for it; any
    /// other bytes owned.
    pub tx_type: Cow<'static, [u8]>,
    /// The sender address (`snd`), 32 bytes (zero if absent).
    pub sender: [u8; 32],
    /// First valid round (`fv`, 0 if absent).
    pub first_valid: Round,
    /// Last valid round (`lv`, 0 if absent).
    pub last_valid: Round,
    /// The group id (`grp`), if any.
    pub group: Option<[u8; 32]>,
    /// App ids: `apid`, foreign apps (`apfa`) and access-list app references (`al[i].p`, go-algorand
    /// `ResourceRef.App`); 0 (creation) dropped; distinct, in that order, first-seen within it.
    pub app_ids: Vec<u64>,
}

impl Txn {
    /// A transaction with id `txid` and `type` `tx_type` (bytes: `pay`, `appl`, ...), its other
    /// fields as the decoder leaves absent ones: a zero sender, rounds 0, no group, no app ids.
    ///
    /// Nothing ties `txid` to the fields: a decoded txid hashes the whole `txn` map, most of which
    /// a `Txn` does not hold.
    ///
    /// ```
    /// use txgate_algorand::Txid;
    /// use txgate_algorand::codec::Txn;
    ///
    /// let t = Txn::new(Txid([1; 32]), b"appl");
    /// assert_eq!((t.sender, t.first_valid, t.last_valid), ([0; 32], 0, 0));
    /// assert_eq!((t.group, t.app_ids.len()), (None, 0));
    /// let t = t
    ///     .with_sender([2; 32])
    ///     .with_first_valid(10)
    ///     .with_last_valid(1010)
    ///     .with_group(Some([3; 32]))
    ///     .with_app_ids(vec![42, 7]);
    /// assert_eq!((t.txid, &*t.tx_type), (Txid([1; 32]), &b"appl"[..]));
    /// assert_eq!((t.sender, t.first_valid, t.last_valid), ([2; 32], 10, 1010));
    /// assert_eq!((t.group, t.app_ids), (Some([3; 32]), vec![42, 7]));
    /// ```
    pub fn new(txid: Txid, tx_type: impl Into<Vec<u8>>) -> Self {
        let tx_type = tx_type.into();
        Self {
            txid,
            tx_type: match static_tx_type(&tx_type) {
                Some(known) => Cow::Borrowed(known),
                None => Cow::Owned(tx_type),
            },
            sender: [0; 32],
            first_valid: 0,
            last_valid: 0,
            group: None,
            app_ids: Vec::new(),
        }
    }

    /// Sets [`sender`](Self::sender): the 32-byte sender address.
    #[must_use]
    pub fn with_sender(mut self, sender: [u8; 32]) -> Self {
        self.sender = sender;
        self
    }

    /// Sets [`first_valid`](Self::first_valid): the first round the transaction is valid in.
    #[must_use]
    pub fn with_first_valid(mut self, first_valid: Round) -> Self {
        self.first_valid = first_valid;
        self
    }

    /// Sets [`last_valid`](Self::last_valid): the last round the transaction is valid in.
    #[must_use]
    pub fn with_last_valid(mut self, last_valid: Round) -> Self {
        self.last_valid = last_valid;
        self
    }

    /// Sets [`group`](Self::group): the 32-byte group id, `None` for none.
    #[must_use]
    pub fn with_group(mut self, group: Option<[u8; 32]>) -> Self {
        self.group = group;
        self
    }

    /// Sets [`app_ids`](Self::app_ids) to `app_ids` as given. The decoders store them distinct,
    /// non-zero and in first-seen order; [`distinct_app_ids`] makes a list so.
    #[must_use]
    pub fn with_app_ids(mut self, app_ids: Vec<u64>) -> Self {
        self.app_ids = app_ids;
        self
    }
}

/// go-algorand's transaction types (`protocol.TxType`): payment, key registration, asset
/// configuration, transfer and freeze, application call, state proof, heartbeat.
pub const KNOWN_TX_TYPES: [&[u8]; 8] = [
    b"pay", b"keyreg", b"acfg", b"axfer", b"afrz", b"appl", b"stpf", b"hb",
];

/// `tx_type` as the static of [`KNOWN_TX_TYPES`] it equals, if any.
fn static_tx_type(tx_type: &[u8]) -> Option<&'static [u8]> {
    KNOWN_TX_TYPES.iter().copied().find(|k| *k == tx_type)
}

/// Decodes a transaction message: one or more concatenated msgpack `SignedTxn` maps (a group).
/// Each txid is over the `txn` map as sent (no `gen`/`gh` added).
///
/// # Errors
///
/// [`DecodeError`] on any malformed input (no transaction at all is
/// [`DecodeError::EmptyMessage`]; bytes after the last map that are not a whole map are an
/// error too); never panics.
pub fn decode_txn_message(bytes: &[u8]) -> Result<Vec<Txn>, DecodeError> {
    let mut r = Reader::new(bytes);
    let raw = |e| DecodeError::raw(e, None);
    let mut scratch = TxnMap::default();
    let mut out = Vec::new();
    while !r.at_end() {
        let m = read_map_len(&mut r, None, "SignedTxn", "a map")?;
        let mut txn = None;
        for _ in 0..m {
            let key_at = r.pos();
            let key = read_key(&mut r, None)?;
            if key == b"txn" {
                super::read::once(&mut txn, None, key_at, || {
                    decode_txn(&mut r, 1, None, &mut scratch, None)
                })?;
            } else {
                r.skip(1).map_err(raw)?;
            }
        }
        out.push(txn.ok_or(DecodeError::MissingField {
            round: None,
            field: "txn",
        })?);
    }
    if out.is_empty() {
        return Err(DecodeError::EmptyMessage);
    }
    Ok(out)
}

/// What to add to a payset entry's `txn` map before hashing (go-algorand
/// `BlockHeader.DecodeSignedTxn`).
pub(super) struct Completion<'m> {
    /// Pre-encoded `gen` value (str), when the entry has `hgi` and the block's genesis id is not
    /// empty.
    pub(super) gen_value: Option<&'m [u8]>,
    /// Pre-encoded `gh` value (bin 32).
    pub(super) gh_value: &'m [u8],
    /// Index of the entry in the payset (for errors).
    pub(super) intra: usize,
}

/// Decodes the `txn` map under `r` (at `depth`), completing it with `completion` (block entries),
/// extracting the fields and hashing its canonical form.
pub(super) fn decode_txn<'a: 'm, 'm>(
    r: &mut Reader<'a>,
    depth: usize,
    completion: Option<&Completion<'m>>,
    scratch: &mut TxnMap<'m>,
    round: Option<Round>,
) -> Result<Txn, DecodeError> {
    let input = r.input();
    let f = read_txn_map(r, depth, completion, scratch, round)?;
    let tx_type = f.tx_type.ok_or(DecodeError::MissingField {
        round,
        field: "txn.type",
    })?;
    let app_ids = distinct_app_ids(
        f.apid
            .into_iter()
            .chain(f.apps.iter().copied())
            .chain(f.access_apps.iter().copied()),
    );
    Ok(Txn {
        txid: scratch.txid(input),
        tx_type: static_tx_type(tx_type)
            .map_or_else(|| Cow::Owned(tx_type.to_vec()), Cow::Borrowed),
        sender: f.sender.unwrap_or([0; 32]),
        first_valid: f.first_valid.unwrap_or(0),
        last_valid: f.last_valid.unwrap_or(0),
        group: f.group,
        app_ids,
    })
}

/// Reads the `txn` map under `r` into `scratch` (its non-empty entries, canonical values, sorted
/// keys, completed with `completion`) and returns the fields of interest.
///
/// # Errors
/// Malformed input, a field of the wrong type, a duplicate key, or (block entries) a `txn` that
/// holds `gen` or `gh` itself.
pub(super) fn read_txn_map<'a: 'm, 'm>(
    r: &mut Reader<'a>,
    depth: usize,
    completion: Option<&Completion<'m>>,
    scratch: &mut TxnMap<'m>,
    round: Option<Round>,
) -> Result<Fields<'a>, DecodeError> {
    let raw = |e| DecodeError::raw(e, round);
    let input = r.input();
    let at = r.pos();
    let n = read_map_len(r, round, "txn", "a map")?;
    scratch.clear(r.pos());
    let mut f = Fields::default();
    for _ in 0..n {
        let key_at = r.pos();
        let key = read_key(r, round)?;
        if let Some(c) = completion
            && (key == b"gen" || key == b"gh")
        {
            return Err(DecodeError::GenesisInBlockTxn {
                round,
                intra: c.intra,
                field: if key == b"gen" { "gen" } else { "gh" },
            });
        }
        let start = r.pos();
        // A scalar value (most of a `txn` map) is read as one token, its canonical form and
        // emptiness as `scan` judges them; a container is scanned, then read again.
        let (canonical, empty) = match r.scalar(depth + 1).map_err(raw)? {
            Some((token, minimal)) => {
                let Scan { canonical, empty } = Scan::of_scalar(token, minimal);
                if !empty {
                    f.read_scalar(key, token, start, round)?;
                }
                (canonical, empty)
            }
            None => {
                let Scan { canonical, empty } = r.scan(depth + 1).map_err(raw)?;
                if !empty {
                    let mut value = Reader::span(input, start, r.pos());
                    f.read(key, &mut value, depth + 1, round)?;
                }
                (canonical, empty)
            }
        };
        let end = r.pos();
        if scratch.push_verbatim(key, key_at, (start, end), Scan { canonical, empty }, input) {
            continue;
        }
        scratch.leave_verbatim(input, depth).map_err(raw)?;
        if empty {
            continue;
        }
        let value = if canonical {
            EntryValue::Span(start, end)
        } else {
            let mut out = ByteBuf::new();
            let empty =
                msgpack::write_canonical(&mut Reader::span(input, start, end), &mut out, depth + 1)
                    .map_err(raw)?;
            if empty {
                continue;
            }
            EntryValue::Owned(out.into_vec())
        };
        scratch.push(Entry { key, key_at, value });
    }
    if let Some(c) = completion {
        if scratch.is_verbatim() {
            scratch.complete_verbatim(c.gen_value, c.gh_value);
        } else {
            // The keys are not among the input's (checked above).
            let mut add = |key: &'static [u8], value| {
                scratch.insert(Entry {
                    key,
                    key_at: at,
                    value: EntryValue::Completion(value),
                });
            };
            if let Some(g) = c.gen_value {
                add(b"gen", g);
            }
            add(b"gh", c.gh_value);
        }
    }
    scratch
        .sort()
        .map_err(|offset| DecodeError::DuplicateKey { round, offset })?;
    Ok(f)
}

/// The fields of a `txn` map the ledger and the handler use.
#[derive(Default)]
pub(super) struct Fields<'a> {
    tx_type: Option<&'a [u8]>,
    sender: Option<[u8; 32]>,
    first_valid: Option<u64>,
    last_valid: Option<u64>,
    group: Option<[u8; 32]>,
    pub(super) apid: Option<u64>,
    apps: Vec<u64>,
    access_apps: Vec<u64>,
}

impl<'a> Fields<'a> {
    /// [`read`](Self::read) for a value that is one scalar `token` (at byte `at`): the same
    /// fields, the same errors.
    fn read_scalar(
        &mut self,
        key: &[u8],
        token: Token<'a>,
        at: usize,
        round: Option<Round>,
    ) -> Result<(), DecodeError> {
        let wrong = |field, expected| DecodeError::wrong_type(round, at, field, expected);
        let uint = |field| match token {
            Token::Uint(v) => Ok(v),
            _ => Err(wrong(field, "an unsigned integer")),
        };
        let bin32 = |field| match token {
            Token::Bin(b) => b.try_into().map_err(|_| wrong(field, "32 bytes of bin")),
            _ => Err(wrong(field, "32 bytes of bin")),
        };
        match key {
            b"type" => match token {
                Token::Str(s) | Token::Bin(s) => self.tx_type = Some(s),
                _ => return Err(wrong("txn.type", "a string")),
            },
            b"snd" => self.sender = Some(bin32("txn.snd")?),
            b"fv" => self.first_valid = Some(uint("txn.fv")?),
            b"lv" => self.last_valid = Some(uint("txn.lv")?),
            b"grp" => self.group = Some(bin32("txn.grp")?),
            b"apid" => self.apid = Some(uint("txn.apid")?),
            // A scalar where an array belongs (nil, an empty array, was left out as empty).
            b"apfa" => return Err(wrong("txn.apfa", "an array")),
            b"al" => return Err(wrong("txn.al", "an array")),
            _ => {}
        }
        Ok(())
    }

    /// Reads `key`'s value from `r` when it is a field of interest.
    fn read(
        &mut self,
        key: &[u8],
        r: &mut Reader<'a>,
        depth: usize,
        round: Option<Round>,
    ) -> Result<(), DecodeError> {
        match key {
            b"type" => self.tx_type = Some(read_bytes(r, round, "txn.type")?),
            b"snd" => self.sender = Some(read_32(r, round, "txn.snd")?),
            b"fv" => self.first_valid = Some(read_uint(r, round, "txn.fv")?),
            b"lv" => self.last_valid = Some(read_uint(r, round, "txn.lv")?),
            b"grp" => self.group = Some(read_32(r, round, "txn.grp")?),
            b"apid" => self.apid = Some(read_uint(r, round, "txn.apid")?),
            b"apfa" => {
                let n = read_array_len(r, round, "txn.apfa")?;
                for _ in 0..n {
                    self.apps.push(read_uint(r, round, "txn.apfa[]")?);
                }
            }
            b"al" => {
                let n = read_array_len(r, round, "txn.al")?;
                for _ in 0..n {
                    let m = read_map_len(r, round, "txn.al[]", "a ResourceRef map")?;
                    for _ in 0..m {
                        if read_key(r, round)? == b"p" {
                            self.access_apps.push(read_uint(r, round, "txn.al[].p")?);
                        } else {
                            r.skip(depth + 2).map_err(|e| DecodeError::raw(e, round))?;
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The distinct non-zero ids of `ids`, in first-seen order, in O(n log n) whatever the input
/// (a peer controls how many foreign apps a message names: a quadratic scan would let one
/// message burn CPU by the square of its size). A group's apps are the distinct ids of its
/// transactions' [`Txn::app_ids`].
///
/// ```
/// use txgate_algorand::codec::distinct_app_ids;
/// assert_eq!(distinct_app_ids([7, 0, 3, 7, 3].into_iter()), vec![7, 3]);
/// ```
pub fn distinct_app_ids(ids: impl Iterator<Item = u64>) -> Vec<u64> {
    /// Up to this many ids a linear scan beats a set.
    const SMALL: usize = 16;
    let mut out: Vec<u64> = Vec::new();
    let mut seen: Option<std::collections::HashSet<u64>> = None;
    for id in ids.filter(|&id| id != 0) {
        let new = match &mut seen {
            Some(set) => set.insert(id),
            None if out.len() < SMALL => !out.contains(&id),
            None => {
                let mut set: std::collections::HashSet<u64> = out.iter().copied().collect();
                let new = set.insert(id);
                seen = Some(set);
                new
            }
        };
        if new {
            out.push(id);
        }
    }
    out
}
