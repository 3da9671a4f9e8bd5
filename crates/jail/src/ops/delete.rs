//! FILE_DELETE (10): links removed as links, the root never, trash mode optional.

use std::ffi::OsStr;
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::fd::BorrowedFd;

use rustix::io::Errno;

use super::random_hex;
use super::tree;
use crate::error::JailError;
use crate::error::OsCtx;
use crate::error::map_os;
use crate::root::JailRoot;
use crate::sys;
use crate::sys::Meta;
use crate::types::DeleteOptions;
use crate::types::DeleteResult;
use crate::walk::Mode;
use crate::walk::Target;
use crate::walk::Want;

impl JailRoot {
    /// FILE_DELETE: removes one entry inside the root (10).
    pub fn delete(&self, wire: &str, opts: &DeleteOptions) -> Result<DeleteResult, JailError> {
        let path = self.parse(wire)?;
        let r = self.resolve(
            &path,
            Mode {
                follow_final: false,
                want: Want::Meta,
                need_parent: true,
            },
        )?;
        if r.is_root {
            return Err(JailError::outside(wire));
        }
        let meta = match &r.target {
            Target::Missing { .. } if opts.missing_ok => {
                return Ok(DeleteResult {
                    path: None,
                    trashed_to: None,
                });
            }
            Target::Missing { .. } => return Err(JailError::not_found(wire)),
            Target::Existing { meta, .. } => *meta,
        };
        let (Some(parent), Some(name)) = (r.parent.as_ref(), r.name.as_ref()) else {
            return Err(JailError::internal("no parent directory", wire));
        };
        let display = self.display(&r.rel);
        if let Some((trash, trash_path)) = self.trash() {
            let to = self.trash_entry(parent.fd(), name, &meta, opts, trash, trash_path, wire)?;
            return Ok(DeleteResult {
                path: Some(display),
                trashed_to: Some(to),
            });
        }
        let dir = parent.fd();
        if meta.is_dir() {
            if opts.recursive {
                tree::remove_entry(dir, name, meta.id.dev, wire)?;
            } else {
                sys::rmdir(dir, name).map_err(|e| map_os(e, wire, OsCtx::Rmdir))?;
            }
        } else {
            // Files, symlinks (pointing anywhere, dangling, looping), FIFOs, ...: the
            // entry itself. A hard link loses only this name (10.3).
            sys::unlink(dir, name).map_err(|e| map_os(e, wire, OsCtx::Existing))?;
        }
        Ok(DeleteResult {
            path: Some(display),
            trashed_to: None,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn trash_entry(
        &self,
        dir: BorrowedFd<'_>,
        name: &OsStr,
        meta: &Meta,
        opts: &DeleteOptions,
        trash: BorrowedFd<'_>,
        trash_path: &str,
        wire: &str,
    ) -> Result<String, JailError> {
        if meta.is_dir() && !opts.recursive {
            let fd =
                sys::open_dir_nofollow(dir, name).map_err(|e| map_os(e, wire, OsCtx::Existing))?;
            let names = sys::read_names(fd.as_fd()).map_err(|e| map_os(e, wire, OsCtx::Other))?;
            if !names.is_empty() {
                return Err(JailError::NotEmpty {
                    path: wire.to_owned(),
                });
            }
        }
        let bucket = OsString::from(format!("{}-{}", utc_stamp(), random_hex(8)));
        sys::mkdir(trash, &bucket, 0o700).map_err(|e| map_os(e, "trash", OsCtx::Other))?;
        let bucket_fd =
            sys::open_dir_nofollow(trash, &bucket).map_err(|e| map_os(e, "trash", OsCtx::Other))?;
        match sys::rename(dir, name, bucket_fd.as_fd(), name, true) {
            Ok(()) => {}
            Err(Errno::XDEV) => {
                tree::move_across_devices(dir, name, bucket_fd.as_fd(), name, wire)?;
            }
            Err(e) => return Err(map_os(e, wire, OsCtx::Existing)),
        }
        Ok(format!(
            "{}/{}/{}",
            trash_path.trim_end_matches('/'),
            bucket.to_string_lossy(),
            name.to_string_lossy()
        ))
    }
}

/// `yyyymmddThhmmssZ` for now, UTC.
pub(crate) fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil-from-days (H. Hinnant).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}
