//! Handle-based tree helpers shared by delete, move and trash: recursive removal
//! (10.2) and cross-device copy (11.3).

use std::ffi::OsStr;
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::fd::BorrowedFd;
use std::os::fd::OwnedFd;

use rustix::io::Errno;

use crate::error::JailError;
use crate::error::OsCtx;
use crate::error::map_os;
use crate::sys;

/// Removes the entry `name` in `dir`: links and files are unlinked, directories removed
/// children first, never following links and never crossing into another device.
/// Iterative (an explicit stack), so a deep tree cannot exhaust the thread's stack.
pub(crate) fn remove_entry(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    dev: u64,
    wire: &str,
) -> Result<(), JailError> {
    let err = |e: Errno| map_os(e, wire, OsCtx::Other);
    let meta = sys::lstat_at(dir, name).map_err(err)?;
    if !meta.is_dir() {
        return sys::unlink(dir, name).map_err(err);
    }
    let Some(top) = open_for_removal(dir, name, dev, wire)? else {
        return Ok(());
    };
    // Each frame: the directory being emptied, its remaining children (popped from the
    // end, so sorted descending), and its own name in the parent frame.
    let mut stack: Vec<Frame> = vec![top_frame(top, name, wire)?];
    loop {
        let step = match stack.last_mut() {
            None => return Ok(()),
            Some((fd, names, _)) => match names.pop() {
                None => Step::Emptied,
                Some(child) => {
                    let cm = sys::lstat_at(fd.as_fd(), &child).map_err(err)?;
                    if cm.is_dir() {
                        match open_for_removal(fd.as_fd(), &child, dev, wire)? {
                            Some(cfd) => Step::Descend(top_frame(cfd, &child, wire)?),
                            None => Step::Next,
                        }
                    } else {
                        sys::unlink(fd.as_fd(), &child).map_err(err)?;
                        Step::Next
                    }
                }
            },
        };
        match step {
            Step::Descend(frame) => stack.push(frame),
            Step::Next => {}
            Step::Emptied => {
                let Some((fd, _, own)) = stack.pop() else {
                    return Ok(());
                };
                drop(fd);
                let parent = stack.last().map_or(dir, |(p, _, _)| p.as_fd());
                sys::rmdir(parent, &own).map_err(err)?;
            }
        }
    }
}

type Frame = (OwnedFd, Vec<OsString>, OsString);

enum Step {
    /// A child directory to empty first.
    Descend(Frame),
    /// A child was removed as an entry.
    Next,
    /// The top directory is empty: remove it from its parent.
    Emptied,
}

/// Opens a directory to be removed; `None` if it was swapped for a non-directory since
/// the `lstat` (then it has already been unlinked as an entry).
fn open_for_removal(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    dev: u64,
    wire: &str,
) -> Result<Option<OwnedFd>, JailError> {
    let err = |e: Errno| map_os(e, wire, OsCtx::Other);
    let fd = match sys::open_dir_nofollow(dir, name) {
        Ok(fd) => fd,
        Err(Errno::LOOP | Errno::NOTDIR) => {
            sys::unlink(dir, name).map_err(err)?;
            return Ok(None);
        }
        Err(e) => return Err(err(e)),
    };
    let m = sys::fstat(&fd).map_err(err)?;
    if m.id.dev != dev {
        return Err(JailError::internal(
            "refusing to remove across a device boundary",
            wire,
        ));
    }
    Ok(Some(fd))
}

fn top_frame(fd: OwnedFd, name: &OsStr, wire: &str) -> Result<Frame, JailError> {
    let mut names = sys::read_names(fd.as_fd()).map_err(|e| map_os(e, wire, OsCtx::Other))?;
    // Deterministic order (name order, like FILE_LIST); popped from the end.
    names.sort();
    names.reverse();
    Ok((fd, names, name.to_owned()))
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
