//! The shim-daemon integration suite (the daemon's behaviour is tested through the real
//! binary in `bins/autogpt-shim/tests`; this suite checks the crate itself).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
