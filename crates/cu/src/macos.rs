//! macOS: the OS layer ([`crate::mac::MacApi`]) on Core Graphics, AppKit and the
//! Accessibility API. Each method is one OS call or one short sequence of them; every rule
//! lives in `src/mac.rs`. Displays and capture stay on xcap (`src/portable.rs`), which gets
//! them right on macOS.
//!
//! Compiled and clippy-checked for `aarch64-apple-darwin` here (`x86_64-apple-darwin`, the
//! same code, by native-tests.yml on a Mac); it has not run on a Mac from this repository's
//! machines (see docs/install-macos.md).

// Core Graphics, AppKit, Accessibility and IOKit calls (each block says why it is sound).
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::ptr::NonNull;
use std::time::Duration;

use objc2_app_kit::NSApplicationActivationOptions;
use objc2_app_kit::NSApplicationActivationPolicy;
use objc2_app_kit::NSPasteboard;
use objc2_app_kit::NSPasteboardTypeString;
use objc2_app_kit::NSRunningApplication;
use objc2_app_kit::NSWorkspace;
use objc2_application_services::AXError;
use objc2_application_services::AXUIElement;
use objc2_core_foundation::CFArray;
use objc2_core_foundation::CFBoolean;
use objc2_core_foundation::CFDictionary;
use objc2_core_foundation::CFNumber;
use objc2_core_foundation::CFNumberType;
use objc2_core_foundation::CFRetained;
use objc2_core_foundation::CFString;
use objc2_core_foundation::CFType;
use objc2_core_foundation::CGPoint;
use objc2_core_foundation::CGRect;
use objc2_core_graphics::CGEvent;
use objc2_core_graphics::CGEventField;
use objc2_core_graphics::CGEventFlags;
use objc2_core_graphics::CGEventSource;
use objc2_core_graphics::CGEventSourceStateID;
use objc2_core_graphics::CGEventTapLocation;
use objc2_core_graphics::CGEventType;
use objc2_core_graphics::CGMouseButton;
use objc2_core_graphics::CGPreflightScreenCaptureAccess;
use objc2_core_graphics::CGRectMakeWithDictionaryRepresentation;
use objc2_core_graphics::CGScrollEventUnit;
use objc2_core_graphics::CGWindowListCopyWindowInfo;
use objc2_core_graphics::CGWindowListOption;
use objc2_foundation::NSString;

use crate::backend::Button;
use crate::backend::Capture;
use crate::backend::Displays;
use crate::backend::HostKind;
use crate::backend::Image;
use crate::backend::Monitor;
use crate::error::CuError;
use crate::error::CuResult;
use crate::mac::Event;
use crate::mac::MacApi;
use crate::mac::MouseKind;
use crate::mac::Pasteboard;
use crate::mac::RawApp;
use crate::mac::RawWindow;

#[link(name = "IOKit", kind = "framework")]
unsafe extern "C" {
    /// IOKit/hid/IOHIDLib.h (macOS 10.15): `IOHIDAccessType IOHIDCheckAccess(IOHIDRequestType)`.
    fn IOHIDCheckAccess(request: u32) -> u32;
}

/// `kIOHIDRequestTypeListenEvent`.
const LISTEN_EVENT: u32 = 1;

/// The OS layer.
#[derive(Debug)]
pub(crate) struct Os {
    portable: crate::portable::Portable,
}

/// Opens the macOS backend.
pub(crate) fn open() -> crate::Desktop {
    crate::mac::desktop(Os {
        portable: crate::portable::Portable::new(HostKind::MacOs),
    })
}

/// `AXIsProcessTrusted()`, or with `prompt` `AXIsProcessTrustedWithOptions` with
/// `kAXTrustedCheckOptionPrompt` (the system's consent dialog, once; `doctor` only).
pub(crate) fn accessibility_trusted(prompt: bool) -> Option<bool> {
    if !prompt {
        // SAFETY: no arguments.
        return Some(unsafe { objc2_application_services::AXIsProcessTrusted() });
    }
    // SAFETY: reads an immutable framework constant.
    let key: &CFString = unsafe { objc2_application_services::kAXTrustedCheckOptionPrompt };
    // SAFETY: reads an immutable framework constant.
    let yes = unsafe { objc2_core_foundation::kCFBooleanTrue }?;
    let options = CFDictionary::<CFString, CFBoolean>::from_slices(&[key], &[yes]);
    // SAFETY: `options` is a valid dictionary of the documented key and value types.
    Some(unsafe {
        objc2_application_services::AXIsProcessTrustedWithOptions(Some(options.as_opaque()))
    })
}

/// `CGPreflightScreenCaptureAccess()`.
pub(crate) fn screen_capture_allowed() -> bool {
    CGPreflightScreenCaptureAccess()
}

/// `IOHIDCheckAccess(kIOHIDRequestTypeListenEvent)`: 0 granted, 1 denied, else unknown.
pub(crate) fn input_monitoring() -> Option<bool> {
    // SAFETY: a plain query with a documented request constant.
    match unsafe { IOHIDCheckAccess(LISTEN_EVENT) } {
        0 => Some(true),
        1 => Some(false),
        _ => None,
    }
}

fn source() -> Option<objc2_core_foundation::CFRetained<CGEventSource>> {
    CGEventSource::new(CGEventSourceStateID::HIDSystemState)
}

type Created = Option<objc2_core_foundation::CFRetained<CGEvent>>;

/// The created event, or the error when Core Graphics could not create it.
fn created(e: &Created) -> CuResult<&CGEvent> {
    e.as_deref()
        .ok_or_else(|| CuError::internal("the OS refused to create the input event"))
}

fn post(e: &CGEvent, flags: u64) {
    CGEvent::set_flags(Some(e), CGEventFlags(flags));
    CGEvent::post(CGEventTapLocation::HIDEventTap, Some(e));
}

fn mouse_type(kind: MouseKind, b: Button) -> CGEventType {
    match (kind, b) {
        (MouseKind::Move, _) => CGEventType::MouseMoved,
        (MouseKind::Down, Button::Left) => CGEventType::LeftMouseDown,
        (MouseKind::Down, Button::Right) => CGEventType::RightMouseDown,
        (MouseKind::Down, Button::Middle) => CGEventType::OtherMouseDown,
        (MouseKind::Up, Button::Left) => CGEventType::LeftMouseUp,
        (MouseKind::Up, Button::Right) => CGEventType::RightMouseUp,
        (MouseKind::Up, Button::Middle) => CGEventType::OtherMouseUp,
        (MouseKind::Drag, Button::Left) => CGEventType::LeftMouseDragged,
        (MouseKind::Drag, Button::Right) => CGEventType::RightMouseDragged,
        (MouseKind::Drag, Button::Middle) => CGEventType::OtherMouseDragged,
    }
}

/// A value of a `CGWindowListCopyWindowInfo` dictionary, null when absent.
fn value(d: &CFDictionary, key: &str) -> *const c_void {
    let k = CFString::from_str(key);
    let k: *const CFString = &*k;
    // SAFETY: `d` is a valid dictionary and `k` a valid CFString key, alive for the call.
    unsafe { d.value(k.cast()) }
}

fn number(d: &CFDictionary, key: &str) -> Option<i64> {
    let v = value(d, key).cast::<CFNumber>();
    if v.is_null() {
        return None;
    }
    let mut out: i64 = 0;
    // SAFETY: the window-info keys read here hold CFNumbers (CGWindow.h); `out` is a
    // writable i64, the size SInt64Type asks for.
    let ok = unsafe { (*v).value(CFNumberType::SInt64Type, (&mut out as *mut i64).cast()) };
    ok.then_some(out)
}

fn string(d: &CFDictionary, key: &str) -> Option<String> {
    let v = value(d, key).cast::<CFString>();
    // SAFETY: the keys read here hold CFStrings (CGWindow.h); checked for null.
    (!v.is_null()).then(|| unsafe { (*v).to_string() })
}

fn boolean(d: &CFDictionary, key: &str) -> bool {
    let v = value(d, key).cast::<CFBoolean>();
    // SAFETY: `kCGWindowIsOnscreen` holds a CFBoolean (CGWindow.h); checked for null.
    !v.is_null() && unsafe { (*v).value() }
}

fn bounds(d: &CFDictionary) -> Option<[f64; 4]> {
    let v = value(d, "kCGWindowBounds").cast::<CFDictionary>();
    if v.is_null() {
        return None;
    }
    let mut r = CGRect::default();
    // SAFETY: `kCGWindowBounds` holds a rectangle dictionary; `r` is writable.
    let ok = unsafe { CGRectMakeWithDictionaryRepresentation(Some(&*v), &mut r) };
    ok.then_some([r.origin.x, r.origin.y, r.size.width, r.size.height])
}

/// `AXUIElementCopyAttributeValue`; `None` on any error (not trusted, no such attribute,
/// the application does not answer within the messaging timeout).
fn ax_copy(el: &AXUIElement, attribute: &str) -> Option<CFRetained<CFType>> {
    let name = CFString::from_str(attribute);
    let mut out: *const CFType = std::ptr::null();
    // SAFETY: `out` is a valid place for the copied value.
    let err = unsafe { el.copy_attribute_value(&name, NonNull::from(&mut out)) };
    if err != AXError::Success {
        return None;
    }
    let p = NonNull::new(out.cast_mut())?;
    // SAFETY: a Copy function's result carries a reference that is now ours.
    Some(unsafe { CFRetained::from_raw(p) })
}

/// An Accessibility window's title and minimised state.
type AxState = (Option<String>, Option<bool>);

/// The Accessibility windows of `pid`: each element with its title and minimised state.
fn ax_windows(pid: i64) -> Vec<(CFRetained<AXUIElement>, Option<String>, Option<bool>)> {
    let Ok(pid) = i32::try_from(pid) else {
        return Vec::new();
    };
    // SAFETY: any pid is accepted; a stale one makes the later calls fail.
    let app = unsafe { AXUIElement::new_application(pid) };
    // SAFETY: plain setter on a valid element; a hung application costs at most 1 s.
    let _ = unsafe { app.set_messaging_timeout(1.0) };
    let Some(list) = ax_copy(&app, "AXWindows").and_then(|l| l.downcast::<CFArray>().ok()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for i in 0..list.count() {
        // SAFETY: `i` is below the count; `AXWindows` holds AXUIElements.
        let Some(p) = NonNull::new(unsafe { list.value_at_index(i) }.cast_mut()) else {
            continue;
        };
        // SAFETY: a live element of the array; retained so it outlives the array.
        let w: CFRetained<AXUIElement> = unsafe { CFRetained::retain(p.cast()) };
        let title = ax_copy(&w, "AXTitle")
            .and_then(|t| t.downcast::<CFString>().ok())
            .map(|t| t.to_string());
        let minimized = ax_copy(&w, "AXMinimized")
            .and_then(|b| b.downcast::<CFBoolean>().ok())
            .map(|b| b.value());
        out.push((w, title, minimized));
    }
    out
}

fn ns(s: Option<objc2::rc::Retained<NSString>>) -> Option<String> {
    s.map(|s| s.to_string())
}

impl MacApi for Os {
    fn accessibility_trusted(&self) -> Option<bool> {
        accessibility_trusted(false)
    }

    fn screen_capture_allowed(&self) -> bool {
        screen_capture_allowed()
    }

    fn input_monitoring(&self) -> Option<bool> {
        input_monitoring()
    }

    fn monitors(&self) -> CuResult<Vec<Monitor>> {
        self.portable.monitors()
    }

    fn capture(&self, rect: [i64; 4]) -> CuResult<Image> {
        self.portable.capture(rect, false)
    }

    fn capture_window(&self, id: u64) -> CuResult<(Image, [i64; 2])> {
        self.portable.capture_window(id)
    }

    fn cursor(&self) -> CuResult<[f64; 2]> {
        let e = CGEvent::new(None);
        let e = e
            .as_deref()
            .ok_or_else(|| CuError::internal("cannot read the pointer position"))?;
        let p = CGEvent::location(Some(e));
        Ok([p.x, p.y])
    }

    fn post(&self, event: &Event) -> CuResult<()> {
        let src = source();
        match event {
            Event::Mouse {
                kind,
                button,
                at,
                clicks,
                flags,
            } => {
                let cg_button = match button {
                    Button::Left => CGMouseButton::Left,
                    Button::Right => CGMouseButton::Right,
                    Button::Middle => CGMouseButton::Center,
                };
                let e = CGEvent::new_mouse_event(
                    src.as_deref(),
                    mouse_type(*kind, *button),
                    CGPoint { x: at[0], y: at[1] },
                    cg_button,
                );
                let e = created(&e)?;
                if *clicks > 0 {
                    CGEvent::set_integer_value_field(
                        Some(e),
                        CGEventField::MouseEventClickState,
                        *clicks,
                    );
                }
                post(e, *flags);
                Ok(())
            }
            Event::Key { code, down, flags } => {
                let e = CGEvent::new_keyboard_event(src.as_deref(), *code, *down);
                post(created(&e)?, *flags);
                Ok(())
            }
            Event::Text { units } => {
                for down in [true, false] {
                    let e = CGEvent::new_keyboard_event(src.as_deref(), 0, down);
                    let e = created(&e)?;
                    // SAFETY: `units` is a live slice of `units.len()` UTF-16 units.
                    unsafe {
                        CGEvent::keyboard_set_unicode_string(
                            Some(e),
                            units.len() as _,
                            units.as_ptr(),
                        );
                    }
                    // No modifier flags: the text must not turn into a shortcut.
                    post(e, 0);
                }
                Ok(())
            }
            Event::Scroll {
                vertical,
                horizontal,
                flags,
            } => {
                let e = CGEvent::new_scroll_wheel_event2(
                    src.as_deref(),
                    CGScrollEventUnit::Line,
                    2,
                    *vertical,
                    *horizontal,
                    0,
                );
                post(created(&e)?, *flags);
                Ok(())
            }
        }
    }

    fn windows(&self) -> CuResult<Vec<RawWindow>> {
        let list = CGWindowListCopyWindowInfo(
            CGWindowListOption::OptionAll | CGWindowListOption::ExcludeDesktopElements,
            0,
        )
        .ok_or_else(|| CuError::unsupported("window.list", "the window list is unavailable"))?;
        let mut out = Vec::new();
        for i in 0..list.count() {
            // SAFETY: `i` is below the count; the entries are window-info dictionaries.
            let d = unsafe { list.value_at_index(i) }.cast::<CFDictionary>();
            if d.is_null() {
                continue;
            }
            // SAFETY: checked for null; the array (and so the entry) outlives `d`.
            let d = unsafe { &*d };
            let (Some(id), Some(pid), Some(bounds)) = (
                number(d, "kCGWindowNumber"),
                number(d, "kCGWindowOwnerPID"),
                bounds(d),
            ) else {
                continue;
            };
            out.push(RawWindow {
                id: u64::try_from(id).unwrap_or(0),
                pid,
                owner: string(d, "kCGWindowOwnerName"),
                title: string(d, "kCGWindowName").filter(|t| !t.is_empty()),
                bounds,
                layer: number(d, "kCGWindowLayer").unwrap_or(0),
                onscreen: boolean(d, "kCGWindowIsOnscreen"),
                minimized: None,
            });
        }
        // Minimised or not, for the titled windows macOS does not show, from the
        // Accessibility windows of their application (matched by title).
        let mut by_pid: std::collections::HashMap<i64, Vec<AxState>> = Default::default();
        for w in out
            .iter_mut()
            .filter(|w| w.layer == 0 && !w.onscreen && w.title.is_some())
        {
            let ax = by_pid.entry(w.pid).or_insert_with(|| {
                ax_windows(w.pid)
                    .into_iter()
                    .map(|(_, t, m)| (t, m))
                    .collect()
            });
            w.minimized = ax
                .iter()
                .find(|(t, _)| t.is_some() && *t == w.title)
                .and_then(|(_, m)| *m);
        }
        Ok(out)
    }

    fn apps(&self) -> Vec<RawApp> {
        let ws = NSWorkspace::sharedWorkspace();
        ws.runningApplications()
            .iter()
            .filter(|a| !a.isTerminated())
            .map(|a| RawApp {
                pid: i64::from(a.processIdentifier()),
                name: ns(a.localizedName()),
                bundle_id: ns(a.bundleIdentifier()),
                executable: a
                    .executableURL()
                    .and_then(|u| u.path())
                    .map(|p| p.to_string()),
                regular: a.activationPolicy() == NSApplicationActivationPolicy::Regular,
                active: a.isActive(),
                hidden: a.isHidden(),
            })
            .collect()
    }

    fn activate(&self, pid: i64) -> CuResult<()> {
        let pid = i32::try_from(pid).map_err(|_| CuError::internal("pid out of range"))?;
        let app = NSRunningApplication::runningApplicationWithProcessIdentifier(pid)
            .ok_or_else(|| CuError::unsupported("window.focus", "window gone"))?;
        if app.activateWithOptions(NSApplicationActivationOptions::ActivateAllWindows) {
            Ok(())
        } else {
            Err(CuError::unsupported(
                "window.focus",
                "the application refused activation",
            ))
        }
    }

    /// `AXRaise` on the Accessibility window of `pid` titled `title`.
    fn raise(&self, pid: i64, title: &str) -> bool {
        let name = CFString::from_str("AXRaise");
        ax_windows(pid)
            .iter()
            .find(|(_, t, _)| t.as_deref() == Some(title))
            // SAFETY: a valid element and action name.
            .is_some_and(|(w, _, _)| unsafe { w.perform_action(&name) } == AXError::Success)
    }

    fn installed(&self, bundle_id: &str) -> bool {
        let ws = NSWorkspace::sharedWorkspace();
        ws.URLForApplicationWithBundleIdentifier(&NSString::from_str(bundle_id))
            .is_some()
    }

    fn open_bundle(&self, bundle_id: &str) -> CuResult<()> {
        let status = std::process::Command::new("/usr/bin/open")
            .args(["-b", bundle_id])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .map_err(|e| CuError::internal(format!("cannot run open: {e}")))?;
        if status.success() {
            Ok(())
        } else {
            Err(CuError::internal(format!(
                "open -b {bundle_id} failed ({status})"
            )))
        }
    }

    fn spawn(&self, path: &str, args: &[String]) -> CuResult<u32> {
        let mut child = std::process::Command::new(path)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| CuError::internal(format!("cannot start the application: {e}")))?;
        let pid = child.id();
        std::thread::spawn(move || {
            let _ = child.wait();
        });
        Ok(pid)
    }

    fn pasteboard(&self) -> Pasteboard {
        let pb = NSPasteboard::generalPasteboard();
        let change_count = pb.changeCount() as i64;
        let types = pb
            .types()
            .map(|t| t.iter().map(|t| t.to_string()).collect())
            .unwrap_or_default();
        // SAFETY: reads an immutable framework constant.
        let text_type = unsafe { NSPasteboardTypeString };
        Pasteboard {
            change_count,
            types,
            text: ns(pb.stringForType(text_type)),
        }
    }

    fn change_count(&self) -> i64 {
        NSPasteboard::generalPasteboard().changeCount() as i64
    }

    fn set_text(&self, text: &str) -> CuResult<i64> {
        let pb = NSPasteboard::generalPasteboard();
        pb.clearContents();
        // SAFETY: reads an immutable framework constant.
        let text_type = unsafe { NSPasteboardTypeString };
        if !pb.setString_forType(&NSString::from_str(text), text_type) {
            return Err(CuError::internal("the pasteboard refused the text"));
        }
        Ok(pb.changeCount() as i64)
    }

    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}
