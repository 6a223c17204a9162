//! The redb-backed ledger with per-round txid blooms (being written).
