//! The shim-jail integration suite: every rule of JAIL_FILES_EXEC.md 2-11 on real
//! temporary trees, the incumbent's escapes, property tests and the swap race.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(unix)]

mod suite;
