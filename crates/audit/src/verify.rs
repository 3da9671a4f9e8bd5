//! Verification of one file (1.14) and of the current file with its rotated segments (1.15).
//!
//! The file is streamed in blocks of whole lines. Inside a block, lines are parsed,
//! canonicalised and MACed on all cores (each record's MAC is independent of the others);
//! the chain rules of 1.14 step 4 are then applied in file order. Memory stays bounded by the
//! block size (or by the longest line).

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;
use std::path::PathBuf;

use serde::Serialize;

use crate::fast::Fast;
use crate::fast::FastPrev;
use crate::files;
use crate::key::AuditKey;
use crate::parse;
use crate::parse::Node;
use crate::record::OP_AUDIT_ROTATED;

/// The kinds of 1.14 and 1.15. (`duplicate_seq` is reserved and never emitted.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ViolationKind {
    /// The file does not end with LF.
    Truncated,
    /// A line is not a strict JSON object (verification stops).
    ParseError,
    /// `seq` or `hmac` missing or of the wrong type (verification stops).
    MissingField,
    /// `seq` is not the expected one.
    SequenceGap,
    /// `prev_hmac` differs from the previous record's `hmac`.
    ChainBreak,
    /// The stored `hmac` does not match the content.
    HmacMismatch,
    /// A rotated segment that a later file links to is missing.
    MissingSegment,
    /// A rotated segment's last record differs from what the next file's head recorded.
    SegmentMismatch,
}

impl ViolationKind {
    /// The spelling used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ViolationKind::Truncated => "truncated",
            ViolationKind::ParseError => "parse_error",
            ViolationKind::MissingField => "missing_field",
            ViolationKind::SequenceGap => "sequence_gap",
            ViolationKind::ChainBreak => "chain_break",
            ViolationKind::HmacMismatch => "hmac_mismatch",
            ViolationKind::MissingSegment => "missing_segment",
            ViolationKind::SegmentMismatch => "segment_mismatch",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// What is wrong.
    pub kind: ViolationKind,
    /// The record's claimed `seq`, if it had one.
    pub seq: Option<i64>,
    /// 1-based physical line number.
    pub line: u64,
    /// A human-readable explanation.
    pub message: String,
}

/// The `AUDIT_ROTATED` head of a file, when its first record is one and is clean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RotatedHead {
    /// Line number of the head.
    pub line: u64,
    /// `reason`.
    pub reason: String,
    /// `previous_file`.
    pub previous_file: String,
    /// `previous_last_seq`.
    pub previous_last_seq: Option<i64>,
    /// `previous_last_hmac`.
    pub previous_last_hmac: Option<String>,
}

/// The result of verifying one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// Findings in order; empty means clean.
    pub violations: Vec<Violation>,
    /// `seq` of the last record that parsed.
    pub last_seq: Option<i64>,
    /// `hmac` of the last record that parsed.
    pub last_hmac: Option<String>,
    /// Records examined.
    pub records: u64,
    /// Bytes in the file.
    pub bytes: u64,
    /// The head link, if any.
    pub head: Option<RotatedHead>,
}

impl FileReport {
    /// True when no violation was found.
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }

    /// The bare file name.
    pub fn name(&self) -> String {
        files::file_name(&self.path)
    }

    /// The first violation, if any (the first bad seq and line).
    pub fn first_violation(&self) -> Option<&Violation> {
        self.violations.first()
    }
}

/// What `prev_hmac` held.
#[derive(Debug)]
enum Prev {
    Null,
    Str(String),
    Other,
}

/// The per-line result computed independently of other lines.
#[derive(Debug)]
enum LineInfo {
    Blank,
    Parse(String),
    NoSeq,
    Rec {
        seq: i64,
        prev: Prev,
        hmac: Option<String>,
        mac_ok: bool,
        head: Option<(String, String, Option<i64>, Option<String>)>,
    },
}

fn opt_string(n: Option<&Node<'_>>) -> Option<String> {
    n.and_then(Node::as_str).map(str::to_owned)
}

fn analyze(line: &[u8], key: &AuditKey, scratch: &mut Vec<u8>, fast: &mut Fast) -> LineInfo {
    if files::is_blank(line) {
        return LineInfo::Blank;
    }
    // Fast path: the canonical form straight from the bytes (rotation heads take the general
    // path, which also reads their details).
    if let Some(top) = fast.line(line, scratch)
        && top.op != Some(OP_AUDIT_ROTATED)
    {
        let Some(seq) = top.seq.and_then(|t| t.parse::<i64>().ok()) else {
            return LineInfo::NoSeq;
        };
        let prev = match top.prev {
            FastPrev::Null => Prev::Null,
            FastPrev::Str(s) => Prev::Str(s.to_owned()),
            FastPrev::Other => Prev::Other,
        };
        let mac_ok = top.hmac.is_some_and(|h| key.verify_hex(scratch, h));
        return LineInfo::Rec {
            seq,
            prev,
            hmac: top.hmac.map(str::to_owned),
            mac_ok,
            head: None,
        };
    }
    let node = match parse::parse(line) {
        Ok(n @ Node::Object(_)) => n,
        Ok(_) => return LineInfo::Parse("line is not a JSON object".to_owned()),
        Err(e) => return LineInfo::Parse(format!("line is not valid JSON: {e}")),
    };
    // One pass over the members for the four the verifier reads.
    let (mut seq_n, mut prev_n, mut hmac_n, mut op_n) = (None, None, None, None);
    if let Node::Object(members) = &node {
        for (k, v) in members {
            match k.as_ref() {
                "seq" => seq_n = Some(v),
                "prev_hmac" => prev_n = Some(v),
                "hmac" => hmac_n = Some(v),
                "op" => op_n = Some(v),
                _ => {}
            }
        }
    }
    let Some(seq) = seq_n.and_then(Node::as_i64) else {
        return LineInfo::NoSeq;
    };
    let prev = match prev_n {
        None | Some(Node::Null) => Prev::Null,
        Some(Node::Str(s)) => Prev::Str(s.to_string()),
        Some(_) => Prev::Other,
    };
    let hmac = hmac_n.and_then(Node::as_str);
    let mac_ok = match hmac {
        Some(h) => {
            scratch.clear();
            parse::write_canonical_node(scratch, &node, Some("hmac"));
            key.verify_hex(scratch, h)
        }
        None => false,
    };
    let head = if op_n.and_then(Node::as_str) == Some(OP_AUDIT_ROTATED) {
        let d = node.get("details");
        Some((
            opt_string(d.and_then(|d| d.get("reason"))).unwrap_or_default(),
            opt_string(d.and_then(|d| d.get("previous_file"))).unwrap_or_default(),
            d.and_then(|d| d.get("previous_last_seq"))
                .and_then(Node::as_i64),
            opt_string(d.and_then(|d| d.get("previous_last_hmac"))),
        ))
    } else {
        None
    };
    LineInfo::Rec {
        seq,
        prev,
        hmac: hmac.map(|h| match Cow::Borrowed(h) {
            Cow::Borrowed(b) => b.to_owned(),
            Cow::Owned(o) => o,
        }),
        mac_ok,
        head,
    }
}

/// The sequential part of 1.14 step 4.
struct Fold {
    violations: Vec<Violation>,
    expected: i64,
    prev: Option<String>,
    stopped: bool,
    last_seq: Option<i64>,
    last_hmac: Option<String>,
    records: u64,
    first_seen: bool,
    head: Option<RotatedHead>,
}

impl Fold {
    fn new() -> Self {
        Self {
            violations: Vec::new(),
            expected: 1,
            prev: None,
            stopped: false,
            last_seq: None,
            last_hmac: None,
            records: 0,
            first_seen: false,
            head: None,
        }
    }

    fn push(&mut self, kind: ViolationKind, seq: Option<i64>, line: u64, message: String) {
        self.violations.push(Violation {
            kind,
            seq,
            line,
            message,
        });
    }

    fn take(&mut self, info: LineInfo, line: u64) {
        if self.stopped {
            return;
        }
        match info {
            LineInfo::Blank => {}
            LineInfo::Parse(msg) => {
                self.push(ViolationKind::ParseError, None, line, msg);
                self.stopped = true;
            }
            LineInfo::NoSeq => {
                self.push(
                    ViolationKind::MissingField,
                    None,
                    line,
                    "seq is missing or not an integer".to_owned(),
                );
                self.stopped = true;
            }
            LineInfo::Rec {
                seq,
                prev,
                hmac,
                mac_ok,
                head,
            } => {
                self.records += 1;
                self.last_seq = Some(seq);
                self.last_hmac.clone_from(&hmac);
                let before = self.violations.len();
                if seq != self.expected {
                    self.push(
                        ViolationKind::SequenceGap,
                        Some(seq),
                        line,
                        format!("expected seq {}, found {}", self.expected, seq),
                    );
                }
                let chained = match (&prev, &self.prev) {
                    (Prev::Null, None) => true,
                    (Prev::Str(a), Some(b)) => a == b,
                    _ => false,
                };
                if !chained {
                    self.push(
                        ViolationKind::ChainBreak,
                        Some(seq),
                        line,
                        "prev_hmac does not match the hmac of the previous record".to_owned(),
                    );
                }
                let Some(h) = hmac else {
                    self.push(
                        ViolationKind::MissingField,
                        Some(seq),
                        line,
                        "hmac is missing or not a string".to_owned(),
                    );
                    self.stopped = true;
                    return;
                };
                if !mac_ok {
                    self.push(
                        ViolationKind::HmacMismatch,
                        Some(seq),
                        line,
                        "hmac does not match the record's content".to_owned(),
                    );
                }
                let first = !self.first_seen;
                self.first_seen = true;
                if first
                    && self.violations.len() == before
                    && let Some((reason, previous_file, s, h)) = head
                {
                    self.head = Some(RotatedHead {
                        line,
                        reason,
                        previous_file,
                        previous_last_seq: s,
                        previous_last_hmac: h,
                    });
                }
                self.prev = Some(h);
                self.expected = seq.saturating_add(1);
            }
        }
    }
}

/// Lines per parallel block are cut from reads of this size.
const BLOCK: usize = 8 * 1024 * 1024;

/// Verifies bytes already in memory (1.14).
pub fn verify_bytes(bytes: &[u8], key: &AuditKey) -> FileReport {
    // Reads of the whole input at once: a small log is not padded to a BLOCK-sized buffer
    // (the fuzz target verifies thousands of small inputs a second).
    let block = BLOCK.min(bytes.len() + 1);
    let mut r = verify_reader(bytes, key, Path::new("-"), default_threads(), block);
    r.bytes = bytes.len() as u64;
    r
}

/// Threads for the per-record work. The chain fold, reading and line splitting stay serial,
/// so measured on two cores a second thread gains little and loses under load: parallel MACs
/// start at three cores.
pub fn default_threads() -> usize {
    match std::thread::available_parallelism().map_or(1, |n| n.get()) {
        n if n <= 2 => 1,
        n => n.min(8),
    }
}

/// Verifies one file (1.14), with [`default_threads`] threads for the MACs.
pub fn verify_file(path: &Path, key: &AuditKey) -> std::io::Result<FileReport> {
    verify_file_threads(path, key, default_threads())
}

/// [`verify_file`] with an explicit number of threads (benchmarks compare 1 with all).
pub fn verify_file_threads(
    path: &Path,
    key: &AuditKey,
    threads: usize,
) -> std::io::Result<FileReport> {
    let f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let mut r = verify_reader(f, key, path, threads.max(1), BLOCK);
    r.bytes = len;
    Ok(r)
}

fn analyze_block(block: &[u8], key: &AuditKey, threads: usize) -> Vec<LineInfo> {
    let lines: Vec<&[u8]> = block.split(|&c| c == b'\n').collect();
    if threads <= 1 || lines.len() < 256 {
        let mut scratch = Vec::with_capacity(1024);
        let mut fast = Fast::default();
        return lines
            .iter()
            .map(|l| analyze(l, key, &mut scratch, &mut fast))
            .collect();
    }
    let per = lines.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = lines
            .chunks(per)
            .map(|part| {
                s.spawn(move || {
                    let mut scratch = Vec::with_capacity(1024);
                    let mut fast = Fast::default();
                    part.iter()
                        .map(|l| analyze(l, key, &mut scratch, &mut fast))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut out = Vec::with_capacity(lines.len());
        for h in handles {
            match h.join() {
                Ok(v) => out.extend(v),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        out
    })
}

/// Verifies what `r` yields, read in pieces of `block` bytes (at least 1; lines are processed
/// the same whatever the piece size).
pub(crate) fn verify_reader(
    mut r: impl Read,
    key: &AuditKey,
    path: &Path,
    threads: usize,
    block: usize,
) -> FileReport {
    let block = block.max(1);
    let mut fold = Fold::new();
    let mut buf: Vec<u8> = Vec::with_capacity(block);
    let mut line_no: u64 = 0;
    let mut total: u64 = 0;
    let mut last_byte: Option<u8> = None;
    let mut eof = false;
    let mut read_error: Option<String> = None;
    while !eof {
        // Fill the buffer up to `block` (or further until it holds an LF, for long lines),
        // reading straight into it: no per-block allocation, one copy per byte.
        let mut has_lf = buf.contains(&b'\n');
        loop {
            let old = buf.len();
            buf.resize(old + block, 0);
            match r.read(&mut buf[old..]) {
                Ok(0) => {
                    buf.truncate(old);
                    eof = true;
                    break;
                }
                Ok(n) => {
                    buf.truncate(old + n);
                    total += n as u64;
                    last_byte = Some(buf[old + n - 1]);
                    has_lf |= memchr::memchr(b'\n', &buf[old..]).is_some();
                    if buf.len() >= block && has_lf {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => buf.truncate(old),
                Err(e) => {
                    buf.truncate(old);
                    read_error = Some(e.to_string());
                    eof = true;
                    break;
                }
            }
        }
        // Process whole lines; at EOF also the final piece.
        let cut = if eof {
            buf.len()
        } else {
            match buf.iter().rposition(|&c| c == b'\n') {
                Some(i) => i + 1,
                None => continue,
            }
        };
        let mut block = &buf[..cut];
        if block.last() == Some(&b'\n') {
            block = &block[..block.len() - 1];
        } else if block.is_empty() {
            break;
        }
        if fold.stopped {
            // After a stop only the line count matters (to name the last line if it is cut).
            line_no += block.split(|&c| c == b'\n').count() as u64;
        } else {
            for info in analyze_block(block, key, threads) {
                line_no += 1;
                fold.take(info, line_no);
            }
        }
        buf.drain(..cut);
    }
    let mut violations = fold.violations;
    if let Some(e) = read_error {
        violations.push(Violation {
            kind: ViolationKind::ParseError,
            seq: None,
            line: line_no + 1,
            message: format!("read error: {e}"),
        });
    }
    if total > 0 && last_byte != Some(b'\n') {
        let last_line = line_no;
        violations.insert(
            0,
            Violation {
                kind: ViolationKind::Truncated,
                seq: None,
                line: last_line,
                message: "the file does not end with a newline (its last line is cut)".to_owned(),
            },
        );
    }
    FileReport {
        path: path.to_path_buf(),
        violations,
        last_seq: fold.last_seq,
        last_hmac: fold.last_hmac,
        records: fold.records,
        bytes: total,
        head: fold.head,
    }
}

/// The result of verifying the current file and every rotated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllReport {
    /// Current file first (if present), then rotated files oldest first.
    pub files: Vec<FileReport>,
}

impl AllReport {
    /// True when every file is clean.
    pub fn is_clean(&self) -> bool {
        self.files.iter().all(FileReport::is_clean)
    }
}

/// The files `verify-all` examines: the current file (if present), then rotated files oldest
/// first.
pub fn log_files(current: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    if current.is_file() {
        out.push(current.to_path_buf());
    }
    out.extend(files::list_rotated(current)?);
    Ok(out)
}

/// Verifies every file and the segment links between them (1.15).
pub fn verify_all(current: &Path, key: &AuditKey) -> std::io::Result<AllReport> {
    let paths = log_files(current)?;
    let (_, cur_name) = files::split(current);
    let rotated: Vec<PathBuf> = files::list_rotated(current)?;
    let rotated_keys: Vec<(String, u64)> = rotated
        .iter()
        .filter_map(|p| files::rotated_sort_key(&cur_name, &files::file_name(p)))
        .collect();
    let mut reports = Vec::with_capacity(paths.len());
    for p in &paths {
        let mut rep = verify_file(p, key)?;
        if let Some(head) = rep.head.clone() {
            link_check(&mut rep, &head, current, &cur_name, &rotated, &rotated_keys);
        }
        reports.push(rep);
    }
    Ok(AllReport { files: reports })
}

fn link_check(
    rep: &mut FileReport,
    head: &RotatedHead,
    current: &Path,
    cur_name: &str,
    rotated: &[PathBuf],
    rotated_keys: &[(String, u64)],
) {
    let checked = matches!(head.reason.as_str(), "size" | "age" | "explicit");
    let recovery = head.reason == "recovery";
    if !checked && !recovery {
        return;
    }
    let (dir, _) = files::split(current);
    let target = rotated
        .iter()
        .find(|p| files::file_name(p) == head.previous_file);
    match target {
        None => {
            let older_exists = match files::rotated_sort_key(cur_name, &head.previous_file) {
                Some(k) => rotated_keys.iter().any(|r| *r < k),
                None => !rotated_keys.is_empty(),
            };
            if older_exists {
                rep.violations.push(Violation {
                    kind: ViolationKind::MissingSegment,
                    seq: Some(1),
                    line: head.line,
                    message: format!(
                        "previous segment {} is missing from {}",
                        head.previous_file,
                        dir.display()
                    ),
                });
            }
        }
        Some(p) if checked => {
            if let (Some(s), Some(h)) = (head.previous_last_seq, &head.previous_last_hmac) {
                let actual = std::fs::File::open(p)
                    .and_then(|mut f| files::read_last_line(&mut f))
                    .ok()
                    .and_then(|(l, _)| l)
                    .and_then(|l| crate::writer::seq_and_hmac(&l));
                let matches = actual
                    .as_ref()
                    .is_some_and(|(as_, ah)| *as_ == s && ah == h);
                if !matches {
                    let found = match actual {
                        Some((as_, _)) => format!("ends at seq={as_}"),
                        None => "has no readable last record".to_owned(),
                    };
                    rep.violations.push(Violation {
                        kind: ViolationKind::SegmentMismatch,
                        seq: Some(1),
                        line: head.line,
                        message: format!(
                            "previous segment {} {found}, but this file's head records seq={s}",
                            head.previous_file
                        ),
                    });
                }
            }
        }
        Some(_) => {}
    }
}
