//! Test modules.

pub(crate) mod common;
mod concurrency;
mod crash;
mod export;
mod fail_closed;
mod rotation;
mod tamper;
mod writer;
