//! The hardware and local-model benchmark (`cargo xtask bench hw` builds the release binary
//! and calls this with its path):
//!
//! * serial throughput through the daemon on a pseudo-terminal pair (PROPOSED
//!   `SERIAL_WRITE` of 64 KiB, then of 1 MiB, the largest; `SERIAL_READ`s of 64 KiB, the
//!   largest; echoed by a thread on the far end) against the same pattern on the same kind
//!   of pair directly; target: at least 50 % for both patterns, with the time of one
//!   request of each kind, the machine's load and the audit log's fdatasync floor beside it;
//! * what the local-model route adds per chunk: a stream of `BENCH_HW_CHUNKS` (default
//!   5000) NDJSON deltas from the Ollama stand-in, read directly with an HTTP client versus
//!   through the daemon to the peer as `LOCAL_LLM_COMPLETION_CHUNK`s; target: under 1 ms.
//!
//! Prints the figures and PASS/FAIL; exits 1 on a FAIL.
#![allow(clippy::print_stdout)]

// Pty pairs exist on Unix only; elsewhere the example says so and exits.
#[cfg(not(unix))]
fn main() {
    println!("bench_hw needs Unix pseudo-terminal pairs");
}

#[cfg(unix)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    bench::main()
}

#[cfg(unix)]
mod bench_common;

#[cfg(unix)]
mod bench {
    use std::io::Read;
    use std::io::Write;
    use std::os::unix::fs::symlink;
    use std::path::Path;
    use std::process::Stdio;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::sync::atomic::Ordering;
    use std::time::Duration;
    use std::time::Instant;

    use base64::Engine;
    use serialport::SerialPort;
    use serialport::TTYPort;
    use shim_auth::KdfParams;
    use shim_platform_peer::AckConfig;
    use shim_platform_peer::Connection;
    use shim_platform_peer::Peer;
    use shim_platform_peer::PeerConfig;
    use shim_platform_peer::ollama::Chat;
    use shim_platform_peer::ollama::FakeOllama;
    use shim_platform_peer::ollama::Tags;
    use shim_platform_peer::ollama::delta_line;
    use shim_platform_peer::ollama::done_line;
    use shim_protocol::Capability;
    use shim_protocol::Message;
    use shim_protocol::messages::hardware::FlowControl;
    use shim_protocol::messages::hardware::Parity;
    use shim_protocol::messages::hardware::SerialOpen;
    use shim_protocol::messages::hardware::SerialRead;
    use shim_protocol::messages::hardware::SerialWrite;
    use shim_protocol::messages::llm::ChatMessage;
    use shim_protocol::messages::llm::ChatRole;
    use shim_protocol::messages::llm::LocalLlmCompletion;

    type Res<T> = Result<T, Box<dyn std::error::Error>>;

    const SESSION: &str = "3b1d6f0e-bench-4e2e-9a11-000000000002";
    const T: Duration = Duration::from_secs(60);
    const STEP: usize = 64 * 1024;
    /// The largest `SERIAL_READ` (P3) and the largest `SERIAL_WRITE` (1 MiB).
    const READ_MAX: usize = 64 * 1024;
    const WRITE_MAX: usize = 1024 * 1024;
    const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

    fn env_num(k: &str, default: u64) -> u64 {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    /// A pty pair with close-on-exec descriptors: (far end, device side, device path).
    fn pty() -> Res<(TTYPort, TTYPort, String)> {
        let (m, s) = TTYPort::pair()?;
        let path = s.name().ok_or("pty without a name")?;
        Ok((m.try_clone_native()?, s.try_clone_native()?, path))
    }

    /// Echoes the far end back, reading and writing on separate threads.
    fn echo(master: TTYPort, stop: Arc<AtomicBool>) -> Res<()> {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let mut reader = master;
        let mut writer = reader.try_clone_native()?;
        reader.set_timeout(Duration::from_millis(50))?;
        writer.set_timeout(Duration::from_secs(30))?;
        std::thread::spawn(move || {
            let mut buf = vec![0u8; STEP];
            while !stop.load(Ordering::SeqCst) {
                match reader.read(&mut buf) {
                    Ok(n) if n > 0 => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            return;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                    _ => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        std::thread::spawn(move || {
            while let Ok(b) = rx.recv() {
                if writer.write_all(&b).is_err() {
                    return;
                }
            }
        });
        Ok(())
    }

    /// The same pattern as through the daemon, on the device side directly: write `step`
    /// bytes (drained), read them back; MB/s, and the CPU time this process (the program
    /// and the far end's echo threads) used for it.
    fn direct_serial(total: usize, step: usize) -> Res<(f64, Duration)> {
        let (m, _keep, path) = pty()?;
        let stop = Arc::new(AtomicBool::new(false));
        echo(m, stop.clone())?;
        let builder = serialport::new(&path, 115_200).timeout(Duration::from_secs(10));
        let mut dev = TTYPort::open(&builder)?;
        let data = vec![0x5au8; step];
        let mut buf = vec![0u8; step];
        let cpu = cpu_time("self");
        let started = Instant::now();
        let mut moved = 0;
        while moved < total {
            dev.write_all(&data)?;
            dev.flush()?;
            let mut got = 0;
            while got < step {
                got += dev.read(&mut buf[..step - got])?;
            }
            moved += step;
        }
        let secs = started.elapsed().as_secs_f64();
        let cpu = cpu_time("self").saturating_sub(cpu);
        stop.store(true, Ordering::SeqCst);
        Ok((total as f64 / secs / 1e6, cpu))
    }

    /// Through the daemon: `SERIAL_WRITE` of `step` bytes, then `SERIAL_READ`s of at most
    /// 64 KiB (the protocol's largest) until they came back. MB/s, and the mean time of one
    /// write and one read request.
    async fn daemon_serial(
        conn: &Connection,
        port: &str,
        total: usize,
        step: usize,
    ) -> Res<(f64, Duration, Duration)> {
        let r = conn
            .request(
                Message::SerialOpen(SerialOpen {
                    port: port.to_owned(),
                    baud_rate: 115_200,
                    data_bits: 8,
                    parity: Parity::None,
                    stop_bits: 1,
                    flow_control: FlowControl::None,
                }),
                T,
            )
            .await?;
        let Message::SerialOpened(o) = r.frame.message else {
            return Err(format!("SERIAL_OPEN: {:?}", r.frame.message).into());
        };
        let data = B64.encode(vec![0x5au8; step]);
        let (mut writing, mut reading, mut reads) = (Duration::ZERO, Duration::ZERO, 0u32);
        let started = Instant::now();
        let mut moved = 0;
        while moved < total {
            let t = Instant::now();
            let r = conn
                .request(
                    Message::SerialWrite(SerialWrite {
                        handle: o.handle.clone(),
                        data: data.clone(),
                        drain: true,
                    }),
                    T,
                )
                .await?;
            writing += t.elapsed();
            if !matches!(r.frame.message, Message::Ack(_)) {
                return Err(format!("SERIAL_WRITE: {:?}", r.frame.message).into());
            }
            let mut got = 0;
            while got < step {
                let t = Instant::now();
                let r = conn
                    .request(
                        Message::SerialRead(SerialRead {
                            handle: o.handle.clone(),
                            max_bytes: (step - got).min(READ_MAX) as u32,
                            timeout_ms: 5000,
                        }),
                        T,
                    )
                    .await?;
                reading += t.elapsed();
                reads += 1;
                let Message::SerialData(d) = r.frame.message else {
                    return Err(format!("SERIAL_READ: {:?}", r.frame.message).into());
                };
                got += d.size_bytes as usize;
            }
            moved += step;
        }
        let secs = started.elapsed().as_secs_f64();
        let _ = conn
            .request(
                Message::SerialClose(shim_protocol::messages::hardware::SerialClose {
                    handle: o.handle,
                }),
                T,
            )
            .await?;
        let writes = (total / step).max(1) as u32;
        Ok((
            total as f64 / secs / 1e6,
            writing / writes,
            reading / reads.max(1),
        ))
    }

    /// CPU time (user + system) a process has used so far, from `/proc/PID/stat` (in
    /// clock ticks of 10 ms: USER_HZ is 100 on Linux); zero where there is no procfs.
    fn cpu_time(pid: &str) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the command name, which ends with the last ')': utime and stime are
        // the 14th and 15th fields of the line, the 12th and 13th after it.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let ticks: u64 = rest
            .split_whitespace()
            .skip(11)
            .take(2)
            .filter_map(|f| f.parse::<u64>().ok())
            .sum();
        Duration::from_millis(ticks * 10)
    }

    /// The median of appending a 300-byte line and `fdatasync` in `dir`: what every
    /// audited request waits for (AUDIT_AUTH_CLI.md 1.11 step 4).
    fn fsync_floor(dir: &Path) -> Res<Duration> {
        let path = dir.join(format!("bench-hw-fsync-{}.probe", std::process::id()));
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)?;
        let mut samples: Vec<Duration> = (0..50)
            .map(|_| {
                let t = Instant::now();
                f.write_all(&[b'x'; 300])?;
                f.sync_data()?;
                Ok(t.elapsed())
            })
            .collect::<std::io::Result<_>>()?;
        drop(f);
        std::fs::remove_file(&path)?;
        samples.sort();
        Ok(samples[samples.len() / 2])
    }

    /// The Ollama stream read directly: seconds to the last line.
    async fn direct_stream(url: &str) -> Res<f64> {
        let client = reqwest::Client::new();
        let started = Instant::now();
        let mut resp = client
            .post(format!("{url}/api/chat"))
            .body("{}")
            .send()
            .await?;
        let mut lines = 0usize;
        while let Some(c) = resp.chunk().await? {
            lines += c.iter().filter(|b| **b == b'\n').count();
        }
        if lines == 0 {
            return Err("empty stream".into());
        }
        Ok(started.elapsed().as_secs_f64())
    }

    fn completion() -> Message {
        Message::LocalLlmCompletion(LocalLlmCompletion {
            model: "bench".into(),
            messages: vec![ChatMessage {
                role: ChatRole::User,
                content: "hi".into(),
            }],
            max_tokens: 1024,
            temperature: 0.0,
            top_p: 1.0,
            stream: true,
        })
    }

    fn verdict(ok: bool) -> &'static str {
        if ok { "PASS" } else { "FAIL" }
    }

    #[tokio::main]
    pub(super) async fn main() -> Res<()> {
        let bin = std::env::args()
            .nth(1)
            .ok_or("usage: bench_hw PATH-TO-autogpt-shim")?;
        let total = env_num("BENCH_HW_SERIAL_MIB", 8) as usize * 1024 * 1024;
        let chunks = env_num("BENCH_HW_CHUNKS", 5000) as usize;
        let dir = tempfile::tempdir()?;
        let creds = dir.path().join("creds");
        crate::bench_common::seed_file(&creds, KdfParams::MIN_ACCEPTED)?;
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root)?;
        // BENCH_HW_AUDIT_DIR: where the audit log goes (every request is an fdatasync).
        let audit_dir = std::env::var_os("BENCH_HW_AUDIT_DIR")
            .map_or_else(|| dir.path().to_owned(), std::path::PathBuf::from);
        let audit_log = audit_dir.join(format!("bench-hw-audit-{}.log", std::process::id()));

        // A fixture devfs/sysfs whose ttyACM0 is the device side of a pty pair.
        let (master, _keep, path) = pty()?;
        let stop = Arc::new(AtomicBool::new(false));
        echo(master, stop.clone())?;
        let sys = dir.path().join("sys");
        let dev = dir.path().join("dev");
        let usb = sys.join("devices/usb1/1-1");
        std::fs::create_dir_all(usb.join("1-1:1.0"))?;
        std::fs::write(usb.join("idVendor"), "2341")?;
        std::fs::write(usb.join("idProduct"), "0043")?;
        std::fs::create_dir_all(sys.join("class/tty/ttyACM0"))?;
        symlink(usb.join("1-1:1.0"), sys.join("class/tty/ttyACM0/device"))?;
        std::fs::create_dir_all(&dev)?;
        symlink(&path, dev.join("ttyACM0"))?;
        let port = dev.join("ttyACM0").to_string_lossy().into_owned();

        let lines: Vec<String> = (0..chunks)
            .map(|i| delta_line(&format!("w{i} ")))
            .chain([done_line("stop", 1, chunks as u64)])
            .collect();
        let ollama = FakeOllama::start(
            Tags::Models(vec!["bench".into()]),
            Chat::Lines {
                lines,
                delay: Duration::ZERO,
            },
        )
        .await?;

        let peer = Peer::start(PeerConfig {
            proposed_hardware: true,
            ack: AckConfig {
                grant: Some(vec![
                    Capability::Files,
                    Capability::HardwareSerial,
                    Capability::LocalLlm,
                ]),
                ..AckConfig::default()
            },
            ..PeerConfig::default()
        })
        .await?;
        let mut cmd = tokio::process::Command::new(&bin);
        cmd.args([
            "--allowed-root",
            root.to_str().ok_or("root")?,
            "start",
            "--session-id",
            SESSION,
        ]);
        crate::bench_common::daemon_env(
            &mut cmd,
            dir.path(),
            &peer.ws_base(),
            &audit_log,
            "bench-machine-0002",
        );
        crate::bench_common::use_file(&mut cmd, &creds);
        cmd.env("AUTOGPT_SHIM_ENABLE_HARDWARE", "true")
            .env("AUTOGPT_SHIM_HARDWARE_PROTOCOL", "proposed")
            .env(
                "AUTOGPT_SHIM_HARDWARE_SERIAL_ALLOW",
                format!("[\"{port}\"]"),
            )
            .env("AUTOGPT_SHIM_HARDWARE_SYSFS_ROOT", &sys)
            .env("AUTOGPT_SHIM_HARDWARE_DEVFS_ROOT", &dev)
            .env("AUTOGPT_SHIM_ENABLE_LOCAL_LLM", "true")
            .env("AUTOGPT_SHIM_OLLAMA_URL", ollama.url())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let conn = peer
            .next_connection(T)
            .await
            .ok_or("the daemon did not connect")?;

        // Serial, two patterns: 64 KiB per write (the earlier figure), and the protocol's
        // largest requests (1 MiB writes, 64 KiB reads), which is what throughput means.
        let fsync = fsync_floor(&audit_dir)?;
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "machine load: {}; append + fdatasync in the audit directory: {:.3} ms",
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
            fsync.as_secs_f64() * 1000.0
        );
        // Each pattern runs BENCH_HW_ROUNDS times (default 3), direct and through the
        // daemon alternating, so that both see the same machine; the verdict is on the
        // median ratio. CPU time is load-independent: what one MiB costs each way.
        let rounds = env_num("BENCH_HW_ROUNDS", 3).max(1) as usize;
        let daemon_pid = child.id().map(|p| p.to_string()).unwrap_or_default();
        let mib = (total / (1024 * 1024)).max(1) as f64;
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let mut serial_pass = true;
        for (name, step) in [("64 KiB writes", STEP), ("1 MiB writes", WRITE_MAX)] {
            let mut ratios = Vec::new();
            for round in 1..=rounds {
                let (direct, direct_cpu) = direct_serial(total, step)?;
                let (bench0, daemon0) = (cpu_time("self"), cpu_time(&daemon_pid));
                let (through, w, r) = daemon_serial(&conn, &port, total, step).await?;
                let peer_cpu = cpu_time("self").saturating_sub(bench0);
                let daemon_cpu = cpu_time(&daemon_pid).saturating_sub(daemon0);
                let ratio = through / direct;
                ratios.push(ratio);
                let per_step = w + r * (step / READ_MAX).max(1) as u32;
                println!(
                    "serial {name} + 64 KiB reads, {} MiB, round {round}/{rounds}: direct pty {direct:.2} MB/s, through the daemon {through:.2} MB/s ({:.0} %)",
                    total / (1024 * 1024),
                    ratio * 100.0,
                );
                println!(
                    "    per request: SERIAL_WRITE {:.3} ms, SERIAL_READ {:.3} ms; per {} KiB the daemon spends {:.3} ms, the pty directly {:.3} ms",
                    ms(w),
                    ms(r),
                    step / 1024,
                    ms(per_step),
                    step as f64 / (direct * 1e6) * 1000.0,
                );
                println!(
                    "    CPU per MiB: direct {:.1} ms (program and far end); through the daemon {:.1} ms (daemon {:.1} ms, peer and far end {:.1} ms)",
                    ms(direct_cpu) / mib,
                    ms(daemon_cpu + peer_cpu) / mib,
                    ms(daemon_cpu) / mib,
                    ms(peer_cpu) / mib,
                );
            }
            ratios.sort_by(f64::total_cmp);
            let median = ratios[ratios.len() / 2];
            serial_pass &= median >= 0.5;
            println!(
                "serial {name}: median of {rounds} rounds {:.0} % of direct, target >= 50 % {}",
                median * 100.0,
                verdict(median >= 0.5)
            );
        }
        let log = std::fs::read_to_string(&audit_log).unwrap_or_default();
        let reads = log.matches("\"SERIAL_READ\"").count();
        let writes = log.matches("\"SERIAL_WRITE\"").count();
        println!("serial requests audited: {writes} SERIAL_WRITE, {reads} SERIAL_READ");
        stop.store(true, Ordering::SeqCst);

        // Local model: per-chunk overhead of the route.
        let mut direct_s = f64::MAX;
        let mut routed_s = f64::MAX;
        for _ in 0..3 {
            direct_s = direct_s.min(direct_stream(&ollama.url()).await?);
            let started = Instant::now();
            let r = conn.request(completion(), T).await?;
            if r.chunks.len() != chunks + 1 {
                return Err(format!("{} chunks, expected {}", r.chunks.len(), chunks + 1).into());
            }
            routed_s = routed_s.min(started.elapsed().as_secs_f64());
        }
        let per_chunk_ms = (routed_s - direct_s).max(0.0) / chunks as f64 * 1000.0;
        println!(
            "local model, {chunks} chunks: backend stream read directly {:.1} ms, through the daemon to the peer {:.1} ms; added per chunk {per_chunk_ms:.4} ms target < 1 ms {}",
            direct_s * 1000.0,
            routed_s * 1000.0,
            verdict(per_chunk_ms < 1.0)
        );
        let _ = child.start_kill();
        let _ = child.wait().await;
        let _ = std::fs::remove_file(&audit_log);
        if !serial_pass || per_chunk_ms >= 1.0 {
            // Returned, not `process::exit`: the Xvfb, the scene and the temporary files
            // are dropped on the way out instead of outliving the bench.
            return Err("a target above printed FAIL".into());
        }
        Ok(())
    }
}
