//! Synthetic Algorand blocks and transaction messages, encoded exactly as go-algorand encodes
//! real ones, for the CLI's built-in workload and the ledger benches.
//!
//! [`encode_block`] writes msgpack `{"block": {header, "txns": [...]}, "cert": {}}` in canonical
//! form (sorted keys, empty fields omitted, smallest integers; see [`crate::codec`]) with a
//! correct flat payset commitment (`txn` = SHA-512/256 of `"PF"` and the payset bytes), so
//! [`decode_block`](crate::codec::decode_block) reads it like a real block and
//! [`Block::verify_payset`](crate::codec::Block::verify_payset) accepts it.
//! [`encode_txn_message`] writes the same transactions as a peer would gossip them
//! (concatenated `SignedTxn` maps whose `txn` holds `gen` and `gh`); their txids equal those of
//! the block form.
//!
//! What is synthetic: the signature (`sig`) is 64 bytes mixed from the transaction's own `txn`
//! map (as a block entry holds it), which make entries as large as signed ones and as varied,
//! but verify nothing; the header holds only `gen`, `gh`, `rnd`, `ts`,
//! `txn` and `txns`; the certificate is empty. Every transaction carries the minimum fee
//! ([`MIN_FEE`]).
//!
//! ```
//! use txgate_algorand::codec::decode_txn_message;
//! use txgate_algorand::synth::{SynthTxn, encode_txn_message};
//!
//! let call = SynthTxn::app_call([3; 32], 100, 1100, vec![42, 7]);
//! let msg = encode_txn_message(&[call.clone()], "testnet-v1.0", &[9; 32]);
//! let txns = decode_txn_message(&msg)?;
//! assert_eq!(txns[0].app_ids, vec![42, 7]);
//! assert_eq!(txns[0].txid, call.txid("testnet-v1.0", &[9; 32]));
//! # Ok::<(), txgate_algorand::codec::DecodeError>(())
//! ```

use rmp::encode::ByteBuf;

use crate::codec::{
    TxidHasher, consensus_version, payset_digest, put_array_len, put_bin, put_bool, put_int,
    put_map_len, put_str, put_uint, synth_commitments,
};
use crate::ids::{Round, Txid};

/// The fee written into every synthetic transaction, in microalgos: go-algorand's `MinTxnFee`
/// consensus parameter (1000 since the first protocol).
pub const MIN_FEE: u64 = 1000;

/// A transaction description for the synthetic encoder.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SynthTxn {
    /// The `type` field (`pay`, `appl`, `axfer`, ...). Must not be empty: a transaction without
    /// a type does not decode.
    pub tx_type: Vec<u8>,
    /// Sender address (`snd`); all zero leaves the field out, as go-algorand does.
    pub sender: [u8; 32],
    /// First valid round (`fv`).
    pub first_valid: Round,
    /// Last valid round (`lv`).
    pub last_valid: Round,
    /// App ids: the first is the application id (`apid`, 0 = creation), the rest are foreign
    /// apps (`apfa`), whatever the type.
    pub app_ids: Vec<u64>,
    /// Group id (`grp`).
    pub group: Option<[u8; 32]>,
    /// Note (`note`), free bytes: makes txids distinct and entries larger.
    pub note: Vec<u8>,
}

impl SynthTxn {
    /// A payment (`pay`) from `sender` valid in `first_valid..=last_valid`.
    pub fn payment(sender: [u8; 32], first_valid: Round, last_valid: Round) -> Self {
        Self {
            tx_type: b"pay".to_vec(),
            sender,
            first_valid,
            last_valid,
            ..Self::default()
        }
    }

    /// An application call (`appl`) to `app_ids[0]` with foreign apps `app_ids[1..]`.
    pub fn app_call(
        sender: [u8; 32],
        first_valid: Round,
        last_valid: Round,
        app_ids: Vec<u64>,
    ) -> Self {
        Self {
            tx_type: b"appl".to_vec(),
            sender,
            first_valid,
            last_valid,
            app_ids,
            ..Self::default()
        }
    }

    /// The txid this transaction gets on a network with this genesis id and hash (in a block or
    /// in a message: the same).
    pub fn txid(&self, genesis_id: &str, genesis_hash: &[u8; 32]) -> Txid {
        let mut map = ByteBuf::new();
        self.write_txn(&mut map, Some(genesis_id.as_bytes()), Some(genesis_hash));
        TxidHasher::txid_of(map.as_slice())
    }

    /// Writes the canonical `txn` map, with `gen`/`gh` when given (and non-empty).
    fn write_txn(
        &self,
        out: &mut ByteBuf,
        genesis_id: Option<&[u8]>,
        genesis_hash: Option<&[u8; 32]>,
    ) {
        let apid = self.app_ids.first().copied().filter(|&a| a != 0);
        let apfa = self.app_ids.get(1..).filter(|r| !r.is_empty());
        let genesis_id = genesis_id.filter(|g| !g.is_empty());
        let sender = Some(&self.sender).filter(|s| **s != [0; 32]);
        let note = Some(&self.note[..]).filter(|n| !n.is_empty());
        let tx_type = Some(&self.tx_type[..]).filter(|t| !t.is_empty());
        let fv = Some(self.first_valid).filter(|&v| v != 0);
        let lv = Some(self.last_valid).filter(|&v| v != 0);
        // Keys in sorted order: apfa apid fee fv gen gh grp lv note snd type.
        let n = [
            apfa.is_some(),
            apid.is_some(),
            true,
            fv.is_some(),
            genesis_id.is_some(),
            genesis_hash.is_some(),
            self.group.is_some(),
            lv.is_some(),
            note.is_some(),
            sender.is_some(),
            tx_type.is_some(),
        ]
        .iter()
        .filter(|p| **p)
        .count();
        put_map_len(out, n);
        if let Some(apps) = apfa {
            put_str(out, b"apfa");
            put_array_len(out, apps.len());
            for &a in apps {
                put_uint(out, a);
            }
        }
        if let Some(a) = apid {
            put_str(out, b"apid");
            put_uint(out, a);
        }
        put_str(out, b"fee");
        put_uint(out, MIN_FEE);
        if let Some(v) = fv {
            put_str(out, b"fv");
            put_uint(out, v);
        }
        if let Some(g) = genesis_id {
            put_str(out, b"gen");
            put_str(out, g);
        }
        if let Some(gh) = genesis_hash {
            put_str(out, b"gh");
            put_bin(out, gh);
        }
        if let Some(g) = &self.group {
            put_str(out, b"grp");
            put_bin(out, g);
        }
        if let Some(v) = lv {
            put_str(out, b"lv");
            put_uint(out, v);
        }
        if let Some(nt) = note {
            put_str(out, b"note");
            put_bin(out, nt);
        }
        if let Some(s) = sender {
            put_str(out, b"snd");
            put_bin(out, s);
        }
        if let Some(t) = tx_type {
            put_str(out, b"type");
            put_str(out, t);
        }
    }

    /// The placeholder signature, from `txn_map`, the transaction's `txn` map as a block entry
    /// holds it (without `gen` and `gh`): 64 bytes that differ with every field, at the cost of
    /// one multiply per 8 bytes. Hashing the txid instead takes three SHA-512 compressions per
    /// transaction: more than half of the time to encode the CLI's built-in workload (AMD EPYC
    /// Zen 4). The mixing step is SplitMix64's multiply-xorshift (Steele, Lea and Flood 2014);
    /// nothing relies on its quality.
    fn signature(txn_map: &[u8]) -> [u8; 64] {
        const K: u64 = 0xBF58_476D_1CE4_E5B9;
        let step = |h: u64| (h ^ (h >> 29)).wrapping_mul(K);
        let mut h = txn_map.len() as u64;
        for word in txn_map.chunks(8) {
            let mut b = [0u8; 8];
            b[..word.len()].copy_from_slice(word);
            h = step(h ^ u64::from_le_bytes(b));
        }
        let mut out = [0u8; 64];
        for chunk in out.chunks_exact_mut(8) {
            h = step(h.wrapping_add(K));
            chunk.copy_from_slice(&h.to_le_bytes());
        }
        out
    }
}

/// Encodes a block of `txns` for round `round` as algod serves it: canonical msgpack
/// `{"block": {...}, "cert": {}}` with `hgi` set on every entry (when `genesis_id` is not
/// empty), `gen`/`gh` left out of each `txn` (the header holds them), and the header's `txn` set
/// to the flat payset commitment. `timestamp` is seconds since the Unix epoch. An empty `txns`
/// writes a block without `txns` and with the commitment of the empty (nil) payset.
///
/// Cost: per transaction, one map encoding and a multiply per 8 of its bytes (its placeholder
/// signature); then the payset commitment's hashes.
pub fn encode_block(
    round: Round,
    genesis_id: &str,
    genesis_hash: &[u8; 32],
    timestamp: i64,
    txns: &[SynthTxn],
) -> Vec<u8> {
    encode(round, genesis_id, genesis_hash, timestamp, txns, None)
}

/// [`encode_block`] with header `proto` = go-algorand consensus version `v{version}` (its
/// version string, e.g. the spec URL of v42) and the payset commitments that protocol defines:
/// `txn` flat (v11 to v25) or the SHA-512/256 Merkle root (v26 and later), `txn256` from v34,
/// `txn512` from v41 (see [`Block::verify`](crate::codec::Block::verify)).
///
/// ```
/// use txgate_algorand::codec::{Expected, decode_block};
/// use txgate_algorand::synth::{SynthTxn, encode_block_with_protocol};
///
/// let txns = [SynthTxn::payment([7; 32], 10, 1010), SynthTxn::payment([8; 32], 10, 1010)];
/// let bytes = encode_block_with_protocol(11, "testnet-v1.0", &[1; 32], 0, &txns, 42);
/// let block = decode_block(&bytes)?;
/// assert!(block.txn256_commitment.is_some() && block.txn512_commitment.is_some());
/// block.verify(&bytes, &Expected::round(11))?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Panics
/// When `version` is not one of go-algorand's protocols v11 to v42 (a caller's constant).
pub fn encode_block_with_protocol(
    round: Round,
    genesis_id: &str,
    genesis_hash: &[u8; 32],
    timestamp: i64,
    txns: &[SynthTxn],
    version: u32,
) -> Vec<u8> {
    assert!(
        (11..=42).contains(&version),
        "no go-algorand protocol v{version} with a supported payset commitment"
    );
    encode(
        round,
        genesis_id,
        genesis_hash,
        timestamp,
        txns,
        Some(version),
    )
}

fn encode(
    round: Round,
    genesis_id: &str,
    genesis_hash: &[u8; 32],
    timestamp: i64,
    txns: &[SynthTxn],
    version: Option<u32>,
) -> Vec<u8> {
    let gen_id = genesis_id.as_bytes();
    let mut payset = ByteBuf::with_capacity(txns.len() * 256 + 8);
    put_array_len(&mut payset, txns.len());
    let mut entry_txn = ByteBuf::new();
    for t in txns {
        entry_txn.as_mut_vec().clear();
        t.write_txn(&mut entry_txn, None, None);
        // SignedTxnInBlock keys in sorted order: hgi sig txn.
        let hgi = !gen_id.is_empty();
        put_map_len(&mut payset, 2 + usize::from(hgi));
        if hgi {
            put_str(&mut payset, b"hgi");
            put_bool(&mut payset, true);
        }
        put_str(&mut payset, b"sig");
        put_bin(&mut payset, &SynthTxn::signature(entry_txn.as_slice()));
        put_str(&mut payset, b"txn");
        payset.as_mut_vec().extend_from_slice(entry_txn.as_slice());
    }
    // An empty payset is absent from the block and commits as nil (see `payset_commit_flat`).
    let payset_bytes = if txns.is_empty() {
        &[][..]
    } else {
        payset.as_slice()
    };
    let (proto, commitment, txn256, txn512) = match version {
        None => (None, Some(payset_digest(payset_bytes)), None, None),
        Some(v) => {
            let (c, c256, c512) = synth_commitments(
                payset_bytes,
                gen_id,
                genesis_hash,
                v >= 26,
                v >= 34,
                v >= 41,
            )
            .expect("the synthetic payset decodes");
            (consensus_version(v), c, c256, c512)
        }
    };

    let mut out = ByteBuf::with_capacity(payset.as_slice().len() + 256);
    put_map_len(&mut out, 2);
    put_str(&mut out, b"block");
    // Header keys in sorted order: gen gh proto rnd ts txn txn256 txn512 txns.
    let n = 1
        + usize::from(proto.is_some())
        + usize::from(commitment.is_some())
        + usize::from(txn256.is_some())
        + usize::from(txn512.is_some())
        + usize::from(!gen_id.is_empty())
        + usize::from(round != 0)
        + usize::from(timestamp != 0)
        + usize::from(!txns.is_empty());
    put_map_len(&mut out, n);
    if !gen_id.is_empty() {
        put_str(&mut out, b"gen");
        put_str(&mut out, gen_id);
    }
    put_str(&mut out, b"gh");
    put_bin(&mut out, genesis_hash);
    if let Some(p) = &proto {
        put_str(&mut out, b"proto");
        put_str(&mut out, p.as_bytes());
    }
    if round != 0 {
        put_str(&mut out, b"rnd");
        put_uint(&mut out, round);
    }
    if timestamp != 0 {
        put_str(&mut out, b"ts");
        put_int(&mut out, timestamp);
    }
    if let Some(c) = commitment {
        put_str(&mut out, b"txn");
        put_bin(&mut out, &c);
    }
    if let Some(c) = txn256 {
        put_str(&mut out, b"txn256");
        put_bin(&mut out, &c);
    }
    if let Some(c) = txn512 {
        put_str(&mut out, b"txn512");
        put_bin(&mut out, &c);
    }
    if !txns.is_empty() {
        put_str(&mut out, b"txns");
        out.as_mut_vec().extend_from_slice(payset.as_slice());
    }
    put_str(&mut out, b"cert");
    put_map_len(&mut out, 0);
    out.into_vec()
}

/// Encodes `txns` as one gossip message (what go-algorand's `TxnHandler` receives): the
/// concatenated canonical `SignedTxn` maps `{"sig", "txn"}`, each `txn` holding `gen` (when not
/// empty) and `gh`. Decoding it gives the txids [`encode_block`] gives for the same transactions
/// on the same network. To form a real group, give every transaction the same `group`.
pub fn encode_txn_message(txns: &[SynthTxn], genesis_id: &str, genesis_hash: &[u8; 32]) -> Vec<u8> {
    let mut out = ByteBuf::with_capacity(txns.len() * 256);
    let mut map = ByteBuf::new();
    let mut entry_txn = ByteBuf::new();
    for t in txns {
        // The block entry's `txn` map: the signature is the one `encode_block` writes.
        entry_txn.as_mut_vec().clear();
        t.write_txn(&mut entry_txn, None, None);
        map.as_mut_vec().clear();
        t.write_txn(&mut map, Some(genesis_id.as_bytes()), Some(genesis_hash));
        put_map_len(&mut out, 2);
        put_str(&mut out, b"sig");
        put_bin(&mut out, &SynthTxn::signature(entry_txn.as_slice()));
        put_str(&mut out, b"txn");
        out.as_mut_vec().extend_from_slice(map.as_slice());
    }
    out.into_vec()
}
