use super::*;

#[test]
fn serial_is_advertised_only_where_ports_are_enumerated() {
    assert_eq!(
        serial_and_usb("linux", true),
        [Capability::HardwareSerial, Capability::HardwareUsb]
    );
    assert_eq!(serial_and_usb("macos", true), [Capability::HardwareUsb]);
    assert_eq!(serial_and_usb("windows", false), []);
}
