//! Origins (who sent a transaction) and the salted keys derived from (app id, origin).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use data_encoding::HEXLOWER_PERMISSIVE;

use blake2::{Blake2b, Digest, digest::consts::U32};
use blake2b_simd::many::{HashManyJob, hash_many};

/// Where a transaction group came from, reduced to the bytes that identify a sender.
///
/// The reduction is go-algorand's `wsPeer.RoutingAddr` (network/wsPeer.go), whose bytes its
/// `appRateLimiter` keys by (data/appRateLimiter.go, `txgroupToKeys`, which keeps the first 16):
/// - an IPv4 address is its 4 bytes;
/// - an IPv6 address whose first 10 bytes are zero is its last 4 bytes, whatever bytes 10 and 11
///   are: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), the loopback `::1`
///   (origin `0.0.0.1`) and the unspecified `::` (origin `0.0.0.0`) alike;
/// - any other IPv6 address is its /64 prefix (8 bytes), since one host commonly owns a whole
///   /64;
/// - any other peer id is its first 16 bytes (go-algorand's p2p peers route by their peer id,
///   `gsPeer.RoutingAddr` in network/p2pNetwork.go).
///
/// # Examples
///
/// ```
/// use std::net::{IpAddr, Ipv4Addr};
/// use txgate_ratelimit::Origin;
///
/// let v4 = Origin::from_ip("192.0.2.1".parse::<IpAddr>().unwrap());
/// assert_eq!(v4.as_bytes(), &[192, 0, 2, 1]);
/// let mapped = Origin::from_ip("::ffff:192.0.2.1".parse::<IpAddr>().unwrap());
/// assert_eq!(mapped, v4);
/// let loopback = Origin::from_ip("::1".parse::<IpAddr>().unwrap());
/// assert_eq!(loopback.as_bytes(), &[0, 0, 0, 1]);
/// let v6 = Origin::from_ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd".parse::<IpAddr>().unwrap());
/// assert_eq!(v6.as_bytes(), &[0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2]);
/// assert_eq!(Origin::from_peer_id(&[9; 40]).as_bytes(), &[9; 16]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    // Invariant: `len <= 16`; bytes past `len` are zero.
    len: u8,
    bytes: [u8; 16],
}

impl Origin {
    /// The origin of an IP address: 4 bytes for IPv4 and for IPv6 addresses whose first 10 bytes
    /// are zero, the /64 prefix for other IPv6 addresses (see [`Origin`] for the rule's source).
    pub fn from_ip(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Self::from_ipv4(v4),
            IpAddr::V6(v6) => Self::from_ipv6(v6),
        }
    }

    /// The origin of an IPv4 address: its 4 bytes.
    pub fn from_ipv4(ip: Ipv4Addr) -> Self {
        Self::from_peer_id(&ip.octets())
    }

    /// The origin of an IPv6 address: its last 4 bytes if its first 10 bytes are zero (bytes 10
    /// and 11 are not looked at, so `::ffff:a.b.c.d`, `::a.b.c.d` and `::1` all reduce to 4
    /// bytes), else its /64 prefix (the first 8 bytes).
    ///
    /// The rule is go-algorand's `wsPeer.RoutingAddr` (network/wsPeer.go): "if
    /// `isZeros(ip[0:10])` return `ip[12:16]`, else `ip[0:8]`". It is wider than
    /// [`Ipv6Addr::to_ipv4_mapped`] (which also wants bytes 10 and 11 to be `0xff`) and than
    /// [`Ipv6Addr::to_ipv4`] (which wants them to be `0x0000` or `0xffff`).
    ///
    /// ```
    /// use txgate_ratelimit::Origin;
    /// let o = |s: &str| Origin::from_ipv6(s.parse().unwrap());
    /// assert_eq!(o("::1").as_bytes(), &[0, 0, 0, 1]);
    /// assert_eq!(o("::1234:5:6").as_bytes(), &[0, 5, 0, 6]);
    /// assert_eq!(o("0:0:0:0:1::").as_bytes(), &[0; 8]); // byte 9 is 1: a /64 prefix
    /// ```
    pub fn from_ipv6(ip: Ipv6Addr) -> Self {
        let octets = ip.octets();
        if octets[..10].iter().all(|&b| b == 0) {
            Self::from_peer_id(&octets[12..])
        } else {
            Self::from_peer_id(&octets[..8])
        }
    }

    /// The origin of an opaque peer id: its first 16 bytes (all of it if shorter).
    pub fn from_peer_id(id: &[u8]) -> Self {
        let len = id.len().min(16);
        let mut bytes = [0; 16];
        bytes[..len].copy_from_slice(&id[..len]);
        Self {
            len: len as u8,
            bytes,
        }
    }

    /// The identifying bytes (0 to 16 of them).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl From<IpAddr> for Origin {
    fn from(ip: IpAddr) -> Self {
        Self::from_ip(ip)
    }
}

impl From<Ipv4Addr> for Origin {
    fn from(ip: Ipv4Addr) -> Self {
        Self::from_ipv4(ip)
    }
}

impl From<Ipv6Addr> for Origin {
    fn from(ip: Ipv6Addr) -> Self {
        Self::from_ipv6(ip)
    }
}

/// An origin in text: 4 bytes as an IPv4 address (`192.0.2.1`), 8 bytes as an IPv6 /64 prefix
/// (`2001:db8:1:2::/64`), any other length as `peer:` and lowercase hex (`peer:0a0b0c`; the
/// empty origin is `peer:`). [`FromStr`] reads every form back to an equal origin.
///
/// An origin does not remember how it was made: a 4-byte peer id *is* the IPv4 origin of the
/// same bytes (the limiter keys them alike), so it prints as that address.
///
/// ```
/// use txgate_ratelimit::Origin;
/// let v6: Origin = "2001:db8:1:2:aaaa:bbbb:cccc:dddd".parse()?;
/// assert_eq!(v6.to_string(), "2001:db8:1:2::/64");
/// assert_eq!(v6.to_string().parse::<Origin>()?, v6);
/// assert_eq!(Origin::from_peer_id(b"node-7").to_string(), "peer:6e6f64652d37");
/// # Ok::<(), txgate_ratelimit::OriginParseError>(())
/// ```
impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self.as_bytes() {
            [a, b, c, d] => Ipv4Addr::new(a, b, c, d).fmt(f),
            [..] if self.len == 8 => {
                let mut octets = [0; 16];
                octets[..8].copy_from_slice(self.as_bytes());
                write!(f, "{}/64", Ipv6Addr::from(octets))
            }
            _ => write!(f, "peer:{}", HEXLOWER_PERMISSIVE.encode(self.as_bytes())),
        }
    }
}

/// Text that is not an origin: neither an IP address, an IPv6 `/64` prefix, nor `peer:` followed
/// by at most 16 bytes of hex.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "not an origin (an IP address, an IPv6 /64 prefix, or peer:<hex of up to 16 bytes>): {0:?}"
)]
pub struct OriginParseError(pub String);

/// Reads the forms [`Display`](fmt::Display) writes, and any IP address (reduced as
/// [`Origin::from_ip`] does). An IPv6 address written with `/64` is the prefix: its first 8
/// bytes, host bits dropped (`::ffff:1.2.3.4/64` is `::/64`, not `1.2.3.4`).
///
/// # Errors
///
/// [`OriginParseError`] for anything else, including a prefix length other than 64 and a peer id
/// of more than 16 bytes (an origin keeps only 16: parsing longer text would silently merge ids).
impl FromStr for Origin {
    type Err = OriginParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || OriginParseError(s.to_owned());
        if let Some(hex) = s.strip_prefix("peer:") {
            let bytes = HEXLOWER_PERMISSIVE
                .decode(hex.as_bytes())
                .map_err(|_| err())?;
            return if bytes.len() <= 16 {
                Ok(Self::from_peer_id(&bytes))
            } else {
                Err(err())
            };
        }
        if let Some(prefix) = s.strip_suffix("/64") {
            // A prefix stands for its first 8 bytes, host bits (if written) dropped. Not
            // `from_ipv6`: that reduces an address with 10 leading zero bytes to 4 bytes, while
            // `Display` writes every 8-byte origin as a prefix, `::/64` included.
            let ip: Ipv6Addr = prefix.parse().map_err(|_| err())?;
            return Ok(Self::from_peer_id(&ip.octets()[..8]));
        }
        s.parse::<IpAddr>().map(Self::from_ip).map_err(|_| err())
    }
}

/// A pre-derived key of one (app id, origin) pair in one limiter: the shard it lives in and its
/// 64-bit salted hash.
///
/// Deriving a key costs one blake2b-256 compression, more than the rest of an admission; a caller
/// that sees the same (peer, app) pair often can derive it once with
/// [`AppRateLimiter::app_key`](crate::AppRateLimiter::app_key) and pass it to
/// [`admit_keys`](crate::AppRateLimiter::admit_keys). A key is only meaningful to the limiter
/// that derived it (the salt differs per limiter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct AppKey {
    pub(crate) shard: u32,
    pub(crate) hash: u64,
}

impl AppKey {
    /// Builds a key from raw parts (tests and benches that bypass derivation). `shard` is taken
    /// modulo the limiter's shard count: `from_parts(s, h)` and `from_parts(s + shards, h)` are
    /// the same key.
    pub fn from_parts(shard: u32, hash: u64) -> Self {
        Self { shard, hash }
    }

    /// The shard index (already reduced modulo the shard count when derived by a limiter).
    pub fn shard(&self) -> u32 {
        self.shard
    }

    /// The 64-bit salted hash that identifies the pair inside its shard.
    pub fn hash(&self) -> u64 {
        self.hash
    }
}

/// `key = first 8 bytes (read little-endian) of blake2b(app id LE || salt || origin)`.
///
/// The digest is BLAKE2b-256, as go-algorand's `txgroupToKeys` (`blake2b.Sum256`, first 8 bytes
/// kept). BLAKE2b's output length is part of its parameter block, so this is *not* the prefix of
/// BLAKE2b-512 or of an 8-byte BLAKE2b; choosing `Sum256` makes keys match upstream's bytes.
/// The input is at most 40 bytes (one BLAKE2b block): one compression per key. (RustCrypto's
/// `blake2`, one input at a time; [`AppRateLimiter::admit`](crate::AppRateLimiter::admit)
/// derives a group's keys four at a time on Intel CPUs with AVX2, to the same digests.)
pub fn derive_key_hash(app_id: u64, salt: &[u8; 16], origin: &Origin) -> u64 {
    let mut h = Blake2b::<U32>::new();
    h.update(app_id.to_le_bytes());
    h.update(salt);
    h.update(origin.as_bytes());
    key_of_digest(&h.finalize())
}

/// A key from its BLAKE2b-256 digest: the first 8 bytes, little-endian (go-algorand keeps the
/// first 8 bytes of `blake2b.Sum256`).
fn key_of_digest(digest: &[u8]) -> u64 {
    let mut first = [0; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// Keys whose BLAKE2b compressions [`derive_key_hashes`] runs side by side: blake2b_simd's
/// widest degree (four 64-bit lanes of AVX2).
pub(crate) const LANES: usize = 4;

/// Whether [`derive_key_hashes`] runs its keys side by side on this CPU: an Intel CPU on which
/// blake2b_simd runs four lanes (AVX2). There five keys took 617-637 ns in lanes (four in one
/// pass, the fifth through RustCrypto's `blake2`) against 903-910 ns one by one through `blake2`
/// (`derive_cost`, an Intel Xeon, 2026-12-04); on an AMD EPYC Zen 3
/// the four lanes measured no faster than one input at a time and `blake2` faster than both
/// (BENCHMARKS.md, "Figures behind the code's choices"), so other CPUs keep one key at a time
/// until measured (`cargo run --release -p txgate-benches --example derive_cost`, which prints
/// this answer). Decided once.
#[doc(hidden)]
pub fn derives_in_lanes() -> bool {
    static SIDE_BY_SIDE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SIDE_BY_SIDE.get_or_init(|| {
        blake2b_simd::many::degree() >= LANES
            && txgate_sync::cpu::vendor() == txgate_sync::cpu::Vendor::Intel
    })
}

/// The longest key input: app id (8 bytes), salt (16), origin (at most 16).
const MAX_INPUT: usize = 8 + 16 + 16;

/// The input of a key's digest, `app id LE || salt || origin`, in a buffer, and its length.
fn key_input(app_id: u64, salt: &[u8; 16], origin: &Origin) -> ([u8; MAX_INPUT], usize) {
    let mut input = [0; MAX_INPUT];
    input[..8].copy_from_slice(&app_id.to_le_bytes());
    input[8..24].copy_from_slice(salt);
    let origin = origin.as_bytes();
    input[24..24 + origin.len()].copy_from_slice(origin);
    (input, 24 + origin.len())
}

/// [`derive_key_hash`] of each of `app_ids` (one origin) into `hashes`: the same digests, up to
/// [`LANES`] of them computed side by side in one pass of SIMD lanes (blake2b_simd's
/// `hash_many`) where [`derives_in_lanes`] holds, else one after another through
/// [`derive_key_hash`].
///
/// # Panics
///
/// If `hashes` is not as long as `app_ids`.
pub(crate) fn derive_key_hashes(
    app_ids: &[u64],
    salt: &[u8; 16],
    origin: &Origin,
    hashes: &mut [u64],
) {
    assert_eq!(app_ids.len(), hashes.len(), "one hash per app id");
    // A single key, or a CPU where the lanes are not known to pay, one at a time.
    if app_ids.len() < 2 || !derives_in_lanes() {
        for (hash, &app_id) in hashes.iter_mut().zip(app_ids) {
            *hash = derive_key_hash(app_id, salt, origin);
        }
        return;
    }
    derive_in_lanes(app_ids, salt, origin, hashes);
}

/// [`derive_key_hash`] of each of `app_ids` into `hashes`, up to four at a time in blake2b_simd's
/// `hash_many` lanes, on any CPU (blake2b_simd picks its backend at run time; the digests are
/// the same on every one): the limiter's side-by-side path, public for probes that time it
/// where the limiter does not take it (`derive_cost`).
///
/// # Panics
///
/// If `hashes` is not as long as `app_ids`.
#[doc(hidden)]
pub fn derive_in_lanes(app_ids: &[u64], salt: &[u8; 16], origin: &Origin, hashes: &mut [u64]) {
    assert_eq!(app_ids.len(), hashes.len(), "one hash per app id");
    let mut params = blake2b_simd::Params::new();
    params.hash_length(32);
    for (ids, out) in app_ids.chunks(LANES).zip(hashes.chunks_mut(LANES)) {
        if let [app_id] = ids {
            out[0] = derive_key_hash(*app_id, salt, origin);
            continue;
        }
        // Every lane's input is built (unused lanes from app id 0); only `ids.len()` are hashed.
        let inputs: [([u8; MAX_INPUT], usize); LANES] =
            std::array::from_fn(|i| key_input(ids.get(i).copied().unwrap_or(0), salt, origin));
        let mut jobs: [HashManyJob<'_>; LANES] =
            std::array::from_fn(|i| HashManyJob::new(&params, &inputs[i].0[..inputs[i].1]));
        hash_many(jobs[..ids.len()].iter_mut());
        for (hash, job) in out.iter_mut().zip(&jobs) {
            *hash = key_of_digest(job.to_hash().as_bytes());
        }
    }
}

/// Shard of an app id: keyed wyhash of its 8 little-endian bytes, so all senders of one app share
/// a shard (as upstream buckets by app).
pub(crate) fn shard_of(app_id: u64, seed: u64, shards: usize) -> u32 {
    (wyhash::wyhash(&app_id.to_le_bytes(), seed) as usize & (shards - 1)) as u32
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn blake2b_256_prefix_matches_a_known_vector() {
        // BLAKE2b-256("abc") = bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319
        // (RFC 7693 parameters, 32-byte output); our key reads its first 8 bytes little-endian.
        let d = Blake2b::<U32>::digest(b"abc");
        assert_eq!(&d[..8], &[0xbd, 0xdd, 0x81, 0x3c, 0x63, 0x42, 0x39, 0x72]);
        // The key is the same digest over app id LE || salt || origin.
        let salt = [0u8; 16];
        let origin = Origin::from_peer_id(b"abc");
        let mut buf = Vec::new();
        buf.extend_from_slice(&5u64.to_le_bytes());
        buf.extend_from_slice(&salt);
        buf.extend_from_slice(b"abc");
        let d = Blake2b::<U32>::digest(&buf);
        let want = u64::from_le_bytes(d[..8].try_into().unwrap());
        assert_eq!(derive_key_hash(5, &salt, &origin), want);
        assert_ne!(derive_key_hash(6, &salt, &origin), want);
        assert_ne!(derive_key_hash(5, &[1; 16], &origin), want);
    }

    // Not under miri: proptest reads the working directory (for its regressions file), which
    // miri's isolation refuses, and there is no unsafe code of ours on this path.
    #[cfg(not(miri))]
    proptest::proptest! {
        /// Keys derived for a group (side by side where `derives_in_lanes` holds) and in lanes
        /// (blake2b_simd, on any CPU), in any number (lanes used in part, several passes), equal
        /// those derived one by one (RustCrypto's `blake2`, checked against a known vector
        /// above), for origins of every length.
        #[test]
        fn keys_derived_side_by_side_equal_the_reference(
            app_ids in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..=10),
            salt in proptest::prelude::any::<[u8; 16]>(),
            origin in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..=16),
        ) {
            let origin = Origin::from_peer_id(&origin);
            let mut hashes = vec![0; app_ids.len()];
            derive_key_hashes(&app_ids, &salt, &origin, &mut hashes);
            // The lanes themselves, whether or not this CPU takes them.
            let mut in_lanes = vec![0; app_ids.len()];
            derive_in_lanes(&app_ids, &salt, &origin, &mut in_lanes);
            for ((&app_id, &hash), &in_lane) in app_ids.iter().zip(&hashes).zip(&in_lanes) {
                let want = derive_key_hash(app_id, &salt, &origin);
                proptest::prop_assert_eq!(hash, want);
                proptest::prop_assert_eq!(in_lane, want);
            }
        }
    }

    #[test]
    fn origins_print_and_parse_back() {
        let cases: [(Origin, &str); 8] = [
            (Origin::from_ipv4(Ipv4Addr::new(192, 0, 2, 1)), "192.0.2.1"),
            (Origin::from_peer_id(&[0; 8]), "::/64"),
            (Origin::from_ip("::1".parse().unwrap()), "0.0.0.1"),
            (
                Origin::from_ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd".parse().unwrap()),
                "2001:db8:1:2::/64",
            ),
            (
                Origin::from_ip("::ffff:10.0.0.1".parse().unwrap()),
                "10.0.0.1",
            ),
            (Origin::from_peer_id(&[]), "peer:"),
            (Origin::from_peer_id(&[0xab, 1, 2]), "peer:ab0102"),
            (
                Origin::from_peer_id(&[0xff; 40]),
                "peer:ffffffffffffffffffffffffffffffff",
            ),
        ];
        for (origin, text) in cases {
            assert_eq!(origin.to_string(), text);
            assert_eq!(text.parse::<Origin>(), Ok(origin), "{text}");
        }
        // Any IPv6 address parses to its /64; upper-case hex is accepted.
        assert_eq!(
            "2001:db8:1:2::9".parse::<Origin>().unwrap().as_bytes(),
            &[0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2]
        );
        assert_eq!("peer:AB".parse::<Origin>().unwrap().as_bytes(), &[0xab]);
        // A written /64 is the prefix, even where the address alone would reduce to 4 bytes.
        assert_eq!(
            "::ffff:1.2.3.4/64".parse::<Origin>().unwrap().as_bytes(),
            &[0; 8]
        );
        assert_eq!("::1".parse::<Origin>().unwrap().to_string(), "0.0.0.1");
        assert_eq!(
            "2001:db8::1/64".parse::<Origin>().unwrap().to_string(),
            "2001:db8::/64"
        );
        for bad in [
            "",
            "peer:abc",
            "peer:zz",
            "2001:db8::/48",
            "10.0.0.1/64",
            "host",
            "peer:".repeat(2).as_str(),
            &format!("peer:{}", "00".repeat(17)),
        ] {
            assert_eq!(
                bad.parse::<Origin>(),
                Err(OriginParseError(bad.to_owned())),
                "{bad}"
            );
        }
    }

    #[test]
    fn origins_reduce_as_designed() {
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        let same64: IpAddr = "2001:db8::ffff:1".parse().unwrap();
        assert_eq!(Origin::from(v6), Origin::from(same64));
        assert_eq!(Origin::from(v6).as_bytes().len(), 8);
        let mapped: Ipv6Addr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(Origin::from(mapped).as_bytes(), &[10, 0, 0, 1]);
        assert_eq!(Origin::from_peer_id(&[]).as_bytes(), &[] as &[u8]);
        assert_eq!(Origin::from_peer_id(&[1, 2, 3]).as_bytes(), &[1, 2, 3]);
    }

    /// go-algorand's `wsPeer.RoutingAddr` (network/wsPeer.go): a 16-byte address whose bytes
    /// 0..10 are zero routes by bytes 12..16, any other by bytes 0..8.
    #[test]
    fn ipv6_origins_follow_go_algorand_routing_addr() {
        let o = |s: &str| Origin::from_ipv6(s.parse().unwrap());
        // Named cases, the expected bytes written out from the rule.
        assert_eq!(o("::1").as_bytes(), &[0, 0, 0, 1]);
        assert_eq!(o("::").as_bytes(), &[0, 0, 0, 0]);
        assert_eq!(o("::ffff:1.2.3.4").as_bytes(), &[1, 2, 3, 4]);
        assert_eq!(o("::1.2.3.4").as_bytes(), &[1, 2, 3, 4]);
        // Bytes 10 and 11 are not looked at.
        assert_eq!(o("::1:1.2.3.4").as_bytes(), &[1, 2, 3, 4]);
        assert_eq!(o("::abcd:1.2.3.4").as_bytes(), &[1, 2, 3, 4]);
        assert_eq!(o("::ff00:0:0").as_bytes(), &[0, 0, 0, 0]);
        // Byte 9, the last of the ten, set: a /64 prefix (bytes 0..8, all zero here).
        assert_eq!(o("::1:ffff:1.2.3.4").as_bytes(), &[0; 8]);
        assert_eq!(o("0:0:0:0:1::").as_bytes(), &[0; 8]);
        // Byte 8 set (group 4 = 0x0100).
        assert_eq!(o("::100:0:0:1").as_bytes(), &[0; 8]);
        // Byte 7 set: the prefix keeps it.
        assert_eq!(o("0:0:0:1::1").as_bytes(), &[0, 0, 0, 0, 0, 0, 0, 1]);
        // A full IPv6 address.
        assert_eq!(
            o("2001:db8:85a3:8d3:1319:8a2e:370:7348").as_bytes(),
            &[0x20, 0x01, 0x0d, 0xb8, 0x85, 0xa3, 0x08, 0xd3]
        );
        // Every single non-zero byte position, against the rule stated on byte indices.
        for i in 0..16 {
            let mut octets = [0u8; 16];
            octets[i] = 0x5a;
            let got = Origin::from_ipv6(Ipv6Addr::from(octets));
            let want: Vec<u8> = if i < 10 {
                (0..8).map(|j| if j == i { 0x5a } else { 0 }).collect()
            } else {
                (12..16).map(|j| if j == i { 0x5a } else { 0 }).collect()
            };
            assert_eq!(got.as_bytes(), &want[..], "byte {i} set");
            // `from_ip` and the text form agree with `from_ipv6`.
            assert_eq!(Origin::from_ip(IpAddr::V6(Ipv6Addr::from(octets))), got);
            assert_eq!(
                Ipv6Addr::from(octets).to_string().parse::<Origin>(),
                Ok(got)
            );
        }
    }
}
