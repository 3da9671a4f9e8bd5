//! Computer-use latency on a private 1920x1080 Xvfb showing issue 29's scene: screenshot
//! (capture; PNG filter and level candidates with size, time and CPU; JPEG encode; the
//! platform's payload through the engine) and input (action received by the engine → event seen by a recorder window).
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

    /// CPU time of this process (all threads) so far, from /proc/self/stat (clock ticks of
    /// 10 ms: read over many shots).
    fn cpu() -> Duration {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let rest = stat.rsplit(')').next().unwrap_or("");
        let f: Vec<u64> = rest
            .split_whitespace()
            .map(|v| v.parse().unwrap_or(0))
            .collect();
        // Fields 14 and 15 (utime, stime), counted from after the command name.
        let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
        Duration::from_millis(ticks * 10)
    }

    // Issue 29's scene: 1920x1080, an xterm full of log text, a clock, a photo-like window.
    let x = Xvfb::start(1920, 1080);
    let _scene = shim_cu::testing::Scene::start(&x);
    let desktop = shim_cu::open(&shim_cu::OpenOptions {
        display: Some(x.display.clone()),
        ..Default::default()
    })
    .unwrap();
    let n = 30;
    let full = [0, 0, 1920, 1080];
    let img = desktop.capture.capture(full, false).unwrap();
    let mut cap = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        let _ = desktop.capture.capture(full, false).unwrap();
        cap.push(t.elapsed());
    }
    println!("issue 29 scene at 1920x1080 (xterm of log text, clock, photo-like window)");
    stats("capture (GetImage)", cap);

    // PNG: filter and level by measurement (size before the wire, time, CPU).
    use shim_cu::encode::PngFilter;
    use shim_cu::encode::PngOptions;
    let threads = PngOptions::default().threads;
    println!("PNG candidates ({threads} threads; n={n}; CPU = all threads):");
    let mut table = Vec::new();
    for (fname, filter) in [
        ("Sub", PngFilter::Fixed(1)),
        ("Up", PngFilter::Fixed(2)),
        ("Paeth", PngFilter::Fixed(4)),
        ("adaptive", PngFilter::Adaptive),
    ] {
        for level in [1u8, 2, 3, 6] {
            let opts = PngOptions {
                filter,
                level,
                threads,
            };
            let mut v = Vec::new();
            let mut bytes = 0;
            let c0 = cpu();
            for _ in 0..n {
                let t = Instant::now();
                bytes = shim_cu::encode::png_with(&img, opts).unwrap().len();
                v.push(t.elapsed());
            }
            let cpu_ms = (cpu() - c0).as_secs_f64() * 1000.0 / f64::from(n);
            v.sort();
            let p50 = v[v.len() / 2].as_secs_f64() * 1000.0;
            println!(
                "  {fname:<9} level {level}: {:>8} bytes  p50 {p50:>6.1} ms  CPU {cpu_ms:>6.1} ms{}",
                bytes,
                if opts == PngOptions::default() {
                    "  <- default"
                } else {
                    ""
                }
            );
            table.push((fname, level, bytes, p50, cpu_ms));
        }
    }
    // The encoder this replaced: the png crate at its fastest setting.
    {
        let mut v = Vec::new();
        let mut bytes = 0;
        for _ in 0..n {
            let t = Instant::now();
            let mut out = Vec::new();
            let mut enc = png::Encoder::new(&mut out, img.width, img.height);
            enc.set_color(png::ColorType::Rgb);
            enc.set_compression(png::Compression::Fast);
            let mut w = enc.write_header().unwrap();
            w.write_image_data(&img.rgb).unwrap();
            w.finish().unwrap();
            bytes = out.len();
            v.push(t.elapsed());
        }
        v.sort();
        println!(
            "  before (png crate, Compression::Fast, 1 thread): {bytes} bytes  p50 {:.1} ms",
            v[v.len() / 2].as_secs_f64() * 1000.0
        );
    }
    // JPEG q75, with and without optimised Huffman tables.
    for optimize in [false, true] {
        let mut v = Vec::new();
        let mut jpg_bytes = 0;
        let c0 = cpu();
        for _ in 0..n {
            let t = Instant::now();
            jpg_bytes = shim_cu::encode::jpeg_with(&img, 75, optimize)
                .unwrap()
                .len();
            v.push(t.elapsed());
        }
        let jpg_cpu = (cpu() - c0).as_secs_f64() * 1000.0 / f64::from(n);
        println!(
            "JPEG q75 (optimised Huffman tables: {optimize}): {jpg_bytes} bytes, CPU {jpg_cpu:.1} ms"
        );
        stats("JPEG encode (q75)", v);
    }

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
    // The platform's own payload (issue 29), after a warm-up.
    for fmt in ["png", "jpeg"] {
        let payload = serde_json::json!({"monitor": 0, "quality": 75, "format": fmt, "include_cursor": false});
        let req = || Request::Screenshot(serde_json::from_value(payload.clone()).unwrap());
        for _ in 0..3 {
            assert!(engine.handle(ctx, req()).reply.is_ok());
        }
        let mut v = Vec::new();
        let c0 = cpu();
        for _ in 0..n {
            let t = Instant::now();
            assert!(engine.handle(ctx, req()).reply.is_ok());
            v.push(t.elapsed());
        }
        let cpu_ms = (cpu() - c0).as_secs_f64() * 1000.0 / f64::from(n);
        println!(
            "SCREENSHOT_REQUEST {fmt} (engine, platform payload): CPU {cpu_ms:.1} ms per shot"
        );
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
