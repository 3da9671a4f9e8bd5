//! Issue 29's screenshot benchmark (`cargo xtask bench cu` builds the release binary and
//! calls this with its path): the real daemon, driving a private 1920x1080 Xvfb that shows
//! an xterm full of log text, a clock and a photo-like window, answers the platform's own
//! screenshot payload (`{"monitor":0,"quality":75,"format":...,"include_cursor":false}`)
//! to the loopback platform peer. Per format, 30 shots after a warm-up: the bytes the peer
//! read OFF ITS SOCKET per screenshot (WebSocket framing and any compression included), the
//! p50 time from request to response, and the daemon's CPU per shot, with PASS/FAIL against
//! the targets. Also a 1 MB text `FILE_READ` (bytes off the socket, time). Exits 1
//! on a FAIL.
#![allow(clippy::print_stdout)]

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("bench_screenshot needs Linux (an Xvfb)");
}

#[cfg(target_os = "linux")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    bench::main()
}

#[cfg(target_os = "linux")]
mod bench_common;

#[cfg(target_os = "linux")]
mod bench {
    use std::process::Stdio;
    use std::time::Duration;
    use std::time::Instant;

    use shim_auth::KdfParams;
    use shim_platform_peer::Connection;
    use shim_platform_peer::Peer;
    use shim_platform_peer::PeerConfig;
    use shim_protocol::Message;

    type Res<T> = Result<T, Box<dyn std::error::Error>>;

    const SESSION: &str = "3b1d6f0e-bench-4e2e-9a11-000000000029";
    const T: Duration = Duration::from_secs(60);
    const SHOTS: usize = 30;

    /// Issue 29's targets for one format: wire bytes (1 KB = 1000 bytes), p50 answer, CPU.
    struct Target {
        format: &'static str,
        max_wire: u64,
        max_p50: Duration,
        max_cpu: Duration,
    }

    const TARGETS: [Target; 2] = [
        Target {
            format: "png",
            max_wire: 500_000,
            max_p50: Duration::from_millis(60),
            max_cpu: Duration::from_millis(60),
        },
        Target {
            format: "jpeg",
            max_wire: 400_000,
            max_p50: Duration::from_millis(25),
            max_cpu: Duration::from_millis(15),
        },
    ];

    /// The daemon's CPU time (user + system) from /proc/PID/stat, in 10 ms ticks.
    fn cpu_of(pid: u32) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let rest = stat.rsplit(')').next().unwrap_or("");
        let f: Vec<u64> = rest
            .split_whitespace()
            .map(|v| v.parse().unwrap_or(0))
            .collect();
        let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
        Duration::from_millis(ticks * 10)
    }

    fn decode(v: serde_json::Value) -> Res<Message> {
        let frame =
            serde_json::json!({"type": v["type"], "id": "x", "ts": 1.0, "payload": v["payload"]});
        Ok(shim_protocol::frame::decode_bytes(frame.to_string().as_bytes())?.message)
    }

    fn ms(d: Duration) -> f64 {
        d.as_secs_f64() * 1000.0
    }

    /// One request: its answer time and the bytes the peer read off the socket meanwhile.
    async fn measured(conn: &Connection, msg: Message) -> Res<(Duration, u64, Message)> {
        let before = conn.bytes_received();
        let t = Instant::now();
        let r = conn.request(msg, T).await?;
        let took = t.elapsed();
        Ok((took, conn.bytes_received() - before, r.frame.message))
    }

    #[tokio::main]
    pub(super) async fn main() -> Res<()> {
        let bin = std::env::args()
            .nth(1)
            .ok_or("usage: bench_screenshot PATH-TO-autogpt-shim")?;
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "machine load: {}",
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        );
        let x = shim_cu::testing::Xvfb::try_start(1920, 1080)?;
        let _scene = shim_cu::testing::Scene::start(&x);

        let dir = tempfile::tempdir()?;
        let creds = dir.path().join("creds");
        crate::bench_common::seed_file(&creds, KdfParams::MIN_ACCEPTED)?;
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root)?;
        // 1 MB of log text for FILE_READ.
        let mut text = String::with_capacity(1_000_100);
        let mut i = 0u64;
        while text.len() < 1_000_000 {
            text.push_str(&format!(
                "2026-12-05T00:{:02}:{:02}.{:03}Z INFO worker-{} request_id={:08x} GET /api/v1/items/{} status=200 in {}ms\n",
                i / 60 % 60,
                i % 60,
                i * 37 % 1000,
                i % 8,
                i.wrapping_mul(2_654_435_761) % 4_294_967_296,
                i * 13,
                i * 7 % 250
            ));
            i += 1;
        }
        text.truncate(1_000_000);
        std::fs::write(root.join("1mb.log"), &text)?;

        let peer = Peer::start(PeerConfig::default()).await?;
        let mut cmd = tokio::process::Command::new(&bin);
        cmd.args([
            "--allowed-root",
            root.to_str().ok_or("root")?,
            "start",
            "--session-id",
            SESSION,
            "--enable-computer-use",
            "--computer-use-display",
            "user",
        ]);
        crate::bench_common::daemon_env(
            &mut cmd,
            dir.path(),
            &peer.ws_base(),
            &dir.path().join("audit.log"),
            "bench-machine-0029",
        );
        crate::bench_common::use_file(&mut cmd, &creds);
        // 72 screenshots in a few seconds: far past the default rate window (10 a minute).
        cmd.env("AUTOGPT_SHIM_MAX_SCREENSHOTS_PER_MINUTE", "100000")
            .env("DISPLAY", &x.display)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let pid = child.id().ok_or("no daemon pid")?;
        let conn = peer
            .next_connection(T)
            .await
            .ok_or("the daemon did not connect")?;

        let mut pass = true;
        for target in &TARGETS {
            let shot = || {
                decode(serde_json::json!({"type": "SCREENSHOT_REQUEST", "payload":
                    {"monitor": 0, "quality": 75, "format": target.format, "include_cursor": false}}))
            };
            for _ in 0..3 {
                measured(&conn, shot()?).await?;
            }
            let mut times = Vec::with_capacity(SHOTS);
            let mut wire = Vec::with_capacity(SHOTS);
            let mut payload = 0usize;
            let c0 = cpu_of(pid);
            for _ in 0..SHOTS {
                let (took, bytes, msg) = measured(&conn, shot()?).await?;
                let Message::ScreenshotResponse(p) = msg else {
                    return Err(format!("expected SCREENSHOT_RESPONSE, got {msg:?}").into());
                };
                payload = p.image_base64.len();
                times.push(took);
                wire.push(bytes);
            }
            let cpu = (cpu_of(pid) - c0) / SHOTS as u32;
            times.sort();
            wire.sort();
            let p50 = times[SHOTS / 2];
            let wire50 = wire[SHOTS / 2];
            let ok_wire = wire50 <= target.max_wire;
            let ok_p50 = p50 <= target.max_p50;
            let ok_cpu = cpu <= target.max_cpu;
            pass &= ok_wire && ok_p50 && ok_cpu;
            let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
            println!(
                "{} 1920x1080, platform payload, {SHOTS} shots: base64 payload {:.0} KB",
                target.format.to_uppercase(),
                payload as f64 / 1000.0
            );
            println!(
                "  bytes off the socket (p50): {:.0} KB, target <= {} KB {}",
                wire50 as f64 / 1000.0,
                target.max_wire / 1000,
                verdict(ok_wire)
            );
            println!(
                "  answer p50 {:.1} ms (min {:.1}, max {:.1}), target <= {} ms {}",
                ms(p50),
                ms(times[0]),
                ms(times[SHOTS - 1]),
                target.max_p50.as_millis(),
                verdict(ok_p50)
            );
            println!(
                "  daemon CPU per shot {:.1} ms, target <= {} ms {}",
                ms(cpu),
                target.max_cpu.as_millis(),
                verdict(ok_cpu)
            );
        }

        // A 1 MB text FILE_READ.
        let read = || {
            decode(serde_json::json!({"type": "FILE_READ", "payload":
                {"path": root.join("1mb.log").to_string_lossy(), "encoding": "utf-8"}}))
        };
        measured(&conn, read()?).await?;
        let mut times = Vec::new();
        let mut wire = 0;
        for _ in 0..10 {
            let (took, bytes, msg) = measured(&conn, read()?).await?;
            if !matches!(msg, Message::FileContents(_)) {
                return Err(format!("expected FILE_CONTENTS, got {msg:?}").into());
            }
            times.push(took);
            wire = bytes;
        }
        times.sort();
        println!(
            "FILE_READ of 1 MB of log text, 10 reads: {:.0} KB off the socket, p50 {:.1} ms",
            wire as f64 / 1000.0,
            ms(times[times.len() / 2])
        );

        let _ = child.start_kill();
        let _ = child.wait().await;
        if !pass {
            // Returned, not `process::exit`: the Xvfb, the scene and the temporary files
            // are dropped on the way out instead of outliving the bench.
            return Err("a target above printed FAIL".into());
        }
        Ok(())
    }
}
