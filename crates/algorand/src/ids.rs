//! Shared value types: rounds and transaction ids.

use std::fmt;
use std::str::FromStr;

use data_encoding::BASE32_NOPAD;

/// A block's round number (go-algorand `basics.Round`).
pub type Round = u64;

/// A transaction id: SHA-512/256 over `"TX" || canonical msgpack(txn)` (go-algorand
/// `transactions.Transaction.ID`), shown as unpadded RFC 4648 base32 (52 characters), as algod
/// and the indexer show it.
///
/// ```
/// use txgate_algorand::Txid;
/// let id: Txid = "6A6YYXT62SYZVUJH2QZW4BXUQ567H5GHJRMZ3EYRJPSIZRYDJTVQ".parse()?;
/// assert_eq!(id.to_string(), "6A6YYXT62SYZVUJH2QZW4BXUQ567H5GHJRMZ3EYRJPSIZRYDJTVQ");
/// # Ok::<(), txgate_algorand::TxidParseError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Txid(pub [u8; 32]);

impl Txid {
    /// The 32 digest bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for Txid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&BASE32_NOPAD.encode(&self.0))
    }
}

impl fmt::Debug for Txid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Txid({self})")
    }
}

/// A string that is not a base32 txid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a txid (52 base32 characters encoding 32 bytes): {0:?}")]
pub struct TxidParseError(pub String);

impl FromStr for Txid {
    type Err = TxidParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bytes = BASE32_NOPAD
            .decode(s.as_bytes())
            .map_err(|_| TxidParseError(s.to_owned()))?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| TxidParseError(s.to_owned()))?;
        Ok(Self(bytes))
    }
}

/// With feature `serde`: base32 text in human-readable formats (JSON, TOML: what algod and the
/// indexer show), the 32 bytes in binary ones.
#[cfg(feature = "serde")]
impl serde::Serialize for Txid {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.collect_str(self)
        } else {
            serializer.serialize_bytes(&self.0)
        }
    }
}

/// With feature `serde`: the forms [`Serialize`](serde::Serialize) writes.
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Txid {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TxidVisitor;
        impl<'de> serde::de::Visitor<'de> for TxidVisitor {
            type Value = Txid;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a txid: 52 base32 characters, or 32 bytes")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Txid, E> {
                s.parse().map_err(E::custom)
            }
            fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> Result<Txid, E> {
                <[u8; 32]>::try_from(b)
                    .map(Txid)
                    .map_err(|_| E::invalid_length(b.len(), &self))
            }
            // Binary formats without a byte type give the 32 bytes as a sequence.
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Txid, A::Error> {
                let mut id = [0u8; 32];
                for (i, byte) in id.iter_mut().enumerate() {
                    *byte = seq
                        .next_element()?
                        .ok_or_else(|| serde::de::Error::invalid_length(i, &self))?;
                }
                if seq.next_element::<u8>()?.is_some() {
                    return Err(serde::de::Error::invalid_length(33, &self));
                }
                Ok(Txid(id))
            }
        }
        if deserializer.is_human_readable() {
            deserializer.deserialize_str(TxidVisitor)
        } else {
            deserializer.deserialize_bytes(TxidVisitor)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_round_trip_and_errors() {
        let id = Txid([0xA5; 32]);
        let s = id.to_string();
        assert_eq!(s.len(), 52);
        assert_eq!(s.parse::<Txid>(), Ok(id));
        assert!("".parse::<Txid>().is_err());
        assert!("AAAA".parse::<Txid>().is_err());
        assert!(s[..51].parse::<Txid>().is_err());
    }
}
