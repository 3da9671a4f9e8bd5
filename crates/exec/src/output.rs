//! Output collection with one shared byte budget (JAIL_FILES_EXEC.md 12.7).

/// The text budget of 5.3: frames of 16 MiB minus 64 KiB, divided by 6 (JSON worst case).
pub const TEXT_BUDGET: u64 = 2_785_280;

/// The truncation marker `M` of 12.7 step 4 (28 bytes).
pub const TRUNCATION_MARKER: &[u8] = b"\n[command output truncated]\n";

/// Largest chunk read from a pipe at once (12.7 step 1).
pub const CHUNK: usize = 64 * 1024;

/// Which pipe a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// stdout (or the terminal, for a PTY).
    Stdout,
    /// stderr.
    Stderr,
}

/// `L = min(max_file_size_bytes, 2 785 280)`.
pub fn budget(max_file_size_bytes: u64) -> usize {
    usize::try_from(max_file_size_bytes.min(TEXT_BUDGET)).unwrap_or(0)
}

/// Accumulates stdout and stderr under one budget, in arrival order.
#[derive(Debug, Clone)]
pub struct Collector {
    limit: usize,
    out: Vec<u8>,
    err: Vec<u8>,
    truncated: bool,
}

/// Retained output after [`Collector::finish`]: raw bytes, before UTF-8 decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawOutput {
    /// Retained stdout bytes.
    pub stdout: Vec<u8>,
    /// Retained stderr bytes, plus the marker when truncated.
    pub stderr: Vec<u8>,
    /// Whether any byte was discarded.
    pub truncated: bool,
}

impl Collector {
    /// An empty collector with budget `limit` bytes.
    pub fn new(limit: usize) -> Collector {
        Collector {
            limit,
            out: Vec::new(),
            err: Vec::new(),
            truncated: false,
        }
    }

    /// 12.7 step 2: keeps the first `max(remaining, 0)` bytes of `chunk`.
    pub fn push(&mut self, ch: Channel, chunk: &[u8]) {
        let used = self.out.len() + self.err.len();
        let remaining = self.limit.saturating_sub(used);
        let keep = remaining.min(chunk.len());
        if keep < chunk.len() {
            self.truncated = true;
        }
        let buf = match ch {
            Channel::Stdout => &mut self.out,
            Channel::Stderr => &mut self.err,
        };
        buf.extend_from_slice(&chunk[..keep]);
    }

    /// Bytes retained so far (both channels).
    pub fn retained(&self) -> usize {
        self.out.len() + self.err.len()
    }

    /// 12.7 step 4: trims for and appends the marker when anything was discarded.
    pub fn finish(self) -> RawOutput {
        let Collector {
            limit,
            mut out,
            mut err,
            truncated,
        } = self;
        if truncated {
            let marker = &TRUNCATION_MARKER[..TRUNCATION_MARKER.len().min(limit)];
            let total = out.len() + err.len() + marker.len();
            let mut excess = total.saturating_sub(limit);
            let from_out = excess.min(out.len());
            out.truncate(out.len() - from_out);
            excess -= from_out;
            let from_err = excess.min(err.len());
            err.truncate(err.len() - from_err);
            err.extend_from_slice(marker);
        }
        RawOutput {
            stdout: out,
            stderr: err,
            truncated,
        }
    }
}

/// 12.7 step 5: UTF-8 with U+FFFD for each maximal ill-formed subsequence (this is exactly
/// what `String::from_utf8_lossy` does).
pub fn decode(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
