//! FILE_READ (6).

use std::os::fd::AsFd;

use base64::Engine;

use super::MAX_BYTES_READ_BYTES;
use super::MAX_TEXT_READ_BYTES;
use crate::error::JailError;
use crate::error::OsCtx;
use crate::error::map_os;
use crate::root::JailRoot;
use crate::sys;
use crate::types::ContentEncoding;
use crate::types::ReadFormat;
use crate::types::ReadOptions;
use crate::types::ReadResult;
use crate::walk::Mode;
use crate::walk::Target;
use crate::walk::Want;

impl JailRoot {
    /// FILE_READ: reads a window of a regular file inside the root (6).
    pub fn read(&self, wire: &str, opts: &ReadOptions) -> Result<ReadResult, JailError> {
        let path = self.parse(wire)?;
        if opts.length == Some(0) {
            return Err(JailError::Internal("length must be greater than 0".into()));
        }
        let r = self.resolve(
            &path,
            Mode {
                follow_final: true,
                want: Want::Read,
                need_parent: false,
            },
        )?;
        let (meta, fd, open_err) = match &r.target {
            Target::Missing { .. } => return Err(JailError::not_found(wire)),
            Target::Existing { meta, fd, open_err } => (meta, fd, open_err),
        };
        if meta.is_dir() {
            return Err(JailError::internal("is a directory, not a file", wire));
        }
        if !meta.is_file() {
            return Err(JailError::internal("not a regular file", wire));
        }
        if let Some(e) = open_err {
            return Err(map_os(*e, wire, OsCtx::Existing));
        }
        let Some(fd) = fd else {
            return Err(JailError::internal("cannot open", wire));
        };
        let budget = match opts.format {
            ReadFormat::Text => MAX_TEXT_READ_BYTES,
            ReadFormat::Bytes => MAX_BYTES_READ_BYTES,
        };
        let limit = budget.min(self.max_file_size());
        let size = meta.size;
        let requested = opts.length.unwrap_or(size.saturating_sub(opts.offset));
        if requested > limit {
            return Err(JailError::TooLarge {
                size: requested,
                limit,
            });
        }
        // Never allocate more than the file can give.
        let want = requested.min(size.saturating_sub(opts.offset));
        let want = usize::try_from(want).map_err(|_| JailError::Internal("too large".into()))?;
        let data = sys::pread_exact(fd.as_fd(), opts.offset, want)
            .map_err(|e| map_os(e, wire, OsCtx::Existing))?;
        let n = data.len() as u64;
        let (content, encoding) = match opts.format {
            ReadFormat::Text => (
                String::from_utf8_lossy(&data).into_owned(),
                ContentEncoding::Utf8,
            ),
            ReadFormat::Bytes => (
                base64::engine::general_purpose::STANDARD.encode(&data),
                ContentEncoding::Base64,
            ),
        };
        Ok(ReadResult {
            content,
            encoding,
            size_bytes: n,
            truncated: opts.offset.saturating_add(n) < size,
            path: self.display(&r.rel),
        })
    }
}
