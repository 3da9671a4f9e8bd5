//! File operations (section 7.4).

use serde::Deserialize;
use serde::Serialize;

use crate::wire_enum::wire_enum;

wire_enum! {
    /// `encoding` of file and clipboard contents.
    closed ContentEncoding {
        /// UTF-8 text.
        Utf8 => "utf-8",
        /// Standard base64 with padding.
        Base64 => "base64",
    }
}

#[allow(clippy::derivable_impls)] // the enum comes from wire_enum!
impl Default for ContentEncoding {
    fn default() -> Self {
        ContentEncoding::Utf8
    }
}

wire_enum! {
    /// `FILE_READ.format`.
    closed ReadFormat {
        /// Text.
        Text => "text",
        /// Raw bytes (base64 on the wire).
        Bytes => "bytes",
    }
}

#[allow(clippy::derivable_impls)] // the enum comes from wire_enum!
impl Default for ReadFormat {
    fn default() -> Self {
        ReadFormat::Text
    }
}

/// `FILE_READ` (section 7.4.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct FileRead {
    /// Jailed path.
    pub path: String,
    /// `base64` alone selects bytes mode.
    #[serde(default)]
    pub encoding: ContentEncoding,
    /// `bytes` selects bytes mode.
    #[serde(default)]
    pub format: ReadFormat,
    /// Byte offset.
    #[serde(default, deserialize_with = "crate::values::lenient_int::de")]
    pub offset: u64,
    /// Bytes to read; > 0 when present; null reads to the end.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::values::positive_opt"
    )]
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "proptest::option::of(1u64..u64::MAX)")
    )]
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub length: Option<u64>,
}

impl FileRead {
    /// Text mode iff `format != bytes` and `encoding != base64`.
    pub fn is_text(&self) -> bool {
        self.format != ReadFormat::Bytes && self.encoding != ContentEncoding::Base64
    }
}

/// `FILE_CONTENTS` (section 7.4.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct FileContents {
    /// Decoded text, or base64.
    pub content: String,
    /// `utf-8` (text) or `base64` (bytes).
    pub encoding: ContentEncoding,
    /// Raw bytes read.
    pub size_bytes: u64,
    /// `offset + size_bytes < file size`.
    pub truncated: bool,
}

/// `FILE_WRITE` (section 7.4.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct FileWrite {
    /// Jailed path.
    pub path: String,
    /// Text or base64.
    pub content: String,
    /// How `content` is encoded.
    #[serde(default)]
    pub encoding: ContentEncoding,
    /// Create missing parents (the platform always sends true).
    #[serde(default)]
    pub create_parents: bool,
}

/// `FILE_STAT` (section 7.4.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct FileStat {
    /// Jailed path.
    pub path: String,
    /// Follow a final symlink.
    #[serde(default = "super::default_true")]
    pub follow_symlinks: bool,
}

/// `FILE_STAT_RESPONSE` (section 7.4.4). With `exists: false` every other field is null.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct FileStatResponse {
    /// Whether the path exists.
    pub exists: bool,
    /// Regular file.
    pub is_file: Option<bool>,
    /// Directory.
    pub is_dir: Option<bool>,
    /// The requested path itself is a symlink.
    pub is_symlink: Option<bool>,
    /// Size in bytes.
    pub size_bytes: Option<u64>,
    /// Modification time, epoch seconds.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::opt_f64()")
    )]
    pub mtime: Option<f64>,
    /// Change time, epoch seconds.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::opt_f64()")
    )]
    pub ctime: Option<f64>,
    /// Four octal digits, e.g. `"0644"`.
    pub mode: Option<String>,
    /// Owner uid (null on Windows).
    pub owner_uid: Option<u32>,
    /// Owner gid (null on Windows).
    pub owner_gid: Option<u32>,
    /// Guessed from the extension.
    pub mime_type: Option<String>,
    /// Canonical resolved path.
    pub path: Option<String>,
}

/// `FILE_LIST` (section 7.4.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct FileList {
    /// Jailed directory.
    pub path: String,
    /// Shell wildcard matched against each basename.
    #[serde(default)]
    pub glob: Option<String>,
    /// Descend (not into symlinked directories).
    #[serde(default)]
    pub recursive: bool,
    /// Include dot entries.
    #[serde(default)]
    pub include_hidden: bool,
    /// Stop after this many entries; at least 1 (JAIL_FILES_EXEC.md 5.2).
    #[serde(
        default = "default_max_entries",
        deserialize_with = "crate::values::positive"
    )]
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    #[cfg_attr(any(test, feature = "arbitrary"), proptest(strategy = "1u64.."))]
    pub max_entries: u64,
}

fn default_max_entries() -> u64 {
    1000
}

/// One `FILE_LIST_RESPONSE` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct FileListEntry {
    /// Basename.
    pub name: String,
    /// Canonical path.
    pub path: String,
    /// Regular file.
    pub is_file: bool,
    /// Directory.
    pub is_dir: bool,
    /// Symlink.
    pub is_symlink: bool,
    /// Size in bytes.
    pub size_bytes: Option<u64>,
    /// Modification time.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::opt_f64()")
    )]
    pub mtime: Option<f64>,
}

/// `FILE_LIST_RESPONSE` (section 7.4.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct FileListResponse {
    /// Entries in filesystem order.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::small_vec()")
    )]
    pub entries: Vec<FileListEntry>,
    /// True when `max_entries` stopped the listing.
    pub truncated: bool,
}

/// `FILE_DELETE` (section 7.4.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct FileDelete {
    /// Jailed path.
    pub path: String,
    /// Remove a directory tree.
    #[serde(default)]
    pub recursive: bool,
    /// A missing path is success.
    #[serde(default)]
    pub missing_ok: bool,
}

/// `FILE_MOVE` (section 7.4.7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct FileMove {
    /// Jailed source.
    pub src: String,
    /// Jailed destination.
    pub dst: String,
    /// Replace an existing destination.
    #[serde(default)]
    pub overwrite: bool,
}
