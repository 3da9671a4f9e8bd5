//! The one integration test binary of shim-exec (STYLE.md 15). Real processes throughout.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The checks read /proc and drive POSIX shells.
#![cfg(target_os = "linux")]

mod suite;
