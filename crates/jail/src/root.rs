//! The root (JAIL_FILES_EXEC.md 2): opened once, recognised by identity, never re-bound.

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::fd::BorrowedFd;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

use rustix::fs::Mode;
use rustix::fs::OFlags;

use crate::config::JailConfig;
use crate::error::JailError;
use crate::lexical::JailPath;
use crate::lexical::PathOs;
use crate::sys;
use crate::sys::Id;

/// An opened allowed root. The only way to touch the filesystem through this crate.
///
/// Every operation takes a wire path (as the platform sends it), validates it once into
/// a [`JailPath`], resolves it on handles and acts on those handles. Results carry
/// display paths (4.8) only.
///
/// ```
/// use shim_jail::JailConfig;
/// use shim_jail::JailRoot;
///
/// let folder = tempfile::tempdir()?;
/// let jail = JailRoot::open(folder.path(), JailConfig::default(), shim_jail::ambient_authority())?;
/// let root = jail.root_path();
/// assert_eq!(jail.stat(&format!("{root}/missing"), true)?, None); // exists: false
/// assert!(jail.stat(root, true)?.is_some_and(|s| s.is_dir));
/// assert!(jail.stat("relative/path", true).is_err()); // wire paths are absolute
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct JailRoot {
    fs_root: OwnedFd,
    root: OwnedFd,
    root_id: Id,
    fs_root_is_root: bool,
    root_path: String,
    root_cpath: std::ffi::CString,
    root_components: Vec<OsString>,
    os: PathOs,
    home: Option<String>,
    max_file_size: AtomicU64,
    umask: u32,
    trash: Option<(OwnedFd, String)>,
}

impl JailRoot {
    /// Opens `root` as the allowed root (J-ROOT-1). This is the crate's single ambient
    /// entry point; `authority` makes the use of ambient authority explicit at the call
    /// site. Fails with `PATH_OUTSIDE_ALLOWED_ROOT` ("allowed root does not exist") when
    /// the root cannot be opened, is not a directory, or (with `refuse_symlink_root`) is a
    /// symlink: J-ROOT-2 says every request then fails with that code.
    pub fn open(
        root: &Path,
        config: JailConfig,
        authority: cap_std::AmbientAuthority,
    ) -> Result<JailRoot, JailError> {
        let _ = authority;
        let gone = JailError::RootUnavailable("does not exist");
        let mut flags = sys::WALK | OFlags::DIRECTORY | OFlags::CLOEXEC;
        if config.refuse_symlink_root {
            flags |= OFlags::NOFOLLOW;
        }
        // Running out of descriptors or memory says nothing about the root: those are
        // internal errors, not the spec's "does not exist" (2.1).
        let root_fd = rustix::fs::open(root, flags, Mode::empty()).map_err(|e| match e {
            rustix::io::Errno::MFILE | rustix::io::Errno::NFILE | rustix::io::Errno::NOMEM => {
                JailError::Internal(format!("cannot open the allowed root: {e}"))
            }
            _ => gone.clone(),
        })?;
        let meta = sys::fstat(&root_fd).map_err(|_| gone.clone())?;
        if !meta.is_dir() {
            return Err(gone);
        }
        let canonical = std::fs::canonicalize(root).map_err(|_| gone.clone())?;
        let check = rustix::fs::stat(&canonical).map_err(|_| gone.clone())?;
        if sys::Meta::from_stat(&check).id != meta.id {
            return Err(JailError::RootUnavailable("changed while it was opened"));
        }
        let Some(root_path) = canonical.to_str().map(str::to_owned) else {
            return Err(JailError::RootUnavailable("path is not valid UTF-8"));
        };
        let fs_root = rustix::fs::open(
            "/",
            sys::WALK | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|_| gone.clone())?;
        let fs_root_id = sys::fstat(&fs_root).map_err(|_| gone.clone())?.id;
        let root_components = canonical
            .as_os_str()
            .as_bytes()
            .split(|b| *b == b'/')
            .filter(|c| !c.is_empty())
            .map(|c| std::ffi::OsStr::from_bytes(c).to_owned())
            .collect();
        let trash = match &config.trash_dir {
            None => None,
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| JailError::Internal(format!("trash directory: {e}")))?;
                let canon = std::fs::canonicalize(dir)
                    .map_err(|e| JailError::Internal(format!("trash directory: {e}")))?;
                let fd = rustix::fs::open(
                    &canon,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                    Mode::empty(),
                )
                .map_err(|e| JailError::Internal(format!("trash directory: {e}")))?;
                Some((fd, canon.to_string_lossy().into_owned()))
            }
        };
        let root_cpath = std::ffi::CString::new(root_path.as_bytes())
            .map_err(|_| JailError::RootUnavailable("path contains NUL"))?;
        Ok(JailRoot {
            root_cpath,
            fs_root_is_root: fs_root_id == meta.id,
            fs_root,
            root: root_fd,
            root_id: meta.id,
            root_path,
            root_components,
            os: PathOs::host(),
            home: config.home.filter(|h| !h.is_empty()),
            max_file_size: AtomicU64::new(config.max_file_size_bytes),
            umask: sys::current_umask(),
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
        JailPath::parse(wire, self.os, self.home.as_deref())
    }

    pub(crate) fn root_fd(&self) -> BorrowedFd<'_> {
        self.root.as_fd()
    }

    pub(crate) fn fs_root_fd(&self) -> BorrowedFd<'_> {
        self.fs_root.as_fd()
    }

    pub(crate) fn root_id(&self) -> Id {
        self.root_id
    }

    pub(crate) fn fs_root_is_root(&self) -> bool {
        self.fs_root_is_root
    }

    pub(crate) fn root_components(&self) -> &[OsString] {
        &self.root_components
    }

    pub(crate) fn umask(&self) -> u32 {
        self.umask
    }

    pub(crate) fn trash(&self) -> Option<(BorrowedFd<'_>, &str)> {
        self.trash.as_ref().map(|(fd, p)| (fd.as_fd(), p.as_str()))
    }

    /// Whether `root_path`, resolved by the kernel now, still names the root's identity.
    pub(crate) fn root_path_reaches_root(&self) -> bool {
        rustix::fs::stat(self.root_cpath.as_c_str())
            .map(|s| sys::Meta::from_stat(&s).id == self.root_id)
            .unwrap_or(false)
    }

    /// 2.2: a deleted root fails every request.
    pub(crate) fn check_root_alive(&self) -> Result<(), JailError> {
        match sys::fstat(&self.root) {
            Ok(m) if m.nlink > 0 => Ok(()),
            _ => Err(JailError::RootUnavailable("no longer exists")),
        }
    }

    /// The display path (4.8) of names below the root.
    pub(crate) fn display(&self, rel: &[OsString]) -> String {
        let len = self.root_path.len() + rel.iter().map(|n| n.len() + 1).sum::<usize>();
        let mut s = String::with_capacity(len);
        s.push_str(&self.root_path);
        for n in rel {
            if !s.ends_with('/') {
                s.push('/');
            }
            s.push_str(&n.to_string_lossy());
        }
        s
    }
}
