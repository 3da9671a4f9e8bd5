//! Wire types of the AutoGPT local executor protocol, version 1.1.
//!
//! This crate is types only: serde derives, a never-panicking decoder and an encoder
//! whose output the platform accepts. It performs no I/O. See `README.md` and
//! `../shared/spec/PROTOCOL.md`.

pub mod error;
pub mod limits;

pub use error::ErrorCode;
pub use error::ErrorPayload;
