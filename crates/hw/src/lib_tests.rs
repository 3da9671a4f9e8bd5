// The fixture trees use symlinks, as sysfs does.
#![cfg(unix)]

use std::os::unix::fs::symlink;

use super::*;

/// A fixture sysfs/devfs tree: an Arduino on ttyACM0 (with a by-id link), a bare ttyS0
/// without a driver (not a real port), a USB hub, and a GPIO chip.
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
    let hub = sys.join("devices/pci0/usb1");
    for (f, v) in [
        ("idVendor", "1d6b\n"),
        ("idProduct", "0002\n"),
        ("busnum", "1\n"),
        ("devnum", "1\n"),
    ] {
        std::fs::write(hub.join(f), v).unwrap();
    }
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
    std::fs::create_dir_all(sys.join("bus/gpio/devices/gpiochip0")).unwrap();
    std::fs::write(sys.join("bus/gpio/devices/gpiochip0/label"), "gpio-sim\n").unwrap();
    std::fs::write(sys.join("bus/gpio/devices/gpiochip0/ngpio"), "8\n").unwrap();
    std::fs::create_dir_all(dev.join("serial/by-id")).unwrap();
    symlink(acm_target, dev.join("ttyACM0")).unwrap();
    std::fs::write(dev.join("ttyS0"), "").unwrap();
    std::fs::write(dev.join("gpiochip0"), "").unwrap();
    symlink(
        "../../ttyACM0",
        dev.join("serial/by-id/usb-Arduino_Uno_SECRET-if00"),
    )
    .unwrap();
    Source {
        sysfs: sys,
        devfs: dev,
    }
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
            {"type": "usb", "vid": "1d6b", "pid": "0002", "desc": null, "manufacturer": null, "bus": 1, "address": 1},
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
    let none = Source {
        sysfs: dir.path().join("nope"),
        devfs: dir.path().join("nope"),
    };
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
        std::fs::write(d.join("devnum"), format!("{i}")).unwrap();
    }
    let dev = dir.path().join("dev");
    std::fs::create_dir_all(&dev).unwrap();
    std::fs::write(dev.join("gpiochip0"), "").unwrap();
    let src = Source {
        sysfs: sys,
        devfs: dev,
    };
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
