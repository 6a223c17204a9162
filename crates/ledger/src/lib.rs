//! txgate-ledger: wires txgate-bloom and txgate-ratelimit into a node's transaction ingress.
//!
//! Modules:
//! - [`store`]: the redb-backed ledger of Algorand blocks with per-round txid blooms over the
//!   round window (`lookup_txid`, `find_txid`).
//! - [`handler`]: go-algorand's transaction handler pipeline (dedup, decode, committed check,
//!   app rate limiter under congestion, bounded backlog, workers, pool sink).
//!
//! The Algorand wire format (blocks, txids, sources) is [`txgate_algorand`]; [`Round`] and
//! [`Txid`] are re-exported from it.

pub mod handler;
pub mod store;

pub use txgate_algorand::{Round, Txid, TxidParseError};

/// The ledger as the tx handler's committed check: [`store::Ledger::find_txid`] over the
/// transaction's validity window (go-algorand's `TxHandler` asks the ledger whether a txid is
/// committed in `FirstValid..=LastValid`). Only the latest MaxTxnLife + 1 rounds are searched;
/// a ledger error counts as "not committed" (the transaction pool catches a real duplicate).
impl handler::CommittedTxids for store::Ledger {
    fn is_committed(&self, txid: &Txid, first: Round, last: Round) -> bool {
        first <= last && matches!(self.find_txid(txid, first..=last), Ok(Some(_)))
    }
}
