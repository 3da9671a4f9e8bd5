//! The Windows backend built on portable crates: xcap (displays, capture, windows), rdev
//! (input), copypasta (clipboard), with user32 where they fall short (the pointer
//! position, Unicode typing, focus, the window list, concealment formats; `src/win32.rs`).
//! macOS compiles only what does not need rdev or copypasta and uses its displays and
//! capture (xcap); everything else there is `src/mac.rs` over `src/macos.rs`.

#[cfg(target_os = "windows")]
use std::sync::Arc;

use shim_protocol::messages::cu::PermissionState;

use crate::backend::Apps;
#[cfg(target_os = "windows")]
use crate::backend::Button;
use crate::backend::Capture;
#[cfg(target_os = "windows")]
use crate::backend::Clipboard;
#[cfg(target_os = "windows")]
use crate::backend::ClipboardState;
#[cfg(target_os = "windows")]
use crate::backend::Desktop;
use crate::backend::Displays;
use crate::backend::Fingerprint;
use crate::backend::HostKind;
use crate::backend::Image;
#[cfg(target_os = "windows")]
use crate::backend::Input;
use crate::backend::Monitor;
use crate::backend::NativeApp;
use crate::backend::NativeWindow;
use crate::backend::Permissions;
#[cfg(target_os = "windows")]
use crate::backend::Wheel;
use crate::backend::Windows;
use crate::error::CuError;
use crate::error::CuResult;
#[cfg(target_os = "windows")]
use crate::keys::Key;
#[cfg(target_os = "windows")]
use crate::keys::Modifier;
#[cfg(target_os = "windows")]
use crate::keys::Named;

/// The portable backend.
#[derive(Debug)]
pub(crate) struct Portable {
    kind: HostKind,
}

fn platform(kind: HostKind) -> &'static str {
    match kind {
        HostKind::MacOs => "darwin",
        HostKind::Windows => "win32",
        HostKind::X11 => "linux",
    }
}

fn cap_err(kind: HostKind, e: impl std::fmt::Display) -> CuError {
    if kind == HostKind::MacOs {
        // On macOS a failed capture is almost always Screen Recording denial.
        CuError::permission(
            "screen_recording",
            "darwin",
            Some(
                "grant Screen Recording to autogpt-shim in System Settings, then run autogpt-shim doctor",
            ),
        )
    } else {
        CuError::internal(format!("capture failed: {e}"))
    }
}

fn rgba_to_image(w: u32, h: u32, rgba: &[u8]) -> Image {
    let mut rgb = Vec::with_capacity(rgba.len() / 4 * 3);
    for px in rgba.chunks_exact(4) {
        rgb.extend_from_slice(&px[..3]);
    }
    Image {
        width: w,
        height: h,
        rgb,
    }
}

impl Portable {
    /// The portable parts of `kind` (macOS uses its displays and capture).
    pub(crate) fn new(kind: HostKind) -> Portable {
        Portable { kind }
    }
}

/// Builds a desktop of `kind` on the portable crates.
#[cfg(target_os = "windows")]
pub(crate) fn desktop(kind: HostKind) -> Desktop {
    let p = Arc::new(Portable::new(kind));
    Desktop {
        kind,
        displays: p.clone(),
        capture: p.clone(),
        input: p.clone(),
        windows: p.clone(),
        apps: p.clone(),
        clipboard: p.clone(),
        permissions: p,
        alive: Arc::new(|| xcap::Monitor::all().is_ok_and(|m| !m.is_empty())),
    }
}

impl Displays for Portable {
    fn monitors(&self) -> CuResult<Vec<Monitor>> {
        let all = xcap::Monitor::all()
            .map_err(|e| CuError::unsupported("display.info", e.to_string()))?;
        let mut out = Vec::new();
        for m in all {
            let g = |r: Result<u32, xcap::XCapError>| {
                r.map(i64::from)
                    .map_err(|e| CuError::internal(e.to_string()))
            };
            let (w, h) = (g(m.width())?, g(m.height())?);
            let scale = f64::from(m.scale_factor().unwrap_or(1.0));
            let origin = [
                i64::from(m.x().map_err(|e| CuError::internal(e.to_string()))?),
                i64::from(m.y().map_err(|e| CuError::internal(e.to_string()))?),
            ];
            // xcap reports macOS sizes in points and Windows sizes in pixels.
            let (logical, physical, scale) = match self.kind {
                HostKind::MacOs => (
                    [w, h],
                    [(w as f64 * scale) as i64, (h as f64 * scale) as i64],
                    scale,
                ),
                _ => ([w, h], [w, h], 1.0),
            };
            out.push(Monitor {
                primary: m.is_primary().unwrap_or(false),
                origin,
                logical_size: logical,
                physical_size: physical,
                scale,
            });
        }
        Ok(out)
    }

    fn cursor(&self) -> CuResult<[i64; 2]> {
        cursor_position()
    }

    fn cursor_answers(&self) -> bool {
        !crate::features::portable_refuses(self.kind).contains(&"cursor.position")
    }
}

/// The pointer position in virtual-screen pixels (GetCursorPos).
#[cfg(target_os = "windows")]
#[allow(unsafe_code)]
fn cursor_position() -> CuResult<[i64; 2]> {
    let mut p = windows_sys::Win32::Foundation::POINT { x: 0, y: 0 };
    // SAFETY: `p` is a valid, writable POINT for the call to fill.
    let ok = unsafe { windows_sys::Win32::UI::WindowsAndMessaging::GetCursorPos(&mut p) };
    if ok == 0 {
        return Err(CuError::internal(format!(
            "GetCursorPos failed: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok([i64::from(p.x), i64::from(p.y)])
}

/// macOS: neither xcap nor rdev reads the pointer position.
#[cfg(not(target_os = "windows"))]
fn cursor_position() -> CuResult<[i64; 2]> {
    Err(CuError::unsupported(
        "cursor.position",
        "the pointer position is not available in this build on this OS",
    ))
}

impl Capture for Portable {
    fn capture(&self, rect: [i64; 4], cursor: bool) -> CuResult<Image> {
        let [x1, y1, x2, y2] = rect;
        let m = xcap::Monitor::from_point(
            i32::try_from(x1).unwrap_or(0),
            i32::try_from(y1).unwrap_or(0),
        )
        .map_err(|e| cap_err(self.kind, e))?;
        let ox = i64::from(m.x().unwrap_or(0));
        let oy = i64::from(m.y().unwrap_or(0));
        let c =
            |v: i64| u32::try_from(v).map_err(|_| CuError::internal("region outside the display"));
        let img = m
            .capture_region(c(x1 - ox)?, c(y1 - oy)?, c(x2 - x1)?, c(y2 - y1)?)
            .map_err(|e| cap_err(self.kind, e))?;
        let mut image = rgba_to_image(img.width(), img.height(), img.as_raw());
        // 3.x step 6: the pointer as a small black arrow where the OS can say where it is
        // (Windows); on macOS the position is not available in this build.
        if cursor && let Ok([cx, cy]) = cursor_position() {
            stamp_arrow(&mut image, [cx - x1, cy - y1]);
        }
        Ok(image)
    }

    fn capture_window(&self, handle: u64) -> CuResult<(Image, [i64; 2])> {
        let Some(w) = find_window(handle)? else {
            // xcap lists only windows DWM gives frame bounds for (not under Wine, say).
            let reason = if window_fingerprint(handle)?.is_some() {
                "the capture library cannot see this window (it needs DWM frame bounds)"
            } else {
                "window gone"
            };
            return Err(CuError::unsupported("screenshot.window", reason));
        };
        let (ww, wh) = (w.width().unwrap_or(0), w.height().unwrap_or(0));
        if ww == 0 || wh == 0 {
            return Err(CuError::unsupported(
                "screenshot.window",
                "zero-size window",
            ));
        }
        let img = w.capture_image().map_err(|e| cap_err(self.kind, e))?;
        let origin = [i64::from(w.x().unwrap_or(0)), i64::from(w.y().unwrap_or(0))];
        Ok((
            rgba_to_image(img.width(), img.height(), img.as_raw()),
            origin,
        ))
    }
}

/// Paints a black arrow (a 12-pixel right triangle, tip at `tip`, in image pixels) into
/// `img`; the parts outside the image are dropped.
fn stamp_arrow(img: &mut Image, tip: [i64; 2]) {
    let (w, h) = (i64::from(img.width), i64::from(img.height));
    for r in 0..12 {
        for c in 0..=(r * 7 / 11) {
            let (x, y) = (tip[0] + c, tip[1] + r);
            if (0..w).contains(&x) && (0..h).contains(&y) {
                let i = ((y * w + x) * 3) as usize;
                if let Some(px) = img.rgb.get_mut(i..i + 3) {
                    px.fill(0);
                }
            }
        }
    }
}

fn find_window(handle: u64) -> CuResult<Option<xcap::Window>> {
    let all =
        xcap::Window::all().map_err(|e| CuError::unsupported("window.list", e.to_string()))?;
    Ok(all
        .into_iter()
        .find(|w| w.id().ok().map(u64::from) == Some(handle)))
}

#[cfg(target_os = "windows")]
fn sim(e: &rdev::EventType) -> CuResult<()> {
    rdev::simulate(e).map_err(|_| CuError::internal("the OS refused the input event"))
}

#[cfg(target_os = "windows")]
fn rdev_key(k: Key) -> Option<rdev::Key> {
    use rdev::Key as R;
    Some(match k {
        Key::Mod(Modifier::Shift) => R::ShiftLeft,
        Key::Mod(Modifier::Ctrl) => R::ControlLeft,
        Key::Mod(Modifier::Alt) => R::Alt,
        Key::Mod(Modifier::Super) => R::MetaLeft,
        Key::ModRight(Modifier::Shift) => R::ShiftRight,
        Key::ModRight(Modifier::Ctrl) => R::ControlRight,
        Key::ModRight(Modifier::Alt) => R::AltGr,
        Key::ModRight(Modifier::Super) => R::MetaRight,
        Key::Named(n) => match n {
            Named::Enter => R::Return,
            Named::Tab => R::Tab,
            Named::Escape => R::Escape,
            Named::Space => R::Space,
            Named::Backspace => R::Backspace,
            Named::Delete => R::Delete,
            Named::Insert => R::Insert,
            Named::Home => R::Home,
            Named::End => R::End,
            Named::PageUp => R::PageUp,
            Named::PageDown => R::PageDown,
            Named::Up => R::UpArrow,
            Named::Down => R::DownArrow,
            Named::Left => R::LeftArrow,
            Named::Right => R::RightArrow,
            Named::CapsLock => R::CapsLock,
            Named::NumLock => R::NumLock,
            Named::ScrollLock => R::ScrollLock,
            Named::PrintScreen => R::PrintScreen,
            Named::Pause => R::Pause,
            _ => return None,
        },
        Key::F(n) => match n {
            1 => R::F1,
            2 => R::F2,
            3 => R::F3,
            4 => R::F4,
            5 => R::F5,
            6 => R::F6,
            7 => R::F7,
            8 => R::F8,
            9 => R::F9,
            10 => R::F10,
            11 => R::F11,
            12 => R::F12,
            _ => return None,
        },
        Key::Num(n) => [
            R::Kp0,
            R::Kp1,
            R::Kp2,
            R::Kp3,
            R::Kp4,
            R::Kp5,
            R::Kp6,
            R::Kp7,
            R::Kp8,
            R::Kp9,
        ]
        .get(usize::from(n))
        .copied()?,
        Key::Char(c) => char_key(c)?.0,
    })
}

#[cfg(target_os = "windows")]
/// The US-layout key for an ASCII character and whether it needs Shift.
fn char_key(c: char) -> Option<(rdev::Key, bool)> {
    use rdev::Key as R;
    const LETTERS: [R; 26] = [
        R::KeyA,
        R::KeyB,
        R::KeyC,
        R::KeyD,
        R::KeyE,
        R::KeyF,
        R::KeyG,
        R::KeyH,
        R::KeyI,
        R::KeyJ,
        R::KeyK,
        R::KeyL,
        R::KeyM,
        R::KeyN,
        R::KeyO,
        R::KeyP,
        R::KeyQ,
        R::KeyR,
        R::KeyS,
        R::KeyT,
        R::KeyU,
        R::KeyV,
        R::KeyW,
        R::KeyX,
        R::KeyY,
        R::KeyZ,
    ];
    const DIGITS: [R; 10] = [
        R::Num0,
        R::Num1,
        R::Num2,
        R::Num3,
        R::Num4,
        R::Num5,
        R::Num6,
        R::Num7,
        R::Num8,
        R::Num9,
    ];
    if c.is_ascii_lowercase() {
        return Some((LETTERS[(c as u8 - b'a') as usize], false));
    }
    if c.is_ascii_uppercase() {
        return Some((LETTERS[(c as u8 - b'A') as usize], true));
    }
    if c.is_ascii_digit() {
        return Some((DIGITS[(c as u8 - b'0') as usize], false));
    }
    let shifted_digits = ")!@#$%^&*(";
    if let Some(i) = shifted_digits.find(c) {
        return Some((DIGITS[i], true));
    }
    Some(match c {
        ' ' => (R::Space, false),
        '-' => (R::Minus, false),
        '_' => (R::Minus, true),
        '=' => (R::Equal, false),
        '+' => (R::Equal, true),
        ',' => (R::Comma, false),
        '<' => (R::Comma, true),
        '.' => (R::Dot, false),
        '>' => (R::Dot, true),
        '/' => (R::Slash, false),
        '?' => (R::Slash, true),
        '\\' => (R::BackSlash, false),
        '|' => (R::BackSlash, true),
        ';' => (R::SemiColon, false),
        ':' => (R::SemiColon, true),
        '\'' => (R::Quote, false),
        '"' => (R::Quote, true),
        '`' => (R::BackQuote, false),
        '~' => (R::BackQuote, true),
        '[' => (R::LeftBracket, false),
        '{' => (R::LeftBracket, true),
        ']' => (R::RightBracket, false),
        '}' => (R::RightBracket, true),
        _ => return None,
    })
}

/// Windows: a character outside the US layout as Unicode key events (KEYEVENTF_UNICODE,
/// one down/up pair per UTF-16 unit, so surrogate pairs too), COMPUTER_USE_HW.md 4.2.2.
#[cfg(target_os = "windows")]
#[allow(unsafe_code)]
fn type_unicode(c: char) -> CuResult<()> {
    use windows_sys::Win32::UI::Input::KeyboardAndMouse as kbd;
    let mut buf = [0u16; 2];
    let mut inputs = Vec::with_capacity(4);
    for unit in c.encode_utf16(&mut buf).iter() {
        for flags in [
            kbd::KEYEVENTF_UNICODE,
            kbd::KEYEVENTF_UNICODE | kbd::KEYEVENTF_KEYUP,
        ] {
            inputs.push(kbd::INPUT {
                r#type: kbd::INPUT_KEYBOARD,
                Anonymous: kbd::INPUT_0 {
                    ki: kbd::KEYBDINPUT {
                        wVk: 0,
                        wScan: *unit,
                        dwFlags: flags,
                        time: 0,
                        dwExtraInfo: 0,
                    },
                },
            });
        }
    }
    let size = i32::try_from(std::mem::size_of::<kbd::INPUT>())
        .map_err(|_| CuError::internal("INPUT size"))?;
    // SAFETY: `inputs` holds `inputs.len()` (at most 4) initialised keyboard INPUTs, and
    // `size` is the size of one; SendInput only reads them.
    let sent = unsafe { kbd::SendInput(inputs.len() as u32, inputs.as_ptr(), size) };
    if sent as usize != inputs.len() {
        return Err(CuError::internal("the OS refused the input event"));
    }
    Ok(())
}

#[cfg(target_os = "windows")]
impl Input for Portable {
    /// Windows: SendInput through the virtual screen's origin (rdev ignores it, so its
    /// moves miss whenever a monitor sits left of or above the primary).
    fn move_to(&self, p: [i64; 2]) -> CuResult<()> {
        crate::win32::move_pointer(p)
    }

    fn button(&self, b: Button, down: bool) -> CuResult<()> {
        let b = match b {
            Button::Left => rdev::Button::Left,
            Button::Middle => rdev::Button::Middle,
            Button::Right => rdev::Button::Right,
        };
        sim(&if down {
            rdev::EventType::ButtonPress(b)
        } else {
            rdev::EventType::ButtonRelease(b)
        })
    }

    fn key(&self, k: Key, down: bool) -> CuResult<()> {
        let key = rdev_key(k).ok_or_else(|| {
            CuError::unsupported(
                "input.key",
                format!("{k:?} cannot be sent on this OS in this build"),
            )
        })?;
        sim(&if down {
            rdev::EventType::KeyPress(key)
        } else {
            rdev::EventType::KeyRelease(key)
        })
    }

    fn needs_shift(&self, c: char) -> bool {
        char_key(c).is_some_and(|(_, s)| s)
    }

    fn type_char(&self, c: char) -> CuResult<()> {
        let Some((key, shift)) = char_key(c) else {
            return type_unicode(c);
        };
        if shift {
            sim(&rdev::EventType::KeyPress(rdev::Key::ShiftLeft))?;
        }
        let r = sim(&rdev::EventType::KeyPress(key))
            .and_then(|()| sim(&rdev::EventType::KeyRelease(key)));
        if shift {
            sim(&rdev::EventType::KeyRelease(rdev::Key::ShiftLeft))?;
        }
        r
    }

    fn scroll(&self, w: Wheel) -> CuResult<()> {
        let (dx, dy) = match w {
            Wheel::Up => (0, 1),
            Wheel::Down => (0, -1),
            Wheel::Left => (-1, 0),
            Wheel::Right => (1, 0),
        };
        sim(&rdev::EventType::Wheel {
            delta_x: dx,
            delta_y: dy,
        })
    }
}

impl Windows for Portable {
    fn available(&self) -> bool {
        true
    }

    fn list(&self) -> CuResult<Vec<NativeWindow>> {
        window_list()
    }

    fn fingerprint(&self, handle: u64) -> CuResult<Option<Fingerprint>> {
        window_fingerprint(handle)
    }

    #[cfg(target_os = "windows")]
    fn focus(&self, handle: u64, raise: bool) -> CuResult<()> {
        crate::win32::focus(handle, raise)
    }

    #[cfg(not(target_os = "windows"))]
    fn focus(&self, _handle: u64, _raise: bool) -> CuResult<()> {
        Err(CuError::unsupported(
            "window.focus",
            "window activation is not available on this OS in this build",
        ))
    }

    fn focus_answers(&self) -> bool {
        !crate::features::portable_refuses(self.kind).contains(&"window.focus")
    }
}

/// Windows: the window list on user32 (xcap's needs DWM).
#[cfg(target_os = "windows")]
fn window_list() -> CuResult<Vec<NativeWindow>> {
    crate::win32::list()
}

/// Windows: the window's owner from user32.
#[cfg(target_os = "windows")]
fn window_fingerprint(handle: u64) -> CuResult<Option<Fingerprint>> {
    Ok(crate::win32::fingerprint(handle))
}

/// macOS: the window's owner from xcap.
#[cfg(not(target_os = "windows"))]
fn window_fingerprint(handle: u64) -> CuResult<Option<Fingerprint>> {
    Ok(find_window(handle)?.map(|w| Fingerprint {
        pid: i64::from(w.pid().unwrap_or(0)),
        class: w.app_name().ok(),
        created: None,
    }))
}

/// macOS: the window list from xcap.
#[cfg(not(target_os = "windows"))]
fn window_list() -> CuResult<Vec<NativeWindow>> {
    let all =
        xcap::Window::all().map_err(|e| CuError::unsupported("window.list", e.to_string()))?;
    let mut out = Vec::new();
    for w in all {
        let Ok(id) = w.id() else { continue };
        let pid = i64::from(w.pid().unwrap_or(0));
        if pid == 0 || id == 0 {
            continue;
        }
        let (x, y) = (i64::from(w.x().unwrap_or(0)), i64::from(w.y().unwrap_or(0)));
        let (ww, wh) = (
            i64::from(w.width().unwrap_or(0)),
            i64::from(w.height().unwrap_or(0)),
        );
        let app = w.app_name().ok();
        out.push(NativeWindow {
            handle: u64::from(id),
            fingerprint: Fingerprint {
                pid,
                class: app.clone(),
                created: None,
            },
            app_name: app,
            app_bundle_id: None,
            title: w.title().ok().filter(|t| !t.is_empty()),
            bounds: [x, y, x + ww, y + wh],
            is_focused: w.is_focused().unwrap_or(false),
            is_minimized: w.is_minimized().unwrap_or(false),
            is_fullscreen: false,
            other_desktop: false,
        });
    }
    Ok(out)
}

impl Apps for Portable {
    /// Windows: on user32, with executable paths and the background windows on request.
    #[cfg(target_os = "windows")]
    fn list(&self, include_background: bool) -> CuResult<Vec<NativeApp>> {
        crate::win32::apps(include_background)
    }

    /// macOS: the on-screen window list grouped by process.
    #[cfg(not(target_os = "windows"))]
    fn list(&self, _include_background: bool) -> CuResult<Vec<NativeApp>> {
        let windows = Windows::list(self)?;
        let mut by_pid: std::collections::BTreeMap<i64, NativeApp> = Default::default();
        for w in windows {
            let e = by_pid
                .entry(w.fingerprint.pid)
                .or_insert_with(|| NativeApp {
                    pid: w.fingerprint.pid,
                    name: w
                        .app_name
                        .clone()
                        .or_else(|| w.title.clone())
                        .unwrap_or_default(),
                    bundle_id: None,
                    executable_path: None,
                    is_frontmost: false,
                    window_count: 0,
                });
            e.window_count += 1;
            e.is_frontmost |= w.is_focused;
        }
        Ok(by_pid.into_values().collect())
    }

    fn launch(&self, bundle: Option<&str>, exe: Option<&str>, args: &[String]) -> CuResult<u32> {
        let mut cmd = match (self.kind, bundle, exe) {
            (HostKind::MacOs, Some(b), _) => {
                let mut c = std::process::Command::new("open");
                c.args(["-b", b]);
                c
            }
            (_, _, Some(e)) if !e.is_empty() => {
                let mut c = std::process::Command::new(e);
                c.args(args);
                c
            }
            (HostKind::MacOs, _, _) => {
                return Err(CuError::unsupported(
                    "app.launch",
                    "either bundle_id or executable_path is required",
                ));
            }
            _ => {
                return Err(CuError::unsupported(
                    "app.launch",
                    "executable_path is required",
                ));
            }
        };
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = cmd
            .spawn()
            .map_err(|e| CuError::internal(format!("cannot start the application: {e}")))?;
        let pid = child.id();
        std::thread::spawn(move || {
            let _ = child.wait();
        });
        Ok(pid)
    }
}

#[cfg(target_os = "windows")]
impl Clipboard for Portable {
    fn available(&self) -> bool {
        copypasta::ClipboardContext::new().is_ok()
    }

    fn read(&self) -> CuResult<ClipboardState> {
        use copypasta::ClipboardProvider;
        let mut ctx = copypasta::ClipboardContext::new()
            .map_err(|_| CuError::dependency("clipboard", "clipboard.read"))?;
        // Windows: the counter before the markers and the text, so a copy made meanwhile
        // shows as a changed counter rather than passing as ours (4.7.4).
        #[cfg(target_os = "windows")]
        let counter = Some(crate::win32::clipboard_sequence());
        #[cfg(not(target_os = "windows"))]
        let counter = None;
        #[cfg(target_os = "windows")]
        if let Some(marker) = crate::win32::clipboard_marker()? {
            return Ok(ClipboardState {
                text: None,
                counter,
                marker: Some(marker),
            });
        }
        Ok(ClipboardState {
            text: ctx.get_contents().ok(),
            counter,
            marker: None,
        })
    }

    fn counter(&self) -> Option<u64> {
        #[cfg(target_os = "windows")]
        return Some(crate::win32::clipboard_sequence());
        #[cfg(not(target_os = "windows"))]
        None
    }

    fn write(&self, text: &str) -> CuResult<Option<u64>> {
        use copypasta::ClipboardProvider;
        let mut ctx = copypasta::ClipboardContext::new()
            .map_err(|_| CuError::dependency("clipboard", "clipboard.write"))?;
        ctx.set_contents(text.to_owned())
            .map_err(|e| CuError::internal(format!("clipboard write failed: {e}")))?;
        #[cfg(target_os = "windows")]
        return Ok(Some(crate::win32::clipboard_sequence()));
        #[cfg(not(target_os = "windows"))]
        Ok(None)
    }
}

impl Permissions for Portable {
    /// Windows (4.8): granted when the process is elevated (it can drive every window),
    /// else unknown (UIPI silently drops input into elevated windows). macOS: unknown.
    fn check(&self, name: &str) -> PermissionState {
        match (self.kind, name) {
            (_, "accessibility" | "screen_recording" | "input_monitoring") => {
                #[cfg(target_os = "windows")]
                if crate::win32::elevated() == Some(true) {
                    return PermissionState::Granted;
                }
                PermissionState::Unknown
            }
            _ => PermissionState::NotApplicable,
        }
    }
}

/// The platform string of `kind`, for `PERMISSION_PENDING` details.
#[allow(dead_code)]
pub(crate) fn platform_name(kind: HostKind) -> &'static str {
    platform(kind)
}
