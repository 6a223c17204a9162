//! The pool side and the handler's life: penalties for rejected groups, a panicking sink,
//! workers under many threads, and every shutdown path.

use super::*;

#[test]
fn pool_rejection_of_a_peer_group_penalizes_by_l_over_4() {
    // L = 8 per 1 s window: a penalty adds 8 / 4 = 2 to app 5's count for the origin.
    let pool = RecordingPool {
        reject_app: Some(5),
        ..RecordingPool::default()
    };
    let s = setup(config(32, 10), CommittedMap::default(), pool, 8); // threshold 3
    let h = &s.handler;
    let p = peer(1);
    fill(h, 4, 0); // len 4 > 3: congested
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(5, 100)]), p, T0)),
        Outcome::Enqueued
    ); // count 1
    assert_eq!(h.drain(), 5);
    let st = h.stats();
    assert_eq!(
        (st.pool_accepted, st.pool_rejected, st.penalized),
        (4, 1, 1)
    );
    // Count 1 + penalty 2 = 3: exactly 8 - 3 = 5 more groups fit this window.
    fill(h, 4, 10);
    let mut admitted = 0;
    let mut note = 200;
    loop {
        note += 1;
        match h.handle(&at(&msg_bytes(&[tx(5, note)]), p, T0)) {
            Outcome::Enqueued => admitted += 1,
            Outcome::RateLimited => break,
            o => panic!("unexpected {o:?}"),
        }
        assert!(admitted <= 8, "the limiter never dropped");
    }
    assert_eq!(admitted, 5);
    // The other origin was not penalized: 8 fit.
    let mut other = 0;
    while h.handle(&at(&msg_bytes(&[tx(5, 1000 + other)]), peer(2), T0)) == Outcome::Enqueued {
        other += 1;
        assert!(other <= 9);
    }
    assert_eq!(other, 8);
}

#[test]
fn local_rejections_and_app_less_rejections_do_not_penalize() {
    let pool = RecordingPool {
        reject_app: Some(5),
        ..RecordingPool::default()
    };
    let s = setup(config(32, 0), CommittedMap::default(), pool, 4);
    let h = &s.handler;
    for i in 0..3 {
        let b = msg_bytes(&[tx(5, i)]);
        assert_eq!(h.handle(&at(&b, Source::Local, T0)), Outcome::Enqueued);
    }
    assert_eq!(h.drain(), 3);
    let st = h.stats();
    assert_eq!((st.pool_rejected, st.penalized), (3, 0));
    assert_eq!(s.limiter.stats().entries, 0);
}

#[test]
fn a_panicking_sink_is_counted_and_the_worker_survives() {
    let pool = RecordingPool {
        panic_app: Some(6),
        ..RecordingPool::default()
    };
    let s = setup(config(32, 100), CommittedMap::default(), pool, 100);
    let h = &s.handler;
    h.start_workers(1).unwrap();
    let bad = msg_bytes(&[tx(6, 1)]);
    assert_eq!(h.handle(&at(&bad, peer(1), T0)), Outcome::Enqueued);
    for i in 0..10 {
        let b = msg_bytes(&[tx(0, 10 + i)]);
        assert_eq!(h.handle(&at(&b, peer(1), T0)), Outcome::Enqueued);
    }
    h.shutdown();
    let st = h.stats();
    assert_eq!((st.sink_panicked, st.pool_accepted), (1, 10));
    assert_eq!(st.enqueued, st.processed());
}

#[test]
fn shutdown_drains_everything_enqueued() {
    let s = setup(
        config(1000, 100),
        CommittedMap::default(),
        RecordingPool::default(),
        100,
    );
    let h = &s.handler;
    for i in 0..500 {
        let b = msg_bytes(&[tx(0, i)]);
        assert_eq!(h.handle(&at(&b, peer(1), T0)), Outcome::Enqueued);
    }
    h.start_workers(2).unwrap();
    h.shutdown();
    let st = h.stats();
    assert_eq!(st.enqueued, 500);
    assert_eq!(st.pool_accepted, 500);
    assert_eq!(st.backlog_len, 0);
    let note_of: HashMap<Txid, u64> = (0..500).map(|i| (txid(&tx(0, i)), i)).collect();
    let mut notes: Vec<u64> = s
        .pool
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|g| note_of[&g.txns[0].txid])
        .collect();
    notes.sort_unstable();
    assert_eq!(notes, (0..500).collect::<Vec<_>>()); // each exactly once
    assert_eq!(
        h.handle(&at(&msg_bytes(&[tx(0, 999)]), peer(1), T0)),
        Outcome::ShutDown
    );
    assert!(matches!(h.start_workers(1), Err(WorkerError::ShutDown)));
    h.shutdown(); // idempotent
}

#[test]
fn shutdown_without_workers_drains_on_the_caller() {
    let s = setup(
        config(8, 100),
        CommittedMap::default(),
        RecordingPool::default(),
        100,
    );
    fill(&s.handler, 5, 0);
    s.handler.shutdown();
    assert_eq!(s.handler.stats().pool_accepted, 5);
    assert_eq!(s.pool.calls.load(Ordering::Relaxed), 5);
}

#[test]
fn many_threads_conserve_counts_with_workers_running() {
    const THREADS: u64 = 4;
    const DISTINCT: u64 = 2_000;
    let committed: Vec<Tx> = (0..50).map(|i| tx(0, 1_000_000 + i)).collect();
    let ledger = CommittedMap {
        committed: committed.iter().map(|t| (txid(t), 1)).collect(),
        ..CommittedMap::default()
    };
    let pool = RecordingPool {
        reject_app: Some(13),
        ..RecordingPool::default()
    };
    // Backlog large enough never to fill; limiter off (its drops depend on timing).
    let cfg = config(100_000, 10).with_app_rate_limiting(false);
    let s = setup(cfg, ledger, pool, 100);
    let h = Arc::new(s.handler);
    h.start_workers(2).unwrap();
    let fresh: Arc<Vec<Vec<u8>>> = Arc::new(
        (0..DISTINCT)
            .map(|i| msg_bytes(&[tx(if i % 10 == 0 { 13 } else { 0 }, i)]))
            .collect(),
    );
    let committed = Arc::new(committed);
    let joins: Vec<_> = (0..THREADS)
        .map(|t| {
            let h = h.clone();
            let fresh = fresh.clone();
            let committed = committed.clone();
            std::thread::spawn(move || {
                let mut counts: HashMap<Outcome, u64> = HashMap::new();
                let mut offered = 0u64;
                let mut go = |b: &[u8]| {
                    offered += 1;
                    *counts
                        .entry(h.handle(&at(b, peer(t as u8), T0)))
                        .or_default() += 1;
                };
                // Every thread offers every fresh message (in its own order), its own
                // garbage and its own copies of committed groups.
                let mult = [1, 3, 7, 9][t as usize]; // coprime to DISTINCT: a permutation
                for i in 0..DISTINCT {
                    let j = (i * mult + t * 7) % DISTINCT;
                    go(&fresh[j as usize]);
                }
                for i in 0..100u64 {
                    go(&[0xc1, t as u8, i as u8]);
                }
                for (i, c) in committed.iter().enumerate() {
                    go(&msg_bytes(&[*c, tx(0, 2_000_000 + t * 100 + i as u64)]));
                }
                (offered, counts)
            })
        })
        .collect();
    let mut offered = 0;
    let mut outcomes: HashMap<Outcome, u64> = HashMap::new();
    for j in joins {
        let (o, c) = j.join().unwrap();
        offered += o;
        for (k, v) in c {
            *outcomes.entry(k).or_default() += v;
        }
    }
    h.shutdown();
    let st = h.stats();
    assert_eq!(offered, THREADS * (DISTINCT + 100 + 50));
    assert_eq!(st.handled(), offered);
    let n = |o| outcomes.get(&o).copied().unwrap_or(0);
    // Of THREADS copies of each fresh message exactly one is new.
    assert_eq!(st.enqueued, DISTINCT);
    assert_eq!(n(Outcome::Enqueued), DISTINCT);
    assert_eq!(st.duplicate, (THREADS - 1) * DISTINCT);
    assert_eq!(n(Outcome::Duplicate), st.duplicate);
    assert_eq!(st.decode_error, THREADS * 100);
    assert_eq!(st.already_committed, THREADS * 50);
    assert_eq!(st.backlog_full + st.rate_limited + st.shut_down, 0);
    // Every enqueued group reached the pool once; every tenth was rejected.
    assert_eq!(st.pool_rejected, DISTINCT / 10);
    assert_eq!(st.pool_accepted, DISTINCT - DISTINCT / 10);
    assert_eq!(s.pool.calls.load(Ordering::Relaxed), DISTINCT);
    assert_eq!(st.penalized, 0); // limiting off: no limiter to penalize
}

/// A `CommittedTxids` that panics (a caller's bug) unwinds out of `handle` without leaving the
/// shutdown gate counting a call that is gone: `shutdown` still returns (it used to spin forever).
#[test]
fn a_panic_inside_handle_does_not_hang_shutdown() {
    struct PanickingLedger;
    impl CommittedTxids for PanickingLedger {
        fn is_committed(&self, _: &Txid, _: Round, _: Round) -> bool {
            panic!("ledger bug");
        }
    }
    let handler = TxHandler::new(
        config(32, 100),
        Arc::new(PanickingLedger),
        Some(limiter(100)),
        Arc::new(RecordingPool::default()) as Arc<dyn PoolSink>,
    )
    .unwrap();
    let bytes = msg_bytes(&[tx(0, 1)]);
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        handler.handle(&at(&bytes, peer(1), T0))
    }));
    assert!(unwound.is_err());
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        handler.shutdown();
        done_tx.send(handler.stats()).unwrap();
    });
    let stats = done_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("shutdown returned");
    assert_eq!(stats.enqueued, 0);
}

/// A sink that blocks in its first call until released, so a shutdown is still joining a busy
/// worker while a second shutdown runs.
#[derive(Default)]
struct GatedPool {
    entered: std::sync::Mutex<bool>,
    entered_cv: std::sync::Condvar,
    open: std::sync::Mutex<bool>,
    open_cv: std::sync::Condvar,
    accepted: AtomicU64,
}

impl PoolSink for GatedPool {
    fn submit(&self, _: &Group) -> Result<(), PoolReject> {
        *self.entered.lock().unwrap() = true;
        self.entered_cv.notify_all();
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.open_cv.wait(open).unwrap();
        }
        self.accepted.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Two shutdowns at once: the second must not return before the first has handed every
/// enqueued group to the sink (it used to find the workers already taken and return while a
/// worker was still inside the sink).
#[test]
fn a_second_concurrent_shutdown_waits_for_the_first() {
    let pool = Arc::new(GatedPool::default());
    let h = Arc::new(
        TxHandler::new(
            config(8, 100),
            Arc::new(CommittedMap::default()),
            Some(limiter(100)),
            pool.clone() as Arc<dyn PoolSink>,
        )
        .unwrap(),
    );
    h.start_workers(1).unwrap();
    let b = msg_bytes(&[tx(0, 1)]);
    assert_eq!(h.handle(&at(&b, peer(1), T0)), Outcome::Enqueued);
    // The worker is inside the sink, holding the group.
    let mut entered = pool.entered.lock().unwrap();
    while !*entered {
        entered = pool.entered_cv.wait(entered).unwrap();
    }
    drop(entered);
    let shutdowns: Vec<_> = (0..2)
        .map(|_| {
            let (h, pool) = (h.clone(), pool.clone());
            std::thread::spawn(move || {
                h.shutdown();
                // What this caller may rely on once shutdown returned.
                (pool.accepted.load(Ordering::SeqCst), h.stats().processed())
            })
        })
        .collect();
    // Both calls are in (the handler refuses new messages) before the sink is released; a
    // shutdown that returns early does so well within this pause.
    while h.handle(&at(&b, peer(1), T0)) != Outcome::ShutDown {} // a duplicate until then
    std::thread::sleep(Duration::from_millis(100));
    *pool.open.lock().unwrap() = true;
    pool.open_cv.notify_all();
    for t in shutdowns {
        assert_eq!(
            t.join().unwrap(),
            (1, 1),
            "a shutdown returned before the drain"
        );
    }
}

/// A sink that shuts the handler down from a worker thread (and one that does so while the
/// caller's own shutdown drains): shutdown neither joins the thread it runs on nor waits for
/// itself, and every enqueued group still reaches the sink exactly once.
#[test]
fn a_sink_that_shuts_the_handler_down_neither_hangs_nor_panics() {
    #[derive(Default)]
    struct ShuttingPool {
        handler: std::sync::OnceLock<std::sync::Weak<TxHandler>>,
        accepted: AtomicU64,
        on: Mutex<Vec<Option<String>>>,
    }
    impl PoolSink for ShuttingPool {
        fn submit(&self, _: &Group) -> Result<(), PoolReject> {
            self.on
                .lock()
                .unwrap()
                .push(std::thread::current().name().map(str::to_owned));
            if let Some(h) = self.handler.get().and_then(std::sync::Weak::upgrade) {
                h.shutdown();
            }
            self.accepted.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }
    for workers in [1, 0] {
        let pool = Arc::new(ShuttingPool::default());
        let h = Arc::new(
            TxHandler::new(
                config(64, 100),
                Arc::new(CommittedMap::default()),
                Some(limiter(100)),
                pool.clone() as Arc<dyn PoolSink>,
            )
            .unwrap(),
        );
        pool.handler.set(Arc::downgrade(&h)).unwrap();
        let mut enqueued = 0;
        for i in 0..20 {
            if h.handle(&at(&msg_bytes(&[tx(0, i)]), peer(1), T0)) == Outcome::Enqueued {
                enqueued += 1;
            }
        }
        if workers > 0 {
            h.start_workers(workers).unwrap();
        }
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let runner = h.clone();
        std::thread::spawn(move || {
            runner.shutdown();
            done_tx.send(runner.stats()).unwrap();
        });
        let st = done_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("shutdown returned");
        assert_eq!(enqueued, 20, "nothing refused before the first group ran");
        assert_eq!(st.sink_panicked, 0, "a shutdown joined its own thread");
        assert_eq!((st.pool_accepted, st.processed()), (20, 20));
        assert_eq!(pool.accepted.load(Ordering::SeqCst), 20);
        if workers > 0 {
            // The first group went through a worker, whose shutdown call returned at once.
            assert_eq!(
                pool.on.lock().unwrap()[0].as_deref(),
                Some("txgate-handler-0")
            );
        }
    }
}
