//! Gossip messages: a block's groups written again as the transaction messages peers send.

use rmp::encode::ByteBuf;

use super::block::decode_block;
use super::entry::{Genesis, SIGNATURE_KEYS, decode_entry};
use super::error::DecodeError;
use super::msgpack::{self, Reader, Scan, put_str};
use super::txid::TxnMap;

/// The block in `bytes` as the gossip messages its groups were sent as: one message per group
/// (consecutive payset entries with the same `grp`; a transaction without `grp` is a group of
/// its own), each the concatenated `SignedTxn` maps of its transactions, what go-algorand's
/// `TxnHandler` receives when a peer sends a committed group again.
///
/// Each `SignedTxn` map holds the entry's signature fields (`lsig`, `msig`, `sgnr`, `sig`, those
/// present) and its `txn` completed as for its txid (go-algorand
/// `BlockHeader.DecodeSignedTxn`): `gen` put back when the entry has `hgi` (and the genesis id
/// is not empty), `gh` always. Everything is written canonically (sorted keys, empty values
/// left out, smallest forms), so for a block a go-algorand node wrote, the values are the
/// block's own bytes; a signature value with no canonical form (a duplicate key inside) is
/// copied as stored. Decoding a message with
/// [`decode_txn_message`](super::decode_txn_message) gives the block entries' txids.
///
/// # Errors
///
/// [`DecodeError`] when `bytes` are not a block ([`decode_block`]'s
/// errors): a block that decodes always gives its messages.
///
/// # Examples
///
/// ```
/// use txgate_algorand::codec::{decode_block, decode_txn_message, gossip_messages};
/// use txgate_algorand::synth::{SynthTxn, encode_block};
///
/// let group = Some([9; 32]);
/// let txns = [
///     SynthTxn::payment([7; 32], 10, 1010),
///     SynthTxn { group, ..SynthTxn::payment([8; 32], 10, 1010) },
///     SynthTxn { group, ..SynthTxn::app_call([8; 32], 10, 1010, vec![42]) },
/// ];
/// let bytes = encode_block(11, "testnet-v1.0", &[1; 32], 1_700_000_000, &txns);
/// let block = decode_block(&bytes)?;
/// let messages = gossip_messages(&bytes)?;
/// assert_eq!(messages.len(), 2);
/// let sent = decode_txn_message(&messages[1])?;
/// assert_eq!(sent, block.txns[1..]);
/// # Ok::<(), txgate_algorand::codec::DecodeError>(())
/// ```
pub fn gossip_messages(bytes: &[u8]) -> Result<Vec<Vec<u8>>, DecodeError> {
    let block = decode_block(bytes)?;
    let round = Some(block.round);
    let genesis = Genesis::new(&block.genesis_id, &block.genesis_hash);
    let mut scratch = TxnMap::default();
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut last_group = None;
    for (intra, (&at, txn)) in block.entry_offsets.iter().zip(&block.txns).enumerate() {
        let mut r = Reader::span(bytes, at, bytes.len());
        let (_, rest) = decode_entry(&mut r, 0, &genesis, intra, &mut scratch, round)?;
        let signatures: Vec<(&[u8], Vec<u8>)> = SIGNATURE_KEYS
            .iter()
            .zip(rest.signatures)
            .filter_map(|(key, span)| Some((*key, canonical_value(bytes, span?)?)))
            .collect();
        let mut msg = ByteBuf::new();
        msgpack::put_map_len(&mut msg, signatures.len() + 1);
        for (key, value) in &signatures {
            put_str(&mut msg, key);
            msg.as_mut_vec().extend_from_slice(value);
        }
        put_str(&mut msg, b"txn");
        scratch.write_to(bytes, &mut msg);
        match (txn.group, last_group, out.last_mut()) {
            (Some(g), Some(prev), Some(m)) if g == prev => m.extend_from_slice(msg.as_slice()),
            _ => out.push(msg.into_vec()),
        }
        last_group = txn.group;
    }
    Ok(out)
}

/// The canonical bytes of the value at `span` (`start`, `end` and its scan), `None` when it is
/// empty (canonical maps leave it out). A value with no canonical form (a duplicate or nil key
/// inside) is given as stored.
fn canonical_value(bytes: &[u8], (start, end, scan): (usize, usize, Scan)) -> Option<Vec<u8>> {
    let stored = &bytes[start..end];
    if scan.canonical {
        return (!scan.empty).then(|| stored.to_vec());
    }
    let mut value = ByteBuf::new();
    match msgpack::write_canonical(&mut Reader::span(bytes, start, end), &mut value, 2) {
        Ok(true) => None,
        Ok(false) => Some(value.into_vec()),
        Err(_) => Some(stored.to_vec()),
    }
}
