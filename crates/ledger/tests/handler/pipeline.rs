//! The pipeline's steps: outcomes and their counters, the committed check, the limiter under
//! congestion, the backlog, dedup, the size limits, synthetic gossip groups.

use super::*;

#[test]
fn every_outcome_is_triggered_and_counted_exactly() {
    let committed_tx = tx(0, 777);
    let ledger = CommittedMap {
        committed: HashMap::from([(txid(&committed_tx), 500)]),
        ..CommittedMap::default()
    };
    // Capacity 4, 25%: the limiter runs when len > 1. L = 1.
    let s = setup(config(4, 25), ledger, RecordingPool::default(), 1);
    let h = &s.handler;
    let p = peer(1);

    let a = msg_bytes(&[tx(0, 1)]);
    assert_eq!(h.handle(&at(&a, p, T0)), Outcome::Enqueued); // len 1
    assert_eq!(h.handle(&at(&a, p, T0)), Outcome::Duplicate);
    assert_eq!(h.handle(&at(b"\xc1garbage", p, T0)), Outcome::DecodeError);
    assert_eq!(h.handle(&at(b"", p, T0)), Outcome::DecodeError); // empty group
    let big: Vec<Tx> = (0..17).map(|i| tx(0, 100 + i)).collect();
    assert_eq!(
        h.handle(&at(&msg_bytes(&big), p, T0)),
        Outcome::GroupTooLarge
    );
    assert_eq!(
        h.handle(&at(&msg_bytes(&[committed_tx]), p, T0)),
        Outcome::AlreadyCommitted
    );
    // go-algorand's limit for TX messages, 5,000,000 bytes (protocol/tags.go TxnTagMaxSize).
    let huge = vec![0x80u8; 5_000_001];
    assert_eq!(h.handle(&at(&huge, p, T0)), Outcome::MessageTooLarge);
    fill(h, 1, 10); // len 2 > 1: congested
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 20)]), p, T0)),
        Outcome::Enqueued
    ); // app 5 admitted (1 of L = 1), len 3
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 21)]), p, T0)),
        Outcome::RateLimited
    );
    fill(h, 1, 30); // len 4 = capacity
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(0, 40)]), p, T0)),
        Outcome::BacklogFull
    );
    assert_eq!(h.drain(), 4);
    h.shutdown();
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(0, 50)]), p, T0)),
        Outcome::ShutDown
    );

    let st = h.stats();
    assert_eq!(st.enqueued, 4);
    assert_eq!(st.duplicate, 1);
    assert_eq!(st.decode_error, 2);
    assert_eq!(st.group_too_large, 1);
    assert_eq!(st.message_too_large, 1);
    assert_eq!(st.already_committed, 1);
    assert_eq!(st.rate_limited, 1);
    assert_eq!(st.backlog_full, 1);
    assert_eq!(st.shut_down, 1);
    assert_eq!(st.handled(), 13);
    assert_eq!(st.limiter_checks, 2);
    assert_eq!(
        (st.pool_accepted, st.pool_rejected, st.penalized),
        (4, 0, 0)
    );
    assert_eq!((st.sink_panicked, st.backlog_len), (0, 0));
    assert_eq!(s.pool.seen.lock().unwrap().len(), 4);
    // The limiter saw exactly the two congested app calls.
    let ls = s.limiter.stats();
    assert_eq!((ls.admitted, ls.dropped), (1, 1));
}

#[test]
fn groups_reach_the_pool_intact_and_in_order() {
    let s = setup(
        config(64, 10),
        CommittedMap::default(),
        RecordingPool::default(),
        100,
    );
    let group = [tx(5, 1), tx(0, 2), tx(7, 3), tx(5, 4)];
    let b = msg_bytes(&group);
    assert_eq!(
        s.handler.handle(&at(&b, peer(1), T0 + 7)),
        Outcome::Enqueued
    );
    let single = msg_bytes(&[tx(0, 9)]);
    assert_eq!(
        s.handler.handle(&at(&single, Source::Local, T0 + 8)),
        Outcome::Enqueued
    );
    assert_eq!(s.handler.drain(), 2);
    let seen = s.pool.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let g = &seen[0];
    let ids: Vec<Txid> = g.txns.iter().map(|t| t.txid).collect();
    let want: Vec<Txid> = group.iter().map(txid).collect();
    assert_eq!(ids, want);
    assert_eq!(g.app_ids, vec![5, 7]);
    assert_eq!(g.source, peer(1));
    assert_eq!(g.received_ns, T0 + 7);
    assert_eq!(g.txns[0].first_valid, 1);
    assert_eq!(g.txns[0].last_valid, 1000);
    assert_eq!(g.txns[0].sender, [1; 32]);
    assert_eq!(seen[1].source, Source::Local);
    assert!(seen[1].app_ids.is_empty());
}

#[test]
fn committed_check_covers_each_txn_over_its_validity_window() {
    let inside = Tx {
        fv: 10,
        lv: 100,
        ..tx(0, 1)
    };
    let outside = Tx {
        fv: 60,
        lv: 100,
        ..tx(0, 2)
    };
    let fresh = Tx {
        fv: 3,
        lv: 4,
        ..tx(0, 3)
    };
    let ledger = CommittedMap {
        committed: HashMap::from([(txid(&inside), 50), (txid(&outside), 50)]),
        ..CommittedMap::default()
    };
    let s = setup(config(16, 10), ledger, RecordingPool::default(), 100);
    let h = &s.handler;
    assert_eq!(
        h.handle(&at(&msg_bytes(&[inside]), peer(1), T0)),
        Outcome::AlreadyCommitted
    );
    // Committed at round 50, but the window starts at 60: not this transaction's commit.
    assert_eq!(
        h.handle(&at(&msg_bytes(&[outside]), peer(1), T0)),
        Outcome::Enqueued
    );
    // One committed transaction drops the whole group.
    assert_eq!(
        h.handle(&at(&msg_bytes(&[fresh, inside]), peer(1), T0)),
        Outcome::AlreadyCommitted
    );
    let q = s.ledger.queries.lock().unwrap().clone();
    assert_eq!(
        q,
        vec![
            (txid(&inside), 10, 100),
            (txid(&outside), 60, 100),
            (txid(&fresh), 3, 4),
            (txid(&inside), 10, 100),
        ]
    );
    assert_eq!(h.stats().already_committed, 2);
}

#[test]
fn limiter_runs_only_above_the_congestion_threshold() {
    // Capacity 20 at 10%: threshold 2. L = 1.
    let s = setup(
        config(20, 10),
        CommittedMap::default(),
        RecordingPool::default(),
        1,
    );
    let h = &s.handler;
    assert_eq!(h.congestion_threshold(), 2);
    let p = peer(1);
    let Source::Peer(origin) = p else {
        unreachable!()
    };
    // Use up app 5's budget for this origin directly: a consulted limiter would now drop it.
    assert!(s.limiter.admit(&[5], &origin, T0).is_admit());
    assert!(s.limiter.admit(&[5], &origin, T0).is_drop());

    fill(h, 2, 0);
    assert_eq!(h.backlog_len(), 2); // == threshold: not congested
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 100)]), p, T0)),
        Outcome::Enqueued
    );
    assert_eq!(h.stats().limiter_checks, 0);
    assert_eq!(s.limiter.stats().dropped, 1); // only the direct call above

    assert_eq!(h.backlog_len(), 3); // > threshold: congested
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 101)]), p, T0)),
        Outcome::RateLimited
    );
    assert_eq!(h.stats().limiter_checks, 1);
    assert_eq!(s.limiter.stats().dropped, 2);
    // Another origin has its own budget; a local message is never limited.
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 102)]), peer(2), T0)),
        Outcome::Enqueued
    );
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 103)]), Source::Local, T0)),
        Outcome::Enqueued
    );
    // A peer group without app ids is not sent to the limiter.
    fill(h, 1, 50);
    assert_eq!(h.stats().limiter_checks, 2);

    // Back at the threshold after draining: not consulted again.
    while h.backlog_len() > 2 {
        assert!(h.drain_once());
    }
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 104)]), p, T0)),
        Outcome::Enqueued
    );
    assert_eq!(h.stats().limiter_checks, 2);
}

#[test]
fn limiter_switch_off_never_consults() {
    let cfg = config(4, 0).with_app_rate_limiting(false);
    let s = setup(cfg, CommittedMap::default(), RecordingPool::default(), 1);
    let h = &s.handler;
    fill(h, 1, 0); // len 1 > threshold 0
    for i in 0..3 {
        assert_eq!(
            h.handle(&at(&msg_bytes(&[tx(5, 10 + i)]), peer(1), T0)),
            Outcome::Enqueued
        );
    }
    assert_eq!(h.stats().limiter_checks, 0);
    assert_eq!(s.limiter.stats().admitted + s.limiter.stats().dropped, 0);
}

#[test]
fn full_backlog_drops_and_forgets_so_a_resend_is_accepted() {
    let s = setup(
        config(2, 100),
        CommittedMap::default(),
        RecordingPool::default(),
        100,
    );
    let h = &s.handler;
    let m1 = msg_bytes(&[tx(0, 1)]);
    let m2 = msg_bytes(&[tx(0, 2)]);
    let m3 = msg_bytes(&[tx(0, 3)]);
    assert_eq!(h.handle(&at(&m1, peer(1), T0)), Outcome::Enqueued);
    assert_eq!(h.handle(&at(&m2, peer(1), T0)), Outcome::Enqueued);
    assert_eq!(h.dedup_len(), 2);
    assert_eq!(h.handle(&at(&m3, peer(1), T0)), Outcome::BacklogFull);
    assert_eq!(h.dedup_len(), 2); // m3 forgotten
    // Not a duplicate: still full, dropped and forgotten again.
    assert_eq!(h.handle(&at(&m3, peer(2), T0)), Outcome::BacklogFull);
    assert!(h.drain_once());
    assert_eq!(h.handle(&at(&m3, peer(1), T0)), Outcome::Enqueued);
    // Enqueued messages stay remembered.
    assert_eq!(h.handle(&at(&m1, peer(1), T0)), Outcome::Duplicate);
    assert_eq!(h.handle(&at(&m3, peer(1), T0)), Outcome::Duplicate);
    let st = h.stats();
    assert_eq!((st.enqueued, st.backlog_full, st.duplicate), (3, 2, 2));
}

#[test]
fn dropped_messages_other_than_backlog_full_stay_remembered() {
    // go-algorand deletes a message from the dedup cache only when the backlog is full: a bad
    // or rate-limited message sent again is a duplicate.
    let s = setup(
        config(4, 0),
        CommittedMap::default(),
        RecordingPool::default(),
        1,
    );
    let h = &s.handler;
    assert_eq!(h.handle(&at(b"\xc1", peer(1), T0)), Outcome::DecodeError);
    assert_eq!(h.handle(&at(b"\xc1", peer(1), T0)), Outcome::Duplicate);
    fill(h, 1, 0);
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 1)]), peer(1), T0)),
        Outcome::Enqueued
    );
    let limited = msg_bytes(&[tx(5, 2)]);
    assert_eq!(h.handle(&at(&limited, peer(1), T0)), Outcome::RateLimited);
    assert_eq!(h.handle(&at(&limited, peer(1), T0)), Outcome::Duplicate);
}

#[test]
fn dedup_rotates_by_time_on_the_message_clock() {
    let cfg = config(64, 100).with_dedup_interval(Duration::from_secs(60));
    let s = setup(cfg, CommittedMap::default(), RecordingPool::default(), 100);
    let h = &s.handler;
    let m = msg_bytes(&[tx(0, 1)]);
    let sec = 1_000_000_000;
    assert_eq!(h.handle(&at(&m, peer(1), T0)), Outcome::Enqueued);
    assert_eq!(
        h.handle(&at(&m, peer(1), T0 + 60 * sec)),
        Outcome::Duplicate
    );
    assert_eq!(h.stats().dedup_rotations, 1);
    assert_eq!(
        h.handle(&at(&m, peer(1), T0 + 120 * sec)),
        Outcome::Enqueued
    );
    assert_eq!(h.stats().dedup_rotations, 2);
}

#[test]
fn dedup_rotates_by_size() {
    let cfg = config(64, 100).with_dedup_max_size(2);
    let s = setup(cfg, CommittedMap::default(), RecordingPool::default(), 100);
    let h = &s.handler;
    let m: Vec<Vec<u8>> = (0..5).map(|i| msg_bytes(&[tx(0, i)])).collect();
    let go = |i: usize| h.handle(&at(&m[i], peer(1), T0));
    assert_eq!([go(0), go(1), go(2)], [Outcome::Enqueued; 3]); // swap before 2
    assert_eq!(go(0), Outcome::Duplicate); // in previous
    assert_eq!(go(3), Outcome::Enqueued); // current {2, 3}
    assert_eq!(go(4), Outcome::Enqueued); // swap: {0, 1} dropped
    assert_eq!(go(0), Outcome::Enqueued); // current {4, 0}
    assert_eq!(h.stats().dedup_rotations, 2);
}

#[test]
fn dedup_off_passes_repeats() {
    // A zero dedup size is not checked with dedup off.
    let cfg = config(64, 100).with_dedup(false).with_dedup_max_size(0);
    let s = setup(cfg, CommittedMap::default(), RecordingPool::default(), 100);
    let m = msg_bytes(&[tx(0, 1)]);
    for _ in 0..3 {
        assert_eq!(s.handler.handle(&at(&m, peer(1), T0)), Outcome::Enqueued);
    }
    assert_eq!(s.handler.dedup_len(), 0);
}

#[test]
fn message_of_max_size_passes_one_byte_more_is_dropped_unread() {
    assert_eq!(HandlerConfig::default().max_message_size, 5_000_000);
    let ok = msg_bytes(&[tx(0, 1)]);
    let s = setup(
        config(8, 100).with_max_message_size(ok.len()),
        CommittedMap::default(),
        RecordingPool::default(),
        100,
    );
    let h = &s.handler;
    let mut long = msg_bytes(&[tx(0, 2)]);
    long.resize(ok.len() + 1, 0);
    for _ in 0..2 {
        // Not hashed into the dedup cache, not decoded: the same result every time.
        assert_eq!(h.handle(&at(&long, peer(1), T0)), Outcome::MessageTooLarge);
    }
    assert_eq!(h.dedup_len(), 0);
    assert!(s.ledger.queries.lock().unwrap().is_empty());
    assert_eq!(h.handle(&at(&ok, peer(1), T0)), Outcome::Enqueued);
    let st = h.stats();
    assert_eq!((st.message_too_large, st.enqueued, st.handled()), (2, 1, 3));
}

#[test]
fn group_of_max_size_passes_one_more_does_not() {
    let s = setup(
        config(8, 100),
        CommittedMap::default(),
        RecordingPool::default(),
        100,
    );
    let g16: Vec<Tx> = (0..16).map(|i| tx(0, i)).collect();
    let g17: Vec<Tx> = (0..17).map(|i| tx(0, 100 + i)).collect();
    assert_eq!(
        s.handler.handle(&at(&msg_bytes(&g16), peer(1), T0)),
        Outcome::Enqueued
    );
    assert_eq!(
        s.handler.handle(&at(&msg_bytes(&g17), peer(1), T0)),
        Outcome::GroupTooLarge
    );
}

#[test]
fn synthetic_gossip_groups_decode_with_their_txids_and_app_ids() {
    // A real-shaped group from the codec's synthetic encoder: an app call to 42 with foreign
    // apps 7 and 42, and a payment, sharing a group id.
    let (gen_id, gh) = ("testnet-v1.0", [0x11; 32]);
    let grp = Some([0x22; 32]);
    let call = SynthTxn {
        group: grp,
        note: b"a".to_vec(),
        ..SynthTxn::app_call([3; 32], 100, 1100, vec![42, 7, 42])
    };
    let pay = SynthTxn {
        group: grp,
        ..SynthTxn::payment([4; 32], 100, 1100)
    };
    let bytes = encode_txn_message(&[call.clone(), pay.clone()], gen_id, &gh);
    let committed_pay = SynthTxn {
        note: b"old".to_vec(),
        ..pay.clone()
    };
    let ledger = CommittedMap {
        committed: HashMap::from([(committed_pay.txid(gen_id, &gh), 1000)]),
        ..CommittedMap::default()
    };
    let s = setup(config(16, 10), ledger, RecordingPool::default(), 100);
    let h = &s.handler;
    assert_eq!(h.handle(&at(&bytes, peer(1), T0)), Outcome::Enqueued);
    let stale = encode_txn_message(&[call.clone(), committed_pay], gen_id, &gh);
    assert_eq!(
        h.handle(&at(&stale, peer(1), T0)),
        Outcome::AlreadyCommitted
    );
    assert_eq!(h.drain(), 1);
    let seen = s.pool.seen.lock().unwrap();
    let g = &seen[0];
    assert_eq!(
        g.txns.iter().map(|t| t.txid).collect::<Vec<_>>(),
        vec![call.txid(gen_id, &gh), pay.txid(gen_id, &gh)]
    );
    assert_eq!(g.app_ids, vec![42, 7]);
    assert_eq!(g.txns[0].group, grp);
    assert_eq!((g.txns[1].first_valid, g.txns[1].last_valid), (100, 1100));
}
