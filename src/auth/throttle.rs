//! Login attempts per username and per client address, with governor's GCRA limiter.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

pub struct LoginThrottle {
    by_user: DefaultKeyedRateLimiter<String>,
    by_ip: DefaultKeyedRateLimiter<IpAddr>,
}

impl LoginThrottle {
    /// `per_user` / `per_ip` attempts per minute, each with the same burst.
    pub fn new(per_user: u32, per_ip: u32) -> Self {
        let quota =
            |n: u32| Quota::per_minute(NonZeroU32::new(n.max(1)).expect("max(1) is non-zero"));
        LoginThrottle {
            by_user: RateLimiter::keyed(quota(per_user)),
            by_ip: RateLimiter::keyed(quota(per_ip)),
        }
    }

    /// Counts one attempt; `Err(seconds)` when the user or the address is over its quota.
    pub fn check(&self, user: &str, ip: Option<IpAddr>) -> Result<(), u64> {
        let clock = DefaultClock::default();
        let wait = |not_until: governor::NotUntil<_>| {
            not_until
                .wait_time_from(clock.now())
                .max(Duration::from_secs(1))
                .as_secs()
        };
        if let Some(ip) = ip {
            self.by_ip.check_key(&ip).map_err(wait)?;
        }
        self.by_user
            .check_key(&user.trim().to_lowercase())
            .map_err(wait)?;
        Ok(())
    }

    /// Forgets keys whose quota has fully replenished (keeps memory bounded).
    pub fn sweep(&self) {
        self.by_user.retain_recent();
        self.by_ip.retain_recent();
    }
}
