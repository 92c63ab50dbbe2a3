use std::process::ExitCode;

use clap::Parser;
use perfjournal::cli::{run, Cli};

/// See Cargo.toml: glibc's malloc showed in the server's profile under load.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    run(Cli::parse()).await
}
