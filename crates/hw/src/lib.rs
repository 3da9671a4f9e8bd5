//! Hardware access for the local executor (COMPUTER_USE_HW.md 9).
//!
//! * [`Source`]: where devices are enumerated from, a sysfs root and a devfs root (`/sys`
//!   and `/dev` on a real machine, fixture trees in tests), and [`enumerate`] (P1).
//! * [`serial`]: serial ports opened exclusively with a framing, bounded writes and reads
//!   with a timeout (P3), each failure a typed [`HwError`] with its wire code (P6).
//!
//! Nothing here talks to the platform: the daemon decides whether anything is advertised
//! or served (today: never, unless the user opted into the PROPOSED protocol).

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use shim_protocol::ErrorCode;
use shim_protocol::messages::hardware::HardwareDevice;

pub mod gpio;
pub mod serial;
pub mod usb;

/// At most this many entries in `hardware_devices` (P1).
pub const MAX_DEVICES: usize = 128;
/// Strings are cut to this many characters (P1).
const MAX_STRING: usize = 256;

/// A hardware failure with its wire code (P6).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HwError {
    /// The port, chip or line is not currently enumerated.
    #[error("{kind} device {name}{} is not present", line_suffix(*line))]
    NotFound {
        /// `serial` or `gpio`.
        kind: &'static str,
        /// Port or chip.
        name: String,
        /// The GPIO line, when the chip exists but the line does not.
        line: Option<u32>,
    },
    /// Not in the local allowlist.
    #[error("{kind} device {name}{} is not in the local allowlist", line_suffix(*line))]
    NotAllowed {
        /// `serial` or `gpio`.
        kind: &'static str,
        /// Port or chip.
        name: String,
        /// The GPIO line (P6: `line?`).
        line: Option<u32>,
    },
    /// Held by another session or process.
    #[error("{kind} device {name}{} is busy", line_suffix(*line))]
    Busy {
        /// `serial` or `gpio`.
        kind: &'static str,
        /// Port or chip.
        name: String,
        /// The GPIO line another consumer holds.
        line: Option<u32>,
    },
    /// The handle is unknown, closed or expired.
    #[error("serial handle {0} is unknown or expired")]
    Stale(String),
    /// An I/O error (the device was unplugged, the OS refused a setting ...).
    #[error("I/O failed: {0}")]
    Io(String),
}

fn line_suffix(line: Option<u32>) -> String {
    line.map(|l| format!(" line {l}")).unwrap_or_default()
}

impl HwError {
    /// `HARDWARE_DEVICE_NOT_FOUND` for a port or chip.
    pub fn not_found(kind: &'static str, name: &str) -> HwError {
        HwError::NotFound {
            kind,
            name: name.to_owned(),
            line: None,
        }
    }

    /// `HARDWARE_NOT_ALLOWED` for a port or chip.
    pub fn not_allowed(kind: &'static str, name: &str) -> HwError {
        HwError::NotAllowed {
            kind,
            name: name.to_owned(),
            line: None,
        }
    }

    /// `HARDWARE_DEVICE_BUSY` for a port or chip.
    pub fn busy(kind: &'static str, name: &str) -> HwError {
        HwError::Busy {
            kind,
            name: name.to_owned(),
            line: None,
        }
    }

    /// The same error about one GPIO line of the chip.
    pub fn at_line(self, l: u32) -> HwError {
        match self {
            HwError::NotFound { kind, name, .. } => HwError::NotFound {
                kind,
                name,
                line: Some(l),
            },
            HwError::NotAllowed { kind, name, .. } => HwError::NotAllowed {
                kind,
                name,
                line: Some(l),
            },
            HwError::Busy { kind, name, .. } => HwError::Busy {
                kind,
                name,
                line: Some(l),
            },
            other => other,
        }
    }

    /// The wire code (P6).
    pub fn code(&self) -> ErrorCode {
        match self {
            HwError::NotFound { .. } => ErrorCode::HardwareDeviceNotFound,
            HwError::NotAllowed { .. } => ErrorCode::HardwareNotAllowed,
            HwError::Busy { .. } => ErrorCode::HardwareDeviceBusy,
            HwError::Stale(_) => ErrorCode::HardwareHandleStale,
            HwError::Io(_) => ErrorCode::HardwareIoFailed,
        }
    }

    /// The `details` object of P6.
    pub fn details(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        match self {
            HwError::NotFound { kind, name, line }
            | HwError::NotAllowed { kind, name, line }
            | HwError::Busy { kind, name, line } => {
                m.insert("type".into(), (*kind).into());
                let key = if *kind == "serial" { "port" } else { "chip" };
                m.insert(key.into(), name.clone().into());
                if let Some(l) = line {
                    m.insert("line".into(), (*l).into());
                }
            }
            HwError::Stale(h) => {
                m.insert("handle".into(), h.clone().into());
            }
            HwError::Io(e) => {
                m.insert("os_error".into(), e.clone().into());
            }
        }
        m
    }
}

/// Where devices are enumerated from: a sysfs root and a devfs root, and the USB lister.
#[derive(Clone)]
pub struct Source {
    /// The sysfs root (`/sys`).
    pub sysfs: PathBuf,
    /// The devfs root (`/dev`); ports and GPIO chips are reported under it.
    pub devfs: PathBuf,
    /// Lists USB devices: [`usb::Nusb`] on a real machine, [`usb::SysfsUsb`] over a
    /// fixture tree.
    pub usb: Arc<dyn usb::UsbLister>,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("sysfs", &self.sysfs)
            .field("devfs", &self.devfs)
            .field("usb", &self.usb.name())
            .finish()
    }
}

impl Default for Source {
    /// The machine itself: `/sys`, `/dev`, and USB through `nusb`.
    fn default() -> Self {
        Source {
            sysfs: PathBuf::from("/sys"),
            devfs: PathBuf::from("/dev"),
            usb: Arc::new(usb::Nusb),
        }
    }
}

impl Source {
    /// A tree standing in for `/sys` and `/dev` (a fixture, or a chroot-like copy): USB is
    /// read from `<sysfs>/bus/usb/devices` with nusb's own rules, since nusb only reads
    /// the real `/sys`.
    pub fn tree(sysfs: PathBuf, devfs: PathBuf) -> Source {
        Source {
            usb: Arc::new(usb::SysfsUsb {
                sysfs: sysfs.clone(),
            }),
            sysfs,
            devfs,
        }
    }
}

/// Which kinds to enumerate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Kinds {
    /// Serial ports.
    pub serial: bool,
    /// USB devices.
    pub usb: bool,
    /// GPIO chips.
    pub gpio: bool,
}

pub(crate) fn cut(s: &str) -> String {
    s.trim().chars().take(MAX_STRING).collect()
}

pub(crate) fn attr(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(name))
        .ok()
        .map(|s| cut(&s))
        .filter(|s| !s.is_empty())
}

pub(crate) fn hex4(dir: &Path, name: &str) -> Option<String> {
    attr(dir, name)
        .filter(|s| s.len() == 4 && s.chars().all(|c| c.is_ascii_hexdigit()))
        .map(|s| s.to_ascii_lowercase())
}

pub(crate) fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The nearest ancestor of `dir` (itself included) that is a USB device (has `idVendor`).
fn usb_parent(dir: &Path) -> Option<PathBuf> {
    let mut cur = std::fs::canonicalize(dir).ok()?;
    for _ in 0..8 {
        if cur.join("idVendor").is_file() {
            return Some(cur);
        }
        cur = cur.parent()?.to_path_buf();
    }
    None
}

/// Serial ports: `tty` class entries named `ttyUSB*`, `ttyACM*`, or `ttyS*` backed by a
/// device with a driver, reported under the devfs root (P1).
pub fn serial_ports(src: &Source) -> Vec<HardwareDevice> {
    let by_id = src.devfs.join("serial").join("by-id");
    let links: Vec<(String, String)> = names(&by_id)
        .into_iter()
        .filter_map(|n| {
            let target = std::fs::read_link(by_id.join(&n)).ok()?;
            let t = target.file_name()?.to_str()?.to_owned();
            Some((t, by_id.join(&n).to_str()?.to_owned()))
        })
        .collect();
    let class = src.sysfs.join("class").join("tty");
    let mut out = Vec::new();
    for name in names(&class) {
        let usb_like = name.starts_with("ttyUSB") || name.starts_with("ttyACM");
        if !usb_like && !name.starts_with("ttyS") {
            continue;
        }
        let device = class.join(&name).join("device");
        if !device.exists() || (!usb_like && !device.join("driver").exists()) {
            continue;
        }
        let port = src.devfs.join(&name);
        if !port.exists() {
            continue;
        }
        let Some(port) = port.to_str().map(cut) else {
            continue;
        };
        let usb = usb_parent(&device);
        let get =
            |f: fn(&Path, &str) -> Option<String>, a: &str| usb.as_deref().and_then(|u| f(u, a));
        out.push(HardwareDevice::Serial {
            port,
            stable_port: links.iter().find(|(t, _)| *t == name).map(|(_, l)| cut(l)),
            desc: get(attr, "product"),
            vid: get(hex4, "idVendor"),
            pid: get(hex4, "idProduct"),
            manufacturer: get(attr, "manufacturer"),
        });
    }
    out
}

/// GPIO chips: `gpiochip*` nodes under the devfs root, each described by the chip itself
/// (its label and line count through [`gpio::chip_info`]); a node that is not a chip is
/// dropped (P1: enumeration errors drop the entry).
pub fn gpio_chips(src: &Source) -> Vec<HardwareDevice> {
    names(&src.devfs)
        .into_iter()
        .filter(|n| gpio::is_chip_name(n))
        .filter_map(|chip| {
            let info = gpio::chip_info(&src.devfs.join(&chip)).ok()?;
            Some(HardwareDevice::Gpio {
                label: Some(cut(&info.label)).filter(|l| !l.is_empty()),
                lines: info.lines,
                chip: cut(&chip),
            })
        })
        .collect()
}

/// Whether a GPIO character device exists (9.1: GPIO is usable only then, on Linux).
pub fn gpio_present(src: &Source) -> bool {
    cfg!(target_os = "linux") && names(&src.devfs).iter().any(|n| gpio::is_chip_name(n))
}

fn sort_key(d: &HardwareDevice) -> (u8, String, u32, u32) {
    match d {
        HardwareDevice::Gpio { chip, .. } => (0, chip.clone(), 0, 0),
        HardwareDevice::Serial { port, .. } => (1, port.clone(), 0, 0),
        HardwareDevice::Usb { bus, address, .. } => {
            (2, String::new(), bus.unwrap_or(0), address.unwrap_or(0))
        }
    }
}

/// P1: the devices of `kinds`, sorted by type then port/chip/bus-address, at most 128
/// (USB trimmed first); the flag says whether anything was dropped.
pub fn enumerate(src: &Source, kinds: Kinds) -> (Vec<HardwareDevice>, bool) {
    let mut fixed = Vec::new();
    if kinds.gpio {
        fixed.extend(gpio_chips(src));
    }
    if kinds.serial {
        fixed.extend(serial_ports(src));
    }
    let mut usb = if kinds.usb {
        src.usb.list()
    } else {
        Vec::new()
    };
    fixed.sort_by_key(sort_key);
    usb.sort_by_key(sort_key);
    let total = fixed.len() + usb.len();
    fixed.truncate(MAX_DEVICES);
    usb.truncate(MAX_DEVICES - fixed.len());
    fixed.extend(usb);
    (fixed, total > MAX_DEVICES)
}

/// A local allowlist of exact names or glob patterns (`hardware_serial_allow`); empty
/// allows nothing.
#[derive(Debug, Clone)]
pub struct Allowlist {
    set: globset::GlobSet,
    exact: Vec<String>,
}

impl Allowlist {
    /// Builds it; an invalid pattern is an error naming it.
    pub fn new(entries: &[String]) -> Result<Allowlist, String> {
        let mut b = globset::GlobSetBuilder::new();
        for e in entries {
            let g = globset::GlobBuilder::new(e)
                .literal_separator(true)
                .build()
                .map_err(|err| format!("{e}: {err}"))?;
            b.add(g);
        }
        Ok(Allowlist {
            set: b.build().map_err(|e| e.to_string())?,
            exact: entries.to_vec(),
        })
    }

    /// The empty list: allows nothing.
    pub fn empty() -> Allowlist {
        Allowlist {
            set: globset::GlobSet::empty(),
            exact: Vec::new(),
        }
    }

    /// Whether `name` matches an entry.
    pub fn allows(&self, name: &str) -> bool {
        self.exact.iter().any(|e| e == name) || self.set.is_match(name)
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
