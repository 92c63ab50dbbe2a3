//! The embedded cluster: first start initializes, a restart keeps the data, and a second
//! start while it runs adopts the running server instead of failing.

use std::os::unix::fs::PermissionsExt;

use crate::common::test_skip;
use perfjournal::db::embedded::ClusterError;

use perfjournal::db::EmbeddedCluster;
use sqlx::{Connection, PgConnection};

async fn start(data_dir: std::path::PathBuf) -> Result<EmbeddedCluster, ClusterError> {
    tokio::task::spawn_blocking(move || EmbeddedCluster::start(&data_dir))
        .await
        .unwrap()
}

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

/// A clone in root's home directory (mode 700): the `postgres` system user cannot traverse
/// it, so the cluster must live where that user can reach it, and later starts find it.
#[tokio::test]
async fn embedded_cluster_starts_under_a_private_directory() {
    EmbeddedCluster::find_binaries().expect("PostgreSQL server binaries (CI installs them)");
    let home = tempfile::Builder::new()
        .prefix("pj-private-home-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let data = home.path().join("clone/data");
    let cluster = start(data.clone())
        .await
        .expect("start under a mode-700 directory");
    let root = unsafe { libc::geteuid() } == 0;
    let kept_outside = !cluster.cluster_dir().starts_with(home.path());
    println!(
        "running as {}; cluster at {}",
        if root { "root" } else { "a normal user" },
        cluster.cluster_dir().display()
    );
    // As root the server runs as `postgres`, which cannot enter the 700 dir: the cluster moves
    // out and the data dir records where; as a normal user it stays in place.
    assert_eq!(kept_outside, root);
    assert_eq!(
        data.join(perfjournal::db::embedded::LOCATION_FILE).exists(),
        root
    );
    let pool = perfjournal::db::connect(cluster.connect_options("perfjournal"))
        .await
        .unwrap();
    sqlx::query("INSERT INTO users (name, password_hash, role) VALUES ('home', 'x', 'viewer')")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let c = cluster.clone();
    tokio::task::spawn_blocking(move || c.stop())
        .await
        .unwrap()
        .expect("stop");

    // A restart finds the same cluster, with the row in it.
    let again = start(data.clone()).await.expect("restart");
    assert_eq!(again.cluster_dir(), cluster.cluster_dir());
    let mut conn = PgConnection::connect_with(&again.connect_options("perfjournal"))
        .await
        .unwrap();
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM users WHERE name = 'home'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(n, 1);
    conn.close().await.unwrap();
    let c = again.clone();
    tokio::task::spawn_blocking(move || c.stop())
        .await
        .unwrap()
        .expect("stop");
    if kept_outside {
        std::fs::remove_dir_all(cluster.cluster_dir().parent().unwrap()).unwrap();
    }
}
