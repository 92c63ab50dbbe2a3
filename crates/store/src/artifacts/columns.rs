//! The one store of a request log's rows in PostgreSQL (`request_columns`,
//! `request_column_chunks`): written while the rows are loaded, read by every page that
//! shows them (the decomposition and its filter menus, comparisons, bubble attribution).
//! The chunks' layout and the numbers are `core::analyze::request_columns`.

use sqlx::{PgConnection, PgPool};

use crate::core::analyze::request_columns::{Chunk, Encoded, Filter};

/// Starts replacing the artifact's rows in the caller's transaction: the old chunks go
/// (readers keep seeing them until the commit) and an empty entry is made.
pub async fn begin(conn: &mut PgConnection, artifact_id: i64) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM request_columns WHERE artifact_id = $1")
        .bind(artifact_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query("INSERT INTO request_columns (artifact_id, rows) VALUES ($1, 0)")
        .bind(artifact_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Stores chunk number `seq` (0, 1, … in file order) of the rows [`begin`] started.
pub async fn put(
    conn: &mut PgConnection,
    artifact_id: i64,
    seq: i32,
    chunk: &Encoded,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO request_column_chunks \
         (artifact_id, seq, tenants, models, arrival_min, arrival_max, rows, data) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(artifact_id)
    .bind(seq)
    .bind(&chunk.tenants)
    .bind(&chunk.models)
    .bind(chunk.arrival_range.map(|r| r.0))
    .bind(chunk.arrival_range.map(|r| r.1))
    .bind(chunk.rows as i32)
    .bind(&chunk.data)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Records how many rows the load stored.
pub async fn finish(conn: &mut PgConnection, artifact_id: i64, rows: u64) -> sqlx::Result<()> {
    sqlx::query("UPDATE request_columns SET rows = $2 WHERE artifact_id = $1")
        .bind(artifact_id)
        .bind(rows as i64)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The query of [`load`] (binds: artifact id, tenant, model version, from, to).
pub const LOAD_SQL: &str = "SELECT tenants, models, rows, data FROM request_column_chunks \
     WHERE artifact_id = $1 AND ($2::text IS NULL OR $2 = ANY (tenants)) \
     AND ($3::text IS NULL OR $3 = ANY (models)) \
     AND ($4::float8 IS NULL OR arrival_max >= $4) AND ($5::float8 IS NULL OR arrival_min < $5) \
     ORDER BY seq";

/// The chunks, in file order, that hold rows the filter can select (by tenant, model
/// version and arrival range; the rows inside are filtered by the computation).
pub async fn load(pool: &PgPool, artifact_id: i64, f: &Filter<'_>) -> sqlx::Result<Vec<Chunk>> {
    let mut out = Vec::new();
    each(pool, artifact_id, f, |c| out.push(c)).await?;
    Ok(out)
}

/// Hands the chunks [`load`] would return to `visit` one at a time, as they are read.
pub async fn each(
    pool: &PgPool,
    artifact_id: i64,
    f: &Filter<'_>,
    mut visit: impl FnMut(Chunk),
) -> sqlx::Result<()> {
    use futures::TryStreamExt;
    type ChunkRow = (Vec<String>, Vec<String>, i32, Vec<u8>);
    let mut rows = sqlx::query_as::<_, ChunkRow>(LOAD_SQL)
        .bind(artifact_id)
        .bind(f.tenant)
        .bind(f.model_version)
        .bind(f.from)
        .bind(f.to)
        .fetch(pool);
    while let Some((tenants, models, n, data)) = rows.try_next().await? {
        let chunk = Chunk::decode(tenants, models, n.max(0) as usize, &data)
            .map_err(|e| sqlx::Error::Decode(e.into()))?;
        visit(chunk);
    }
    Ok(())
}

/// Every chunk of the artifact, in file order.
pub async fn load_all(pool: &PgPool, artifact_id: i64) -> sqlx::Result<Vec<Chunk>> {
    load(pool, artifact_id, &Filter::default()).await
}

/// Distinct tenants and model versions of an artifact's rows (for the filter menus, at
/// most 200 of each), from the chunks' name lists.
pub async fn facets(pool: &PgPool, artifact_id: i64) -> sqlx::Result<(Vec<String>, Vec<String>)> {
    let mut out = Vec::new();
    for col in ["tenants", "models"] {
        out.push(
            sqlx::query_scalar(&format!(
                "SELECT DISTINCT name FROM request_column_chunks, unnest({col}) AS name \
                 WHERE artifact_id = $1 ORDER BY 1 LIMIT 200"
            ))
            .bind(artifact_id)
            .fetch_all(pool)
            .await?,
        );
    }
    let models = out.pop().unwrap_or_default();
    let tenants = out.pop().unwrap_or_default();
    Ok((tenants, models))
}
