use std::process::ExitCode;

use clap::Parser;
use perfjournal::cli::{run, Cli};

#[tokio::main]
async fn main() -> ExitCode {
    run(Cli::parse()).await
}
