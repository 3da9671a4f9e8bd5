//! PROPOSED hardware messages (COMPUTER_USE_HW.md 9.2). Nothing here may be sent until the
//! platform allowlists these types and grants `hardware_*`; today `HELLO.hardware_devices`
//! is always `[]` and no hardware frame is ever sent.

use serde::Deserialize;
use serde::Serialize;

use super::Invalid;
use super::Validate;
use crate::ErrorCode;
use crate::values::lenient_int;
use crate::wire_enum::wire_enum;

/// A device as listed in `HELLO.hardware_devices` and `HARDWARE_LIST_RESPONSE` (P1).
/// The deployed element shapes (`{type, port, desc}`, `{type, vid, pid, desc}`) decode too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "lowercase")]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub enum HardwareDevice {
    /// A serial port.
    Serial {
        /// OS port name.
        port: String,
        /// Stable `/dev/serial/by-id/…` link.
        #[serde(default)]
        stable_port: Option<String>,
        /// Product string.
        #[serde(default)]
        desc: Option<String>,
        /// USB vendor id, 4 lower-case hex digits.
        #[serde(default)]
        vid: Option<String>,
        /// USB product id.
        #[serde(default)]
        pid: Option<String>,
        /// Manufacturer.
        #[serde(default)]
        manufacturer: Option<String>,
    },
    /// A USB device.
    Usb {
        /// Vendor id.
        vid: String,
        /// Product id.
        pid: String,
        /// Product string.
        #[serde(default)]
        desc: Option<String>,
        /// Manufacturer.
        #[serde(default)]
        manufacturer: Option<String>,
        /// Bus number.
        #[serde(default)]
        bus: Option<u32>,
        /// Device address.
        #[serde(default)]
        address: Option<u32>,
    },
    /// A GPIO chip.
    Gpio {
        /// Chip name, e.g. `gpiochip0`.
        chip: String,
        /// Chip label.
        #[serde(default)]
        label: Option<String>,
        /// Number of lines.
        lines: u32,
    },
}

/// `HARDWARE_LIST_RESPONSE` (P2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct HardwareListResponse {
    /// Devices of the granted types.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::small_vec()")
    )]
    pub devices: Vec<HardwareDevice>,
    /// Entries were dropped to stay within 128.
    pub truncated: bool,
}

wire_enum! {
    /// Serial parity.
    closed Parity {
        /// None.
        None => "none",
        /// Even.
        Even => "even",
        /// Odd.
        Odd => "odd",
    }
}

wire_enum! {
    /// Serial flow control.
    closed FlowControl {
        /// None.
        None => "none",
        /// RTS/CTS.
        RtsCts => "rtscts",
        /// XON/XOFF.
        XonXoff => "xonxoff",
    }
}

/// `SERIAL_OPEN` (P3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct SerialOpen {
    /// An enumerated, allowlisted port.
    pub port: String,
    /// 50-4 000 000.
    #[serde(default = "default_baud", deserialize_with = "lenient_int::de")]
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "50u32..=4_000_000")
    )]
    #[cfg_attr(feature = "schema", schemars(range(min = 50, max = 4_000_000)))]
    pub baud_rate: u32,
    /// 5-8.
    #[serde(default = "default_data_bits", deserialize_with = "lenient_int::de")]
    #[cfg_attr(any(test, feature = "arbitrary"), proptest(strategy = "5u8..=8"))]
    #[cfg_attr(feature = "schema", schemars(range(min = 5, max = 8)))]
    pub data_bits: u8,
    /// Parity.
    #[serde(default = "default_parity")]
    pub parity: Parity,
    /// 1 or 2.
    #[serde(default = "default_stop_bits", deserialize_with = "lenient_int::de")]
    #[cfg_attr(any(test, feature = "arbitrary"), proptest(strategy = "1u8..=2"))]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 2)))]
    pub stop_bits: u8,
    /// Flow control.
    #[serde(default = "default_flow")]
    pub flow_control: FlowControl,
}

fn default_baud() -> u32 {
    9600
}
fn default_data_bits() -> u8 {
    8
}
fn default_parity() -> Parity {
    Parity::None
}
fn default_stop_bits() -> u8 {
    1
}
fn default_flow() -> FlowControl {
    FlowControl::None
}

impl Validate for SerialOpen {
    fn validate(&self) -> Result<(), Invalid> {
        let bad = |reason| Err(Invalid::new(ErrorCode::InternalError, reason));
        if !(50..=4_000_000).contains(&self.baud_rate) {
            return bad("baud_rate must be 50-4000000");
        }
        if !(5..=8).contains(&self.data_bits) {
            return bad("data_bits must be 5-8");
        }
        if !matches!(self.stop_bits, 1 | 2) {
            return bad("stop_bits must be 1 or 2");
        }
        Ok(())
    }
}

/// `SERIAL_OPENED` (P3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct SerialOpened {
    /// `"ser_" + UUIDv4`.
    pub handle: String,
    /// The opened port.
    pub port: String,
}

/// `SERIAL_WRITE` (P3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct SerialWrite {
    /// Handle.
    pub handle: String,
    /// Base64 bytes.
    pub data: String,
    /// Wait until transmitted.
    #[serde(default = "super::default_true")]
    pub drain: bool,
}

/// `SERIAL_READ` (P3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct SerialRead {
    /// Handle.
    pub handle: String,
    /// 1-65 536.
    #[serde(default = "default_max_bytes", deserialize_with = "lenient_int::de")]
    #[cfg_attr(any(test, feature = "arbitrary"), proptest(strategy = "1u32..=65_536"))]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 65_536)))]
    pub max_bytes: u32,
    /// 0-10 000.
    #[serde(default = "default_timeout_ms", deserialize_with = "lenient_int::de")]
    #[cfg_attr(any(test, feature = "arbitrary"), proptest(strategy = "0u32..=10_000"))]
    #[cfg_attr(feature = "schema", schemars(range(max = 10_000)))]
    pub timeout_ms: u32,
}

fn default_max_bytes() -> u32 {
    4096
}
fn default_timeout_ms() -> u32 {
    1000
}

impl Validate for SerialRead {
    fn validate(&self) -> Result<(), Invalid> {
        if !(1..=65_536).contains(&self.max_bytes) {
            return Err(Invalid::new(
                ErrorCode::InternalError,
                "max_bytes must be 1-65536",
            ));
        }
        if self.timeout_ms > 10_000 {
            return Err(Invalid::new(
                ErrorCode::InternalError,
                "timeout_ms must be 0-10000",
            ));
        }
        Ok(())
    }
}

/// `SERIAL_DATA` (P3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct SerialData {
    /// Handle.
    pub handle: String,
    /// Base64 bytes read.
    pub data: String,
    /// Bytes read.
    pub size_bytes: u64,
    /// The read timed out.
    pub timed_out: bool,
}

/// `SERIAL_CLOSE` (P3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct SerialClose {
    /// Handle.
    pub handle: String,
}

/// `GPIO_READ` (P5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct GpioRead {
    /// Chip.
    pub chip: String,
    /// Line.
    pub line: u32,
}

/// `GPIO_VALUE` and `GPIO_WRITE` (P5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct GpioLevel {
    /// Chip.
    pub chip: String,
    /// Line.
    pub line: u32,
    /// 0 or 1.
    #[cfg_attr(any(test, feature = "arbitrary"), proptest(strategy = "0u8..=1"))]
    #[cfg_attr(feature = "schema", schemars(range(max = 1)))]
    pub value: u8,
}

impl Validate for GpioLevel {
    fn validate(&self) -> Result<(), Invalid> {
        if self.value > 1 {
            return Err(Invalid::new(
                ErrorCode::InternalError,
                "value must be 0 or 1",
            ));
        }
        Ok(())
    }
}
