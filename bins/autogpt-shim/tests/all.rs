//! Integration tests of `autogpt-shim`: the real binary against the real loopback
//! platform peer, with real temp directories and real child processes.

mod suite;
