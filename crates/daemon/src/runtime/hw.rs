//! Hardware (COMPUTER_USE_HW.md 9): today's advertisement (9.1), and the PROPOSED
//! operations (9.2) behind the local opt-in `hardware_protocol = "proposed"` and the
//! platform's grant. Devices and ports come from `shim-hw`; this file only gates, audits
//! and answers.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;

use base64::Engine;
use shim_audit::AuditResult;
use shim_audit::Map;
use shim_hw::Allowlist;
use shim_hw::HwError;
use shim_hw::Kinds;
use shim_hw::Source;
use shim_hw::gpio::GpioSession;
use shim_hw::serial::Framing;
use shim_hw::serial::OpenError;
use shim_hw::serial::SerialSession;
use shim_protocol::Capability;
use shim_protocol::ErrorCode;
use shim_protocol::ErrorPayload;
use shim_protocol::Message;
use shim_protocol::MessageType;
use shim_protocol::error::CapabilityNotGrantedDetails;
use shim_protocol::messages::handshake::Ack;
use shim_protocol::messages::handshake::Hello;
use shim_protocol::messages::hardware::GpioLevel;
use shim_protocol::messages::hardware::HardwareDevice;
use shim_protocol::messages::hardware::HardwareListResponse;
use shim_protocol::messages::hardware::SerialData;
use shim_protocol::messages::hardware::SerialOpened;

use crate::config::Settings;
use crate::runtime::auditor::AuditFailed;
use crate::runtime::auditor::Auditor;
use crate::runtime::blocking::Blocking;
use crate::runtime::handshake::Negotiated;

/// Largest decoded `SERIAL_WRITE` (P3: min(max_file_size_bytes, 1 MiB)).
const MAX_WRITE: u64 = 1024 * 1024;

/// Machine-wide hardware settings.
pub(crate) struct HwMachine {
    enabled: bool,
    proposed: bool,
    source: Source,
    allow: Allowlist,
    gpio_writable: Allowlist,
    expiry: Duration,
}

/// Per-runtime hardware state: the serial handles and the GPIO lines driven as outputs,
/// replaced (all closed and released) at every HELLO and dropped with the runtime.
#[derive(Debug, Default)]
pub(crate) struct HwSession {
    serial: Mutex<Option<Arc<SerialSession>>>,
    gpio: Mutex<Option<Arc<GpioSession>>>,
}

/// An invalid allowlist fails closed: nothing is allowed.
fn allowlist(key: &str, entries: &[String]) -> Allowlist {
    Allowlist::new(entries).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "{key} is invalid; it allows nothing");
        Allowlist::empty()
    })
}

/// Serial and USB as the build for `os` serves them: serial only where ports are
/// enumerated (the sysfs tty class: Linux and Android; macOS has no enumeration yet, so it
/// is not advertised there), USB wherever nusb lists devices on Unix. Windows has neither.
fn serial_and_usb(os: &str, unix: bool) -> Vec<Capability> {
    let mut caps = Vec::new();
    if unix && matches!(os, "linux" | "android") {
        caps.push(Capability::HardwareSerial);
    }
    if unix {
        caps.push(Capability::HardwareUsb);
    }
    caps
}

impl HwMachine {
    /// From the settings.
    pub(crate) fn new(settings: &Settings) -> HwMachine {
        let h = &settings.hardware;
        // The machine itself (USB through nusb), unless a tree stands in for /sys (then
        // USB is read from that tree) or for /dev.
        let mut source = Source::default();
        if let Some(s) = &h.sysfs_root {
            source = Source::tree(s.clone(), source.devfs);
        }
        if let Some(d) = &h.devfs_root {
            source.devfs = d.clone();
        }
        HwMachine {
            enabled: settings.enable_hardware,
            proposed: h.proposed,
            source,
            allow: allowlist("hardware_serial_allow", &h.serial_allow),
            gpio_writable: allowlist("hardware_gpio_writable", &h.gpio_writable),
            expiry: settings.tuning.hardware_handle_expiry,
        }
    }

    /// The capabilities this host can advertise (9.1): serial and USB as
    /// [`serial_and_usb`] says for this OS, GPIO only on Linux with a GPIO character device.
    pub(crate) fn capabilities(&self) -> Vec<Capability> {
        if !self.enabled {
            return Vec::new();
        }
        let mut caps = serial_and_usb(std::env::consts::OS, cfg!(unix));
        if shim_hw::gpio_present(&self.source) {
            caps.push(Capability::HardwareGpio);
        }
        caps
    }

    /// What `doctor` prints.
    pub(crate) fn summary(&self) -> String {
        if !self.enabled {
            return "not enabled".into();
        }
        let advertised = self.capabilities();
        let caps: Vec<&str> = advertised.iter().map(|c| c.as_str()).collect();
        let (devices, _) = shim_hw::enumerate(
            &self.source,
            Kinds {
                serial: true,
                usb: true,
                gpio: true,
            },
        );
        let count = |f: fn(&HardwareDevice) -> bool| devices.iter().filter(|d| f(d)).count();
        format!(
            "advertised {}; present: {} serial, {} USB (listed by {}), {} GPIO chip(s); protocol {}",
            if caps.is_empty() {
                "nothing".to_owned()
            } else {
                caps.join(", ")
            },
            count(|d| matches!(d, HardwareDevice::Serial { .. })),
            count(|d| matches!(d, HardwareDevice::Usb { .. })),
            self.source.usb.name(),
            count(|d| matches!(d, HardwareDevice::Gpio { .. })),
            if self.proposed {
                "PROPOSED (served only if the platform grants hardware_*)"
            } else {
                "none (no hardware frame is ever sent)"
            }
        )
    }
}

/// Fills the HELLO (1.2, 9.1, P1), closes every serial handle of this runtime (P3) and
/// releases every GPIO line it drove (P5).
pub(crate) fn advertise(m: &HwMachine, s: &HwSession, hello: &mut Hello) {
    if let Ok(mut cur) = s.serial.lock() {
        *cur = Some(Arc::new(SerialSession::new(m.expiry)));
    }
    if let Ok(mut cur) = s.gpio.lock() {
        *cur = Some(Arc::new(GpioSession::default()));
    }
    let caps = m.capabilities();
    for c in &caps {
        if !hello.capabilities.contains(c) {
            hello.capabilities.push(c.clone());
        }
    }
    hello.hardware_devices = if m.proposed {
        shim_hw::enumerate(&m.source, kinds(&caps)).0
    } else {
        Vec::new()
    };
}

fn kinds(caps: &[Capability]) -> Kinds {
    Kinds {
        serial: caps.contains(&Capability::HardwareSerial),
        usb: caps.contains(&Capability::HardwareUsb),
        gpio: caps.contains(&Capability::HardwareGpio),
    }
}

/// Whether `ty` is a hardware request.
pub(crate) fn is_hw(ty: MessageType) -> bool {
    matches!(
        ty,
        MessageType::HardwareListRequest
            | MessageType::SerialOpen
            | MessageType::SerialWrite
            | MessageType::SerialRead
            | MessageType::SerialClose
            | MessageType::GpioRead
            | MessageType::GpioWrite
    )
}

/// Whether the request's capability is granted; `HARDWARE_LIST_REQUEST` needs any
/// `hardware_*` (P2).
pub(crate) fn granted(n: &Negotiated, ty: MessageType) -> bool {
    if ty == MessageType::HardwareListRequest {
        return [
            Capability::HardwareSerial,
            Capability::HardwareUsb,
            Capability::HardwareGpio,
        ]
        .iter()
        .any(|c| n.is_granted(c));
    }
    ty.required_capability().is_some_and(|c| n.is_granted(&c))
}

fn err(e: &HwError) -> Message {
    Message::Error(ErrorPayload {
        code: e.code(),
        message: e.to_string(),
        fatal: false,
        details: Some(e.details()),
    })
}

fn plain(code: ErrorCode, message: &str) -> Message {
    Message::Error(ErrorPayload::new(code, message))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// One operation's outcome: its audit details (P8) and the answer.
struct Done {
    details: Map,
    reply: Message,
}

fn record(reply: &Message, started: Instant) -> AuditResult {
    match reply {
        Message::Error(e) => {
            let mut r = AuditResult::failed(&e.code);
            r.duration_ms = millis(started.elapsed());
            r
        }
        _ => AuditResult::ok_after(started.elapsed()),
    }
}

/// Serves one hardware request after the gate (P7: payload validation was done by the
/// decoder; then the allowlist, then the operation). Exactly one audit record (P8), also
/// when the connection drops while the device is in use: the operation runs on the
/// blocking pool to its end and is then recorded with `cancelled: true`. The operation and
/// its record share one blocking-pool thread; the answer is returned once the record is
/// durable.
pub(crate) async fn handle(
    m: &HwMachine,
    s: &HwSession,
    audit: &Auditor,
    n: &Negotiated,
    max_file_size: u64,
    id: &str,
    msg: Message,
) -> Result<Message, AuditFailed> {
    if !m.proposed {
        // 9.1: no hardware operation exists unless the user opted into the proposal.
        let cap = msg
            .message_type()
            .required_capability()
            .unwrap_or(Capability::HardwareSerial);
        return Ok(Message::Error(ErrorPayload::with_details(
            ErrorCode::CapabilityNotGranted,
            format!(
                "The {} capability is not served by this machine.",
                cap.as_str()
            ),
            &CapabilityNotGrantedDetails {
                capability: cap.as_str().to_owned(),
                required_capability: cap.as_str().to_owned(),
                granted_capabilities: n.granted_sorted(),
            },
        )));
    }
    let started = Instant::now();
    let serial = s
        .serial
        .lock()
        .ok()
        .and_then(|c| c.clone())
        .unwrap_or_else(|| Arc::new(SerialSession::new(m.expiry)));
    let gpio = s
        .gpio
        .lock()
        .ok()
        .and_then(|c| c.clone())
        .unwrap_or_default();
    let source = m.source.clone();
    let (op, work): (&'static str, Box<dyn FnOnce() -> Done + Send>) = match msg {
        Message::HardwareListRequest(_) => {
            let caps: Vec<Capability> = m
                .capabilities()
                .into_iter()
                .filter(|c| n.is_granted(c))
                .collect();
            let kinds = kinds(&caps);
            let types: Vec<String> = caps
                .iter()
                .map(|c| c.as_str().trim_start_matches("hardware_").to_owned())
                .collect();
            (
                "HARDWARE_LIST",
                Box::new(move || list(&source, kinds, types)),
            )
        }
        Message::SerialOpen(p) => {
            let allow = m.allow.clone();
            (
                "SERIAL_OPEN",
                Box::new(move || serial_open(&serial, &source, &allow, p)),
            )
        }
        Message::SerialWrite(p) => {
            let limit = max_file_size.min(MAX_WRITE);
            (
                "SERIAL_WRITE",
                Box::new(move || serial_write(&serial, p, limit)),
            )
        }
        Message::SerialRead(p) => ("SERIAL_READ", Box::new(move || serial_read(&serial, p))),
        Message::SerialClose(p) => ("SERIAL_CLOSE", Box::new(move || serial_close(&serial, p))),
        Message::GpioRead(p) => ("GPIO_READ", Box::new(move || gpio_read(&gpio, &source, p))),
        Message::GpioWrite(p) => {
            let writable = m.gpio_writable.clone();
            (
                "GPIO_WRITE",
                Box::new(move || gpio_write(&gpio, &source, &writable, p)),
            )
        }
        _ => return Ok(plain(ErrorCode::InternalError, "not a hardware request")),
    };
    // One hand-off, as for file requests (`DataPlane::run_jail_op`, which also answers from
    // that thread): the device operation and its audit record run on the same blocking-pool
    // thread, so the answer exists only
    // once the record is durable (AUDIT_AUTH_CLI.md 1.11) and the request waits for one
    // thread switch instead of two.
    let (rec_audit, rec_id) = (audit.clone(), id.to_owned());
    let (cancel_audit, cancel_id) = (audit.clone(), id.to_owned());
    let job = Blocking::spawn_watched(
        move |waiter| {
            let done = work();
            let result = record(&done.reply, started);
            let mut d = done.details;
            if waiter.gone() {
                // The request is gone (its connection dropped) but the device was used.
                d.insert("cancelled", true);
            }
            let audited = rec_audit.op_blocking(op, Some(&rec_id), d, result);
            (done.reply, audited)
        },
        // Only reached with the record already written, or when the work never produced
        // one (it panicked): then record the failure, marked cancelled.
        move |r| async move {
            if r.is_err() {
                let _ = cancel_audit
                    .op(
                        op,
                        Some(&cancel_id),
                        Map::new().with("cancelled", true),
                        AuditResult::failed(&ErrorCode::InternalError),
                    )
                    .await;
            }
        },
    );
    match job.join().await {
        Ok((reply, audited)) => {
            audited?;
            Ok(reply)
        }
        Err(e) => {
            let reply = plain(ErrorCode::InternalError, &e);
            audit
                .op(op, Some(id), Map::new(), record(&reply, started))
                .await?;
            Ok(reply)
        }
    }
}

fn list(source: &Source, kinds: Kinds, types: Vec<String>) -> Done {
    let (devices, truncated) = shim_hw::enumerate(source, kinds);
    Done {
        details: Map::new()
            .with("types", types)
            .with("devices_returned", devices.len()),
        reply: Message::HardwareListResponse(HardwareListResponse { devices, truncated }),
    }
}

fn serial_open(
    ses: &SerialSession,
    source: &Source,
    allow: &Allowlist,
    p: shim_protocol::messages::hardware::SerialOpen,
) -> Done {
    let mut details = Map::new()
        .with("port", p.port.as_str())
        .with("baud_rate", p.baud_rate);
    let framing = Framing {
        baud_rate: p.baud_rate,
        data_bits: p.data_bits,
        parity: p.parity,
        stop_bits: p.stop_bits,
        flow_control: p.flow_control,
    };
    let reply = match ses.open(source, allow, &p.port, &framing) {
        Ok(handle) => {
            details.insert("handle", handle.as_str());
            Message::SerialOpened(SerialOpened {
                handle,
                port: p.port,
            })
        }
        Err(OpenError::TooMany) => {
            details.insert("handle", Option::<String>::None);
            plain(
                ErrorCode::ShimOverloaded,
                "At most 4 serial handles may be open in a session.",
            )
        }
        Err(OpenError::Hw(e)) => {
            details.insert("handle", Option::<String>::None);
            err(&e)
        }
    };
    Done { details, reply }
}

fn serial_write(
    ses: &SerialSession,
    p: shim_protocol::messages::hardware::SerialWrite,
    limit: u64,
) -> Done {
    let mut details = Map::new().with("handle", p.handle.as_str());
    let reply = match B64.decode(p.data.as_bytes()) {
        Err(_) => {
            details.insert("size_bytes", 0u64);
            plain(ErrorCode::InternalError, "data is not valid base64.")
        }
        Ok(bytes) if bytes.len() as u64 > limit => {
            details.insert("size_bytes", bytes.len());
            plain(
                ErrorCode::FileTooLarge,
                "The data is larger than a serial write may be.",
            )
        }
        Ok(bytes) => {
            details.insert("size_bytes", bytes.len());
            match ses.write(&p.handle, &bytes, p.drain) {
                Ok(()) => Message::Ack(Ack::OK),
                Err(e) => err(&e),
            }
        }
    };
    Done { details, reply }
}

fn serial_read(ses: &SerialSession, p: shim_protocol::messages::hardware::SerialRead) -> Done {
    let timeout = Duration::from_millis(u64::from(p.timeout_ms));
    let mut details = Map::new().with("handle", p.handle.as_str());
    let reply = match ses.read(&p.handle, p.max_bytes as usize, timeout) {
        Ok((bytes, timed_out)) => {
            details.insert("size_bytes_returned", bytes.len());
            details.insert("timed_out", timed_out);
            Message::SerialData(SerialData {
                handle: p.handle,
                data: B64.encode(&bytes),
                size_bytes: bytes.len() as u64,
                timed_out,
            })
        }
        Err(e) => {
            details.insert("size_bytes_returned", 0u64);
            details.insert("timed_out", false);
            err(&e)
        }
    };
    Done { details, reply }
}

fn serial_close(ses: &SerialSession, p: shim_protocol::messages::hardware::SerialClose) -> Done {
    Done {
        details: Map::new().with("handle", p.handle.as_str()),
        reply: match ses.close(&p.handle) {
            Ok(()) => Message::Ack(Ack::OK),
            Err(e) => err(&e),
        },
    }
}

fn gpio_read(
    gpio: &GpioSession,
    source: &Source,
    p: shim_protocol::messages::hardware::GpioRead,
) -> Done {
    let r = gpio.read(source, &p.chip, p.line);
    Done {
        details: Map::new()
            .with("chip", p.chip.as_str())
            .with("line", p.line)
            .with("value", r.as_ref().ok().map(|v| u32::from(*v))),
        reply: match r {
            Ok(value) => Message::GpioValue(GpioLevel {
                chip: p.chip,
                line: p.line,
                value,
            }),
            Err(e) => err(&e),
        },
    }
}

fn gpio_write(gpio: &GpioSession, source: &Source, writable: &Allowlist, p: GpioLevel) -> Done {
    Done {
        details: Map::new()
            .with("chip", p.chip.as_str())
            .with("line", p.line)
            .with("value", u32::from(p.value)),
        reply: match gpio.write(source, writable, &p.chip, p.line, p.value) {
            Ok(()) => Message::Ack(Ack::OK),
            Err(e) => err(&e),
        },
    }
}

#[cfg(test)]
#[path = "hw_tests.rs"]
mod tests;
