//! Windows file identity for the root fingerprint (PROTOCOL.md 9.4): the volume serial
//! number and the 64-bit file index of a directory, read through a handle (std keeps them
//! behind an unstable API), and the local drive roots the folder browser offers.
#![allow(unsafe_code)]

use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::AsRawHandle;
use std::path::Path;

use windows_sys::Win32::Storage::FileSystem::BY_HANDLE_FILE_INFORMATION;
use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_BACKUP_SEMANTICS;
use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT;
use windows_sys::Win32::Storage::FileSystem::FILE_READ_ATTRIBUTES;
use windows_sys::Win32::Storage::FileSystem::GetFileInformationByHandle;

/// `(volume serial, file index)` of `p` itself (a final link is not followed).
pub(crate) fn identity(p: &Path) -> std::io::Result<(u64, u64)> {
    let f = std::fs::OpenOptions::new()
        .access_mode(FILE_READ_ATTRIBUTES)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
        .open(p)?;
    let mut info = BY_HANDLE_FILE_INFORMATION::default();
    // SAFETY: the handle is open for the lifetime of `f`; `info` is a valid, writable
    // BY_HANDLE_FILE_INFORMATION.
    if unsafe { GetFileInformationByHandle(f.as_raw_handle(), &mut info) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((
        u64::from(info.dwVolumeSerialNumber),
        (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
    ))
}

/// `GetDriveTypeW` results (WinBase.h) of the drives the folder browser offers.
const DRIVE_REMOVABLE: u32 = 2;
const DRIVE_FIXED: u32 = 3;

/// The roots `A:\` to `Z:\` of the drives whose type is removable or fixed (PROTOCOL.md
/// 9.2 step 4), in letter order.
pub(crate) fn local_drive_roots() -> Vec<std::path::PathBuf> {
    // SAFETY: no arguments; returns a bit mask of the present drives.
    let mask = unsafe { windows_sys::Win32::Storage::FileSystem::GetLogicalDrives() };
    (0u8..26)
        .filter(|i| mask & (1 << i) != 0)
        .filter_map(|i| {
            let root = format!("{}:\\", char::from(b'A' + i));
            let wide: Vec<u16> = root.encode_utf16().chain(std::iter::once(0)).collect();
            // SAFETY: `wide` is a NUL-terminated UTF-16 string that outlives the call.
            let kind =
                unsafe { windows_sys::Win32::Storage::FileSystem::GetDriveTypeW(wide.as_ptr()) };
            matches!(kind, DRIVE_REMOVABLE | DRIVE_FIXED).then(|| root.into())
        })
        .collect()
}
