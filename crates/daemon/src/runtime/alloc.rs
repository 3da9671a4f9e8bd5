//! Allocator tuning for a small resident set (the idle RSS target of issue 6).
//!
//! glibc raises its mmap threshold to the size of the largest freed mmapped block (up to
//! 32 MiB). The encrypted credential file derives its key with Argon2 (19-64 MiB of
//! scratch memory), so after one derivation every later block of that size comes from the
//! heap and stays resident: about 19 MiB kept for nothing. Fixing the threshold at glibc's
//! default (128 KiB) turns the dynamic adjustment off, so large scratch buffers go back to
//! the system when freed.
#![allow(unsafe_code)]

/// glibc's `M_MMAP_THRESHOLD` parameter number (malloc.h).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const M_MMAP_THRESHOLD: libc::c_int = -3;

/// Fixes the allocator's mmap threshold at 128 KiB; returns a problem if glibc refused.
/// Does nothing on other platforms and C libraries.
pub(crate) fn keep_large_blocks_unmapped() -> Option<String> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only changes a glibc allocator parameter; it takes plain
        // integers, touches no memory of ours and is called before any other thread starts.
        let ok = unsafe { libc::mallopt(M_MMAP_THRESHOLD, 128 * 1024) };
        if ok != 1 {
            return Some("cannot fix the allocator's mmap threshold".to_owned());
        }
    }
    None
}
