//! The built-in deterministic workload: synthetic rounds of Algorand-format msgpack blocks
//! ([`txgate_algorand::synth::encode_block`]) that the replay decodes like real blocks.
//!
//! Shape of each round (every draw from a `SmallRng` seeded with (seed, round), so any round can
//! be regenerated on its own):
//! - [`Workload::txns_per_round`] transactions, in groups: a group of 2 to 4 transactions
//!   sharing a group id with probability [`GROUP_PROBABILITY`], else a single transaction;
//! - each transaction is an app call with probability [`APP_CALL_PROBABILITY`] (else a payment),
//!   to one of [`APPS`] apps drawn from a Zipf(s = [`ZIPF_EXPONENT`]) popularity law (app ids
//!   from [`FIRST_APP_ID`]), with one extra foreign app one time in ten;
//! - senders are [`PEERS`] accounts, one per peer (see [`peer_origin`]); validity
//!   `first_valid` = the round minus 0 to 9, `last_valid` = first_valid + 1000 (MaxTxnLife);
//! - a note `r{round}i{index}` makes every txid distinct;
//! - block timestamps advance [`ROUND_SECONDS`] per round from [`GENESIS_TIMESTAMP`].

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use txgate_algorand::Round;
use txgate_algorand::synth::{SynthTxn, encode_block};
use txgate_ratelimit::Origin;

/// Genesis id of the synthetic network.
pub(crate) const GENESIS_ID: &str = "txgate-synth-v1";
/// Genesis hash of the synthetic network.
pub(crate) const GENESIS_HASH: [u8; 32] = [0x5a; 32];
/// Timestamp of round 0, seconds since the Unix epoch (2023-11-14).
pub(crate) const GENESIS_TIMESTAMP: i64 = 1_700_000_000;
/// Seconds between rounds (Algorand's block time is about 3 s; 2.8 s since 2024).
pub(crate) const ROUND_SECONDS: i64 = 3;
/// Apps in the popularity law.
pub(crate) const APPS: u64 = 10_000;
/// Id of the most popular app; app k (1-based rank) has id `FIRST_APP_ID + k - 1`.
pub(crate) const FIRST_APP_ID: u64 = 1_000;
/// Zipf exponent of app popularity.
pub(crate) const ZIPF_EXPONENT: f64 = 1.1;
/// Peers (and sender accounts).
pub(crate) const PEERS: u32 = 5_000;
/// Share of transactions that are app calls.
pub(crate) const APP_CALL_PROBABILITY: f64 = 0.85;
/// Probability that a group of 2 to 4 transactions starts at a position.
pub(crate) const GROUP_PROBABILITY: f64 = 0.15;
/// last_valid - first_valid of every transaction (go-algorand MaxTxnLife).
pub(crate) const VALIDITY: u64 = 1_000;

/// A deterministic synthetic chain.
#[derive(Debug, Clone)]
pub(crate) struct Workload {
    /// Seed of every draw.
    pub(crate) seed: u64,
    /// Transactions per round.
    pub(crate) txns_per_round: usize,
    zipf: Zipf<f64>,
}

impl Workload {
    /// A workload of rounds of `txns_per_round` transactions (any round >= 1 can be made).
    pub(crate) fn new(seed: u64, txns_per_round: usize) -> Self {
        Self {
            seed,
            txns_per_round,
            // APPS >= 1 and the exponent > 0: `Zipf::new` cannot fail.
            zipf: Zipf::new(APPS as f64, ZIPF_EXPONENT).unwrap_or_else(|_| unreachable!()),
        }
    }

    /// The transactions of `round`, in payset order.
    pub(crate) fn round_txns(&self, round: Round) -> Vec<SynthTxn> {
        let mut rng =
            SmallRng::seed_from_u64(self.seed ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let n = self.txns_per_round;
        let mut txns = Vec::with_capacity(n);
        while txns.len() < n {
            let size = if rng.random_bool(GROUP_PROBABILITY) {
                rng.random_range(2..=4).min(n - txns.len())
            } else {
                1
            };
            let group = (size > 1).then(|| {
                let mut id = [0x47; 32];
                id[..8].copy_from_slice(&round.to_le_bytes());
                id[8..16].copy_from_slice(&(txns.len() as u64).to_le_bytes());
                id
            });
            for _ in 0..size {
                let index = txns.len();
                let peer = rng.random_range(0..PEERS);
                let first_valid = round.saturating_sub(rng.random_range(0..10)).max(1);
                let last_valid = first_valid + VALIDITY;
                let mut txn = if rng.random_bool(APP_CALL_PROBABILITY) {
                    let mut apps = vec![self.app(&mut rng)];
                    if rng.random_bool(0.1) {
                        apps.push(self.app(&mut rng));
                    }
                    SynthTxn::app_call(sender_of_peer(peer), first_valid, last_valid, apps)
                } else {
                    SynthTxn::payment(sender_of_peer(peer), first_valid, last_valid)
                };
                txn.group = group;
                txn.note = format!("r{round}i{index}").into_bytes();
                txns.push(txn);
            }
        }
        txns
    }

    fn app(&self, rng: &mut SmallRng) -> u64 {
        // Zipf samples are integers 1..=APPS as f64.
        FIRST_APP_ID + self.zipf.sample(rng) as u64 - 1
    }

    /// Block timestamp of `round`, seconds since the Unix epoch.
    pub(crate) fn timestamp(round: Round) -> i64 {
        GENESIS_TIMESTAMP + ROUND_SECONDS * round as i64
    }

    /// The encoded block of `round` (msgpack `{block, cert}` as algod serves it).
    pub(crate) fn block(&self, round: Round) -> Vec<u8> {
        encode_block(
            round,
            GENESIS_ID,
            &GENESIS_HASH,
            Self::timestamp(round),
            &self.round_txns(round),
        )
    }
}

/// The sender account of peer `peer`: its index in the first 4 bytes, a fixed non-zero tail.
pub(crate) fn sender_of_peer(peer: u32) -> [u8; 32] {
    let mut s = [0xA5; 32];
    s[..4].copy_from_slice(&peer.to_le_bytes());
    s
}

/// The peer a sender's transactions arrive from: an IPv4 address in 10.0.0.0/8 picked by a
/// hash of the sender (FNV-1a), one of [`PEERS`]; for [`sender_of_peer`] accounts this is the
/// account's own peer.
pub(crate) fn peer_origin(sender: &[u8; 32]) -> (Origin, u32) {
    let peer = if sender[4..] == [0xA5; 28] {
        u32::from_le_bytes([sender[0], sender[1], sender[2], sender[3]]) % PEERS
    } else {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in sender {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        (h % u64::from(PEERS)) as u32
    };
    let b = peer.to_be_bytes();
    (
        Origin::from_ipv4(std::net::Ipv4Addr::new(10, b[1], b[2], b[3])),
        peer,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use txgate_algorand::codec::decode_block;

    #[test]
    fn rounds_are_deterministic_and_decode() {
        let w = Workload::new(7, 200);
        assert_eq!(w.block(3), w.block(3));
        assert_ne!(w.block(3), w.block(4));
        let block = decode_block(&w.block(3)).unwrap();
        assert_eq!(block.round, 3);
        assert_eq!(block.txns.len(), 200);
        let apps = block.txns.iter().filter(|t| !t.app_ids.is_empty()).count();
        // 85 % app calls: 170 expected, binomial sd ~5.
        assert!((140..=200).contains(&apps), "{apps}");
        let txids: std::collections::HashSet<_> = block.txns.iter().map(|t| t.txid).collect();
        assert_eq!(txids.len(), 200);
        let expected: Vec<_> = w
            .round_txns(3)
            .iter()
            .map(|t| t.txid(GENESIS_ID, &GENESIS_HASH))
            .collect();
        assert_eq!(
            block.txns.iter().map(|t| t.txid).collect::<Vec<_>>(),
            expected
        );
    }

    #[test]
    fn peers_map_back() {
        assert_eq!(peer_origin(&sender_of_peer(258)).1, 258);
        assert_eq!(
            peer_origin(&sender_of_peer(258)).0.as_bytes(),
            &[10, 0, 1, 2]
        );
    }
}
