//! Configuration errors, and the limiter's key cache deciding like derived keys.

use super::*;

/// `HandlerConfig::validate` names each bad field with its variant (and the value for the
/// percentage), accepts the boundaries (a 100 % threshold, sizes of 1), skips the dedup fields
/// with dedup off, and leaves the limiter to `TxHandler::new` (it has none to check).
#[test]
fn validate_reports_each_configuration_error() {
    let base = HandlerConfig::default();
    assert!(base.validate().is_ok());
    let check = |cfg: HandlerConfig| cfg.validate().err().map(|e| e.to_string());
    let cases: [(HandlerConfig, &str); 6] = [
        (
            base.clone().with_backlog_capacity(0),
            "backlog_capacity must be at least 1",
        ),
        (
            base.clone().with_congestion_pct(101),
            "congestion_pct must be 0..=100, got 101",
        ),
        (
            base.clone().with_max_group_size(0),
            "max_group_size must be at least 1",
        ),
        (
            base.clone().with_max_message_size(0),
            "max_message_size must be at least 1",
        ),
        (
            base.clone().with_dedup_max_size(0),
            "dedup_max_size must be at least 1 when dedup is on",
        ),
        (
            base.clone().with_dedup_interval(Duration::ZERO),
            "dedup_interval must be at least 1 ns when dedup is on",
        ),
    ];
    for (cfg, want) in cases {
        assert_eq!(check(cfg).as_deref(), Some(want));
    }
    assert!(matches!(
        base.clone().with_congestion_pct(250).validate(),
        Err(HandlerConfigError::CongestionPct(250))
    ));
    // The first failing check wins: capacity before the percentage.
    assert!(matches!(
        base.clone()
            .with_backlog_capacity(0)
            .with_congestion_pct(101)
            .validate(),
        Err(HandlerConfigError::ZeroBacklogCapacity)
    ));
    // Boundaries pass.
    let edges = base
        .clone()
        .with_backlog_capacity(1)
        .with_congestion_pct(100)
        .with_max_group_size(1)
        .with_max_message_size(1)
        .with_dedup_max_size(1)
        .with_dedup_interval(Duration::from_nanos(1));
    assert!(edges.validate().is_ok());
    // Dedup off: its fields are not checked.
    let off = base
        .clone()
        .with_dedup(false)
        .with_dedup_max_size(0)
        .with_dedup_interval(Duration::ZERO);
    assert!(off.validate().is_ok());
    // Rate limiting on without a limiter is `new`'s check, not `validate`'s.
    assert!(base.app_rate_limiting && base.validate().is_ok());
    assert!(matches!(
        TxHandler::new(
            base,
            Arc::new(CommittedMap::default()),
            None,
            Arc::new(RecordingPool::default()),
        ),
        Err(HandlerConfigError::MissingLimiter)
    ));
}

#[test]
fn config_errors_are_typed() {
    let l = Some(limiter(1));
    let mk = |cfg: HandlerConfig, l: Option<Arc<AppRateLimiter>>| {
        TxHandler::new(
            cfg,
            Arc::new(CommittedMap::default()),
            l,
            Arc::new(RecordingPool::default()),
        )
        .err()
    };
    assert!(matches!(
        mk(config(0, 10), l.clone()),
        Some(HandlerConfigError::ZeroBacklogCapacity)
    ));
    assert!(matches!(
        mk(config(10, 101), l.clone()),
        Some(HandlerConfigError::CongestionPct(101))
    ));
    assert!(matches!(
        mk(config(10, 10), None),
        Some(HandlerConfigError::MissingLimiter)
    ));
    // Two problems: the first in a fixed order (sizes, the limiter, then dedup) is reported.
    let two = config(10, 10).with_dedup_max_size(0);
    assert!(matches!(
        mk(two.clone(), None),
        Some(HandlerConfigError::MissingLimiter)
    ));
    assert!(matches!(
        two.validate(),
        Err(HandlerConfigError::ZeroDedupMaxSize)
    ));
    assert!(matches!(
        mk(config(0, 10), None),
        Some(HandlerConfigError::ZeroBacklogCapacity)
    ));
    let z = config(10, 10).with_dedup_max_size(0);
    assert!(matches!(
        mk(z, l.clone()),
        Some(HandlerConfigError::ZeroDedupMaxSize)
    ));
    let z = config(10, 10).with_dedup_interval(Duration::ZERO);
    assert!(matches!(
        mk(z, l.clone()),
        Some(HandlerConfigError::ZeroDedupInterval)
    ));
    let z = config(10, 10).with_max_group_size(0);
    assert!(matches!(
        mk(z, l.clone()),
        Some(HandlerConfigError::ZeroMaxGroupSize)
    ));
    let z = config(10, 10).with_max_message_size(0);
    assert!(matches!(
        mk(z, l.clone()),
        Some(HandlerConfigError::ZeroMaxMessageSize)
    ));
    // Off: no limiter needed; a random salt works.
    let ok = config(10, 10)
        .with_app_rate_limiting(false)
        .with_dedup_salt(None);
    assert!(mk(ok, None).is_none());
    // Worker errors.
    let s = setup(
        config(4, 10),
        CommittedMap::default(),
        RecordingPool::default(),
        1,
    );
    assert!(matches!(
        s.handler.start_workers(0),
        Err(WorkerError::ZeroWorkers)
    ));
    s.handler.start_workers(1).unwrap();
    assert!(matches!(
        s.handler.start_workers(1),
        Err(WorkerError::AlreadyStarted)
    ));
}

/// The key cache changes no decision: two handlers, one deriving every key per message (as
/// go-algorand) and one caching them (a cache of 64 keys, so it rotates often), see the same
/// congested traffic over a few peers and apps at a small L and decide every message alike,
/// penalties included.
#[test]
fn cached_limiter_keys_decide_like_derived_ones() {
    let mk = |cache: usize| {
        setup(
            config(100_000, 0).with_app_key_cache(cache),
            CommittedMap::default(),
            RecordingPool {
                reject_app: Some(3),
                ..RecordingPool::default()
            },
            3,
        )
    };
    let (derived, cached) = (mk(0), mk(64));
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut outcomes = [0u64; 2];
    for i in 0..3_000u64 {
        let apps: Vec<Tx> = (0..1 + next(3))
            .map(|j| tx(1 + next(8), i * 4 + j))
            .collect();
        let bytes = msg_bytes(&apps);
        let (p, t) = (peer(next(12) as u8), T0 + i * 5_000_000);
        let a = derived.handler.handle(&at(&bytes, p, t));
        let b = cached.handler.handle(&at(&bytes, p, t));
        assert_eq!(a, b, "message {i}");
        outcomes[usize::from(a == Outcome::RateLimited)] += 1;
        if i % 97 == 0 {
            // Rejections of app 3 penalize through the keys of each handler's path.
            derived.handler.drain();
            cached.handler.drain();
        }
    }
    assert!(outcomes[0] > 100 && outcomes[1] > 100, "{outcomes:?}");
    let (d, c) = (derived.handler.stats(), cached.handler.stats());
    assert_eq!((d.rate_limited, d.penalized), (c.rate_limited, c.penalized));
    assert!(d.penalized > 0);
    assert_eq!(
        derived.limiter.tracked_keys(),
        cached.limiter.tracked_keys()
    );
}
