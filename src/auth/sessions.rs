//! Sessions as every page reads them, kept in memory for at most
//! [`FRESH_FOR`](perfjournal_store::auth::cache::FRESH_FOR) in front of PostgreSQL (the
//! store's `auth::cache` says why and what a change made elsewhere costs).

use std::sync::Arc;

use async_trait::async_trait;
use perfjournal_store::auth::cache::Fresh;
use tower_sessions::cookie::time::OffsetDateTime;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};

/// The session store's front: `tower_sessions::CachingSessionStore` asks it first, and
/// saves and deletes go to both it and PostgreSQL.
/// Clones share the copies (the session layer clones its store).
#[derive(Debug, Default, Clone)]
pub struct SessionCopies(Arc<Fresh<Id, Record>>);

#[async_trait]
impl SessionStore for SessionCopies {
    /// The store behind the copies (PostgreSQL) creates first and has already given the
    /// record an id no other session holds; the copy only keeps it.
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        self.save(record).await
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        self.0.put(record.id, record.clone());
        Ok(())
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        Ok(self
            .0
            .get(id)
            .filter(|r| r.expiry_date > OffsetDateTime::now_utc()))
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        self.0.forget(id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_expired_session_is_not_served_from_memory() {
        let copies = SessionCopies::default();
        let mut record = Record {
            id: Id::default(),
            data: Default::default(),
            expiry_date: OffsetDateTime::now_utc()
                + tower_sessions::cookie::time::Duration::hours(1),
        };
        copies.save(&record).await.unwrap();
        assert!(copies.load(&record.id).await.unwrap().is_some());
        record.expiry_date =
            OffsetDateTime::now_utc() - tower_sessions::cookie::time::Duration::seconds(1);
        copies.save(&record).await.unwrap();
        assert!(copies.load(&record.id).await.unwrap().is_none());
        copies.delete(&record.id).await.unwrap();
        assert!(copies.load(&record.id).await.unwrap().is_none());
    }
}
