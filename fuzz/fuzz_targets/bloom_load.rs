//! Arbitrary bytes into every txgate-bloom loader: an error or a filter, never a panic; a filter
//! that loads writes the same bytes back (format version 2), or, from version 1, the version-2
//! form of the same filter (the same header and blocks with the version set to 2 and the checksum
//! appended); a damaged version-2 filter (its checksum no longer matching) never loads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use txgate_bloom::{AnyBloom, AtomicBlockedBloom, Block256, Block512, BlockedBloom, Filter, Sbbf};
use txgate_testkit::bloom_format::written_back;

fuzz_target!(|bytes: &[u8]| {
    let written = [
        BlockedBloom::<Block256>::from_layout_bytes(bytes).map(|f| f.to_bytes()),
        BlockedBloom::<Block512>::from_layout_bytes(bytes).map(|f| f.to_bytes()),
        AtomicBlockedBloom::<Block256>::from_layout_bytes(bytes).map(|f| f.to_bytes()),
        AtomicBlockedBloom::<Block512>::from_layout_bytes(bytes).map(|f| f.to_bytes()),
    ];
    let loaded = written.iter().filter(|w| w.is_ok()).count();
    // At most one layout's pair of loaders accepts the bytes, and both of that pair do.
    assert!(loaded == 0 || loaded == 2, "{loaded} loaders accepted");
    for w in written.into_iter().flatten() {
        assert_eq!(w, written_back(bytes));
    }
    match AnyBloom::from_bytes(bytes) {
        Ok(filter) => {
            assert_eq!(loaded, 2);
            assert_eq!(filter.to_bytes(), written_back(bytes));
            let _ = filter.contains(&bytes.len());
        }
        Err(_) => assert_eq!(loaded, 0),
    }
    if let Ok((filter, used)) = Sbbf::from_parquet(bytes) {
        assert_eq!(filter.to_parquet(), &bytes[..used]);
        let _ = filter.contains(bytes);
    }
    if let Ok(filter) = Sbbf::from_bitset(bytes) {
        assert_eq!(filter.bitset(), bytes);
    }
});
