//! The export bundle (1.18): a deflate ZIP of every log file, `manifest.json` and
//! `manifest.sig` (HMAC-SHA256 of the manifest bytes under the audit key).

use std::io::Write;
use std::path::Path;
use std::path::PathBuf;

use crate::files;
use crate::key::AuditKey;
use crate::verify::log_files;

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// There is no log file at all.
    #[error("no audit logs present")]
    Nothing,
    /// Reading a log or writing the bundle failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSummary {
    /// The bundle.
    pub output: PathBuf,
    /// Number of log files in it.
    pub files: usize,
    /// `manifest.sig` (lowercase hex).
    pub signature: String,
    /// The exact `manifest.json` bytes.
    pub manifest: Vec<u8>,
}

/// One manifest entry.
struct Entry {
    name: String,
    sha256: String,
    size: u64,
}

/// Appends `s` JSON-escaped with every non-ASCII character as `\uXXXX` (manifest style).
fn ascii_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The exact manifest bytes of 1.18.
fn manifest_bytes(exported_at: &str, entries: &[Entry]) -> Vec<u8> {
    let mut s = String::from("{\"exported_at\": ");
    ascii_json_str(&mut s, exported_at);
    s.push_str(", \"files\": [");
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str("{\"name\": ");
        ascii_json_str(&mut s, &e.name);
        s.push_str(", \"sha256\": ");
        ascii_json_str(&mut s, &e.sha256);
        s.push_str(&format!(", \"size\": {}}}", e.size));
    }
    s.push_str("], \"key_username\": \"audit_key\"}");
    s.into_bytes()
}

/// `YYYY-MM-DDTHH:MM:SS.ffffff+00:00` in UTC.
pub fn utc_now_stamp() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.%6f+00:00")
        .to_string()
}

/// Writes the bundle for the current file `current` and its rotated files to `output`
/// (overwriting it).
pub fn export_bundle(
    current: &Path,
    key: &AuditKey,
    output: &Path,
) -> Result<ExportSummary, ExportError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ExportError::Io { path, source }
    };
    let paths = log_files(current).map_err(io(current))?;
    if paths.is_empty() {
        return Err(ExportError::Nothing);
    }
    let mut zip = ZipWriter::default();
    let mut entries = Vec::with_capacity(paths.len());
    for p in &paths {
        let data = std::fs::read(p).map_err(io(p))?;
        let name = files::file_name(p);
        let digest = ring::digest::digest(&ring::digest::SHA256, &data);
        entries.push(Entry {
            name: name.clone(),
            sha256: hex::encode(digest.as_ref()),
            size: data.len() as u64,
        });
        zip.add(&name, &data).map_err(io(p))?;
    }
    let manifest = manifest_bytes(&utc_now_stamp(), &entries);
    let signature = key.mac_hex(&manifest);
    zip.add("manifest.json", &manifest).map_err(io(output))?;
    zip.add("manifest.sig", signature.as_bytes())
        .map_err(io(output))?;
    let bytes = zip.finish();
    let mut f = std::fs::File::create(output).map_err(io(output))?;
    f.write_all(&bytes).map_err(io(output))?;
    f.sync_all().map_err(io(output))?;
    Ok(ExportSummary {
        output: output.to_path_buf(),
        files: paths.len(),
        signature,
        manifest,
    })
}

/// A minimal in-memory ZIP writer (deflate, no ZIP64: every member is below 4 GiB).
#[derive(Default)]
struct ZipWriter {
    out: Vec<u8>,
    central: Vec<u8>,
    count: u16,
}

impl ZipWriter {
    fn add(&mut self, name: &str, data: &[u8]) -> std::io::Result<()> {
        let mut crc = flate2::Crc::new();
        crc.update(data);
        let crc = crc.sum();
        let mut enc =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(data)?;
        let comp = enc.finish()?;
        let too_big = || std::io::Error::other("file too large for a ZIP without ZIP64");
        let csize = u32::try_from(comp.len()).map_err(|_| too_big())?;
        let usize_ = u32::try_from(data.len()).map_err(|_| too_big())?;
        let offset = u32::try_from(self.out.len()).map_err(|_| too_big())?;
        let name_len = u16::try_from(name.len()).map_err(|_| too_big())?;
        let (time, date) = dos_time();
        let flags: u16 = 0x0800; // UTF-8 names
        let o = &mut self.out;
        o.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        o.extend_from_slice(&20u16.to_le_bytes());
        o.extend_from_slice(&flags.to_le_bytes());
        o.extend_from_slice(&8u16.to_le_bytes());
        o.extend_from_slice(&time.to_le_bytes());
        o.extend_from_slice(&date.to_le_bytes());
        o.extend_from_slice(&crc.to_le_bytes());
        o.extend_from_slice(&csize.to_le_bytes());
        o.extend_from_slice(&usize_.to_le_bytes());
        o.extend_from_slice(&name_len.to_le_bytes());
        o.extend_from_slice(&0u16.to_le_bytes());
        o.extend_from_slice(name.as_bytes());
        o.extend_from_slice(&comp);
        let c = &mut self.central;
        c.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        c.extend_from_slice(&(0x0300u16 | 20).to_le_bytes()); // made by: unix, 2.0
        c.extend_from_slice(&20u16.to_le_bytes());
        c.extend_from_slice(&flags.to_le_bytes());
        c.extend_from_slice(&8u16.to_le_bytes());
        c.extend_from_slice(&time.to_le_bytes());
        c.extend_from_slice(&date.to_le_bytes());
        c.extend_from_slice(&crc.to_le_bytes());
        c.extend_from_slice(&csize.to_le_bytes());
        c.extend_from_slice(&usize_.to_le_bytes());
        c.extend_from_slice(&name_len.to_le_bytes());
        c.extend_from_slice(&[0; 8]); // extra len, comment len, disk, internal attrs
        c.extend_from_slice(&(0o100_600u32 << 16).to_le_bytes()); // external attrs: -rw-------
        c.extend_from_slice(&offset.to_le_bytes());
        c.extend_from_slice(name.as_bytes());
        self.count = self.count.saturating_add(1);
        Ok(())
    }

    fn finish(mut self) -> Vec<u8> {
        let cd_offset = self.out.len() as u32;
        let cd_size = self.central.len() as u32;
        self.out.extend_from_slice(&self.central);
        let o = &mut self.out;
        o.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        o.extend_from_slice(&[0; 4]);
        o.extend_from_slice(&self.count.to_le_bytes());
        o.extend_from_slice(&self.count.to_le_bytes());
        o.extend_from_slice(&cd_size.to_le_bytes());
        o.extend_from_slice(&cd_offset.to_le_bytes());
        o.extend_from_slice(&0u16.to_le_bytes());
        self.out
    }
}

fn dos_time() -> (u16, u16) {
    let now = jiff::Zoned::now();
    let time =
        ((now.hour() as u16) << 11) | ((now.minute() as u16) << 5) | ((now.second() as u16) / 2);
    let year = (now.year() as i32 - 1980).clamp(0, 127) as u16;
    let date = (year << 9) | ((now.month() as u16) << 5) | (now.day() as u16);
    (time, date)
}
