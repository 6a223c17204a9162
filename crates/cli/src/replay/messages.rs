//! The traffic phase's messages: synthesized from the blocks' groups (new groups from their
//! senders' peers, exact resends of committed groups, duplicates relayed by a second peer, and
//! spam from one peer calling one app), or built from a `--trace`.
//!
//! The random draws come in a fixed order (each honest message: its time, its roll, then a
//! resend index or a relay delay; then each spam message's time), so a seed gives the same
//! traffic.

use rand::Rng;
use rand::rngs::SmallRng;
use txgate_algorand::Round;
use txgate_algorand::codec::{Txn, gossip_messages};
use txgate_algorand::synth::{SynthTxn, encode_txn_message};
use txgate_ratelimit::Origin;

use super::args::ReplayArgs;
use super::ingest::Ingested;
use crate::workload::peer_origin;

/// Share of honest messages that resend a committed group byte for byte (late gossip).
const RESEND_SHARE: f64 = 0.05;
/// Share of honest messages that repeat the previous honest message from another peer.
const DUPLICATE_SHARE: f64 = 0.03;
/// The spamming peer (TEST-NET-3, RFC 5737).
const SPAM_PEER: [u8; 4] = [203, 0, 113, 66];

/// One message of the traffic phase.
pub(super) struct TrafficMsg {
    /// Receive time, ns since the Unix epoch (message time).
    pub(super) t_ns: u64,
    /// Index of its class in the run's class list (see [`synthesize`]).
    pub(super) class: usize,
    /// The peer it came from.
    pub(super) origin: Origin,
    /// The message as sent: concatenated `SignedTxn` maps.
    pub(super) bytes: Vec<u8>,
}

/// Synthesized traffic over `args.traffic_seconds` from `start_ns`, in time order:
///
/// - honest: `honest_rate` messages per second, cycling through the latest blocks' groups as
///   new transactions (note `traffic {i}`, valid from latest - 5 for MaxTxnLife rounds, from
///   the first sender's peer); [`RESEND_SHARE`] of them resend a committed group byte for byte,
///   and [`DUPLICATE_SHARE`] repeat the previous new honest message from another peer, up to
///   50 ms after it;
/// - spam: `spam_rate` messages per second from one peer ([`SPAM_PEER`]) calling the blocks'
///   most called app.
///
/// Arrival times are uniform over the span, so the classes compete for backlog slots at random.
/// Classes: 0 honest (new groups), 1 spam, 2 resent (exact resends and duplicates, which dedup
/// and the committed check drop whatever the limiter does).
pub(super) fn synthesize(
    args: &ReplayArgs,
    ing: &Ingested,
    latest: Round,
    max_txn_life: u64,
    start_ns: u64,
    rng: &mut SmallRng,
) -> Vec<TrafficMsg> {
    let (gen_id, gen_hash) = ing.genesis.clone().unwrap_or_default();
    let first_valid = latest.saturating_sub(5).max(1);
    let last_valid = first_valid + max_txn_life;
    let resends: Vec<Vec<u8>> = ing
        .recent_raw
        .iter()
        // Blocks read decoded already; one that does not give no resends.
        .flat_map(|r| gossip_messages(r).unwrap_or_default())
        .collect();
    let mut counts = std::collections::HashMap::<u64, u64>::new();
    for group in &ing.templates {
        for txn in group {
            for &app in &txn.app_ids {
                *counts.entry(app).or_default() += 1;
            }
        }
    }
    let spam_app = counts
        .iter()
        .max_by_key(|(app, n)| (**n, std::cmp::Reverse(**app)))
        .map_or(1, |(app, _)| *app);
    let secs = args.traffic_seconds;
    let mut honest = Vec::new();
    let templates: Vec<&Vec<Txn>> = ing.templates.iter().collect();
    let n_honest = if templates.is_empty() {
        0
    } else {
        args.honest_rate * secs
    };
    let span_ns = secs.max(1) * 1_000_000_000;
    let mut previous: Option<(Vec<u8>, u64)> = None;
    for i in 0..n_honest {
        let t_ns = start_ns + rng.random_range(0..span_ns);
        let template = templates[(i as usize) % templates.len()];
        let (origin, peer) = peer_origin(&template[0].sender);
        let roll: f64 = rng.random();
        let bytes = if roll < RESEND_SHARE && !resends.is_empty() {
            honest.push(TrafficMsg {
                t_ns,
                class: 2,
                origin,
                bytes: resends[rng.random_range(0..resends.len())].clone(),
            });
            continue;
        } else if roll < RESEND_SHARE + DUPLICATE_SHARE
            && let Some((prev, prev_t)) = &previous
        {
            let other = (peer + 1) % crate::workload::PEERS;
            let (origin, _) = peer_origin(&crate::workload::sender_of_peer(other));
            // Relayed by a second peer shortly after the first (up to 50 ms later).
            honest.push(TrafficMsg {
                t_ns: prev_t + rng.random_range(0..50_000_000),
                class: 2,
                origin,
                bytes: prev.clone(),
            });
            continue;
        } else {
            let group_id = (template.len() > 1).then(|| {
                let mut id = [0x54; 32];
                id[..8].copy_from_slice(&i.to_le_bytes());
                id
            });
            let txns: Vec<SynthTxn> = template
                .iter()
                .enumerate()
                .map(|(j, t)| SynthTxn {
                    tx_type: t.tx_type.to_vec(),
                    sender: t.sender,
                    first_valid,
                    last_valid,
                    app_ids: t.app_ids.clone(),
                    group: group_id,
                    note: format!("traffic {i} {j}").into_bytes(),
                })
                .collect();
            let bytes = encode_txn_message(&txns, &gen_id, &gen_hash);
            previous = Some((bytes.clone(), t_ns));
            bytes
        };
        honest.push(TrafficMsg {
            t_ns,
            class: 0,
            origin,
            bytes,
        });
    }
    let spam_origin = Origin::from_ipv4(SPAM_PEER.into());
    let mut spam_sender = [0x53; 32];
    spam_sender[..4].copy_from_slice(&SPAM_PEER);
    let n_spam = args.spam_rate * secs;
    let spam: Vec<TrafficMsg> = (0..n_spam)
        .map(|i| {
            let mut txn = SynthTxn::app_call(spam_sender, first_valid, last_valid, vec![spam_app]);
            txn.note = format!("spam {i}").into_bytes();
            TrafficMsg {
                t_ns: start_ns + rng.random_range(0..span_ns),
                class: 1,
                origin: spam_origin,
                bytes: encode_txn_message(&[txn], &gen_id, &gen_hash),
            }
        })
        .collect();
    let mut all: Vec<TrafficMsg> = honest.into_iter().chain(spam).collect();
    all.sort_by_key(|m| m.t_ns);
    all
}

/// Messages of a trace: one transaction per line, an app call to its app ids (the first as the
/// application id, the others as foreign apps) or a payment when it has none, from a sender
/// derived from its origin, noted with its line number so that every line is a distinct
/// message.
pub(super) fn trace_messages(
    trace: &[crate::trace::TraceEntry],
    ing: &Ingested,
    first_valid: Round,
    last_valid: Round,
) -> Vec<TrafficMsg> {
    let (gen_id, gen_hash) = ing.genesis.clone().unwrap_or_default();
    trace
        .iter()
        .map(|e| {
            let mut sender = [0x4f; 32];
            let o = e.origin.as_bytes();
            sender[..o.len()].copy_from_slice(o);
            let mut txn = if e.app_ids.is_empty() {
                SynthTxn::payment(sender, first_valid, last_valid)
            } else {
                SynthTxn::app_call(sender, first_valid, last_valid, e.app_ids.clone())
            };
            txn.note = format!("trace line {}", e.line).into_bytes();
            TrafficMsg {
                t_ns: e.ts_ns,
                class: 0,
                origin: e.origin,
                bytes: encode_txn_message(&[txn], &gen_id, &gen_hash),
            }
        })
        .collect()
}
