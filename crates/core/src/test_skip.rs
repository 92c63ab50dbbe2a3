//! How a test that cannot run here says so. Compiled into the unit tests and, by path,
//! into the integration tests' harness (`tests/common`), so both skip one way.
//!
//! A skip prints `skipped TEST: REASON`, appends `TEST<TAB>REASON` to the file named by
//! `PERFJOURNAL_SKIP_LOG` (CI prints the list and the count after `cargo test`), and,
//! when `PERFJOURNAL_REQUIRE_ALL` is set (CI sets it), fails the test instead: a test
//! that cannot run there must not pass.
// Each test binary that includes this file uses only part of it.
#![allow(dead_code)]

use std::io::Write;

/// Records the skip of `test` for `reason`; panics when every test must run.
pub fn skip(test: &str, reason: &str) {
    eprintln!("skipped {test}: {reason}");
    if let Some(path) = std::env::var_os("PERFJOURNAL_SKIP_LOG") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{test}\t{reason}");
        }
    }
    if require_all() {
        panic!("{test} cannot run here ({reason}) and PERFJOURNAL_REQUIRE_ALL is set");
    }
}

/// The running test's name (the test harness names each test's thread after it).
pub fn current_test() -> String {
    std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string()
}

/// True when `PERFJOURNAL_REQUIRE_ALL` is set to anything but empty or `0`.
pub fn require_all() -> bool {
    std::env::var("PERFJOURNAL_REQUIRE_ALL").is_ok_and(|v| !v.is_empty() && v != "0")
}
