//! The command line: `serve` (default), `migrate`, `user`, `token`, `estimate`,
//! `upload`, `capture`, `seed-demo`, `export`, `import`, `backup`, `restore`.

mod backup;
mod capture;
mod estimate;
mod export;
mod upload;

use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::auth::users::{self, CreateError, Role};
use crate::auth::{password, tokens};
use crate::config::{Config, DbArgs, ServeArgs};
use crate::db::Database;
use crate::state::AppState;

#[derive(Parser, Debug)]
#[command(
    name = "perfjournal",
    version,
    about = "Guided performance investigations for LLM serving, with a searchable journal",
    long_about = "perfjournal walks an inference engineer through a performance investigation, \
computes what each symptom should have cost, and keeps every diagnosis, change and result as \
the team's searchable memory.\n\nWithout DATABASE_URL the app runs its own PostgreSQL cluster \
under the data directory (PostgreSQL server binaries must be installed).\n\nThe server's \
flags (--bind, --public-url, …) work with or without `serve`: `perfjournal --bind ADDR` is \
`perfjournal serve --bind ADDR`."
)]
pub struct Cli {
    #[command(flatten)]
    pub db: DbArgs,

    /// The server's settings when no subcommand is named (serving is the default).
    #[command(flatten)]
    pub serve: ServeArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the web server (the default).
    Serve(ServeArgs),
    /// Create the database if needed and apply migrations, then exit.
    Migrate,
    /// Manage accounts.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Manage API tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Compute what a symptom should have cost, as a worked chain. Needs no database.
    ///
    /// Example: perfjournal estimate decode-floor model=llama-3.1-8b gpu=h100-sxm batch=64 context=4096
    Estimate(EstimateArgs),
    /// Upload files to a running server (streams them; prints id, kind, status, URL).
    Upload(upload::UploadArgs),
    /// Scrape a /metrics URL from here for a window (start, every interval, end) and
    /// upload the scrapes as one Prometheus artifact.
    ///
    /// Example: perfjournal capture http://127.0.0.1:8000/metrics --seconds 60 --interval 5 --investigation 12
    Capture(capture::CaptureArgs),
    /// Load three finished example investigations with journal entries (once; running
    /// it again adds nothing).
    SeedDemo {
        /// The account that owns the examples (default: the first admin).
        #[arg(long)]
        user: Option<String>,
    },
    /// Write the published journal as Markdown (to standard output by default) or JSON.
    Export(export::ExportArgs),
    /// Add journal entries from a Markdown file in the journal format (or a JSON export).
    Import(export::ImportArgs),
    /// Copy the database (pg_dump) and the uploaded files into a backup directory.
    Backup(backup::BackupArgs),
    /// Put a backup back: the database and the uploaded files as they were.
    Restore(backup::RestoreArgs),
}

#[derive(clap::Args, Debug)]
pub struct EstimateArgs {
    /// The estimator (see --list).
    pub name: Option<String>,
    /// Inputs as key=value; `config=PATH` reads a Hugging Face config.json file.
    pub inputs: Vec<String>,
    /// Print the chain as JSON {estimator, inputs, results, lines, sanity}.
    #[arg(long)]
    pub json: bool,
    /// List the estimators and their inputs.
    #[arg(long)]
    pub list: bool,
}

#[derive(Subcommand, Debug)]
pub enum UserCommand {
    /// Add an account. The password is prompted for, or read from stdin when it is not a terminal.
    Add {
        name: String,
        #[arg(long, default_value = "editor", value_parser = ["viewer", "editor", "admin"])]
        role: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Create an API token for a user and print it (it is shown only this once).
    Create {
        #[arg(long)]
        user: String,
        #[arg(long, default_value = "command line")]
        label: String,
    },
}

pub fn init_logging(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,sqlx=warn,tower_sessions=warn".into());
    // Log lines go to stderr so stdout carries only a command's answer (a token, a URL);
    // colours only when stderr is a terminal.
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// A client command's outcome as the process's exit code (the error on stderr).
fn exit_code(outcome: anyhow::Result<()>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Ids of the server's flags, as clap names them.
fn serve_arg_ids() -> Vec<String> {
    use clap::Args;
    ServeArgs::augment_args(clap::Command::new("serve"))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect()
}

/// The server flags typed on the command line (not from the environment or defaults).
fn typed(matches: &clap::ArgMatches, ids: &[String]) -> Vec<String> {
    ids.iter()
        .filter(|id| {
            matches.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine)
        })
        .cloned()
        .collect()
}

/// Parses the command line. The server's flags may come without `serve` (serving is the
/// default), before it, or after it; given before any other subcommand they are refused,
/// since only the server reads them.
pub fn parse() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let mut command = Cli::command();
    let matches = command.clone().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut command).exit());
    let ids = serve_arg_ids();
    let top = typed(&matches, &ids);
    if top.is_empty() {
        return cli;
    }
    let flags = top
        .iter()
        .map(|id| format!("--{}", id.replace('_', "-")))
        .collect::<Vec<_>>()
        .join(", ");
    match (&cli.command, matches.subcommand()) {
        (None, _) => {}
        (Some(Command::Serve(_)), Some((_, sub))) if typed(sub, &ids).is_empty() => {
            cli.command = Some(Command::Serve(cli.serve.clone()));
        }
        (Some(Command::Serve(_)), _) => command
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "{flags}: give the server's flags either before `serve` or after it, not both"
                ),
            )
            .exit(),
        (Some(_), _) => command
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "{flags} only set the server: use them without a subcommand \
                     (`perfjournal {flags} …`) or with `serve`"
                ),
            )
            .exit(),
    }
    cli
}

pub async fn run(cli: Cli) -> ExitCode {
    let command = cli.command.unwrap_or(Command::Serve(cli.serve));
    let command = match command {
        Command::Estimate(args) => return estimate::run(args),
        Command::Upload(args) => {
            init_logging(false);
            return exit_code(upload::run(args).await);
        }
        Command::Capture(args) => {
            init_logging(false);
            return exit_code(capture::run(args).await);
        }
        other => other,
    };
    let log_json = matches!(&command, Command::Serve(a) if a.log_json);
    init_logging(log_json);
    match execute(&cli.db, command).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn execute(db: &DbArgs, command: Command) -> anyhow::Result<()> {
    let database = Database::open(db.database_url.as_deref(), &db.data_dir).await?;
    let result = match command {
        Command::Serve(args) => {
            let blobs = match &args.s3_bucket {
                Some(bucket) => {
                    crate::storage::BlobStore::s3(bucket)?.with_spool(db.data_dir.join("spool"))
                }
                None => crate::storage::BlobStore::local(&db.data_dir.join("blobs"))?,
            };
            let seeded = crate::capture::seed_hosts(&database.pool, &args.capture_hosts).await?;
            if seeded > 0 {
                tracing::info!(seeded, "capture hosts added from the configuration");
            }
            let mut config = Config::from(&args);
            config.sign_in = args.sso.resolve()?;
            let mut state = AppState::new(database.pool.clone(), config, blobs);
            // With its own cluster, the app restarts it when its postmaster dies.
            let mut supervisor = None;
            if let Some(cluster) = database.cluster.clone() {
                let health = std::sync::Arc::new(crate::db::supervisor::ClusterHealth::default());
                state = state.with_embedded(health.clone());
                supervisor = Some(tokio::spawn(crate::db::supervisor::supervise(
                    cluster, health,
                )));
            }
            let result = crate::server::serve(state, &args.bind).await;
            // Stopped before the cluster is, so a deliberate stop is not "restarted".
            if let Some(task) = supervisor {
                task.abort();
            }
            result
        }
        Command::Migrate => {
            println!("database is migrated");
            Ok(())
        }
        Command::User {
            command: UserCommand::Add { name, role },
        } => add_user(&database, &name, &role).await,
        Command::Token {
            command: TokenCommand::Create { user, label },
        } => create_token(&database, &user, &label).await,
        Command::SeedDemo { user } => seed_demo(&database, user.as_deref()).await,
        Command::Export(args) => export::export(&database, args).await,
        Command::Import(args) => export::import(&database, args).await,
        Command::Backup(args) => backup::backup(db, &database, args).await,
        Command::Restore(args) => backup::restore(db, &database, args).await,
        Command::Estimate(_) | Command::Upload(_) | Command::Capture(_) => {
            unreachable!("run() answers these without opening the database")
        }
    };
    database.close().await;
    result
}

async fn add_user(database: &Database, name: &str, role: &str) -> anyhow::Result<()> {
    let name = users::validate_name(name).map_err(|e| anyhow::anyhow!("{e}"))?;
    let role = Role::parse(role).ok_or_else(|| anyhow::anyhow!("unknown role {role}"))?;
    let secret = read_password()?;
    users::validate_password(&secret).map_err(|e| anyhow::anyhow!("{e}"))?;
    let hash = password::hash(secret).await?;
    match users::create(&database.pool, &name, &hash, role, false).await {
        Ok(u) => {
            println!("added {} ({})", u.name, u.role);
            Ok(())
        }
        Err(CreateError::Taken(n)) => Err(anyhow::anyhow!("a user named {n} already exists")),
        Err(e) => Err(e.into()),
    }
}

fn read_password() -> anyhow::Result<String> {
    if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password("Password: ")?;
        let second = rpassword::prompt_password("Again: ")?;
        anyhow::ensure!(first == second, "the two passwords differ");
        Ok(first)
    } else {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        Ok(line.trim_end_matches(['\r', '\n']).to_string())
    }
}

async fn seed_demo(database: &Database, user: Option<&str>) -> anyhow::Result<()> {
    let owner = match user {
        Some(name) => users::credentials(&database.pool, name)
            .await?
            .map(|(u, _)| u.id)
            .ok_or_else(|| anyhow::anyhow!("no user named {name}"))?,
        None => crate::investigations::seed::default_owner(&database.pool)
            .await?
            .ok_or_else(|| {
                anyhow::anyhow!("no admin account yet: open the app once to create it, or add one with `perfjournal user add NAME --role admin`")
            })?,
    };
    let added = crate::investigations::seed::seed_demo(&database.pool, owner).await?;
    if added == 0 {
        println!("the example investigations are already loaded");
    } else {
        println!("loaded {added} example investigations with their journal entries");
    }
    Ok(())
}

async fn create_token(database: &Database, user: &str, label: &str) -> anyhow::Result<()> {
    let (found, _) = users::credentials(&database.pool, user)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no user named {user}"))?;
    let (_, secret) = tokens::create(&database.pool, found.id, label).await?;
    println!("{secret}");
    eprintln!("This token is shown once; store it now. Revoke it on the settings page.");
    Ok(())
}
