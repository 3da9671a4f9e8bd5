//! The few Win32 calls std does not wrap: the final path of a handle, its file identity,
//! and a rename that can refuse to replace. Wide-character (UTF-16) APIs only (4.10).

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::AsRawHandle;
use std::path::Path;

use windows_sys::Win32::Storage::FileSystem::BY_HANDLE_FILE_INFORMATION;
use windows_sys::Win32::Storage::FileSystem::FILE_NAME_NORMALIZED;
use windows_sys::Win32::Storage::FileSystem::GetFileInformationByHandle;
use windows_sys::Win32::Storage::FileSystem::GetFinalPathNameByHandleW;
use windows_sys::Win32::Storage::FileSystem::MOVEFILE_REPLACE_EXISTING;
use windows_sys::Win32::Storage::FileSystem::MoveFileExW;
use windows_sys::Win32::Storage::FileSystem::VOLUME_NAME_DOS;

/// File identity: volume serial number and 64-bit file index (J-ROOT-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Id {
    pub(crate) volume: u32,
    pub(crate) index: u64,
}

/// The normalised final path of an open handle, with the `\\?\` (or `\\?\UNC\`) prefix
/// removed (J-ROOT-1, 4.8).
pub(crate) fn final_path(f: &File) -> io::Result<String> {
    let mut buf = vec![0u16; 512];
    loop {
        let cap = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        // SAFETY: the handle is open for the lifetime of `f`; `buf` is a writable buffer
        // of `cap` UTF-16 units, and the call writes at most `cap` units into it.
        let n = unsafe {
            GetFinalPathNameByHandleW(
                f.as_raw_handle(),
                buf.as_mut_ptr(),
                cap,
                FILE_NAME_NORMALIZED | VOLUME_NAME_DOS,
            )
        } as usize;
        if n == 0 {
            return Err(io::Error::last_os_error());
        }
        if n < buf.len() {
            buf.truncate(n);
            break;
        }
        // Too small: `n` is the size needed, including the terminating NUL.
        buf.resize(n + 1, 0);
    }
    let s =
        String::from_utf16(&buf).map_err(|_| io::Error::other("final path is not valid UTF-16"))?;
    Ok(strip_verbatim(&s))
}

/// `\\?\C:\x` → `C:\x`, `\\?\UNC\srv\share\x` → `\\srv\share\x` (J-ROOT-1).
pub(crate) fn strip_verbatim(s: &str) -> String {
    if let Some(rest) = s.strip_prefix(r"\\?\UNC\") {
        format!(r"\\{rest}")
    } else if let Some(rest) = s.strip_prefix(r"\\?\") {
        rest.to_owned()
    } else {
        s.to_owned()
    }
}

/// Identity and link count of an open handle.
pub(crate) fn identity(f: &File) -> io::Result<(Id, u32)> {
    let mut info = BY_HANDLE_FILE_INFORMATION::default();
    // SAFETY: the handle is open for the lifetime of `f`; `info` is a valid, writable
    // BY_HANDLE_FILE_INFORMATION.
    let ok = unsafe { GetFileInformationByHandle(f.as_raw_handle(), &mut info) };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((
        Id {
            volume: info.dwVolumeSerialNumber,
            index: (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
        },
        info.nNumberOfLinks,
    ))
}

fn wide(p: &Path) -> Vec<u16> {
    p.as_os_str().encode_wide().chain(Some(0)).collect()
}

/// `MoveFileExW`: renames `src` to `dst`, replacing an existing `dst` only if `replace`
/// (never following a link at `dst`: a link there is replaced as an entry).
pub(crate) fn move_file(src: &Path, dst: &Path, replace: bool) -> io::Result<()> {
    let (s, d) = (wide(src), wide(dst));
    let flags = if replace {
        MOVEFILE_REPLACE_EXISTING
    } else {
        0
    };
    // SAFETY: `s` and `d` are NUL-terminated UTF-16 strings that outlive the call.
    let ok = unsafe { MoveFileExW(s.as_ptr(), d.as_ptr(), flags) };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
