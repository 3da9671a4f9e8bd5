//! Hardware (COMPUTER_USE_HW.md 9, 11.3) through the real binary and the platform peer:
//! today's advertisement, and the PROPOSED serial operations over real pseudo-terminal
//! pairs whose far end is a test thread, with devices enumerated from a fixture sysfs and
//! devfs tree (no serial or USB device exists on this machine).

use std::io::Read;
use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::time::Duration;

use base64::Engine;
use serialport::SerialPort;
use serialport::TTYPort;
use shim_platform_peer::AckConfig;
use shim_platform_peer::Connection;
use shim_platform_peer::PeerConfig;
use shim_protocol::Capability;
use shim_protocol::Message;
use shim_protocol::messages::handshake::Empty;
use shim_protocol::messages::hardware::FlowControl;
use shim_protocol::messages::hardware::GpioLevel;
use shim_protocol::messages::hardware::GpioRead;
use shim_protocol::messages::hardware::HardwareDevice;
use shim_protocol::messages::hardware::Parity;
use shim_protocol::messages::hardware::SerialClose;
use shim_protocol::messages::hardware::SerialOpen;
use shim_protocol::messages::hardware::SerialRead;
use shim_protocol::messages::hardware::SerialWrite;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::error_code;
use crate::suite::harness::raw_request;
use crate::suite::harness::with_op;

const SID: &str = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// A pty pair: the far end (master, read by an echo thread) and the device path.
struct Pty {
    master: Option<TTYPort>,
    /// Kept open so the slave side never hangs up before the daemon opens it.
    slave: TTYPort,
    path: String,
}

fn pty() -> Pty {
    let (master, slave) = TTYPort::pair().unwrap();
    let path = slave.name().unwrap();
    // The pair's descriptors are inheritable; the daemon started later must not hold the
    // far end open (closing it is how a test unplugs the device), so keep close-on-exec
    // duplicates only.
    let (master, slave) = (
        master.try_clone_native().unwrap(),
        slave.try_clone_native().unwrap(),
    );
    Pty {
        master: Some(master),
        slave,
        path,
    }
}

/// Echoes everything back; reading and writing are separate threads so a full input
/// queue on the device side never stops the reader (no deadlock on 1 MiB).
fn echo(master: TTYPort, stop: Arc<AtomicBool>) {
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let mut reader = master;
    let mut writer = reader.try_clone_native().unwrap();
    reader.set_timeout(Duration::from_millis(50)).unwrap();
    writer.set_timeout(Duration::from_secs(30)).unwrap();
    let s2 = stop.clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        while !s2.load(Ordering::SeqCst) {
            match reader.read(&mut buf) {
                Ok(n) if n > 0 => {
                    if tx.send(buf[..n].to_vec()).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                _ => std::thread::sleep(Duration::from_millis(20)),
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
}

/// A fixture tree: `ttyACM{i}` backed by a USB device for each pty, a USB hub, a GPIO
/// chip. Returns (sysfs, devfs).
fn fixture(dir: &Path, ptys: &[&str]) -> (String, String) {
    let sys = dir.join("sys");
    let dev = dir.join("dev");
    std::fs::create_dir_all(dev.join("serial/by-id")).unwrap();
    std::fs::create_dir_all(sys.join("bus/usb/devices")).unwrap();
    for (i, target) in ptys.iter().enumerate() {
        let usb = sys.join(format!("devices/usb1/1-{i}"));
        std::fs::create_dir_all(usb.join(format!("1-{i}:1.0"))).unwrap();
        for (f, v) in [
            ("idVendor", "2341"),
            ("idProduct", "0043"),
            ("product", "Arduino Uno"),
            ("manufacturer", "Arduino"),
            ("serial", "SECRET-SERIAL-NUMBER"),
            ("busnum", "1"),
            // The descriptor attributes every real device has (nusb needs them too).
            ("bcdDevice", "0001"),
            ("version", " 2.00"),
            ("bDeviceClass", "02"),
            ("bDeviceSubClass", "00"),
            ("bDeviceProtocol", "00"),
        ] {
            std::fs::write(usb.join(f), v).unwrap();
        }
        std::fs::write(usb.join("devnum"), format!("{}", i + 2)).unwrap();
        let name = format!("ttyACM{i}");
        std::fs::create_dir_all(sys.join("class/tty").join(&name)).unwrap();
        symlink(
            usb.join(format!("1-{i}:1.0")),
            sys.join("class/tty").join(&name).join("device"),
        )
        .unwrap();
        symlink(&usb, sys.join(format!("bus/usb/devices/1-{i}"))).unwrap();
        symlink(target, dev.join(&name)).unwrap();
    }
    std::fs::write(dev.join("gpiochip0"), "").unwrap();
    (
        sys.to_str().unwrap().to_owned(),
        dev.to_str().unwrap().to_owned(),
    )
}

/// A port name outside every test allowlist.
fn p_real_tty() -> String {
    "/dev/ttyS0".to_owned()
}

fn port(devfs: &str, i: usize) -> String {
    format!("{devfs}/ttyACM{i}")
}

fn open_msg(
    port: &str,
    baud: u32,
    bits: u8,
    parity: Parity,
    stop: u8,
    flow: FlowControl,
) -> Message {
    Message::SerialOpen(SerialOpen {
        port: port.to_owned(),
        baud_rate: baud,
        data_bits: bits,
        parity,
        stop_bits: stop,
        flow_control: flow,
    })
}

fn simple_open(port: &str) -> Message {
    open_msg(port, 115_200, 8, Parity::None, 1, FlowControl::None)
}

async fn opened(conn: &Connection, m: Message) -> String {
    let r = conn.request(m, T).await.unwrap();
    match r.frame.message {
        Message::SerialOpened(o) => o.handle,
        other => panic!("expected SERIAL_OPENED, got {other:?}"),
    }
}

fn write_msg(handle: &str, data: &[u8]) -> Message {
    Message::SerialWrite(SerialWrite {
        handle: handle.to_owned(),
        data: B64.encode(data),
        drain: true,
    })
}

fn read_msg(handle: &str, max: u32, timeout_ms: u32) -> Message {
    Message::SerialRead(SerialRead {
        handle: handle.to_owned(),
        max_bytes: max,
        timeout_ms,
    })
}

fn details(m: &Message) -> serde_json::Value {
    match m {
        Message::Error(e) => e
            .details
            .clone()
            .map_or(serde_json::Value::Null, serde_json::Value::Object),
        other => panic!("expected ERROR, got {other:?}"),
    }
}

/// Reads until `n` bytes came back.
async fn read_n(conn: &Connection, handle: &str, n: usize) -> Vec<u8> {
    let mut got = Vec::new();
    while got.len() < n {
        let r = conn
            .request(read_msg(handle, 65_536, 2000), T)
            .await
            .unwrap();
        match r.frame.message {
            Message::SerialData(d) => {
                assert!(!d.timed_out, "timed out after {} of {n} bytes", got.len());
                got.extend(B64.decode(d.data).unwrap());
            }
            other => panic!("expected SERIAL_DATA, got {other:?}"),
        }
    }
    got
}

fn daemon(env: &Env, sys: &str, dev: &str, proposed: bool, allow: &str) -> tokio::process::Child {
    let mut c = env.legacy_command(SID, &[]);
    c.env("AUTOGPT_SHIM_ENABLE_HARDWARE", "true")
        .env("AUTOGPT_SHIM_HARDWARE_SYSFS_ROOT", sys)
        .env("AUTOGPT_SHIM_HARDWARE_DEVFS_ROOT", dev)
        .env("AUTOGPT_SHIM_HARDWARE_SERIAL_ALLOW", allow)
        .env("AUTOGPT_SHIM_HARDWARE_HANDLE_EXPIRY_SECONDS", "3");
    if proposed {
        c.env("AUTOGPT_SHIM_HARDWARE_PROTOCOL", "proposed");
    }
    c.spawn().unwrap()
}

fn proposed_peer() -> PeerConfig {
    PeerConfig {
        proposed_hardware: true,
        ack: AckConfig {
            grant: Some(vec![
                Capability::Files,
                Capability::HardwareSerial,
                Capability::HardwareUsb,
            ]),
            ..AckConfig::default()
        },
        ..PeerConfig::default()
    }
}

#[tokio::test]
async fn todays_behaviour_advertises_and_sends_no_hardware_frame() {
    let p = pty();
    let dir = tempfile::tempdir().unwrap();
    let (sys, dev) = fixture(dir.path(), &[&p.path]);
    // Today's platform: never grants hardware_*, its relay accepts no hardware type.
    let env = Env::new(PeerConfig::default()).await;
    let _child = daemon(&env, &sys, &dev, false, r#"["/dev/*"]"#);
    let conn = env.next().await;
    for c in [
        Capability::HardwareSerial,
        Capability::HardwareUsb,
        Capability::HardwareGpio,
    ] {
        assert!(conn.hello.capabilities.contains(&c), "{c:?}");
        assert!(!conn.ack.granted_capabilities.contains(&c));
    }
    assert!(conn.hello.hardware_devices.is_empty());
    for (i, (ty, payload)) in [
        ("HARDWARE_LIST_REQUEST", "{}".to_owned()),
        ("SERIAL_OPEN", format!(r#"{{"port":"{}"}}"#, port(&dev, 0))),
        ("GPIO_READ", r#"{"chip":"gpiochip0","line":1}"#.to_owned()),
    ]
    .iter()
    .enumerate()
    {
        let r = raw_request(&conn, &format!("h{i}"), ty, payload).await;
        assert_eq!(
            error_code(&r.frame.message),
            "CAPABILITY_NOT_GRANTED",
            "{ty}"
        );
    }
    env.assert_no_violations();
    // Even a platform that granted hardware_* gets no hardware frame without the opt-in.
    let env = Env::new(proposed_peer()).await;
    let _child = daemon(&env, &sys, &dev, false, r#"["/dev/*"]"#);
    let conn = env.next().await;
    let r = conn.request(simple_open(&port(&dev, 0)), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "CAPABILITY_NOT_GRANTED");
    // Without enable_hardware nothing is advertised.
    let env = Env::new(PeerConfig::default()).await;
    let _child = env.start_legacy(SID, &[]);
    let conn = env.next().await;
    assert!(
        !conn
            .hello
            .capabilities
            .iter()
            .any(|c| c.as_str().starts_with("hardware_"))
    );
}

#[tokio::test]
async fn proposed_serial_round_trips_a_mebibyte_at_several_framings() {
    let mut ptys: Vec<Pty> = (0..5).map(|_| pty()).collect();
    let paths: Vec<&str> = ptys.iter().map(|p| p.path.as_str()).collect();
    let dir = tempfile::tempdir().unwrap();
    let (sys, dev) = fixture(dir.path(), &paths);
    let stop = Arc::new(AtomicBool::new(false));
    let master0 = ptys[0].master.take().unwrap();
    echo(master0, stop.clone());
    let env = Env::new(proposed_peer()).await;
    // Every ttyACM allowed by a glob; ttyACM9 is allowed but not enumerated.
    let allow = format!(r#"["{dev}/ttyACM[0-9]"]"#);
    let _child = daemon(&env, &sys, &dev, true, &allow);
    let conn = env.next().await;

    // P1: enumerated into the HELLO (serial, then USB), without serial numbers.
    let serial: Vec<&HardwareDevice> = conn
        .hello
        .hardware_devices
        .iter()
        .filter(|d| matches!(d, HardwareDevice::Serial { .. }))
        .collect();
    assert_eq!(serial.len(), 5);
    assert!(
        matches!(serial[0], HardwareDevice::Serial { port: p, vid: Some(v), .. } if *p == port(&dev, 0) && v == "2341")
    );
    let hello_json = serde_json::to_string(&conn.hello).unwrap();
    assert!(!hello_json.contains("SECRET-SERIAL"));
    // P2: only the granted types (gpio is advertised but not granted).
    let r = conn
        .request(Message::HardwareListRequest(Empty {}), T)
        .await
        .unwrap();
    let Message::HardwareListResponse(list) = &r.frame.message else {
        panic!("{:?}", r.frame.message)
    };
    assert_eq!(list.devices.len(), 10);
    assert!(!list.truncated);
    assert!(
        !list
            .devices
            .iter()
            .any(|d| matches!(d, HardwareDevice::Gpio { .. }))
    );

    // 1 MiB through the daemon to the far end and back, byte-exact, at several framings.
    let binary: Vec<u8> = (0..1024 * 1024)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let ascii: Vec<u8> = (0..1024 * 1024)
        .map(|i: u32| b'A' + (i % 26) as u8)
        .collect();
    for (baud, bits, parity, stop_bits, flow, data) in [
        (115_200, 8, Parity::None, 1, FlowControl::None, &binary),
        (9600, 7, Parity::Even, 2, FlowControl::XonXoff, &ascii),
        (4_000_000, 8, Parity::Odd, 1, FlowControl::RtsCts, &binary),
    ] {
        let h = opened(
            &conn,
            open_msg(&port(&dev, 0), baud, bits, parity, stop_bits, flow),
        )
        .await;
        assert!(h.starts_with("ser_"));
        let r = conn.request(write_msg(&h, data), T).await.unwrap();
        assert_eq!(
            r.frame.message.message_type().as_str(),
            "ACK",
            "{:?}",
            r.frame.message
        );
        let back = read_n(&conn, &h, data.len()).await;
        assert!(back == *data, "{baud} {bits} {parity:?}: bytes differ");
        let r = conn
            .request(Message::SerialClose(SerialClose { handle: h.clone() }), T)
            .await
            .unwrap();
        assert_eq!(r.frame.message.message_type().as_str(), "ACK");
    }
    stop.store(true, Ordering::SeqCst);

    // Bad input: each its code, nothing left open.
    let r = conn
        .request(simple_open(&format!("{dev}/ttyACM9")), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_DEVICE_NOT_FOUND");
    assert_eq!(details(&r.frame.message)["type"], "serial");
    // Outside the allowlist (whether or not it exists): refused before anything is opened.
    let r = conn.request(simple_open(&p_real_tty()), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_NOT_ALLOWED");
    assert_eq!(details(&r.frame.message)["port"], p_real_tty().as_str());
    let h = opened(&conn, simple_open(&port(&dev, 1))).await;
    // Exclusive: a second open of the same port.
    let r = conn.request(simple_open(&port(&dev, 1)), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_DEVICE_BUSY");
    // Read timeout.
    let started = std::time::Instant::now();
    let r = conn.request(read_msg(&h, 16, 300), T).await.unwrap();
    let Message::SerialData(d) = &r.frame.message else {
        panic!("{:?}", r.frame.message)
    };
    assert!(d.timed_out && d.size_bytes == 0 && d.data.is_empty());
    assert!(started.elapsed() >= Duration::from_millis(300));
    // Invalid base64, over the size limit.
    let r = conn
        .request(
            Message::SerialWrite(SerialWrite {
                handle: h.clone(),
                data: "!!not base64".into(),
                drain: true,
            }),
            T,
        )
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "INTERNAL_ERROR");
    let r = conn
        .request(write_msg(&h, &vec![0u8; 1024 * 1024 + 1]), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "FILE_TOO_LARGE");
    // At most 4 handles.
    let _h2 = opened(&conn, simple_open(&port(&dev, 2))).await;
    let _h3 = opened(&conn, simple_open(&port(&dev, 3))).await;
    let h4 = opened(&conn, simple_open(&port(&dev, 4))).await;
    // (ttyACM0's far end is gone with its echo thread, so it is no longer enumerated.)
    let r = conn.request(simple_open(&port(&dev, 0)), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_DEVICE_NOT_FOUND");
    let r = conn.request(simple_open(&port(&dev, 1)), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "SHIM_OVERLOADED");
    // Unplugged: the far end closes; the handle is dropped with HARDWARE_IO_FAILED.
    drop(ptys[4].master.take());
    let r = conn.request(read_msg(&h4, 16, 1000), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_IO_FAILED");
    assert!(details(&r.frame.message)["os_error"].is_string());
    let r = conn.request(read_msg(&h4, 16, 0), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_HANDLE_STALE");
    assert_eq!(details(&r.frame.message)["handle"], h4.as_str());
    // Close, then a write to the closed handle.
    conn.request(Message::SerialClose(SerialClose { handle: h.clone() }), T)
        .await
        .unwrap();
    let r = conn.request(write_msg(&h, b"x"), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_HANDLE_STALE");
    // Expiry (tuned to 3 s): an unused handle is closed and its port free again.
    tokio::time::sleep(Duration::from_millis(3200)).await;
    let r = conn.request(read_msg(&_h2, 1, 0), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_HANDLE_STALE");
    let again = opened(&conn, simple_open(&port(&dev, 2))).await;
    // A new HELLO closes every handle.
    conn.close(1000, "");
    let conn = env.next().await;
    let r = conn.request(read_msg(&again, 1, 0), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_HANDLE_STALE");
    let _ = opened(&conn, simple_open(&port(&dev, 2))).await;

    // Not allowlisted (a daemon whose allowlist is empty).
    let env2 = Env::new(proposed_peer()).await;
    let _child2 = daemon(&env2, &sys, &dev, true, "[]");
    let conn2 = env2.next().await;
    let r = conn2.request(simple_open(&port(&dev, 3)), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_NOT_ALLOWED");

    // P8 audit: one record per request, never payload bytes or serial numbers.
    let records = env.audit_records();
    let opens = with_op(&records, "SERIAL_OPEN");
    assert_eq!(opens[0]["details"]["port"], port(&dev, 0).as_str());
    assert_eq!(opens[0]["details"]["baud_rate"], 115_200);
    let writes = with_op(&records, "SERIAL_WRITE");
    assert_eq!(writes[0]["details"]["size_bytes"], 1024 * 1024);
    let reads = with_op(&records, "SERIAL_READ");
    assert!(reads.iter().any(|r| r["details"]["timed_out"] == true));
    assert_eq!(
        with_op(&records, "HARDWARE_LIST")[0]["details"]["devices_returned"],
        10
    );
    let log = std::fs::read_to_string(env.audit_log()).unwrap();
    assert!(!log.contains("SECRET-SERIAL") && !log.contains("QUJDREVG"));
    env.verify_audit();
    env.assert_no_violations();
}

/// Locks the speed bits of a pty's termios (`TIOCSLCKTRMIOS`, root only): the kernel then
/// keeps the port's speed whatever a later `TCSETS2` asks, as a UART driver keeps or
/// rounds a rate it cannot do. A pty accepts every rate otherwise (checked: 0 to 2^32-1).
#[allow(unsafe_code)] // the one ioctl std, rustix and serialport do not wrap
fn lock_speed(tty: &TTYPort) {
    use std::os::fd::AsRawFd;
    // SAFETY: an all-zero termios is a valid value of this plain C struct.
    let mut locked: libc::termios = unsafe { std::mem::zeroed() };
    // CBAUD of <asm-generic/termbits.h>: every speed bit, BOTHER included.
    locked.c_cflag = 0o010017;
    // SAFETY: TIOCSLCKTRMIOS reads a struct termios (the kernel's, a prefix of glibc's)
    // from the pointer, which is valid for the call; the descriptor is open.
    let r = unsafe { libc::ioctl(tty.as_raw_fd(), libc::TIOCSLCKTRMIOS, &locked) };
    assert_eq!(r, 0, "TIOCSLCKTRMIOS: {}", std::io::Error::last_os_error());
}

#[tokio::test]
async fn a_baud_rate_the_os_refuses_is_hardware_io_failed_and_the_port_is_closed() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: locking a pty's speed (TIOCSLCKTRMIOS) needs root");
        return;
    }
    let p = pty();
    lock_speed(&p.slave);
    let dir = tempfile::tempdir().unwrap();
    let (sys, dev) = fixture(dir.path(), &[&p.path]);
    let env = Env::new(proposed_peer()).await;
    let _child = daemon(&env, &sys, &dev, true, &format!(r#"["{dev}/ttyACM0"]"#));
    let conn = env.next().await;
    let port0 = port(&dev, 0);
    let r = conn
        .request(
            open_msg(&port0, 250_000, 8, Parity::None, 1, FlowControl::None),
            T,
        )
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_IO_FAILED");
    let os_error = details(&r.frame.message)["os_error"].to_string();
    assert!(
        os_error.contains("250000") && os_error.contains("38400"),
        "{os_error}"
    );
    // Nothing was left open: the same port opens at the speed it keeps (an exclusive
    // open still held would be HARDWARE_DEVICE_BUSY).
    let h = opened(
        &conn,
        open_msg(&port0, 38_400, 8, Parity::None, 1, FlowControl::None),
    )
    .await;
    let records = env.audit_records();
    let opens = with_op(&records, "SERIAL_OPEN");
    assert_eq!(opens.len(), 2);
    assert_eq!(opens[0]["details"]["baud_rate"], 250_000);
    assert!(opens[0]["details"]["handle"].is_null());
    assert_eq!(opens[0]["result"]["error_code"], "HARDWARE_IO_FAILED");
    assert_eq!(opens[1]["details"]["handle"], h.as_str());
    env.verify_audit();
    env.assert_no_violations();
}

#[tokio::test]
async fn a_serial_read_cancelled_by_a_dropped_connection_is_audited_and_the_port_freed() {
    // The far end sends nothing, so the read waits its whole timeout on a blocking thread;
    // the connection drops meanwhile. The read still happened: one record, `cancelled`.
    let p = pty();
    let dir = tempfile::tempdir().unwrap();
    let (sys, dev) = fixture(dir.path(), &[&p.path]);
    let env = Env::new(proposed_peer()).await;
    let _child = daemon(&env, &sys, &dev, true, &format!(r#"["{dev}/ttyACM0"]"#));
    let conn = Arc::new(env.next().await);
    let h = opened(&conn, simple_open(&port(&dev, 0))).await;
    let id = "5e0c1d2a-3b4c-4d5e-8f60-718293a4b5c6";
    let c = conn.clone();
    let read = read_msg(&h, 16, 1500);
    let _pending = tokio::spawn(async move {
        let _ = c.request_with_id(id, read, T).await;
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    conn.close(1011, "server error");
    let again = env.next().await;
    let ours = |r: &serde_json::Value| r["request_id"] == id;
    crate::suite::harness::wait_until("the cancelled read is audited", || {
        env.audit_records().iter().any(ours)
    })
    .await;
    let records: Vec<serde_json::Value> = env.audit_records().into_iter().filter(ours).collect();
    assert_eq!(records.len(), 1, "{records:?}");
    let d = &records[0]["details"];
    assert_eq!(records[0]["op"], "SERIAL_READ", "{records:?}");
    assert_eq!(d["cancelled"], true, "{records:?}");
    assert_eq!(d["handle"], h.as_str());
    assert_eq!(d["timed_out"], true);
    assert_eq!(d["size_bytes_returned"], 0);
    // The new HELLO forgot the handle and the read has ended: the port is free again.
    let r = again.request(read_msg(&h, 1, 0), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_HANDLE_STALE");
    let _ = opened(&again, simple_open(&port(&dev, 0))).await;
    env.verify_audit();
    env.assert_no_violations();
}

/// A GPIO fixture: `gpiochip0` is a character-device double (this kernel cannot load
/// `gpio-sim`: no configfs, no modules) with 8 lines, line 3 high, line 5 held by another
/// consumer; `gpiochip1` is a character device that is no GPIO chip (`/dev/null`).
fn gpio_fixture(dir: &Path) -> (String, String) {
    let (sys, dev) = fixture(dir, &[]);
    let double = serde_json::json!({
        "double": shim_hw::gpio::DOUBLE_MAGIC, "label": "gpio-sim", "lines": 8,
        "inputs": {"3": 1}, "held_by_others": {"5": "other-app"},
    });
    std::fs::write(Path::new(&dev).join("gpiochip0"), double.to_string()).unwrap();
    symlink("/dev/null", Path::new(&dev).join("gpiochip1")).unwrap();
    (sys, dev)
}

fn gpio_read(chip: &str, line: u32) -> Message {
    Message::GpioRead(GpioRead {
        chip: chip.to_owned(),
        line,
    })
}

fn gpio_write(chip: &str, line: u32, value: u8) -> Message {
    Message::GpioWrite(GpioLevel {
        chip: chip.to_owned(),
        line,
        value,
    })
}

fn held(dev: &str) -> serde_json::Value {
    let p = shim_hw::gpio::double::held_file(&Path::new(dev).join("gpiochip0"));
    std::fs::read_to_string(p)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(serde_json::json!({}))
}

#[tokio::test]
async fn gpio_double_lines_read_and_write_through_the_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let (sys, dev) = gpio_fixture(dir.path());
    let env = Env::new(PeerConfig {
        proposed_hardware: true,
        ack: AckConfig {
            grant: Some(vec![Capability::Files, Capability::HardwareGpio]),
            ..AckConfig::default()
        },
        ..PeerConfig::default()
    })
    .await;
    let mut c = env.legacy_command(SID, &[]);
    c.env("AUTOGPT_SHIM_ENABLE_HARDWARE", "true")
        .env("AUTOGPT_SHIM_HARDWARE_PROTOCOL", "proposed")
        .env("AUTOGPT_SHIM_HARDWARE_SYSFS_ROOT", &sys)
        .env("AUTOGPT_SHIM_HARDWARE_DEVFS_ROOT", &dev)
        .env(
            "AUTOGPT_SHIM_HARDWARE_GPIO_WRITABLE",
            r#"["gpiochip0:1", "gpiochip0:5", "gpiochip0:9"]"#,
        );
    let _child = c.spawn().unwrap();
    let conn = env.next().await;
    // P1: the chip describes itself; the node that is no chip is dropped.
    assert!(conn.hello.capabilities.contains(&Capability::HardwareGpio));
    let gpio: Vec<&HardwareDevice> = conn
        .hello
        .hardware_devices
        .iter()
        .filter(|d| matches!(d, HardwareDevice::Gpio { .. }))
        .collect();
    assert_eq!(
        gpio,
        [&HardwareDevice::Gpio {
            chip: "gpiochip0".into(),
            label: Some("gpio-sim".into()),
            lines: 8,
        }]
    );
    // P2 lists only the granted type.
    let r = conn
        .request(Message::HardwareListRequest(Empty {}), T)
        .await
        .unwrap();
    let Message::HardwareListResponse(list) = &r.frame.message else {
        panic!("{:?}", r.frame.message)
    };
    assert_eq!(list.devices, [gpio[0].clone()]);

    // Reads.
    let r = conn.request(gpio_read("gpiochip0", 3), T).await.unwrap();
    assert_eq!(
        r.frame.message,
        Message::GpioValue(GpioLevel {
            chip: "gpiochip0".into(),
            line: 3,
            value: 1
        })
    );
    let r = conn.request(gpio_read("gpiochip0", 5), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_DEVICE_BUSY");
    assert_eq!(
        details(&r.frame.message),
        serde_json::json!({"type": "gpio", "chip": "gpiochip0", "line": 5})
    );
    for (chip, line) in [("gpiochip0", 8), ("gpiochip1", 0), ("../gpiochip0", 0)] {
        let r = conn.request(gpio_read(chip, line), T).await.unwrap();
        assert_eq!(
            error_code(&r.frame.message),
            "HARDWARE_DEVICE_NOT_FOUND",
            "{chip}"
        );
        assert_eq!(details(&r.frame.message)["chip"], chip);
    }
    // Writes: the allowlist first, then the chip, then the line's owner.
    let r = conn
        .request(gpio_write("gpiochip0", 2, 1), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_NOT_ALLOWED");
    assert_eq!(
        details(&r.frame.message),
        serde_json::json!({"type": "gpio", "chip": "gpiochip0", "line": 2})
    );
    let r = conn
        .request(gpio_write("gpiochip0", 9, 1), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_DEVICE_NOT_FOUND");
    let r = conn
        .request(gpio_write("gpiochip0", 5, 1), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "HARDWARE_DEVICE_BUSY");
    let r = conn
        .request(gpio_write("gpiochip0", 1, 1), T)
        .await
        .unwrap();
    assert_eq!(r.frame.message.message_type().as_str(), "ACK");
    assert_eq!(
        held(&dev),
        serde_json::json!({"1": {"consumer": "autogpt-shim", "value": 1}})
    );
    let r = conn.request(gpio_read("gpiochip0", 1), T).await.unwrap();
    assert!(matches!(
        r.frame.message,
        Message::GpioValue(GpioLevel { value: 1, .. })
    ));
    let r = conn
        .request(gpio_write("gpiochip0", 1, 0), T)
        .await
        .unwrap();
    assert_eq!(r.frame.message.message_type().as_str(), "ACK");
    assert_eq!(held(&dev)["1"]["value"], 0);
    // The line stays requested until the next HELLO, which releases it.
    conn.close(1000, "");
    let conn = env.next().await;
    assert_eq!(held(&dev), serde_json::json!({}));
    let r = conn.request(gpio_read("gpiochip0", 1), T).await.unwrap();
    assert!(matches!(
        r.frame.message,
        Message::GpioValue(GpioLevel { value: 0, .. })
    ));

    // P8: one record per request, with the level (the only value the spec records).
    let records = env.audit_records();
    let reads = with_op(&records, "GPIO_READ");
    assert_eq!(reads.len(), 7);
    assert_eq!(
        reads[0]["details"],
        serde_json::json!({"chip": "gpiochip0", "line": 3, "value": 1})
    );
    assert!(reads[1]["details"]["value"].is_null());
    assert_eq!(reads[1]["result"]["error_code"], "HARDWARE_DEVICE_BUSY");
    let writes = with_op(&records, "GPIO_WRITE");
    assert_eq!(writes.len(), 5);
    assert_eq!(
        writes[3]["details"],
        serde_json::json!({"chip": "gpiochip0", "line": 1, "value": 1})
    );
    assert_eq!(writes[0]["result"]["error_code"], "HARDWARE_NOT_ALLOWED");
    env.verify_audit();
    env.assert_no_violations();
}

#[tokio::test]
async fn gpio_double_write_without_the_grant_is_refused_and_drives_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (sys, dev) = gpio_fixture(dir.path());
    // Granted serial only: GPIO is CAPABILITY_NOT_GRANTED, nothing is driven.
    let env = Env::new(proposed_peer()).await;
    let mut c = env.legacy_command(SID, &[]);
    c.env("AUTOGPT_SHIM_ENABLE_HARDWARE", "true")
        .env("AUTOGPT_SHIM_HARDWARE_PROTOCOL", "proposed")
        .env("AUTOGPT_SHIM_HARDWARE_SYSFS_ROOT", &sys)
        .env("AUTOGPT_SHIM_HARDWARE_DEVFS_ROOT", &dev)
        .env("AUTOGPT_SHIM_HARDWARE_GPIO_WRITABLE", r#"["gpiochip0:*"]"#);
    let _child = c.spawn().unwrap();
    let conn = env.next().await;
    let r = conn
        .request(gpio_write("gpiochip0", 1, 1), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "CAPABILITY_NOT_GRANTED");
    assert_eq!(held(&dev), serde_json::json!({}));
    env.assert_no_violations();
}
