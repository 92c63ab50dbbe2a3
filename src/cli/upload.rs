//! `perfjournal upload FILE… --server URL --token T [--investigation ID]`: streams each
//! file to the API (never read whole into memory) and prints what the server made of it.

use std::path::PathBuf;

use clap::Args;
use tokio_util::io::ReaderStream;

#[derive(Args, Debug)]
pub struct UploadArgs {
    /// Files to upload.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
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
    /// Attach the files to this investigation.
    #[arg(long)]
    pub investigation: Option<i64>,
    /// Attach the files to this journal entry.
    #[arg(long)]
    pub journal_entry: Option<i64>,
    /// Upload the files as the rank traces of one run and make a trace set of them,
    /// with this name. Archives of a profiler output folder (.tar, .tar.gz, .zip) are
    /// unpacked by the server into their traces.
    #[arg(long, value_name = "NAME", conflicts_with = "journal_entry")]
    pub trace_set: Option<String>,
}

pub async fn run(args: UploadArgs) -> anyhow::Result<()> {
    let client = reqwest::Client::new();
    if let Some(name) = &args.trace_set {
        let line = upload_set(&client, &args, name).await?;
        println!("{line}");
        return Ok(());
    }
    let mut failed = 0;
    for path in &args.files {
        match upload_one(&client, &args, path).await {
            Ok(line) => println!("{line}"),
            Err(e) => {
                failed += 1;
                eprintln!("{}: {e:#}", path.display());
            }
        }
    }
    anyhow::ensure!(
        failed == 0,
        "{failed} of {} uploads failed",
        args.files.len()
    );
    Ok(())
}

async fn upload_one(
    client: &reqwest::Client,
    args: &UploadArgs,
    path: &PathBuf,
) -> anyhow::Result<String> {
    let file = tokio::fs::File::open(path).await?;
    let size = file.metadata().await?.len();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "upload".into());
    let body = reqwest::Body::wrap_stream(ReaderStream::new(file));
    let target = Target {
        server: &args.server,
        token: &args.token,
        investigation: args.investigation,
        journal_entry: args.journal_entry,
    };
    post_artifact(client, &target, &name, body, size).await
}

/// Every file in one multipart body to the set upload; prints the set's id, status and
/// page. Each file streams from disk.
async fn upload_set(
    client: &reqwest::Client,
    args: &UploadArgs,
    name: &str,
) -> anyhow::Result<String> {
    let mut form = reqwest::multipart::Form::new();
    for path in &args.files {
        let file = tokio::fs::File::open(path)
            .await
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let size = file.metadata().await?.len();
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "trace.json".into());
        let part = reqwest::multipart::Part::stream_with_length(
            reqwest::Body::wrap_stream(ReaderStream::new(file)),
            size,
        )
        .file_name(file_name);
        form = form.part("file", part);
    }
    let mut query: Vec<(&str, String)> = vec![("name", name.to_string())];
    if let Some(i) = args.investigation {
        query.push(("investigation", i.to_string()));
    }
    let server = args.server.trim_end_matches('/');
    let url = format!(
        "{server}/api/v1/trace-sets/upload?{}",
        serde_urlencoded::to_string(&query)?
    );
    let response = client
        .post(&url)
        .bearer_auth(&args.token)
        .multipart(form)
        .send()
        .await?;
    let status = response.status();
    let body: serde_json::Value =
        serde_json::from_str(&response.text().await.unwrap_or_default()).unwrap_or_default();
    if !status.is_success() {
        anyhow::bail!("{status}: {}", refusal(&body));
    }
    Ok(format!(
        "trace set {}\t{}\t{} traces\t{server}/trace-sets/{}\t{name}",
        body["id"],
        body["status"].as_str().unwrap_or("?"),
        body["artifacts"].as_array().map_or(0, Vec::len),
        body["id"]
    ))
}

/// The server's refusal in one line: its message and each field's.
fn refusal(body: &serde_json::Value) -> String {
    let message = body["error"]["message"].as_str().unwrap_or("no message");
    let fields: Vec<String> = body["error"]["fields"]
        .as_array()
        .map(|f| {
            f.iter()
                .map(|e| {
                    format!(
                        "{}: {}",
                        e["field"].as_str().unwrap_or("?"),
                        e["message"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    if fields.is_empty() {
        message.to_string()
    } else {
        format!("{message} ({})", fields.join("; "))
    }
}

/// Where an upload goes: the server, the token, what to attach it to.
pub(crate) struct Target<'a> {
    pub server: &'a str,
    pub token: &'a str,
    pub investigation: Option<i64>,
    pub journal_entry: Option<i64>,
}

/// Posts one file's bytes to the upload API; returns the line to print (id, kind,
/// status, page, name) or the server's refusal with each field's message.
pub(crate) async fn post_artifact(
    client: &reqwest::Client,
    target: &Target<'_>,
    name: &str,
    body: reqwest::Body,
    size: u64,
) -> anyhow::Result<String> {
    let mut query: Vec<(&str, String)> = vec![("name", name.to_string())];
    if let Some(i) = target.investigation {
        query.push(("investigation", i.to_string()));
    }
    if let Some(j) = target.journal_entry {
        query.push(("journal_entry", j.to_string()));
    }
    let server = target.server.trim_end_matches('/');
    let url = format!(
        "{server}/api/v1/artifacts?{}",
        serde_urlencoded::to_string(&query)?
    );
    let response = client
        .post(&url)
        .bearer_auth(target.token)
        .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
        .header(reqwest::header::CONTENT_LENGTH, size)
        .body(body)
        .send()
        .await?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    let body: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    if !status.is_success() {
        anyhow::bail!("{status}: {}", refusal(&body));
    }
    Ok(format!(
        "{}\t{}\t{}\t{server}/artifacts/{}\t{name}",
        body["id"],
        body["kind"].as_str().unwrap_or("?"),
        body["status"].as_str().unwrap_or("?"),
        body["id"]
    ))
}
