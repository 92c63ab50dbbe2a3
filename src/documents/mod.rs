//! The JSON documents the API returns and the pages export or show the same way: a step,
//! a blind replay, a capacity proposal. Built from what the store loads; the API and the
//! pages both call here, never each other.

pub mod proposal;
pub mod replay;
pub mod step;
