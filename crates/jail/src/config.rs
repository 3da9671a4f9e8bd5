//! How a root is opened (shared by the Unix and the Windows jail).

/// How a root is opened and which limits apply to it.
#[derive(Debug, Clone)]
pub struct JailConfig {
    /// Effective `max_file_size_bytes` (1.5); may be lowered later with
    /// [`crate::JailRoot::lower_max_file_size`].
    pub max_file_size_bytes: u64,
    /// `<home>` for `~` expansion (J-LEX-2); `None` disables expansion.
    pub home: Option<String>,
    /// Refuse a root that is itself a symlink (per-chat roots, J-ROOT-1).
    pub refuse_symlink_root: bool,
    /// Trash mode (10.5): deletes move entries into this directory (created if
    /// missing). It must lie outside the root; it is never reachable through the jail.
    pub trash_dir: Option<std::path::PathBuf>,
}

impl Default for JailConfig {
    fn default() -> Self {
        JailConfig {
            max_file_size_bytes: shim_protocol::limits::DEFAULT_MAX_FILE_SIZE_BYTES,
            home: None,
            refuse_symlink_root: true,
            trash_dir: None,
        }
    }
}
