//! `serde` support (feature `serde`): every filter as its serialized bytes (the versioned,
//! checksummed form of [`BlockedBloom::to_bytes`]; Parquet's header and bitset for [`Sbbf`]), so
//! a filter written by one build loads in another whatever the serde format. Deserializing runs
//! the same checks as `from_bytes` (version, layout, shape, checksum), and their error is the
//! deserializer's custom error.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::{AnyBloom, AtomicBlockedBloom, BlockLayout, BlockedBloom, Filter, Sbbf};

/// Reads the byte string a filter was serialized as: serde bytes, or (for formats without a byte
/// type, such as JSON) a sequence of `u8`.
struct BytesVisitor<T> {
    load: fn(&[u8]) -> Result<T, String>,
    what: &'static str,
    _out: PhantomData<T>,
}

impl<'de, T> Visitor<'de> for BytesVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the serialized bytes of {}", self.what)
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<T, E> {
        (self.load)(bytes).map_err(E::custom)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(b) = seq.next_element::<u8>()? {
            bytes.push(b);
        }
        self.visit_bytes(&bytes)
    }
}

fn deserialize_with<'de, D: Deserializer<'de>, T>(
    deserializer: D,
    what: &'static str,
    load: fn(&[u8]) -> Result<T, String>,
) -> Result<T, D::Error> {
    deserializer.deserialize_bytes(BytesVisitor {
        load,
        what,
        _out: PhantomData,
    })
}

impl<B: BlockLayout> Serialize for BlockedBloom<B> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.to_bytes())
    }
}

impl<'de, B: BlockLayout> Deserialize<'de> for BlockedBloom<B> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_with(deserializer, "a blocked bloom filter", |b| {
            Self::from_layout_bytes(b).map_err(|e| e.to_string())
        })
    }
}

impl<B: BlockLayout> Serialize for AtomicBlockedBloom<B> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.to_bytes())
    }
}

impl<'de, B: BlockLayout> Deserialize<'de> for AtomicBlockedBloom<B> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_with(deserializer, "an atomic blocked bloom filter", |b| {
            Self::from_layout_bytes(b).map_err(|e| e.to_string())
        })
    }
}

impl Serialize for AnyBloom {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.to_bytes())
    }
}

impl<'de> Deserialize<'de> for AnyBloom {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_with(
            deserializer,
            "a blocked bloom filter of either layout",
            |b| Self::from_bytes(b).map_err(|e| e.to_string()),
        )
    }
}

/// Parquet's form: the Thrift `BloomFilterHeader` followed by the bitset.
impl Serialize for Sbbf {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.to_parquet())
    }
}

/// Parquet's form; bytes after the bitset are an error.
impl<'de> Deserialize<'de> for Sbbf {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_with(deserializer, "a Parquet split-block bloom filter", |b| {
            match Self::from_parquet(b) {
                Ok((filter, used)) if used == b.len() => Ok(filter),
                Ok((_, used)) => Err(format!(
                    "{} bytes after the Parquet bloom filter",
                    b.len() - used
                )),
                Err(e) => Err(e.to_string()),
            }
        })
    }
}
