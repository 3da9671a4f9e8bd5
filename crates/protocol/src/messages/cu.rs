//! Computer use (PROTOCOL.md 7.5, COMPUTER_USE_HW.md section 4).
//!
//! Every request whose fields are all optional accepts `payload: {}` and an absent payload;
//! integer fields accept integral JSON numbers such as `100.0`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::Serialize;

use crate::values::lenient_int;
use crate::wire_enum::wire_enum;

/// A point `[x, y]` in the desktop coordinate space.
pub type Point = [i64; 2];
/// A rectangle `[x1, y1, x2, y2]`, `x2`/`y2` exclusive.
pub type Rect = [i64; 4];

wire_enum! {
    /// `SCREENSHOT_REQUEST.format`.
    closed ImageFormat {
        /// JPEG (the daemon's default).
        Jpeg => "jpeg",
        /// PNG (the platform's default).
        Png => "png",
    }
}

#[allow(clippy::derivable_impls)] // the enum comes from wire_enum!
impl Default for ImageFormat {
    fn default() -> Self {
        ImageFormat::Jpeg
    }
}

/// `SCREENSHOT_REQUEST` (COMPUTER_USE_HW.md 4.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct ScreenshotRequest {
    /// Display index; out-of-range values (including the reserved -1) mean display 0.
    #[serde(default, deserialize_with = "lenient_int::de")]
    pub monitor: i64,
    /// JPEG quality, clamped to 1..=100.
    #[serde(default = "default_quality", deserialize_with = "lenient_int::de")]
    pub quality: i64,
    /// Region in desktop coordinates.
    #[serde(default, deserialize_with = "super::lenient_rect_opt")]
    pub region: Option<Rect>,
    /// A window from `WINDOW_LIST_RESPONSE`; exclusive with `region`.
    #[serde(default)]
    pub window_id: Option<String>,
    /// Image format.
    #[serde(default)]
    pub format: ImageFormat,
    /// Composite the pointer.
    #[serde(default = "super::default_true")]
    pub include_cursor: bool,
}

fn default_quality() -> i64 {
    75
}

/// `SCREENSHOT_RESPONSE.meta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct ScreenshotMeta {
    /// Desktop coordinates of the image's top-left.
    #[serde(default)]
    pub origin: Point,
    /// Equals `monitor`.
    #[serde(default)]
    pub display_id: i64,
}

/// `SCREENSHOT_RESPONSE` (COMPUTER_USE_HW.md 4.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct ScreenshotResponse {
    /// Standard base64 with padding.
    pub image_base64: String,
    /// `image/jpeg` or `image/png`.
    pub mime_type: String,
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Target display after the fallback to 0.
    #[serde(default)]
    pub monitor: i64,
    /// The request's region, unclipped.
    pub region: Option<Rect>,
    /// Image pixels per desktop unit.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::f64_value()")
    )]
    pub display_scale: f64,
    /// Desktop size of the whole target display.
    pub logical_size: Option<Point>,
    /// Origin and display id.
    pub meta: ScreenshotMeta,
}

wire_enum! {
    /// `INPUT_ACTION.action`. Unknown actions decode (and are refused with
    /// `FEATURE_NOT_SUPPORTED` by the handler).
    open InputActionKind {
        /// Left click at `coordinate`.
        LeftClick => "left_click",
        /// Right click.
        RightClick => "right_click",
        /// Double left click.
        DoubleClick => "double_click",
        /// Middle click.
        MiddleClick => "middle_click",
        /// Triple left click.
        TripleClick => "triple_click",
        /// Move the pointer.
        MouseMove => "mouse_move",
        /// Press a button.
        MouseDown => "mouse_down",
        /// Release a button.
        MouseUp => "mouse_up",
        /// Press, move along `path`, release.
        Drag => "drag",
        /// Type `text`.
        Type => "type",
        /// Press a chord.
        Key => "key",
        /// Hold a chord for `duration_ms`.
        HoldKey => "hold_key",
        /// Scroll.
        Scroll => "scroll",
        /// Sleep up to 5 s.
        Wait => "wait",
    }
}

wire_enum! {
    /// A mouse button.
    closed MouseButton {
        /// Left.
        Left => "left",
        /// Middle.
        Middle => "middle",
        /// Right.
        Right => "right",
    }
}

wire_enum! {
    /// The older `direction` field of `scroll`.
    closed VerticalDirection {
        /// Up.
        Up => "up",
        /// Down.
        Down => "down",
    }
}

wire_enum! {
    /// `scroll_direction`.
    closed ScrollDirection {
        /// Up.
        Up => "up",
        /// Down.
        Down => "down",
        /// Left.
        Left => "left",
        /// Right.
        Right => "right",
    }
}

/// `INPUT_ACTION` (COMPUTER_USE_HW.md 4.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct InputAction {
    /// The action.
    pub action: InputActionKind,
    /// Target point.
    #[serde(default, deserialize_with = "super::lenient_point_opt")]
    pub coordinate: Option<Point>,
    /// Text for `type`.
    #[serde(default)]
    pub text: Option<String>,
    /// Chord for `key` and `hold_key`.
    #[serde(default)]
    pub key: Option<String>,
    /// Older scroll direction.
    #[serde(default)]
    pub direction: Option<VerticalDirection>,
    /// Older scroll amount.
    #[serde(default, deserialize_with = "lenient_int::de_opt")]
    pub clicks: Option<i64>,
    /// Button for `mouse_down`, `mouse_up`, `drag`.
    #[serde(default)]
    pub button: Option<MouseButton>,
    /// Free-form modifier names, normalised by the handler.
    #[serde(default)]
    pub modifiers: Option<Vec<String>>,
    /// Scroll amount.
    #[serde(default, deserialize_with = "lenient_int::de_opt")]
    pub scroll_amount: Option<i64>,
    /// Scroll direction.
    #[serde(default)]
    pub scroll_direction: Option<ScrollDirection>,
    /// Duration for `hold_key` and `wait`.
    #[serde(default, deserialize_with = "lenient_int::de_opt")]
    pub duration_ms: Option<i64>,
    /// Points of a `drag`.
    #[serde(default, deserialize_with = "super::lenient_points_opt")]
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "proptest::option::of(crate::arb::small_vec())")
    )]
    pub path: Option<Vec<Point>>,
    /// Paste instead of typing (honoured for ≥ 200 characters).
    #[serde(default)]
    pub paste: bool,
    /// Restore the clipboard after pasting.
    #[serde(default)]
    pub preserve_clipboard: bool,
}

/// `CURSOR_POSITION_RESPONSE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct CursorPositionResponse {
    /// Desktop x.
    pub x: i64,
    /// Desktop y.
    pub y: i64,
    /// Display under the pointer.
    #[serde(default)]
    pub monitor: i64,
}

/// One display of `DISPLAY_INFO_RESPONSE`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct MonitorInfo {
    /// Display index.
    pub index: u32,
    /// The primary display.
    #[serde(default)]
    pub primary: bool,
    /// Size in pixels.
    pub physical_size: Point,
    /// Size in desktop units.
    pub logical_size: Point,
    /// Pixels per desktop unit.
    #[serde(default = "default_scale")]
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::f64_value()")
    )]
    pub scale: f64,
    /// Top-left in desktop coordinates.
    #[serde(default)]
    pub origin: Point,
}

fn default_scale() -> f64 {
    1.0
}

/// `DISPLAY_INFO_RESPONSE`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct DisplayInfoResponse {
    /// Every display.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::small_vec()")
    )]
    pub monitors: Vec<MonitorInfo>,
}

/// `WINDOW_LIST_REQUEST`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct WindowListRequest {
    /// Only windows of this application.
    #[serde(default)]
    pub app_bundle_id: Option<String>,
    /// Include minimised windows.
    #[serde(default)]
    pub include_minimized: bool,
    /// Include off-screen windows.
    #[serde(default)]
    pub include_offscreen: bool,
}

/// One window of `WINDOW_LIST_RESPONSE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct WindowInfo {
    /// `"win_" + UUIDv4`, minted by the daemon.
    pub window_id: String,
    /// Owning process.
    pub pid: i64,
    /// Application name.
    #[serde(default)]
    pub app_name: Option<String>,
    /// Application bundle id.
    #[serde(default)]
    pub app_bundle_id: Option<String>,
    /// Window title.
    #[serde(default)]
    pub title: Option<String>,
    /// `[x1, y1, x2, y2]` in desktop coordinates.
    pub bounds: Rect,
    /// Display index.
    #[serde(default)]
    pub monitor: i64,
    /// Has focus.
    #[serde(default)]
    pub is_focused: bool,
    /// Minimised.
    #[serde(default)]
    pub is_minimized: bool,
    /// Full screen.
    #[serde(default)]
    pub is_fullscreen: bool,
}

/// `WINDOW_LIST_RESPONSE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct WindowListResponse {
    /// Windows.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::small_vec()")
    )]
    pub windows: Vec<WindowInfo>,
    /// More windows existed.
    #[serde(default)]
    pub truncated: bool,
}

/// `WINDOW_FOCUS`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct WindowFocus {
    /// The window.
    pub window_id: String,
    /// Raise it too.
    #[serde(default = "super::default_true")]
    pub raise: bool,
}

/// `APP_LIST_REQUEST`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct AppListRequest {
    /// Include background applications.
    #[serde(default)]
    pub include_background: bool,
}

/// One application of `APP_LIST_RESPONSE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct AppInfo {
    /// Process id.
    pub pid: i64,
    /// Name.
    pub name: String,
    /// Bundle id.
    #[serde(default)]
    pub bundle_id: Option<String>,
    /// Executable path.
    #[serde(default)]
    pub executable_path: Option<String>,
    /// Frontmost application.
    #[serde(default)]
    pub is_frontmost: bool,
    /// Number of windows.
    #[serde(default)]
    pub window_count: u32,
}

/// `APP_LIST_RESPONSE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct AppListResponse {
    /// Applications.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::small_vec()")
    )]
    pub apps: Vec<AppInfo>,
}

/// `APP_LAUNCH` (answered with a plain `ACK`, PROTOCOL.md 14 #5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct AppLaunch {
    /// Bundle id (macOS) or desktop id.
    #[serde(default)]
    pub bundle_id: Option<String>,
    /// Executable path.
    #[serde(default)]
    pub executable_path: Option<String>,
    /// Arguments.
    #[serde(default, deserialize_with = "super::null_as_default")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "crate::schema::NullOr<Vec<String>>")
    )]
    pub args: Vec<String>,
    /// Bring it to the front.
    #[serde(default = "super::default_true")]
    pub activate: bool,
}

wire_enum! {
    /// Clipboard content format.
    closed ClipboardFormat {
        /// Text.
        Text => "text",
        /// An image.
        Image => "image",
    }
}

#[allow(clippy::derivable_impls)] // the enum comes from wire_enum!
impl Default for ClipboardFormat {
    fn default() -> Self {
        ClipboardFormat::Text
    }
}

/// `CLIPBOARD_READ`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct ClipboardRead {
    /// Wanted format.
    #[serde(default)]
    pub format: ClipboardFormat,
}

/// `CLIPBOARD_READ_RESPONSE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct ClipboardReadResponse {
    /// Format of `content`.
    pub format: ClipboardFormat,
    /// Text, or base64 image.
    pub content: String,
    /// Raw size.
    pub size_bytes: u64,
}

/// `CLIPBOARD_WRITE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct ClipboardWrite {
    /// Format of `content`.
    #[serde(default)]
    pub format: ClipboardFormat,
    /// Content.
    pub content: String,
}

/// `PERMISSIONS_CHECK_REQUEST`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct PermissionsCheckRequest {
    /// Permission names; required (COMPUTER_USE_HW.md 4.8), a missing list is a malformed
    /// payload.
    pub permissions: Vec<String>,
}

impl Default for PermissionsCheckRequest {
    /// What the platform sends when its caller names none.
    fn default() -> Self {
        PermissionsCheckRequest {
            permissions: ["screen_recording", "accessibility", "input_monitoring"]
                .map(str::to_owned)
                .to_vec(),
        }
    }
}

wire_enum! {
    /// State of one OS permission.
    closed PermissionState {
        /// Granted.
        Granted => "granted",
        /// Denied.
        Denied => "denied",
        /// Cannot be determined.
        Unknown => "unknown",
        /// Does not exist on this OS.
        NotApplicable => "not_applicable",
    }
}

/// `PERMISSIONS_CHECK_RESPONSE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct PermissionsCheckResponse {
    /// Name → state.
    pub permissions: BTreeMap<String, PermissionState>,
}
