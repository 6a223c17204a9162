//! The transaction handler pipeline (being written).
