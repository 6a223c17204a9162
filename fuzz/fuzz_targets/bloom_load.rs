//! Arbitrary bytes into every txgate-bloom loader: an error or a filter, never a panic; a filter
//! that loads writes the same bytes back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use txgate_bloom::{AtomicBlockedBloom, BlockedBloom, Sbbf};

fuzz_target!(|bytes: &[u8]| {
    if let Ok(filter) = BlockedBloom::from_bytes(bytes) {
        assert_eq!(filter.to_bytes(), bytes);
        let _ = filter.contains(&bytes.len());
    }
    if let Ok(filter) = AtomicBlockedBloom::from_bytes(bytes) {
        assert_eq!(filter.to_bytes(), bytes);
    }
    if let Ok((filter, used)) = Sbbf::from_parquet(bytes) {
        assert_eq!(filter.to_parquet(), &bytes[..used]);
        let _ = filter.contains(bytes);
    }
    if let Ok(filter) = Sbbf::from_bitset(bytes) {
        assert_eq!(filter.bitset(), bytes);
    }
});
