//! txgate-ledger: the persistent ledger with per-round txid blooms, and the tx handler.
//!
//! Not implemented yet: this crate is an empty placeholder in the workspace so that the other
//! crates can be laid out around it. It exports nothing.
