use super::*;
use crate::backend::ClipboardState;

#[test]
fn drag_paths_thin_from_200_points_and_end_on_the_last() {
    let p: Vec<[i64; 2]> = (0..150).map(|i| [i, 0]).collect();
    assert_eq!(thin_path(&p).len(), 150);
    let p: Vec<[i64; 2]> = (0..250).map(|i| [i, 0]).collect();
    let t = thin_path(&p);
    assert_eq!(t.len(), 126);
    assert_eq!(t.last(), Some(&[249, 0]));
    assert_eq!(thin_path(&[[1, 1]]), vec![[1, 1]]);
}

fn action(json: &str) -> InputAction {
    serde_json::from_str(json).unwrap()
}

#[test]
fn scroll_defaults_and_reversal() {
    assert_eq!(
        scroll_plan(&action(r#"{"action":"scroll"}"#)),
        (Wheel::Down, 3)
    );
    assert_eq!(
        scroll_plan(&action(
            r#"{"action":"scroll","clicks":0,"direction":"up"}"#
        )),
        (Wheel::Up, 3)
    );
    assert_eq!(
        scroll_plan(&action(r#"{"action":"scroll","scroll_amount":0}"#)),
        (Wheel::Down, 0)
    );
    assert_eq!(
        scroll_plan(&action(
            r#"{"action":"scroll","scroll_amount":-2,"scroll_direction":"left","direction":"up"}"#
        )),
        (Wheel::Right, 2)
    );
}

// ---- OS-independent rules against a fake backend (11.4: scale-2 bounds, counter-based
// skip-restore, marker precedence) ----

mod fake {
    use std::sync::Arc;
    use std::sync::Mutex;

    use shim_protocol::messages::cu::PermissionState;

    use crate::backend::*;
    use crate::error::CuError;
    use crate::error::CuResult;
    use crate::keys::Key;

    /// A test double of a backend (no OS behind it): records every event it is given.
    #[derive(Default)]
    pub(super) struct Fake {
        /// The fine features it always refuses (the portable backend's rule per OS).
        pub(super) refuses: &'static [&'static str],
        /// Has no middle button (as the portable backend on macOS).
        pub(super) no_middle: bool,
        pub(super) log: Mutex<Vec<String>>,
        pub(super) clip: Mutex<ClipboardState>,
        /// Added to the counter by every write (simulates other writers).
        pub(super) extra_writes: Mutex<u64>,
    }

    impl Displays for Fake {
        fn monitors(&self) -> CuResult<Vec<Monitor>> {
            Ok(vec![
                Monitor {
                    primary: false,
                    origin: [1512, -200],
                    logical_size: [2560, 1440],
                    physical_size: [2560, 1440],
                    scale: 1.0,
                },
                Monitor {
                    primary: true,
                    origin: [0, 0],
                    logical_size: [1512, 982],
                    physical_size: [3024, 1964],
                    scale: 2.0,
                },
            ])
        }
        fn cursor(&self) -> CuResult<[i64; 2]> {
            Ok([0, 0])
        }
        fn cursor_answers(&self) -> bool {
            !self.refuses.contains(&"cursor.position")
        }
    }
    impl Capture for Fake {
        /// Physical pixels: the Retina primary (x < 1512) at twice its DCS size.
        fn capture(&self, r: [i64; 4], _c: bool) -> CuResult<Image> {
            let scale = if r[0] < 1512 { 2 } else { 1 };
            let width = u32::try_from((r[2] - r[0]) * scale).unwrap();
            let height = u32::try_from((r[3] - r[1]) * scale).unwrap();
            Ok(Image {
                width,
                height,
                rgb: vec![0; width as usize * height as usize * 3],
            })
        }
        fn capture_window(&self, _h: u64) -> CuResult<(Image, [i64; 2])> {
            Err(CuError::internal("no"))
        }
    }
    impl Input for Fake {
        fn move_to(&self, p: [i64; 2]) -> CuResult<()> {
            self.log.lock().unwrap().push(format!("move {p:?}"));
            Ok(())
        }
        fn button(&self, b: Button, down: bool) -> CuResult<()> {
            self.log
                .lock()
                .unwrap()
                .push(format!("button {b:?} {down}"));
            Ok(())
        }
        fn has_button(&self, b: Button) -> bool {
            !(self.no_middle && b == Button::Middle)
        }
        fn key(&self, k: Key, down: bool) -> CuResult<()> {
            self.log.lock().unwrap().push(format!("key {k:?} {down}"));
            Ok(())
        }
        fn needs_shift(&self, _c: char) -> bool {
            false
        }
        fn type_char(&self, c: char) -> CuResult<()> {
            self.log.lock().unwrap().push(format!("char {c}"));
            Ok(())
        }
        fn scroll(&self, w: Wheel) -> CuResult<()> {
            self.log.lock().unwrap().push(format!("scroll {w:?}"));
            Ok(())
        }
    }
    impl Windows for Fake {
        fn available(&self) -> bool {
            true
        }
        fn list(&self) -> CuResult<Vec<NativeWindow>> {
            Ok(Vec::new())
        }
        fn fingerprint(&self, _h: u64) -> CuResult<Option<Fingerprint>> {
            Ok(None)
        }
        fn focus(&self, _h: u64, _r: bool) -> CuResult<()> {
            Ok(())
        }
        fn focus_answers(&self) -> bool {
            !self.refuses.contains(&"window.focus")
        }
    }
    impl Apps for Fake {
        fn list(&self, _b: bool) -> CuResult<Vec<NativeApp>> {
            Ok(Vec::new())
        }
        fn launch(&self, _b: Option<&str>, _e: Option<&str>, _a: &[String]) -> CuResult<u32> {
            Ok(1)
        }
    }
    impl Clipboard for Fake {
        fn available(&self) -> bool {
            true
        }
        fn read(&self) -> CuResult<ClipboardState> {
            Ok(self.clip.lock().unwrap().clone())
        }
        fn counter(&self) -> Option<u64> {
            self.clip.lock().unwrap().counter
        }
        fn write(&self, text: &str) -> CuResult<Option<u64>> {
            let extra = *self.extra_writes.lock().unwrap();
            let mut c = self.clip.lock().unwrap();
            c.text = Some(text.to_owned());
            c.marker = None;
            c.counter = c.counter.map(|n| n + 1 + extra);
            self.log
                .lock()
                .unwrap()
                .push(format!("clip {}", text.len()));
            Ok(c.counter)
        }
    }
    impl Permissions for Fake {
        fn check(&self, _n: &str) -> PermissionState {
            PermissionState::Unknown
        }
    }

    pub(super) fn desktop(f: Arc<Fake>) -> Desktop {
        desktop_of(HostKind::MacOs, f)
    }

    pub(super) fn desktop_of(kind: HostKind, f: Arc<Fake>) -> Desktop {
        Desktop {
            kind,
            displays: f.clone(),
            capture: f.clone(),
            input: f.clone(),
            windows: f.clone(),
            apps: f.clone(),
            clipboard: f.clone(),
            permissions: f,
            alive: Arc::new(|| true),
        }
    }
}

fn fake_engine() -> (Engine, std::sync::Arc<fake::Fake>, Features) {
    let f = std::sync::Arc::new(fake::Fake::default());
    let e = Engine::new(
        fake::desktop(f.clone()),
        EngineConfig {
            enable_clipboard: true,
            enable_clipboard_read_foreign: true,
            max_screenshots_per_minute: 10,
            masked_regions: Vec::new(),
        },
        std::sync::Arc::new(crate::policy::ManualClock::default()),
    );
    let feats = e.features();
    (e, f, feats)
}

#[test]
fn scale_two_display_uses_its_logical_size_and_primary_comes_first() {
    let (e, f, feats) = fake_engine();
    let s = SessionState::default();
    let ctx = Ctx {
        session: &s,
        features: &feats,
        max_file_size: 1 << 20,
    };
    let r = e.handle(ctx, Request::DisplayInfo).reply.unwrap();
    let Reply::Displays(d) = r else { panic!() };
    assert!(d.monitors[0].primary && d.monitors[0].scale == 2.0);
    assert_eq!(d.monitors[1].origin, [1512, -200]);
    // (1600, 0) lies beyond the Retina display's 1512-point width but inside the second
    // display; (1511, 981) is the last point of the primary; (1511, 982) is outside both.
    for (p, ok) in [
        ([1511, 981], true),
        ([1511, 982], false),
        ([1600, -200], true),
        ([4072, 0], false),
    ] {
        let a: InputAction =
            serde_json::from_value(serde_json::json!({"action": "mouse_move", "coordinate": p}))
                .unwrap();
        let o = e.handle(ctx, Request::Input(a));
        assert_eq!(o.reply.is_ok(), ok, "{p:?}");
    }
    let log = f.log.lock().unwrap().clone();
    assert_eq!(log, vec!["move [1511, 981]", "move [1600, -200]"]);
}

#[test]
fn paste_restore_is_skipped_when_someone_else_wrote_and_never_for_concealed() {
    let (e, f, feats) = fake_engine();
    let s = SessionState::default();
    let ctx = Ctx {
        session: &s,
        features: &feats,
        max_file_size: 1 << 20,
    };
    let long = "x".repeat(250);
    let paste = |e: &Engine| {
        let a: InputAction = serde_json::from_value(serde_json::json!({
            "action": "type", "text": long, "paste": true, "preserve_clipboard": true
        }))
        .unwrap();
        e.handle(ctx, Request::Input(a)).reply.unwrap();
    };
    // Prior text, counter 5: pasted, then restored.
    *f.clip.lock().unwrap() = ClipboardState {
        text: Some("prior".into()),
        counter: Some(5),
        marker: None,
    };
    paste(&e);
    assert_eq!(f.clip.lock().unwrap().text.as_deref(), Some("prior"));
    // macOS pastes with Command-V.
    assert!(
        f.log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l == "key Mod(Super) true")
    );
    // Someone else wrote between the paste and the restore: the counter jumped by 2.
    *f.clip.lock().unwrap() = ClipboardState {
        text: Some("prior".into()),
        counter: Some(10),
        marker: None,
    };
    *f.extra_writes.lock().unwrap() = 1;
    paste(&e);
    assert_eq!(
        f.clip.lock().unwrap().text.as_deref(),
        Some(long.as_str()),
        "restore skipped"
    );
    *f.extra_writes.lock().unwrap() = 0;
    // Concealed prior content is not republished.
    *f.clip.lock().unwrap() = ClipboardState {
        text: Some("hunter2".into()),
        counter: Some(20),
        marker: Some("org.nspasteboard.ConcealedType".into()),
    };
    paste(&e);
    assert_eq!(f.clip.lock().unwrap().text.as_deref(), Some(long.as_str()));
    // A marker wins over foreign reads.
    f.clip.lock().unwrap().marker = Some("org.nspasteboard.ConcealedType".into());
    let o = e.handle(ctx, Request::ClipboardRead(Default::default()));
    let err = o.reply.unwrap_err();
    assert_eq!(
        err.details.unwrap()["marker"],
        "org.nspasteboard.ConcealedType"
    );
}

/// The full fine list of 2.2 for macOS and Windows, in order.
const PORTABLE_FINE: [&str; 18] = [
    "screenshot.region",
    "screenshot.window",
    "input.click.modifiers",
    "input.click.button",
    "input.drag.path",
    "input.key.hold",
    "input.mouse.down_up",
    "input.scroll.amount",
    "input.wait",
    "cursor.position",
    "display.info",
    "window.list",
    "window.focus",
    "app.list",
    "app.launch",
    "permissions.check",
    "clipboard.read",
    "clipboard.write",
];

/// What the HELLO of each portable OS advertises, against a test double that refuses what
/// the portable backend refuses there: macOS leaves out the pointer position and window
/// focus (they always answer FEATURE_NOT_SUPPORTED), Windows advertises the whole list.
#[test]
fn each_portable_os_advertises_only_what_its_backend_answers() {
    let advertised = |kind: HostKind| {
        let f = std::sync::Arc::new(fake::Fake {
            refuses: crate::features::portable_refuses(kind),
            ..fake::Fake::default()
        });
        Engine::new(
            fake::desktop_of(kind, f),
            EngineConfig {
                enable_clipboard: true,
                enable_clipboard_read_foreign: false,
                max_screenshots_per_minute: 10,
                masked_regions: Vec::new(),
            },
            std::sync::Arc::new(crate::policy::ManualClock::default()),
        )
        .features()
    };
    let mac = advertised(HostKind::MacOs);
    let expected: Vec<&str> = PORTABLE_FINE
        .into_iter()
        .filter(|n| !["cursor.position", "window.focus"].contains(n))
        .collect();
    assert_eq!(mac.fine, expected);
    assert_eq!(
        mac.coarse,
        [
            "screenshot",
            "input",
            "windows",
            "apps",
            "permissions",
            "clipboard"
        ]
    );
    let win = advertised(HostKind::Windows);
    assert_eq!(win.fine, PORTABLE_FINE);
    assert_eq!(win.coarse, mac.coarse);
    // The gate refuses what is not advertised before the backend is reached.
    let (e, f, _) = fake_engine();
    let s = SessionState::default();
    let ctx = Ctx {
        session: &s,
        features: &mac,
        max_file_size: 1 << 20,
    };
    let err = e.handle(ctx, Request::CursorPosition).reply.unwrap_err();
    assert_eq!(err.code, ErrorCode::FeatureNotSupported);
    assert!(f.log.lock().unwrap().is_empty());
}

/// On this OS, the real backend's HELLO lists (computer use on, clipboard off): the whole
/// list of 2.2 on macOS (src/mac.rs) and Windows.
#[cfg(any(target_os = "macos", target_os = "windows"))]
#[test]
fn this_os_advertises_exactly_what_answers() {
    let desktop = crate::open(&crate::OpenOptions::default()).unwrap();
    let e = Engine::new(
        desktop,
        EngineConfig {
            enable_clipboard: false,
            enable_clipboard_read_foreign: false,
            max_screenshots_per_minute: 10,
            masked_regions: Vec::new(),
        },
        std::sync::Arc::new(crate::policy::ManualClock::default()),
    );
    assert_eq!(e.features().fine, &PORTABLE_FINE[..16]);
}

/// 4.1: `display_scale` is the backend's scale of the target display, 2.0 on the double's
/// Retina primary and 1.0 on its second display, never a constant.
#[test]
fn screenshots_carry_the_backends_display_scale() {
    let (e, _f, feats) = fake_engine();
    let s = SessionState::default();
    let ctx = Ctx {
        session: &s,
        features: &feats,
        max_file_size: 1 << 24,
    };
    let shot = |json: serde_json::Value| {
        let r: ScreenshotRequest = serde_json::from_value(json).unwrap();
        match e.handle(ctx, Request::Screenshot(r)).reply.unwrap() {
            Reply::Screenshot(s) => s,
            _ => panic!("expected a screenshot"),
        }
    };
    let primary = shot(serde_json::json!({"format": "png", "region": [0, 0, 100, 50]}));
    assert_eq!(primary.display_scale, 2.0);
    assert_eq!((primary.width, primary.height), (200, 100));
    assert_eq!(primary.logical_size, Some([1512, 982]));
    let second =
        shot(serde_json::json!({"format": "png", "monitor": 1, "region": [1600, 0, 1700, 50]}));
    assert_eq!(second.display_scale, 1.0);
    assert_eq!((second.width, second.height), (100, 50));
}

/// Issue 27 point 4: a button the backend cannot press fails before any event, so the
/// pointer does not move first; the other buttons still act.
#[test]
fn a_button_the_backend_lacks_fails_before_the_pointer_moves() {
    let f = std::sync::Arc::new(fake::Fake {
        no_middle: true,
        ..fake::Fake::default()
    });
    let e = Engine::new(
        fake::desktop(f.clone()),
        EngineConfig {
            enable_clipboard: false,
            enable_clipboard_read_foreign: false,
            max_screenshots_per_minute: 10,
            masked_regions: Vec::new(),
        },
        std::sync::Arc::new(crate::policy::ManualClock::default()),
    );
    let feats = e.features();
    let s = SessionState::default();
    let ctx = Ctx {
        session: &s,
        features: &feats,
        max_file_size: 1 << 20,
    };
    for json in [
        r#"{"action":"middle_click","coordinate":[10,10]}"#,
        r#"{"action":"mouse_down","coordinate":[10,10],"button":"middle"}"#,
        r#"{"action":"drag","path":[[10,10],[20,20]],"button":"middle"}"#,
    ] {
        let err = e
            .handle(ctx, Request::Input(action(json)))
            .reply
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::FeatureNotSupported, "{json}");
    }
    assert!(
        f.log.lock().unwrap().is_empty(),
        "{:?}",
        f.log.lock().unwrap()
    );
    e.handle(
        ctx,
        Request::Input(action(r#"{"action":"right_click","coordinate":[10,10]}"#)),
    )
    .reply
    .unwrap();
    assert_eq!(
        *f.log.lock().unwrap(),
        ["move [10, 10]", "button Right true", "button Right false"]
    );
}
