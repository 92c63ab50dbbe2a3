//! The embedded cluster: first start initializes, a restart keeps the data, and a second
//! start while it runs adopts the running server instead of failing.

use std::os::unix::fs::PermissionsExt;

#[path = "../src/test_skip.rs"]
mod test_skip;

use perfjournal::db::EmbeddedCluster;
use sqlx::{Connection, PgConnection};

#[tokio::test]
async fn embedded_cluster_restarts_with_its_data() {
    if EmbeddedCluster::find_binaries().is_err() {
        test_skip::skip(
            "embedded_cluster_restarts_with_its_data",
            "no PostgreSQL server binaries on this machine",
        );
        return;
    }
    let tmp = tempfile::Builder::new()
        .prefix("pj-embedded-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = tmp.path().join("data");

    let start = |d: std::path::PathBuf| async move {
        tokio::task::spawn_blocking(move || EmbeddedCluster::start(&d))
            .await
            .unwrap()
    };
    let cluster = start(data.clone()).await.expect("first start");
    assert!(cluster.started_here());
    assert!(data.join("postgres/PG_VERSION").exists());
    let pool = perfjournal::db::connect(cluster.connect_options("perfjournal"))
        .await
        .unwrap();
    sqlx::query("INSERT INTO users (name, password_hash, role) VALUES ('kept', 'x', 'viewer')")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    // A second start while running adopts the server and will not stop it.
    let adopted = start(data.clone()).await.expect("adopt running server");
    assert!(!adopted.started_here());

    let c = cluster.clone();
    tokio::task::spawn_blocking(move || c.stop())
        .await
        .unwrap()
        .expect("stop");
    assert!(!cluster.is_running());

    let again = start(data.clone()).await.expect("restart");
    assert!(again.started_here());
    let mut conn = PgConnection::connect_with(&again.connect_options("perfjournal"))
        .await
        .unwrap();
    let name: String = sqlx::query_scalar("SELECT name FROM users")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(name, "kept");
    conn.close().await.unwrap();
    let c = again.clone();
    tokio::task::spawn_blocking(move || c.stop())
        .await
        .unwrap()
        .expect("stop");
}

#[test]
fn missing_binaries_message_names_both_ways_out() {
    let msg = perfjournal::db::embedded::ClusterError::NoBinaries.to_string();
    assert!(msg.contains("install PostgreSQL"));
    assert!(msg.contains("DATABASE_URL"));
}
