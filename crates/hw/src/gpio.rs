//! GPIO lines (PROPOSED P5) on Linux GPIO character devices.
//!
//! A chip node under the devfs root is served by one of two [`Chips`]:
//!
//! * a character device: the kernel's chip, through the `gpiocdev` crate (uAPI v2). Reads
//!   request the line "as is" (its direction is not changed) and release it at once; a write
//!   requests the line as an output and keeps it requested until [`GpioSession::release_all`]
//!   (the next HELLO) or the session's end (P5).
//! * a regular file starting with [`DOUBLE_MAGIC`]: a **character-device double**, for
//!   machines whose kernel cannot load `gpio-sim` (no configfs, no modules: this project's CI
//!   machines). It is described in that file (label, line count, input levels, lines held by
//!   other consumers) and reports the lines it holds, with their levels, in `<file>.held`,
//!   so a test can see what was driven and when it was released. A real chip is never a
//!   regular file, so production always uses the kernel.
//!
//! Every call blocks (ioctls); the daemon runs them on its blocking pool.

use std::collections::HashMap;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Mutex;

use crate::Allowlist;
use crate::HwError;
use crate::Source;

/// What this daemon calls itself as the consumer of a line it holds.
pub const CONSUMER: &str = "autogpt-shim";
/// The first bytes of a character-device double file.
pub const DOUBLE_MAGIC: &str = "shim-hw gpio character-device double";

/// A chip's own description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChipInfo {
    /// The chip's label (its driver), e.g. `pinctrl-bcm2835`.
    pub label: String,
    /// How many lines it has.
    pub lines: u32,
}

/// A line this process holds as an output.
pub trait HeldLine: Send {
    /// Drives it to `value` (0 or 1).
    fn set(&mut self, value: u8) -> Result<(), HwError>;
    /// The level it is driven to.
    fn get(&self) -> Result<u8, HwError>;
}

/// The operations on the chips of one kind (the kernel's, or the double).
pub trait Chips: Send + Sync {
    /// The chip's description.
    fn info(&self, path: &Path) -> Result<ChipInfo, HwError>;
    /// The line's level, without changing its direction; `Busy` when another consumer
    /// holds it.
    fn read(&self, path: &Path, line: u32) -> Result<u8, HwError>;
    /// Requests the line as an output driven to `value`, held until the result is dropped.
    fn hold(&self, path: &Path, line: u32, value: u8) -> Result<Box<dyn HeldLine>, HwError>;
}

/// Whether `name` is a chip node name (`gpiochip` and digits): nothing else under the
/// devfs root is ever opened as a chip.
pub fn is_chip_name(name: &str) -> bool {
    name.strip_prefix("gpiochip")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn chip_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The [`Chips`] serving the node at `path`: the kernel for a character device, the double
/// for a double file; anything else is not a chip.
pub fn chips_for(path: &Path) -> Result<&'static dyn Chips, HwError> {
    let meta = std::fs::metadata(path).map_err(|_| HwError::not_found("gpio", &chip_name(path)))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if meta.file_type().is_char_device() {
            #[cfg(target_os = "linux")]
            return Ok(&cdev::Kernel);
        }
    }
    if meta.is_file() && double::is_double(path) {
        return Ok(&double::Double);
    }
    Err(HwError::Io(format!(
        "{} is not a GPIO character device",
        chip_name(path)
    )))
}

/// The description of the chip at `path`.
pub fn chip_info(path: &Path) -> Result<ChipInfo, HwError> {
    chips_for(path)?.info(path)
}

/// The GPIO lines one session holds as outputs, keyed by chip name and line.
#[derive(Default)]
pub struct GpioSession {
    held: Mutex<HashMap<(String, u32), Box<dyn HeldLine>>>,
}

impl std::fmt::Debug for GpioSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.held.lock().map(|h| h.len()).unwrap_or(0);
        f.debug_struct("GpioSession").field("held", &n).finish()
    }
}

impl GpioSession {
    /// Releases every held line (HELLO, session stop).
    pub fn release_all(&self) {
        if let Ok(mut h) = self.held.lock() {
            h.clear();
        }
    }

    /// How many lines are held.
    pub fn held_count(&self) -> usize {
        self.held.lock().map(|h| h.len()).unwrap_or(0)
    }

    /// The chip node of an enumerated chip, with its line count checked.
    fn chip(src: &Source, chip: &str, line: u32) -> Result<(PathBuf, &'static dyn Chips), HwError> {
        let listed = is_chip_name(chip)
            && crate::gpio_chips(src).iter().any(|d| {
                matches!(d, shim_protocol::messages::hardware::HardwareDevice::Gpio { chip: c, .. } if c == chip)
            });
        if !listed {
            return Err(HwError::not_found("gpio", chip));
        }
        let path = src.devfs.join(chip);
        let chips = chips_for(&path)?;
        let info = chips.info(&path)?;
        if line >= info.lines {
            return Err(HwError::not_found("gpio", chip).at_line(line));
        }
        Ok((path, chips))
    }

    /// `GPIO_READ`: the level of a line of an enumerated chip; a line this session drives
    /// reads back its driven level.
    pub fn read(&self, src: &Source, chip: &str, line: u32) -> Result<u8, HwError> {
        let (path, chips) = Self::chip(src, chip, line)?;
        let held = self
            .held
            .lock()
            .map_err(|_| HwError::Io("line table poisoned".into()))?;
        match held.get(&(chip.to_owned(), line)) {
            Some(l) => l.get(),
            None => chips.read(&path, line),
        }
    }

    /// `GPIO_WRITE`: `chip:line` must be allowlisted (`hardware_gpio_writable`, checked
    /// first, P7) and exist; the line is requested as an output on the first write and stays
    /// requested.
    pub fn write(
        &self,
        src: &Source,
        writable: &Allowlist,
        chip: &str,
        line: u32,
        value: u8,
    ) -> Result<(), HwError> {
        if !writable.allows(&format!("{chip}:{line}")) {
            return Err(HwError::not_allowed("gpio", chip).at_line(line));
        }
        let (path, chips) = Self::chip(src, chip, line)?;
        let mut held = self
            .held
            .lock()
            .map_err(|_| HwError::Io("line table poisoned".into()))?;
        let key = (chip.to_owned(), line);
        if let Some(l) = held.get_mut(&key) {
            return l.set(value);
        }
        let l = chips.hold(&path, line, value)?;
        held.insert(key, l);
        Ok(())
    }
}

#[cfg(target_os = "linux")]
mod cdev {
    //! The kernel's chips through gpiocdev.

    use std::path::Path;

    use gpiocdev::Request;
    use gpiocdev::line::Value;

    use super::ChipInfo;
    use super::Chips;
    use super::HeldLine;
    use super::chip_name;
    use crate::HwError;

    pub(super) struct Kernel;

    /// EBUSY from a line request: another consumer holds the line.
    fn map(path: &Path, line: Option<u32>, e: gpiocdev::Error) -> HwError {
        let busy = matches!(
            &e,
            gpiocdev::Error::Uapi(_, gpiocdev_uapi::Error::Os(gpiocdev_uapi::Errno(n)))
            | gpiocdev::Error::Os(gpiocdev_uapi::Errno(n))
                if *n == rustix::io::Errno::BUSY.raw_os_error()
        );
        if busy {
            let b = HwError::busy("gpio", &chip_name(path));
            return match line {
                Some(l) => b.at_line(l),
                None => b,
            };
        }
        HwError::Io(e.to_string())
    }

    fn level(v: Value) -> u8 {
        u8::from(v == Value::Active)
    }

    struct Held(Request, u32);

    impl HeldLine for Held {
        fn set(&mut self, value: u8) -> Result<(), HwError> {
            self.0
                .set_lone_value(Value::from(value))
                .map_err(|e| HwError::Io(e.to_string()))
        }

        fn get(&self) -> Result<u8, HwError> {
            self.0
                .lone_value()
                .map(level)
                .map_err(|e| HwError::Io(format!("line {}: {e}", self.1)))
        }
    }

    impl Chips for Kernel {
        fn info(&self, path: &Path) -> Result<ChipInfo, HwError> {
            let chip = gpiocdev::Chip::from_path(path).map_err(|e| map(path, None, e))?;
            let info = chip.info().map_err(|e| map(path, None, e))?;
            Ok(ChipInfo {
                label: info.label,
                lines: info.num_lines,
            })
        }

        fn read(&self, path: &Path, line: u32) -> Result<u8, HwError> {
            let req = Request::builder()
                .on_chip(path)
                .with_consumer(super::CONSUMER)
                .with_line(line)
                .as_is()
                .request()
                .map_err(|e| map(path, Some(line), e))?;
            req.lone_value()
                .map(level)
                .map_err(|e| map(path, Some(line), e))
        }

        fn hold(&self, path: &Path, line: u32, value: u8) -> Result<Box<dyn HeldLine>, HwError> {
            let req = Request::builder()
                .on_chip(path)
                .with_consumer(super::CONSUMER)
                .with_line(line)
                .as_output(Value::from(value))
                .request()
                .map_err(|e| map(path, Some(line), e))?;
            Ok(Box::new(Held(req, line)))
        }
    }
}

pub mod double {
    //! The character-device double (see the module documentation above): a JSON file
    //! `{"double": DOUBLE_MAGIC, "label": .., "lines": n, "inputs": {"3": 1},
    //! "held_by_others": {"5": "other-app"}}` describes the chip; `<file>.held` lists the
    //! lines this process holds, `{"17": {"consumer": "autogpt-shim", "value": 1}}`.

    use std::collections::BTreeMap;
    use std::path::Path;
    use std::path::PathBuf;
    use std::sync::Mutex;

    use serde_json::Value as Json;

    use super::ChipInfo;
    use super::Chips;
    use super::HeldLine;
    use super::chip_name;
    use crate::HwError;

    /// The double's chips.
    pub(super) struct Double;

    /// Lines held by this process, per double file: the kernel refuses a second request of
    /// a held line, so does the double.
    static HELD: Mutex<BTreeMap<(PathBuf, u32), u8>> = Mutex::new(BTreeMap::new());

    pub(super) fn is_double(path: &Path) -> bool {
        load(path).is_ok()
    }

    fn load(path: &Path) -> Result<Json, HwError> {
        let text = std::fs::read_to_string(path).map_err(|e| HwError::Io(e.to_string()))?;
        let v: Json = serde_json::from_str(&text).map_err(|e| HwError::Io(e.to_string()))?;
        if v.get("double").and_then(Json::as_str) != Some(super::DOUBLE_MAGIC) {
            return Err(HwError::Io(format!(
                "{} is not a GPIO character device",
                chip_name(path)
            )));
        }
        Ok(v)
    }

    fn line_entry<'a>(v: &'a Json, key: &str, line: u32) -> Option<&'a Json> {
        v.get(key)?.get(line.to_string())
    }

    /// The path of the file reporting held lines.
    pub fn held_file(path: &Path) -> PathBuf {
        let mut p = path.as_os_str().to_owned();
        p.push(".held");
        PathBuf::from(p)
    }

    /// Rewrites `<file>.held` from the table (called with the table locked).
    fn report(path: &Path, held: &BTreeMap<(PathBuf, u32), u8>) -> Result<(), HwError> {
        let lines: serde_json::Map<String, Json> = held
            .iter()
            .filter(|((p, _), _)| p == path)
            .map(|((_, l), v)| {
                (
                    l.to_string(),
                    serde_json::json!({"consumer": super::CONSUMER, "value": v}),
                )
            })
            .collect();
        let tmp = {
            let mut t = held_file(path).into_os_string();
            t.push(".tmp");
            PathBuf::from(t)
        };
        std::fs::write(&tmp, Json::Object(lines).to_string())
            .and_then(|()| std::fs::rename(&tmp, held_file(path)))
            .map_err(|e| HwError::Io(e.to_string()))
    }

    fn busy(path: &Path, line: u32) -> HwError {
        HwError::busy("gpio", &chip_name(path)).at_line(line)
    }

    struct Held {
        path: PathBuf,
        line: u32,
    }

    impl HeldLine for Held {
        fn set(&mut self, value: u8) -> Result<(), HwError> {
            let mut held = HELD
                .lock()
                .map_err(|_| HwError::Io("double poisoned".into()))?;
            held.insert((self.path.clone(), self.line), value);
            report(&self.path, &held)
        }

        fn get(&self) -> Result<u8, HwError> {
            let held = HELD
                .lock()
                .map_err(|_| HwError::Io("double poisoned".into()))?;
            held.get(&(self.path.clone(), self.line))
                .copied()
                .ok_or_else(|| HwError::Io("the line was released".into()))
        }
    }

    impl Drop for Held {
        fn drop(&mut self) {
            if let Ok(mut held) = HELD.lock() {
                held.remove(&(self.path.clone(), self.line));
                let _ = report(&self.path, &held);
            }
        }
    }

    impl Chips for Double {
        fn info(&self, path: &Path) -> Result<ChipInfo, HwError> {
            let v = load(path)?;
            Ok(ChipInfo {
                label: v
                    .get("label")
                    .and_then(Json::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                lines: v
                    .get("lines")
                    .and_then(Json::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(0),
            })
        }

        fn read(&self, path: &Path, line: u32) -> Result<u8, HwError> {
            let v = load(path)?;
            let held = HELD
                .lock()
                .map_err(|_| HwError::Io("double poisoned".into()))?;
            if line_entry(&v, "held_by_others", line).is_some()
                || held.contains_key(&(path.to_owned(), line))
            {
                return Err(busy(path, line));
            }
            Ok(line_entry(&v, "inputs", line)
                .and_then(Json::as_u64)
                .map_or(0, |x| u8::from(x != 0)))
        }

        fn hold(&self, path: &Path, line: u32, value: u8) -> Result<Box<dyn HeldLine>, HwError> {
            let v = load(path)?;
            let mut held = HELD
                .lock()
                .map_err(|_| HwError::Io("double poisoned".into()))?;
            let key = (path.to_owned(), line);
            if line_entry(&v, "held_by_others", line).is_some() || held.contains_key(&key) {
                return Err(busy(path, line));
            }
            held.insert(key, value);
            report(path, &held)?;
            Ok(Box::new(Held {
                path: path.to_owned(),
                line,
            }))
        }
    }
}
