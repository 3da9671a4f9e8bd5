//! Windows: the window list, fingerprints and focus on user32 directly.
//!
//! xcap lists a window only when `DwmGetWindowAttribute` gives its frame bounds; where DWM
//! does not answer (Wine, which the CI runs the Windows tests under) its list is empty.
//! This list applies the same filter (visible, has a class, not a title-less tool window,
//! not this process, not cloaked, not empty) but falls back to `GetWindowRect` for the
//! bounds. Focus is `SetForegroundWindow`, which xcap does not offer.

// user32, dwmapi and kernel32 calls (each block says why it is sound).
#![allow(unsafe_code)]

use std::ffi::c_void;

use windows_sys::Win32::Foundation::CloseHandle;
use windows_sys::Win32::Foundation::HWND;
use windows_sys::Win32::Foundation::LPARAM;
use windows_sys::Win32::Foundation::RECT;
use windows_sys::Win32::Graphics::Dwm::DWMWA_CLOAKED;
use windows_sys::Win32::Graphics::Dwm::DWMWA_EXTENDED_FRAME_BOUNDS;
use windows_sys::Win32::Graphics::Dwm::DwmGetWindowAttribute;
use windows_sys::Win32::System::Threading::GetCurrentProcessId;
use windows_sys::Win32::System::Threading::OpenProcess;
use windows_sys::Win32::System::Threading::PROCESS_NAME_WIN32;
use windows_sys::Win32::System::Threading::PROCESS_QUERY_LIMITED_INFORMATION;
use windows_sys::Win32::System::Threading::QueryFullProcessImageNameW;
use windows_sys::Win32::UI::WindowsAndMessaging as wm;

use crate::backend::Fingerprint;
use crate::backend::NativeApp;
use crate::backend::NativeWindow;
use crate::error::CuError;
use crate::error::CuResult;

fn hwnd(handle: u64) -> HWND {
    handle as usize as HWND
}

fn class_name(h: HWND) -> String {
    let mut buf = [0u16; 256];
    // SAFETY: `buf` is writable for its length, which is passed.
    let n = unsafe { wm::GetClassNameW(h, buf.as_mut_ptr(), buf.len() as i32) };
    String::from_utf16_lossy(&buf[..usize::try_from(n).unwrap_or(0)])
}

fn title(h: HWND) -> String {
    // SAFETY: plain query of another process's window (never this process's: see `list`,
    // GetWindowText would send it a message).
    let len = unsafe { wm::GetWindowTextLengthW(h) };
    let mut buf = vec![0u16; usize::try_from(len).unwrap_or(0) + 1];
    // SAFETY: `buf` is writable for its length, which is passed.
    let n = unsafe { wm::GetWindowTextW(h, buf.as_mut_ptr(), buf.len() as i32) };
    String::from_utf16_lossy(&buf[..usize::try_from(n).unwrap_or(0)])
}

fn pid(h: HWND) -> u32 {
    let mut pid = 0u32;
    // SAFETY: `pid` is a valid u32 for the call to fill.
    unsafe { wm::GetWindowThreadProcessId(h, &mut pid) };
    pid
}

/// The executable's full path (`QueryFullProcessImageNameW`), when the process can be
/// opened for a limited query (not for elevated or protected processes of others).
fn exe_path(pid: u32) -> Option<String> {
    // SAFETY: the handle is checked, used once and closed; `buf`/`len` describe a writable
    // buffer.
    unsafe {
        let p = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
        if p.is_null() {
            return None;
        }
        let mut buf = [0u16; 1024];
        let mut len = buf.len() as u32;
        let ok = QueryFullProcessImageNameW(p, PROCESS_NAME_WIN32, buf.as_mut_ptr(), &mut len);
        CloseHandle(p);
        if ok == 0 {
            return None;
        }
        Some(String::from_utf16_lossy(&buf[..len as usize]))
    }
}

/// The executable's file name without `.exe`, as the application name.
fn app_name(pid: u32) -> Option<String> {
    let path = exe_path(pid)?;
    let file = path.rsplit(['\\', '/']).next().unwrap_or(&path);
    let stem = file
        .strip_suffix(".exe")
        .or_else(|| file.strip_suffix(".EXE"))
        .unwrap_or(file);
    Some(stem.to_owned())
}

fn dwm<T: Default>(h: HWND, attribute: i32) -> Option<T> {
    let mut v = T::default();
    // SAFETY: `v` is writable for `size_of::<T>()` bytes, which is passed.
    let hr = unsafe {
        DwmGetWindowAttribute(
            h,
            attribute as u32,
            (&mut v as *mut T).cast::<c_void>(),
            std::mem::size_of::<T>() as u32,
        )
    };
    (hr >= 0).then_some(v)
}

/// `[x1, y1, x2, y2]`: DWM's frame bounds, else `GetWindowRect`.
fn bounds(h: HWND) -> Option<[i64; 4]> {
    let r = dwm::<RECT>(h, DWMWA_EXTENDED_FRAME_BOUNDS).or_else(|| {
        let mut r = RECT {
            left: 0,
            top: 0,
            right: 0,
            bottom: 0,
        };
        // SAFETY: `r` is a valid RECT for the call to fill.
        (unsafe { wm::GetWindowRect(h, &mut r) } != 0).then_some(r)
    })?;
    Some([r.left, r.top, r.right, r.bottom].map(i64::from))
}

unsafe extern "system" fn collect(h: HWND, state: LPARAM) -> windows_sys::core::BOOL {
    // SAFETY: `state` is the `&mut Vec<HWND>` that `list` passed to EnumWindows, alive and
    // not otherwise borrowed during the enumeration.
    let all = unsafe { &mut *(state as *mut Vec<HWND>) };
    all.push(h);
    1
}

fn describe(h: HWND, own: u32, foreground: HWND) -> Option<NativeWindow> {
    // SAFETY: plain queries of a window handle EnumWindows gave.
    if unsafe { wm::IsWindowVisible(h) } == 0 {
        return None;
    }
    describe_any(h, own, foreground)
}

/// [`describe`] without the visibility test (the background windows of APP_LIST).
fn describe_any(h: HWND, own: u32, foreground: HWND) -> Option<NativeWindow> {
    let class = class_name(h);
    if class.is_empty() || class == "Progman" || class == "Button" {
        return None;
    }
    let pid = pid(h);
    if pid == own || pid == 0 {
        return None;
    }
    let title = title(h);
    // SAFETY: as above.
    let ex = unsafe { wm::GetWindowLongPtrW(h, wm::GWL_EXSTYLE) } as u32;
    if ex & wm::WS_EX_TOOLWINDOW != 0 && title.is_empty() && class != "Shell_TrayWnd" {
        return None;
    }
    if dwm::<u32>(h, DWMWA_CLOAKED).is_some_and(|c| c != 0) {
        return None;
    }
    let b = bounds(h)?;
    if b[2] <= b[0] || b[3] <= b[1] {
        return None;
    }
    let app = app_name(pid);
    Some(NativeWindow {
        handle: h as usize as u64,
        fingerprint: Fingerprint {
            pid: i64::from(pid),
            class: app.clone(),
            created: None,
        },
        app_name: app,
        app_bundle_id: None,
        title: Some(title).filter(|t| !t.is_empty()),
        bounds: b,
        is_focused: h == foreground,
        // SAFETY: as above.
        is_minimized: unsafe { wm::IsIconic(h) } != 0,
        is_fullscreen: false,
        other_desktop: false,
    })
}

/// Every top-level window handle, front to back.
fn top_level() -> CuResult<Vec<HWND>> {
    let mut all: Vec<HWND> = Vec::new();
    // SAFETY: `collect` only pushes into `all`, which outlives the call.
    let ok = unsafe { wm::EnumWindows(Some(collect), &mut all as *mut Vec<HWND> as LPARAM) };
    if ok == 0 {
        return Err(CuError::internal(format!(
            "EnumWindows failed: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(all)
}

/// The top-level windows of other processes, front to back.
pub(crate) fn list() -> CuResult<Vec<NativeWindow>> {
    // SAFETY: no arguments.
    let (own, foreground) = unsafe { (GetCurrentProcessId(), wm::GetForegroundWindow()) };
    Ok(top_level()?
        .into_iter()
        .filter_map(|h| describe(h, own, foreground))
        .collect())
}

/// The processes owning top-level windows (4.6.1): visible ones only unless
/// `include_background`, which adds the windows that are hidden (tray and background
/// programs keep one). Each with its executable path, the windows counted, and whether it
/// owns the foreground window. The name is the executable's file name, else the first
/// window title.
pub(crate) fn apps(include_background: bool) -> CuResult<Vec<NativeApp>> {
    // SAFETY: no arguments.
    let (own, foreground) = unsafe { (GetCurrentProcessId(), wm::GetForegroundWindow()) };
    let mut by_pid: std::collections::BTreeMap<i64, NativeApp> = Default::default();
    for h in top_level()? {
        let w = if include_background {
            describe_any(h, own, foreground)
        } else {
            describe(h, own, foreground)
        };
        let Some(w) = w else { continue };
        let pid = w.fingerprint.pid;
        let e = by_pid.entry(pid).or_insert_with(|| NativeApp {
            pid,
            name: String::new(),
            bundle_id: None,
            executable_path: u32::try_from(pid).ok().and_then(exe_path),
            is_frontmost: false,
            window_count: 0,
        });
        if e.name.is_empty() {
            e.name = w.app_name.clone().or(w.title.clone()).unwrap_or_default();
        }
        e.window_count += 1;
        e.is_frontmost |= w.is_focused;
    }
    Ok(by_pid.into_values().collect())
}

/// Whether this process runs elevated (`TokenElevation`); `None` when the token cannot be
/// read. A process that is not elevated cannot drive elevated windows: UIPI drops its
/// input to them without an error.
pub(crate) fn elevated() -> Option<bool> {
    use windows_sys::Win32::Security::GetTokenInformation;
    use windows_sys::Win32::Security::TOKEN_ELEVATION;
    use windows_sys::Win32::Security::TOKEN_QUERY;
    use windows_sys::Win32::Security::TokenElevation;
    use windows_sys::Win32::System::Threading::GetCurrentProcess;
    use windows_sys::Win32::System::Threading::OpenProcessToken;
    let mut token = std::ptr::null_mut();
    // SAFETY: the pseudo-handle of this process; `token` is written on success only and
    // closed below.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
        return None;
    }
    let mut e = TOKEN_ELEVATION { TokenIsElevated: 0 };
    let mut len = 0u32;
    // SAFETY: `e` is writable for the size passed; `len` receives the size written.
    let ok = unsafe {
        GetTokenInformation(
            token,
            TokenElevation,
            (&mut e as *mut TOKEN_ELEVATION).cast::<c_void>(),
            std::mem::size_of::<TOKEN_ELEVATION>() as u32,
            &mut len,
        )
    };
    // SAFETY: the token handle opened above, closed once.
    unsafe { CloseHandle(token) };
    (ok != 0).then_some(e.TokenIsElevated != 0)
}

/// The window's owner and application, if it still exists.
pub(crate) fn fingerprint(handle: u64) -> Option<Fingerprint> {
    let h = hwnd(handle);
    // SAFETY: IsWindow accepts any value and says whether it names a window.
    if unsafe { wm::IsWindow(h) } == 0 {
        return None;
    }
    let pid = pid(h);
    Some(Fingerprint {
        pid: i64::from(pid),
        class: app_name(pid),
        created: None,
    })
}

/// Restores a minimised window, raises it if asked, and makes it the foreground window.
pub(crate) fn focus(handle: u64, raise: bool) -> CuResult<()> {
    let h = hwnd(handle);
    // SAFETY: user32 calls on a window handle (IsWindow checks it first); they only change
    // the window's state.
    unsafe {
        if wm::IsWindow(h) == 0 {
            return Err(CuError::unsupported("window.focus", "window gone"));
        }
        if wm::IsIconic(h) != 0 {
            wm::ShowWindow(h, wm::SW_RESTORE);
        }
        if raise {
            wm::BringWindowToTop(h);
        }
        if wm::SetForegroundWindow(h) == 0 {
            return Err(CuError::internal(
                "Windows refused to bring the window to the foreground",
            ));
        }
    }
    Ok(())
}

// ---- clipboard (COMPUTER_USE_HW.md 4.7.3-4.7.5) ----

/// The clipboard's change counter (`GetClipboardSequenceNumber`; no need to open it).
pub(crate) fn clipboard_sequence() -> u64 {
    // SAFETY: no arguments; returns a number.
    u64::from(unsafe { windows_sys::Win32::System::DataExchange::GetClipboardSequenceNumber() })
}

/// The clipboard, opened; closed on drop.
struct OpenedClipboard;

impl OpenedClipboard {
    /// Opens it for this thread, retrying briefly while another program holds it.
    fn open() -> Result<OpenedClipboard, CuError> {
        for _ in 0..20 {
            // SAFETY: a null owner window is allowed; the clipboard is closed on drop.
            if unsafe {
                windows_sys::Win32::System::DataExchange::OpenClipboard(std::ptr::null_mut())
            } != 0
            {
                return Ok(OpenedClipboard);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Err(CuError::internal(format!(
            "the clipboard cannot be opened: {}",
            std::io::Error::last_os_error()
        )))
    }
}

impl Drop for OpenedClipboard {
    fn drop(&mut self) {
        // SAFETY: this thread opened the clipboard (OpenedClipboard::open).
        unsafe { windows_sys::Win32::System::DataExchange::CloseClipboard() };
    }
}

/// The registered name of format `id`, if it has one.
fn format_name(id: u32) -> Option<String> {
    let mut buf = [0u16; 256];
    // SAFETY: `buf` is writable for its full length, which is passed.
    let n = unsafe {
        windows_sys::Win32::System::DataExchange::GetClipboardFormatNameW(id, buf.as_mut_ptr(), 256)
    };
    let n = usize::try_from(n).ok().filter(|n| *n > 0)?;
    Some(String::from_utf16_lossy(&buf[..n.min(buf.len())]))
}

/// The first four bytes of format `id`'s data as a little-endian DWORD (the clipboard is
/// open).
fn format_dword(_open: &OpenedClipboard, id: u32) -> Option<u32> {
    use windows_sys::Win32::System::Memory::GlobalLock;
    use windows_sys::Win32::System::Memory::GlobalSize;
    use windows_sys::Win32::System::Memory::GlobalUnlock;
    // SAFETY: the clipboard is open (`_open`); the handle belongs to the clipboard.
    let h = unsafe { windows_sys::Win32::System::DataExchange::GetClipboardData(id) };
    if h.is_null() {
        return None;
    }
    // SAFETY: `h` is a global memory handle of the open clipboard.
    if unsafe { GlobalSize(h) } < 4 {
        return None;
    }
    // SAFETY: as above; locked and unlocked around the read of 4 bytes, which the size
    // check above guarantees are there.
    unsafe {
        let p = GlobalLock(h).cast::<u8>();
        if p.is_null() {
            return None;
        }
        let mut b = [0u8; 4];
        std::ptr::copy_nonoverlapping(p, b.as_mut_ptr(), 4);
        GlobalUnlock(h);
        Some(u32::from_le_bytes(b))
    }
}

/// The concealment marker of the clipboard's current content (4.7.3), or `None`.
pub(crate) fn clipboard_marker() -> Result<Option<String>, CuError> {
    let open = OpenedClipboard::open()?;
    let mut formats = Vec::new();
    let mut id = 0;
    loop {
        // SAFETY: the clipboard is open; 0 starts the enumeration.
        id = unsafe { windows_sys::Win32::System::DataExchange::EnumClipboardFormats(id) };
        if id == 0 {
            break;
        }
        let name = format_name(id);
        let dword = match name.as_deref() {
            Some(n)
                if n.eq_ignore_ascii_case("CanIncludeInClipboardHistory")
                    || n.eq_ignore_ascii_case("CanUploadToCloudClipboard") =>
            {
                format_dword(&open, id)
            }
            _ => None,
        };
        formats.push(crate::policy::WinClipFormat { id, name, dword });
    }
    Ok(crate::policy::windows_clipboard_marker(&formats))
}

/// The virtual screen as `GetSystemMetrics` reports it now (it changes with the monitors).
fn virtual_screen() -> crate::vdesk::VirtualScreen {
    let m = |i| {
        // SAFETY: GetSystemMetrics only reads a system value.
        i64::from(unsafe { wm::GetSystemMetrics(i) })
    };
    crate::vdesk::VirtualScreen {
        origin: [m(wm::SM_XVIRTUALSCREEN), m(wm::SM_YVIRTUALSCREEN)],
        size: [m(wm::SM_CXVIRTUALSCREEN), m(wm::SM_CYVIRTUALSCREEN)],
    }
}

/// Moves the pointer to `p` (virtual-screen pixels) with one absolute `SendInput`
/// normalised to the virtual desktop, its origin included (see [`crate::vdesk`]).
pub(crate) fn move_pointer(p: [i64; 2]) -> CuResult<()> {
    use windows_sys::Win32::UI::Input::KeyboardAndMouse as kbd;
    let screen = virtual_screen();
    let [dx, dy] = crate::vdesk::normalise(p, screen).ok_or_else(|| {
        CuError::internal(format!(
            "({}, {}) lies outside the virtual screen {screen:?}",
            p[0], p[1]
        ))
    })?;
    let input = kbd::INPUT {
        r#type: kbd::INPUT_MOUSE,
        Anonymous: kbd::INPUT_0 {
            mi: kbd::MOUSEINPUT {
                dx,
                dy,
                mouseData: 0,
                dwFlags: kbd::MOUSEEVENTF_MOVE
                    | kbd::MOUSEEVENTF_ABSOLUTE
                    | kbd::MOUSEEVENTF_VIRTUALDESK,
                time: 0,
                dwExtraInfo: 0,
            },
        },
    };
    let size = i32::try_from(std::mem::size_of::<kbd::INPUT>())
        .map_err(|_| CuError::internal("INPUT size"))?;
    // SAFETY: one initialised mouse INPUT and its size; SendInput only reads it.
    let sent = unsafe { kbd::SendInput(1, &input, size) };
    if sent != 1 {
        return Err(CuError::internal("the OS refused the input event"));
    }
    Ok(())
}

/// Makes this process per-monitor DPI aware (v2), so capture pixels and input coordinates
/// are the same physical pixels on every monitor whatever its scale. Falls back to
/// system-wide awareness where v2 is refused (older Windows, or awareness already set by a
/// manifest, which then stands); returns which one holds.
pub(crate) fn dpi_aware() -> &'static str {
    use windows_sys::Win32::UI::HiDpi;
    // SAFETY: sets a process-wide flag; the argument is one of the documented constants.
    if unsafe {
        HiDpi::SetProcessDpiAwarenessContext(HiDpi::DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2)
    } != 0
    {
        return "per-monitor v2";
    }
    // SAFETY: as above, the Vista-era system-wide form.
    if unsafe { wm::SetProcessDPIAware() } != 0 {
        return "system";
    }
    "unchanged"
}

#[cfg(test)]
#[path = "win32_tests.rs"]
mod tests;
