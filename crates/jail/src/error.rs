//! The jail's error type and its single mapping to wire codes (JAIL_FILES_EXEC.md 5.4).

use shim_protocol::ErrorCode;

/// Why a jailed operation was refused or failed.
///
/// Messages are short and never name a host location beyond the requested path or the
/// display path of an inside object (spec README, "Keep `message` short").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JailError {
    /// The path is relative, resolves outside the root, or targets the root where that is
    /// refused (2.3).
    #[error("path is outside the allowed root: {path}")]
    Outside {
        /// The requested path as received.
        path: String,
    },
    /// The allowed root cannot be opened, was removed or was replaced (2.1, 2.2).
    #[error("allowed root {0}")]
    RootUnavailable(&'static str),
    /// A Windows reserved device name in a component (4.2 J-STR-4).
    #[error("reserved name in path: {path}")]
    ReservedName {
        /// The requested path as received.
        path: String,
    },
    /// NUL, forbidden characters, stream syntax, over-long names or link loops.
    #[error("invalid path ({reason}): {path}")]
    InvalidChars {
        /// The requested path as received.
        path: String,
        /// What was wrong, e.g. "too many levels of symbolic links".
        reason: &'static str,
    },
    /// The target (or a needed parent) does not exist.
    #[error("path not found: {path}")]
    NotFound {
        /// The requested path as received.
        path: String,
    },
    /// The destination of a move exists and `overwrite` is false.
    #[error("path already exists: {path}")]
    Exists {
        /// The requested destination as received.
        path: String,
    },
    /// A non-recursive delete of a non-empty directory.
    #[error("directory not empty: {path}")]
    NotEmpty {
        /// The requested path as received.
        path: String,
    },
    /// Over a size budget (5.3).
    #[error("file too large: {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The size asked for.
        size: u64,
        /// The limit in force.
        limit: u64,
    },
    /// Anything else: wrong type, permission, I/O, bad base64.
    #[error("{0}")]
    Internal(String),
}

impl JailError {
    /// The wire `ERROR.code` for this error. This is the only internal-to-wire mapping.
    pub fn code(&self) -> ErrorCode {
        match self {
            JailError::Outside { .. } | JailError::RootUnavailable(_) => {
                ErrorCode::PathOutsideAllowedRoot
            }
            JailError::ReservedName { .. } => ErrorCode::PathReservedName,
            JailError::InvalidChars { .. } => ErrorCode::PathInvalidChars,
            JailError::NotFound { .. } => ErrorCode::PathNotFound,
            JailError::Exists { .. } => ErrorCode::PathExists,
            JailError::NotEmpty { .. } => ErrorCode::PathNotEmpty,
            JailError::TooLarge { .. } => ErrorCode::FileTooLarge,
            JailError::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// True for the jail violations of 4.11 (`PATH_OUTSIDE_ALLOWED_ROOT`,
    /// `PATH_RESERVED_NAME`, `PATH_INVALID_CHARS`): the daemon audits these as
    /// `JAIL_VIOLATION` instead of an operation record.
    pub fn is_jail_violation(&self) -> bool {
        matches!(
            self.code(),
            ErrorCode::PathOutsideAllowedRoot
                | ErrorCode::PathReservedName
                | ErrorCode::PathInvalidChars
        )
    }

    pub(crate) fn outside(path: &str) -> Self {
        JailError::Outside {
            path: path.to_owned(),
        }
    }

    pub(crate) fn invalid(path: &str, reason: &'static str) -> Self {
        JailError::InvalidChars {
            path: path.to_owned(),
            reason,
        }
    }

    pub(crate) fn not_found(path: &str) -> Self {
        JailError::NotFound {
            path: path.to_owned(),
        }
    }

    pub(crate) fn internal(what: &str, path: &str) -> Self {
        JailError::Internal(format!("{what}: {path}"))
    }
}

/// What an OS error is mapped to (5.4), given the path it concerns.
#[cfg(unix)]
pub(crate) fn map_os(err: rustix::io::Errno, path: &str, ctx: OsCtx) -> JailError {
    use rustix::io::Errno;
    match err {
        Errno::NOENT if ctx != OsCtx::Other => JailError::not_found(path),
        Errno::NAMETOOLONG => JailError::invalid(path, "name too long"),
        Errno::LOOP => JailError::invalid(path, "too many levels of symbolic links"),
        Errno::ILSEQ => JailError::invalid(path, "name rejected by the filesystem"),
        Errno::INVAL if ctx == OsCtx::Create => {
            JailError::invalid(path, "name rejected by the filesystem")
        }
        Errno::NOTEMPTY | Errno::EXIST if ctx == OsCtx::Rmdir => JailError::NotEmpty {
            path: path.to_owned(),
        },
        other => JailError::Internal(format!("{path}: {}", std::io::Error::from(other))),
    }
}

/// The context of an OS call, for the few codes whose meaning depends on it (5.4).
#[cfg(unix)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OsCtx {
    /// Existence is required: ENOENT means `PATH_NOT_FOUND`.
    Existing,
    /// Creating a name: EINVAL means the filesystem rejected the name.
    Create,
    /// Removing a directory non-recursively: ENOTEMPTY means `PATH_NOT_EMPTY`.
    Rmdir,
    /// Anything else.
    Other,
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
