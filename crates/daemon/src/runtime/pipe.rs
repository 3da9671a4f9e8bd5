//! The Windows named pipe of the local control socket: only this user may open it, and only
//! one daemon may own its name.
//!
//! Every instance is created with a security descriptor whose protected DACL has a single
//! entry, GENERIC_ALL for the user the daemon runs as (its SID from the process token), so
//! other users, and services running as other accounts, cannot connect; remote clients are
//! refused (`PIPE_REJECT_REMOTE_CLIENTS`). Before the first instance is created the daemon
//! tries the name as a client: a daemon that answers (or is busy) holds it, and this one
//! does not start. The first instance is then created with `FILE_FLAG_FIRST_PIPE_INSTANCE`,
//! so that a name someone else created in between is refused too (Wine does not enforce
//! that flag; the client probe covers it there).
// Win32 security calls (process token, SID string, SDDL) std does not wrap; each block says
// why it is sound.
#![allow(unsafe_code)]

use std::ffi::OsStr;
use std::ffi::OsString;
use std::os::windows::ffi::OsStrExt;

use tokio::net::windows::named_pipe::NamedPipeServer;
use tokio::net::windows::named_pipe::ServerOptions;
use windows_sys::Win32::Foundation::CloseHandle;
use windows_sys::Win32::Foundation::ERROR_ACCESS_DENIED;
use windows_sys::Win32::Foundation::ERROR_PIPE_BUSY;
use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::Foundation::LocalFree;
use windows_sys::Win32::Security::Authorization::ConvertSidToStringSidW;
use windows_sys::Win32::Security::Authorization::ConvertStringSecurityDescriptorToSecurityDescriptorW;
use windows_sys::Win32::Security::Authorization::SDDL_REVISION_1;
use windows_sys::Win32::Security::GetTokenInformation;
use windows_sys::Win32::Security::PSECURITY_DESCRIPTOR;
use windows_sys::Win32::Security::SECURITY_ATTRIBUTES;
use windows_sys::Win32::Security::TOKEN_QUERY;
use windows_sys::Win32::Security::TOKEN_USER;
use windows_sys::Win32::Security::TokenUser;
use windows_sys::Win32::System::Threading::GetCurrentProcess;
use windows_sys::Win32::System::Threading::OpenProcessToken;

/// A security descriptor admitting only the current user (allocated by Windows, freed on
/// drop).
struct UserOnly(PSECURITY_DESCRIPTOR);

// SAFETY: the descriptor is written once, by ConvertStringSecurityDescriptorToSecurityDescriptorW,
// and only read afterwards (by CreateNamedPipeW); nothing aliases it mutably.
unsafe impl Send for UserOnly {}
// SAFETY: as above: shared reads of immutable memory.
unsafe impl Sync for UserOnly {}

impl Drop for UserOnly {
    fn drop(&mut self) {
        // SAFETY: the pointer came from ConvertStringSecurityDescriptorToSecurityDescriptorW,
        // which documents LocalFree as its deallocator; it is freed once, here.
        unsafe {
            LocalFree(self.0);
        }
    }
}

/// The current user's SID as a string (`S-1-5-21-…`).
fn user_sid() -> std::io::Result<String> {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: GetCurrentProcess returns a pseudo-handle that needs no closing; `token` is a
    // valid out pointer.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    let result = (|| {
        let mut len = 0u32;
        // SAFETY: a size query: null buffer of length 0, `len` is a valid out pointer.
        unsafe { GetTokenInformation(token, TokenUser, std::ptr::null_mut(), 0, &mut len) };
        if len == 0 {
            return Err(std::io::Error::last_os_error());
        }
        // u64 elements keep the buffer aligned for TOKEN_USER.
        let mut buf = vec![0u64; (len as usize).div_ceil(8)];
        // SAFETY: `buf` has at least `len` writable bytes; `len` is a valid out pointer.
        if unsafe { GetTokenInformation(token, TokenUser, buf.as_mut_ptr().cast(), len, &mut len) }
            == 0
        {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: GetTokenInformation(TokenUser) filled `buf` with a TOKEN_USER (aligned: u64
        // storage), whose SID points into the same buffer, alive until the end of this scope.
        let sid = unsafe { (*buf.as_ptr().cast::<TOKEN_USER>()).User.Sid };
        let mut text: *mut u16 = std::ptr::null_mut();
        // SAFETY: `sid` is valid (above); `text` is a valid out pointer.
        if unsafe { ConvertSidToStringSidW(sid, &mut text) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: ConvertSidToStringSidW returned a NUL-terminated UTF-16 string that we own.
        let s = unsafe {
            let mut n = 0;
            while *text.add(n) != 0 {
                n += 1;
            }
            let s = String::from_utf16_lossy(std::slice::from_raw_parts(text, n));
            LocalFree(text.cast());
            s
        };
        Ok(s)
    })();
    // SAFETY: `token` was opened above and is closed once.
    unsafe { CloseHandle(token) };
    result
}

impl UserOnly {
    fn new() -> std::io::Result<UserOnly> {
        let sddl: Vec<u16> = OsStr::new(&format!("D:P(A;;GA;;;{})", user_sid()?))
            .encode_wide()
            .chain(Some(0))
            .collect();
        let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
        // SAFETY: `sddl` is NUL-terminated UTF-16; `sd` is a valid out pointer; the size
        // out pointer may be null.
        let ok = unsafe {
            ConvertStringSecurityDescriptorToSecurityDescriptorW(
                sddl.as_ptr(),
                SDDL_REVISION_1,
                &mut sd,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(UserOnly(sd))
    }
}

/// The pipe's name and the next instance waiting for a client.
pub(crate) struct Pipe {
    name: OsString,
    descriptor: UserOnly,
    next: NamedPipeServer,
}

impl Pipe {
    fn create(
        name: &OsStr,
        descriptor: &UserOnly,
        first: bool,
    ) -> std::io::Result<NamedPipeServer> {
        let mut attrs = SECURITY_ATTRIBUTES {
            nLength: u32::try_from(std::mem::size_of::<SECURITY_ATTRIBUTES>()).unwrap_or(0),
            lpSecurityDescriptor: descriptor.0,
            bInheritHandle: 0,
        };
        let mut o = ServerOptions::new();
        o.first_pipe_instance(first).reject_remote_clients(true);
        // SAFETY: `attrs` is a valid SECURITY_ATTRIBUTES whose descriptor lives in
        // `descriptor`, borrowed for this call; CreateNamedPipeW only reads them.
        unsafe { o.create_with_security_attributes_raw(name, (&raw mut attrs).cast()) }
    }

    /// Creates the pipe's first instance; an error names the reason (another daemon).
    pub(crate) fn bind(name: &OsStr) -> Result<Pipe, String> {
        let taken = || {
            format!(
                "another autogpt-shim daemon is running (it holds {})\nhint: stop it first; run one daemon per machine",
                name.to_string_lossy()
            )
        };
        // A daemon that answers (or whose every instance is busy) holds the name. Checked
        // first as a client, like the Unix socket, because FILE_FLAG_FIRST_PIPE_INSTANCE
        // alone is not enforced everywhere (Wine ignores it).
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name)
        {
            Ok(_) => return Err(taken()),
            Err(e) if e.raw_os_error() == Some(ERROR_PIPE_BUSY as i32) => return Err(taken()),
            Err(e) if e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32) => {
                return Err(format!(
                    "{} is held by another user\nhint: find and stop the program that holds it",
                    name.to_string_lossy()
                ));
            }
            Err(_) => {}
        }
        let descriptor = UserOnly::new()
            .map_err(|e| format!("cannot build the pipe's security descriptor: {e}"))?;
        let next = match Pipe::create(name, &descriptor, true) {
            Ok(p) => p,
            Err(e) if e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32) => {
                return Err(taken());
            }
            Err(e) => return Err(format!("cannot create {}: {e}", name.to_string_lossy())),
        };
        Ok(Pipe {
            name: name.to_owned(),
            descriptor,
            next,
        })
    }

    /// Waits for the next client; a new instance then waits for the one after. An error
    /// means no new instance can be created.
    pub(crate) async fn accept(&mut self) -> std::io::Result<NamedPipeServer> {
        loop {
            let connected = self.next.connect().await;
            let fresh = Pipe::create(&self.name, &self.descriptor, false)?;
            let served = std::mem::replace(&mut self.next, fresh);
            match connected {
                Ok(()) => return Ok(served),
                Err(e) => {
                    tracing::debug!(error = %e, "a control pipe client left before it was served");
                }
            }
        }
    }
}
