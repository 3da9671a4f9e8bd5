use serde_json::json;

use super::common::*;

fn red_root(rig: &Rig) {
    run(&rig.x.display, "xsetroot", &["-solid", "#ff0000"]);
}

#[test]
fn pixels_png_jpeg_and_regions() {
    let rig = Rig::new();
    red_root(&rig);
    rig.x
        .spawn("xterm", &["-bg", "#00ff00", "-geometry", "40x10+400+300"]);
    // Wait until the green window is on screen.
    wait_for(T, || {
        let o = rig.shot(json!({"format": "png", "include_cursor": false}));
        let (img, _) = decode_shot(&o);
        (img.pixel(450, 350) == Some([0, 255, 0])).then_some(())
    })
    .expect("xterm never appeared");
    rig.input_ok(json!({"action": "mouse_move", "coordinate": [1000, 700]}));

    let o = rig.shot(json!({"format": "png", "include_cursor": false}));
    let (img, r) = decode_shot(&o);
    assert_eq!(
        (r.width, r.height, r.mime_type.as_str()),
        (1280, 800, "image/png")
    );
    assert_eq!(
        (r.monitor, r.region, r.display_scale, r.logical_size),
        (0, None, 1.0, Some([1280, 800]))
    );
    assert_eq!(img.pixel(5, 5), Some([255, 0, 0]));
    assert_eq!(img.pixel(1270, 790), Some([255, 0, 0]));
    assert_eq!(img.pixel(420, 320), Some([0, 255, 0]));

    let o = rig.shot(json!({"format": "jpeg", "quality": 90, "include_cursor": false}));
    let (img, r) = decode_shot(&o);
    assert_eq!(r.mime_type, "image/jpeg");
    let near = |p: [u8; 3], q: [u8; 3]| p.iter().zip(q).all(|(a, b)| a.abs_diff(b) <= 8);
    assert!(
        near(img.pixel(5, 5).unwrap(), [255, 0, 0]),
        "{:?}",
        img.pixel(5, 5)
    );
    assert!(near(img.pixel(420, 320).unwrap(), [0, 255, 0]));
    let a = o.audit.unwrap();
    assert_eq!(a.op, "SCREENSHOT_REQUEST");
    let d = serde_json::Value::Object(a.details);
    assert_eq!(d["format"], "jpeg");
    assert_eq!(d["quality"], 90);
    assert_eq!(d["width"], 1280);
    assert!(d["image_bytes_returned"].as_u64().unwrap() > 0);
    assert!(d.get("include_cursor").is_none());

    let o = rig.shot(json!({"format": "png", "region": [100, 100, 300, 200]}));
    let (img, r) = decode_shot(&o);
    assert_eq!((img.width, img.height), (200, 100));
    assert_eq!(
        (r.meta.origin, r.meta.display_id, r.region),
        ([100, 100], 0, Some([100, 100, 300, 200]))
    );
    assert_eq!(img.pixel(0, 0), Some([255, 0, 0]));

    for m in [7, -1] {
        let (_, r) = decode_shot(&rig.shot(json!({"format": "png", "monitor": m})));
        assert_eq!((r.monitor, r.width), (0, 1280), "monitor {m}");
    }
    let o = rig.shot(json!({"region": [0, 0, 5, 5], "window_id": "win_x"}));
    assert_eq!(code(&o), "FEATURE_NOT_SUPPORTED");
    assert_eq!(details(&o)["feature"], "screenshot.region+window");
    let o = rig.shot(json!({"window_id": "win_x"}));
    assert_eq!(
        details(&o)["reason"],
        "not advertised on this host",
        "no screenshot.window on X11"
    );
}

#[test]
fn size_limit_and_rate_limit() {
    let mut cfg = cfg();
    cfg.max_screenshots_per_minute = 10;
    let mut rig = Rig::with(Xvfb::start(1280, 800), cfg);
    rig.max_file_size = 1000;
    run(&rig.x.display, "xterm", &["-version"]);
    rig.x.spawn("xterm", &["-geometry", "80x24+0+0"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let o = rig.shot(json!({"format": "png"}));
    assert_eq!(code(&o), "FILE_TOO_LARGE");
    let n = serde_json::Value::Object(o.audit.unwrap().details)["image_bytes_returned"]
        .as_u64()
        .unwrap();
    assert!(n > 1000);
    if let Err(e) = &o.reply {
        assert_eq!(
            e.message,
            format!("Screenshot is {n} bytes; limit is 1000 bytes.")
        );
    }
    rig.max_file_size = 10_485_760;
    for _ in 0..9 {
        assert!(
            rig.shot(json!({"format": "jpeg", "quality": 10}))
                .reply
                .is_ok()
        );
    }
    let o = rig.shot(json!({"format": "png"}));
    assert_eq!(code(&o), "SHIM_OVERLOADED");
    if let Err(e) = &o.reply {
        assert_eq!(e.message, "Screenshot rate limit exceeded (10/minute).");
    }
    assert!(o.audit.is_some(), "audited");
    rig.clock.advance(std::time::Duration::from_secs(60));
    assert!(rig.shot(json!({"format": "png"})).reply.is_ok());
}

#[test]
fn cursor_overlay_changes_pixels_around_the_pointer() {
    let rig = Rig::new();
    red_root(&rig);
    rig.input_ok(json!({"action": "mouse_move", "coordinate": [500, 400]}));
    let region = json!([480, 380, 540, 440]);
    let (with, _) =
        decode_shot(&rig.shot(json!({"format": "png", "region": region, "include_cursor": true})));
    let (without, _) =
        decode_shot(&rig.shot(json!({"format": "png", "region": region, "include_cursor": false})));
    assert!(without.rgb.chunks(3).all(|p| p == [255, 0, 0]));
    assert_ne!(with.rgb, without.rgb, "the pointer image is composited");
}

#[test]
fn masked_regions_are_black_and_nothing_else_changes() {
    let mut c = cfg();
    c.masked_regions = vec![[100, 100, 300, 250]];
    let masked = Rig::with(Xvfb::start(1280, 800), c);
    red_root(&masked);
    masked
        .x
        // `sleep` instead of a shell: a shell's prompt, drawn whenever the shell gets to it,
        // made the two captures below differ at (333,153) on a loaded machine.
        .spawn(
            "xterm",
            &[
                "-bg",
                "#00ff00",
                "-geometry",
                "40x10+150+150",
                "-e",
                "sleep",
                "600",
            ],
        );
    let desktop = shim_cu::open(&shim_cu::OpenOptions {
        display: Some(masked.x.display.clone()),
        ..Default::default()
    })
    .unwrap();
    // Wait until the xterm is painted, inside and outside the mask: a fixed sleep was too
    // short on a loaded machine (CI saw the window half drawn).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let raw = desktop.capture.capture([0, 0, 1280, 800], false).unwrap();
        let green = [(200, 200), (320, 160), (160, 240)]
            .iter()
            .all(|&(x, y)| raw.pixel(x, y) == Some([0, 255, 0]));
        if green {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the xterm was never painted"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (img, _) = decode_shot(&masked.shot(json!({"format": "png", "include_cursor": false})));
    for y in 0..800 {
        for x in 0..1280 {
            let p = img.pixel(x, y).unwrap();
            let inside = (100..300).contains(&x) && (100..250).contains(&y);
            if inside {
                assert_eq!(p, [0, 0, 0], "({x},{y}) inside the mask");
            }
        }
    }
    // Outside the mask the pixels are those of an unmasked capture of the same screen.
    let raw = desktop.capture.capture([0, 0, 1280, 800], false).unwrap();
    for y in 0..800 {
        for x in 0..1280 {
            let inside = (100..300).contains(&x) && (100..250).contains(&y);
            if !inside {
                assert_eq!(
                    img.pixel(x, y),
                    raw.pixel(x, y),
                    "({x},{y}) outside the mask"
                );
            }
        }
    }
    assert_eq!(
        raw.pixel(200, 200),
        Some([0, 255, 0]),
        "the mask hid a real window"
    );
    // A region overlapping the mask is masked too.
    let (img, _) =
        decode_shot(&masked.shot(
            json!({"format": "png", "region": [250, 200, 350, 300], "include_cursor": false}),
        ));
    assert_eq!(img.pixel(10, 10), Some([0, 0, 0]));
    assert_eq!(img.pixel(60, 60), raw.pixel(310, 260));
    assert_ne!(img.pixel(60, 60), Some([0, 0, 0]));
}
