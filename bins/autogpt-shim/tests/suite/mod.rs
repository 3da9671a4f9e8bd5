//! Shared harness and the test modules.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod cli;
mod control;
#[cfg(target_os = "linux")]
mod cu;
mod doctor;
mod edge;
pub(crate) mod harness;
mod legacy;
mod oauth;
pub(crate) mod sandbox;
mod sandbox_corpus;
