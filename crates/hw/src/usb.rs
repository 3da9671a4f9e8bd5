//! USB listing (PROPOSED P1/P4: enumeration only). Two listers behind [`UsbLister`]:
//!
//! * [`Nusb`], the production lister: the `nusb` crate, which lists devices on Linux
//!   (sysfs), macOS (IOKit) and Windows (SetupAPI) alike; it reads the real `/sys` only.
//! * [`SysfsUsb`], for a tree standing in for `/sys` (fixtures): it reads
//!   `<root>/bus/usb/devices` with the rules nusb applies on Linux (root hubs `usbN` and
//!   interfaces `1-1:1.0` are not devices; an entry missing one of the attributes nusb
//!   parses, [`REQUIRED`], is dropped), so both listers give the same list for the same
//!   tree.
//!
//! Serial numbers are never read into the result (P1).

use std::path::Path;
use std::path::PathBuf;

use shim_protocol::messages::hardware::HardwareDevice;

use crate::attr;
use crate::cut;
use crate::names;

/// Lists the USB devices of a machine or a tree.
pub trait UsbLister: Send + Sync {
    /// The devices, in no particular order; a failure is an empty list (P1: enumeration
    /// errors never fail the HELLO).
    fn list(&self) -> Vec<HardwareDevice>;
    /// What `doctor` and logs call it.
    fn name(&self) -> &'static str;
}

/// The machine's USB devices through `nusb`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Nusb;

fn hex(v: u16) -> String {
    format!("{v:04x}")
}

impl UsbLister for Nusb {
    fn list(&self) -> Vec<HardwareDevice> {
        use nusb::MaybeFuture;
        let devices = match nusb::list_devices().wait() {
            Ok(d) => d,
            Err(e) => {
                // No USB bus (a VM without one) or no permission: an empty list.
                tracing::debug!(error = %e, "USB devices cannot be listed");
                return Vec::new();
            }
        };
        devices
            .map(|d| HardwareDevice::Usb {
                vid: hex(d.vendor_id()),
                pid: hex(d.product_id()),
                desc: d.product_string().map(cut).filter(|s| !s.is_empty()),
                manufacturer: d.manufacturer_string().map(cut).filter(|s| !s.is_empty()),
                // Linux: the bus number as sysfs gives it ("001"); elsewhere the OS's bus
                // id when it is a number.
                bus: d.bus_id().parse().ok(),
                address: Some(u32::from(d.device_address())),
            })
            .collect()
    }

    fn name(&self) -> &'static str {
        "nusb"
    }
}

/// The attributes nusb 0.2 reads on Linux and drops a device without.
pub const REQUIRED: [&str; 9] = [
    "busnum",
    "devnum",
    "idVendor",
    "idProduct",
    "bcdDevice",
    "version",
    "bDeviceClass",
    "bDeviceSubClass",
    "bDeviceProtocol",
];

/// USB devices read from `<sysfs>/bus/usb/devices` of a tree.
#[derive(Debug, Clone)]
pub struct SysfsUsb {
    /// The sysfs root of the tree.
    pub sysfs: PathBuf,
}

/// nusb's rule on Linux: a device's name is made of digits, `-` and `.` only (`1-6`,
/// `1-6.4.2`); root hubs (`usb1`) and interfaces (`1-6:1.0`) are not listed.
fn is_device_name(n: &str) -> bool {
    !n.is_empty() && n.bytes().all(|c| matches!(c, b'0'..=b'9' | b'-' | b'.'))
}

fn hex_attr(dir: &Path, name: &str) -> Option<String> {
    let v = attr(dir, name)?;
    u16::from_str_radix(v.strip_prefix("0x").unwrap_or(&v), 16)
        .ok()
        .map(hex)
}

impl UsbLister for SysfsUsb {
    fn list(&self) -> Vec<HardwareDevice> {
        let dir = self.sysfs.join("bus").join("usb").join("devices");
        names(&dir)
            .into_iter()
            .filter(|n| is_device_name(n))
            .filter_map(|n| {
                let d = dir.join(n);
                if !REQUIRED.iter().all(|a| d.join(a).is_file()) {
                    return None;
                }
                let bus: u32 = attr(&d, "busnum")?.parse().ok()?;
                let address: u8 = attr(&d, "devnum")?.parse().ok()?;
                Some(HardwareDevice::Usb {
                    vid: hex_attr(&d, "idVendor")?,
                    pid: hex_attr(&d, "idProduct")?,
                    desc: attr(&d, "product"),
                    manufacturer: attr(&d, "manufacturer"),
                    bus: Some(bus),
                    address: Some(u32::from(address)),
                })
            })
            .collect()
    }

    fn name(&self) -> &'static str {
        "sysfs tree"
    }
}
