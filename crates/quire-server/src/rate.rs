//! Rate limits per API token and per client address: each a budget of requests per minute
//! that refills continuously (GCRA), checked before a request is routed. Loopback clients
//! are not limited unless the operator says so (local tools, tests and benchmarks).

use std::hash::{BuildHasher, Hash};

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

type Keyed<K> = RateLimiter<K, DefaultKeyedStateStore<K>, DefaultClock, StateInformationMiddleware>;

/// A budget: its size per minute and its per-key state.
struct Budget<K: Hash + Eq + Clone> {
    per_minute: u32,
    limiter: Keyed<K>,
}

impl<K: Hash + Eq + Clone> Budget<K> {
    fn new(per_minute: u32) -> Option<Self> {
        let n = NonZeroU32::new(per_minute)?;
        Some(Self {
            per_minute,
            limiter: RateLimiter::keyed(Quota::per_minute(n)).with_middleware(),
        })
    }

    fn check(&self, key: &K, clock: &DefaultClock) -> Verdict {
        match self.limiter.check_key(key) {
            Ok(state) => {
                let remaining = state.remaining_burst_capacity();
                // The whole budget is back once every spent request has refilled.
                let spent = u64::from(self.per_minute.saturating_sub(remaining));
                let reset = (spent * 60).div_ceil(u64::from(self.per_minute));
                Verdict::Allowed(Headroom {
                    limit: self.per_minute,
                    remaining,
                    reset_secs: reset,
                })
            }
            Err(not_until) => {
                let wait = not_until.wait_time_from(clock.now());
                Verdict::Refused {
                    limit: self.per_minute,
                    retry_after: wait.max(Duration::from_secs(1)),
                }
            }
        }
    }
}

/// What is left of the tightest budget a request was counted against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headroom {
    /// Requests per minute of that budget.
    pub limit: u32,
    /// Requests left right now.
    pub remaining: u32,
    /// Seconds until the budget is whole again.
    pub reset_secs: u64,
}

/// The outcome of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not limited (no budget applies).
    Unlimited,
    /// Counted, with what is left.
    Allowed(Headroom),
    /// Over budget: refuse with 429.
    Refused {
        /// Requests per minute of the exhausted budget.
        limit: u32,
        /// When the next request would be accepted.
        retry_after: Duration,
    },
}

/// The node's rate limits.
pub struct RateLimits {
    per_token: Option<Budget<u64>>,
    per_address: Option<Budget<IpAddr>>,
    loopback: bool,
    /// Token keys are hashed with a per-process key: no token is kept in memory.
    hasher: std::collections::hash_map::RandomState,
    clock: DefaultClock,
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits")
            .field("per_token", &self.per_token.as_ref().map(|b| b.per_minute))
            .field(
                "per_address",
                &self.per_address.as_ref().map(|b| b.per_minute),
            )
            .field("loopback", &self.loopback)
            .finish()
    }
}

impl RateLimits {
    /// Budgets of `per_token` and `per_address` requests a minute (0: none); `loopback`
    /// limits loopback clients too.
    pub fn new(per_token: u32, per_address: u32, loopback: bool) -> Self {
        Self {
            per_token: Budget::new(per_token),
            per_address: Budget::new(per_address),
            loopback,
            hasher: Default::default(),
            clock: DefaultClock::default(),
        }
    }

    /// Counts a request from `address` with `token` (the bearer token, as authentication
    /// reads it).
    pub fn check(&self, address: Option<IpAddr>, token: Option<&[u8]>) -> Verdict {
        let Some(address) = address else {
            return Verdict::Unlimited;
        };
        if address.is_loopback() && !self.loopback {
            return Verdict::Unlimited;
        }
        let by_address = self
            .per_address
            .as_ref()
            .map(|budget| budget.check(&address, &self.clock));
        let by_token = match (&self.per_token, token) {
            (Some(budget), Some(token)) => {
                Some(budget.check(&self.hasher.hash_one(token), &self.clock))
            }
            _ => None,
        };
        tightest(by_address, by_token)
    }

    /// Forgets keys whose budgets are whole again (bounds the memory of many clients).
    pub fn sweep(&self) {
        if let Some(b) = &self.per_token {
            b.limiter.retain_recent();
            b.limiter.shrink_to_fit();
        }
        if let Some(b) = &self.per_address {
            b.limiter.retain_recent();
            b.limiter.shrink_to_fit();
        }
    }
}

/// A refusal wins; else the budget with the fewest requests left.
fn tightest(a: Option<Verdict>, b: Option<Verdict>) -> Verdict {
    match (a, b) {
        (None, None) => Verdict::Unlimited,
        (Some(v), None) | (None, Some(v)) => v,
        (Some(r @ Verdict::Refused { .. }), _) | (_, Some(r @ Verdict::Refused { .. })) => r,
        (Some(Verdict::Allowed(x)), Some(Verdict::Allowed(y))) => {
            Verdict::Allowed(if x.remaining <= y.remaining { x } else { y })
        }
        (Some(v), Some(_)) => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_spent_then_refused_with_a_wait() {
        let limits = RateLimits::new(0, 3, true);
        let addr: IpAddr = "127.0.0.1".parse().unwrap();
        for left in [2, 1, 0] {
            match limits.check(Some(addr), None) {
                Verdict::Allowed(h) => {
                    assert_eq!(h.limit, 3);
                    assert_eq!(h.remaining, left);
                }
                other => panic!("expected allowed, got {other:?}"),
            }
        }
        match limits.check(Some(addr), None) {
            Verdict::Refused { limit, retry_after } => {
                assert_eq!(limit, 3);
                assert!(retry_after >= Duration::from_secs(1), "{retry_after:?}");
                assert!(retry_after <= Duration::from_secs(21), "{retry_after:?}");
            }
            other => panic!("expected refused, got {other:?}"),
        }
        // Another address has its own budget.
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        assert!(matches!(
            limits.check(Some(other), None),
            Verdict::Allowed(_)
        ));
    }

    #[test]
    fn tokens_have_their_own_budget_and_loopback_is_free_unless_asked() {
        let limits = RateLimits::new(1, 0, false);
        let local: IpAddr = "::1".parse().unwrap();
        for _ in 0..5 {
            assert_eq!(limits.check(Some(local), Some(b"t")), Verdict::Unlimited);
        }
        let remote: IpAddr = "192.0.2.7".parse().unwrap();
        assert!(matches!(
            limits.check(Some(remote), Some(b"a")),
            Verdict::Allowed(_)
        ));
        assert!(matches!(
            limits.check(Some(remote), Some(b"a")),
            Verdict::Refused { .. }
        ));
        assert!(matches!(
            limits.check(Some(remote), Some(b"b")),
            Verdict::Allowed(_)
        ));
        // No token: only the address budget applies, and there is none.
        assert_eq!(limits.check(Some(remote), None), Verdict::Unlimited);
    }
}
