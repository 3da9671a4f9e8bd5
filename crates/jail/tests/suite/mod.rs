mod common;
mod delete;
mod escapes;
mod list;
#[cfg(target_os = "linux")]
mod mounts;
mod mv;
mod prop;
mod race;
mod read;
mod resolve;
mod root;
mod stat;
mod write;
