//! Computer-use latency on a private 1440x900 Xvfb: screenshot (capture, PNG encode, JPEG
//! encode) and input (action received by the engine → event seen by a recorder window).
//! Run with `cargo xtask bench cu`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs
)]

#[cfg(target_os = "linux")]
fn main() {
    use std::sync::Arc;
    use std::time::Duration;
    use std::time::Instant;

    use shim_cu::engine::Ctx;
    use shim_cu::engine::Request;
    use shim_cu::testing::Recorder;
    use shim_cu::testing::Xvfb;
    use shim_cu::testing::run;

    fn stats(name: &str, mut v: Vec<Duration>) {
        v.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let mean = v.iter().map(|d| ms(*d)).sum::<f64>() / v.len() as f64;
        println!(
            "{name:<34} n={:<3} median {:>7.2} ms  mean {:>7.2} ms  min {:>7.2} ms  max {:>7.2} ms",
            v.len(),
            ms(v[v.len() / 2]),
            mean,
            ms(v[0]),
            ms(v[v.len() - 1])
        );
    }

    let x = Xvfb::start(1440, 900);
    // Something non-uniform to encode: a few xterms on a patterned root.
    run(
        &x.display,
        "xsetroot",
        &["-mod", "4", "4", "-fg", "#336699", "-bg", "#ddeeff"],
    );
    for g in ["80x24+20+20", "80x24+600+300", "100x30+200+500"] {
        x.spawn(
            "xterm",
            &[
                "-geometry",
                g,
                "-e",
                "sh",
                "-c",
                "ls -lR /usr/share | head -100; sleep 600",
            ],
        );
    }
    std::thread::sleep(Duration::from_secs(2));
    let desktop = shim_cu::open(&shim_cu::OpenOptions {
        display: Some(x.display.clone()),
        ..Default::default()
    })
    .unwrap();
    let n = 20;
    let full = [0, 0, 1440, 900];
    let (mut cap, mut png, mut jpg) = (Vec::new(), Vec::new(), Vec::new());
    let (mut png_bytes, mut jpg_bytes) = (0, 0);
    for _ in 0..n {
        let t = Instant::now();
        let img = desktop.capture.capture(full, true).unwrap();
        cap.push(t.elapsed());
        let t = Instant::now();
        png_bytes = shim_cu::encode::png(&img).unwrap().len();
        png.push(t.elapsed());
        let t = Instant::now();
        jpg_bytes = shim_cu::encode::jpeg(&img, 75).unwrap().len();
        jpg.push(t.elapsed());
    }
    println!("screenshot at 1440x900 ({png_bytes} bytes PNG, {jpg_bytes} bytes JPEG q75)");
    stats("capture (GetImage + cursor)", cap.clone());
    stats("PNG encode", png.clone());
    stats("JPEG encode (q75)", jpg.clone());
    stats(
        "capture + PNG",
        cap.iter().zip(&png).map(|(a, b)| *a + *b).collect(),
    );
    stats(
        "capture + JPEG",
        cap.iter().zip(&jpg).map(|(a, b)| *a + *b).collect(),
    );

    // Whole SCREENSHOT_REQUEST through the engine (lock, rate window, base64).
    let engine = shim_cu::Engine::new(
        desktop,
        shim_cu::EngineConfig {
            enable_clipboard: false,
            enable_clipboard_read_foreign: false,
            max_screenshots_per_minute: 100_000,
            masked_regions: Vec::new(),
        },
        Arc::new(shim_cu::policy::SystemClock::default()),
    );
    let features = engine.features();
    let session = shim_cu::policy::SessionState::default();
    let ctx = Ctx {
        session: &session,
        features: &features,
        max_file_size: 10_485_760,
    };
    for fmt in ["png", "jpeg"] {
        let mut v = Vec::new();
        for _ in 0..n {
            let req = Request::Screenshot(
                serde_json::from_value(serde_json::json!({"format": fmt})).unwrap(),
            );
            let t = Instant::now();
            assert!(engine.handle(ctx, req).reply.is_ok());
            v.push(t.elapsed());
        }
        stats(&format!("SCREENSHOT_REQUEST {fmt} (engine)"), v);
    }

    // Input: action handed to the engine → motion/button event seen by the recorder.
    let rec = Recorder::start(&x.display, [700, 100, 400, 300]);
    let mut moves = Vec::new();
    let mut clicks = Vec::new();
    for i in 0..50i64 {
        rec.take();
        let p = [750 + i, 150 + i];
        let req = Request::Input(
            serde_json::from_value(serde_json::json!({"action": "mouse_move", "coordinate": p}))
                .unwrap(),
        );
        let t = Instant::now();
        assert!(engine.handle(ctx, req).reply.is_ok());
        let ev = rec.wait(Duration::from_secs(5), |e| {
            e.iter()
                .any(|e| e.kind == "motion" && i64::from(e.root[0]) == p[0])
        });
        let seen = ev
            .iter()
            .find(|e| e.kind == "motion" && i64::from(e.root[0]) == p[0])
            .unwrap()
            .seen;
        moves.push(seen - t);
        rec.take();
        let req = Request::Input(
            serde_json::from_value(serde_json::json!({"action": "left_click", "coordinate": p}))
                .unwrap(),
        );
        let t = Instant::now();
        assert!(engine.handle(ctx, req).reply.is_ok());
        let ev = rec.wait(Duration::from_secs(5), |e| {
            e.iter().any(|e| e.kind == "button_release")
        });
        let seen = ev.iter().find(|e| e.kind == "button_release").unwrap().seen;
        clicks.push(seen - t);
    }
    println!("input (action received -> event seen by the recorder)");
    stats("mouse_move", moves);
    stats("left_click (press+release)", clicks);
}

#[cfg(not(target_os = "linux"))]
fn main() {}
