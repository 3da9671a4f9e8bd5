//! The X11 backend: XTEST input with temporary key-map bindings for characters the layout
//! lacks, RandR 1.5 monitors, root-window capture with the XFixes cursor image, EWMH
//! windows, `/proc` applications and a selection owner for the clipboard.

mod clipboard;
pub mod live;

pub(crate) use clipboard::notify_requestor;
mod keysyms;
mod shm;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use shim_protocol::messages::cu::PermissionState;
use x11rb::connection::Connection;
use x11rb::protocol::randr::ConnectionExt as _;
use x11rb::protocol::xfixes::ConnectionExt as _;
use x11rb::protocol::xproto::AtomEnum;
use x11rb::protocol::xproto::ClientMessageEvent;
use x11rb::protocol::xproto::ConnectionExt as _;
use x11rb::protocol::xproto::EventMask;
use x11rb::protocol::xproto::ImageFormat;
use x11rb::protocol::xproto::Window;
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

use crate::OpenOptions;
use crate::Unavailable;
use crate::backend::Apps;
use crate::backend::Button;
use crate::backend::Capture;
use crate::backend::Desktop;
use crate::backend::Displays;
use crate::backend::Fingerprint;
use crate::backend::HostKind;
use crate::backend::Image;
use crate::backend::Input;
use crate::backend::Monitor;
use crate::backend::NativeApp;
use crate::backend::NativeWindow;
use crate::backend::Permissions;
use crate::backend::Wheel;
use crate::backend::Windows;
use crate::encode;
use crate::error::CuError;
use crate::error::CuResult;
use crate::features::LinuxSession;
use crate::features::classify_linux;
use crate::keys::Key;

x11rb::atom_manager! {
    /// Atoms the backend uses.
    pub(crate) Atoms: AtomsCookie {
        _NET_CLIENT_LIST,
        _NET_SUPPORTING_WM_CHECK,
        _NET_ACTIVE_WINDOW,
        _NET_WM_PID,
        _NET_WM_NAME,
        _NET_FRAME_EXTENTS,
        _NET_WM_STATE,
        _NET_WM_STATE_HIDDEN,
        _NET_WM_STATE_FULLSCREEN,
        _NET_WM_DESKTOP,
        _NET_CURRENT_DESKTOP,
        UTF8_STRING,
        CLIPBOARD,
        TARGETS,
        INCR,
        TEXT,
        KDE_PASSWORD_HINT: b"x-kde-passwordManagerHint",
        SHIM_SELECTION: b"_AUTOGPT_SHIM_SELECTION",
    }
}

fn xerr(e: impl std::fmt::Display) -> CuError {
    CuError::internal(format!("X11 request failed: {e}"))
}

const KEY_PRESS: u8 = 2;
const KEY_RELEASE: u8 = 3;
const BUTTON_PRESS: u8 = 4;
const BUTTON_RELEASE: u8 = 5;
const MOTION_NOTIFY: u8 = 6;
/// Keycodes lent to characters the layout lacks.
const SPARE_POOL: usize = 8;

/// The key map and the spare keycodes currently lent out.
#[derive(Debug, Default)]
struct KeyMap {
    per: u8,
    /// keysym -> (keycode, needs shift).
    by_sym: HashMap<u32, (u8, bool)>,
    spares: Vec<u8>,
    /// Lent spares in lending order: (keycode, keysym).
    lent: Vec<(u8, u32)>,
}

/// The X11 session: one connection for requests; the clipboard has its own.
pub struct X11 {
    conn: RustConnection,
    root: Window,
    screen: [i64; 2],
    atoms: Atoms,
    keymap: Mutex<KeyMap>,
    shm: shm::Shm,
    display: Option<String>,
    on_launch: Option<crate::LaunchHook>,
    launch_env: Vec<(String, String)>,
}

impl std::fmt::Debug for X11 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("X11")
            .field("display", &self.display)
            .finish_non_exhaustive()
    }
}

/// Opens the X11 backend on `opts.display` or `DISPLAY` (2.2 classification first).
pub fn open(opts: &OpenOptions) -> Result<Desktop, Unavailable> {
    let env = |k: &str| std::env::var(k).ok();
    let display = opts.display.clone().or_else(|| env("DISPLAY"));
    if opts.display.is_none() {
        match classify_linux(
            env("XDG_SESSION_TYPE").as_deref(),
            env("WAYLAND_DISPLAY").as_deref(),
            display.as_deref(),
        ) {
            LinuxSession::Wayland => return Err(Unavailable::Wayland),
            LinuxSession::None => return Err(Unavailable::NoDisplay("DISPLAY is not set".into())),
            LinuxSession::X11 => {}
        }
    } else if !opts.private_display
        && classify_linux(
            env("XDG_SESSION_TYPE").as_deref(),
            env("WAYLAND_DISPLAY").as_deref(),
            display.as_deref(),
        ) == LinuxSession::Wayland
    {
        // A named display is still refused inside a Wayland session (it may be the
        // session's own XWayland); the daemon's private X server is not (2.2).
        return Err(Unavailable::Wayland);
    }
    let mut x = X11::connect(display.as_deref(), opts.cookie.as_ref())?;
    x.on_launch = opts.on_launch.clone();
    x.launch_env = opts.launch_env.clone();
    let x = Arc::new(x);
    let clip: Arc<dyn crate::backend::Clipboard> =
        match clipboard::X11Clipboard::start(display.as_deref(), opts.cookie.as_ref()) {
            Ok(c) => Arc::new(c),
            Err(e) => {
                tracing::warn!(error = %e, "X11 clipboard unavailable");
                Arc::new(clipboard::NoClipboard)
            }
        };
    let alive = x.clone();
    Ok(Desktop {
        kind: HostKind::X11,
        displays: x.clone(),
        capture: x.clone(),
        input: x.clone(),
        windows: x.clone(),
        apps: x.clone(),
        clipboard: clip,
        permissions: x,
        alive: Arc::new(move || alive.conn.sync().is_ok()),
    })
}

/// Connects to `display` (or `DISPLAY`), with `cookie` when given instead of the
/// `XAUTHORITY` lookup.
pub(crate) fn connect(
    display: Option<&str>,
    cookie: Option<&crate::Cookie>,
) -> Result<(RustConnection, usize), x11rb::errors::ConnectError> {
    use x11rb::reexports::x11rb_protocol::parse_display::parse_display;
    let Some(cookie) = cookie else {
        return RustConnection::connect(display);
    };
    let parsed = parse_display(display)?;
    let screen = usize::from(parsed.screen);
    let mut last = None;
    for addr in parsed.connect_instruction() {
        match x11rb::rust_connection::DefaultStream::connect(&addr) {
            Ok((stream, _)) => {
                let c = RustConnection::connect_to_stream_with_auth_info(
                    stream,
                    screen,
                    b"MIT-MAGIC-COOKIE-1".to_vec(),
                    cookie.0.clone(),
                )?;
                return Ok((c, screen));
            }
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) => x11rb::errors::ConnectError::IoError(e),
        None => x11rb::errors::ConnectError::DisplayParsingError(
            x11rb::reexports::x11rb_protocol::errors::DisplayParsingError::Unknown,
        ),
    })
}

/// Whether an X server accepts a connection on `display` (no other request is made).
pub fn reachable(display: &str) -> bool {
    RustConnection::connect(Some(display)).is_ok()
}

impl X11 {
    fn connect(display: Option<&str>, cookie: Option<&crate::Cookie>) -> Result<X11, Unavailable> {
        let (conn, n) =
            connect(display, cookie).map_err(|e| Unavailable::NoDisplay(e.to_string()))?;
        let screen = conn
            .setup()
            .roots
            .get(n)
            .ok_or_else(|| Unavailable::NoDisplay("no X screen".into()))?;
        let root = screen.root;
        let size = [
            i64::from(screen.width_in_pixels),
            i64::from(screen.height_in_pixels),
        ];
        let atoms = Atoms::new(&conn)
            .map(|c| c.reply())
            .map_err(|e| Unavailable::NoDisplay(e.to_string()))?
            .map_err(|e| Unavailable::NoDisplay(e.to_string()))?;
        // XTEST is required for input; without it the display is not usable.
        conn.xtest_get_version(2, 2)
            .map_err(|e| Unavailable::NoDisplay(e.to_string()))?
            .reply()
            .map_err(|_| Unavailable::NoDisplay("the X server lacks XTEST".into()))?;
        let _ = conn.xfixes_query_version(5, 0).map(|c| c.reply());
        let _ = conn.randr_query_version(1, 5).map(|c| c.reply());
        let shm = shm::Shm::probe(&conn);
        let x = X11 {
            conn,
            root,
            screen: size,
            atoms,
            keymap: Mutex::new(KeyMap::default()),
            shm,
            display: display.map(str::to_owned),
            on_launch: None,
            launch_env: Vec::new(),
        };
        x.load_keymap()
            .map_err(|e| Unavailable::NoDisplay(e.message))?;
        Ok(x)
    }

    fn load_keymap(&self) -> CuResult<()> {
        let setup = self.conn.setup();
        let (min, max) = (setup.min_keycode, setup.max_keycode);
        let r = self
            .conn
            .get_keyboard_mapping(min, max - min + 1)
            .map_err(xerr)?
            .reply()
            .map_err(xerr)?;
        let per = r.keysyms_per_keycode;
        let mut km = KeyMap {
            per,
            ..KeyMap::default()
        };
        for (i, syms) in r.keysyms.chunks(usize::from(per.max(1))).enumerate() {
            let code = min.saturating_add(u8::try_from(i).unwrap_or(0));
            if syms.iter().all(|s| *s == 0) {
                km.spares.push(code);
                continue;
            }
            for (idx, s) in syms.iter().take(2).enumerate() {
                if *s != 0 {
                    km.by_sym.entry(*s).or_insert((code, idx == 1));
                }
            }
        }
        // Use the highest free keycodes first (they are never on a physical keyboard).
        km.spares.reverse();
        km.spares.truncate(SPARE_POOL);
        if let Ok(mut k) = self.keymap.lock() {
            *k = km;
        }
        Ok(())
    }

    fn sync(&self) -> CuResult<()> {
        self.conn.sync().map_err(xerr)
    }

    fn fake(&self, ty: u8, detail: u8, x: i16, y: i16) -> CuResult<()> {
        self.conn
            .xtest_fake_input(ty, detail, 0, self.root, x, y, 0)
            .map_err(xerr)?;
        Ok(())
    }

    /// The keycode for `sym`, lending a spare keycode when the layout lacks it.
    fn keycode(&self, sym: u32) -> CuResult<(u8, bool)> {
        let mut km = self
            .keymap
            .lock()
            .map_err(|_| CuError::internal("key map poisoned"))?;
        if let Some(k) = km.by_sym.get(&sym) {
            return Ok(*k);
        }
        if let Some((code, _)) = km.lent.iter().find(|(_, s)| *s == sym) {
            return Ok((*code, false));
        }
        let code = if let Some(free) = km
            .spares
            .iter()
            .find(|c| !km.lent.iter().any(|(l, _)| l == *c))
        {
            *free
        } else if !km.lent.is_empty() {
            // Reuse the least recently lent keycode.
            km.lent.remove(0).0
        } else {
            return Err(CuError::unsupported(
                "input.key",
                "no spare keycode to bind a character the layout lacks",
            ));
        };
        let per = usize::from(km.per.max(1));
        let mut syms = vec![0u32; per];
        syms[0] = sym;
        if per > 1 {
            syms[1] = sym;
        }
        self.conn
            .change_keyboard_mapping(1, code, km.per, &syms)
            .map_err(xerr)?;
        self.conn.sync().map_err(xerr)?;
        km.lent.push((code, sym));
        Ok((code, false))
    }

    fn press_sym(&self, sym: u32, down: bool) -> CuResult<()> {
        let (code, _) = self.keycode(sym)?;
        self.fake(if down { KEY_PRESS } else { KEY_RELEASE }, code, 0, 0)?;
        self.sync()
    }

    fn prop(
        &self,
        w: Window,
        atom: u32,
        ty: impl Into<u32>,
    ) -> Option<x11rb::protocol::xproto::GetPropertyReply> {
        self.conn
            .get_property(false, w, atom, ty, 0, 1 << 20)
            .ok()?
            .reply()
            .ok()
            .filter(|r| r.type_ != 0)
    }

    fn prop32(&self, w: Window, atom: u32, ty: impl Into<u32>) -> Vec<u32> {
        self.prop(w, atom, ty)
            .and_then(|r| r.value32().map(Iterator::collect))
            .unwrap_or_default()
    }

    fn client_list(&self) -> Vec<Window> {
        self.prop32(self.root, self.atoms._NET_CLIENT_LIST, AtomEnum::WINDOW)
    }

    fn pid_of(&self, w: Window) -> i64 {
        self.prop32(w, self.atoms._NET_WM_PID, AtomEnum::CARDINAL)
            .first()
            .map_or(0, |p| i64::from(*p))
    }

    fn class_of(&self, w: Window) -> Option<String> {
        let r = self.prop(w, AtomEnum::WM_CLASS.into(), AtomEnum::STRING)?;
        let parts: Vec<&[u8]> = r.value.split(|b| *b == 0).collect();
        parts
            .get(1)
            .filter(|c| !c.is_empty())
            .map(|c| String::from_utf8_lossy(c).into_owned())
    }

    fn title_of(&self, w: Window) -> Option<String> {
        let r = self
            .prop(w, self.atoms._NET_WM_NAME, self.atoms.UTF8_STRING)
            .or_else(|| self.prop(w, AtomEnum::WM_NAME.into(), AtomEnum::ANY))?;
        let t = String::from_utf8_lossy(&r.value).into_owned();
        (!t.is_empty()).then_some(t)
    }

    fn active_window(&self) -> Option<Window> {
        self.prop32(self.root, self.atoms._NET_ACTIVE_WINDOW, AtomEnum::WINDOW)
            .first()
            .copied()
            .filter(|w| *w != 0)
    }

    fn bounds_of(&self, w: Window) -> Option<[i64; 4]> {
        let g = self.conn.get_geometry(w).ok()?.reply().ok()?;
        let t = self
            .conn
            .translate_coordinates(w, self.root, 0, 0)
            .ok()?
            .reply()
            .ok()?;
        let ext = self.prop32(w, self.atoms._NET_FRAME_EXTENTS, AtomEnum::CARDINAL);
        let e = |i: usize| ext.get(i).map_or(0, |v| i64::from(*v));
        let (x, y) = (i64::from(t.dst_x), i64::from(t.dst_y));
        Some([
            x - e(0),
            y - e(2),
            x + i64::from(g.width) + e(1),
            y + i64::from(g.height) + e(3),
        ])
    }
}

impl Displays for X11 {
    fn monitors(&self) -> CuResult<Vec<Monitor>> {
        let whole = || Monitor {
            primary: true,
            origin: [0, 0],
            logical_size: self.screen,
            physical_size: self.screen,
            scale: 1.0,
        };
        let Ok(cookie) = self.conn.randr_get_monitors(self.root, true) else {
            return Ok(vec![whole()]);
        };
        let Ok(r) = cookie.reply() else {
            return Ok(vec![whole()]);
        };
        let v: Vec<Monitor> = r
            .monitors
            .iter()
            .map(|m| {
                let size = [i64::from(m.width), i64::from(m.height)];
                Monitor {
                    primary: m.primary,
                    origin: [i64::from(m.x), i64::from(m.y)],
                    logical_size: size,
                    physical_size: size,
                    scale: 1.0,
                }
            })
            .collect();
        Ok(if v.is_empty() { vec![whole()] } else { v })
    }

    fn cursor(&self) -> CuResult<[i64; 2]> {
        let r = self
            .conn
            .query_pointer(self.root)
            .map_err(xerr)?
            .reply()
            .map_err(xerr)?;
        Ok([i64::from(r.root_x), i64::from(r.root_y)])
    }
}

impl X11 {
    /// RGB of a `w` x `h` ZPixmap image of `depth` (24 or 32 bits deep, 4 bytes a pixel,
    /// in the server's byte order).
    fn to_rgb(&self, data: &[u8], depth: u8, w: u16, h: u16) -> CuResult<Vec<u8>> {
        let setup = self.conn.setup();
        let bpp = setup
            .pixmap_formats
            .iter()
            .find(|f| f.depth == depth)
            .map_or(0, |f| f.bits_per_pixel);
        if bpp != 32 || depth < 24 {
            return Err(CuError::unsupported(
                "screenshot",
                format!("unsupported X visual (depth {depth}, {bpp} bits per pixel)"),
            ));
        }
        let n = usize::from(w) * usize::from(h);
        if data.len() < n * 4 {
            return Err(CuError::internal("the X server sent a short image"));
        }
        let mut rgb = vec![0; n * 3];
        let pixels = rgb.chunks_exact_mut(3).zip(data.chunks_exact(4));
        if setup.image_byte_order == x11rb::protocol::xproto::ImageOrder::LSB_FIRST {
            for (d, s) in pixels {
                d.copy_from_slice(&[s[2], s[1], s[0]]);
            }
        } else {
            for (d, s) in pixels {
                d.copy_from_slice(&s[1..4]);
            }
        }
        Ok(rgb)
    }
}

impl Capture for X11 {
    fn capture(&self, rect: [i64; 4], cursor: bool) -> CuResult<Image> {
        let [x1, y1, x2, y2] = rect;
        let conv =
            |v: i64| i16::try_from(v).map_err(|_| CuError::internal("coordinate out of X range"));
        let convu = |v: i64| u16::try_from(v).map_err(|_| CuError::internal("size out of X range"));
        let (w, h) = (convu(x2 - x1)?, convu(y2 - y1)?);
        let (x, y) = (conv(x1)?, conv(y1)?);
        let shared = self
            .shm
            .capture(&self.conn, self.root, [x, y], [w, h], |data, depth| {
                self.to_rgb(data, depth, w, h)
            });
        let rgb = match shared {
            Some(rgb) => rgb?,
            None => {
                let r = self
                    .conn
                    .get_image(ImageFormat::Z_PIXMAP, self.root, x, y, w, h, !0)
                    .map_err(xerr)?
                    .reply()
                    .map_err(xerr)?;
                self.to_rgb(&r.data, r.depth, w, h)?
            }
        };
        let mut img = Image {
            width: u32::from(w),
            height: u32::from(h),
            rgb,
        };
        if cursor
            && let Ok(c) = self.conn.xfixes_get_cursor_image()
            && let Ok(c) = c.reply()
        {
            let (px, py) = (i64::from(c.x), i64::from(c.y));
            if x1 <= px && px < x2 && y1 <= py && py < y2 {
                encode::composite_argb(
                    &mut img,
                    px - i64::from(c.xhot) - x1,
                    py - i64::from(c.yhot) - y1,
                    u32::from(c.width),
                    u32::from(c.height),
                    &c.cursor_image,
                );
            }
        }
        Ok(img)
    }

    fn capture_window(&self, _handle: u64) -> CuResult<(Image, [i64; 2])> {
        Err(CuError::unsupported(
            "screenshot.window",
            "window capture is not available on X11",
        ))
    }
}

impl Input for X11 {
    fn move_to(&self, p: [i64; 2]) -> CuResult<()> {
        let c =
            |v: i64| i16::try_from(v).map_err(|_| CuError::internal("coordinate out of X range"));
        self.fake(MOTION_NOTIFY, 0, c(p[0])?, c(p[1])?)?;
        self.sync()
    }

    fn button(&self, b: Button, down: bool) -> CuResult<()> {
        let detail = match b {
            Button::Left => 1,
            Button::Middle => 2,
            Button::Right => 3,
        };
        self.fake(
            if down { BUTTON_PRESS } else { BUTTON_RELEASE },
            detail,
            0,
            0,
        )?;
        self.sync()
    }

    fn key(&self, k: Key, down: bool) -> CuResult<()> {
        self.press_sym(keysyms::for_key(k), down)
    }

    fn needs_shift(&self, c: char) -> bool {
        let sym = keysyms::for_char(c);
        self.keymap
            .lock()
            .ok()
            .and_then(|k| k.by_sym.get(&sym).copied())
            .is_some_and(|(_, shift)| shift)
    }

    fn type_char(&self, c: char) -> CuResult<()> {
        let sym = keysyms::for_char(c);
        let (code, shift) = self.keycode(sym)?;
        let shift_code = if shift {
            Some(self.keycode(keysyms::SHIFT_L)?.0)
        } else {
            None
        };
        if let Some(s) = shift_code {
            self.fake(KEY_PRESS, s, 0, 0)?;
        }
        let r = self
            .fake(KEY_PRESS, code, 0, 0)
            .and_then(|()| self.fake(KEY_RELEASE, code, 0, 0));
        if let Some(s) = shift_code {
            self.fake(KEY_RELEASE, s, 0, 0)?;
        }
        r?;
        self.sync()
    }

    fn end_typing(&self) {
        let lent = match self.keymap.lock() {
            Ok(mut k) => std::mem::take(&mut k.lent),
            Err(_) => return,
        };
        if lent.is_empty() {
            return;
        }
        // Clients translate a keycode when they process the event, after refreshing their
        // copy of the map: give them time before the binding disappears.
        std::thread::sleep(Duration::from_millis(150));
        let per = self.keymap.lock().map(|k| k.per).unwrap_or(2);
        for (code, _) in lent {
            let syms = vec![0u32; usize::from(per.max(1))];
            let _ = self.conn.change_keyboard_mapping(1, code, per, &syms);
        }
        let _ = self.conn.sync();
    }

    fn scroll(&self, w: Wheel) -> CuResult<()> {
        let b = match w {
            Wheel::Up => 4,
            Wheel::Down => 5,
            Wheel::Left => 6,
            Wheel::Right => 7,
        };
        self.fake(BUTTON_PRESS, b, 0, 0)?;
        self.fake(BUTTON_RELEASE, b, 0, 0)?;
        self.sync()
    }
}

impl Windows for X11 {
    fn available(&self) -> bool {
        let a = &self.atoms;
        let Some(check) = self
            .prop32(self.root, a._NET_SUPPORTING_WM_CHECK, AtomEnum::WINDOW)
            .first()
            .copied()
        else {
            return false;
        };
        let live = self
            .prop32(check, a._NET_SUPPORTING_WM_CHECK, AtomEnum::WINDOW)
            .first()
            .is_some_and(|w| *w == check);
        live && self
            .prop(self.root, a._NET_CLIENT_LIST, AtomEnum::WINDOW)
            .is_some()
    }

    fn list(&self) -> CuResult<Vec<NativeWindow>> {
        if !self.available() {
            return Err(CuError::unsupported(
                "window.list",
                "no EWMH window manager",
            ));
        }
        let a = &self.atoms;
        let active = self.active_window();
        let current = self
            .prop32(self.root, a._NET_CURRENT_DESKTOP, AtomEnum::CARDINAL)
            .first()
            .copied();
        let mut out = Vec::new();
        for w in self.client_list() {
            let Some(bounds) = self.bounds_of(w) else {
                continue;
            };
            let state = self.prop32(w, a._NET_WM_STATE, AtomEnum::ATOM);
            let desktop = self
                .prop32(w, a._NET_WM_DESKTOP, AtomEnum::CARDINAL)
                .first()
                .copied();
            let class = self.class_of(w);
            out.push(NativeWindow {
                handle: u64::from(w),
                fingerprint: Fingerprint {
                    pid: self.pid_of(w),
                    class: class.clone(),
                    created: None,
                },
                app_name: class,
                app_bundle_id: None,
                title: self.title_of(w),
                bounds,
                is_focused: active == Some(w),
                is_minimized: state.contains(&a._NET_WM_STATE_HIDDEN),
                is_fullscreen: state.contains(&a._NET_WM_STATE_FULLSCREEN),
                other_desktop: matches!((desktop, current), (Some(d), Some(c)) if d != c && d != u32::MAX),
            });
        }
        Ok(out)
    }

    fn fingerprint(&self, handle: u64) -> CuResult<Option<Fingerprint>> {
        let Ok(w) = u32::try_from(handle) else {
            return Ok(None);
        };
        if !self.client_list().contains(&w) {
            return Ok(None);
        }
        Ok(Some(Fingerprint {
            pid: self.pid_of(w),
            class: self.class_of(w),
            created: None,
        }))
    }

    fn focus(&self, handle: u64, _raise: bool) -> CuResult<()> {
        let w = u32::try_from(handle)
            .map_err(|_| CuError::unsupported("window.focus", "bad handle"))?;
        let ev = ClientMessageEvent::new(32, w, self.atoms._NET_ACTIVE_WINDOW, [2u32, 0, 0, 0, 0]);
        self.conn
            .send_event(
                false,
                self.root,
                EventMask::SUBSTRUCTURE_REDIRECT | EventMask::SUBSTRUCTURE_NOTIFY,
                ev,
            )
            .map_err(|e| CuError::unsupported("window.focus", e.to_string()))?;
        self.conn
            .sync()
            .map_err(|e| CuError::unsupported("window.focus", e.to_string()))
    }
}

fn proc_name(pid: i64) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_owned())
}

fn proc_exe(pid: i64) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

fn on_path(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

impl Apps for X11 {
    fn list(&self, include_background: bool) -> CuResult<Vec<NativeApp>> {
        use std::os::unix::fs::MetadataExt;
        if self.available() && !include_background {
            let active_pid = self.active_window().map(|w| self.pid_of(w));
            let mut counts: std::collections::BTreeMap<i64, u32> = Default::default();
            for w in self.client_list() {
                let pid = self.pid_of(w);
                if pid > 0 {
                    *counts.entry(pid).or_default() += 1;
                }
            }
            return Ok(counts
                .into_iter()
                .filter_map(|(pid, n)| {
                    Some(NativeApp {
                        pid,
                        name: proc_name(pid)?,
                        bundle_id: None,
                        executable_path: proc_exe(pid),
                        is_frontmost: active_pid == Some(pid),
                        window_count: n,
                    })
                })
                .collect());
        }
        let me = std::fs::metadata("/proc/self")
            .map(|m| m.uid())
            .map_err(xerr)?;
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").map_err(xerr)?.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i64>().ok()) else {
                continue;
            };
            if e.metadata().map(|m| m.uid()).ok() != Some(me) {
                continue;
            }
            let (Some(name), Some(exe)) = (proc_name(pid), proc_exe(pid)) else {
                continue;
            };
            out.push(NativeApp {
                pid,
                name,
                bundle_id: None,
                executable_path: Some(exe),
                is_frontmost: false,
                window_count: 0,
            });
        }
        Ok(out)
    }

    fn launch(&self, _bundle: Option<&str>, exe: Option<&str>, args: &[String]) -> CuResult<u32> {
        use std::os::unix::process::CommandExt;
        let Some(exe) = exe.filter(|e| !e.is_empty()) else {
            return Err(CuError::unsupported(
                "app.launch",
                "executable_path is required on Linux",
            ));
        };
        let mut cmd = if let Some(stem) = exe.strip_suffix(".desktop") {
            let id = std::path::Path::new(stem)
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if let Some(l) = on_path("gtk-launch") {
                let mut c = std::process::Command::new(l);
                c.arg(id);
                c
            } else if let Some(l) = on_path("dex") {
                let mut c = std::process::Command::new(l);
                c.arg(exe);
                c
            } else {
                return Err(CuError::unsupported(
                    "app.launch",
                    "no desktop-entry launcher (gtk-launch or dex) on PATH",
                ));
            }
        } else {
            let mut c = std::process::Command::new(exe);
            c.args(args);
            c
        };
        if let Some(d) = &self.display {
            // Only this display: not the user's Wayland desktop either.
            cmd.env("DISPLAY", d).env_remove("WAYLAND_DISPLAY");
        }
        cmd.envs(self.launch_env.iter().map(|(k, v)| (k, v)));
        // The daemon's own settings and secrets (a keychain passphrase, say) are not the
        // application's.
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("AUTOGPT_SHIM_") {
                cmd.env_remove(k);
            }
        }
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0);
        let mut child = cmd
            .spawn()
            .map_err(|e| CuError::internal(format!("cannot start {exe}: {e}")))?;
        let pid = child.id();
        if let Some(hook) = &self.on_launch
            && let Err(e) = (hook.0)(pid)
        {
            // Fail closed: an application that would outlive the daemon does not run.
            let _ = child.kill();
            let _ = child.wait();
            return Err(CuError::internal(format!(
                "cannot supervise {exe}: {e}; it was stopped"
            )));
        }
        // Reap it when it exits.
        std::thread::spawn(move || {
            let _ = child.wait();
        });
        Ok(pid)
    }
}

impl Permissions for X11 {
    fn check(&self, name: &str) -> PermissionState {
        match name {
            "accessibility" | "screen_recording" | "input_monitoring" => PermissionState::Granted,
            _ => PermissionState::NotApplicable,
        }
    }
}
