//! The column copy of a request log's phase times in PostgreSQL (`request_columns`,
//! `request_column_chunks`): written once when the rows are loaded, read by the
//! decomposition page. The numbers are computed by `core::analyze::request_columns`.

use sqlx::{PgConnection, PgPool};

use crate::core::analyze::request_columns::{Chunk, Filter};

/// Replaces the artifact's column copy with `chunks` (`rows` rows in all), in the caller's
/// transaction. Called after the COPY of the same rows.
pub async fn store(
    conn: &mut PgConnection,
    artifact_id: i64,
    rows: u64,
    chunks: &[Chunk],
) -> sqlx::Result<()> {
    forget(conn, artifact_id).await?;
    sqlx::query("INSERT INTO request_columns (artifact_id, rows) VALUES ($1, $2)")
        .bind(artifact_id)
        .bind(rows as i64)
        .execute(&mut *conn)
        .await?;
    for c in chunks {
        let range = c.arrival_range();
        sqlx::query(
            "INSERT INTO request_column_chunks \
             (artifact_id, tenant, model_version, arrival_min, arrival_max, rows, data) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(artifact_id)
        .bind(&c.tenant)
        .bind(&c.model_version)
        .bind(range.map(|r| r.0))
        .bind(range.map(|r| r.1))
        .bind(c.rows() as i32)
        .bind(c.encode())
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Drops the artifact's column copy (its rows are being replaced, or cannot be copied).
pub async fn forget(conn: &mut PgConnection, artifact_id: i64) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM request_columns WHERE artifact_id = $1")
        .bind(artifact_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Whether the artifact has a column copy (logs loaded before it existed have none).
pub async fn exists(pool: &PgPool, artifact_id: i64) -> sqlx::Result<bool> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM request_columns WHERE artifact_id = $1)")
        .bind(artifact_id)
        .fetch_one(pool)
        .await
}

/// The query of [`load`] (binds: artifact id, tenant, model version, from, to).
pub const LOAD_SQL: &str = "SELECT tenant, model_version, rows, data FROM request_column_chunks \
     WHERE artifact_id = $1 AND ($2::text IS NULL OR tenant = $2) \
     AND ($3::text IS NULL OR model_version = $3) \
     AND ($4::float8 IS NULL OR arrival_max >= $4) AND ($5::float8 IS NULL OR arrival_min < $5)";

/// The chunks the filter can select from (by tenant, model version and arrival range;
/// the rows inside are filtered by the computation).
pub async fn load(pool: &PgPool, artifact_id: i64, f: &Filter<'_>) -> sqlx::Result<Vec<Chunk>> {
    type ChunkRow = (Option<String>, Option<String>, i32, Vec<u8>);
    let rows: Vec<ChunkRow> = sqlx::query_as(LOAD_SQL)
        .bind(artifact_id)
        .bind(f.tenant)
        .bind(f.model_version)
        .bind(f.from)
        .bind(f.to)
        .fetch_all(pool)
        .await?;
    rows.into_iter()
        .map(|(tenant, model, n, data)| {
            Chunk::decode(tenant, model, n.max(0) as usize, &data)
                .map_err(|e| sqlx::Error::Decode(e.into()))
        })
        .collect()
}
