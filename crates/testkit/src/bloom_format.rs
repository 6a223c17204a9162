//! Byte-level helpers for txgate-bloom's serialized form (see `txgate_bloom::format`): the
//! version-1 form of a filter, and what a loader must write back for any bytes it accepts.
//!
//! Format rule used here: version 1 is version 2 without the trailing XXH3-64 checksum, with
//! the version (a little-endian `u16` at byte 8) set to 1; a filter loaded from either writes version 2.
//! The rule is written out here from the format's definition rather than taken from
//! txgate-bloom, which takes this crate as a dev-dependency (and whose tests check that the
//! two agree).

/// Bytes of the trailing checksum: one XXH3-64 value, little-endian.
pub const CHECKSUM_BYTES: usize = 8;

/// The low byte of the header's little-endian `u16` format version (the high byte is 0).
const VERSION_BYTE: usize = 8;

/// The version-1 form of a version-2 encoding: the header and blocks without the checksum.
///
/// # Panics
/// Panics if `v2` is shorter than a header and a checksum.
pub fn version_1(v2: &[u8]) -> Vec<u8> {
    let mut v1 = v2[..v2.len() - CHECKSUM_BYTES].to_vec();
    v1[VERSION_BYTE] = 1;
    v1
}

/// What a filter loaded from `bytes` must write back: the same bytes, or for version 1 the
/// version-2 form of the same filter (version set to 2, the XXH3-64 checksum of that appended).
///
/// # Panics
/// Panics if `bytes` is 8 bytes or shorter (no loader accepts such input).
pub fn written_back(bytes: &[u8]) -> Vec<u8> {
    if bytes[VERSION_BYTE] == 1 {
        let mut v2 = bytes.to_vec();
        v2[VERSION_BYTE] = 2;
        let checksum = xxhash_rust::xxh3::xxh3_64(&v2);
        v2.extend_from_slice(&checksum.to_le_bytes());
        v2
    } else {
        bytes.to_vec()
    }
}
