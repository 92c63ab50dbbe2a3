//! API tokens: random secrets shown once, stored as sha256, revocable.

use chrono::{DateTime, Utc};
use rand::RngCore;
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use super::users::User;

const PREFIX: &str = "pj_";

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct TokenInfo {
    pub id: i64,
    pub label: String,
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

fn digest(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Creates a token for `user_id`; returns the secret (the only time it exists in clear).
pub async fn create(pool: &PgPool, user_id: i64, label: &str) -> sqlx::Result<(TokenInfo, String)> {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let secret = format!("{PREFIX}{}", hex::encode(bytes));
    let info: TokenInfo = sqlx::query_as(
        "INSERT INTO api_tokens (user_id, label, token_hash, prefix) VALUES ($1, $2, $3, $4)
         RETURNING id, label, prefix, created_at, last_used_at, revoked_at",
    )
    .bind(user_id)
    .bind(label)
    .bind(digest(&secret))
    .bind(&secret[..PREFIX.len() + 6])
    .fetch_one(pool)
    .await?;
    Ok((info, secret))
}

/// The user a presented token belongs to, if the token exists and is not revoked.
/// Lookup is by hash, so timing reveals nothing about stored secrets.
pub async fn authenticate(pool: &PgPool, token: &str) -> sqlx::Result<Option<User>> {
    if !token.starts_with(PREFIX) || token.len() > 200 {
        return Ok(None);
    }
    // One round trip; `last_used_at` is written at most once a minute, so a burst of reads
    // does not turn into a burst of row updates.
    let row: Option<(i64,)> = sqlx::query_as(
        "WITH t AS (
             SELECT id, user_id, last_used_at FROM api_tokens
             WHERE token_hash = $1 AND revoked_at IS NULL
         ), touched AS (
             UPDATE api_tokens SET last_used_at = now() FROM t
             WHERE api_tokens.id = t.id
               AND (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute')
         )
         SELECT user_id FROM t",
    )
    .bind(digest(token))
    .fetch_optional(pool)
    .await?;
    match row {
        Some((uid,)) => Ok(super::users::by_id(pool, uid)
            .await?
            .filter(|u| !u.disabled)),
        None => Ok(None),
    }
}

pub async fn list(pool: &PgPool, user_id: i64) -> sqlx::Result<Vec<TokenInfo>> {
    sqlx::query_as(
        "SELECT id, label, prefix, created_at, last_used_at, revoked_at FROM api_tokens
         WHERE user_id = $1 ORDER BY created_at DESC",
    )
    .bind(user_id)
    .fetch_all(pool)
    .await
}

/// Revokes one of the user's own tokens; false when there is no such live token.
pub async fn revoke(pool: &PgPool, user_id: i64, token_id: i64) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE api_tokens SET revoked_at = now() WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL",
    )
    .bind(token_id)
    .bind(user_id)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Revokes every live token of a user; returns how many.
pub async fn revoke_all(pool: &PgPool, user_id: i64) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "UPDATE api_tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL",
    )
    .bind(user_id)
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}
