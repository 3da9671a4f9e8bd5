// The fixture trees use symlinks, as sysfs does.
#![cfg(unix)]

use std::os::unix::fs::symlink;

use super::*;
use crate::usb::UsbLister;

/// The USB attributes every real device has (nusb drops a device without them).
pub(crate) fn usb_attrs(dir: &Path) {
    for (f, v) in [
        ("bcdDevice", "0001\n"),
        ("version", " 2.00\n"),
        ("bDeviceClass", "02\n"),
        ("bDeviceSubClass", "00\n"),
        ("bDeviceProtocol", "00\n"),
    ] {
        std::fs::write(dir.join(f), v).unwrap();
    }
}

/// A character-device double file for an 8-line chip.
pub(crate) fn gpio_double(path: &Path, label: &str) {
    let v = serde_json::json!({
        "double": gpio::DOUBLE_MAGIC, "label": label, "lines": 8,
        "inputs": {"3": 1}, "held_by_others": {"5": "other-app"},
    });
    std::fs::write(path, v.to_string()).unwrap();
}

/// A fixture sysfs/devfs tree: an Arduino on ttyACM0 (with a by-id link), a bare ttyS0
/// without a driver (not a real port), a USB root hub (not listed, as nusb does not list
/// them), a GPIO chip (a character-device double) and a `gpiochip1` that is no chip.
pub(crate) fn fixture(dir: &Path, acm_target: &Path) -> Source {
    let sys = dir.join("sys");
    let dev = dir.join("dev");
    let usb = sys.join("devices/pci0/usb1/1-1");
    std::fs::create_dir_all(usb.join("1-1:1.0/tty/ttyACM0")).unwrap();
    for (f, v) in [
        ("idVendor", "2341\n"),
        ("idProduct", "0043\n"),
        ("product", "Arduino Uno\n"),
        ("manufacturer", "Arduino (www.arduino.cc)\n"),
        ("serial", "SECRET-SERIAL-1234\n"),
        ("busnum", "1\n"),
        ("devnum", "5\n"),
    ] {
        std::fs::write(usb.join(f), v).unwrap();
    }
    usb_attrs(&usb);
    let hub = sys.join("devices/pci0/usb1");
    for (f, v) in [
        ("idVendor", "1d6b\n"),
        ("idProduct", "0002\n"),
        ("busnum", "1\n"),
        ("devnum", "1\n"),
    ] {
        std::fs::write(hub.join(f), v).unwrap();
    }
    usb_attrs(&hub);
    std::fs::create_dir_all(sys.join("class/tty/ttyACM0")).unwrap();
    symlink(usb.join("1-1:1.0"), sys.join("class/tty/ttyACM0/device")).unwrap();
    std::fs::create_dir_all(sys.join("devices/platform/serial8250/tty/ttyS0")).unwrap();
    std::fs::create_dir_all(sys.join("class/tty/ttyS0")).unwrap();
    symlink(
        sys.join("devices/platform/serial8250"),
        sys.join("class/tty/ttyS0/device"),
    )
    .unwrap();
    std::fs::create_dir_all(sys.join("bus/usb/devices")).unwrap();
    symlink(&usb, sys.join("bus/usb/devices/1-1")).unwrap();
    symlink(&hub, sys.join("bus/usb/devices/usb1")).unwrap();
    symlink(usb.join("1-1:1.0"), sys.join("bus/usb/devices/1-1:1.0")).unwrap();
    std::fs::create_dir_all(dev.join("serial/by-id")).unwrap();
    symlink(acm_target, dev.join("ttyACM0")).unwrap();
    std::fs::write(dev.join("ttyS0"), "").unwrap();
    gpio_double(&dev.join("gpiochip0"), "gpio-sim");
    std::fs::write(dev.join("gpiochip1"), "not a chip").unwrap();
    symlink(
        "../../ttyACM0",
        dev.join("serial/by-id/usb-Arduino_Uno_SECRET-if00"),
    )
    .unwrap();
    Source::tree(sys, dev)
}

#[test]
fn fixture_trees_enumerate_sorted_without_serial_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture(dir.path(), Path::new("/dev/null"));
    let all = Kinds {
        serial: true,
        usb: true,
        gpio: true,
    };
    let (devices, truncated) = enumerate(&src, all);
    assert!(!truncated);
    let json = serde_json::to_value(&devices).unwrap();
    let port = src.devfs.join("ttyACM0");
    assert_eq!(
        json,
        serde_json::json!([
            {"type": "gpio", "chip": "gpiochip0", "label": "gpio-sim", "lines": 8},
            {"type": "serial", "port": port.to_str().unwrap(),
             "stable_port": src.devfs.join("serial/by-id/usb-Arduino_Uno_SECRET-if00").to_str().unwrap(),
             "desc": "Arduino Uno", "vid": "2341", "pid": "0043",
             "manufacturer": "Arduino (www.arduino.cc)"},
            {"type": "usb", "vid": "2341", "pid": "0043", "desc": "Arduino Uno",
             "manufacturer": "Arduino (www.arduino.cc)", "bus": 1, "address": 5},
        ])
    );
    assert!(!json.to_string().contains("SECRET-SERIAL"));
    // Only the asked kinds.
    let (serial_only, _) = enumerate(
        &src,
        Kinds {
            serial: true,
            ..Kinds::default()
        },
    );
    assert_eq!(serial_only.len(), 1);
    // A missing tree is an empty list, not an error.
    let none = Source::tree(dir.path().join("nope"), dir.path().join("nope"));
    assert_eq!(enumerate(&none, all), (Vec::new(), false));
    assert!(gpio_present(&src) && !gpio_present(&none));
}

#[test]
fn at_most_128_entries_usb_trimmed_first() {
    let dir = tempfile::tempdir().unwrap();
    let sys = dir.path().join("sys");
    for i in 0..200 {
        let d = sys.join(format!("bus/usb/devices/1-{i}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("idVendor"), "abcd").unwrap();
        std::fs::write(d.join("idProduct"), "0001").unwrap();
        std::fs::write(d.join("devnum"), format!("{}", i % 128)).unwrap();
        std::fs::write(d.join("busnum"), "1").unwrap();
        usb_attrs(&d);
    }
    let dev = dir.path().join("dev");
    std::fs::create_dir_all(&dev).unwrap();
    gpio_double(&dev.join("gpiochip0"), "x");
    let src = Source::tree(sys, dev);
    let (d, truncated) = enumerate(
        &src,
        Kinds {
            serial: true,
            usb: true,
            gpio: true,
        },
    );
    assert!(truncated);
    assert_eq!(d.len(), MAX_DEVICES);
    assert!(matches!(
        d[0],
        shim_protocol::messages::hardware::HardwareDevice::Gpio { .. }
    ));
}

#[test]
fn allowlist_takes_exact_names_and_globs() {
    let a = Allowlist::new(&["/dev/ttyACM0".into(), "/dev/ttyUSB*".into()]).unwrap();
    assert!(a.allows("/dev/ttyACM0") && a.allows("/dev/ttyUSB3"));
    assert!(!a.allows("/dev/ttyACM1") && !a.allows("/dev/ttyUSB0/../x/y"));
    assert!(!Allowlist::new(&[]).unwrap().allows("/dev/ttyACM0"));
    assert!(Allowlist::new(&["[".into()]).is_err());
}

#[test]
fn gpio_double_reads_drives_holds_and_releases_lines() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture(dir.path(), Path::new("/dev/null"));
    let chip0 = src.devfs.join("gpiochip0");
    let held = gpio::double::held_file(&chip0);
    let ses = gpio::GpioSession::default();
    // Reads: the double's input levels; a line held by another consumer is busy.
    assert_eq!(ses.read(&src, "gpiochip0", 3), Ok(1));
    assert_eq!(ses.read(&src, "gpiochip0", 0), Ok(0));
    let busy = ses.read(&src, "gpiochip0", 5).unwrap_err();
    assert_eq!(busy.code(), shim_protocol::ErrorCode::HardwareDeviceBusy);
    assert_eq!(busy.details()["line"], 5);
    // A line past the chip's count, a node that is no chip, a name that is no chip name.
    let past = ses.read(&src, "gpiochip0", 8).unwrap_err();
    assert_eq!(
        past.code(),
        shim_protocol::ErrorCode::HardwareDeviceNotFound
    );
    assert_eq!(past.details()["line"], 8);
    for chip in ["gpiochip1", "../dev/gpiochip0", "ttyACM0", "gpiochip9"] {
        let e = ses.read(&src, chip, 0).unwrap_err();
        assert_eq!(e, HwError::not_found("gpio", chip), "{chip}");
    }
    // Writes: only allowlisted lines (checked before anything else).
    let writable = Allowlist::new(&["gpiochip0:1".into(), "gpiochip0:5".into()]).unwrap();
    let e = ses.write(&src, &writable, "gpiochip0", 2, 1).unwrap_err();
    assert_eq!(e, HwError::not_allowed("gpio", "gpiochip0").at_line(2));
    let e = ses.write(&src, &writable, "gpiochip7", 1, 1).unwrap_err();
    assert_eq!(e, HwError::not_allowed("gpio", "gpiochip7").at_line(1));
    ses.write(&src, &writable, "gpiochip0", 1, 1).unwrap();
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&held).unwrap()).unwrap();
    assert_eq!(
        state,
        serde_json::json!({"1": {"consumer": "autogpt-shim", "value": 1}})
    );
    // The driven level reads back; a second write changes it without a new request.
    assert_eq!(ses.read(&src, "gpiochip0", 1), Ok(1));
    ses.write(&src, &writable, "gpiochip0", 1, 0).unwrap();
    assert_eq!(ses.read(&src, "gpiochip0", 1), Ok(0));
    assert_eq!(ses.held_count(), 1);
    // Another session cannot take a held line, nor one another consumer holds.
    let other = gpio::GpioSession::default();
    let e = other.write(&src, &writable, "gpiochip0", 1, 1).unwrap_err();
    assert_eq!(e.code(), shim_protocol::ErrorCode::HardwareDeviceBusy);
    let e = other.write(&src, &writable, "gpiochip0", 5, 1).unwrap_err();
    assert_eq!(e.code(), shim_protocol::ErrorCode::HardwareDeviceBusy);
    // Released at the next HELLO (or when the session ends).
    ses.release_all();
    assert_eq!(ses.held_count(), 0);
    assert_eq!(std::fs::read_to_string(&held).unwrap(), "{}");
    other.write(&src, &writable, "gpiochip0", 1, 1).unwrap();
    drop(other);
    assert_eq!(std::fs::read_to_string(&held).unwrap(), "{}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_character_device_that_is_no_gpio_chip_is_not_enumerated_or_opened() {
    // The kernel path (gpiocdev): /dev/null is a character device but not a GPIO chip.
    let dir = tempfile::tempdir().unwrap();
    let dev = dir.path().join("dev");
    std::fs::create_dir_all(&dev).unwrap();
    symlink("/dev/null", dev.join("gpiochip3")).unwrap();
    let src = Source::tree(dir.path().join("sys"), dev);
    assert!(gpio_chips(&src).is_empty());
    let e = gpio::GpioSession::default()
        .read(&src, "gpiochip3", 0)
        .unwrap_err();
    assert_eq!(e, HwError::not_found("gpio", "gpiochip3"));
    assert!(gpio::chip_info(&src.devfs.join("gpiochip3")).is_err());
}

#[test]
fn the_tree_reader_lists_devices_as_nusb_does() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture(dir.path(), Path::new("/dev/null"));
    // The root hub `usb1` and the interface `1-1:1.0` are not devices; one without the
    // descriptor attributes is dropped.
    let bare = src.sysfs.join("bus/usb/devices/1-2");
    std::fs::create_dir_all(&bare).unwrap();
    std::fs::write(bare.join("idVendor"), "abcd").unwrap();
    std::fs::write(bare.join("idProduct"), "0001").unwrap();
    let listed = src.usb.list();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(src.usb.name(), "sysfs tree");
    assert_eq!(Source::default().usb.name(), "nusb");
}

/// The production lister (nusb) against the tree reader over this machine's own `/sys`:
/// the same devices (on a machine without a USB bus, none from both, and no error).
#[test]
fn nusb_and_the_tree_reader_agree_on_this_machine() {
    let sort = |mut v: Vec<shim_protocol::messages::hardware::HardwareDevice>| {
        v.sort_by_key(|d| serde_json::to_string(d).unwrap());
        v
    };
    let real = sort(usb::Nusb.list());
    let tree = sort(
        usb::SysfsUsb {
            sysfs: "/sys".into(),
        }
        .list(),
    );
    assert_eq!(real, tree);
}

/// nusb reads only the real `/sys/bus/usb`: in a private mount namespace (root only) the
/// fixture's `bus` directory is mounted over `/sys/bus`, and the production lister must
/// list exactly what the tree reader lists from the fixture.
#[cfg(target_os = "linux")]
#[test]
fn nusb_lists_a_fixture_mounted_over_sys_bus_like_the_tree_reader() {
    const CHILD: &str = "SHIM_HW_NUSB_CHILD";
    let sort = |mut v: Vec<shim_protocol::messages::hardware::HardwareDevice>| {
        v.sort_by_key(|d| serde_json::to_string(d).unwrap());
        v
    };
    if let Some(fixture_sys) = std::env::var_os(CHILD) {
        let from_nusb = sort(usb::Nusb.list());
        let from_tree = sort(
            usb::SysfsUsb {
                sysfs: fixture_sys.into(),
            }
            .list(),
        );
        assert_eq!(from_nusb, from_tree);
        assert_eq!(from_nusb.len(), 1, "{from_nusb:?}");
        assert!(
            !serde_json::to_string(&from_nusb)
                .unwrap()
                .contains("SECRET")
        );
        return;
    }
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: mounting over /sys/bus in a private namespace needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = fixture(dir.path(), Path::new("/dev/null"));
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount --bind "$1/bus" /sys/bus && exec "$2" --exact "$3" --nocapture"#)
        .args(["sh".as_ref(), src.sysfs.as_os_str(), exe.as_os_str()])
        .arg("tests::nusb_lists_a_fixture_mounted_over_sys_bus_like_the_tree_reader")
        .env(CHILD, &src.sysfs)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
}
