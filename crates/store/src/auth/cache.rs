//! Copies kept in memory for at most [`FRESH_FOR`]: the user, as the session and token
//! checks read it, and (through [`Fresh`]) the binary's copy of session records. A
//! signed-in page view reads both before its own queries: two of an entry page's four
//! queries (docs/pages.md has the profile). What this process changes it also changes
//! here at once (a session saved or deleted, a user's role, password or disabled flag
//! set), so the change applies to this process's next request; a change made through
//! another replica (or the CLI) applies here within [`FRESH_FOR`]. The one window
//! left here: a request already reading from PostgreSQL when the change lands may store
//! the copy it read afterwards, which then serves for at most [`FRESH_FOR`], as on another
//! replica.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a copy is used before the database is asked again.
pub const FRESH_FOR: Duration = Duration::from_secs(1);

/// Copies kept at most; past it, the stale ones are dropped (all of them, if every copy
/// is fresh), so memory stays bounded whatever the number of sessions.
const MAX_ENTRIES: usize = 10_000;

/// Values by key, each used for [`FRESH_FOR`] after it was stored.
#[derive(Debug)]
pub struct Fresh<K, V> {
    map: Mutex<HashMap<K, (V, Instant)>>,
}

impl<K, V> Default for Fresh<K, V> {
    fn default() -> Self {
        Fresh {
            map: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash, V: Clone> Fresh<K, V> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, (V, Instant)>> {
        // A panic elsewhere cannot leave a half-written entry: use the map as it is.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, key: &K) -> Option<V> {
        let map = self.lock();
        let (value, at) = map.get(key)?;
        (at.elapsed() < FRESH_FOR).then(|| value.clone())
    }

    pub fn put(&self, key: K, value: V) {
        let mut map = self.lock();
        if map.len() >= MAX_ENTRIES {
            map.retain(|_, (_, at)| at.elapsed() < FRESH_FOR);
            if map.len() >= MAX_ENTRIES {
                map.clear();
            }
        }
        map.insert(key, (value, Instant::now()));
    }

    pub fn forget(&self, key: &K) {
        self.lock().remove(key);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

/// Users by id, for the session and token checks.
#[derive(Debug, Default)]
pub struct UserCopies(Fresh<i64, super::User>);

impl UserCopies {
    pub fn get(&self, id: i64) -> Option<super::User> {
        self.0.get(&id)
    }

    pub fn put(&self, user: &super::User) {
        self.0.put(user.id, user.clone());
    }

    /// After this process changed the user.
    pub fn forget(&self, id: i64) {
        self.0.forget(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_used_for_a_second_then_asked_again() {
        let f: Fresh<i64, &str> = Fresh::default();
        f.put(1, "a");
        assert_eq!(f.get(&1), Some("a"));
        f.lock().get_mut(&1).unwrap().1 = Instant::now() - FRESH_FOR;
        assert_eq!(f.get(&1), None, "a copy older than FRESH_FOR is not used");
        f.put(1, "b");
        f.forget(&1);
        assert_eq!(f.get(&1), None);
    }

    #[test]
    fn memory_stays_bounded() {
        let f: Fresh<usize, usize> = Fresh::default();
        for i in 0..MAX_ENTRIES * 3 {
            f.put(i, i);
        }
        assert!(f.len() <= MAX_ENTRIES);
        assert_eq!(f.get(&(MAX_ENTRIES * 3 - 1)), Some(MAX_ENTRIES * 3 - 1));
    }
}
