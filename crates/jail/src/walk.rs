//! Step 2 of the jail: the resolution walk on handles (JAIL_FILES_EXEC.md 4.4-4.8, 4.10).
//!
//! The walk starts at the filesystem root of the absolute path, tracks the depth below
//! the root (`None` = outside) and recognises the root by identity (J-WALK-1). On Linux,
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` from the root handle is a fast path
//! for link-free paths spelled through `root_path`; anything it refuses falls back to the
//! full walk, so absolute in-root links and re-entry (J-WALK-4) still resolve.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::fd::BorrowedFd;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::OFlags;
use rustix::io::Errno;

use crate::error::JailError;
use crate::lexical::Component;
use crate::lexical::JailPath;
use crate::root::JailRoot;
use crate::sys;
use crate::sys::Meta;

#[cfg(test)]
thread_local! {
    /// How often the openat2 fast path resolved a request on this thread (tests only).
    pub(crate) static FAST_HITS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Symlinks followed per resolution before giving up (4.4).
const MAX_HOPS: u32 = 40;

/// What the final component is opened as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    /// Metadata only.
    Meta,
    /// A readable regular file (non-blocking, so a FIFO cannot hang the open).
    Read,
    /// A readable directory.
    Dir,
}

impl Want {
    fn flags(self) -> OFlags {
        match self {
            Want::Meta => sys::WALK,
            Want::Read => OFlags::RDONLY | OFlags::NONBLOCK,
            Want::Dir => OFlags::RDONLY | OFlags::DIRECTORY,
        }
    }
}

/// A directory handle owned by the walk or borrowed from the root.
#[derive(Debug)]
pub(crate) enum Handle<'a> {
    Borrowed(BorrowedFd<'a>),
    Owned(OwnedFd),
}

impl Handle<'_> {
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Handle::Borrowed(b) => *b,
            Handle::Owned(o) => o.as_fd(),
        }
    }
}

/// The resolved target.
#[derive(Debug)]
pub(crate) enum Target {
    /// It exists. `fd` is opened as asked by [`Want`] when `open_err` is `None`; otherwise
    /// it is a metadata-only handle (or none) and `open_err` says why the wanted open
    /// failed.
    Existing {
        meta: Meta,
        fd: Option<OwnedFd>,
        open_err: Option<Errno>,
    },
    /// It does not exist (J-WALK-3).
    Missing {
        /// The first missing name and all names after it.
        suffix: Vec<OsString>,
        /// A `..` occurred in the missing part: never create.
        dotdot: bool,
        /// An existing non-directory was traversed (`a.txt/b`).
        through_file: bool,
        /// A missing directory came from a symlink's text (never created, 7.2).
        link_dir: bool,
    },
}

/// The result of a resolution (4.1).
#[derive(Debug)]
pub(crate) struct Resolved<'a> {
    /// Directory holding the final entry; `None` when the target is a directory reached as
    /// a handle (`…/sub/..`) or when the fast path did not need it.
    pub(crate) parent: Option<Handle<'a>>,
    /// The final name in `parent`.
    pub(crate) name: Option<OsString>,
    pub(crate) target: Target,
    /// The target's identity equals the root's.
    pub(crate) is_root: bool,
    /// Names below the root to the target (for a missing target: to `parent`).
    pub(crate) rel: Vec<OsString>,
    /// The final component named by the request is a symlink that was followed.
    pub(crate) named_entry_is_link: bool,
}

impl Resolved<'_> {
    pub(crate) fn meta(&self) -> Option<&Meta> {
        match &self.target {
            Target::Existing { meta, .. } => Some(meta),
            Target::Missing { .. } => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Request,
    Link,
}

#[derive(Debug, Clone)]
enum QComp {
    Name(OsString),
    Up,
}

/// Options of one resolution.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mode {
    pub(crate) follow_final: bool,
    pub(crate) want: Want,
    /// The caller needs `parent` + `name` (writes, deletes, moves).
    pub(crate) need_parent: bool,
}

struct State<'a> {
    h: Handle<'a>,
    d: Option<usize>,
    rel: Vec<OsString>,
}

impl JailRoot {
    /// Resolves a parsed path (4.4). `wire` is only used in error messages.
    pub(crate) fn resolve<'a>(
        &'a self,
        path: &JailPath,
        mode: Mode,
    ) -> Result<Resolved<'a>, JailError> {
        let wire = path.wire();
        let comps = path.components();
        let comps = comps.as_slice();
        // Fast start: the path is spelled through root_path and that spelling still
        // reaches the root's identity (J-ROOT-3: a replaced root is not re-bound).
        if let Some(rest) = self.strip_root_prefix(comps)
            && self.root_path_reaches_root()
        {
            #[cfg(target_os = "linux")]
            if let Some(r) = self.fast_beneath(rest, mode, wire)? {
                return Ok(r);
            }
            let queue = to_queue(rest, Origin::Request);
            let st = State {
                h: Handle::Borrowed(self.root_fd()),
                d: Some(0),
                rel: Vec::new(),
            };
            return self.walk(st, queue, mode, wire);
        }
        self.check_root_alive()?;
        let queue = to_queue(comps, Origin::Request);
        let mut st = State {
            h: Handle::Borrowed(self.fs_root_fd()),
            d: None,
            rel: Vec::new(),
        };
        if self.fs_root_is_root() {
            st.d = Some(0);
        }
        self.walk(st, queue, mode, wire)
    }

    /// Resolves `name` inside an already-resolved inside directory (FILE_LIST link
    /// entries, 9.2): a full walk starting at this entry.
    pub(crate) fn resolve_from<'a>(
        &'a self,
        dir: BorrowedFd<'a>,
        rel: &[OsString],
        name: &OsStr,
        want: Want,
    ) -> Result<Resolved<'a>, JailError> {
        let st = State {
            h: Handle::Borrowed(dir),
            d: Some(rel.len()),
            rel: rel.to_vec(),
        };
        let mut q = VecDeque::new();
        q.push_back((QComp::Name(name.to_owned()), Origin::Request));
        let mode = Mode {
            follow_final: true,
            want,
            need_parent: false,
        };
        self.walk(st, q, mode, "")
    }

    fn strip_root_prefix<'c, 'p>(&self, comps: &'c [Component<'p>]) -> Option<&'c [Component<'p>]> {
        let rc = self.root_components();
        if comps.len() < rc.len() {
            return None;
        }
        for (c, r) in comps.iter().zip(rc) {
            match c {
                Component::Name(n) if n.as_bytes() == r.as_bytes() => {}
                _ => return None,
            }
        }
        comps.get(rc.len()..)
    }

    #[cfg(target_os = "linux")]
    fn fast_beneath<'a>(
        &'a self,
        rest: &[Component<'_>],
        mode: Mode,
        wire: &str,
    ) -> Result<Option<Resolved<'a>>, JailError> {
        use rustix::fs::ResolveFlags;
        let mut names: Vec<&str> = Vec::with_capacity(rest.len());
        for c in rest {
            match c {
                Component::Name(n) => names.push(n),
                Component::ParentDir => return Ok(None),
            }
        }
        let Some((last, dirs)) = names.split_last() else {
            return Ok(None);
        };
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        if !mode.need_parent {
            let joined = names.join("/");
            // openat2 rejects any flag beside DIRECTORY/NOFOLLOW/CLOEXEC with O_PATH.
            let mut flags = mode.want.flags() | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            if mode.want != Want::Meta {
                flags |= OFlags::NOCTTY;
            }
            let Ok(fd) = rustix::fs::openat2(
                self.root_fd(),
                joined.as_str(),
                flags,
                rustix::fs::Mode::empty(),
                resolve,
            ) else {
                return Ok(None);
            };
            let Ok(meta) = sys::fstat(&fd) else {
                return Ok(None);
            };
            if meta.is_link() && mode.follow_final {
                return Ok(None);
            }
            if meta.id == self.root_id() {
                // A bind mount of the root inside itself: let the full walk decide.
                return Ok(None);
            }
            #[cfg(test)]
            FAST_HITS.with(|c| c.set(c.get() + 1));
            let rel: Vec<OsString> = names.iter().map(OsString::from).collect();
            return Ok(Some(Resolved {
                parent: None,
                name: Some(OsString::from(*last)),
                target: Target::Existing {
                    meta,
                    fd: Some(fd),
                    open_err: None,
                },
                is_root: false,
                rel,
                named_entry_is_link: false,
            }));
        }
        if dirs.is_empty() {
            return Ok(None);
        }
        let joined = dirs.join("/");
        let flags = sys::WALK | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let Ok(fd) = rustix::fs::openat2(
            self.root_fd(),
            joined.as_str(),
            flags,
            rustix::fs::Mode::empty(),
            resolve,
        ) else {
            return Ok(None);
        };
        #[cfg(test)]
        FAST_HITS.with(|c| c.set(c.get() + 1));
        let st = State {
            h: Handle::Owned(fd),
            d: Some(dirs.len()),
            rel: dirs.iter().map(OsString::from).collect(),
        };
        let mut q = VecDeque::new();
        q.push_back((QComp::Name(OsString::from(*last)), Origin::Request));
        self.walk(st, q, mode, wire).map(Some)
    }

    fn walk<'a>(
        &'a self,
        mut st: State<'a>,
        mut queue: VecDeque<(QComp, Origin)>,
        mode: Mode,
        wire: &str,
    ) -> Result<Resolved<'a>, JailError> {
        let root_id = self.root_id();
        let mut hops = 0u32;
        let mut named_link = false;
        let outside = || JailError::outside(wire);
        let lookup_err = |e: Errno, d: Option<usize>| match e {
            Errno::NAMETOOLONG => JailError::invalid(wire, "name too long"),
            _ if d.is_none() => JailError::outside(wire),
            other => crate::error::map_os(other, wire, crate::error::OsCtx::Other),
        };
        let mut h_meta: Option<Meta> = None;
        while let Some((c, origin)) = queue.pop_front() {
            let last = queue.is_empty();
            let name = match c {
                QComp::Up => {
                    let nh = sys::open_parent(st.h.fd()).map_err(|e| lookup_err(e, st.d))?;
                    st.d = match st.d {
                        Some(0) | None => None,
                        Some(n) => {
                            st.rel.pop();
                            Some(n - 1)
                        }
                    };
                    st.h = Handle::Owned(nh);
                    let m = sys::fstat(st.h.fd()).map_err(|e| lookup_err(e, st.d))?;
                    if m.id == root_id {
                        st.d = Some(0);
                        st.rel.clear();
                    }
                    h_meta = Some(m);
                    continue;
                }
                QComp::Name(n) => n,
            };
            h_meta = None;
            let want = if last { mode.want } else { Want::Meta };
            let entry = match lookup(st.h.fd(), &name, want) {
                Ok(e) => e,
                Err(Errno::NOENT) => {
                    return self.virtual_mode(st, name, origin, queue, false, wire);
                }
                Err(e) => return Err(lookup_err(e, st.d)),
            };
            let (meta, fd, open_err) = entry;
            if meta.is_link() && (!last || mode.follow_final) {
                hops += 1;
                if hops > MAX_HOPS {
                    return Err(JailError::invalid(
                        wire,
                        "too many levels of symbolic links",
                    ));
                }
                if last && origin == Origin::Request {
                    named_link = true;
                }
                let text = sys::read_link(st.h.fd(), &name, fd.as_ref().map(AsFd::as_fd))
                    .map_err(|e| lookup_err(e, st.d))?;
                let bytes = text.as_bytes();
                if bytes.is_empty() {
                    return self.virtual_mode(st, name, origin, queue, false, wire);
                }
                if bytes.first() == Some(&b'/') {
                    st.h = Handle::Borrowed(self.fs_root_fd());
                    st.rel.clear();
                    st.d = if self.fs_root_is_root() {
                        Some(0)
                    } else {
                        None
                    };
                }
                let mut parts: Vec<(QComp, Origin)> = Vec::new();
                for p in bytes.split(|b| *b == b'/') {
                    match p {
                        b"" | b"." => {}
                        b".." => parts.push((QComp::Up, Origin::Link)),
                        n => {
                            parts.push((QComp::Name(OsStr::from_bytes(n).to_owned()), Origin::Link))
                        }
                    }
                }
                if parts.is_empty() {
                    // The link names a directory handle itself (e.g. "/" or "."): the
                    // target is `H` after the move.
                    let m = sys::fstat(st.h.fd()).map_err(|e| lookup_err(e, st.d))?;
                    if m.id == root_id {
                        st.d = Some(0);
                        st.rel.clear();
                    }
                    if last {
                        return self.dir_target(st, m, mode, wire, named_link);
                    }
                    continue;
                }
                for p in parts.into_iter().rev() {
                    queue.push_front(p);
                }
                continue;
            }
            if !last {
                if meta.is_dir() {
                    let Some(fd) = fd else {
                        return Err(JailError::internal("cannot open directory", wire));
                    };
                    st.h = Handle::Owned(fd);
                    if meta.id == root_id {
                        st.d = Some(0);
                        st.rel.clear();
                    } else if let Some(d) = st.d {
                        st.d = Some(d + 1);
                        st.rel.push(name);
                    }
                    continue;
                }
                return self.virtual_mode(st, name, origin, queue, true, wire);
            }
            // Final component, not followed.
            let is_root = meta.id == root_id && !(meta.is_link());
            if st.d.is_none() && !is_root {
                return Err(outside());
            }
            let mut rel = st.rel;
            if is_root {
                rel.clear();
            } else {
                rel.push(name.clone());
            }
            return Ok(Resolved {
                parent: Some(st.h),
                name: Some(name),
                target: Target::Existing { meta, fd, open_err },
                is_root,
                rel,
                named_entry_is_link: named_link,
            });
        }
        // The queue ran out on `..` (or was empty): the target is `H` itself.
        let m = match h_meta {
            Some(m) => m,
            None => sys::fstat(st.h.fd()).map_err(|e| lookup_err(e, st.d))?,
        };
        self.dir_target(st, m, mode, wire, named_link)
    }

    fn dir_target<'a>(
        &'a self,
        st: State<'a>,
        meta: Meta,
        mode: Mode,
        wire: &str,
        named_link: bool,
    ) -> Result<Resolved<'a>, JailError> {
        let is_root = meta.id == self.root_id();
        if st.d.is_none() && !is_root {
            return Err(JailError::outside(wire));
        }
        let fd = match mode.want {
            Want::Meta => None,
            Want::Read | Want::Dir => sys::reopen_dir(st.h.fd()).ok(),
        };
        let open_err = if mode.want == Want::Read {
            Some(Errno::ISDIR)
        } else {
            None
        };
        let mut parent = None;
        let mut name = None;
        if mode.need_parent && !is_root {
            // `…/sub/..` names `sub`'s parent as a directory; operations that act on an
            // entry need its parent and name, re-verified by identity.
            if let Some(n) = st.rel.last() {
                let p = sys::open_parent(st.h.fd())
                    .map_err(|e| crate::error::map_os(e, wire, crate::error::OsCtx::Other))?;
                let check = sys::lstat_at(p.as_fd(), n)
                    .map_err(|e| crate::error::map_os(e, wire, crate::error::OsCtx::Other))?;
                if check.id != meta.id {
                    return Err(JailError::internal(
                        "path changed during the operation",
                        wire,
                    ));
                }
                parent = Some(Handle::Owned(p));
                name = Some(n.clone());
            }
        }
        let rel = if is_root { Vec::new() } else { st.rel };
        Ok(Resolved {
            parent,
            name,
            target: Target::Existing { meta, fd, open_err },
            is_root,
            rel,
            named_entry_is_link: named_link,
        })
    }

    /// J-WALK-3.
    fn virtual_mode<'a>(
        &'a self,
        st: State<'a>,
        first: OsString,
        first_origin: Origin,
        rest: VecDeque<(QComp, Origin)>,
        through_file: bool,
        wire: &str,
    ) -> Result<Resolved<'a>, JailError> {
        let Some(d) = st.d else {
            return Err(JailError::outside(wire));
        };
        let mut v = i64::try_from(d).unwrap_or(i64::MAX).saturating_add(1);
        let mut dotdot = false;
        let mut link_dir = first_origin == Origin::Link && !rest.is_empty();
        let mut suffix = vec![first];
        let n = rest.len();
        for (i, (c, origin)) in rest.into_iter().enumerate() {
            match c {
                QComp::Up => {
                    v -= 1;
                    dotdot = true;
                    if v < 0 {
                        return Err(JailError::outside(wire));
                    }
                }
                QComp::Name(name) => {
                    v += 1;
                    if origin == Origin::Link && i + 1 < n {
                        link_dir = true;
                    }
                    suffix.push(name);
                }
            }
        }
        let name = suffix.last().cloned();
        Ok(Resolved {
            parent: Some(st.h),
            name,
            target: Target::Missing {
                suffix,
                dotdot,
                through_file,
                link_dir,
            },
            is_root: false,
            rel: st.rel,
            named_entry_is_link: false,
        })
    }
}

fn to_queue(comps: &[Component<'_>], origin: Origin) -> VecDeque<(QComp, Origin)> {
    comps
        .iter()
        .map(|c| match c {
            Component::Name(n) => (QComp::Name(OsString::from(n)), origin),
            Component::ParentDir => (QComp::Up, origin),
        })
        .collect()
}

/// Looks `name` up in `dir` without following it and opens it as `want` asks.
/// Returns the metadata, a handle, and why the wanted open failed (if it did).
fn lookup(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    want: Want,
) -> Result<(Meta, Option<OwnedFd>, Option<Errno>), Errno> {
    #[cfg(target_os = "linux")]
    {
        if want != Want::Meta {
            match sys::open_nofollow(dir, name, want.flags()) {
                Ok(fd) => {
                    let meta = sys::fstat(&fd)?;
                    return Ok((meta, Some(fd), None));
                }
                Err(Errno::NOENT) => return Err(Errno::NOENT),
                Err(Errno::NAMETOOLONG) => return Err(Errno::NAMETOOLONG),
                Err(e) => {
                    let fd = sys::open_walk(dir, name)?;
                    let meta = sys::fstat(&fd)?;
                    return Ok((meta, Some(fd), Some(e)));
                }
            }
        }
        let fd = sys::open_walk(dir, name)?;
        let meta = sys::fstat(&fd)?;
        Ok((meta, Some(fd), None))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let meta = sys::lstat_at(dir, name)?;
        if meta.is_link() {
            return Ok((meta, None, None));
        }
        let flags = match want {
            Want::Meta if meta.is_dir() => Some(OFlags::RDONLY | OFlags::DIRECTORY),
            Want::Meta => None,
            w => Some(w.flags()),
        };
        let Some(flags) = flags else {
            return Ok((meta, None, None));
        };
        match sys::open_nofollow(dir, name, flags) {
            Ok(fd) => {
                let m2 = sys::fstat(&fd)?;
                if m2.id != meta.id {
                    return Err(Errno::AGAIN);
                }
                Ok((m2, Some(fd), None))
            }
            Err(e) => Ok((meta, None, Some(e))),
        }
    }
}

#[cfg(test)]
#[path = "walk_tests.rs"]
mod tests;
