//! Spawn-to-result latency of `true` through the crate beside std::process::Command.

fn main() {}
