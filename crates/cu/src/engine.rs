//! The OS-independent request logic of COMPUTER_USE_HW.md section 4: gating steps 3-6 of
//! 1.3 (payload refinements, the machine-wide lock, operation checks, execution) and the
//! audit details of section 6. The caller (the daemon) does steps 1-2 and writes the
//! record this module describes.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;

use base64::Engine as _;
use serde_json::Map;
use serde_json::Value;
use shim_protocol::ErrorCode;
use shim_protocol::error::DisplayBounds;
use shim_protocol::limits::MAX_WIRE_BASE64_CONTENT_BYTES;
use shim_protocol::limits::MAX_WIRE_TEXT_CONTENT_BYTES;
use shim_protocol::messages::cu::AppInfo;
use shim_protocol::messages::cu::AppLaunch;
use shim_protocol::messages::cu::AppListRequest;
use shim_protocol::messages::cu::AppListResponse;
use shim_protocol::messages::cu::ClipboardFormat;
use shim_protocol::messages::cu::ClipboardRead;
use shim_protocol::messages::cu::ClipboardReadResponse;
use shim_protocol::messages::cu::ClipboardWrite;
use shim_protocol::messages::cu::CursorPositionResponse;
use shim_protocol::messages::cu::DisplayInfoResponse;
use shim_protocol::messages::cu::ImageFormat;
use shim_protocol::messages::cu::InputAction;
use shim_protocol::messages::cu::InputActionKind as A;
use shim_protocol::messages::cu::MonitorInfo;
use shim_protocol::messages::cu::MouseButton;
use shim_protocol::messages::cu::PermissionsCheckRequest;
use shim_protocol::messages::cu::PermissionsCheckResponse;
use shim_protocol::messages::cu::ScreenshotMeta;
use shim_protocol::messages::cu::ScreenshotRequest;
use shim_protocol::messages::cu::ScreenshotResponse;
use shim_protocol::messages::cu::ScrollDirection;
use shim_protocol::messages::cu::VerticalDirection;
use shim_protocol::messages::cu::WindowFocus;
use shim_protocol::messages::cu::WindowInfo;
use shim_protocol::messages::cu::WindowListRequest;
use shim_protocol::messages::cu::WindowListResponse;

use crate::backend::Button;
use crate::backend::Desktop;
use crate::backend::HostKind;
use crate::backend::Monitor;
use crate::backend::Wheel;
use crate::backend::order_monitors;
use crate::encode;
use crate::error::CuError;
use crate::error::CuResult;
use crate::features::Features;
use crate::keys::Key;
use crate::keys::Modifier;
use crate::keys::parse_chord;
use crate::keys::parse_modifier;
use crate::policy::RateWindow;
use crate::policy::SessionState;
use crate::policy::SharedClock;
use crate::policy::WindowEntry;
use crate::policy::WindowRegistry;
use crate::policy::Writeback;
use crate::policy::WritebackVerdict;
use crate::policy::sha256;
use crate::policy::writeback_verdict;

/// Paste path threshold in characters.
pub const PASTE_THRESHOLD: usize = 200;
/// Pause between typed characters.
pub const TYPING_INTERVAL: Duration = Duration::from_millis(20);
/// Cap of `wait` and `hold_key`.
pub const MAX_HOLD_MS: i64 = 5_000;
/// Pause between the clicks of an X11 triple click.
pub const TRIPLE_CLICK_SPACING: Duration = Duration::from_millis(50);
/// Time per drag segment.
pub const DRAG_SEGMENT: Duration = Duration::from_millis(10);
/// Wait before restoring the clipboard after a paste (the spec's minimum is 50 ms; the
/// target application must have fetched the selection by then).
pub const PASTE_RESTORE_DELAY: Duration = Duration::from_millis(300);
/// Minimum wait before the restore (4.2.2 step 5).
pub const PASTE_MIN_WAIT: Duration = Duration::from_millis(50);
/// Longest wait for the target application to fetch the pasted text (X11).
pub const PASTE_FETCH_TIMEOUT: Duration = Duration::from_secs(3);
/// Most windows returned by one listing.
pub const MAX_WINDOWS: usize = 500;

/// Local settings of this area.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// `enable_clipboard`.
    pub enable_clipboard: bool,
    /// `enable_clipboard_read_foreign`.
    pub enable_clipboard_read_foreign: bool,
    /// `max_screenshots_per_minute`.
    pub max_screenshots_per_minute: u32,
    /// `computer_use_masked_regions`, desktop rectangles blacked out in every capture.
    pub masked_regions: Vec<[i64; 4]>,
}

/// One computer-use request, decoded.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub enum Request {
    Screenshot(ScreenshotRequest),
    Input(InputAction),
    CursorPosition,
    DisplayInfo,
    WindowList(WindowListRequest),
    WindowFocus(WindowFocus),
    AppList(AppListRequest),
    AppLaunch(AppLaunch),
    ClipboardRead(ClipboardRead),
    ClipboardWrite(ClipboardWrite),
    Permissions(PermissionsCheckRequest),
}

impl Request {
    /// The wire type, which is also the audit `op`.
    pub fn op(&self) -> &'static str {
        match self {
            Request::Screenshot(_) => "SCREENSHOT_REQUEST",
            Request::Input(_) => "INPUT_ACTION",
            Request::CursorPosition => "CURSOR_POSITION_REQUEST",
            Request::DisplayInfo => "DISPLAY_INFO_REQUEST",
            Request::WindowList(_) => "WINDOW_LIST_REQUEST",
            Request::WindowFocus(_) => "WINDOW_FOCUS",
            Request::AppList(_) => "APP_LIST_REQUEST",
            Request::AppLaunch(_) => "APP_LAUNCH",
            Request::ClipboardRead(_) => "CLIPBOARD_READ",
            Request::ClipboardWrite(_) => "CLIPBOARD_WRITE",
            Request::Permissions(_) => "PERMISSIONS_CHECK_REQUEST",
        }
    }
}

/// A successful reply.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Reply {
    Screenshot(ScreenshotResponse),
    /// `ACK {ok: true}`.
    Ack,
    Cursor(CursorPositionResponse),
    Displays(DisplayInfoResponse),
    Windows(WindowListResponse),
    Apps(AppListResponse),
    Clipboard(ClipboardReadResponse),
    Permissions(PermissionsCheckResponse),
}

/// The audit record a request produces (section 6).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    /// `op`.
    pub op: &'static str,
    /// `details`.
    pub details: Map<String, Value>,
    /// `result.duration_ms`.
    pub duration: Duration,
}

/// The result of one request: the reply, and the record to write first (`None` for the
/// unaudited refusals of gating step 3).
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Reply or error.
    pub reply: CuResult<Reply>,
    /// The audit record.
    pub audit: Option<AuditRecord>,
}

/// What one connection contributes to a request.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// The session runtime's state.
    pub session: &'a SessionState,
    /// The lists advertised at this connection's HELLO.
    pub features: &'a Features,
    /// The effective `max_file_size_bytes`.
    pub max_file_size: u64,
}

/// The machine-wide engine: one per process.
pub struct Engine {
    desktop: Desktop,
    cfg: EngineConfig,
    clock: SharedClock,
    lock: Mutex<()>,
    rate: Mutex<RateWindow>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("desktop", &self.desktop)
            .finish_non_exhaustive()
    }
}

fn gate(f: &Features, name: &str) -> CuResult<()> {
    if f.has(name) {
        Ok(())
    } else {
        Err(CuError::not_advertised(name))
    }
}

fn v<T: serde::Serialize>(x: T) -> Value {
    serde_json::to_value(x).unwrap_or(Value::Null)
}

fn details(pairs: Vec<(&str, Value)>) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

fn sleep_ms(ms: i64) {
    std::thread::sleep(Duration::from_millis(
        u64::try_from(ms.clamp(0, MAX_HOLD_MS)).unwrap_or(0),
    ));
}

fn button_of(b: Option<MouseButton>) -> Button {
    match b {
        Some(MouseButton::Middle) => Button::Middle,
        Some(MouseButton::Right) => Button::Right,
        _ => Button::Left,
    }
}

/// The points of a drag after X11 thinning (4.2): every `max(1, n/100)`-th point, always
/// ending at the last.
pub fn thin_path(path: &[[i64; 2]]) -> Vec<[i64; 2]> {
    let n = path.len();
    let step = (n / 100).max(1);
    let mut out: Vec<[i64; 2]> = path.iter().step_by(step).copied().collect();
    if let Some(last) = path.last()
        && out.last() != Some(last)
    {
        out.push(*last);
    }
    out
}

/// Scroll direction and ticks of 4.2.3.
pub fn scroll_plan(a: &InputAction) -> (Wheel, u64) {
    let dir = match (a.scroll_direction, a.direction) {
        (Some(ScrollDirection::Up), _) => Wheel::Up,
        (Some(ScrollDirection::Down), _) => Wheel::Down,
        (Some(ScrollDirection::Left), _) => Wheel::Left,
        (Some(ScrollDirection::Right), _) => Wheel::Right,
        (None, Some(VerticalDirection::Up)) => Wheel::Up,
        _ => Wheel::Down,
    };
    let ticks = match (a.scroll_amount, a.clicks) {
        (Some(n), _) => n,
        (None, Some(c)) if c != 0 => c,
        _ => 3,
    };
    let dir = if ticks < 0 {
        match dir {
            Wheel::Up => Wheel::Down,
            Wheel::Down => Wheel::Up,
            Wheel::Left => Wheel::Right,
            Wheel::Right => Wheel::Left,
        }
    } else {
        dir
    };
    (dir, ticks.unsigned_abs())
}

/// Modifiers held for the duration of a click or scroll; released in reverse order even
/// when an event fails.
struct Held<'a> {
    desktop: &'a Desktop,
    keys: Vec<Key>,
}

impl<'a> Held<'a> {
    fn press(desktop: &'a Desktop, keys: &[Key]) -> CuResult<Held<'a>> {
        let mut held = Held {
            desktop,
            keys: Vec::new(),
        };
        for k in keys {
            desktop.input.key(*k, true)?;
            held.keys.push(*k);
        }
        Ok(held)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        for k in self.keys.iter().rev() {
            let _ = self.desktop.input.key(*k, false);
        }
    }
}

impl Engine {
    /// Wraps a backend.
    pub fn new(desktop: Desktop, cfg: EngineConfig, clock: SharedClock) -> Engine {
        Engine {
            rate: Mutex::new(RateWindow::new(cfg.max_screenshots_per_minute)),
            desktop,
            cfg,
            clock,
            lock: Mutex::new(()),
        }
    }

    /// The backend.
    pub fn desktop(&self) -> &Desktop {
        &self.desktop
    }

    /// The lists to advertise at a HELLO, re-probed now (2.2).
    pub fn features(&self) -> Features {
        let clipboard = self.cfg.enable_clipboard && self.desktop.clipboard.available();
        let mut f = Features::for_host(
            self.desktop.kind,
            self.desktop.windows.available(),
            clipboard,
        );
        // Only what answers (2.2): an operation the backend always refuses is not listed.
        if !self.desktop.displays.cursor_answers() {
            f.fine.retain(|n| *n != "cursor.position");
        }
        if !self.desktop.windows.focus_answers() {
            f.fine.retain(|n| *n != "window.focus");
        }
        f
    }

    /// `screen_resolution`: the primary display's DCS size.
    pub fn screen_resolution(&self) -> Option<[i64; 2]> {
        self.monitors().ok()?.first().map(|m| m.logical_size)
    }

    fn monitors(&self) -> CuResult<Vec<Monitor>> {
        let m = order_monitors(self.desktop.displays.monitors()?);
        if m.is_empty() {
            return Err(CuError::unsupported("display.info", "no displays detected"));
        }
        Ok(m)
    }

    fn check_point(&self, monitors: &[Monitor], p: [i64; 2]) -> CuResult<()> {
        if monitors.iter().any(|m| m.contains(p)) {
            return Ok(());
        }
        Err(CuError::out_of_bounds(
            p,
            monitors
                .iter()
                .enumerate()
                .map(|(i, m)| DisplayBounds {
                    index: u32::try_from(i).unwrap_or(u32::MAX),
                    origin: m.origin,
                    size: m.logical_size,
                })
                .collect(),
        ))
    }

    /// Gating step 3 refinements: unknown action, modifier or key name (not audited).
    fn precheck(&self, req: &Request) -> CuResult<()> {
        if let Request::Input(a) = req {
            if let A::Unknown(name) = &a.action {
                return Err(CuError::unsupported(
                    name.clone(),
                    format!("unknown action '{name}'"),
                ));
            }
            for m in a.modifiers.iter().flatten() {
                parse_modifier(m)?;
            }
            if matches!(a.action, A::Key | A::HoldKey)
                && let Some(k) = &a.key
                && !k.trim().is_empty()
            {
                parse_chord(k)?;
            }
        }
        Ok(())
    }

    /// Runs one request: steps 3-6 of 1.3.
    pub fn handle(&self, ctx: Ctx<'_>, req: Request) -> Outcome {
        if let Err(e) = self.precheck(&req) {
            return Outcome {
                reply: Err(e),
                audit: None,
            };
        }
        // Step 4: one computer-use operation at a time on the machine.
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let started = Instant::now();
        let op = req.op();
        let (reply, details) = match req {
            Request::Screenshot(r) => self.screenshot(ctx, &r),
            Request::Input(a) => {
                let d = input_details(&a);
                (self.input(ctx, &a), d)
            }
            Request::CursorPosition => (self.cursor(ctx), Map::new()),
            Request::DisplayInfo => match self.display_info(ctx) {
                Ok(r) => {
                    let d = details(vec![("monitor_count", v(r.monitors.len()))]);
                    (Ok(Reply::Displays(r)), d)
                }
                Err(e) => (Err(e), Map::new()),
            },
            Request::WindowList(r) => self.window_list(ctx, &r),
            Request::WindowFocus(r) => {
                let d = details(vec![("window_id", v(&r.window_id)), ("raise", v(r.raise))]);
                (self.window_focus(ctx, &r), d)
            }
            Request::AppList(r) => self.app_list(ctx, &r),
            Request::AppLaunch(r) => self.app_launch(ctx, &r),
            Request::ClipboardRead(r) => self.clipboard_read(ctx, &r),
            Request::ClipboardWrite(r) => {
                let d = details(vec![
                    ("format", v(r.format.as_str())),
                    ("size_bytes", v(r.content.len())),
                ]);
                (self.clipboard_write(ctx, &r), d)
            }
            Request::Permissions(r) => {
                let d = details(vec![("permissions", v(&r.permissions))]);
                (self.permissions(ctx, &r), d)
            }
        };
        Outcome {
            reply,
            audit: Some(AuditRecord {
                op,
                details,
                duration: started.elapsed(),
            }),
        }
    }

    // ---- screenshots (4.1) ----

    fn screenshot(
        &self,
        ctx: Ctx<'_>,
        r: &ScreenshotRequest,
    ) -> (CuResult<Reply>, Map<String, Value>) {
        let mut d = details(vec![
            ("monitor", v(r.monitor)),
            ("quality", v(r.quality)),
            ("region", v(r.region)),
            ("window_id", v(&r.window_id)),
            ("format", v(r.format.as_str())),
            ("image_bytes_returned", v(0)),
        ]);
        let res = self.screenshot_inner(ctx, r);
        match res {
            Ok((resp, n)) => {
                d.insert("image_bytes_returned".into(), v(n));
                d.insert("width".into(), v(resp.width));
                d.insert("height".into(), v(resp.height));
                (Ok(Reply::Screenshot(resp)), d)
            }
            Err((e, n)) => {
                d.insert("image_bytes_returned".into(), v(n));
                (Err(e), d)
            }
        }
    }

    fn screenshot_inner(
        &self,
        ctx: Ctx<'_>,
        r: &ScreenshotRequest,
    ) -> Result<(ScreenshotResponse, usize), (CuError, usize)> {
        let now = self.clock.now();
        {
            let mut rate = self.rate.lock().unwrap_or_else(|p| p.into_inner());
            if !rate.admit(now) {
                return Err((
                    CuError::plain(
                        ErrorCode::ShimOverloaded,
                        format!("Screenshot rate limit exceeded ({}/minute).", rate.limit()),
                    ),
                    0,
                ));
            }
        }
        let e0 = |e: CuError| (e, 0usize);
        if r.region.is_some() && r.window_id.is_some() {
            return Err(e0(CuError::unsupported(
                "screenshot.region+window",
                "region and window_id are mutually exclusive",
            )));
        }
        gate(ctx.features, "screenshot").map_err(e0)?;
        if r.region.is_some() {
            gate(ctx.features, "screenshot.region").map_err(e0)?;
        }
        if r.window_id.is_some() {
            gate(ctx.features, "screenshot.window").map_err(e0)?;
        }
        let (img, origin, monitor, logical_size, scale) = if let Some(id) = &r.window_id {
            let entry = self.verify_window(ctx, id).map_err(e0)?;
            let (img, origin) = self
                .desktop
                .capture
                .capture_window(entry.handle)
                .map_err(e0)?;
            let size = [i64::from(img.width), i64::from(img.height)];
            // 4.1 step 4: a window capture is in its own pixels, scale 1.
            (img, origin, entry.monitor, size, 1.0)
        } else {
            let monitors = order_monitors(self.desktop.displays.monitors().map_err(e0)?);
            if monitors.is_empty() {
                return Err(e0(CuError::unsupported(
                    "screenshot",
                    "no displays detected",
                )));
            }
            let idx = usize::try_from(r.monitor)
                .ok()
                .filter(|i| *i < monitors.len())
                .unwrap_or(0);
            let m = &monitors[idx];
            let [ox, oy] = m.origin;
            let [w, h] = m.logical_size;
            let rect = match r.region {
                None => [ox, oy, ox + w, oy + h],
                Some([x1, y1, x2, y2]) => {
                    let c = [x1.max(ox), y1.max(oy), x2.min(ox + w), y2.min(oy + h)];
                    if c[2] <= c[0] || c[3] <= c[1] {
                        return Err(e0(CuError::unsupported(
                            "screenshot.region",
                            format!(
                                "region [{x1}, {y1}, {x2}, {y2}] does not intersect monitor {idx}"
                            ),
                        )));
                    }
                    c
                }
            };
            let img = self
                .desktop
                .capture
                .capture(rect, r.include_cursor)
                .map_err(e0)?;
            let idx = i64::try_from(idx).unwrap_or(0);
            // The backend's scale of the target display: image pixels per DCS unit (3.4).
            (img, [rect[0], rect[1]], idx, m.logical_size, m.scale)
        };
        let mut img = img;
        encode::mask(&mut img, origin, &self.cfg.masked_regions);
        let (bytes, mime) = match r.format {
            ImageFormat::Png => (encode::png(&img).map_err(e0)?, "image/png"),
            _ => (encode::jpeg(&img, r.quality).map_err(e0)?, "image/jpeg"),
        };
        let limit = usize::try_from(ctx.max_file_size)
            .unwrap_or(usize::MAX)
            .min(MAX_WIRE_BASE64_CONTENT_BYTES);
        if bytes.len() > limit {
            let n = bytes.len();
            return Err((
                CuError::plain(
                    ErrorCode::FileTooLarge,
                    format!("Screenshot is {n} bytes; limit is {limit} bytes."),
                ),
                n,
            ));
        }
        let n = bytes.len();
        Ok((
            ScreenshotResponse {
                image_base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
                mime_type: mime.to_owned(),
                width: img.width,
                height: img.height,
                monitor,
                region: if r.window_id.is_some() {
                    None
                } else {
                    r.region
                },
                display_scale: scale,
                logical_size: Some(logical_size),
                meta: ScreenshotMeta {
                    origin,
                    display_id: monitor,
                },
            },
            n,
        ))
    }

    // ---- input (4.2) ----

    fn input(&self, ctx: Ctx<'_>, a: &InputAction) -> CuResult<Reply> {
        let f = ctx.features;
        if a.action == A::Wait {
            gate(f, "input.wait")?;
            sleep_ms(a.duration_ms.unwrap_or(0));
            return Ok(Reply::Ack);
        }
        // Step 2: feature gate.
        gate(f, "input")?;
        if a.modifiers.as_ref().is_some_and(|m| !m.is_empty()) {
            gate(f, "input.click.modifiers")?;
        }
        if a.button.is_some() {
            gate(f, "input.click.button")?;
        }
        match a.action {
            A::MouseDown | A::MouseUp => gate(f, "input.mouse.down_up")?,
            A::Drag => gate(f, "input.drag.path")?,
            A::HoldKey => gate(f, "input.key.hold")?,
            _ => {}
        }
        if a.scroll_amount.is_some() || a.scroll_direction.is_some() {
            gate(f, "input.scroll.amount")?;
        }
        // Step 3: every point before any event.
        if a.coordinate.is_some() || a.path.is_some() {
            let monitors = self.monitors()?;
            if let Some(c) = a.coordinate {
                self.check_point(&monitors, c)?;
            }
            for p in a.path.iter().flatten() {
                self.check_point(&monitors, *p)?;
            }
        }
        // Step 4.
        self.desktop.permissions.input_allowed()?;
        // Step 5: required fields; step 6: inject.
        let name = a.action.as_str().to_owned();
        let required =
            |field: &str| CuError::unsupported(name.clone(), format!("{field} is required"));
        let input = &self.desktop.input;
        let mods: Vec<Key> = a
            .modifiers
            .iter()
            .flatten()
            .map(|m| parse_modifier(m).map(Key::Mod))
            .collect::<CuResult<_>>()?;
        // Validate before acting: a button this backend cannot press fails before the
        // pointer moves.
        let button = match a.action {
            A::MiddleClick => Some(Button::Middle),
            A::RightClick => Some(Button::Right),
            A::LeftClick | A::DoubleClick | A::TripleClick => Some(Button::Left),
            A::MouseDown | A::MouseUp | A::Drag => Some(button_of(a.button)),
            _ => None,
        };
        if let Some(b) = button
            && !input.has_button(b)
        {
            return Err(CuError::unsupported(
                "input.click.button",
                format!("the {b:?} button cannot be pressed on this OS in this build"),
            ));
        }
        match a.action {
            A::LeftClick | A::RightClick | A::MiddleClick | A::DoubleClick | A::TripleClick => {
                let c = a.coordinate.ok_or_else(|| required("coordinate"))?;
                let (b, n) = match a.action {
                    A::RightClick => (Button::Right, 1),
                    A::MiddleClick => (Button::Middle, 1),
                    A::DoubleClick => (Button::Left, 2),
                    A::TripleClick => (Button::Left, 3),
                    _ => (Button::Left, 1),
                };
                input.move_to(c)?;
                let _held = Held::press(&self.desktop, &mods)?;
                for i in 0..n {
                    if i > 0 && n == 3 {
                        std::thread::sleep(TRIPLE_CLICK_SPACING);
                    }
                    input.click_button(b, true, i + 1)?;
                    input.click_button(b, false, i + 1)?;
                }
            }
            A::MouseMove => input.move_to(a.coordinate.ok_or_else(|| required("coordinate"))?)?,
            A::MouseDown | A::MouseUp => {
                let c = a.coordinate.ok_or_else(|| required("coordinate"))?;
                input.move_to(c)?;
                input.button(button_of(a.button), a.action == A::MouseDown)?;
            }
            A::Drag => {
                let path = a
                    .path
                    .as_deref()
                    .filter(|p| !p.is_empty())
                    .ok_or_else(|| required("path"))?;
                let b = button_of(a.button);
                let pts = thin_path(path);
                input.move_to(pts[0])?;
                input.button(b, true)?;
                let mut res = Ok(());
                for p in pts.iter().skip(1) {
                    std::thread::sleep(DRAG_SEGMENT);
                    if let Err(e) = input.move_to(*p) {
                        res = Err(e);
                        break;
                    }
                }
                // The release happens even if a move failed.
                let released = input.button(b, false);
                res?;
                released?;
            }
            A::Type => {
                let text = a.text.as_deref().ok_or_else(|| required("text"))?;
                self.type_text(ctx, text, a.paste, a.preserve_clipboard)?;
            }
            A::Key | A::HoldKey => {
                let key = a
                    .key
                    .as_deref()
                    .filter(|k| !k.trim().is_empty())
                    .ok_or_else(|| required("key"))?;
                let keys = self.chord_keys(key)?;
                let held = Held::press(&self.desktop, &keys)?;
                if a.action == A::HoldKey {
                    sleep_ms(a.duration_ms.unwrap_or(0));
                }
                drop(held);
            }
            A::Scroll => {
                let (dir, ticks) = scroll_plan(a);
                if let Some(c) = a.coordinate {
                    input.move_to(c)?;
                }
                let _held = Held::press(&self.desktop, &mods)?;
                for _ in 0..ticks {
                    input.scroll(dir)?;
                }
            }
            A::Wait | A::Unknown(_) => {}
        }
        Ok(Reply::Ack)
    }

    /// A chord's keys, with Shift added for shifted characters (4.2.1).
    fn chord_keys(&self, key: &str) -> CuResult<Vec<Key>> {
        let mut keys = parse_chord(key)?;
        let has_shift = keys.contains(&Key::Mod(Modifier::Shift));
        if !has_shift
            && let Some(pos) = keys
                .iter()
                .position(|k| matches!(k, Key::Char(c) if self.desktop.input.needs_shift(*c)))
        {
            keys.insert(pos, Key::Mod(Modifier::Shift));
        }
        Ok(keys)
    }

    fn type_text(&self, ctx: Ctx<'_>, text: &str, paste: bool, preserve: bool) -> CuResult<()> {
        if paste
            && text.chars().count() >= PASTE_THRESHOLD
            && self.cfg.enable_clipboard
            && self.desktop.clipboard.available()
        {
            return self.paste(ctx, text, preserve);
        }
        let input = &self.desktop.input;
        let mut first = true;
        let mut chars = text.chars().peekable();
        let res = (|| {
            while let Some(c) = chars.next() {
                if !first {
                    std::thread::sleep(TYPING_INTERVAL);
                }
                first = false;
                match c {
                    '\r' => {
                        if chars.peek() == Some(&'\n') {
                            chars.next();
                        }
                        input.key(Key::Named(crate::keys::Named::Enter), true)?;
                        input.key(Key::Named(crate::keys::Named::Enter), false)?;
                    }
                    '\n' => {
                        input.key(Key::Named(crate::keys::Named::Enter), true)?;
                        input.key(Key::Named(crate::keys::Named::Enter), false)?;
                    }
                    '\t' => {
                        input.key(Key::Named(crate::keys::Named::Tab), true)?;
                        input.key(Key::Named(crate::keys::Named::Tab), false)?;
                    }
                    c => input.type_char(c)?,
                }
            }
            Ok(())
        })();
        input.end_typing();
        res
    }

    fn paste(&self, ctx: Ctx<'_>, text: &str, preserve: bool) -> CuResult<()> {
        let clip = &self.desktop.clipboard;
        let snapshot = if preserve { clip.read().ok() } else { None };
        let counter = clip.write(text)?;
        if let Ok(mut w) = ctx.session.writeback.lock() {
            *w = Some(Writeback {
                hash: sha256(text),
                counter,
                at: self.clock.now(),
            });
        }
        let chord = match self.desktop.kind {
            HostKind::MacOs => Key::Mod(Modifier::Super),
            _ => Key::Mod(Modifier::Ctrl),
        };
        let served_before = clip.served();
        drop(Held::press(&self.desktop, &[chord, Key::Char('v')])?);
        if let Some(snap) = snapshot
            && let Some(prior) = snap.text
        {
            std::thread::sleep(PASTE_MIN_WAIT);
            match served_before {
                // Restore once the target fetched the text (bounded).
                Some(before) => {
                    let deadline = Instant::now() + PASTE_FETCH_TIMEOUT;
                    while clip.served().is_some_and(|n| n <= before) && Instant::now() < deadline {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
                None => std::thread::sleep(PASTE_RESTORE_DELAY),
            }
            let now = clip.counter();
            let changed = matches!((snap.counter, now), (Some(s), Some(n)) if n > s + 1);
            // Concealed content is never republished without its marker; the restore
            // never replaces the writeback record.
            if !changed && snap.marker.is_none() {
                clip.write(&prior)?;
            }
        }
        Ok(())
    }

    // ---- cursor and displays (4.3, 4.4) ----

    fn cursor(&self, ctx: Ctx<'_>) -> CuResult<Reply> {
        gate(ctx.features, "cursor.position")?;
        let p = self.desktop.displays.cursor()?;
        let monitors = order_monitors(self.desktop.displays.monitors()?);
        let monitor = monitors.iter().position(|m| m.contains(p)).unwrap_or(0);
        Ok(Reply::Cursor(CursorPositionResponse {
            x: p[0],
            y: p[1],
            monitor: i64::try_from(monitor).unwrap_or(0),
        }))
    }

    fn display_info(&self, ctx: Ctx<'_>) -> CuResult<DisplayInfoResponse> {
        gate(ctx.features, "display.info")?;
        let monitors = self.monitors()?;
        Ok(DisplayInfoResponse {
            monitors: monitors
                .into_iter()
                .enumerate()
                .map(|(i, m)| MonitorInfo {
                    index: u32::try_from(i).unwrap_or(u32::MAX),
                    primary: m.primary,
                    physical_size: m.physical_size,
                    logical_size: m.logical_size,
                    scale: (m.scale * 100.0).round() / 100.0,
                    origin: m.origin,
                })
                .collect(),
        })
    }

    // ---- windows (4.5) ----

    fn verify_window(&self, ctx: Ctx<'_>, id: &str) -> CuResult<WindowEntry> {
        let entry = ctx
            .session
            .windows
            .lock()
            .ok()
            .and_then(|r| r.get(id).cloned())
            .ok_or_else(|| CuError::unknown_window(id))?;
        let fresh = self.desktop.windows.fingerprint(entry.handle)?;
        if fresh.as_ref() != Some(&entry.fingerprint) {
            if let Ok(mut r) = ctx.session.windows.lock() {
                r.remove(id);
            }
            return Err(CuError::gone_window(id));
        }
        Ok(entry)
    }

    fn window_list(
        &self,
        ctx: Ctx<'_>,
        r: &WindowListRequest,
    ) -> (CuResult<Reply>, Map<String, Value>) {
        let mut d = details(vec![
            ("app_bundle_id", v(&r.app_bundle_id)),
            ("include_minimized", v(r.include_minimized)),
            ("include_offscreen", v(r.include_offscreen)),
        ]);
        let res = (|| {
            gate(ctx.features, "window.list")?;
            let monitors = order_monitors(self.desktop.displays.monitors()?);
            let all = self
                .desktop
                .windows
                .list()
                .map_err(|e| CuError::unsupported("window.list", e.message))?;
            let mut windows = Vec::new();
            let mut entries = HashMap::new();
            let mut truncated = false;
            for w in all {
                if w.is_minimized && !r.include_minimized {
                    continue;
                }
                let centre = [
                    (w.bounds[0] + w.bounds[2]) / 2,
                    (w.bounds[1] + w.bounds[3]) / 2,
                ];
                let on = monitors.iter().position(|m| m.contains(centre));
                let offscreen = w.other_desktop
                    || !monitors.iter().any(|m| {
                        w.bounds[0] < m.origin[0] + m.logical_size[0]
                            && m.origin[0] < w.bounds[2]
                            && w.bounds[1] < m.origin[1] + m.logical_size[1]
                            && m.origin[1] < w.bounds[3]
                    });
                if offscreen && !r.include_offscreen {
                    continue;
                }
                if self.desktop.kind == HostKind::MacOs
                    && let Some(b) = &r.app_bundle_id
                    && w.app_bundle_id.as_ref() != Some(b)
                {
                    continue;
                }
                if windows.len() == MAX_WINDOWS {
                    truncated = true;
                    break;
                }
                let id = WindowRegistry::mint();
                let monitor = i64::try_from(on.unwrap_or(0)).unwrap_or(0);
                entries.insert(
                    id.clone(),
                    WindowEntry {
                        handle: w.handle,
                        fingerprint: w.fingerprint.clone(),
                        bounds: w.bounds,
                        monitor,
                    },
                );
                windows.push(WindowInfo {
                    window_id: id,
                    pid: w.fingerprint.pid,
                    app_name: w.app_name,
                    app_bundle_id: w.app_bundle_id,
                    title: w.title.filter(|t| !t.is_empty()),
                    bounds: w.bounds,
                    monitor,
                    is_focused: w.is_focused,
                    is_minimized: w.is_minimized,
                    is_fullscreen: w.is_fullscreen,
                });
            }
            if let Ok(mut reg) = ctx.session.windows.lock() {
                reg.replace(entries);
            }
            Ok(WindowListResponse { windows, truncated })
        })();
        match res {
            Ok(resp) => {
                d.insert("windows_returned".into(), v(resp.windows.len()));
                (Ok(Reply::Windows(resp)), d)
            }
            Err(e) => (Err(e), d),
        }
    }

    fn window_focus(&self, ctx: Ctx<'_>, r: &WindowFocus) -> CuResult<Reply> {
        gate(ctx.features, "window.focus")?;
        let entry = self.verify_window(ctx, &r.window_id)?;
        self.desktop.permissions.input_allowed()?;
        self.desktop.windows.focus(entry.handle, r.raise)?;
        Ok(Reply::Ack)
    }

    // ---- applications (4.6) ----

    fn app_list(&self, ctx: Ctx<'_>, r: &AppListRequest) -> (CuResult<Reply>, Map<String, Value>) {
        let mut d = details(vec![("include_background", v(r.include_background))]);
        let res = gate(ctx.features, "app.list")
            .and_then(|()| self.desktop.apps.list(r.include_background));
        match res {
            Ok(apps) => {
                d.insert("apps_returned".into(), v(apps.len()));
                let apps = apps
                    .into_iter()
                    .map(|a| AppInfo {
                        pid: a.pid,
                        name: a.name,
                        bundle_id: a.bundle_id,
                        executable_path: a.executable_path,
                        is_frontmost: a.is_frontmost,
                        window_count: a.window_count,
                    })
                    .collect();
                (Ok(Reply::Apps(AppListResponse { apps })), d)
            }
            Err(e) => (Err(e), d),
        }
    }

    fn app_launch(&self, ctx: Ctx<'_>, r: &AppLaunch) -> (CuResult<Reply>, Map<String, Value>) {
        let mut d = details(vec![
            ("bundle_id", v(&r.bundle_id)),
            ("executable_path", v(&r.executable_path)),
            ("args_count", v(r.args.len())),
            ("activate", v(r.activate)),
        ]);
        let res = gate(ctx.features, "app.launch").and_then(|()| {
            self.desktop.apps.launch(
                r.bundle_id.as_deref(),
                r.executable_path.as_deref(),
                &r.args,
            )
        });
        match res {
            Ok(pid) => {
                d.insert("pid".into(), v(pid));
                (Ok(Reply::Ack), d)
            }
            Err(e) => (Err(e), d),
        }
    }

    // ---- clipboard (4.7) ----

    fn clipboard_read(
        &self,
        ctx: Ctx<'_>,
        r: &ClipboardRead,
    ) -> (CuResult<Reply>, Map<String, Value>) {
        let mut d = details(vec![("format", v(r.format.as_str())), ("size_bytes", v(0))]);
        match self.clipboard_read_inner(ctx, r) {
            Ok(content) => {
                d.insert("size_bytes".into(), v(content.len()));
                (
                    Ok(Reply::Clipboard(ClipboardReadResponse {
                        format: ClipboardFormat::Text,
                        size_bytes: u64::try_from(content.len()).unwrap_or(u64::MAX),
                        content,
                    })),
                    d,
                )
            }
            Err((e, n)) => {
                d.insert("size_bytes".into(), v(n));
                (Err(e), d)
            }
        }
    }

    /// 4.7.4; the error carries the size read (0 when nothing was read).
    fn clipboard_read_inner(
        &self,
        ctx: Ctx<'_>,
        r: &ClipboardRead,
    ) -> Result<String, (CuError, usize)> {
        let e0 = |e: CuError| (e, 0usize);
        if !self.cfg.enable_clipboard {
            return Err(e0(CuError::unsupported(
                "clipboard.read",
                "--enable-clipboard not set",
            )));
        }
        if r.format != ClipboardFormat::Text {
            return Err(e0(CuError::unsupported(
                "clipboard.read",
                "format 'image' not supported",
            )));
        }
        gate(ctx.features, "clipboard.read").map_err(e0)?;
        let live = self.desktop.clipboard.read().map_err(e0)?;
        if let Some(marker) = live.marker {
            return Err(e0(CuError::concealed("concealed_type", Some(marker), None)));
        }
        let content = if self.cfg.enable_clipboard_read_foreign {
            live.text.unwrap_or_default()
        } else {
            let rec = ctx.session.writeback.lock().ok().and_then(|w| w.clone());
            match writeback_verdict(
                rec.as_ref(),
                self.clock.now(),
                live.text.as_deref(),
                live.counter,
            ) {
                WritebackVerdict::Allow => live.text.unwrap_or_default(),
                WritebackVerdict::NoRecord => {
                    return Err(e0(CuError::concealed("writeback_only", None, None)));
                }
                WritebackVerdict::Expired(age) => {
                    return Err(e0(CuError::concealed("writeback_only", None, Some(age))));
                }
                WritebackVerdict::Overwritten => {
                    return Err(e0(CuError::concealed("writeback_overwritten", None, None)));
                }
            }
        };
        let n = content.len();
        let limit = usize::try_from(ctx.max_file_size)
            .unwrap_or(usize::MAX)
            .min(MAX_WIRE_TEXT_CONTENT_BYTES);
        if n > limit {
            return Err((
                CuError::plain(
                    ErrorCode::FileTooLarge,
                    format!("Clipboard content is {n} bytes; limit is {limit} bytes."),
                ),
                n,
            ));
        }
        Ok(content)
    }

    fn clipboard_write(&self, ctx: Ctx<'_>, r: &ClipboardWrite) -> CuResult<Reply> {
        let n = r.content.len();
        if u64::try_from(n).unwrap_or(u64::MAX) > ctx.max_file_size {
            return Err(CuError::plain(
                ErrorCode::FileTooLarge,
                format!(
                    "Clipboard content is {n} bytes; limit is {} bytes.",
                    ctx.max_file_size
                ),
            ));
        }
        if !self.cfg.enable_clipboard {
            return Err(CuError::unsupported(
                "clipboard.write",
                "--enable-clipboard not set",
            ));
        }
        if r.format != ClipboardFormat::Text {
            return Err(CuError::unsupported(
                "clipboard.write",
                "format 'image' not supported",
            ));
        }
        gate(ctx.features, "clipboard.write")?;
        let counter = self.desktop.clipboard.write(&r.content)?;
        if let Ok(mut w) = ctx.session.writeback.lock() {
            *w = Some(Writeback {
                hash: sha256(&r.content),
                counter,
                at: self.clock.now(),
            });
        }
        Ok(Reply::Ack)
    }

    // ---- permissions (4.8) ----

    fn permissions(&self, ctx: Ctx<'_>, r: &PermissionsCheckRequest) -> CuResult<Reply> {
        gate(ctx.features, "permissions.check")?;
        let permissions: BTreeMap<_, _> = r
            .permissions
            .iter()
            .map(|n| (n.clone(), self.desktop.permissions.check(n)))
            .collect();
        Ok(Reply::Permissions(PermissionsCheckResponse { permissions }))
    }
}

/// The `INPUT_ACTION` audit details (never the text, only its length).
fn input_details(a: &InputAction) -> Map<String, Value> {
    details(vec![
        ("action", v(a.action.as_str())),
        ("coordinate", v(a.coordinate)),
        ("key", v(&a.key)),
        ("direction", v(a.direction.map(|d| d.as_str().to_owned()))),
        ("clicks", v(a.clicks)),
        ("text_length", v(a.text.as_ref().map(|t| t.chars().count()))),
        ("modifiers", v(&a.modifiers)),
        ("button", v(a.button.map(|b| b.as_str().to_owned()))),
        ("paste", v(a.paste)),
    ])
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
