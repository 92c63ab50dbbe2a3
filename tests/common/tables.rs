//! What the database holds, for tests that assert a request changed nothing: rows per
//! table, and PostgreSQL's per-table write counters (which also see updates).

use std::collections::BTreeMap;

use sqlx::PgPool;

/// Rows in every table of the application's schema, by table.
pub async fn row_counts(pool: &PgPool) -> BTreeMap<String, i64> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut out = BTreeMap::new();
    for t in tables {
        let n: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM \"{t}\""))
            .fetch_one(pool)
            .await
            .unwrap();
        out.insert(t, n);
    }
    out
}

/// Every connection of the pool flushes its pending table statistics, then the
/// cumulative inserts, updates and deletes per table of the app's schema. (The
/// session store's own schema is left out: keeping a session alive is not app state.)
pub async fn write_counters(pool: &PgPool) -> BTreeMap<String, (i64, i64, i64)> {
    let mut conns = Vec::new();
    for _ in 0..pool.size() {
        conns.push(pool.acquire().await.unwrap());
    }
    for c in conns.iter_mut() {
        sqlx::query("SELECT pg_stat_force_next_flush()")
            .execute(&mut **c)
            .await
            .unwrap();
        sqlx::query("SELECT 1").execute(&mut **c).await.unwrap();
    }
    drop(conns);
    // Backends publish their counters asynchronously (when idle, at most about once a
    // second): read until the counters have held still for longer than that interval, so
    // a busy machine cannot hand us a snapshot from before the last writes.
    let mut conn = pool.acquire().await.unwrap();
    let mut last = None;
    let mut same = 0;
    for _ in 0..60 {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        sqlx::query("SELECT pg_stat_clear_snapshot()")
            .execute(&mut *conn)
            .await
            .unwrap();
        let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(
            "SELECT relname::text, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables \
             WHERE schemaname = 'public' ORDER BY 1",
        )
        .fetch_all(&mut *conn)
        .await
        .unwrap();
        let now: BTreeMap<String, (i64, i64, i64)> = rows
            .into_iter()
            .map(|(t, i, u, d)| (t, (i, u, d)))
            .collect();
        if last.as_ref() == Some(&now) {
            same += 1;
            if same >= 5 {
                return now;
            }
        } else {
            same = 0;
        }
        last = Some(now);
    }
    last.unwrap()
}
