//! Brute-force protection for the login form: failed sign-ins are counted per (user name,
//! client address) and per client address over a sliding window; a successful sign-in costs
//! nothing.
//!
//! The policy: after `per_user` failed attempts for one user name from one address within
//! [`WINDOW`], that name is locked *for that address* until the oldest of those failures
//! leaves the window (so a guesser elsewhere cannot lock the owner of the name out); after
//! `per_ip` failures from one address, whatever the names, that address is locked the same
//! way. The client address is the peer's, or the one a trusted proxy reports
//! ([`client_ip`]). An admin can clear the locks of a name ([`LoginThrottle::clear_name`]). A locked-out person gets 429 with `Retry-After` and a
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
    by_user: Mutex<Failures<(String, Option<IpAddr>)>>,
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
        match by_user.locked_for(&(Self::user_key(user), ip), self.per_user, now) {
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
        by_user.record((Self::user_key(user), ip), self.per_user, now);
    }

    /// The names locked now, with the address each is locked for and the seconds left.
    pub fn locked_names(&self) -> Vec<LockedName> {
        let now = Instant::now();
        let mut by_user = self.by_user.lock().unwrap_or_else(|e| e.into_inner());
        let keys: Vec<_> = by_user.times.keys().cloned().collect();
        let mut out: Vec<LockedName> = keys
            .into_iter()
            .filter_map(|key| {
                let wait = by_user.locked_for(&key, self.per_user, now)?;
                Some(LockedName {
                    name: key.0,
                    address: key.1.map(|ip| ip.to_string()),
                    seconds_left: wait,
                })
            })
            .collect();
        out.sort_by(|a, b| (&a.name, &a.address).cmp(&(&b.name, &b.address)));
        out
    }

    /// Forgets every failure counted for `name` (from any address), and the address-wide
    /// counts of the addresses that name was locked from; returns how many locks ended.
    pub fn clear_name(&self, name: &str) -> usize {
        let now = Instant::now();
        let key = Self::user_key(name);
        let mut by_user = self.by_user.lock().unwrap_or_else(|e| e.into_inner());
        let keys: Vec<_> = by_user
            .times
            .keys()
            .filter(|k| k.0 == key)
            .cloned()
            .collect();
        let mut cleared = 0;
        let mut addresses = Vec::new();
        for k in keys {
            if by_user.locked_for(&k, self.per_user, now).is_some() {
                cleared += 1;
            }
            by_user.times.remove(&k);
            addresses.extend(k.1);
        }
        drop(by_user);
        let mut by_ip = self.by_ip.lock().unwrap_or_else(|e| e.into_inner());
        for ip in addresses {
            by_ip.times.remove(&ip);
        }
        cleared
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

/// A lock on a user name, as the admin page and API list it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LockedName {
    pub name: String,
    /// The client address the name is locked for (absent when the address was unknown).
    pub address: Option<String>,
    pub seconds_left: u64,
}

/// One trusted proxy: an address or a CIDR block (`10.0.0.0/8`, `fd00::/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyNet {
    addr: IpAddr,
    prefix: u8,
}

impl std::str::FromStr for ProxyNet {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a
            .parse()
            .map_err(|_| format!("{s:?} is not an address or CIDR block"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{s:?}: the prefix length must be 0 to {max}"))?,
            None => max,
        };
        Ok(ProxyNet { addr, prefix })
    }
}

impl ProxyNet {
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match (self.addr, ip) {
            (IpAddr::V4(_), IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => return false,
            },
            (_, ip) => ip,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - self.prefix as u32).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - self.prefix as u32).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
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

    #[test]
    fn a_name_is_locked_only_for_the_address_that_failed() {
        let t = LoginThrottle::new(5, 20);
        let attacker: IpAddr = "203.0.113.9".parse().unwrap();
        let owner: IpAddr = "198.51.100.7".parse().unwrap();
        let now = Instant::now();
        for _ in 0..5 {
            t.failed_at("ada", Some(attacker), now);
        }
        assert!(t.check_at("ada", Some(attacker), now).is_err());
        assert!(t.check_at("ada", Some(owner), now).is_ok());
        assert_eq!(t.locked_names().len(), 1);
        assert_eq!(t.clear_name("ADA"), 1);
        assert!(t.check_at("ada", Some(attacker), now).is_ok());
    }

    #[test]
    fn a_proxy_net_is_an_address_or_a_cidr_block() {
        assert!("10.0.0.0/33".parse::<ProxyNet>().is_err());
        assert!("::1"
            .parse::<ProxyNet>()
            .unwrap()
            .contains("::1".parse().unwrap()));
        let net: ProxyNet = "10.0.0.0/8".parse().unwrap();
        assert!(net.contains("10.200.3.4".parse().unwrap()));
        assert!(!net.contains("11.0.0.1".parse().unwrap()));
    }
}
