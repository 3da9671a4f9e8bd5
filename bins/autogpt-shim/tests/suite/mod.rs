//! Shared harness and the test modules.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

#[cfg(target_os = "linux")]
mod clean_stop;
mod cli;
#[cfg(target_os = "linux")]
mod console;
mod control;
mod control_cancel;
#[cfg(target_os = "linux")]
mod cu;
mod doctor;
#[cfg(target_os = "linux")]
mod durability;
mod edge;
pub(crate) mod harness;
#[cfg(target_os = "linux")]
mod hw;
#[cfg(target_os = "linux")]
mod isolated;
mod legacy;
#[cfg(target_os = "linux")]
mod live;
mod llm;
mod net;
#[cfg(target_os = "linux")]
mod notify;
mod oauth;
#[cfg(unix)]
mod policy;
mod recording;
pub(crate) mod sandbox;
mod sandbox_corpus;
#[cfg(unix)]
mod status;
mod update;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
mod windows_cu;
