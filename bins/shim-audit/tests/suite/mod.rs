//! Test modules.

mod cli;
mod common;
mod keys;
