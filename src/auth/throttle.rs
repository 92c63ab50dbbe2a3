//! Brute-force protection for the login form: failed sign-ins are counted per user name and
//! per client address over a sliding window; a successful sign-in costs nothing.
//!
//! The policy (the same shape as Grafana's brute-force login protection): after
//! `per_user` failed attempts for one user name within [`WINDOW`], that name is locked until
//! the oldest of those failures leaves the window; after `per_ip` failures from one address,
//! that address is locked the same way. A locked-out person gets 429 with `Retry-After` and a
//! page saying how long to wait. A correct password does not clear earlier failures, so a
//! guesser who also knows one valid account cannot reset the count.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How far back failed attempts count.
pub const WINDOW: Duration = Duration::from_secs(5 * 60);

/// At most this many distinct keys are remembered per map; past it, the keys whose newest
/// failure is oldest are forgotten first (a flood of made-up names cannot grow memory).
const MAX_KEYS: usize = 100_000;

pub struct LoginThrottle {
    per_user: usize,
    per_ip: usize,
    by_user: Mutex<Failures<String>>,
    by_ip: Mutex<Failures<IpAddr>>,
}

struct Failures<K> {
    times: HashMap<K, VecDeque<Instant>>,
}

impl<K: Eq + Hash + Clone> Failures<K> {
    fn new() -> Self {
        Failures {
            times: HashMap::new(),
        }
    }

    /// Seconds until `key` may try again, when it has `limit` failures inside the window.
    fn locked_for(&mut self, key: &K, limit: usize, now: Instant) -> Option<u64> {
        let times = self.times.get_mut(key)?;
        while times
            .front()
            .is_some_and(|t| now.duration_since(*t) >= WINDOW)
        {
            times.pop_front();
        }
        if times.len() < limit {
            return None;
        }
        let oldest = *times.front()?;
        let wait = WINDOW.saturating_sub(now.duration_since(oldest));
        Some(wait.as_secs().max(1))
    }

    fn record(&mut self, key: K, limit: usize, now: Instant) {
        if self.times.len() >= MAX_KEYS && !self.times.contains_key(&key) {
            self.sweep(now);
            if self.times.len() >= MAX_KEYS {
                let stalest = self
                    .times
                    .iter()
                    .min_by_key(|(_, t)| t.back().copied())
                    .map(|(k, _)| k.clone());
                if let Some(k) = stalest {
                    self.times.remove(&k);
                }
            }
        }
        let times = self.times.entry(key).or_default();
        times.push_back(now);
        // Only the newest `limit` failures matter for the lock.
        while times.len() > limit.max(1) {
            times.pop_front();
        }
    }

    fn sweep(&mut self, now: Instant) {
        self.times
            .retain(|_, t| t.back().is_some_and(|b| now.duration_since(*b) < WINDOW));
    }
}

impl LoginThrottle {
    /// `per_user` / `per_ip` failed attempts allowed within [`WINDOW`].
    pub fn new(per_user: u32, per_ip: u32) -> Self {
        LoginThrottle {
            per_user: per_user.max(1) as usize,
            per_ip: per_ip.max(1) as usize,
            by_user: Mutex::new(Failures::new()),
            by_ip: Mutex::new(Failures::new()),
        }
    }

    fn user_key(user: &str) -> String {
        user.trim().to_lowercase()
    }

    /// `Err(seconds)` when the user name or the address is locked out; counts nothing.
    pub fn check(&self, user: &str, ip: Option<IpAddr>) -> Result<(), u64> {
        self.check_at(user, ip, Instant::now())
    }

    /// Counts one failed attempt for the user name and the address.
    pub fn failed(&self, user: &str, ip: Option<IpAddr>) {
        self.failed_at(user, ip, Instant::now())
    }

    fn check_at(&self, user: &str, ip: Option<IpAddr>, now: Instant) -> Result<(), u64> {
        if let Some(ip) = ip {
            let mut by_ip = self.by_ip.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(wait) = by_ip.locked_for(&ip, self.per_ip, now) {
                return Err(wait);
            }
        }
        let mut by_user = self.by_user.lock().unwrap_or_else(|e| e.into_inner());
        match by_user.locked_for(&Self::user_key(user), self.per_user, now) {
            Some(wait) => Err(wait),
            None => Ok(()),
        }
    }

    fn failed_at(&self, user: &str, ip: Option<IpAddr>, now: Instant) {
        if let Some(ip) = ip {
            let mut by_ip = self.by_ip.lock().unwrap_or_else(|e| e.into_inner());
            by_ip.record(ip, self.per_ip, now);
        }
        let mut by_user = self.by_user.lock().unwrap_or_else(|e| e.into_inner());
        by_user.record(Self::user_key(user), self.per_user, now);
    }

    /// Forgets keys with no failure inside the window (keeps memory bounded).
    pub fn sweep(&self) {
        let now = Instant::now();
        self.by_user
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .sweep(now);
        self.by_ip
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .sweep(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successful_logins_are_never_counted() {
        let t = LoginThrottle::new(5, 20);
        let now = Instant::now();
        for _ in 0..50 {
            assert!(t.check_at("viv", None, now).is_ok());
        }
    }

    #[test]
    fn five_failures_lock_the_name_until_the_oldest_leaves_the_window() {
        let t = LoginThrottle::new(5, 20);
        let start = Instant::now();
        for i in 0..5 {
            assert!(t.check_at("Viv", None, start).is_ok(), "attempt {i}");
            t.failed_at("Viv", None, start + Duration::from_secs(i));
        }
        let now = start + Duration::from_secs(10);
        let wait = t.check_at(" viv ", None, now).unwrap_err();
        assert_eq!(wait, WINDOW.as_secs() - 10);
        // Another name is not affected.
        assert!(t.check_at("ada", None, now).is_ok());
        // Once the first failure is older than the window, one more try is allowed.
        assert!(t.check_at("viv", None, start + WINDOW).is_ok());
    }

    #[test]
    fn an_address_is_locked_after_its_own_limit_across_names() {
        let t = LoginThrottle::new(5, 3);
        let ip: IpAddr = "10.1.2.3".parse().unwrap();
        let now = Instant::now();
        for name in ["a", "b", "c"] {
            t.failed_at(name, Some(ip), now);
        }
        assert!(t.check_at("d", Some(ip), now).is_err());
        assert!(t.check_at("d", None, now).is_ok());
    }

    #[test]
    fn memory_stays_bounded_under_made_up_names() {
        let t = LoginThrottle::new(5, 1_000_000);
        let now = Instant::now();
        for i in 0..(MAX_KEYS + 10) {
            t.failed_at(&format!("name{i}"), None, now);
        }
        assert!(t.by_user.lock().unwrap().times.len() <= MAX_KEYS);
    }
}
