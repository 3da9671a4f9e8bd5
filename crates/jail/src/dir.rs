//! A jailed working directory for command execution (12.2).

use std::os::fd::AsFd;

use crate::error::JailError;
use crate::error::OsCtx;
use crate::error::map_os;
use crate::root::JailRoot;
use crate::sys;
use crate::walk::Mode;
use crate::walk::Target;
use crate::walk::Want;

impl JailRoot {
    /// Resolves a command's `cwd` (followed, 4.6) to an opened directory inside the root
    /// and its display path. `None` means the root. Missing → `PATH_NOT_FOUND`, not a
    /// directory → `INTERNAL_ERROR`, jail errors as usual. Callers start the child in the
    /// returned handle (`fchdir`), never by re-resolving the display path.
    pub fn open_dir(&self, wire: Option<&str>) -> Result<(cap_std::fs::Dir, String), JailError> {
        let Some(wire) = wire else {
            self.check_root_alive()?;
            let fd = sys::reopen_dir(self.root_fd())
                .map_err(|e| map_os(e, self.root_path(), OsCtx::Other))?;
            let dir = cap_std::fs::Dir::from_std_file(std::fs::File::from(fd));
            return Ok((dir, self.root_path().to_owned()));
        };
        let path = self.parse(wire)?;
        let r = self.resolve(
            &path,
            Mode {
                follow_final: true,
                want: Want::Dir,
                need_parent: false,
            },
        )?;
        let (meta, fd, open_err) = match r.target {
            Target::Missing { .. } => return Err(JailError::not_found(wire)),
            Target::Existing { meta, fd, open_err } => (meta, fd, open_err),
        };
        if !meta.is_dir() {
            return Err(JailError::internal("not a directory", wire));
        }
        if let Some(e) = open_err {
            return Err(map_os(e, wire, OsCtx::Other));
        }
        let fd = match fd {
            Some(fd) => fd,
            None => return Err(JailError::internal("cannot open directory", wire)),
        };
        // Make sure the handle is a readable directory (not O_PATH) for fchdir users.
        let fd = sys::reopen_dir(fd.as_fd()).map_err(|e| map_os(e, wire, OsCtx::Other))?;
        let dir = cap_std::fs::Dir::from_std_file(std::fs::File::from(fd));
        Ok((dir, self.display(&r.rel)))
    }
}
