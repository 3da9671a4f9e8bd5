//! Pre-main process hardening (STYLE.md 3): no core dumps (they could hold file contents,
//! tokens or the audit key) and, on Linux, not dumpable, so other processes of the same
//! user cannot ptrace the daemon or read its memory. Child processes become dumpable again
//! when they exec, which is what a shell command expects.
//!
//! Stripping `LD_*` variables would need `std::env::remove_var`, which is `unsafe` in
//! edition 2024; commands get a clean environment from `shim-exec` instead.

/// Applies the hardening; returns what could not be applied (best effort, never fatal).
pub fn apply() -> Vec<String> {
    let mut problems = Vec::new();
    #[cfg(unix)]
    {
        let zero = rustix::process::Rlimit {
            current: Some(0),
            maximum: Some(0),
        };
        if let Err(e) = rustix::process::setrlimit(rustix::process::Resource::Core, zero) {
            problems.push(format!("cannot disable core dumps: {e}"));
        }
    }
    problems.extend(crate::runtime::alloc::keep_large_blocks_unmapped());
    #[cfg(target_os = "linux")]
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        problems.push(format!("cannot mark the process non-dumpable: {e}"));
    }
    problems
}
