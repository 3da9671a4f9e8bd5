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
use shim_hw::Kinds;
use shim_hw::Source;
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
use shim_protocol::messages::hardware::HardwareListResponse;
use shim_protocol::messages::hardware::SerialData;
use shim_protocol::messages::hardware::SerialOpened;

use crate::config::Settings;
use crate::runtime::auditor::AuditFailed;
use crate::runtime::auditor::Auditor;
use crate::runtime::handshake::Negotiated;

/// Largest decoded `SERIAL_WRITE` (P3: min(max_file_size_bytes, 1 MiB)).
const MAX_WRITE: u64 = 1024 * 1024;

/// Machine-wide hardware settings.
pub(crate) struct HwMachine {
    enabled: bool,
    proposed: bool,
    source: Source,
    allow: Allowlist,
    expiry: Duration,
}

/// Per-runtime hardware state: the serial handles, replaced (all closed) at every HELLO
/// and dropped with the runtime.
#[derive(Debug, Default)]
pub(crate) struct HwSession {
    serial: Mutex<Option<Arc<SerialSession>>>,
}

impl HwMachine {
    /// From the settings.
    pub(crate) fn new(settings: &Settings) -> HwMachine {
        let h = &settings.hardware;
        let mut source = Source::default();
        if let Some(s) = &h.sysfs_root {
            source.sysfs = s.clone();
        }
        if let Some(d) = &h.devfs_root {
            source.devfs = d.clone();
        }
        HwMachine {
            enabled: settings.enable_hardware,
            proposed: h.proposed,
            source,
            // An invalid pattern fails closed: nothing is allowed.
            allow: Allowlist::new(&h.serial_allow).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "hardware_serial_allow is invalid; no port may be opened");
                Allowlist::empty()
            }),
            expiry: settings.tuning.hardware_handle_expiry,
        }
    }

    /// The capabilities this host can advertise (9.1): serial and USB whenever support is
    /// compiled in, GPIO only on Linux with a GPIO character device.
    pub(crate) fn capabilities(&self) -> Vec<Capability> {
        if !self.enabled {
            return Vec::new();
        }
        let mut caps = Vec::new();
        if cfg!(unix) {
            caps.push(Capability::HardwareSerial);
            caps.push(Capability::HardwareUsb);
        }
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
        format!(
            "advertised {}; {} device(s) present; protocol {}",
            if caps.is_empty() {
                "nothing".to_owned()
            } else {
                caps.join(", ")
            },
            devices.len(),
            if self.proposed {
                "PROPOSED (served only if the platform grants hardware_*)"
            } else {
                "none (no hardware frame is ever sent)"
            }
        )
    }
}

/// Fills the HELLO (1.2, 9.1, P1) and closes every serial handle of this runtime (P3).
pub(crate) fn advertise(m: &HwMachine, s: &HwSession, hello: &mut Hello) {
    if let Ok(mut cur) = s.serial.lock() {
        *cur = Some(Arc::new(SerialSession::new(m.expiry)));
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

fn err(e: &shim_hw::HwError) -> Message {
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

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, shim_hw::HwError> + Send + 'static,
) -> Result<T, shim_hw::HwError> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(shim_hw::HwError::Io(e.to_string())))
}

/// Serves one hardware request after the gate (P7: payload validation was done by the
/// decoder; then the allowlist, then the operation). Exactly one audit record (P8).
pub(crate) async fn handle(
    m: &HwMachine,
    s: &HwSession,
    audit: &Auditor,
    n: &Negotiated,
    max_file_size: u64,
    id: &str,
    msg: &Message,
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
    let serial = s.serial.lock().ok().and_then(|c| c.clone());
    let serial = match serial {
        Some(x) => x,
        None => Arc::new(SerialSession::new(m.expiry)),
    };
    let (op, details, reply): (&str, Map, Message) = match msg.clone() {
        Message::HardwareListRequest(_) => {
            let caps: Vec<Capability> = m
                .capabilities()
                .into_iter()
                .filter(|c| n.is_granted(c))
                .collect();
            let (devices, truncated) = shim_hw::enumerate(&m.source, kinds(&caps));
            let types: Vec<&str> = caps
                .iter()
                .map(|c| c.as_str().trim_start_matches("hardware_"))
                .collect();
            let d = Map::new()
                .with("types", types)
                .with("devices_returned", devices.len());
            (
                "HARDWARE_LIST",
                d,
                Message::HardwareListResponse(HardwareListResponse { devices, truncated }),
            )
        }
        Message::SerialOpen(p) => {
            let mut d = Map::new()
                .with("port", p.port.as_str())
                .with("baud_rate", p.baud_rate);
            let allow = m.allow.clone();
            let source = m.source.clone();
            let port = p.port.clone();
            let framing = Framing {
                baud_rate: p.baud_rate,
                data_bits: p.data_bits,
                parity: p.parity,
                stop_bits: p.stop_bits,
                flow_control: p.flow_control,
            };
            let ses = serial.clone();
            let r = tokio::task::spawn_blocking(move || ses.open(&source, &allow, &port, &framing))
                .await
                .unwrap_or_else(|e| Err(OpenError::Hw(shim_hw::HwError::Io(e.to_string()))));
            let reply = match r {
                Ok(handle) => {
                    d.insert("handle", handle.as_str());
                    Message::SerialOpened(SerialOpened {
                        handle,
                        port: p.port,
                    })
                }
                Err(OpenError::TooMany) => {
                    d.insert("handle", Option::<String>::None);
                    plain(
                        ErrorCode::ShimOverloaded,
                        "At most 4 serial handles may be open in a session.",
                    )
                }
                Err(OpenError::Hw(e)) => {
                    d.insert("handle", Option::<String>::None);
                    err(&e)
                }
            };
            ("SERIAL_OPEN", d, reply)
        }
        Message::SerialWrite(p) => {
            let mut d = Map::new().with("handle", p.handle.as_str());
            let reply = match base64::engine::general_purpose::STANDARD.decode(p.data.as_bytes()) {
                Err(_) => {
                    d.insert("size_bytes", 0u64);
                    plain(ErrorCode::InternalError, "data is not valid base64.")
                }
                Ok(bytes) if bytes.len() as u64 > max_file_size.min(MAX_WRITE) => {
                    d.insert("size_bytes", bytes.len());
                    plain(
                        ErrorCode::FileTooLarge,
                        "The data is larger than a serial write may be.",
                    )
                }
                Ok(bytes) => {
                    d.insert("size_bytes", bytes.len());
                    let (ses, h, drain) = (serial.clone(), p.handle.clone(), p.drain);
                    match blocking(move || ses.write(&h, &bytes, drain)).await {
                        Ok(()) => Message::Ack(Ack::OK),
                        Err(e) => err(&e),
                    }
                }
            };
            ("SERIAL_WRITE", d, reply)
        }
        Message::SerialRead(p) => {
            let (ses, h) = (serial.clone(), p.handle.clone());
            let max = p.max_bytes as usize;
            let timeout = Duration::from_millis(u64::from(p.timeout_ms));
            let r = blocking(move || ses.read(&h, max, timeout)).await;
            let mut d = Map::new().with("handle", p.handle.as_str());
            let reply = match r {
                Ok((bytes, timed_out)) => {
                    d.insert("size_bytes_returned", bytes.len());
                    d.insert("timed_out", timed_out);
                    Message::SerialData(SerialData {
                        handle: p.handle,
                        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
                        size_bytes: bytes.len() as u64,
                        timed_out,
                    })
                }
                Err(e) => {
                    d.insert("size_bytes_returned", 0u64);
                    d.insert("timed_out", false);
                    err(&e)
                }
            };
            ("SERIAL_READ", d, reply)
        }
        Message::SerialClose(p) => {
            let d = Map::new().with("handle", p.handle.as_str());
            let reply = match serial.close(&p.handle) {
                Ok(()) => Message::Ack(Ack::OK),
                Err(e) => err(&e),
            };
            ("SERIAL_CLOSE", d, reply)
        }
        Message::GpioRead(p) => (
            "GPIO_READ",
            Map::new()
                .with("chip", p.chip.as_str())
                .with("line", p.line)
                .with("value", Option::<u32>::None),
            gpio_unbuilt(),
        ),
        Message::GpioWrite(p) => {
            let d = Map::new()
                .with("chip", p.chip.as_str())
                .with("line", p.line)
                .with("value", u32::from(p.value));
            ("GPIO_WRITE", d, gpio_unbuilt())
        }
        _ => return Ok(plain(ErrorCode::InternalError, "not a hardware request")),
    };
    let result = match &reply {
        Message::Error(e) => {
            let mut r = AuditResult::failed(&e.code);
            r.duration_ms = millis(started.elapsed());
            r
        }
        _ => AuditResult::ok_after(started.elapsed()),
    };
    audit.op(op, Some(id), details, result).await?;
    Ok(reply)
}

/// GPIO line access is not built yet: refused, never faked.
fn gpio_unbuilt() -> Message {
    Message::Error(ErrorPayload {
        code: ErrorCode::FeatureNotSupported,
        message: "GPIO line access is not available in this build.".into(),
        fatal: false,
        details: Some(
            [("feature".to_owned(), serde_json::Value::from("gpio"))]
                .into_iter()
                .collect(),
        ),
    })
}
