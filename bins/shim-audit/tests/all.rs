//! Integration tests of the `shim-audit` binary: the real executable, real files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
