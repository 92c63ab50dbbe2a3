//! `perfjournal export` and `perfjournal import`: the journal as a file.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use futures::StreamExt;

use crate::auth::users;
use crate::core::recall::bundle::read_import;
use crate::db::Database;
use crate::investigations::journal::{self, Revision};
use crate::search::transfer::{self, ExportFormat};

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// markdown (the journal format: # title, then ## DATE … ## EFFORT) or json.
    #[arg(long, default_value = "markdown", value_parser = ["markdown", "json"])]
    pub format: String,
    /// Write here instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// A Markdown file in the journal format, or a JSON export.
    pub file: PathBuf,
    /// The account the entries are stored under (default: the first admin).
    #[arg(long)]
    pub user: Option<String>,
    /// Store the entries as drafts instead of publishing them.
    #[arg(long)]
    pub draft: bool,
}

pub async fn export(database: &Database, args: ExportArgs) -> anyhow::Result<()> {
    let format = match args.format.as_str() {
        "json" => ExportFormat::Json,
        _ => ExportFormat::Markdown,
    };
    let mut out: Box<dyn Write> = match &args.out {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let mut chunks = std::pin::pin!(transfer::journal_export(database.pool.clone(), format));
    while let Some(chunk) = chunks.next().await {
        out.write_all(&chunk?)?;
    }
    out.flush()?;
    if let Some(path) = &args.out {
        eprintln!("exported the journal to {}", path.display());
    }
    Ok(())
}

/// Reads the file twice, never whole: a first pass checks every entry and stores nothing
/// when any is wrong; a second streams the entries into one transaction, 1,000 a
/// statement, while the file is still being read (parsing on a blocking thread, inserts on
/// the runtime). Memory stays flat in the file's size.
pub async fn import(database: &Database, args: ImportArgs) -> anyhow::Result<()> {
    let open = |path: &std::path::Path| {
        std::fs::File::open(path)
            .map(|f| std::io::BufReader::with_capacity(1 << 20, f))
            .with_context(|| format!("reading {}", path.display()))
    };
    let first = open(&args.file)?;
    let checked = tokio::task::spawn_blocking(move || read_import(first, &mut |_, _| {})).await?;
    checked.map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(|e| format!("  {e}")).collect();
        anyhow::anyhow!(
            "{} was not imported (nothing was stored):\n{}",
            args.file.display(),
            lines.join("\n")
        )
    })?;
    let author = match &args.user {
        Some(name) => users::credentials(&database.pool, name)
            .await?
            .map(|(u, _)| u.id)
            .ok_or_else(|| anyhow::anyhow!("no user named {name}"))?,
        None => crate::investigations::seed::default_owner(&database.pool)
            .await?
            .ok_or_else(|| anyhow::anyhow!("no admin account yet: name one with --user"))?,
    };
    let started = std::time::Instant::now();
    let second = open(&args.file)?;
    let (send, mut batches) = tokio::sync::mpsc::channel::<Vec<Revision>>(2);
    let reader = tokio::task::spawn_blocking(move || {
        let mut batch = Vec::with_capacity(journal::BATCH);
        let read = read_import(second, &mut |title, entry| {
            batch.push(Revision {
                title: title.trim().to_string(),
                entry,
            });
            if batch.len() == journal::BATCH {
                // A closed channel means the inserts failed; the error is reported there.
                let _ = send.blocking_send(std::mem::take(&mut batch));
            }
        });
        if !batch.is_empty() {
            let _ = send.blocking_send(batch);
        }
        read
    });
    let mut tx = database.pool.begin().await?;
    let mut ids = Vec::new();
    while let Some(batch) = batches.recv().await {
        ids.extend(journal::insert_batch(&mut tx, author, &batch, !args.draft).await?);
    }
    // The file changed between the passes: nothing of the second is kept.
    if let Err(errors) = reader.await? {
        tx.rollback().await?;
        anyhow::bail!(
            "{} changed while it was imported (nothing was stored): {}",
            args.file.display(),
            errors.first().map(|e| e.to_string()).unwrap_or_default()
        );
    }
    tx.commit().await?;
    // A summary, not a line per entry: an import of 10,000 entries stays readable.
    println!("{}", import_summary(&ids, started.elapsed()));
    Ok(())
}

/// "imported 3 entries in 0.2 s: /journal/7 … /journal/9".
fn import_summary(ids: &[i64], took: std::time::Duration) -> String {
    let range = match (ids.first(), ids.last()) {
        (Some(first), Some(last)) if first == last => format!(": /journal/{first}"),
        (Some(first), Some(last)) => format!(": /journal/{first} … /journal/{last}"),
        _ => String::new(),
    };
    format!(
        "imported {} {} in {:.1} s{range}",
        ids.len(),
        if ids.len() == 1 { "entry" } else { "entries" },
        took.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_import_summary_names_the_count_the_range_and_the_time() {
        let ids: Vec<i64> = (7..10_007).collect();
        let line = import_summary(&ids, std::time::Duration::from_millis(2500));
        assert_eq!(
            line,
            "imported 10000 entries in 2.5 s: /journal/7 … /journal/10006"
        );
        assert_eq!(
            import_summary(&[3], std::time::Duration::ZERO),
            "imported 1 entry in 0.0 s: /journal/3"
        );
    }
}
