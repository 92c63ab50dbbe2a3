//! The search thesaurus as stored (`search_synonyms`): listing and admins' edits. Each
//! edit advances the search generation in the same transaction, so every server's index
//! reloads the thesaurus and no cached answer outlives the change.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::core::recall::thesaurus::check_terms;
use crate::core::FieldError;
use crate::error::{Error, Result};

/// One group of terms that mean the same.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Group {
    pub id: i64,
    pub terms: Vec<String>,
    pub updated_at: DateTime<Utc>,
    /// Who last changed it (`None` for the groups the app ships with).
    pub updated_by: Option<String>,
}

/// Every group, oldest first.
pub async fn list(pool: &PgPool) -> Result<Vec<Group>> {
    Ok(sqlx::query_as(
        "SELECT s.id, s.terms, s.updated_at, u.name AS updated_by FROM search_synonyms s \
         LEFT JOIN users u ON u.id = s.updated_by ORDER BY s.id",
    )
    .fetch_all(pool)
    .await?)
}

/// The terms checked ([`check_terms`]), and each read by PostgreSQL: a term of only
/// stop words ("the", "of it") would match nothing and is refused naming it.
async fn checked(pool: &PgPool, terms: &[String]) -> Result<Vec<String>> {
    let terms = check_terms(terms).map_err(Error::Invalid)?;
    let empty: Vec<i64> = sqlx::query_scalar(
        "SELECT n - 1 FROM unnest($1::text[]) WITH ORDINALITY AS t(term, n) \
         WHERE phraseto_tsquery('english', term)::text = '' ORDER BY n",
    )
    .bind(&terms)
    .fetch_all(pool)
    .await?;
    if !empty.is_empty() {
        return Err(Error::Invalid(
            empty
                .into_iter()
                .map(|i| {
                    FieldError::new(
                        format!("terms[{i}]"),
                        "only common words that search ignores (such as \"the\", \"of\"); add a meaningful word",
                    )
                })
                .collect(),
        ));
    }
    Ok(terms)
}

/// Adds a group; returns its id.
pub async fn create(pool: &PgPool, terms: &[String], by: i64) -> Result<i64> {
    let terms = checked(pool, terms).await?;
    let mut tx = pool.begin().await?;
    sqlx::query("UPDATE search_state SET generation = generation + 1")
        .execute(&mut *tx)
        .await?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO search_synonyms (terms, updated_by) VALUES ($1, $2) RETURNING id",
    )
    .bind(&terms)
    .bind(by)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// Replaces a group's terms; `false` when there is no such group.
pub async fn update(pool: &PgPool, id: i64, terms: &[String], by: i64) -> Result<bool> {
    let terms = checked(pool, terms).await?;
    let mut tx = pool.begin().await?;
    sqlx::query("UPDATE search_state SET generation = generation + 1")
        .execute(&mut *tx)
        .await?;
    let changed = sqlx::query(
        "UPDATE search_synonyms SET terms = $2, updated_by = $3, updated_at = now() WHERE id = $1",
    )
    .bind(id)
    .bind(&terms)
    .bind(by)
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1;
    if changed {
        tx.commit().await?;
    }
    Ok(changed)
}

/// Removes a group; `false` when there is no such group.
pub async fn delete(pool: &PgPool, id: i64) -> Result<bool> {
    let mut tx = pool.begin().await?;
    sqlx::query("UPDATE search_state SET generation = generation + 1")
        .execute(&mut *tx)
        .await?;
    let removed = sqlx::query("DELETE FROM search_synonyms WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected()
        == 1;
    if removed {
        tx.commit().await?;
    }
    Ok(removed)
}
