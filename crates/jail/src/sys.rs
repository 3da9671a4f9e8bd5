//! Thin, safe wrappers over the `*at` system calls the walk and the operations use
//! (rustix; no `unsafe`). Everything here acts relative to a directory handle.

// `Stat` field widths differ between architectures; `From` keeps the code portable and
// is an identity conversion on some of them.
#![allow(clippy::useless_conversion)]

use std::ffi::OsStr;
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::fd::BorrowedFd;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::ffi::OsStringExt;

use rustix::fs::AtFlags;
use rustix::fs::FileType;
use rustix::fs::Mode;
use rustix::fs::OFlags;
use rustix::fs::Stat;
use rustix::io::Errno;

/// File identity: `(st_dev, st_ino)` (J-ROOT-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Id {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
}

/// The parts of `stat` the jail uses, in fixed widths.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    pub(crate) id: Id,
    pub(crate) kind: FileType,
    pub(crate) mode: u32,
    pub(crate) nlink: u64,
    pub(crate) size: u64,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) mtime: f64,
    pub(crate) mtime_parts: (i64, u32),
    pub(crate) ctime: f64,
}

/// `v` as u64 (`st_dev` is u64 on Linux, i32 on macOS); 0 if it does not fit.
fn widen<T: TryInto<u64>>(v: T) -> u64 {
    v.try_into().unwrap_or(0)
}

/// Permission bits as rustix's `Mode`, whose raw type is u32 on Linux and u16 on macOS
/// (the bits, at most 0o7777, fit either).
fn mode_of(mode: u32) -> Mode {
    fn narrow<T: TryFrom<u32> + Default>(v: u32) -> T {
        T::try_from(v & 0o7777).unwrap_or_default()
    }
    Mode::from_raw_mode(narrow(mode))
}

impl Meta {
    pub(crate) fn from_stat(st: &Stat) -> Meta {
        let mtime_s = i64::from(st.st_mtime);
        let mtime_ns = u32::try_from(st.st_mtime_nsec).unwrap_or(0);
        let ctime_s = i64::from(st.st_ctime);
        let ctime_ns = u32::try_from(st.st_ctime_nsec).unwrap_or(0);
        Meta {
            id: Id {
                dev: widen(st.st_dev),
                ino: u64::from(st.st_ino),
            },
            kind: FileType::from_raw_mode(st.st_mode),
            mode: u32::from(st.st_mode) & 0o7777,
            nlink: u64::from(st.st_nlink),
            size: u64::try_from(st.st_size).unwrap_or(0),
            uid: st.st_uid,
            gid: st.st_gid,
            mtime: secs(mtime_s, mtime_ns),
            mtime_parts: (mtime_s, mtime_ns),
            ctime: secs(ctime_s, ctime_ns),
        }
    }

    pub(crate) fn is_dir(&self) -> bool {
        self.kind == FileType::Directory
    }

    pub(crate) fn is_file(&self) -> bool {
        self.kind == FileType::RegularFile
    }

    pub(crate) fn is_link(&self) -> bool {
        self.kind == FileType::Symlink
    }
}

#[allow(clippy::cast_precision_loss)]
fn secs(s: i64, ns: u32) -> f64 {
    s as f64 + f64::from(ns) / 1e9
}

/// Flags for a handle used only to walk and to look at metadata.
#[cfg(target_os = "linux")]
pub(crate) const WALK: OFlags = OFlags::PATH;
#[cfg(not(target_os = "linux"))]
pub(crate) const WALK: OFlags = OFlags::RDONLY;

pub(crate) fn fstat(fd: impl AsFd) -> Result<Meta, Errno> {
    rustix::fs::fstat(fd).map(|s| Meta::from_stat(&s))
}

pub(crate) fn lstat_at(dir: BorrowedFd<'_>, name: &OsStr) -> Result<Meta, Errno> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map(|s| Meta::from_stat(&s))
}

/// Opens a directory entry as a walk handle without following it (Linux: `O_PATH`).
#[cfg(target_os = "linux")]
pub(crate) fn open_walk(dir: BorrowedFd<'_>, name: &OsStr) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        dir,
        name,
        WALK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Opens a directory entry with `flags`, never following a final symlink.
pub(crate) fn open_nofollow(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    flags: OFlags,
) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        dir,
        name,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
}

/// Opens an existing directory entry as a readable directory (for listing, removal).
pub(crate) fn open_dir_nofollow(dir: BorrowedFd<'_>, name: &OsStr) -> Result<OwnedFd, Errno> {
    open_nofollow(dir, name, OFlags::RDONLY | OFlags::DIRECTORY)
}

/// Re-opens a directory handle (possibly `O_PATH`) as a readable directory.
pub(crate) fn reopen_dir(dir: BorrowedFd<'_>) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// The physical parent of a directory handle.
pub(crate) fn open_parent(dir: BorrowedFd<'_>) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        dir,
        "..",
        WALK | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Reads a symlink's text. On Linux through the `O_PATH` handle of the link itself
/// (race-free); elsewhere by name in its directory.
pub(crate) fn read_link(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    link_fd: Option<BorrowedFd<'_>>,
) -> Result<OsString, Errno> {
    let bytes = match link_fd {
        #[cfg(target_os = "linux")]
        Some(fd) => rustix::fs::readlinkat(fd, "", Vec::new())?,
        _ => rustix::fs::readlinkat(dir, name, Vec::new())?,
    };
    Ok(OsString::from_vec(bytes.into_bytes()))
}

/// Lists the names in a readable directory handle (without `.` and `..`).
pub(crate) fn read_names(dir: BorrowedFd<'_>) -> Result<Vec<OsString>, Errno> {
    let fd = reopen_dir(dir)?;
    let mut d = rustix::fs::Dir::new(fd)?;
    let mut out = Vec::new();
    while let Some(ent) = d.read() {
        let ent = ent?;
        let name = ent.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        out.push(OsStr::from_bytes(name).to_owned());
    }
    Ok(out)
}

pub(crate) fn unlink(dir: BorrowedFd<'_>, name: &OsStr) -> Result<(), Errno> {
    rustix::fs::unlinkat(dir, name, AtFlags::empty())
}

pub(crate) fn rmdir(dir: BorrowedFd<'_>, name: &OsStr) -> Result<(), Errno> {
    rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)
}

pub(crate) fn mkdir(dir: BorrowedFd<'_>, name: &OsStr, mode: u32) -> Result<(), Errno> {
    rustix::fs::mkdirat(dir, name, mode_of(mode))
}

/// `renameat`; with `noreplace` an existing destination fails with `EEXIST` (Linux
/// `RENAME_NOREPLACE`; elsewhere a check-then-rename, acceptable for a rename inside the
/// root since both ends are handles).
pub(crate) fn rename(
    from_dir: BorrowedFd<'_>,
    from: &OsStr,
    to_dir: BorrowedFd<'_>,
    to: &OsStr,
    noreplace: bool,
) -> Result<(), Errno> {
    if noreplace {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            return rustix::fs::renameat_with(
                from_dir,
                from,
                to_dir,
                to,
                rustix::fs::RenameFlags::NOREPLACE,
            );
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            match lstat_at(to_dir, to) {
                Ok(_) => return Err(Errno::EXIST),
                Err(Errno::NOENT) => {}
                Err(e) => return Err(e),
            }
        }
    }
    rustix::fs::renameat(from_dir, from, to_dir, to)
}

/// Creates a new regular file exclusively, without following links.
pub(crate) fn create_excl(dir: BorrowedFd<'_>, name: &OsStr, mode: u32) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode_of(mode),
    )
}

/// Whether the effective user may write the entry (a permission pre-check, 7.4).
pub(crate) fn writable(dir: BorrowedFd<'_>, name: &OsStr) -> bool {
    rustix::fs::accessat(dir, name, rustix::fs::Access::WRITE_OK, AtFlags::EACCESS).is_ok()
}

pub(crate) fn write_all(fd: BorrowedFd<'_>, mut data: &[u8]) -> Result<(), Errno> {
    while !data.is_empty() {
        match rustix::io::write(fd, data) {
            Ok(0) => return Err(Errno::IO),
            Ok(n) => data = data.get(n..).unwrap_or_default(),
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Positional read of up to `len` bytes at `offset`.
pub(crate) fn pread_exact(fd: BorrowedFd<'_>, offset: u64, len: usize) -> Result<Vec<u8>, Errno> {
    let mut buf = vec![0u8; len];
    let mut got = 0usize;
    while got < len {
        let Some(slot) = buf.get_mut(got..) else {
            break;
        };
        match rustix::io::pread(fd, slot, offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

pub(crate) fn fchmod(fd: BorrowedFd<'_>, mode: u32) -> Result<(), Errno> {
    rustix::fs::fchmod(fd, mode_of(mode))
}

pub(crate) fn fsync(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    rustix::fs::fsync(fd)
}

/// Sets the modification (and access) time of an open file.
pub(crate) fn set_mtime(fd: BorrowedFd<'_>, (s, ns): (i64, u32)) -> Result<(), Errno> {
    let t = rustix::fs::Timespec {
        tv_sec: s,
        tv_nsec: ns.into(),
    };
    rustix::fs::futimens(
        fd,
        &rustix::fs::Timestamps {
            last_access: t,
            last_modification: t,
        },
    )
}

pub(crate) fn symlink(target: &OsStr, dir: BorrowedFd<'_>, name: &OsStr) -> Result<(), Errno> {
    rustix::fs::symlinkat(target, dir, name)
}

/// J-CASE-1 on Linux: `FS_CASEFOLD_FL` or a known case-insensitive filesystem type. No
/// files are created.
pub(crate) fn dir_is_case_insensitive(dir: BorrowedFd<'_>) -> bool {
    #[cfg(target_os = "linux")]
    {
        const FS_CASEFOLD_FL: u32 = 0x4000_0000;
        if let Ok(fd) = reopen_dir(dir)
            && let Ok(flags) = rustix::fs::ioctl_getflags(&fd)
            && flags.bits() & FS_CASEFOLD_FL != 0
        {
            return true;
        }
        match rustix::fs::fstatfs(dir) {
            Ok(sfs) => {
                #[allow(clippy::unnecessary_cast)]
                let t = sfs.f_type as i64 as u32;
                matches!(
                    t,
                    0x4d44 | 0x2011_BAB0 | 0x7366_746e | 0xFF53_4D42 | 0xFE53_4D42
                )
            }
            Err(_) => false,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        true
    }
}

/// The process umask, read without changing it (Linux `/proc/self/status`); 0o022 when
/// unknown.
pub(crate) fn current_umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}
