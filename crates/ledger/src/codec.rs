//! Algorand msgpack codec (being written: the types and signatures below are the contract the
//! store and the handler build on).

use crate::{Round, Txid};

/// Why bytes are not a block or a transaction.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Placeholder until the codec lands.
    #[error("msgpack decoding failed: {0}")]
    Malformed(String),
}

/// One transaction of a block (or of a transaction message), with what the ledger and the
/// handler need from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Txn {
    /// The txid by the go-algorand rule.
    pub txid: Txid,
    /// The `type` field as bytes (`pay`, `appl`, ...).
    pub tx_type: Vec<u8>,
    /// The sender address (`snd`), 32 bytes (zero if absent).
    pub sender: [u8; 32],
    /// First valid round (`fv`, 0 if absent).
    pub first_valid: Round,
    /// Last valid round (`lv`, 0 if absent).
    pub last_valid: Round,
    /// The group id (`grp`), if any.
    pub group: Option<[u8; 32]>,
    /// App ids: `apid`, foreign apps (`apfa`) and access-list app references; 0 dropped;
    /// distinct, in first-seen order.
    pub app_ids: Vec<u64>,
}

/// A decoded block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Header `rnd`.
    pub round: Round,
    /// Header `gen` (genesis id), bytes.
    pub genesis_id: Vec<u8>,
    /// Header `gh` (genesis hash).
    pub genesis_hash: [u8; 32],
    /// Header `ts` (seconds since the Unix epoch).
    pub timestamp: i64,
    /// Header `txn` (payset commitment), if present.
    pub txn_commitment: Option<[u8; 32]>,
    /// The payset in block order.
    pub txns: Vec<Txn>,
}

/// Decodes a block: msgpack `{block, cert}` or a bare block.
///
/// # Errors
///
/// [`DecodeError`] on any malformed input; never panics.
pub fn decode_block(bytes: &[u8]) -> Result<Block, DecodeError> {
    let _ = bytes;
    Err(DecodeError::Malformed("codec not implemented yet".into()))
}

/// Decodes a transaction message: one or more concatenated msgpack `SignedTxn` maps (a group).
///
/// # Errors
///
/// [`DecodeError`] on any malformed input; never panics.
pub fn decode_txn_message(bytes: &[u8]) -> Result<Vec<Txn>, DecodeError> {
    let _ = bytes;
    Err(DecodeError::Malformed("codec not implemented yet".into()))
}
