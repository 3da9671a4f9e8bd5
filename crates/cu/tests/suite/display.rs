use serde_json::json;
use shim_cu::engine::Reply;
use shim_cu::engine::Request;

use super::common::*;

#[test]
fn one_monitor_display_info_and_half_open_bounds() {
    let rig = Rig::new();
    let Reply::Displays(d) = rig.ok(Request::DisplayInfo) else {
        panic!()
    };
    assert_eq!(d.monitors.len(), 1);
    let m = &d.monitors[0];
    assert_eq!(
        (
            m.index,
            m.primary,
            m.logical_size,
            m.physical_size,
            m.scale,
            m.origin
        ),
        (0, true, [1280, 800], [1280, 800], 1.0, [0, 0])
    );
    assert_eq!(rig.engine.screen_resolution(), Some([1280, 800]));

    rig.input_ok(json!({"action": "mouse_move", "coordinate": [1279, 799]}));
    assert_eq!(rig.x.pointer(), [1279, 799]);
    rig.input_ok(json!({"action": "mouse_move", "coordinate": [10, 10]}));
    for p in [[1280, 0], [0, 800], [-1, 0]] {
        let o = rig.input(json!({"action": "mouse_move", "coordinate": p}));
        assert_eq!(code(&o), "INPUT_OUT_OF_BOUNDS", "{p:?}");
        assert_eq!(
            details(&o),
            json!({"requested_coordinate": p,
                   "displays": [{"index": 0, "origin": [0, 0], "size": [1280, 800]}]})
        );
        assert_eq!(rig.x.pointer(), [10, 10], "nothing moved for {p:?}");
    }
}

#[test]
fn two_virtual_monitors() {
    let rig = Rig::new();
    let d = &rig.x.display;
    run(
        d,
        "xrandr",
        &["--setmonitor", "LEFT", "640/170x800/212+0+0", "screen"],
    );
    run(
        d,
        "xrandr",
        &["--setmonitor", "RIGHT", "640/170x800/212+640+0", "none"],
    );
    let Reply::Displays(info) = rig.ok(Request::DisplayInfo) else {
        panic!()
    };
    let v: Vec<_> = info
        .monitors
        .iter()
        .map(|m| (m.index, m.primary, m.origin, m.logical_size))
        .collect();
    assert_eq!(
        v,
        vec![
            (0, true, [0, 0], [640, 800]),
            (1, false, [640, 0], [640, 800])
        ]
    );
    rig.input_ok(json!({"action": "mouse_move", "coordinate": [639, 0]}));
    rig.input_ok(json!({"action": "mouse_move", "coordinate": [640, 0]}));
    assert_eq!(rig.x.pointer(), [640, 0]);
    let Reply::Cursor(c) = rig.ok(Request::CursorPosition) else {
        panic!()
    };
    assert_eq!((c.x, c.y, c.monitor), (640, 0, 1));

    // Region on the right monitor: clipped with monitor 1, refused with monitor 0.
    let o = rig.shot(json!({"format": "png", "monitor": 1, "region": [600, 10, 700, 60], "include_cursor": false}));
    let (img, r) = decode_shot(&o);
    assert_eq!(
        (img.width, img.height, r.meta.origin, r.monitor),
        (60, 50, [640, 10], 1)
    );
    assert_eq!(r.logical_size, Some([640, 800]));
    assert_eq!(r.region, Some([600, 10, 700, 60]));
    let o = rig.shot(json!({"format": "png", "monitor": 0, "region": [700, 10, 800, 60]}));
    assert_eq!(code(&o), "FEATURE_NOT_SUPPORTED");
    assert_eq!(
        details(&o)["reason"],
        "region [700, 10, 800, 60] does not intersect monitor 0"
    );
    run(d, "xrandr", &["--delmonitor", "LEFT"]);
    run(d, "xrandr", &["--delmonitor", "RIGHT"]);
}

#[test]
fn cursor_position_matches_the_last_move_and_the_server() {
    let rig = Rig::new();
    rig.input_ok(json!({"action": "mouse_move", "coordinate": [321, 123]}));
    let Reply::Cursor(c) = rig.ok(Request::CursorPosition) else {
        panic!()
    };
    assert_eq!([c.x, c.y], [321, 123]);
    assert_eq!(rig.x.pointer(), [321, 123]);
    let xd = run(&rig.x.display, "xdotool", &["getmouselocation"]);
    assert!(xd.starts_with("x:321 y:123"), "{xd}");
    let o = rig.go(Request::CursorPosition);
    assert_eq!(
        o.audit.unwrap().details,
        serde_json::Map::new(),
        "position never logged"
    );
}

#[test]
fn permissions_answer_per_name() {
    let rig = Rig::new();
    let r = rig.ok(Request::Permissions(serde_json::from_value(json!({
        "permissions": ["screen_recording", "accessibility", "input_monitoring", "camera", "camera"]
    })).unwrap()));
    let Reply::Permissions(p) = r else { panic!() };
    assert_eq!(
        serde_json::to_value(&p).unwrap(),
        json!({"permissions": {"accessibility": "granted", "camera": "not_applicable",
               "input_monitoring": "granted", "screen_recording": "granted"}})
    );
    let Reply::Permissions(p) = rig.ok(Request::Permissions(
        serde_json::from_value(json!({"permissions": []})).unwrap(),
    )) else {
        panic!()
    };
    assert!(p.permissions.is_empty());
}

#[test]
fn wait_sleeps_capped_and_holds_the_machine_lock() {
    let rig = Rig::new();
    let t = std::time::Instant::now();
    rig.input_ok(json!({"action": "wait", "duration_ms": 300}));
    assert!(t.elapsed() >= std::time::Duration::from_millis(300));
    let t = std::time::Instant::now();
    rig.input_ok(json!({"action": "wait", "duration_ms": 60_000}));
    let e = t.elapsed();
    assert!(
        e >= std::time::Duration::from_secs(5) && e < std::time::Duration::from_secs(30),
        "{e:?}"
    );

    // A wait from one session and a screenshot from another run one after the other.
    let other = shim_cu::policy::SessionState::default();
    let start = std::time::Instant::now();
    std::thread::scope(|s| {
        let w = s.spawn(|| {
            rig.input_ok(json!({"action": "wait", "duration_ms": 1500}));
            start.elapsed()
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        let shot = s.spawn(|| {
            let o = rig.go_in(
                &other,
                Request::Screenshot(serde_json::from_value(json!({"format": "png"})).unwrap()),
            );
            assert!(o.reply.is_ok());
            start.elapsed()
        });
        let (wait_end, shot_end) = (w.join().unwrap(), shot.join().unwrap());
        assert!(
            shot_end >= wait_end,
            "screenshot finished at {shot_end:?}, wait at {wait_end:?}"
        );
    });
}
