//! Request options and results of the jailed operations. These are the jail's own types;
//! the daemon maps wire payloads to and from them. Results carry display paths (4.8) only.

/// How `FILE_READ` returns content (6 step 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFormat {
    /// UTF-8 with U+FFFD replacement; text budget.
    Text,
    /// Base64; bytes budget.
    Bytes,
}

impl ReadFormat {
    /// Bytes mode iff `format == "bytes"` or `encoding == "base64"` (PROTOCOL.md 7.4.2).
    pub fn from_wire(encoding: &str, format: &str) -> ReadFormat {
        if format == "bytes" || encoding == "base64" {
            ReadFormat::Bytes
        } else {
            ReadFormat::Text
        }
    }
}

/// Content encoding on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentEncoding {
    /// `utf-8`.
    Utf8,
    /// `base64` (standard alphabet, padded).
    Base64,
}

impl ContentEncoding {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ContentEncoding::Utf8 => "utf-8",
            ContentEncoding::Base64 => "base64",
        }
    }
}

/// `FILE_READ` options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOptions {
    /// Text or bytes mode.
    pub format: ReadFormat,
    /// Byte offset.
    pub offset: u64,
    /// Bytes to read; `None` = to the end of the file. `Some(0)` is invalid.
    pub length: Option<u64>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: ReadFormat::Text,
            offset: 0,
            length: None,
        }
    }
}

/// `FILE_CONTENTS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResult {
    /// Text, or base64 in bytes mode.
    pub content: String,
    /// `utf-8` in text mode, `base64` in bytes mode.
    pub encoding: ContentEncoding,
    /// Raw bytes read.
    pub size_bytes: u64,
    /// `offset + size_bytes < file size`.
    pub truncated: bool,
    /// Display path of the file read.
    pub path: String,
}

/// `FILE_WRITE` options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOptions {
    /// How `content` is encoded.
    pub encoding: ContentEncoding,
    /// Create missing parent directories (7.3).
    pub create_parents: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            encoding: ContentEncoding::Utf8,
            create_parents: false,
        }
    }
}

/// A successful write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteResult {
    /// Display path of the file written (the link target for a followed link).
    pub path: String,
    /// Bytes written.
    pub size_bytes_written: u64,
}

/// `FILE_STAT_RESPONSE` for an existing object (`exists: true`). A missing object is
/// `Ok(None)`, which the daemon sends as `exists: false` with every field null.
#[derive(Debug, Clone, PartialEq)]
pub struct StatInfo {
    /// Regular file.
    pub is_file: bool,
    /// Directory.
    pub is_dir: bool,
    /// See 8 (`named_entry_is_link` when following, else the entry itself).
    pub is_symlink: bool,
    /// `st_size`.
    pub size_bytes: u64,
    /// Modification time, epoch seconds.
    pub mtime: f64,
    /// Status-change time, epoch seconds.
    pub ctime: f64,
    /// Four octal digits (8.1).
    pub mode: String,
    /// Owner uid (POSIX).
    pub owner_uid: Option<u32>,
    /// Owner gid (POSIX).
    pub owner_gid: Option<u32>,
    /// 8.2, regular files only.
    pub mime_type: Option<&'static str>,
    /// Display path of the described object.
    pub path: String,
}

/// `FILE_LIST` options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOptions {
    /// Basename glob (9.3); `None` matches everything.
    pub glob: Option<String>,
    /// Descend into real subdirectories.
    pub recursive: bool,
    /// Report (and descend into) names starting with `.`.
    pub include_hidden: bool,
    /// At least 1.
    pub max_entries: usize,
}

impl Default for ListOptions {
    fn default() -> Self {
        ListOptions {
            glob: None,
            recursive: false,
            include_hidden: false,
            max_entries: 1000,
        }
    }
}

/// One `FILE_LIST` entry (9.2).
#[derive(Debug, Clone, PartialEq)]
pub struct ListEntry {
    /// Entry name.
    pub name: String,
    /// Display path.
    pub path: String,
    /// Regular file (for a link: its inside target's type).
    pub is_file: bool,
    /// Directory (for a link: its inside target's type).
    pub is_dir: bool,
    /// The entry is a symlink.
    pub is_symlink: bool,
    /// `lstat` size.
    pub size_bytes: u64,
    /// `lstat` modification time.
    pub mtime: f64,
}

/// `FILE_LIST_RESPONSE`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListResult {
    /// Entries in the order of 9.1.
    pub entries: Vec<ListEntry>,
    /// At least one more entry would have been reported.
    pub truncated: bool,
    /// Display path of the listed directory.
    pub path: String,
}

/// `FILE_DELETE` options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Remove a directory tree.
    pub recursive: bool,
    /// A missing target is success.
    pub missing_ok: bool,
}

/// A successful delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteResult {
    /// Display path of the removed entry (`None` when it was missing).
    pub path: Option<String>,
    /// Trash mode: where the entry went (audit `trashed_to`).
    pub trashed_to: Option<String>,
}

/// `FILE_MOVE` options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MoveOptions {
    /// Replace an existing destination entry.
    pub overwrite: bool,
}

/// A successful move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveResult {
    /// Display path of the source.
    pub src: String,
    /// Display path of the destination.
    pub dst: String,
}
