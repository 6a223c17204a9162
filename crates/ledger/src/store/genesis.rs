//! [`Genesis`]: the network a block belongs to.

use txgate_algorand::codec::Block;

/// The network a block belongs to: its header's genesis id (`gen`) and genesis hash (`gh`).
///
/// Two blocks are of one network when their ids are equal and their hashes are equal or one of
/// them is all zeros: go-algorand's `BlockHeader.PreCheck` (data/bookkeeping/block.go) compares
/// a block's pair with its predecessor's the same way, a zero hash meaning "not set" (protocols
/// before `SupportGenesisHash`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Genesis {
    /// The genesis id, e.g. `mainnet-v1.0` (bytes: Algorand strings need not be UTF-8).
    pub id: Vec<u8>,
    /// The genesis hash (all zeros: not set).
    pub hash: [u8; 32],
}

impl Genesis {
    /// The network of `block`.
    pub fn of(block: &Block) -> Self {
        Self {
            id: block.genesis_id.clone(),
            hash: block.genesis_hash,
        }
    }

    /// Whether `other` is the same network (see the type's docs).
    pub fn same_network(&self, other: &Genesis) -> bool {
        self.id == other.id
            && (self.hash == other.hash || self.hash == [0; 32] || other.hash == [0; 32])
    }
}

/// `testnet-v1.0 (genesis hash SGO1GKSzyE7IEPItTxCByw9x8FmnrCDexi9/cOUJOiI=)`: the id as UTF-8
/// (invalid sequences replaced), the hash in base64 as algod shows it.
impl std::fmt::Display for Genesis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (genesis hash {})",
            String::from_utf8_lossy(&self.id),
            data_encoding::BASE64.encode(&self.hash)
        )
    }
}
