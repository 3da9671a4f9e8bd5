//! Integration tests of the platform peer, driven by a raw WebSocket client.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod suite;
