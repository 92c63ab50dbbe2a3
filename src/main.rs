use std::process::ExitCode;

use perfjournal::cli::{parse, run};

/// See Cargo.toml: glibc's malloc showed in the server's profile under load.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    perfjournal::memory::no_transparent_huge_pages();
    perfjournal::memory::purge_freed_pages_soon();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // An idle blocking thread ends after a second (tokio's default is ten): what a
        // finished analysis freed from another thread then goes back to the system with
        // the thread's heap instead of staying with it (see src/memory.rs).
        .thread_keep_alive(std::time::Duration::from_secs(1))
        .build()
        .expect("starting the async runtime");
    runtime.block_on(run(parse()))
}
