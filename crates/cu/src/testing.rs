//! Test fixtures for real X servers (COMPUTER_USE_HW.md 11.1): a private Xvfb per test,
//! child processes killed on drop, an event recorder window and a clipboard owner that
//! offers a concealment marker. Used by this crate's and the daemon's integration tests;
//! nothing in the daemon calls it.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::AtomEnum;
use x11rb::protocol::xproto::ConnectionExt as _;
use x11rb::protocol::xproto::CreateWindowAux;
use x11rb::protocol::xproto::EventMask;
use x11rb::protocol::xproto::InputFocus;
use x11rb::protocol::xproto::PropMode;
use x11rb::protocol::xproto::WindowClass;
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

/// A child process killed and reaped on drop.
#[derive(Debug)]
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawns `cmd args` on `display` with output discarded.
pub fn spawn(display: &str, cmd: &str, args: &[&str]) -> Proc {
    Proc(
        Command::new(cmd)
            .args(args)
            .env("DISPLAY", display)
            .env_remove("WAYLAND_DISPLAY")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd}: {e} (is it installed?)")),
    )
}

/// Runs `cmd args` on `display` and returns stdout.
pub fn run(display: &str, cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .env("DISPLAY", display)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Polls `f` every 50 ms until it returns `Some` or `timeout` passes.
pub fn wait_for<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(t) = f() {
            return Some(t);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A private Xvfb on its own display number.
#[derive(Debug)]
pub struct Xvfb {
    /// `:N`.
    pub display: String,
    _proc: Proc,
    extra: Mutex<Vec<Proc>>,
}

impl Xvfb {
    /// Starts `Xvfb :N -screen 0 WxHx24` on a free display number and waits until it
    /// accepts connections; panics if it cannot (tests).
    pub fn start(w: u32, h: u32) -> Xvfb {
        Xvfb::try_start(w, h).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Xvfb::start`] with the failure as an error (for `cargo xtask`, which gives Wine
    /// one X display for the whole Windows test run).
    pub fn try_start(w: u32, h: u32) -> Result<Xvfb, String> {
        let base = 200 + (std::process::id() % 400) * 10;
        for _ in 0..200 {
            let n = base + NEXT.fetch_add(1, Ordering::SeqCst) % 4000;
            if std::path::Path::new(&format!("/tmp/.X{n}-lock")).exists() {
                continue;
            }
            let display = format!(":{n}");
            let mut child = Command::new("Xvfb")
                .args([
                    display.as_str(),
                    "-screen",
                    "0",
                    &format!("{w}x{h}x24"),
                    "-nolisten",
                    "tcp",
                    "-ac",
                    "-noreset",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start Xvfb (is it installed?): {e}"))?;
            let ok = wait_for(Duration::from_secs(20), || {
                if let Ok(Some(_)) = child.try_wait() {
                    return Some(false);
                }
                RustConnection::connect(Some(&display)).ok().map(|_| true)
            });
            if ok == Some(true) {
                return Ok(Xvfb {
                    display,
                    _proc: Proc(child),
                    extra: Mutex::new(Vec::new()),
                });
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        Err("no free X display number".to_owned())
    }

    /// Starts `cmd` on this display; it is stopped with the server.
    pub fn spawn(&self, cmd: &str, args: &[&str]) -> u32 {
        let p = spawn(&self.display, cmd, args);
        let pid = p.0.id();
        self.extra.lock().unwrap().push(p);
        pid
    }

    /// Starts openbox and waits until it manages the screen (EWMH present).
    pub fn openbox(&self) {
        self.spawn("openbox", &["--sm-disable"]);
        let c = self.conn();
        let ok = wait_for(Duration::from_secs(20), || {
            // Fully managed: the check window names itself and the client list exists.
            let root = c.setup().roots[0].root;
            let prop = |w: u32, name: &str, ty: AtomEnum| {
                let a = intern(&c, name);
                c.get_property(false, w, a, ty, 0, 1)
                    .ok()?
                    .reply()
                    .ok()
                    .filter(|r| r.type_ != 0)
            };
            let check = prop(root, "_NET_SUPPORTING_WM_CHECK", AtomEnum::WINDOW)?
                .value32()?
                .next()?;
            let own = prop(check, "_NET_SUPPORTING_WM_CHECK", AtomEnum::WINDOW)?
                .value32()?
                .next()?;
            prop(root, "_NET_CLIENT_LIST", AtomEnum::WINDOW)?;
            (own == check).then_some(())
        });
        assert!(ok.is_some(), "openbox did not start");
    }

    /// A fresh connection.
    pub fn conn(&self) -> RustConnection {
        RustConnection::connect(Some(&self.display)).unwrap().0
    }

    /// Stops a process started with [`Xvfb::spawn`].
    pub fn kill(&self, pid: u32) {
        self.extra.lock().unwrap().retain(|p| p.0.id() != pid);
    }

    /// The pointer position, read independently.
    pub fn pointer(&self) -> [i64; 2] {
        let c = self.conn();
        let root = c.setup().roots[0].root;
        let r = c.query_pointer(root).unwrap().reply().unwrap();
        [i64::from(r.root_x), i64::from(r.root_y)]
    }

    /// The root window's `_NET_ACTIVE_WINDOW`.
    pub fn active_window(&self) -> u32 {
        let c = self.conn();
        let root = c.setup().roots[0].root;
        let a = intern(&c, "_NET_ACTIVE_WINDOW");
        let r = c
            .get_property(false, root, a, AtomEnum::WINDOW, 0, 1)
            .unwrap()
            .reply()
            .unwrap();
        r.value32().and_then(|mut v| v.next()).unwrap_or(0)
    }
}

/// Interns `name`.
pub fn intern(c: &RustConnection, name: &str) -> u32 {
    c.intern_atom(false, name.as_bytes())
        .unwrap()
        .reply()
        .unwrap()
        .atom
}

/// A connection to `display` with an `MIT-MAGIC-COOKIE-1` (the daemon's private desktop).
pub fn connect_authed(display: &str, cookie: &crate::Cookie) -> (RustConnection, usize) {
    crate::x11::connect(Some(display), Some(cookie)).unwrap()
}

/// The cookie in an authority file the daemon wrote for its private desktop (one
/// `FamilyWild` entry: the cookie is its last 16 bytes).
pub fn cookie_of(xauthority: &std::path::Path) -> crate::Cookie {
    let b = std::fs::read(xauthority).unwrap();
    crate::Cookie(b[b.len() - 16..].to_vec())
}

/// One event seen by the recorder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rec {
    /// `key_press`, `key_release`, `button_press`, `button_release`, `motion`.
    pub kind: &'static str,
    /// Server time, ms.
    pub time: u32,
    /// Root coordinates.
    pub root: [i16; 2],
    /// Keycode or button.
    pub detail: u8,
    /// Modifier/button state mask before the event.
    pub state: u16,
    /// When the recorder read it (for latency figures).
    pub seen: Instant,
}

/// A window that records every pointer, button and key event it receives.
#[derive(Debug)]
pub struct Recorder {
    /// What it saw.
    pub events: Arc<Mutex<Vec<Rec>>>,
    /// The window id.
    pub window: u32,
    stop: Arc<AtomicBool>,
}

impl Recorder {
    /// Maps an override-redirect window at `[x, y, w, h]` and gives it the keyboard focus.
    pub fn start(display: &str, geom: [i16; 4]) -> Recorder {
        let (c, n) = RustConnection::connect(Some(display)).unwrap();
        Recorder::start_on(c, n, geom)
    }

    /// [`Recorder::start`] on a display that needs `cookie` (the daemon's private desktop).
    pub fn start_authed(display: &str, cookie: &crate::Cookie, geom: [i16; 4]) -> Recorder {
        let (c, n) = connect_authed(display, cookie);
        Recorder::start_on(c, n, geom)
    }

    fn start_on(c: RustConnection, n: usize, geom: [i16; 4]) -> Recorder {
        let root = c.setup().roots[n].root;
        let w = c.generate_id().unwrap();
        let mask = EventMask::KEY_PRESS
            | EventMask::KEY_RELEASE
            | EventMask::BUTTON_PRESS
            | EventMask::BUTTON_RELEASE
            | EventMask::POINTER_MOTION
            | EventMask::EXPOSURE;
        c.create_window(
            0,
            w,
            root,
            geom[0],
            geom[1],
            geom[2] as u16,
            geom[3] as u16,
            0,
            WindowClass::INPUT_OUTPUT,
            0,
            &CreateWindowAux::new()
                .override_redirect(1)
                .background_pixel(0x0000_00ff)
                .event_mask(mask),
        )
        .unwrap();
        c.map_window(w).unwrap();
        c.sync().unwrap();
        // Wait until it is viewable, then focus it.
        wait_for(Duration::from_secs(10), || {
            let a = c.get_window_attributes(w).ok()?.reply().ok()?;
            (a.map_state == x11rb::protocol::xproto::MapState::VIEWABLE).then_some(())
        })
        .expect("recorder window not mapped");
        c.set_input_focus(InputFocus::PARENT, w, x11rb::CURRENT_TIME)
            .unwrap();
        c.sync().unwrap();
        let events = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (ev, st) = (events.clone(), stop.clone());
        std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                match c.poll_for_event() {
                    Ok(Some(e)) => {
                        let r = match e {
                            Event::KeyPress(e) => Some((
                                "key_press",
                                e.time,
                                e.root_x,
                                e.root_y,
                                e.detail,
                                u16::from(e.state),
                            )),
                            Event::KeyRelease(e) => Some((
                                "key_release",
                                e.time,
                                e.root_x,
                                e.root_y,
                                e.detail,
                                u16::from(e.state),
                            )),
                            Event::ButtonPress(e) => Some((
                                "button_press",
                                e.time,
                                e.root_x,
                                e.root_y,
                                e.detail,
                                u16::from(e.state),
                            )),
                            Event::ButtonRelease(e) => Some((
                                "button_release",
                                e.time,
                                e.root_x,
                                e.root_y,
                                e.detail,
                                u16::from(e.state),
                            )),
                            Event::MotionNotify(e) => {
                                Some(("motion", e.time, e.root_x, e.root_y, 0, u16::from(e.state)))
                            }
                            _ => None,
                        };
                        if let Some((kind, time, x, y, detail, state)) = r {
                            ev.lock().unwrap().push(Rec {
                                kind,
                                time,
                                root: [x, y],
                                detail,
                                state,
                                seen: Instant::now(),
                            });
                        }
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(1)),
                    Err(_) => return,
                }
            }
        });
        Recorder {
            events,
            window: w,
            stop,
        }
    }

    /// A copy of the events so far.
    pub fn take(&self) -> Vec<Rec> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }

    /// Waits until `f` holds on the events seen so far (without consuming them).
    pub fn wait(&self, timeout: Duration, f: impl Fn(&[Rec]) -> bool) -> Vec<Rec> {
        wait_for(timeout, || {
            let e = self.events.lock().unwrap().clone();
            f(&e).then_some(e)
        })
        .unwrap_or_else(|| self.events.lock().unwrap().clone())
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The keycode bound to `keysym` on `display` (independent of the daemon).
pub fn keycode_of(display: &str, keysym: u32) -> Option<u8> {
    let (c, _) = RustConnection::connect(Some(display)).ok()?;
    let s = c.setup();
    let (min, max) = (s.min_keycode, s.max_keycode);
    let r = c
        .get_keyboard_mapping(min, max - min + 1)
        .ok()?
        .reply()
        .ok()?;
    let per = usize::from(r.keysyms_per_keycode);
    r.keysyms
        .chunks(per)
        .position(|k| k.first() == Some(&keysym))
        .map(|i| min + i as u8)
}

/// Owns `CLIPBOARD` offering `text` plus `extra_target` (e.g. a password-manager hint),
/// until dropped.
#[derive(Debug)]
pub struct ClipOwner {
    stop: Arc<AtomicBool>,
}

impl ClipOwner {
    /// Takes ownership and serves conversions from a thread.
    pub fn start(display: &str, text: &str, extra_target: &str) -> ClipOwner {
        let (c, n) = RustConnection::connect(Some(display)).unwrap();
        let root = c.setup().roots[n].root;
        let w = c.generate_id().unwrap();
        c.create_window(
            0,
            w,
            root,
            0,
            0,
            1,
            1,
            0,
            WindowClass::INPUT_ONLY,
            0,
            &CreateWindowAux::new(),
        )
        .unwrap();
        let clip = intern(&c, "CLIPBOARD");
        let targets = intern(&c, "TARGETS");
        let utf8 = intern(&c, "UTF8_STRING");
        let extra = intern(&c, extra_target);
        c.set_selection_owner(w, clip, x11rb::CURRENT_TIME).unwrap();
        c.sync().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let data = text.as_bytes().to_vec();
        std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                let Ok(ev) = c.poll_for_event() else { return };
                let Some(Event::SelectionRequest(e)) = ev else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                let prop = if e.property == 0 {
                    e.target
                } else {
                    e.property
                };
                let ok = if e.target == targets {
                    c.change_property32(
                        PropMode::REPLACE,
                        e.requestor,
                        prop,
                        AtomEnum::ATOM,
                        &[targets, utf8, extra],
                    )
                    .is_ok()
                } else if e.target == utf8 {
                    c.change_property8(PropMode::REPLACE, e.requestor, prop, utf8, &data)
                        .is_ok()
                } else {
                    false
                };
                crate::x11::notify_requestor(&c, &e, if ok { prop } else { 0 });
            }
        });
        ClipOwner { stop }
    }
}

impl Drop for ClipOwner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The desktop of issue 29's screenshot measurements, on an Xvfb of any size (made for
/// 1920x1080): a large xterm full of log text, a digital clock that changes every second,
/// and a window showing a photo-like image (smooth gradients, edges and sensor-like noise,
/// which compresses like a photograph and unlike UI). Its processes and windows live as long
/// as the returned guard (and the server).
pub struct Scene {
    _conn: RustConnection,
}

impl Scene {
    /// Builds the scene on `x` and waits until it is drawn.
    pub fn start(x: &Xvfb) -> Scene {
        let c = x.conn();
        let screen = &c.setup().roots[0];
        let (sw, sh) = (screen.width_in_pixels, screen.height_in_pixels);
        run(
            &x.display,
            "xsetroot",
            &["-mod", "4", "4", "-fg", "#336699", "-bg", "#ddeeff"],
        );
        // A log that scrolls past: timestamps, levels, ids, paths, durations.
        let log = "i=0; while [ $i -lt 4000 ]; do \
            printf '2026-12-05T00:%02d:%02d.%03dZ %-5s worker-%d request_id=%08x GET /api/v1/items/%d?page=%d status=%d in %dms\\n' \
            $((i/60%60)) $((i%60)) $((i*37%1000)) \
            $( [ $((i%7)) -eq 0 ] && echo WARN || echo INFO ) $((i%8)) $((i*2654435761%4294967296)) \
            $((i*13)) $((i%9)) $( [ $((i%11)) -eq 0 ] && echo 500 || echo 200 ) $((i*7%250)); \
            i=$((i+1)); done; sleep 3600";
        let cols = (u32::from(sw) * 2 / 3 / 6).to_string();
        let rows = (u32::from(sh) / 13).saturating_sub(2).to_string();
        x.spawn(
            "xterm",
            &[
                "-geometry",
                &format!("{cols}x{rows}+0+0"),
                "-bg",
                "black",
                "-fg",
                "#c0c0c0",
                "-e",
                "sh",
                "-c",
                log,
            ],
        );
        x.spawn(
            "xclock",
            &[
                "-digital",
                "-update",
                "1",
                "-geometry",
                &format!("300x60+{}+20", sw.saturating_sub(320)),
            ],
        );
        // The photo-like window, right of the log, below the clock: 600x600 on 1920x1080 (a
        // picture in a viewer). Its grain (5 levels a channel) is what photographs keep at
        // screen size; with it, the encoder issue 29 replaced (png, `Compression::Fast`)
        // writes about 1.1 MB here, close to the 1,133 KB base64 (850 KB) it measured.
        let pw = (i32::from(sw) * 5 / 16).max(16) as u16;
        let ph = (i32::from(sh) * 5 / 9).max(16) as u16;
        let (px, py) = (i32::from(sw) - i32::from(pw) - 10, 100);
        let depth = screen.root_depth;
        let root = screen.root;
        let pix = c.generate_id().unwrap();
        c.create_pixmap(depth, pix, root, pw, ph).unwrap();
        let gc = c.generate_id().unwrap();
        c.create_gc(gc, pix, &x11rb::protocol::xproto::CreateGCAux::new())
            .unwrap();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut noise = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 5) as f32 - 2.0
        };
        let strip = 16u16;
        for y0 in (0..ph).step_by(usize::from(strip)) {
            let hh = strip.min(ph - y0);
            let mut data = Vec::with_capacity(usize::from(pw) * usize::from(hh) * 4);
            for y in y0..y0 + hh {
                for xx in 0..pw {
                    let (fx, fy) = (f32::from(xx) / f32::from(pw), f32::from(y) / f32::from(ph));
                    // Sky, hills and a sun: smooth fields with edges, plus grain.
                    let hill = 0.6 + 0.1 * (fx * 9.0).sin() + 0.05 * (fx * 23.0).cos();
                    let (mut r, mut g, mut b) = if fy < hill {
                        (90.0 + 80.0 * fy, 140.0 + 60.0 * fy, 230.0 - 40.0 * fy)
                    } else {
                        let t = (fx * 40.0 + fy * 30.0).sin() * 0.5 + 0.5;
                        (40.0 + 50.0 * t, 110.0 + 60.0 * t * fy, 30.0 + 20.0 * t)
                    };
                    let d = ((fx - 0.7).powi(2) + (fy - 0.2).powi(2)).sqrt();
                    if d < 0.08 {
                        (r, g, b) = (255.0, 230.0, 150.0 + 400.0 * d);
                    }
                    let n = noise();
                    let px = |v: f32| (v + n).clamp(0.0, 255.0) as u8;
                    data.extend_from_slice(&[px(b), px(g), px(r), 0]);
                }
            }
            c.put_image(
                x11rb::protocol::xproto::ImageFormat::Z_PIXMAP,
                pix,
                gc,
                pw,
                hh,
                0,
                y0 as i16,
                0,
                depth,
                &data,
            )
            .unwrap();
        }
        let w = c.generate_id().unwrap();
        c.create_window(
            0,
            w,
            root,
            px as i16,
            py as i16,
            pw,
            ph,
            0,
            WindowClass::INPUT_OUTPUT,
            0,
            &CreateWindowAux::new()
                .override_redirect(1)
                .background_pixmap(pix),
        )
        .unwrap();
        c.map_window(w).unwrap();
        c.sync().unwrap();
        // Let the xterm print its log and the clock draw itself.
        std::thread::sleep(Duration::from_secs(3));
        Scene { _conn: c }
    }
}
