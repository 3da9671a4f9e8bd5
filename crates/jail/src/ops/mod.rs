//! The FILE_* operations (JAIL_FILES_EXEC.md 6-11), each acting only on the handles the
//! resolver produced (J-TOCTOU-1).

mod delete;
mod list;
mod mv;
mod read;
mod stat;
mod tree;
mod write;

use std::ffi::OsString;
use std::hash::BuildHasher;
use std::hash::Hasher;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

use crate::root::JailRoot;
use crate::walk::Resolved;
use crate::walk::Target;

/// Text-mode read budget (5.3).
pub const MAX_TEXT_READ_BYTES: u64 = 2_785_280;
/// Bytes-mode read budget (5.3).
pub const MAX_BYTES_READ_BYTES: u64 = 12_533_760;

/// 16 unpredictable hex digits (SipHash keyed from OS randomness, plus a counter).
pub(crate) fn random_hex(len: usize) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(d.as_nanos());
    }
    let s = format!("{:016x}", h.finish());
    s.chars().take(len).collect()
}

impl JailRoot {
    /// Display path of a resolved target: the target itself, or for a missing one the
    /// path it would have.
    pub(crate) fn display_target(&self, r: &Resolved<'_>) -> String {
        match &r.target {
            Target::Existing { .. } => self.display(&r.rel),
            Target::Missing { suffix, .. } => {
                let mut rel: Vec<OsString> = r.rel.clone();
                rel.extend(suffix.iter().cloned());
                self.display(&rel)
            }
        }
    }
}
