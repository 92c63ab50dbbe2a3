//! `perfjournal capture URL --seconds 60 [--interval 5] --investigation ID --server URL
//! --token T`: scrapes a `/metrics` URL from this machine (where the engine is
//! reachable; the server's allowlist does not apply) with the same limits and file
//! format as a capture the server runs, then uploads the file through the upload API.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::upload::{post_artifact, Target};
use crate::capture::scrape;
use crate::core::capture::Window;

/// Most bytes one capture keeps in memory before it is uploaded.
const MAX_CAPTURE_BYTES: usize = 512 << 20;

#[derive(Args, Debug)]
pub struct CaptureArgs {
    /// The engine's metrics URL, e.g. http://127.0.0.1:8000/metrics.
    pub url: String,
    /// The window, 1 to 3600 seconds.
    #[arg(long)]
    pub seconds: String,
    /// Seconds between scrapes (at least 1); without it, only the start and the end.
    #[arg(long)]
    pub interval: Option<String>,
    /// Attach the capture to this investigation.
    #[arg(long)]
    pub investigation: Option<i64>,
    /// Also write the capture file here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The perfjournal server.
    #[arg(
        long,
        env = "PERFJOURNAL_SERVER",
        default_value = "http://127.0.0.1:8080"
    )]
    pub server: String,
    /// An API token (settings page, or `perfjournal token create`).
    #[arg(long, env = "PERFJOURNAL_TOKEN", hide_env_values = true)]
    pub token: String,
}

pub async fn run(args: CaptureArgs) -> anyhow::Result<()> {
    let window =
        Window::parse(&args.seconds, args.interval.as_deref().unwrap_or("")).map_err(|errors| {
            let parts: Vec<String> = errors
                .iter()
                .map(|e| format!("--{}: {}", flag(&e.field), e.message))
                .collect();
            anyhow::anyhow!(parts.join("; "))
        })?;
    let url = reqwest::Url::parse(args.url.trim())
        .map_err(|e| anyhow::anyhow!("'{}' is not a URL: {e}", args.url.trim()))?;
    anyhow::ensure!(
        matches!(url.scheme(), "http" | "https"),
        "only http and https URLs can be captured"
    );
    let client = scrape::client()?;
    let offsets = window.offsets();
    let start = tokio::time::Instant::now();
    let mut file = Vec::new();
    for (n, offset) in offsets.iter().enumerate() {
        tokio::time::sleep_until(start + Duration::from_secs((*offset).into())).await;
        let bytes = scrape::scrape(&client, &url)
            .await
            .map_err(|e| anyhow::anyhow!("scrape {} of {}: {e}", n + 1, offsets.len()))?;
        anyhow::ensure!(
            file.len() + bytes.len() <= MAX_CAPTURE_BYTES,
            "the capture grew past {} MiB; use a longer interval or a shorter window",
            MAX_CAPTURE_BYTES >> 20
        );
        file.extend_from_slice(&bytes);
        eprintln!(
            "scrape {} of {} at {offset} s: {} KB",
            n + 1,
            offsets.len(),
            bytes.len() / 1000
        );
    }
    if let Some(path) = &args.out {
        tokio::fs::write(path, &file).await?;
    }
    let name = format!(
        "metrics-capture-{}-{}s.prom",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
        window.seconds
    );
    let target = Target {
        server: &args.server,
        token: &args.token,
        investigation: args.investigation,
        journal_entry: None,
    };
    let size = file.len() as u64;
    let line = post_artifact(&reqwest::Client::new(), &target, &name, file.into(), size).await?;
    println!("{line}");
    Ok(())
}

/// The command-line flag a core field name stands for.
fn flag(field: &str) -> &str {
    match field {
        "interval_s" => "interval",
        other => other,
    }
}
