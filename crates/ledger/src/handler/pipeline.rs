//! The messages' path through [`Inner`]: the synchronous steps 0 to 5 of
//! [`TxHandler::handle`](super::TxHandler::handle) ([`Inner::pipeline`]) and the worker step
//! that hands a group to the pool ([`Inner::process`]).

use std::panic::{AssertUnwindSafe, catch_unwind};

use txgate_algorand::codec::Txn;
use txgate_ratelimit::{AppKey, AppRateLimiter, Origin};

use super::dedup::Check;
use super::inner::Inner;
use super::interface::{Group, Message, Outcome, Source};
use super::keys::KeyBuf;
use super::stats::Counter;

impl Inner {
    /// Steps 0 to 5 for an open handler.
    pub(super) fn pipeline(&self, msg: &Message<'_>) -> Outcome {
        // 0. Size, before any work proportional to it.
        if msg.bytes.len() > self.max_message_size {
            return Outcome::MessageTooLarge;
        }
        // 1. Raw-message dedup.
        let inserted = match &self.dedup {
            Some(dedup) => match dedup.check_and_put(msg.bytes, msg.received_ns) {
                Check::Duplicate => return Outcome::Duplicate,
                Check::New(inserted) => Some(inserted),
            },
            None => None,
        };
        // 2. Decode. Upstream keeps the message in the dedup cache after every drop except a
        // full backlog, so resending the same bad bytes is a duplicate.
        let txns = match (self.decoder)(msg.bytes) {
            Ok(txns) if txns.is_empty() => return Outcome::DecodeError,
            Ok(txns) if txns.len() > self.max_group_size => return Outcome::GroupTooLarge,
            Ok(txns) => txns,
            Err(_) => return Outcome::DecodeError,
        };
        // 3. Already committed, over each transaction's validity window.
        if txns.iter().any(|t| {
            self.committed
                .is_committed(&t.txid, t.first_valid, t.last_valid)
        }) {
            return Outcome::AlreadyCommitted;
        }
        let app_ids = group_app_ids(&txns);
        // 4. App rate limiter, only under congestion, only for peers' app calls.
        if let (Some(limiter), Source::Peer(origin)) = (&self.limiter, &msg.source)
            && !app_ids.is_empty()
            && self.backlog.len() > self.congestion_threshold
        {
            self.counters.bump(Counter::LimiterChecks);
            let now = msg.received_ns;
            let decision = self
                .with_cached_keys(limiter, origin, &app_ids, |keys| {
                    limiter.admit_keys(keys, now)
                })
                .unwrap_or_else(|| limiter.admit(&app_ids, origin, now));
            if !decision.is_admit() {
                return Outcome::RateLimited;
            }
        }
        // 5. Non-blocking push; full: forget the message so it may be resent.
        let group = Group {
            txns,
            app_ids,
            source: msg.source,
            received_ns: msg.received_ns,
        };
        match self.backlog.push(group) {
            Ok(()) => Outcome::Enqueued,
            Err(_) => {
                if let (Some(dedup), Some(inserted)) = (&self.dedup, inserted) {
                    dedup.remove(&inserted);
                }
                Outcome::BacklogFull
            }
        }
    }

    /// Hands `group` to the sink and counts the result; penalizes a peer's rejected app calls.
    pub(super) fn process(&self, group: Group) {
        match catch_unwind(AssertUnwindSafe(|| self.sink.submit(&group))) {
            Ok(Ok(())) => self.counters.bump(Counter::PoolAccepted),
            Ok(Err(_)) => {
                self.counters.bump(Counter::PoolRejected);
                if let (Some(limiter), Source::Peer(origin)) = (&self.limiter, &group.source)
                    && !group.app_ids.is_empty()
                {
                    let now = group.received_ns;
                    let cached = self.with_cached_keys(limiter, origin, &group.app_ids, |keys| {
                        limiter.penalize_keys(keys, now)
                    });
                    if cached.is_none() {
                        limiter.penalize(&group.app_ids, origin, now);
                    }
                    self.counters.bump(Counter::Penalized);
                }
            }
            Err(_) => self.counters.bump(Counter::SinkPanicked),
        }
    }

    /// `f` of the limiter keys of `app_ids` from `origin`, taken from the key cache; `None` when
    /// the cache is off (the caller then lets the limiter derive them).
    fn with_cached_keys<R>(
        &self,
        limiter: &AppRateLimiter,
        origin: &Origin,
        app_ids: &[u64],
        f: impl FnOnce(&[AppKey]) -> R,
    ) -> Option<R> {
        let cache = self.key_cache.as_ref()?;
        let mut keys = KeyBuf::new();
        cache.keys(limiter, origin, app_ids, &mut keys);
        Some(f(keys.as_slice()))
    }
}

/// The distinct non-zero app ids of `txns`, in first-seen order.
pub(super) fn group_app_ids(txns: &[Txn]) -> Vec<u64> {
    txgate_algorand::codec::distinct_app_ids(txns.iter().flat_map(|t| t.app_ids.iter().copied()))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::Txid;

    fn txn(apps: &[u64]) -> Txn {
        Txn::new(Txid::default(), b"appl")
            .with_first_valid(1)
            .with_last_valid(2)
            .with_app_ids(apps.to_vec())
    }

    #[test]
    fn group_app_ids_are_distinct_nonzero_in_order() {
        let txns = [txn(&[5, 0, 7]), txn(&[7, 9]), txn(&[]), txn(&[5])];
        assert_eq!(group_app_ids(&txns), vec![5, 7, 9]);
        assert!(group_app_ids(&[]).is_empty());
    }
}
