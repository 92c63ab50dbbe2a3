//! The memory commands against a real database: export and import, backup and restore.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use axum::http::StatusCode;
use common::{fresh_db, spawn_app, TestApp};
use futures::stream;
use sqlx::PgPool;

fn perfjournal(database_url: &str, data_dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfjournal"))
        .args(args)
        .env("DATABASE_URL", database_url)
        .env("PERFJOURNAL_DATA_DIR", data_dir)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run the binary")
}

async fn run(database_url: &str, data_dir: &Path, args: &[&str]) -> Output {
    let (url, dir) = (database_url.to_string(), data_dir.to_path_buf());
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        perfjournal(&url, &dir, &args)
    })
    .await
    .unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

async fn entry(app: &mut TestApp, title: &str, diagnosis: &str) {
    let r = app
        .post_form(
            "/journal",
            &[
                ("title", title),
                ("date", "2026-03-14"),
                ("symptom", "p95 TTFT 3,200 ms vs target 800 ms"),
                ("workload", "prompt tokens mean 1,800"),
                ("diagnosis", diagnosis),
                ("change", "Enabled chunked prefill"),
                ("result", "p95 TTFT 780 ms"),
                ("quality", "200 paired generations identical"),
                ("effort", "30 minutes"),
                ("action", "publish"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
}

#[tokio::test]
async fn export_prints_markdown_and_import_reads_it_back() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    entry(
        &mut app,
        "First",
        "Queue-bound.\n# not a heading\nsecond line",
    )
    .await;
    entry(&mut app, "Second", "Prefill dominates.").await;
    let dir = tempfile::tempdir().unwrap();

    let stdout = ok(&run(&app.database_url, dir.path(), &["export"]).await);
    assert_eq!(stdout, app.get("/journal/export.md").await.body);
    let json_file = dir.path().join("journal.json");
    ok(&run(
        &app.database_url,
        dir.path(),
        &[
            "export",
            "--format",
            "json",
            "--out",
            json_file.to_str().unwrap(),
        ],
    )
    .await);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_file).unwrap()).unwrap();
    assert_eq!(json["entries"].as_array().unwrap().len(), 2);

    // Into a fresh instance, from the Markdown file.
    let mut target = spawn_app().await;
    target.setup_admin("bob").await;
    let md_file = dir.path().join("journal.md");
    std::fs::write(&md_file, &stdout).unwrap();
    let out = run(
        &target.database_url,
        dir.path(),
        &["import", md_file.to_str().unwrap()],
    )
    .await;
    assert!(ok(&out).starts_with("imported 2 entries"));
    assert_eq!(
        ok(&run(&target.database_url, dir.path(), &["export"]).await),
        stdout
    );

    // A broken file: a failure naming the line, and nothing stored.
    let bad = dir.path().join("bad.md");
    std::fs::write(&bad, "# T\n\n## DATE\n\n2026-01-01\n\n## MOOD\n").unwrap();
    let out = run(
        &target.database_url,
        dir.path(),
        &["import", bad.to_str().unwrap()],
    )
    .await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 7: unknown section 'MOOD'"), "{err}");
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM journal_entries")
        .fetch_one(&target.pool)
        .await
        .unwrap();
    assert_eq!(count, 2);
}

/// Every row of every table (and every sequence position), as sortable text.
async fn contents(pool: &PgPool) -> Vec<(String, Vec<String>)> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables \
         WHERE schemaname IN ('public', 'tower_sessions') ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut out = Vec::new();
    for t in tables {
        let rows: Vec<String> =
            sqlx::query_scalar(&format!("SELECT t::text FROM {t} t ORDER BY t::text"))
                .fetch_all(pool)
                .await
                .unwrap();
        out.push((t, rows));
    }
    let sequences: Vec<String> = sqlx::query_scalar(
        "SELECT format('%s=%s', sequencename, last_value) FROM pg_sequences ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    out.push(("sequences".into(), sequences));
    out
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    if !dir.exists() {
        return out;
    }
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            out.extend(
                files(&entry.path())
                    .into_iter()
                    .map(|(n, b)| (format!("{}/{n}", entry.file_name().to_string_lossy()), b)),
            );
        } else {
            out.push((
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path()).unwrap(),
            ));
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn backup_then_restore_gives_an_identical_instance() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    app.seed_demo().await;
    entry(&mut app, "Direct", "Queue-bound.").await;
    // Build the search documents too, so they are part of what is compared.
    assert_eq!(app.get("/search?q=prefill").await.status, StatusCode::OK);

    // Two uploaded files in the data directory's blob store, with their rows.
    let data = tempfile::tempdir().unwrap();
    let blobs = perfjournal::storage::BlobStore::local(&data.path().join("blobs")).unwrap();
    for body in [
        &b"request_id,total_ms\nr1,812.5\n"[..],
        &[0u8, 159, 146, 150, 255][..],
    ] {
        let chunk: Result<bytes::Bytes, std::io::Error> = Ok(bytes::Bytes::copy_from_slice(body));
        let stored = blobs
            .put_stream(stream::iter([chunk]), 1 << 20)
            .await
            .unwrap();
        sqlx::query(
            "INSERT INTO artifacts (name, kind, sha256, size_bytes, status, uploaded_by, \
                                    blob_encoding, stored_bytes) \
             VALUES ($1, 'unknown', $2, $3, 'not_analyzed', (SELECT min(id) FROM users), $4, $5)",
        )
        .bind(format!("upload-{}.bin", &stored.sha256[..8]))
        .bind(&stored.sha256)
        .bind(stored.size as i64)
        .bind(stored.encoding.slug())
        .bind(stored.stored_size as i64)
        .execute(&app.pool)
        .await
        .unwrap();
    }
    let before = contents(&app.pool).await;

    let backup = tempfile::tempdir().unwrap();
    let dir = backup.path().join("b1");
    let out = run(
        &app.database_url,
        data.path(),
        &["backup", "--out", dir.to_str().unwrap()],
    )
    .await;
    assert!(ok(&out).contains("2 files"));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["format"], "perfjournal-backup");
    assert!(dir.join("database.dump").is_file());

    // Restore into a new database and an empty data directory.
    let (fresh_pool, fresh_url) = fresh_db().await;
    let fresh_data = tempfile::tempdir().unwrap();
    ok(&run(
        &fresh_url,
        fresh_data.path(),
        &["restore", dir.to_str().unwrap()],
    )
    .await);
    fresh_pool.close().await;
    let restored = perfjournal::db::connect(
        fresh_url
            .parse::<sqlx::postgres::PgConnectOptions>()
            .unwrap(),
    )
    .await
    .unwrap();
    let after = contents(&restored).await;
    assert_eq!(before.len(), after.len());
    for ((t1, r1), (t2, r2)) in before.iter().zip(&after) {
        assert_eq!(t1, t2);
        assert_eq!(r1, r2, "table {t1} differs after restore");
    }
    let original = files(&data.path().join("blobs").join("sha256"));
    assert_eq!(original.len(), 2);
    assert_eq!(
        files(&fresh_data.path().join("blobs").join("sha256")),
        original
    );

    // Not a backup: a clear failure.
    let out = run(
        &fresh_url,
        fresh_data.path(),
        &["restore", backup.path().to_str().unwrap()],
    )
    .await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("manifest.json"));
}

/// A journal longer than one read batch: both exports (page and CLI) hold every entry once,
/// oldest first; importing the JSON recreates the same journal, all in one transaction.
#[tokio::test]
async fn a_long_journal_exports_in_order_and_imports_whole() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    sqlx::query(
        "INSERT INTO journal_entries (author_id, title, entry_date, symptom, workload, baseline, \
           diagnosis, change, result, quality, effort, published_at) \
         SELECT u.id, 'Entry ' || g, date '2020-01-01' + g, 'p95 TTFT ' || g || ' ms', 'w', 'b', \
           'queue-bound ' || g, 'c', 'r', 'q', '1 day', now() \
         FROM users u, generate_series(1, 1234) g WHERE u.name = 'ada'",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let page = app.get("/journal/export.json").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.headers["content-disposition"]
        .to_str()
        .unwrap()
        .contains("journal.json"));
    let json = page.json();
    let titles: Vec<&str> = json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["title"].as_str().unwrap())
        .collect();
    let want: Vec<String> = (1..=1234).map(|g| format!("Entry {g}")).collect();
    assert_eq!(
        titles, want,
        "every entry once, oldest first, across read batches"
    );
    let md = app.get("/journal/export.md").await.body;
    assert_eq!(md.matches("\n## DIAGNOSIS").count(), 1234);
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        ok(&run(&app.database_url, dir.path(), &["export"]).await),
        md
    );

    let file = dir.path().join("journal.json");
    std::fs::write(&file, &page.body).unwrap();
    let mut target = spawn_app().await;
    target.setup_admin("bob").await;
    let out = run(
        &target.database_url,
        dir.path(),
        &["import", file.to_str().unwrap()],
    )
    .await;
    assert!(
        ok(&out).starts_with("imported 1234 entries"),
        "{}",
        ok(&out)
    );
    assert_eq!(target.get("/journal/export.md").await.body, md);
    let revisions: i64 = sqlx::query_scalar("SELECT count(*) FROM journal_revisions")
        .fetch_one(&target.pool)
        .await
        .unwrap();
    assert_eq!(
        revisions, 1234,
        "each imported entry has its first revision"
    );

    // A failure in the database half-way (a title the table refuses) stores nothing.
    sqlx::query("ALTER TABLE journal_entries ADD CONSTRAINT no_entry_1200 CHECK (title <> 'Entry 1200') NOT VALID")
        .execute(&target.pool)
        .await
        .unwrap();
    let out = run(
        &target.database_url,
        dir.path(),
        &["import", file.to_str().unwrap()],
    )
    .await;
    assert!(!out.status.success(), "the import fails");
    let entries: i64 = sqlx::query_scalar("SELECT count(*) FROM journal_entries")
        .fetch_one(&target.pool)
        .await
        .unwrap();
    assert_eq!(entries, 1234, "nothing of the failed import was stored");
}
