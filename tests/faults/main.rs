//! Fault tests: real processes killed and restarted, a full disk, signals. A binary of
//! their own, so nothing else shares the process while a server or cluster is killed.

#[path = "../common/mod.rs"]
mod common;

mod faults;
