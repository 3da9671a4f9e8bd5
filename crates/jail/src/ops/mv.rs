//! FILE_MOVE (11): entries (links too) moved as entries; overwrite by set-aside and
//! restore; same-entry spellings; cross-device copy then delete.

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
use crate::sys::Id;
use crate::types::MoveOptions;
use crate::types::MoveResult;
use crate::walk::Mode;
use crate::walk::Target;
use crate::walk::Want;

const NOFOLLOW: Mode = Mode {
    follow_final: false,
    want: Want::Meta,
    need_parent: true,
};

impl JailRoot {
    /// FILE_MOVE: moves or renames one entry inside the root (11).
    pub fn rename(
        &self,
        src: &str,
        dst: &str,
        opts: &MoveOptions,
    ) -> Result<MoveResult, JailError> {
        // 11.1 step 1: src completely before dst; the first jail error wins.
        let sp = self.parse(src)?;
        let rs = self.resolve(&sp, NOFOLLOW)?;
        let dp = self.parse(dst)?;
        let rd = self.resolve(&dp, NOFOLLOW)?;
        // Step 2.
        if rs.is_root {
            return Err(JailError::outside(src));
        }
        if rd.is_root {
            return Err(JailError::outside(dst));
        }
        // Step 3.
        let smeta = match &rs.target {
            Target::Missing { .. } => return Err(JailError::not_found(src)),
            Target::Existing { meta, .. } => *meta,
        };
        // Step 4.
        let dmeta = match &rd.target {
            Target::Missing {
                suffix,
                dotdot,
                through_file,
                ..
            } => {
                if suffix.len() > 1 || *dotdot || *through_file {
                    return Err(JailError::not_found(dst));
                }
                None
            }
            Target::Existing { meta, .. } => Some(*meta),
        };
        let (Some(sparent), Some(sname)) = (rs.parent.as_ref(), rs.name.as_ref()) else {
            return Err(JailError::internal("no parent directory", src));
        };
        let (Some(dparent), Some(dname)) = (rd.parent.as_ref(), rd.name.as_ref()) else {
            return Err(JailError::internal("no parent directory", dst));
        };
        let (sdir, ddir) = (sparent.fd(), dparent.fd());
        let result = MoveResult {
            src: self.display_target(&rs),
            dst: self.display_target(&rd),
        };
        let err = |e: Errno| map_os(e, dst, OsCtx::Other);
        let same_parent = {
            let a = sys::fstat(sdir).map_err(err)?.id;
            let b = sys::fstat(ddir).map_err(err)?.id;
            a == b
        };
        // Step 5: two spellings of one entry.
        if let Some(dm) = &dmeta
            && dm.id == smeta.id
            && same_parent
        {
            if sname == dname {
                return Ok(result);
            }
            let a = sname.to_string_lossy().to_lowercase();
            let b = dname.to_string_lossy().to_lowercase();
            if a == b && sys::dir_is_case_insensitive(sdir) {
                sys::rename(sdir, sname, ddir, dname, false).map_err(err)?;
                return Ok(result);
            }
        }
        // Step 6.
        if dmeta.is_some() && !opts.overwrite {
            return Err(JailError::Exists {
                path: dst.to_owned(),
            });
        }
        // Step 7.
        if smeta.is_dir() && self.is_within(ddir, smeta.id)? {
            return Err(JailError::internal(
                "cannot move a directory into itself",
                dst,
            ));
        }
        // Step 8.
        match dmeta {
            None => match sys::rename(sdir, sname, ddir, dname, true) {
                Ok(()) => {}
                Err(Errno::EXIST) => {
                    return Err(JailError::Exists {
                        path: dst.to_owned(),
                    });
                }
                Err(Errno::XDEV) => tree::move_across_devices(sdir, sname, ddir, dname, dst)?,
                Err(e) => return Err(err(e)),
            },
            Some(dm) => {
                if dm.id == smeta.id && !smeta.is_dir() {
                    // Two hard links of one file: rename would be a no-op.
                    sys::unlink(sdir, sname).map_err(err)?;
                    return Ok(result);
                }
                match sys::rename(sdir, sname, ddir, dname, false) {
                    Ok(()) => {}
                    Err(
                        Errno::ISDIR | Errno::NOTDIR | Errno::NOTEMPTY | Errno::EXIST | Errno::XDEV,
                    ) => {
                        set_aside_move(sdir, sname, ddir, dname, dm.id.dev, dst)?;
                    }
                    Err(e) => return Err(err(e)),
                }
            }
        }
        Ok(result)
    }

    /// Whether `dir` is `id` or lies below it (walking `..` up to the root).
    fn is_within(&self, dir: BorrowedFd<'_>, id: Id) -> Result<bool, JailError> {
        let root = self.root_id();
        let mut m = sys::fstat(dir).map_err(|e| map_os(e, "", OsCtx::Other))?;
        let mut cur = None;
        for _ in 0..4096 {
            if m.id == id {
                return Ok(true);
            }
            if m.id == root {
                return Ok(false);
            }
            let base = match &cur {
                Some(fd) => std::os::fd::AsFd::as_fd(fd),
                None => dir,
            };
            let up = sys::open_parent(base).map_err(|e| map_os(e, "", OsCtx::Other))?;
            let next = sys::fstat(&up).map_err(|e| map_os(e, "", OsCtx::Other))?;
            if next.id == m.id {
                return Ok(false);
            }
            m = next;
            cur = Some(up);
        }
        Ok(false)
    }
}

/// 11.2: rename `dst` aside, move `src` into place, then remove the set-aside entry; on
/// failure restore `dst`.
fn set_aside_move(
    sdir: BorrowedFd<'_>,
    sname: &std::ffi::OsStr,
    ddir: BorrowedFd<'_>,
    dname: &std::ffi::OsStr,
    ddev: u64,
    wire: &str,
) -> Result<(), JailError> {
    let err = |e: Errno| map_os(e, wire, OsCtx::Other);
    let aside = OsString::from(format!(".~agpt-{}.old", random_hex(16)));
    sys::rename(ddir, dname, ddir, &aside, true).map_err(err)?;
    let moved = match sys::rename(sdir, sname, ddir, dname, true) {
        Ok(()) => Ok(()),
        Err(Errno::XDEV) => tree::move_across_devices(sdir, sname, ddir, dname, wire),
        Err(e) => Err(err(e)),
    };
    if let Err(e) = moved {
        let _ = sys::rename(ddir, &aside, ddir, dname, true);
        return Err(e);
    }
    tree::remove_entry(ddir.as_fd(), &aside, ddev, wire)
}
