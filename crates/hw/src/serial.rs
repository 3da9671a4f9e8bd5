//! Serial ports (PROPOSED P3): one [`SerialSession`] per data session holds at most
//! [`MAX_HANDLES`] open ports, each opened exclusively (`TIOCEXCL` plus an exclusive
//! `flock`, so a second open from any session or process is refused), forgotten after
//! [`SerialSession::expiry`] without use, on close, on an I/O error, and when the session
//! ends or says HELLO again. Every call blocks: the daemon runs them on its blocking pool.

use std::collections::HashMap;
use std::io::Read;
use std::io::Write;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;

use shim_protocol::messages::hardware::FlowControl;
use shim_protocol::messages::hardware::Parity;

use crate::Allowlist;
use crate::HwError;
use crate::Source;

/// Open handles per session (P3).
pub const MAX_HANDLES: usize = 4;
/// A handle unused this long is closed and forgotten (P3).
pub const DEFAULT_EXPIRY: Duration = Duration::from_secs(300);
/// How long one write may wait for the device to accept bytes.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// The framing of `SERIAL_OPEN`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Framing {
    /// 50-4 000 000.
    pub baud_rate: u32,
    /// 5-8.
    pub data_bits: u8,
    /// Parity.
    pub parity: Parity,
    /// 1 or 2.
    pub stop_bits: u8,
    /// Flow control.
    pub flow_control: FlowControl,
}

/// Why an open failed beyond [`HwError`]: too many handles (`SHIM_OVERLOADED`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// A hardware error.
    #[error(transparent)]
    Hw(#[from] HwError),
    /// [`MAX_HANDLES`] are already open in this session.
    #[error("at most {MAX_HANDLES} serial handles may be open")]
    TooMany,
}

/// An open port: a `TTYPort` on Unix (exclusive through `TIOCEXCL` and `flock`), a
/// `COMPort` on Windows (exclusive by the OS).
type Device = Box<dyn serialport::SerialPort>;

struct Entry {
    dev: Arc<Mutex<Device>>,
    last_used: Instant,
}

/// The serial handles of one session.
pub struct SerialSession {
    handles: Mutex<HashMap<String, Entry>>,
    expiry: Duration,
}

impl std::fmt::Debug for SerialSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SerialSession")
            .field("open", &self.open_count())
            .finish_non_exhaustive()
    }
}

impl Default for SerialSession {
    fn default() -> Self {
        SerialSession::new(DEFAULT_EXPIRY)
    }
}

fn io_error(e: impl std::fmt::Display) -> HwError {
    HwError::Io(e.to_string())
}

impl SerialSession {
    /// A session whose handles expire after `expiry` without use.
    pub fn new(expiry: Duration) -> SerialSession {
        SerialSession {
            handles: Mutex::new(HashMap::new()),
            expiry,
        }
    }

    /// The expiry.
    pub fn expiry(&self) -> Duration {
        self.expiry
    }

    /// Open handles (after dropping expired ones).
    pub fn open_count(&self) -> usize {
        self.handles
            .lock()
            .map(|mut h| {
                let exp = self.expiry;
                h.retain(|_, e| e.last_used.elapsed() < exp);
                h.len()
            })
            .unwrap_or(0)
    }

    /// Closes and forgets every handle (HELLO, session stop).
    pub fn close_all(&self) {
        if let Ok(mut h) = self.handles.lock() {
            h.clear();
        }
    }

    /// `SERIAL_OPEN`: `port` must be allowlisted (`HARDWARE_NOT_ALLOWED`, checked first as
    /// P7 orders it, so nothing is revealed about ports the user did not allow) and
    /// enumerated now (`HARDWARE_DEVICE_NOT_FOUND`); returns the new handle.
    pub fn open(
        &self,
        src: &Source,
        allow: &Allowlist,
        port: &str,
        framing: &Framing,
    ) -> Result<String, OpenError> {
        if !allow.allows(port) {
            return Err(HwError::not_allowed("serial", port).into());
        }
        let listed = crate::serial_ports(src).into_iter().any(|d| {
            matches!(d, shim_protocol::messages::hardware::HardwareDevice::Serial { port: p, .. } if p == port)
        });
        if !listed {
            return Err(HwError::not_found("serial", port).into());
        }
        if self.open_count() >= MAX_HANDLES {
            return Err(OpenError::TooMany);
        }
        let dev = open_device(port, framing)?;
        let handle = format!("ser_{}", uuid::Uuid::new_v4());
        let mut h = self
            .handles
            .lock()
            .map_err(|_| io_error("handle table poisoned"))?;
        if h.len() >= MAX_HANDLES {
            return Err(OpenError::TooMany);
        }
        h.insert(
            handle.clone(),
            Entry {
                dev: Arc::new(Mutex::new(dev)),
                last_used: Instant::now(),
            },
        );
        Ok(handle)
    }

    /// The device of `handle`, touching it; expired handles are dropped first.
    fn device(&self, handle: &str) -> Result<Arc<Mutex<Device>>, HwError> {
        let mut h = self
            .handles
            .lock()
            .map_err(|_| io_error("handle table poisoned"))?;
        let exp = self.expiry;
        h.retain(|_, e| e.last_used.elapsed() < exp);
        let e = h
            .get_mut(handle)
            .ok_or_else(|| HwError::Stale(handle.to_owned()))?;
        e.last_used = Instant::now();
        Ok(e.dev.clone())
    }

    fn drop_handle(&self, handle: &str) {
        if let Ok(mut h) = self.handles.lock() {
            h.remove(handle);
        }
    }

    /// Runs `f` on the device; an I/O error drops the handle (P3).
    fn with<T>(
        &self,
        handle: &str,
        f: impl FnOnce(&mut Device) -> Result<T, HwError>,
    ) -> Result<T, HwError> {
        let dev = self.device(handle)?;
        let r = match dev.lock() {
            Ok(mut d) => f(&mut d),
            Err(_) => Err(io_error("device lock poisoned")),
        };
        if matches!(r, Err(HwError::Io(_))) {
            self.drop_handle(handle);
        }
        r
    }

    /// `SERIAL_WRITE`: every byte, then (with `drain`) waits until transmitted.
    pub fn write(&self, handle: &str, data: &[u8], drain: bool) -> Result<(), HwError> {
        self.with(handle, |d| {
            d.set_timeout(WRITE_TIMEOUT).map_err(io_error)?;
            d.write_all(data).map_err(io_error)?;
            if drain {
                d.flush().map_err(io_error)?;
            }
            Ok(())
        })
    }

    /// `SERIAL_READ`, as pyserial's `read(size)` with a timeout: returns once `max` bytes
    /// arrived or `timeout` passed, with what arrived; `timed_out` when fewer than `max`
    /// bytes came in time (then possibly none).
    pub fn read(
        &self,
        handle: &str,
        max: usize,
        timeout: Duration,
    ) -> Result<(Vec<u8>, bool), HwError> {
        self.with(handle, |d| {
            let deadline = Instant::now() + timeout;
            let mut buf = vec![0u8; max];
            let mut n = 0;
            while n < max {
                let left = deadline.saturating_duration_since(Instant::now());
                d.set_timeout(left).map_err(io_error)?;
                match d.read(&mut buf[n..]) {
                    Ok(0) if n == 0 => return Err(io_error("the device was closed")),
                    Ok(k) if k > 0 => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => break,
                    Err(e) if n == 0 => return Err(io_error(e)),
                    // With bytes in hand, a failed or empty read is retried until the
                    // deadline; the next call reports a lasting error.
                    _ => std::thread::sleep(Duration::from_millis(1)),
                }
                if left.is_zero() {
                    break;
                }
            }
            buf.truncate(n);
            let timed_out = n < max && Instant::now() >= deadline;
            Ok((buf, timed_out))
        })
    }

    /// `SERIAL_CLOSE`.
    pub fn close(&self, handle: &str) -> Result<(), HwError> {
        self.device(handle)?;
        self.drop_handle(handle);
        Ok(())
    }
}

fn open_device(port: &str, f: &Framing) -> Result<Device, HwError> {
    use serialport::DataBits;
    use serialport::StopBits;
    let data_bits = match f.data_bits {
        5 => DataBits::Five,
        6 => DataBits::Six,
        7 => DataBits::Seven,
        _ => DataBits::Eight,
    };
    let parity = match f.parity {
        Parity::None => serialport::Parity::None,
        Parity::Even => serialport::Parity::Even,
        Parity::Odd => serialport::Parity::Odd,
    };
    let flow = match f.flow_control {
        FlowControl::None => serialport::FlowControl::None,
        FlowControl::RtsCts => serialport::FlowControl::Hardware,
        FlowControl::XonXoff => serialport::FlowControl::Software,
    };
    let builder = serialport::new(port, f.baud_rate)
        .data_bits(data_bits)
        .parity(parity)
        .stop_bits(if f.stop_bits == 2 {
            StopBits::Two
        } else {
            StopBits::One
        })
        .flow_control(flow)
        .timeout(WRITE_TIMEOUT);
    let refused = |e: serialport::Error| match e.kind() {
        serialport::ErrorKind::NoDevice => HwError::busy("serial", port),
        _ => HwError::Io(e.to_string()),
    };
    // Exclusive by default: TIOCEXCL plus flock on Unix, the OS's own rule on Windows.
    #[cfg(unix)]
    {
        let tty = serialport::TTYPort::open(&builder).map_err(refused)?;
        // On error `tty` is dropped here: the port is closed before the answer.
        check_speed(&tty, f.baud_rate)?;
        Ok(Box::new(tty))
    }
    #[cfg(not(unix))]
    builder.open().map_err(refused)
}

/// The speed a Unix port really runs at: Linux drivers do not fail an unsupported rate,
/// they keep the old one or round it (`tty_termios_encode_baud_rate`), and a port whose
/// speed is locked (`TIOCSLCKTRMIOS`) keeps its speed bits; both show in the read-back.
#[cfg(unix)]
#[allow(unsafe_code)] // TTYPort offers only AsRawFd; rustix wants a BorrowedFd.
fn check_speed(tty: &serialport::TTYPort, wanted: u32) -> Result<(), HwError> {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor belongs to `tty`, which outlives this borrow.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(tty.as_raw_fd()) };
    let t = rustix::termios::tcgetattr(fd).map_err(io_error)?;
    let actual = effective_speed(&t);
    if actual == Some(wanted) {
        return Ok(());
    }
    Err(HwError::Io(match actual {
        Some(a) => format!("the device does not take {wanted} baud (it stays at {a} baud)"),
        None => format!("the device does not take {wanted} baud"),
    }))
}

/// The output speed the kernel uses (`tty_termios_baud_rate`): the integer speed when the
/// speed bits say "other" (`BOTHER`), else the speed the `B*` bits encode.
#[cfg(unix)]
fn effective_speed(t: &rustix::termios::Termios) -> Option<u32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // CBAUD, BOTHER and CBAUDEX of <asm-generic/termbits.h>, and the kernel's
        // baud_table (drivers/tty/tty_baudrate.c).
        const CBAUD: u32 = 0o010017;
        const BOTHER: u32 = 0o010000;
        const CBAUDEX: u32 = 0o010000;
        const TABLE: [u32; 31] = [
            0, 50, 75, 110, 134, 150, 200, 300, 600, 1200, 1800, 2400, 4800, 9600, 19_200, 38_400,
            57_600, 115_200, 230_400, 460_800, 500_000, 576_000, 921_600, 1_000_000, 1_152_000,
            1_500_000, 2_000_000, 2_500_000, 3_000_000, 3_500_000, 4_000_000,
        ];
        let bits = t.control_modes.bits() & CBAUD;
        if bits == BOTHER {
            return Some(t.output_speed());
        }
        let index = if bits & CBAUDEX != 0 {
            (bits & !CBAUDEX) + 15
        } else {
            bits
        };
        TABLE.get(index as usize).copied()
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    Some(t.output_speed())
}
