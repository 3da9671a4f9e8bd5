//! Computer use of the real Windows daemon under Wine on an X server (issue 13): `cargo
//! xtask wine-test` starts one Xvfb and gives Wine its `DISPLAY` and size
//! (`SHIM_WINE_DISPLAY_SIZE`). The daemon exe runs against the real loopback peer with
//! computer use granted; every operation goes through the wire and its effect is checked
//! from outside the daemon: this test process owns a red Win32 window (drawn by Wine on the
//! X server) that records the clicks and characters it receives, and reads the pointer and
//! the clipboard itself through Win32. What Wine cannot do is answered with a typed error,
//! asserted here and listed in docs/install-windows.md. The audit log is checked with
//! `shim-audit.exe`.

// The probe window, the pointer and the clipboard are Win32 calls (each block says why it
// is sound).
#![allow(unsafe_code)]

use std::sync::Mutex;
use std::sync::OnceLock;

use base64::Engine as _;
use serde_json::Value;
use serde_json::json;
use shim_platform_peer::PeerConfig;
use shim_protocol::Capability;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::ask;
use crate::suite::harness::wait_until;
use shim_platform_peer::Connection;

const SID: &str = "5b0f6a52-3c1e-4f7d-9d2a-7e1c0b9a4d13";

/// Where the probe window sits on the screen and how large it is.
const PROBE: [i32; 4] = [100, 100, 300, 250];

/// What the probe window received: mouse messages (name, client coordinates; the wheel
/// delta for `wheel`) and typed characters.
#[derive(Default)]
struct Seen {
    mouse: Vec<(&'static str, i32, i32)>,
    /// UTF-16 units of WM_CHAR (a character outside the BMP comes as two).
    typed: Vec<u16>,
}

/// The text the probe has received so far.
fn typed() -> String {
    String::from_utf16_lossy(&seen().lock().unwrap().typed)
}

/// The probe's mouse messages so far.
fn mouse() -> Vec<(&'static str, i32, i32)> {
    seen().lock().unwrap().mouse.clone()
}

fn seen() -> &'static Mutex<Seen> {
    static SEEN: OnceLock<Mutex<Seen>> = OnceLock::new();
    SEEN.get_or_init(Mutex::default)
}

unsafe extern "system" fn probe_proc(
    hwnd: windows_sys::Win32::Foundation::HWND,
    msg: u32,
    wparam: usize,
    lparam: isize,
) -> isize {
    use windows_sys::Win32::UI::WindowsAndMessaging as wm;
    let name = match msg {
        wm::WM_LBUTTONDOWN => "left_down",
        wm::WM_LBUTTONUP => "left_up",
        wm::WM_LBUTTONDBLCLK => "left_double",
        wm::WM_RBUTTONDOWN => "right_down",
        wm::WM_MBUTTONDOWN => "middle_down",
        wm::WM_MOUSEWHEEL => "wheel",
        wm::WM_MOUSEHWHEEL => "hwheel",
        _ => "",
    };
    if !name.is_empty() {
        let (x, y) = if name.ends_with("wheel") {
            (i32::from((wparam >> 16) as u16 as i16), 0)
        } else {
            (
                i32::from(lparam as u16 as i16),
                i32::from((lparam >> 16) as u16 as i16),
            )
        };
        seen().lock().unwrap().mouse.push((name, x, y));
        return 0;
    }
    match msg {
        wm::WM_CHAR => {
            seen().lock().unwrap().typed.push(wparam as u16);
            0
        }
        // SAFETY: the arguments are the ones Windows passed to this window procedure.
        _ => unsafe { wm::DefWindowProcW(hwnd, msg, wparam, lparam) },
    }
}

fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(Some(0)).collect()
}

/// Shows the red probe window (topmost, at [`PROBE`]) on its own thread with its message
/// loop; returns its handle once it is on the screen and in the foreground.
fn probe_window() -> usize {
    show_window("i13cu probe", 0x0000_00ff, PROBE, true)
}

/// Shows a window titled `title`, filled with `color` (COLORREF, 0x00BBGGRR) at `rect`,
/// on its own thread with its message loop ([`probe_proc`]), and makes it the foreground
/// window; returns its handle.
fn show_window(title: &'static str, color: u32, rect: [i32; 4], topmost: bool) -> usize {
    make_window(title, color, rect, topmost, true)
}

/// A window of this process that is never shown (a tray program's kind).
fn hidden_window(title: &'static str) -> usize {
    make_window(title, 0, [0, 0, 50, 50], false, false)
}

fn make_window(
    title: &'static str,
    color: u32,
    rect: [i32; 4],
    topmost: bool,
    visible: bool,
) -> usize {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use windows_sys::Win32::Graphics::Gdi::CreateSolidBrush;
        use windows_sys::Win32::Graphics::Gdi::UpdateWindow;
        use windows_sys::Win32::System::LibraryLoader::GetModuleHandleW;
        use windows_sys::Win32::UI::WindowsAndMessaging as wm;
        let class = wide(&format!("i13cu-{}", title.replace(' ', "-")));
        let wtitle = wide(title);
        // SAFETY: plain Win32 calls with valid, NUL-terminated strings that outlive them; the
        // window class and window live on this thread, which runs their message loop to the
        // end of the test process.
        unsafe {
            let instance = GetModuleHandleW(std::ptr::null());
            let wc = wm::WNDCLASSW {
                style: wm::CS_DBLCLKS,
                lpfnWndProc: Some(probe_proc),
                cbClsExtra: 0,
                cbWndExtra: 0,
                hInstance: instance,
                hIcon: std::ptr::null_mut(),
                hCursor: std::ptr::null_mut(),
                hbrBackground: CreateSolidBrush(color),
                lpszMenuName: std::ptr::null(),
                lpszClassName: class.as_ptr(),
            };
            assert_ne!(wm::RegisterClassW(&wc), 0, "RegisterClassW");
            let [x1, y1, x2, y2] = rect;
            let hwnd = wm::CreateWindowExW(
                if topmost { wm::WS_EX_TOPMOST } else { 0 },
                class.as_ptr(),
                wtitle.as_ptr(),
                wm::WS_POPUP | if visible { wm::WS_VISIBLE } else { 0 },
                x1,
                y1,
                x2 - x1,
                y2 - y1,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                instance,
                std::ptr::null(),
            );
            assert!(!hwnd.is_null(), "CreateWindowExW");
            if visible {
                UpdateWindow(hwnd);
                wm::SetForegroundWindow(hwnd);
            }
            let _ = tx.send(hwnd as usize);
            let mut msg: wm::MSG = std::mem::zeroed();
            while wm::GetMessageW(&mut msg, std::ptr::null_mut(), 0, 0) > 0 {
                wm::TranslateMessage(&msg);
                wm::DispatchMessageW(&msg);
            }
        }
    });
    rx.recv_timeout(T).expect("the window did not appear")
}

/// The foreground window, as this process sees it.
fn foreground() -> usize {
    // SAFETY: no arguments.
    unsafe { windows_sys::Win32::UI::WindowsAndMessaging::GetForegroundWindow() as usize }
}

/// The pointer position as this process (not the daemon) sees it.
fn cursor() -> [i32; 2] {
    let mut p = windows_sys::Win32::Foundation::POINT { x: 0, y: 0 };
    // SAFETY: `p` is a valid POINT for the call to fill.
    let ok = unsafe { windows_sys::Win32::UI::WindowsAndMessaging::GetCursorPos(&mut p) };
    assert_ne!(ok, 0, "GetCursorPos");
    [p.x, p.y]
}

/// Replaces the clipboard with `text`, plus the registered format `marker` holding a
/// zero DWORD when given, as another program (a password manager) would.
fn copy_as_user(text: &str, marker: Option<&str>) {
    use windows_sys::Win32::System::DataExchange::CloseClipboard;
    use windows_sys::Win32::System::DataExchange::EmptyClipboard;
    use windows_sys::Win32::System::DataExchange::OpenClipboard;
    use windows_sys::Win32::System::DataExchange::RegisterClipboardFormatW;
    use windows_sys::Win32::System::DataExchange::SetClipboardData;
    use windows_sys::Win32::System::Memory::GMEM_MOVEABLE;
    use windows_sys::Win32::System::Memory::GlobalAlloc;
    use windows_sys::Win32::System::Memory::GlobalLock;
    use windows_sys::Win32::System::Memory::GlobalUnlock;
    const CF_UNICODETEXT: u32 = 13;
    let global = |bytes: &[u8]| {
        // SAFETY: a fresh moveable block of the given size, filled while locked.
        unsafe {
            let h = GlobalAlloc(GMEM_MOVEABLE, bytes.len());
            assert!(!h.is_null());
            let p = GlobalLock(h).cast::<u8>();
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
            GlobalUnlock(h);
            h
        }
    };
    let utf16: Vec<u8> = text
        .encode_utf16()
        .chain(std::iter::once(0))
        .flat_map(u16::to_le_bytes)
        .collect();
    // SAFETY: the clipboard is opened, filled with blocks it takes over, and closed.
    unsafe {
        assert_ne!(OpenClipboard(std::ptr::null_mut()), 0);
        assert_ne!(EmptyClipboard(), 0);
        assert!(!SetClipboardData(CF_UNICODETEXT, global(&utf16)).is_null());
        if let Some(name) = marker {
            let w: Vec<u16> = name.encode_utf16().chain(std::iter::once(0)).collect();
            let id = RegisterClipboardFormatW(w.as_ptr());
            assert!(!SetClipboardData(id, global(&0u32.to_le_bytes())).is_null());
        }
        assert_ne!(CloseClipboard(), 0);
    }
}

/// The clipboard's Unicode text as this process (not the daemon) reads it.
fn clipboard_text() -> Option<String> {
    use windows_sys::Win32::System::DataExchange::CloseClipboard;
    use windows_sys::Win32::System::DataExchange::GetClipboardData;
    use windows_sys::Win32::System::DataExchange::OpenClipboard;
    use windows_sys::Win32::System::Memory::GlobalLock;
    use windows_sys::Win32::System::Memory::GlobalUnlock;
    const CF_UNICODETEXT: u32 = 13;
    // SAFETY: the clipboard is opened and closed here; the handle's memory is locked while
    // it is read up to its NUL terminator, which CF_UNICODETEXT data always has.
    unsafe {
        if OpenClipboard(std::ptr::null_mut()) == 0 {
            return None;
        }
        let h = GetClipboardData(CF_UNICODETEXT);
        let text = if h.is_null() {
            None
        } else {
            let p = GlobalLock(h) as *const u16;
            let t = if p.is_null() {
                None
            } else {
                let mut n = 0;
                while *p.add(n) != 0 {
                    n += 1;
                }
                Some(String::from_utf16_lossy(std::slice::from_raw_parts(p, n)))
            };
            GlobalUnlock(h);
            t
        };
        CloseClipboard();
        text
    }
}

fn payload(v: &Value) -> &Value {
    &v["payload"]
}

/// The daemon's connection and every request type sent on it, in order (each must have
/// exactly one audit record).
struct Wire<'a> {
    conn: &'a Connection,
    sent: Vec<String>,
}

impl Wire<'_> {
    async fn ask(&mut self, ty: &str, payload: Value) -> Value {
        self.sent.push(ty.to_owned());
        ask(self.conn, ty, payload).await
    }
}

/// Decodes a PNG screenshot: (width, height, RGB bytes).
fn png_rgb(r: &Value) -> (u32, u32, Vec<u8>) {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload(r)["image_base64"].as_str().unwrap())
        .unwrap();
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// `[width, height]` of the X screen xtask started, from `SHIM_WINE_DISPLAY_SIZE`
/// (`WxH`); `None` when this is not the Wine run with an X display.
fn display_size() -> Option<[u32; 2]> {
    std::env::var("DISPLAY").ok()?;
    let s = std::env::var("SHIM_WINE_DISPLAY_SIZE").ok()?;
    let (w, h) = s.split_once('x')?;
    Some([w.parse().ok()?, h.parse().ok()?])
}

#[tokio::test]
async fn computer_use_under_wine_on_xvfb_through_the_daemon() {
    let Some([w, h]) = display_size() else {
        eprintln!(
            "SKIP suite::windows_cu::computer_use_under_wine_on_xvfb_through_the_daemon: needs Wine with an X display (cargo xtask wine-test sets DISPLAY and SHIM_WINE_DISPLAY_SIZE)"
        );
        return;
    };
    let probe = probe_window();
    let env = Env::new(PeerConfig::default()).await;
    let root = env.root_str().to_owned();
    let mut child = env
        .command(&[
            "--allowed-root",
            &root,
            "start",
            "--session-id",
            SID,
            "--enable-computer-use",
            "--enable-clipboard",
        ])
        .spawn()
        .unwrap();
    let conn = env.next().await;
    let mut wire = Wire {
        conn: &conn,
        sent: Vec::new(),
    };
    assert!(conn.hello.capabilities.contains(&Capability::ComputerUse));
    assert_eq!(conn.hello.screen_resolution, Some([w, h]));
    eprintln!(
        "windows_cu: advertised {:?} / {:?}",
        conn.hello.computer_use_features_coarse, conn.hello.computer_use_features
    );

    // DISPLAY_INFO: the Xvfb's size, one monitor at the origin.
    let r = wire.ask("DISPLAY_INFO_REQUEST", json!({})).await;
    assert_eq!(r["type"], "DISPLAY_INFO_RESPONSE", "{r}");
    let monitors = payload(&r)["monitors"].as_array().unwrap();
    assert_eq!(monitors.len(), 1, "{r}");
    assert_eq!(monitors[0]["physical_size"], json!([w, h]), "{r}");
    assert_eq!(monitors[0]["origin"], json!([0, 0]), "{r}");

    // SCREENSHOT: a PNG of the Xvfb's size with the probe window's red in it.
    let r = wire
        .ask(
            "SCREENSHOT_REQUEST",
            json!({"format": "png", "include_cursor": false}),
        )
        .await;
    assert_eq!(r["type"], "SCREENSHOT_RESPONSE", "{r}");
    let (sw, sh, buf) = png_rgb(&r);
    assert_eq!((sw, sh), (w, h));
    let px = |x: i32, y: i32| {
        let i = (y as usize * sw as usize + x as usize) * 3;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    let [x1, y1, x2, y2] = PROBE;
    let mid = [(x1 + x2) / 2, (y1 + y2) / 2];
    eprintln!(
        "windows_cu: pixel inside the probe {:?}, outside {:?}",
        px(mid[0], mid[1]),
        px(x2 + 20, y2 + 20)
    );
    assert_eq!(px(mid[0], mid[1]), [255, 0, 0], "the probe window's red");
    assert_ne!(px(x2 + 20, y2 + 20), [255, 0, 0], "outside the probe");

    // A mouse move: the pointer is there for this process too.
    let r = wire
        .ask(
            "INPUT_ACTION",
            json!({"action": "mouse_move", "coordinate": [x1 + 30, y1 + 40]}),
        )
        .await;
    assert_eq!(r["type"], "ACK", "{r}");
    wait_until("the pointer is where the daemon moved it", || {
        cursor() == [x1 + 30, y1 + 40]
    })
    .await;

    // A click: the probe window receives it at its client coordinates.
    let r = wire
        .ask(
            "INPUT_ACTION",
            json!({"action": "left_click", "coordinate": [x1 + 50, y1 + 60]}),
        )
        .await;
    assert_eq!(r["type"], "ACK", "{r}");
    wait_until("the probe window received the click", || {
        mouse().contains(&("left_down", 50, 60))
    })
    .await;

    // Typing: the focused probe window receives the characters.
    let r = wire
        .ask(
            "INPUT_ACTION",
            json!({"action": "type", "text": "Typed 42!"}),
        )
        .await;
    assert_eq!(r["type"], "ACK", "{r}");
    wait_until("the probe window received the typed text", || {
        typed() == "Typed 42!"
    })
    .await;

    // The clipboard: written through the daemon, read by this process and back.
    let r = wire
        .ask("CLIPBOARD_WRITE", json!({"content": "clip i13cu"}))
        .await;
    assert_eq!(r["type"], "ACK", "{r}");
    assert_eq!(clipboard_text().as_deref(), Some("clip i13cu"));
    let r = wire.ask("CLIPBOARD_READ", json!({})).await;
    assert_eq!(payload(&r)["content"], "clip i13cu", "{r}");

    // COMPUTER_USE_HW.md 4.7.3-4.7.4: this process plays a password manager and puts a
    // concealment format next to its text; the read is refused with the marker's name.
    copy_as_user(
        "hunter2",
        Some("ExcludeClipboardContentFromMonitorProcessing"),
    );
    let r = wire.ask("CLIPBOARD_READ", json!({})).await;
    assert_eq!(payload(&r)["code"], "CLIPBOARD_CONCEALED", "{r}");
    assert_eq!(
        payload(&r)["details"]["marker"],
        "ExcludeClipboardContentFromMonitorProcessing",
        "{r}"
    );
    // The same text the daemon wrote, copied again by the user: the text matches, but the
    // change counter (the clipboard sequence number) shows it is not the daemon's write.
    let r = wire
        .ask("CLIPBOARD_WRITE", json!({"content": "clip again"}))
        .await;
    assert_eq!(r["type"], "ACK", "{r}");
    copy_as_user("clip again", None);
    let r = wire.ask("CLIPBOARD_READ", json!({})).await;
    assert_eq!(payload(&r)["code"], "CLIPBOARD_CONCEALED", "{r}");
    assert_eq!(
        payload(&r)["details"]["reason"],
        "writeback_overwritten",
        "{r}"
    );

    // A named key reaches the window too (Enter is the character CR).
    let r = wire
        .ask("INPUT_ACTION", json!({"action": "key", "key": "enter"}))
        .await;
    assert_eq!(r["type"], "ACK", "{r}");
    wait_until("the probe window received Enter", || {
        typed() == "Typed 42!\r"
    })
    .await;

    // The pointer position (GetCursorPos in the daemon) is where the click put it, and
    // where this process sees it.
    let r = wire.ask("CURSOR_POSITION_REQUEST", json!({})).await;
    assert_eq!(r["type"], "CURSOR_POSITION_RESPONSE", "{r}");
    assert_eq!(
        payload(&r),
        &json!({"x": x1 + 50, "y": y1 + 60, "monitor": 0}),
        "{r}"
    );
    assert_eq!(cursor(), [x1 + 50, y1 + 60]);

    // Outside the screen: refused before any event.
    let before = mouse().len();
    let r = wire
        .ask(
            "INPUT_ACTION",
            json!({"action": "left_click", "coordinate": [w, 0]}),
        )
        .await;
    assert_eq!(payload(&r)["code"], "INPUT_OUT_OF_BOUNDS", "{r}");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(mouse().len(), before, "no event was sent: {:?}", mouse());

    // The other input actions, each seen by the probe window exactly as sent.
    let before = mouse().len();
    for (action, extra) in [
        ("right_click", json!({"coordinate": [x1 + 10, y1 + 10]})),
        ("middle_click", json!({"coordinate": [x1 + 11, y1 + 11]})),
        ("double_click", json!({"coordinate": [x1 + 12, y1 + 12]})),
        (
            "scroll",
            json!({"coordinate": [x1 + 13, y1 + 13], "scroll_direction": "down", "scroll_amount": 2}),
        ),
        (
            "scroll",
            json!({"scroll_direction": "right", "scroll_amount": 1}),
        ),
        (
            "drag",
            json!({"path": [[x1 + 20, y1 + 20], [x1 + 80, y1 + 90]]}),
        ),
        ("mouse_down", json!({"coordinate": [x1 + 30, y1 + 30]})),
        ("mouse_up", json!({"coordinate": [x1 + 31, y1 + 31]})),
        ("hold_key", json!({"key": "shift", "duration_ms": 50})),
        ("key", json!({"key": "ctrl+a"})),
    ] {
        let mut p = extra.clone();
        p["action"] = json!(action);
        let r = wire.ask("INPUT_ACTION", p).await;
        assert_eq!(r["type"], "ACK", "{action}: {r}");
    }
    let expected = [
        ("right_down", 10, 10),
        ("middle_down", 11, 11),
        ("left_down", 12, 12),
        ("left_up", 12, 12),
        ("left_double", 12, 12),
        ("left_up", 12, 12),
        // WHEEL_DELTA per step: negative is down, positive is right.
        ("wheel", -120, 0),
        ("wheel", -120, 0),
        ("hwheel", 120, 0),
        ("left_down", 20, 20),
        ("left_up", 80, 90),
        ("left_down", 30, 30),
        ("left_up", 31, 31),
    ];
    wait_until("the probe window saw every input action", || {
        mouse().get(before..) == Some(&expected[..])
    })
    .await;
    // Ctrl+A is the character 0x01.
    wait_until("the probe window received ctrl+a", || {
        typed() == "Typed 42!\r\u{1}"
    })
    .await;

    // Characters outside the US layout, and outside the BMP (a surrogate pair), as Unicode
    // key events.
    let r = wire
        .ask("INPUT_ACTION", json!({"action": "type", "text": "é漢😀"}))
        .await;
    assert_eq!(r["type"], "ACK", "{r}");
    wait_until("the probe window received the Unicode text", || {
        typed() == "Typed 42!\r\u{1}é漢😀"
    })
    .await;

    // JPEG, a region (all inside the red probe), and the pointer drawn in.
    let r = wire
        .ask(
            "SCREENSHOT_REQUEST",
            json!({"format": "jpeg", "quality": 80}),
        )
        .await;
    assert_eq!(r["type"], "SCREENSHOT_RESPONSE", "{r}");
    let jpeg = base64::engine::general_purpose::STANDARD
        .decode(payload(&r)["image_base64"].as_str().unwrap())
        .unwrap();
    assert_eq!(jpeg[..2], [0xff, 0xd8], "a JPEG");
    assert_eq!(
        (payload(&r)["width"].clone(), payload(&r)["height"].clone()),
        (json!(w), json!(h))
    );
    let r = wire
        .ask(
            "SCREENSHOT_REQUEST",
            json!({"format": "png", "include_cursor": false, "region": [x1, y1, x1 + 200, y1 + 100]}),
        )
        .await;
    let (rw, rh, region) = png_rgb(&r);
    assert_eq!((rw, rh), (200, 100));
    assert!(region.chunks(3).all(|p| p == [255, 0, 0]), "region all red");
    let shots = [false, true].map(|c| json!({"format": "png", "include_cursor": c}));
    let plain = png_rgb(&wire.ask("SCREENSHOT_REQUEST", shots[0].clone()).await).2;
    let with = png_rgb(&wire.ask("SCREENSHOT_REQUEST", shots[1].clone()).await).2;
    // The pointer is at the last mouse_up, (x1 + 31, y1 + 31): a black arrow below its tip.
    let at = |img: &[u8], x: i32, y: i32| {
        let i = (y as usize * w as usize + x as usize) * 3;
        [img[i], img[i + 1], img[i + 2]]
    };
    assert_eq!(at(&plain, x1 + 32, y1 + 35), [255, 0, 0]);
    assert_eq!(
        at(&with, x1 + 32, y1 + 35),
        [0, 0, 0],
        "the pointer is drawn"
    );
    assert_eq!(at(&with, x1 + 60, y1 + 35), [255, 0, 0], "and only there");

    // Applications: a launch runs (its marker file appears); the list is built from the
    // window list, so under Wine it is empty (the Wine gap below).
    let marker = env.dir.path().join("launched.txt");
    let r = wire
        .ask(
            "APP_LAUNCH",
            json!({"executable_path": "C:\\windows\\system32\\cmd.exe",
                   "args": ["/c", format!("echo launched> {}", marker.display())]}),
        )
        .await;
    assert_eq!(r["type"], "ACK", "{r}");
    wait_until("the launched program wrote its marker", || marker.is_file()).await;
    let r = wire.ask("APP_LIST_REQUEST", json!({})).await;
    assert_eq!(r["type"], "APP_LIST_RESPONSE", "{r}");
    let r = wire
        .ask("WINDOW_FOCUS", json!({"window_id": "w-never-listed"}))
        .await;
    assert_eq!(payload(&r)["code"], "WINDOW_STALE", "{r}");
    let r = wire
        .ask(
            "PERMISSIONS_CHECK_REQUEST",
            json!({"permissions": ["accessibility", "screen_recording"]}),
        )
        .await;
    // Granted when elevated, else unknown (4.8); the daemon runs with this process's token.
    let state = match shim_cu::process_elevated() {
        Some(true) => "granted",
        _ => "unknown",
    };
    eprintln!("windows_cu: elevated = {:?}", shim_cu::process_elevated());
    assert!(
        shim_cu::process_elevated().is_some(),
        "the token is readable"
    );
    assert_eq!(
        payload(&r)["permissions"],
        json!({"accessibility": state, "screen_recording": state}),
        "{r}"
    );

    // The window list (on user32: xcap's needs DWM frame bounds, which Wine 8 does not
    // give): the probe with its title, owner, bounds and focus.
    let r = wire.ask("WINDOW_LIST_REQUEST", json!({})).await;
    assert_eq!(r["type"], "WINDOW_LIST_RESPONSE", "{r}");
    let listed = payload(&r)["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["title"] == "i13cu probe")
        .unwrap_or_else(|| panic!("the probe is not listed: {r}"))
        .clone();
    assert_eq!(listed["pid"], std::process::id(), "{listed}");
    assert_eq!(listed["bounds"], json!(PROBE), "{listed}");
    assert_eq!(listed["is_focused"], true, "{listed}");
    let exe = std::env::current_exe().unwrap();
    let stem = exe.file_stem().unwrap().to_string_lossy().into_owned();
    assert_eq!(listed["app_name"], stem.as_str(), "{listed}");
    // The app list: this process with its executable's path; a hidden window counts only
    // with include_background.
    let ours = |r: &Value| {
        payload(r)["apps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["pid"] == std::process::id())
            .unwrap_or_else(|| panic!("this process is not listed: {r}"))
            .clone()
    };
    let _hidden = hidden_window("i13cu hidden");
    let r = wire.ask("APP_LIST_REQUEST", json!({})).await;
    let app = ours(&r);
    assert_eq!(app["name"], stem.as_str(), "{app}");
    let path = app["executable_path"].as_str().unwrap_or_default();
    assert!(
        path.eq_ignore_ascii_case(&exe.to_string_lossy()),
        "{app} is not {}",
        exe.display()
    );
    let shown = app["window_count"].as_u64().unwrap();
    let r = wire
        .ask("APP_LIST_REQUEST", json!({"include_background": true}))
        .await;
    let all = ours(&r)["window_count"].as_u64().unwrap();
    assert!(
        all > shown,
        "hidden windows count with include_background: {all} vs {shown}"
    );

    // Focus: another window takes the foreground; WINDOW_FOCUS gives it back to the probe.
    let other = show_window("i13cu other", 0x0000_ff00, [600, 400, 800, 500], false);
    wait_until("the other window is in the foreground", || {
        foreground() == other
    })
    .await;
    let r = wire
        .ask("WINDOW_FOCUS", json!({"window_id": listed["window_id"]}))
        .await;
    assert_eq!(r["type"], "ACK", "{r}");
    wait_until("the probe is in the foreground again", || {
        foreground() == probe
    })
    .await;

    // Wine gap: a window screenshot goes through xcap, which cannot find the window under
    // Wine (no DWM frame bounds): a typed error, not a panic or a hang.
    let r = wire
        .ask(
            "SCREENSHOT_REQUEST",
            json!({"format": "png", "window_id": listed["window_id"]}),
        )
        .await;
    assert_eq!(payload(&r)["code"], "FEATURE_NOT_SUPPORTED", "{r}");
    assert_eq!(
        payload(&r)["details"]["reason"],
        "the capture library cannot see this window (it needs DWM frame bounds)"
    );

    let _ = child.start_kill();
    let _ = child.wait().await;
    env.assert_no_violations();
    env.verify_audit();
    if let Some((code, out, err)) = crate::suite::windows::shim_audit(&env, &["verify"]).await {
        assert_eq!(code, 0, "{out}{err}");
    }
    // One record per request, in order; never the typed text or the clipboard.
    let records = env.audit_records();
    let ops: Vec<&str> = records
        .iter()
        .filter_map(|r| r["op"].as_str())
        .filter(|op| !["SHIM_START", "WS_CONNECTED", "CONFIG_RELOADED", "SHIM_STOP"].contains(op))
        .collect();
    let sent = std::mem::take(&mut wire.sent);
    assert_eq!(ops, sent);
    let text = std::fs::read_to_string(env.audit_log()).unwrap();
    for secret in ["Typed 42", "clip i13cu", "hunter2", "clip again"] {
        assert!(!text.contains(secret), "{secret} leaked into the audit log");
    }
    let shot = records
        .iter()
        .find(|r| r["op"] == "SCREENSHOT_REQUEST")
        .unwrap();
    assert_eq!(shot["details"]["width"], w);
    assert_eq!(shot["details"]["height"], h);
    let oob = records
        .iter()
        .find(|r| r["details"]["coordinate"] == json!([w, 0]))
        .unwrap();
    assert_eq!(oob["result"]["error_code"], "INPUT_OUT_OF_BOUNDS");
    let typed = records
        .iter()
        .find(|r| r["details"]["action"] == "type")
        .unwrap();
    assert_eq!(typed["details"]["text_length"], 9);
    assert_eq!(typed["result"]["ok"], true);
}

#[tokio::test]
async fn doctor_names_the_display_and_what_computer_use_cannot_do_on_windows() {
    let Some([w, h]) = display_size() else {
        eprintln!(
            "SKIP suite::windows_cu::doctor_names_the_display_and_what_computer_use_cannot_do_on_windows: needs Wine with an X display (cargo xtask wine-test sets DISPLAY and SHIM_WINE_DISPLAY_SIZE)"
        );
        return;
    };
    let env = Env::new(PeerConfig::default()).await;
    let r = crate::suite::doctor::doctor(
        &env,
        &["--session-id", SID],
        &[("AUTOGPT_SHIM_ENABLE_COMPUTER_USE", "true")],
    )
    .await;
    let shown = format!("1 display(s): {w}x{h}");
    assert_eq!(r.get("display"), ("OK", shown.as_str()));
    // Nothing is missing on Windows any more (the clipboard's concealment formats and
    // change counter came last): no cu_unavailable line.
    assert!(!r.has("cu_unavailable"));
    // UAC (AUDIT_AUTH_CLI.md 5.5): the daemon runs with this process's token.
    let uac = match shim_cu::process_elevated() {
        Some(true) => ("OK", "elevated (can drive elevated windows)"),
        _ => ("INFO", "not elevated (cannot drive elevated windows)"),
    };
    assert_eq!(r.get("UAC"), uac);
}
