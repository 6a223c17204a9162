//! Transaction gossip for the handler bench: real Algorand message bytes from the ledger's
//! encoder ([`txgate_algorand::synth::encode_txn_message`]: canonical `SignedTxn` maps as
//! go-algorand's `TxnHandler` receives them), with seeded, realistic shapes.
//!
//! Shape (every draw from one `SmallRng` seeded by the caller):
//! - groups of 1 to 16 transactions: a single transaction with probability 1/2, else 2 to 16
//!   uniformly, sharing a group id;
//! - [`APP_GROUP_SHARE`] of the groups call apps: each of their transactions is an app call with
//!   probability 0.85 (else a payment) to one of [`APPS`] apps drawn from a Zipf(s =
//!   [`ZIPF_EXPONENT`]) popularity law, with one foreign app one time in ten; the other groups
//!   are payments;
//! - each message comes from one of [`PEERS`] peers (uniform), which is also its sender;
//! - a per-transaction note makes every message distinct (none is a dedup duplicate).

use rand::{Rng, SeedableRng, rngs::SmallRng};
use rand_distr::{Distribution, Zipf};
use txgate_algorand::synth::{SynthTxn, encode_txn_message};
use txgate_ratelimit::Origin;

/// Genesis id of the bench network.
pub(crate) const GENESIS_ID: &str = "bench-gossip-v1";
/// Genesis hash of the bench network.
pub(crate) const GENESIS_HASH: [u8; 32] = [0x6b; 32];
/// Apps in the popularity law; app of rank k has id `FIRST_APP + k - 1`.
pub(crate) const APPS: u64 = 4_096;
/// Id of the most popular app.
pub(crate) const FIRST_APP: u64 = 10_000;
/// Zipf exponent of app popularity (the CLI's built-in workload uses the same).
pub(crate) const ZIPF_EXPONENT: f64 = 1.1;
/// Peers sending messages.
pub(crate) const PEERS: u32 = 4_096;
/// Share of groups that call apps.
pub(crate) const APP_GROUP_SHARE: f64 = 0.85;

/// One gossip message and who sent it.
#[derive(Clone, Debug)]
pub(crate) struct GossipMsg {
    /// The raw message.
    pub(crate) bytes: Vec<u8>,
    /// The sending peer.
    pub(crate) origin: Origin,
    /// Distinct non-zero app ids the group calls (empty for payments only).
    pub(crate) apps: Vec<u64>,
}

/// The origin of peer `i`.
pub(crate) fn peer(i: u32) -> Origin {
    Origin::from_peer_id(&i.to_le_bytes())
}

/// `n` distinct messages (see the module docs), seeded.
pub(crate) fn messages(n: usize, seed: u64) -> Vec<GossipMsg> {
    let mut rng = SmallRng::seed_from_u64(seed);
    // APPS >= 1 and the exponent > 0: `Zipf::new` cannot fail.
    let zipf = Zipf::new(APPS as f64, ZIPF_EXPONENT).expect("valid Zipf parameters");
    let app = |rng: &mut SmallRng| FIRST_APP + zipf.sample(rng) as u64 - 1;
    (0..n)
        .map(|m| {
            let p = rng.random_range(0..PEERS);
            let size = if rng.random_bool(0.5) {
                1
            } else {
                rng.random_range(2..=16)
            };
            let calls = rng.random_bool(APP_GROUP_SHARE);
            let group: Option<[u8; 32]> = (size > 1).then(|| rng.random());
            let mut sender = [0u8; 32];
            sender[..4].copy_from_slice(&p.to_le_bytes());
            sender[31] = 1;
            let txns: Vec<SynthTxn> = (0..size)
                .map(|i| {
                    let mut t = if calls && rng.random_bool(0.85) {
                        let mut apps = vec![app(&mut rng)];
                        if rng.random_bool(0.1) {
                            apps.push(app(&mut rng));
                        }
                        SynthTxn::app_call(sender, 1, 1001, apps)
                    } else {
                        SynthTxn::payment(sender, 1, 1001)
                    };
                    t.group = group;
                    t.note = format!("m{m}t{i}").into_bytes();
                    t
                })
                .collect();
            let mut apps: Vec<u64> = txns.iter().flat_map(|t| t.app_ids.clone()).collect();
            apps.sort_unstable();
            apps.dedup();
            GossipMsg {
                bytes: encode_txn_message(&txns, GENESIS_ID, &GENESIS_HASH),
                origin: peer(p),
                apps,
            }
        })
        .collect()
}

/// `n` single-transaction calls of `app` from `origin` (a spammer), distinct by note.
pub(crate) fn spam(n: usize, origin: Origin, app: u64) -> Vec<GossipMsg> {
    (0..n)
        .map(|i| {
            let t = SynthTxn {
                note: format!("spam{i}").into_bytes(),
                ..SynthTxn::app_call([0xee; 32], 1, 1001, vec![app])
            };
            GossipMsg {
                bytes: encode_txn_message(&[t], GENESIS_ID, &GENESIS_HASH),
                origin,
                apps: vec![app],
            }
        })
        .collect()
}
