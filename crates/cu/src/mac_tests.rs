//! The macOS backend's rules (issue 27 points 1, 2, 4, 5, 11) through the engine, against
//! `MacDouble`: a test double of the OS layer (macOS cannot run here) that records every
//! event it is asked to post.

use std::sync::Arc;
use std::sync::Mutex;

use shim_protocol::ErrorCode;
use shim_protocol::messages::cu::PermissionState;

use super::*;
use crate::engine::Ctx;
use crate::engine::Engine;
use crate::engine::EngineConfig;
use crate::engine::Reply;
use crate::engine::Request;
use crate::policy::SessionState;

/// A double of [`MacApi`]: a Retina primary (1512 x 982 points at scale 2), configurable
/// permissions, windows, applications and pasteboard.
struct MacDouble {
    trusted: Mutex<Option<bool>>,
    screen: Mutex<bool>,
    hid: Option<bool>,
    cursor: [f64; 2],
    posted: Mutex<Vec<Event>>,
    windows: Vec<RawWindow>,
    apps: Mutex<Vec<RawApp>>,
    installed: Vec<&'static str>,
    /// Appears among the running applications after this many polls once opened.
    launches: Mutex<Option<(u32, RawApp)>>,
    opened: Mutex<Vec<String>>,
    board: Mutex<Pasteboard>,
}

impl Default for MacDouble {
    fn default() -> Self {
        MacDouble {
            trusted: Mutex::new(Some(true)),
            screen: Mutex::new(true),
            hid: None,
            cursor: [10.0, 10.0],
            posted: Mutex::new(Vec::new()),
            windows: Vec::new(),
            apps: Mutex::new(Vec::new()),
            installed: Vec::new(),
            launches: Mutex::new(None),
            opened: Mutex::new(Vec::new()),
            board: Mutex::new(Pasteboard::default()),
        }
    }
}

impl MacApi for Arc<MacDouble> {
    fn accessibility_trusted(&self) -> Option<bool> {
        *self.trusted.lock().unwrap()
    }
    fn screen_capture_allowed(&self) -> bool {
        *self.screen.lock().unwrap()
    }
    fn input_monitoring(&self) -> Option<bool> {
        self.hid
    }
    fn monitors(&self) -> CuResult<Vec<Monitor>> {
        Ok(vec![Monitor {
            primary: true,
            origin: [0, 0],
            logical_size: [1512, 982],
            physical_size: [3024, 1964],
            scale: 2.0,
        }])
    }
    fn capture(&self, r: [i64; 4]) -> CuResult<Image> {
        let (w, h) = (((r[2] - r[0]) * 2) as u32, ((r[3] - r[1]) * 2) as u32);
        Ok(Image {
            width: w,
            height: h,
            rgb: vec![255; w as usize * h as usize * 3],
        })
    }
    fn capture_window(&self, _id: u64) -> CuResult<(Image, [i64; 2])> {
        Err(CuError::internal("not in the double"))
    }
    fn cursor(&self) -> CuResult<[f64; 2]> {
        Ok(self.cursor)
    }
    fn post(&self, event: &Event) -> CuResult<()> {
        self.posted.lock().unwrap().push(event.clone());
        Ok(())
    }
    fn windows(&self) -> CuResult<Vec<RawWindow>> {
        Ok(self.windows.clone())
    }
    fn apps(&self) -> Vec<RawApp> {
        self.apps.lock().unwrap().clone()
    }
    fn activate(&self, pid: i64) -> CuResult<()> {
        self.opened.lock().unwrap().push(format!("activate {pid}"));
        Ok(())
    }
    fn raise(&self, pid: i64, title: &str) -> bool {
        self.opened
            .lock()
            .unwrap()
            .push(format!("raise {pid} {title}"));
        true
    }
    fn installed(&self, bundle_id: &str) -> bool {
        self.installed.contains(&bundle_id)
    }
    fn open_bundle(&self, bundle_id: &str) -> CuResult<()> {
        self.opened
            .lock()
            .unwrap()
            .push(format!("open {bundle_id}"));
        Ok(())
    }
    fn spawn(&self, path: &str, _args: &[String]) -> CuResult<u32> {
        self.opened.lock().unwrap().push(format!("spawn {path}"));
        Ok(4242)
    }
    fn pasteboard(&self) -> Pasteboard {
        self.board.lock().unwrap().clone()
    }
    fn change_count(&self) -> i64 {
        self.board.lock().unwrap().change_count
    }
    fn set_text(&self, text: &str) -> CuResult<i64> {
        let mut b = self.board.lock().unwrap();
        b.change_count += 1;
        b.types = vec!["public.utf8-plain-text".into()];
        b.text = Some(text.to_owned());
        Ok(b.change_count)
    }
    /// One poll: the pending launch comes closer.
    fn sleep(&self, _d: Duration) {
        let mut l = self.launches.lock().unwrap();
        if let Some((n, app)) = l.as_mut() {
            if *n <= 1 {
                self.apps.lock().unwrap().push(app.clone());
                *l = None;
            } else {
                *n -= 1;
            }
        }
    }
}

fn engine(d: &Arc<MacDouble>) -> Engine {
    Engine::new(
        desktop(d.clone()),
        EngineConfig {
            enable_clipboard: true,
            enable_clipboard_read_foreign: true,
            max_screenshots_per_minute: 100,
            masked_regions: Vec::new(),
        },
        Arc::new(crate::policy::ManualClock::default()),
    )
}

fn run(e: &Engine, req: Request) -> CuResult<Reply> {
    let feats = e.features();
    let s = SessionState::default();
    let ctx = Ctx {
        session: &s,
        features: &feats,
        max_file_size: 1 << 24,
    };
    e.handle(ctx, req).reply
}

fn input(e: &Engine, json: serde_json::Value) -> CuResult<Reply> {
    run(e, Request::Input(serde_json::from_value(json).unwrap()))
}

fn app(pid: i64, name: &str, bundle: &str, regular: bool) -> RawApp {
    RawApp {
        pid,
        name: Some(name.into()),
        bundle_id: Some(bundle.into()),
        executable: Some(format!("/Applications/{name}.app/Contents/MacOS/{name}")),
        regular,
        active: false,
        hidden: false,
    }
}

fn window(id: u64, pid: i64, title: Option<&str>, onscreen: bool) -> RawWindow {
    RawWindow {
        id,
        pid,
        owner: Some(format!("owner{pid}")),
        title: title.map(str::to_owned),
        bounds: [100.0, 100.0, 400.0, 300.0],
        layer: 0,
        onscreen,
        minimized: None,
    }
}

fn mouse(kind: MouseKind, button: Button, at: [f64; 2], clicks: i64, flags: u64) -> Event {
    Event::Mouse {
        kind,
        button,
        at,
        clicks,
        flags,
    }
}

#[test]
fn input_before_accessibility_trust_is_permission_pending_and_sends_nothing() {
    for trust in [Some(false), None] {
        let d = Arc::new(MacDouble::default());
        *d.trusted.lock().unwrap() = trust;
        let e = engine(&d);
        for json in [
            serde_json::json!({"action": "left_click", "coordinate": [10, 10]}),
            serde_json::json!({"action": "mouse_move", "coordinate": [10, 10]}),
            serde_json::json!({"action": "type", "text": "hi"}),
            serde_json::json!({"action": "key", "key": "cmd+a"}),
            serde_json::json!({"action": "scroll", "coordinate": [10, 10]}),
            serde_json::json!({"action": "drag", "path": [[1, 1], [5, 5]]}),
        ] {
            let err = input(&e, json.clone()).unwrap_err();
            assert_eq!(err.code, ErrorCode::PermissionPending, "{json}");
            let details = err.details.clone().unwrap();
            assert_eq!(details["permission"], "accessibility");
            assert_eq!(details["platform"], "darwin");
        }
        // The backend refuses on its own too, whoever calls it.
        let desk = desktop(d.clone());
        assert_eq!(
            desk.input.move_to([1, 1]).unwrap_err().code,
            ErrorCode::PermissionPending
        );
        assert_eq!(
            desk.windows.focus(1, true).unwrap_err().code,
            ErrorCode::PermissionPending
        );
        assert!(d.posted.lock().unwrap().is_empty());
        // Trusted: the same click is sent.
        *d.trusted.lock().unwrap() = Some(true);
        input(
            &e,
            serde_json::json!({"action": "left_click", "coordinate": [10, 10]}),
        )
        .unwrap();
        assert_eq!(d.posted.lock().unwrap().len(), 3);
    }
}

#[test]
fn permissions_check_answers_from_the_os_probes() {
    let d = Arc::new(MacDouble {
        hid: Some(false),
        ..MacDouble::default()
    });
    *d.screen.lock().unwrap() = false;
    let e = engine(&d);
    let ask = |e: &Engine| {
        let req = shim_protocol::messages::cu::PermissionsCheckRequest {
            permissions: vec![
                "accessibility".into(),
                "screen_recording".into(),
                "input_monitoring".into(),
                "camera".into(),
            ],
        };
        match run(e, Request::Permissions(req)).unwrap() {
            Reply::Permissions(p) => p.permissions,
            _ => panic!("expected permissions"),
        }
    };
    let p = ask(&e);
    assert_eq!(p["accessibility"], PermissionState::Granted);
    assert_eq!(p["screen_recording"], PermissionState::Denied);
    assert_eq!(p["input_monitoring"], PermissionState::Denied);
    assert_eq!(p["camera"], PermissionState::NotApplicable);
    *d.trusted.lock().unwrap() = Some(false);
    *d.screen.lock().unwrap() = true;
    let p = ask(&e);
    assert_eq!(p["accessibility"], PermissionState::Denied);
    assert_eq!(p["screen_recording"], PermissionState::Granted);
    *d.trusted.lock().unwrap() = None;
    assert_eq!(ask(&e)["accessibility"], PermissionState::Unknown);
    let unknown = engine(&Arc::new(MacDouble::default()));
    assert_eq!(ask(&unknown)["input_monitoring"], PermissionState::Unknown);
}

#[test]
fn start_preflight_refuses_without_trust_and_names_what_is_missing() {
    assert_eq!(preflight_refusal(Some(true)), None);
    assert_eq!(
        preflight_refusal(Some(false)),
        Some(("accessibility", ErrorCode::PermissionPending))
    );
    assert_eq!(
        preflight_refusal(None),
        Some(("accessibility_probe", ErrorCode::DependencyMissing))
    );
}

#[test]
fn double_and_triple_clicks_carry_their_click_counts() {
    let d = Arc::new(MacDouble::default());
    let e = engine(&d);
    input(
        &e,
        serde_json::json!({"action": "double_click", "coordinate": [20, 30]}),
    )
    .unwrap();
    input(
        &e,
        serde_json::json!({"action": "triple_click", "coordinate": [20, 30]}),
    )
    .unwrap();
    let at = [20.0, 30.0];
    let l = Button::Left;
    let clicks: Vec<Event> = (1..=2)
        .chain(1..=3)
        .flat_map(|n| {
            [
                mouse(MouseKind::Down, l, at, n, 0),
                mouse(MouseKind::Up, l, at, n, 0),
            ]
        })
        .collect();
    let mut expected = vec![mouse(MouseKind::Move, l, at, 0, 0)];
    expected.extend_from_slice(&clicks[..4]);
    expected.push(mouse(MouseKind::Move, l, at, 0, 0));
    expected.extend_from_slice(&clicks[4..]);
    assert_eq!(*d.posted.lock().unwrap(), expected);
}

#[test]
fn middle_button_and_drags_post_the_held_buttons_dragged_events() {
    let d = Arc::new(MacDouble::default());
    let e = engine(&d);
    input(
        &e,
        serde_json::json!({"action": "middle_click", "coordinate": [5, 6]}),
    )
    .unwrap();
    input(
        &e,
        serde_json::json!({"action": "drag", "path": [[1, 1], [2, 2], [3, 3]], "button": "right"}),
    )
    .unwrap();
    input(
        &e,
        serde_json::json!({"action": "mouse_move", "coordinate": [4, 4]}),
    )
    .unwrap();
    let (m, r, l) = (Button::Middle, Button::Right, Button::Left);
    assert_eq!(
        *d.posted.lock().unwrap(),
        [
            mouse(MouseKind::Move, l, [5.0, 6.0], 0, 0),
            mouse(MouseKind::Down, m, [5.0, 6.0], 1, 0),
            mouse(MouseKind::Up, m, [5.0, 6.0], 1, 0),
            mouse(MouseKind::Move, l, [1.0, 1.0], 0, 0),
            mouse(MouseKind::Down, r, [1.0, 1.0], 1, 0),
            mouse(MouseKind::Drag, r, [2.0, 2.0], 0, 0),
            mouse(MouseKind::Drag, r, [3.0, 3.0], 0, 0),
            mouse(MouseKind::Up, r, [3.0, 3.0], 1, 0),
            // Released: a plain move again.
            mouse(MouseKind::Move, l, [4.0, 4.0], 0, 0),
        ]
    );
}

#[test]
fn scrolling_is_one_line_per_tick_in_the_asked_direction() {
    let d = Arc::new(MacDouble::default());
    let e = engine(&d);
    input(
        &e,
        serde_json::json!({"action": "scroll", "direction": "down", "clicks": 2}),
    )
    .unwrap();
    input(
        &e,
        serde_json::json!({"action": "scroll", "scroll_direction": "left", "scroll_amount": 1}),
    )
    .unwrap();
    let tick = |vertical, horizontal| Event::Scroll {
        vertical,
        horizontal,
        flags: 0,
    };
    assert_eq!(
        *d.posted.lock().unwrap(),
        [tick(-1, 0), tick(-1, 0), tick(0, 1)]
    );
}

#[test]
fn any_unicode_text_is_typed_as_the_events_unicode_string() {
    let d = Arc::new(MacDouble::default());
    let e = engine(&d);
    input(&e, serde_json::json!({"action": "type", "text": "aé€😀"})).unwrap();
    let units: Vec<Vec<u16>> = d
        .posted
        .lock()
        .unwrap()
        .iter()
        .map(|ev| match ev {
            Event::Text { units } => units.clone(),
            other => panic!("not text: {other:?}"),
        })
        .collect();
    assert_eq!(
        units,
        [vec![0x61], vec![0xE9], vec![0x20AC], vec![0xD83D, 0xDE00]]
    );
}

#[test]
fn held_modifiers_ride_on_every_event_until_released() {
    let d = Arc::new(MacDouble::default());
    let e = engine(&d);
    input(
        &e,
        serde_json::json!({"action": "left_click", "coordinate": [7, 7], "modifiers": ["cmd", "shift"]}),
    )
    .unwrap();
    input(&e, serde_json::json!({"action": "key", "key": "ctrl+c"})).unwrap();
    let both = flags::COMMAND | flags::SHIFT;
    let l = Button::Left;
    assert_eq!(
        *d.posted.lock().unwrap(),
        [
            mouse(MouseKind::Move, l, [7.0, 7.0], 0, 0),
            Event::Key {
                code: 0x37,
                down: true,
                flags: flags::COMMAND
            },
            Event::Key {
                code: 0x38,
                down: true,
                flags: both
            },
            mouse(MouseKind::Down, l, [7.0, 7.0], 1, both),
            mouse(MouseKind::Up, l, [7.0, 7.0], 1, both),
            Event::Key {
                code: 0x38,
                down: false,
                flags: flags::COMMAND
            },
            Event::Key {
                code: 0x37,
                down: false,
                flags: 0
            },
            Event::Key {
                code: 0x3B,
                down: true,
                flags: flags::CONTROL
            },
            Event::Key {
                code: 0x08,
                down: true,
                flags: flags::CONTROL
            },
            Event::Key {
                code: 0x08,
                down: false,
                flags: flags::CONTROL
            },
            Event::Key {
                code: 0x3B,
                down: false,
                flags: 0
            },
        ]
    );
}

#[test]
fn cursor_position_answers_and_screenshots_carry_the_pointer_at_the_displays_scale() {
    let d = Arc::new(MacDouble::default());
    let e = engine(&d);
    match run(&e, Request::CursorPosition).unwrap() {
        Reply::Cursor(c) => assert_eq!((c.x, c.y), (10, 10)),
        _ => panic!("expected the cursor"),
    }
    let shot = |cursor: bool| {
        let r = serde_json::from_value(serde_json::json!({
            "format": "png", "region": [0, 0, 100, 50], "include_cursor": cursor
        }))
        .unwrap();
        run(&e, Request::Screenshot(r))
    };
    let Reply::Screenshot(s) = shot(true).unwrap() else {
        panic!("expected a screenshot")
    };
    assert_eq!(s.display_scale, 2.0);
    assert_eq!((s.width, s.height), (200, 100));
    let desk = desktop(d.clone());
    let img = desk.capture.capture([0, 0, 100, 50], true).unwrap();
    // The pointer at (10, 10) points is at (20, 20) pixels, 24 pixels tall.
    assert_eq!(img.pixel(20, 20), Some([0, 0, 0]));
    assert_eq!(img.pixel(20, 43), Some([0, 0, 0]));
    assert_eq!(img.pixel(19, 20), Some([255, 255, 255]));
    assert_eq!(img.pixel(20, 44), Some([255, 255, 255]));
    let plain = desk.capture.capture([0, 0, 100, 50], false).unwrap();
    assert_eq!(plain.pixel(20, 20), Some([255, 255, 255]));
    // Without Screen Recording macOS would return the wallpaper: refused instead.
    *d.screen.lock().unwrap() = false;
    let err = shot(false).unwrap_err();
    assert_eq!(err.code, ErrorCode::PermissionPending);
    assert_eq!(err.details.unwrap()["permission"], "screen_recording");
}

fn desk_with_apps() -> Arc<MacDouble> {
    let mut safari = app(200, "Safari", "com.apple.Safari", true);
    safari.active = true;
    let mut minimized = window(13, 300, Some("Minimised"), false);
    minimized.minimized = Some(true);
    let mut menu = window(14, 200, Some("Menu bar"), true);
    menu.layer = 25;
    Arc::new(MacDouble {
        windows: vec![
            window(10, 200, Some("Apple"), true),
            window(11, 300, Some("Notes"), true),
            window(12, 200, None, false),
            minimized,
            menu,
            window(15, 300, Some("Other Space"), false),
            RawWindow {
                bounds: [0.0, 0.0, 1512.0, 982.0],
                ..window(16, 300, Some("Full screen"), true)
            },
        ],
        apps: Mutex::new(vec![
            safari,
            app(300, "Notes", "com.apple.Notes", true),
            app(400, "Helper", "com.example.helper", false),
        ]),
        installed: vec!["com.apple.TextEdit"],
        ..MacDouble::default()
    })
}

fn list_windows(
    e: &Engine,
    json: serde_json::Value,
) -> Vec<shim_protocol::messages::cu::WindowInfo> {
    match run(
        e,
        Request::WindowList(serde_json::from_value(json).unwrap()),
    )
    .unwrap()
    {
        Reply::Windows(w) => w.windows,
        _ => panic!("expected windows"),
    }
}

#[test]
fn windows_carry_bundle_ids_and_the_bundle_filter_uses_them() {
    let d = desk_with_apps();
    let e = engine(&d);
    let all = list_windows(&e, serde_json::json!({}));
    let titles: Vec<_> = all.iter().map(|w| w.title.clone().unwrap()).collect();
    assert_eq!(titles, ["Apple", "Notes", "Full screen"]);
    assert!(all[2].is_fullscreen && !all[0].is_fullscreen);
    assert_eq!(all[0].app_bundle_id.as_deref(), Some("com.apple.Safari"));
    assert_eq!(all[0].app_name.as_deref(), Some("Safari"));
    assert!(all[0].is_focused && !all[1].is_focused);
    let notes = list_windows(&e, serde_json::json!({"app_bundle_id": "com.apple.Notes"}));
    assert_eq!(notes.len(), 2);
    assert!(notes.iter().all(|w| w.pid == 300));
    // Minimised and off-screen windows on request; the untitled off-screen helper surface
    // and the menu-bar layer never.
    let more = list_windows(
        &e,
        serde_json::json!({"include_minimized": true, "include_offscreen": true}),
    );
    let titles: Vec<_> = more.iter().map(|w| w.title.clone().unwrap()).collect();
    assert_eq!(
        titles,
        ["Apple", "Notes", "Minimised", "Other Space", "Full screen"]
    );
    assert!(more[2].is_minimized && !more[3].is_minimized);
}

#[test]
fn window_focus_activates_the_owner_and_raises_the_window() {
    let d = desk_with_apps();
    let e = engine(&d);
    let notes = list_windows(&e, serde_json::json!({"app_bundle_id": "com.apple.Notes"}));
    // A fresh session per request in `run`, so focus through the backend directly.
    let desk = desktop(d.clone());
    desk.windows.focus(11, true).unwrap();
    assert_eq!(notes[0].pid, 300);
    assert_eq!(
        *d.opened.lock().unwrap(),
        ["activate 300", "raise 300 Notes"]
    );
    assert_eq!(
        desk.windows.focus(99, true).unwrap_err().code,
        ErrorCode::FeatureNotSupported
    );
    assert!(d.posted.lock().unwrap().is_empty());
}

#[test]
fn app_list_is_regular_apps_unless_background_with_bundle_ids_and_paths() {
    let d = desk_with_apps();
    let e = engine(&d);
    let list = |bg: bool| match run(
        &e,
        Request::AppList(shim_protocol::messages::cu::AppListRequest {
            include_background: bg,
        }),
    )
    .unwrap()
    {
        Reply::Apps(a) => a.apps,
        _ => panic!("expected apps"),
    };
    let fg = list(false);
    assert_eq!(fg.iter().map(|a| a.pid).collect::<Vec<_>>(), [200, 300]);
    assert_eq!(fg[0].bundle_id.as_deref(), Some("com.apple.Safari"));
    assert_eq!(
        fg[0].executable_path.as_deref(),
        Some("/Applications/Safari.app/Contents/MacOS/Safari")
    );
    assert!(fg[0].is_frontmost && !fg[1].is_frontmost);
    assert_eq!(fg[0].window_count, 1);
    let all = list(true);
    assert_eq!(
        all.iter().map(|a| a.pid).collect::<Vec<_>>(),
        [200, 300, 400]
    );
}

#[test]
fn launching_a_missing_bundle_is_an_error_and_a_launch_reports_the_new_pid() {
    let d = desk_with_apps();
    let desk = desktop(d.clone());
    let err = desk
        .apps
        .launch(Some("com.example.absent"), None, &[])
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::FeatureNotSupported);
    assert!(
        err.message
            .contains("bundle 'com.example.absent' not installed")
    );
    assert!(d.opened.lock().unwrap().is_empty());
    // TextEdit appears on the third poll: its pid, not that of `open`.
    *d.launches.lock().unwrap() = Some((3, app(777, "TextEdit", "com.apple.TextEdit", true)));
    assert_eq!(
        desk.apps
            .launch(Some("com.apple.TextEdit"), None, &[])
            .unwrap(),
        777
    );
    assert_eq!(*d.opened.lock().unwrap(), ["open com.apple.TextEdit"]);
    // Already running: `open` only activates it; its pid.
    let d3 = Arc::new(MacDouble {
        installed: vec!["com.apple.Notes"],
        apps: Mutex::new(d.apps()),
        ..MacDouble::default()
    });
    assert_eq!(
        desktop(d3)
            .apps
            .launch(Some("com.apple.Notes"), None, &[])
            .unwrap(),
        300
    );
    // Never appears: 0, after the 20 polls of 4.6.2.
    let d4 = Arc::new(MacDouble {
        installed: vec!["com.example.slow"],
        ..MacDouble::default()
    });
    assert_eq!(
        desktop(d4.clone())
            .apps
            .launch(Some("com.example.slow"), None, &[])
            .unwrap(),
        0
    );
    // An executable path is spawned directly; neither is an error.
    assert_eq!(
        desk.apps.launch(None, Some("/bin/echo"), &[]).unwrap(),
        4242
    );
    assert_eq!(
        desk.apps.launch(None, None, &[]).unwrap_err().code,
        ErrorCode::FeatureNotSupported
    );
}

#[test]
fn concealed_pasteboard_types_are_refused_and_the_change_count_is_the_counter() {
    let d = Arc::new(MacDouble::default());
    let e = engine(&d);
    let read = |e: &Engine| {
        run(
            e,
            Request::ClipboardRead(shim_protocol::messages::cu::ClipboardRead::default()),
        )
    };
    for (i, marker) in CONCEALED_TYPES.iter().enumerate() {
        *d.board.lock().unwrap() = Pasteboard {
            change_count: 10 + i as i64,
            // The marker next to text, as password managers put it; the first marker
            // present in 4.7.3's order is named.
            types: vec![
                "public.utf8-plain-text".into(),
                (*marker).into(),
                CONCEALED_TYPES[2].into(),
            ],
            text: Some("hunter2".into()),
        };
        let err = read(&e).unwrap_err();
        assert_eq!(err.code, ErrorCode::ClipboardConcealed, "{marker}");
        assert_eq!(err.details.unwrap()["marker"], *marker);
    }
    *d.board.lock().unwrap() = Pasteboard {
        change_count: 20,
        types: vec!["public.utf8-plain-text".into()],
        text: Some("plain".into()),
    };
    match read(&e).unwrap() {
        Reply::Clipboard(c) => assert_eq!(c.content, "plain"),
        _ => panic!("expected text"),
    }
    let desk = desktop(d.clone());
    assert_eq!(desk.clipboard.counter(), Some(20));
    assert_eq!(desk.clipboard.write("x").unwrap(), Some(21));
    assert_eq!(desk.clipboard.read().unwrap().counter, Some(21));
}

#[test]
fn the_macos_backend_advertises_every_fine_feature_and_each_answers() {
    let d = desk_with_apps();
    let e = engine(&d);
    let f = e.features();
    for name in [
        "cursor.position",
        "window.focus",
        "screenshot.window",
        "app.launch",
    ] {
        assert!(f.has(name), "{name}");
    }
    assert_eq!(
        f.fine,
        crate::features::Features::for_host(HostKind::MacOs, true, true).fine
    );
    // Every key a chord can name has a code, except the media and Menu keys.
    assert_eq!(key_code(Key::F(20)), Some(0x5A));
    assert_eq!(key_code(Key::F(21)), None);
    assert_eq!(key_code(Key::Named(Named::Menu)), None);
    for c in (' '..='~').filter(|c| !c.is_ascii_control()) {
        assert!(us_key(c).is_some(), "{c:?}");
    }
}

#[test]
fn paste_goes_through_the_pasteboard_with_command_v_and_restores_the_prior_text() {
    let d = Arc::new(MacDouble::default());
    *d.board.lock().unwrap() = Pasteboard {
        change_count: 5,
        types: vec!["public.utf8-plain-text".into()],
        text: Some("prior".into()),
    };
    let e = engine(&d);
    let text = "x".repeat(200);
    input(
        &e,
        serde_json::json!({"action": "type", "text": text, "paste": true, "preserve_clipboard": true}),
    )
    .unwrap();
    let key = |code, down, flags| Event::Key { code, down, flags };
    assert_eq!(
        *d.posted.lock().unwrap(),
        [
            key(0x37, true, flags::COMMAND),
            key(0x09, true, flags::COMMAND),
            key(0x09, false, flags::COMMAND),
            key(0x37, false, 0),
        ]
    );
    // Our write (6), then the restore (7): nobody else wrote in between.
    let b = d.board.lock().unwrap().clone();
    assert_eq!((b.change_count, b.text.as_deref()), (7, Some("prior")));
}
