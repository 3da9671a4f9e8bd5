//! The one integration test binary of shim-exec (STYLE.md 15). Real processes throughout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
