//! FILE_WRITE (7): order of checks, final-component rules, `create_parents` containment
//! and atomic replace through a temporary file in the same directory.

use std::ffi::OsStr;
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::fd::BorrowedFd;
use std::os::fd::OwnedFd;

use base64::Engine;
use rustix::fs::OFlags;
use rustix::io::Errno;

use super::random_hex;
use crate::error::JailError;
use crate::error::OsCtx;
use crate::error::map_os;
use crate::root::JailRoot;
use crate::sys;
use crate::types::ContentEncoding;
use crate::types::WriteOptions;
use crate::types::WriteResult;
use crate::walk::Mode;
use crate::walk::Target;
use crate::walk::Want;

impl JailRoot {
    /// FILE_WRITE: replaces (or creates) a regular file inside the root (7).
    pub fn write(
        &self,
        wire: &str,
        content: &str,
        opts: &WriteOptions,
    ) -> Result<WriteResult, JailError> {
        // 7.1 step 1: the whole path, leaf included, through 4.2, then resolution.
        let path = self.parse(wire)?;
        let r = self.resolve(
            &path,
            Mode {
                follow_final: true,
                want: Want::Meta,
                need_parent: true,
            },
        )?;
        // Step 2.
        if r.is_root {
            return Err(JailError::outside(wire));
        }
        // Step 3 and the final-component rules of 7.2.
        let mut existing_mode = None;
        match &r.target {
            Target::Existing { meta, .. } => {
                if meta.is_dir() {
                    return Err(JailError::internal("is a directory", wire));
                }
                if !meta.is_file() {
                    return Err(JailError::internal("not a regular file", wire));
                }
                existing_mode = Some(meta.mode);
            }
            Target::Missing {
                suffix,
                dotdot,
                through_file,
                link_dir,
            } => {
                if *through_file {
                    return Err(JailError::internal("a parent is not a directory", wire));
                }
                if *dotdot {
                    return Err(JailError::not_found(wire));
                }
                if suffix.len() > 1 && (!opts.create_parents || *link_dir) {
                    return Err(JailError::not_found(wire));
                }
            }
        }
        let (Some(parent), Some(name)) = (r.parent.as_ref(), r.name.as_ref()) else {
            return Err(JailError::internal("no parent directory", wire));
        };
        if existing_mode.is_some() && !sys::writable(parent.fd(), name) {
            return Err(JailError::internal("permission denied", wire));
        }
        // Steps 4 and 5: decode and size, before anything is created.
        let decoded;
        let bytes: &[u8] = match opts.encoding {
            ContentEncoding::Utf8 => content.as_bytes(),
            ContentEncoding::Base64 => {
                decoded = base64::engine::general_purpose::STANDARD
                    .decode(content)
                    .map_err(|e| JailError::Internal(format!("Bad base64: {e}")))?;
                &decoded
            }
        };
        let limit = self.max_file_size();
        if bytes.len() as u64 > limit {
            return Err(JailError::TooLarge {
                size: bytes.len() as u64,
                limit,
            });
        }
        // Step 6: create the missing parents one at a time (J-MKDIR-1, J-TOCTOU-2).
        let mut created: Option<OwnedFd> = None;
        if let Target::Missing { suffix, .. } = &r.target
            && let Some((_, dirs)) = suffix.split_last()
        {
            for d in dirs {
                let base = match &created {
                    Some(fd) => fd.as_fd(),
                    None => parent.fd(),
                };
                let fd = mkdir_verified(base, d, wire)?;
                created = Some(fd);
            }
        }
        let dir = match &created {
            Some(fd) => fd.as_fd(),
            None => parent.fd(),
        };
        // Step 7.
        self.replace(dir, name, bytes, existing_mode, wire)?;
        Ok(WriteResult {
            path: self.display_target(&r),
            size_bytes_written: bytes.len() as u64,
        })
    }

    /// J-WRITE-ATOMIC: temp file in `dir`, write, fsync, chmod, rename over `name`.
    pub(crate) fn replace(
        &self,
        dir: BorrowedFd<'_>,
        name: &OsStr,
        bytes: &[u8],
        existing_mode: Option<u32>,
        wire: &str,
    ) -> Result<(), JailError> {
        let mut attempt = 0;
        let (tmp, fd) = loop {
            let tmp = OsString::from(format!(".~agpt-{}.tmp", random_hex(16)));
            match sys::create_excl(dir, &tmp, 0o600) {
                Ok(fd) => break (tmp, fd),
                Err(Errno::EXIST) if attempt < 8 => attempt += 1,
                Err(e) => return Err(map_os(e, wire, OsCtx::Existing)),
            }
        };
        let mode = existing_mode.map_or(0o666 & !self.umask(), |m| m & 0o777);
        let result = sys::write_all(fd.as_fd(), bytes)
            .and_then(|()| sys::fsync(fd.as_fd()))
            .and_then(|()| sys::fchmod(fd.as_fd(), mode))
            .and_then(|()| sys::rename(dir, &tmp, dir, name, false));
        drop(fd);
        if let Err(e) = result {
            let _ = sys::unlink(dir, &tmp);
            return Err(map_os(e, wire, OsCtx::Existing));
        }
        if let Ok(d) = sys::reopen_dir(dir) {
            let _ = sys::fsync(d.as_fd());
        }
        Ok(())
    }
}

/// `mkdirat` then re-open with no-follow; an existing directory is accepted only if it
/// re-opens as a directory (J-TOCTOU-2).
fn mkdir_verified(base: BorrowedFd<'_>, name: &OsStr, wire: &str) -> Result<OwnedFd, JailError> {
    match sys::mkdir(base, name, 0o777) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(map_os(e, wire, OsCtx::Create)),
    }
    rustix::fs::openat(
        base,
        name,
        sys::WALK | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|_| JailError::internal("created directory was replaced", wire))
}

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;
