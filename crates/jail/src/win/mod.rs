//! The Windows jail (JAIL_FILES_EXEC.md 4.10, option (b) "open-then-verify").
//!
//! A wire path first passes the Windows lexical rules of 4.2 (`crate::lexical`: drive and
//! UNC prefixes only, no `\\?\`/`\\.\`, no streams, no reserved device names, no trailing
//! dots or spaces, `..` collapsed). The resulting absolute path is opened with backup
//! semantics, as a `\\?\` path so that Win32 applies no further normalisation; the OS
//! follows junctions, symlinks, 8.3 names and mapped drives. The handle's normalised final
//! path then decides containment: it must be the root's final path or lie below it
//! (case-insensitive ordinal comparison). All I/O happens on that handle, or by name in a
//! verified parent directory that is held open without `FILE_SHARE_DELETE`, so that
//! neither it nor any of its ancestors can be renamed or replaced while the operation runs.
//! The root itself is recognised by identity (volume serial, file index) and its final
//! path is checked on every request, so a renamed or replaced root fails closed (2.2).

mod ops;
mod sys;

use std::fs::File;
use std::fs::Metadata;
use std::fs::OpenOptions;
use std::io;
use std::os::windows::fs::OpenOptionsExt;
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

use windows_sys::Win32::Foundation::ERROR_ALREADY_EXISTS;
use windows_sys::Win32::Foundation::ERROR_BAD_PATHNAME;
use windows_sys::Win32::Foundation::ERROR_CANT_RESOLVE_FILENAME;
use windows_sys::Win32::Foundation::ERROR_DIR_NOT_EMPTY;
use windows_sys::Win32::Foundation::ERROR_DIRECTORY;
use windows_sys::Win32::Foundation::ERROR_FILE_EXISTS;
use windows_sys::Win32::Foundation::ERROR_FILE_NOT_FOUND;
use windows_sys::Win32::Foundation::ERROR_FILENAME_EXCED_RANGE;
use windows_sys::Win32::Foundation::ERROR_INVALID_NAME;
use windows_sys::Win32::Foundation::ERROR_PATH_NOT_FOUND;
use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_BACKUP_SEMANTICS;
use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT;
use windows_sys::Win32::Storage::FileSystem::FILE_READ_ATTRIBUTES;
use windows_sys::Win32::Storage::FileSystem::FILE_SHARE_DELETE;
use windows_sys::Win32::Storage::FileSystem::FILE_SHARE_READ;
use windows_sys::Win32::Storage::FileSystem::FILE_SHARE_WRITE;

pub(crate) use self::sys::Id;
use crate::config::JailConfig;
use crate::error::JailError;
use crate::lexical::Component;
use crate::lexical::JailPath;
use crate::lexical::PathOs;
use crate::lexical::Prefix;

/// Text-mode read budget (5.3).
pub const MAX_TEXT_READ_BYTES: u64 = 2_785_280;
/// Bytes-mode read budget (5.3).
pub const MAX_BYTES_READ_BYTES: u64 = 12_533_760;

/// An opened allowed root. The only way to touch the filesystem through this crate.
///
/// Every operation takes a wire path (as the platform sends it), validates it once into
/// a [`JailPath`], opens it and verifies the opened handle's final path against the root.
/// Results carry display paths (4.8) only.
#[derive(Debug)]
pub struct JailRoot {
    root: File,
    root_id: Id,
    root_path: String,
    home: Option<String>,
    max_file_size: AtomicU64,
    trash: Option<(File, String)>,
}

/// What an open is for: the access it asks for, and whether the final component is
/// followed (4.6).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Open {
    pub(crate) access: u32,
    pub(crate) follow: bool,
}

/// The outcome of resolving a wire path.
#[derive(Debug)]
pub(crate) enum Resolved {
    /// The object exists and lies inside (or is) the root.
    Existing {
        file: File,
        meta: Metadata,
        /// Names below the root, as the final path spells them.
        rel: Vec<String>,
        /// The wire path's own final name (for `named_entry_is_link`).
        requested: PathBuf,
    },
    /// The object does not exist; `parent` is the deepest existing directory (inside).
    Missing {
        parent: File,
        parent_rel: Vec<String>,
        /// The first missing name and every name after it.
        suffix: Vec<String>,
        /// The deepest existing object is not a directory (`<root>/a.txt/b`).
        through_file: bool,
    },
}

/// Upper-cases one character the way the comparison of final paths needs it (NTFS folds
/// with a one-to-one upper-case table; a character with a multi-character upper case is
/// kept as it is).
fn fold(c: char) -> char {
    let mut up = c.to_uppercase();
    match (up.next(), up.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// Case-insensitive ordinal equality of two names or paths.
pub(crate) fn eq_ci(a: &str, b: &str) -> bool {
    a.chars().map(fold).eq(b.chars().map(fold))
}

/// `\\?\` spelling of an absolute path made of `prefix` and `names`: Win32 passes it on
/// without stripping trailing dots or spaces or interpreting device names.
pub(crate) fn verbatim(prefix: &Prefix, names: &[&str]) -> PathBuf {
    let mut s = match prefix {
        Prefix::Drive(c) => format!(r"\\?\{c}:\"),
        Prefix::Unc { server, share } => format!(r"\\?\UNC\{server}\{share}\"),
        Prefix::Posix => String::from(r"\\?\"),
    };
    s.push_str(&names.join("\\"));
    PathBuf::from(s)
}

/// `\\?\` spelling of a final path returned by [`sys::final_path`].
pub(crate) fn verbatim_of(final_path: &str) -> PathBuf {
    match final_path.strip_prefix(r"\\") {
        Some(unc) => PathBuf::from(format!(r"\\?\UNC\{unc}")),
        None => PathBuf::from(format!(r"\\?\{final_path}")),
    }
}

/// Opens `path` with backup semantics (directories too), all sharing allowed, following
/// the final component or not.
pub(crate) fn open_path(path: &Path, access: u32, follow: bool) -> io::Result<File> {
    let mut flags = FILE_FLAG_BACKUP_SEMANTICS;
    if !follow {
        flags |= FILE_FLAG_OPEN_REPARSE_POINT;
    }
    OpenOptions::new()
        .access_mode(access)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .custom_flags(flags)
        .open(path)
}

/// Opens a directory without following it and without `FILE_SHARE_DELETE`: while the
/// handle is open, the directory cannot be renamed, removed or replaced, and neither can
/// its ancestors (Windows refuses to rename a directory with open handles below it).
pub(crate) fn pin_dir(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .access_mode(FILE_READ_ATTRIBUTES)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)
}

fn raw(e: &io::Error) -> Option<u32> {
    e.raw_os_error().and_then(|c| u32::try_from(c).ok())
}

/// "Does not exist" as the walk understands it (missing, or a non-directory traversed).
pub(crate) fn is_missing(e: &io::Error) -> bool {
    matches!(
        raw(e),
        Some(ERROR_FILE_NOT_FOUND | ERROR_PATH_NOT_FOUND | ERROR_DIRECTORY)
    ) || e.kind() == io::ErrorKind::NotFound
}

/// An existing name (create or rename target).
pub(crate) fn is_exists(e: &io::Error) -> bool {
    matches!(raw(e), Some(ERROR_ALREADY_EXISTS | ERROR_FILE_EXISTS))
}

/// The context of an OS call, for the codes whose meaning depends on it (5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ctx {
    /// Existence is required: "not found" means `PATH_NOT_FOUND`.
    Existing,
    /// Removing a directory non-recursively: "not empty" means `PATH_NOT_EMPTY`.
    Rmdir,
    /// Anything else.
    Other,
}

/// 5.4 for Windows error codes.
pub(crate) fn map_io(e: &io::Error, path: &str, ctx: Ctx) -> JailError {
    match raw(e) {
        Some(ERROR_FILE_NOT_FOUND | ERROR_PATH_NOT_FOUND) if ctx != Ctx::Other => {
            JailError::not_found(path)
        }
        Some(ERROR_FILENAME_EXCED_RANGE) => JailError::invalid(path, "name too long"),
        Some(ERROR_CANT_RESOLVE_FILENAME) => {
            JailError::invalid(path, "too many levels of symbolic links")
        }
        Some(ERROR_INVALID_NAME | ERROR_BAD_PATHNAME) => {
            JailError::invalid(path, "name rejected by the filesystem")
        }
        Some(ERROR_DIR_NOT_EMPTY) if ctx == Ctx::Rmdir => JailError::NotEmpty {
            path: path.to_owned(),
        },
        _ => JailError::Internal(format!("{path}: {e}")),
    }
}

impl JailRoot {
    /// Opens `root` as the allowed root (J-ROOT-1). This is the crate's single ambient
    /// entry point; `authority` makes the use of ambient authority explicit at the call
    /// site. Fails with `PATH_OUTSIDE_ALLOWED_ROOT` ("allowed root does not exist") when
    /// the root cannot be opened, is not a directory, or (with `refuse_symlink_root`) is a
    /// symlink or junction: J-ROOT-2 says every request then fails with that code.
    pub fn open(
        root: &Path,
        config: JailConfig,
        authority: cap_std::AmbientAuthority,
    ) -> Result<JailRoot, JailError> {
        let _ = authority;
        let gone = JailError::RootUnavailable("does not exist");
        let f = open_path(root, FILE_READ_ATTRIBUTES, !config.refuse_symlink_root)
            .map_err(|_| gone.clone())?;
        let meta = f.metadata().map_err(|_| gone.clone())?;
        if !meta.is_dir() || meta.file_type().is_symlink() {
            return Err(gone);
        }
        let root_path = sys::final_path(&f).map_err(|_| gone.clone())?;
        let (root_id, _) = sys::identity(&f).map_err(|_| gone.clone())?;
        let trash = match &config.trash_dir {
            None => None,
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| JailError::Internal(format!("trash directory: {e}")))?;
                let t = open_path(dir, FILE_READ_ATTRIBUTES, false)
                    .map_err(|e| JailError::Internal(format!("trash directory: {e}")))?;
                let p = sys::final_path(&t)
                    .map_err(|e| JailError::Internal(format!("trash directory: {e}")))?;
                Some((t, p))
            }
        };
        Ok(JailRoot {
            root: f,
            root_id,
            root_path,
            home: config.home.filter(|h| !h.is_empty()),
            max_file_size: AtomicU64::new(config.max_file_size_bytes),
            trash,
        })
    }

    /// The canonical root path (J-ROOT-1): the `HELLO.allowed_root` string and the base of
    /// every display path.
    pub fn root_path(&self) -> &str {
        &self.root_path
    }

    /// The effective `max_file_size_bytes`.
    pub fn max_file_size(&self) -> u64 {
        self.max_file_size.load(Ordering::Relaxed)
    }

    /// Lowers (never raises) the effective `max_file_size_bytes`, e.g. to the `HELLO_ACK`
    /// value (1.5).
    pub fn lower_max_file_size(&self, platform_value: u64) {
        self.max_file_size
            .fetch_min(platform_value, Ordering::Relaxed);
    }

    /// Parses a wire path with this host's rules (4.2, 4.3).
    pub fn parse(&self, wire: &str) -> Result<JailPath, JailError> {
        JailPath::parse(wire, PathOs::Windows, self.home.as_deref())
    }

    pub(crate) fn trash(&self) -> Option<&str> {
        self.trash.as_ref().map(|(_, p)| p.as_str())
    }

    /// 2.2: the root handle must still be reachable at `root_path` with the same identity
    /// (a renamed, removed or replaced root fails every request).
    pub(crate) fn check_root_alive(&self) -> Result<(), JailError> {
        let gone = JailError::RootUnavailable("no longer exists");
        let now = sys::final_path(&self.root).map_err(|_| gone.clone())?;
        if !eq_ci(&now, &self.root_path) {
            return Err(gone);
        }
        let by_path = open_path(&verbatim_of(&self.root_path), FILE_READ_ATTRIBUTES, false)
            .map_err(|_| gone.clone())?;
        match sys::identity(&by_path) {
            Ok((id, _)) if id == self.root_id => Ok(()),
            _ => Err(gone),
        }
    }

    /// Names below the root of a final path, or `None` when it is outside.
    pub(crate) fn rel_of(&self, final_path: &str) -> Option<Vec<String>> {
        let root: Vec<char> = self.root_path.chars().collect();
        let path: Vec<char> = final_path.chars().collect();
        if path.len() < root.len() || !root.iter().zip(&path).all(|(a, b)| fold(*a) == fold(*b)) {
            return None;
        }
        let rest: String = path[root.len()..].iter().collect();
        if rest.is_empty() {
            return Some(Vec::new());
        }
        let rest = if self.root_path.ends_with('\\') {
            rest.as_str()
        } else {
            rest.strip_prefix('\\')?
        };
        Some(
            rest.split('\\')
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect(),
        )
    }

    /// The display path (4.8) of names below the root.
    pub(crate) fn display(&self, rel: &[String]) -> String {
        let mut s = self.root_path.clone();
        for n in rel {
            if !s.ends_with('\\') {
                s.push('\\');
            }
            s.push_str(n);
        }
        s
    }

    /// `\\?\` spelling of names below the root (only ever built from verified names).
    pub(crate) fn verbatim_rel(&self, rel: &[String]) -> PathBuf {
        verbatim_of(&self.display(rel))
    }

    /// 4.4 by open-then-verify (4.10 option b).
    pub(crate) fn resolve(&self, path: &JailPath, how: Open) -> Result<Resolved, JailError> {
        self.check_root_alive()?;
        let wire = path.wire();
        let names: Vec<&str> = path
            .components()
            .into_iter()
            .filter_map(|c| match c {
                Component::Name(n) => Some(n),
                Component::ParentDir => None,
            })
            .collect();
        let full = verbatim(path.prefix(), &names);
        match open_path(&full, how.access, how.follow) {
            Ok(file) => {
                let fp = sys::final_path(&file).map_err(|e| map_io(&e, wire, Ctx::Other))?;
                let rel = self.rel_of(&fp).ok_or_else(|| JailError::outside(wire))?;
                let meta = file.metadata().map_err(|e| map_io(&e, wire, Ctx::Other))?;
                return Ok(Resolved::Existing {
                    file,
                    meta,
                    rel,
                    requested: full,
                });
            }
            Err(e) if is_missing(&e) => {}
            Err(e) => {
                // Not a missing object: the error counts only if the parent is inside
                // (J-WALK step 2, "any other lookup error").
                return match self.deepest_existing(path, &names)? {
                    Some(_) => Err(map_io(&e, wire, Ctx::Existing)),
                    None => Err(JailError::outside(wire)),
                };
            }
        }
        match self.deepest_existing(path, &names)? {
            Some((parent, parent_rel, k, through_file)) => Ok(Resolved::Missing {
                parent,
                parent_rel,
                suffix: names[k..].iter().map(|n| (*n).to_owned()).collect(),
                through_file,
            }),
            None => Err(JailError::outside(wire)),
        }
    }

    /// J-WALK-3 on Windows: the deepest existing prefix of `names`, which must be inside
    /// (`None` = outside, so the missing part cannot enter the root). Returns its handle
    /// (pinned), its names below the root, how many names it spans and whether it is not a
    /// directory.
    #[allow(clippy::type_complexity)]
    fn deepest_existing(
        &self,
        path: &JailPath,
        names: &[&str],
    ) -> Result<Option<(File, Vec<String>, usize, bool)>, JailError> {
        let wire = path.wire();
        for k in (0..names.len()).rev() {
            let p = verbatim(path.prefix(), &names[..k]);
            match open_path(&p, FILE_READ_ATTRIBUTES, true) {
                Ok(f) => {
                    let fp = sys::final_path(&f).map_err(|e| map_io(&e, wire, Ctx::Other))?;
                    let Some(rel) = self.rel_of(&fp) else {
                        return Ok(None);
                    };
                    let meta = f.metadata().map_err(|e| map_io(&e, wire, Ctx::Other))?;
                    if !meta.is_dir() {
                        return Ok(Some((f, rel, k, true)));
                    }
                    // Pin it (it must not be swapped before the operation creates in it),
                    // then check that the pinned directory is the one verified.
                    let pinned =
                        pin_dir(&verbatim_of(&fp)).map_err(|e| map_io(&e, wire, Ctx::Other))?;
                    if sys::identity(&pinned).ok().map(|x| x.0)
                        != sys::identity(&f).ok().map(|x| x.0)
                    {
                        return Err(JailError::internal("directory changed", wire));
                    }
                    return Ok(Some((pinned, rel, k, false)));
                }
                Err(e) if is_missing(&e) => continue,
                // An ancestor that cannot be opened (no such drive or share, no access)
                // cannot prove the path enters the root: fail closed.
                Err(_) => return Ok(None),
            }
        }
        Ok(None)
    }
}
