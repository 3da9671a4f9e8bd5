//! Handle-based tree helpers shared by delete, move and trash: recursive removal
//! (10.2) and cross-device copy (11.3).

use std::ffi::OsStr;
use std::os::fd::AsFd;
use std::os::fd::BorrowedFd;

use rustix::io::Errno;

use crate::error::JailError;
use crate::error::OsCtx;
use crate::error::map_os;
use crate::sys;

/// Removes the entry `name` in `dir`: links and files are unlinked, directories removed
/// children first, never following links and never crossing into another device.
pub(crate) fn remove_entry(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    dev: u64,
    wire: &str,
) -> Result<(), JailError> {
    let meta = sys::lstat_at(dir, name).map_err(|e| map_os(e, wire, OsCtx::Other))?;
    if !meta.is_dir() {
        return sys::unlink(dir, name).map_err(|e| map_os(e, wire, OsCtx::Other));
    }
    let fd = match sys::open_dir_nofollow(dir, name) {
        Ok(fd) => fd,
        // Swapped for something else since the lstat: remove that as an entry.
        Err(Errno::LOOP | Errno::NOTDIR) => {
            return sys::unlink(dir, name).map_err(|e| map_os(e, wire, OsCtx::Other));
        }
        Err(e) => return Err(map_os(e, wire, OsCtx::Other)),
    };
    let m = sys::fstat(&fd).map_err(|e| map_os(e, wire, OsCtx::Other))?;
    if m.id.dev != dev {
        return Err(JailError::internal(
            "refusing to remove across a device boundary",
            wire,
        ));
    }
    let mut names = sys::read_names(fd.as_fd()).map_err(|e| map_os(e, wire, OsCtx::Other))?;
    // Deterministic order (name order), like FILE_LIST.
    names.sort();
    for child in names {
        remove_entry(fd.as_fd(), &child, dev, wire)?;
    }
    sys::rmdir(dir, name).map_err(|e| map_os(e, wire, OsCtx::Other))
}

/// Copies the entry `from_name` in `from` to the new name `to_name` in `to`: files by
/// content with permission bits and mtime, directories recreated, symlinks recreated
/// with the same text; anything else fails.
pub(crate) fn copy_entry(
    from: BorrowedFd<'_>,
    from_name: &OsStr,
    to: BorrowedFd<'_>,
    to_name: &OsStr,
    wire: &str,
) -> Result<(), JailError> {
    let err = |e: Errno| map_os(e, wire, OsCtx::Other);
    let meta = sys::lstat_at(from, from_name).map_err(err)?;
    if meta.is_link() {
        let text = sys::read_link(from, from_name, None).map_err(err)?;
        return sys::symlink(&text, to, to_name).map_err(err);
    }
    if meta.is_file() {
        let src = sys::open_nofollow(from, from_name, rustix::fs::OFlags::RDONLY).map_err(err)?;
        let check = sys::fstat(&src).map_err(err)?;
        if check.id != meta.id {
            return Err(JailError::internal("source changed during the copy", wire));
        }
        let dst = sys::create_excl(to, to_name, 0o600).map_err(err)?;
        let mut offset = 0u64;
        loop {
            let chunk = sys::pread_exact(src.as_fd(), offset, 1 << 16).map_err(err)?;
            if chunk.is_empty() {
                break;
            }
            sys::write_all(dst.as_fd(), &chunk).map_err(err)?;
            offset += chunk.len() as u64;
        }
        sys::fchmod(dst.as_fd(), meta.mode).map_err(err)?;
        sys::set_mtime(dst.as_fd(), meta.mtime_parts).map_err(err)?;
        return sys::fsync(dst.as_fd()).map_err(err);
    }
    if meta.is_dir() {
        let src = sys::open_dir_nofollow(from, from_name).map_err(err)?;
        sys::mkdir(to, to_name, 0o700).map_err(err)?;
        let dst = sys::open_dir_nofollow(to, to_name).map_err(err)?;
        for child in sys::read_names(src.as_fd()).map_err(err)? {
            copy_entry(src.as_fd(), &child, dst.as_fd(), &child, wire)?;
        }
        sys::fchmod(dst.as_fd(), meta.mode).map_err(err)?;
        return sys::set_mtime(dst.as_fd(), meta.mtime_parts).map_err(err);
    }
    Err(JailError::internal("cannot copy a special file", wire))
}

/// 11.3: copy then delete. On failure the partial copy is removed and `src` untouched.
pub(crate) fn move_across_devices(
    from: BorrowedFd<'_>,
    from_name: &OsStr,
    to: BorrowedFd<'_>,
    to_name: &OsStr,
    wire: &str,
) -> Result<(), JailError> {
    if let Err(e) = copy_entry(from, from_name, to, to_name, wire) {
        if let Ok(m) = sys::lstat_at(to, to_name) {
            let _ = remove_entry(to, to_name, m.id.dev, wire);
        }
        return Err(match e {
            JailError::Internal(_) => e,
            other => JailError::Internal(other.to_string()),
        });
    }
    let dev = sys::lstat_at(from, from_name)
        .map_err(|e| map_os(e, wire, OsCtx::Other))?
        .id
        .dev;
    remove_entry(from, from_name, dev, wire)
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
