//! FILE_STAT (8).

use crate::error::JailError;
use crate::mime::mime_for_name;
use crate::root::JailRoot;
use crate::types::StatInfo;
use crate::walk::Mode;
use crate::walk::Target;
use crate::walk::Want;

impl JailRoot {
    /// FILE_STAT: `Ok(None)` is `exists: false` (8 step 2); jail errors are errors, never
    /// `exists: false`.
    pub fn stat(&self, wire: &str, follow_symlinks: bool) -> Result<Option<StatInfo>, JailError> {
        let path = self.parse(wire)?;
        let r = self.resolve(
            &path,
            Mode {
                follow_final: follow_symlinks,
                want: Want::Meta,
                need_parent: false,
            },
        )?;
        let meta = match &r.target {
            Target::Missing { .. } => return Ok(None),
            Target::Existing { meta, .. } => *meta,
        };
        let mime_type = if meta.is_file() {
            r.rel
                .last()
                .and_then(|n| n.to_str())
                .and_then(mime_for_name)
        } else {
            None
        };
        Ok(Some(StatInfo {
            is_file: meta.is_file(),
            is_dir: meta.is_dir(),
            is_symlink: if follow_symlinks {
                r.named_entry_is_link
            } else {
                meta.is_link()
            },
            size_bytes: meta.size,
            mtime: meta.mtime,
            ctime: meta.ctime,
            mode: format!("{:04o}", meta.mode),
            owner_uid: Some(meta.uid),
            owner_gid: Some(meta.gid),
            mime_type,
            path: self.display(&r.rel),
        }))
    }
}
