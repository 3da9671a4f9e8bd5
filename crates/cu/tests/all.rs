//! Computer use against real X servers (COMPUTER_USE_HW.md 11.2): every test starts its
//! own Xvfb (and openbox, xterm, xclip as needed) and checks independent evidence.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
