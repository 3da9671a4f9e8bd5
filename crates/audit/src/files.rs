//! Where the log lives (1.2), rotated-file names and their order (1.13), the lock file (1.20),
//! and reading the first/last line of a file however long it is (1.12 [H-5]).

use std::fs::File;
use std::io::Read;
use std::io::Seek;
use std::io::SeekFrom;
use std::path::Path;
use std::path::PathBuf;

/// The default path of the current log file on this OS (1.2), from the process environment.
/// Empty variables count as unset.
pub fn default_log_path() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = env("HOME").or_else(|| env("USERPROFILE"));
    if cfg!(target_os = "macos") {
        return home.map(|h| h.join("Library/Logs/autogpt-local-executor/audit.log"));
    }
    if cfg!(windows) {
        let base = env("LOCALAPPDATA").or_else(|| home.map(|h| h.join("AppData").join("Local")));
        return base.map(|b| {
            b.join("autogpt-local-executor")
                .join("logs")
                .join("audit.log")
        });
    }
    let base = env("XDG_STATE_HOME").or_else(|| home.map(|h| h.join(".local").join("state")));
    base.map(|b| b.join("autogpt-local-executor").join("audit.log"))
}

/// The sort key of a rotated file name: (timestamp part, counter; no counter sorts as 0).
pub fn rotated_sort_key(current_name: &str, candidate: &str) -> Option<(String, u64)> {
    let rest = candidate.strip_prefix(current_name)?.strip_prefix('.')?;
    let b = rest.as_bytes();
    if b.len() < 15 {
        return None;
    }
    let stamp_ok = b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'-'
        && b[9..15].iter().all(u8::is_ascii_digit);
    if !stamp_ok {
        return None;
    }
    let stamp = rest[..15].to_owned();
    let tail = &rest[15..];
    if tail.is_empty() {
        return Some((stamp, 0));
    }
    let counter = tail.strip_prefix('-')?;
    if counter.is_empty()
        || counter.starts_with('0')
        || !counter.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    Some((stamp, counter.parse().ok()?))
}

/// The rotated files of `current` (same directory), oldest first (1.13 order).
pub fn list_rotated(current: &Path) -> std::io::Result<Vec<PathBuf>> {
    let (dir, name) = split(current);
    let mut found: Vec<((String, u64), PathBuf)> = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let fname = entry.file_name();
        let Some(fname) = fname.to_str() else {
            continue;
        };
        if let Some(key) = rotated_sort_key(&name, fname)
            && entry.file_type().map(|t| t.is_file()).unwrap_or(false)
        {
            found.push((key, entry.path()));
        }
    }
    found.sort();
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

/// Directory and file name of the current log.
pub fn split(current: &Path) -> (PathBuf, String) {
    let dir = current
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let name = current
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "audit.log".to_owned());
    (dir, name)
}

/// The bare file name of `p` for display.
pub fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// The lock file of `current`: `<dir>/.<name>.lock` (1.20).
pub fn lock_path(current: &Path) -> PathBuf {
    let (dir, name) = split(current);
    dir.join(format!(".{name}.lock"))
}

/// The first free rotation target for `current` at local time now (1.13 step 1).
pub fn rotation_target(current: &Path) -> PathBuf {
    let (dir, name) = split(current);
    let stamp = local_stamp();
    let base = dir.join(format!("{name}.{stamp}"));
    if !base.exists() {
        return base;
    }
    let mut n = 1u64;
    loop {
        let p = dir.join(format!("{name}.{stamp}-{n}"));
        if !p.exists() {
            return p;
        }
        n += 1;
    }
}

/// Local time as `YYYYMMDD-HHMMSS`.
pub fn local_stamp() -> String {
    jiff::Zoned::now().strftime("%Y%m%d-%H%M%S").to_string()
}

/// The wall clock as Unix seconds with sub-second precision.
pub fn now_ts() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The bytes of the last non-blank line of the file (without its LF), however long, plus
/// whether the file ends with LF. `None` when the file holds no non-blank line.
pub fn read_last_line(file: &mut File) -> std::io::Result<(Option<Vec<u8>>, bool)> {
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok((None, false));
    }
    const CHUNK: u64 = 64 * 1024;
    let mut tail: Vec<u8> = Vec::new(); // bytes [pos, len)
    let mut pos = len;
    loop {
        // Is there a complete non-blank line in `tail` that starts after an LF (or at 0)?
        let trimmed_end = tail
            .iter()
            .rposition(|&c| !is_blank_byte(c) && c != b'\n')
            .map(|i| i + 1);
        if let Some(end) = trimmed_end {
            // The line containing tail[end-1].
            let line_end = tail[end..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(tail.len(), |i| end + i);
            if let Some(start) = tail[..end].iter().rposition(|&c| c == b'\n') {
                let ends_lf = tail.last() == Some(&b'\n');
                return Ok((Some(tail[start + 1..line_end].to_vec()), ends_lf));
            }
            if pos == 0 {
                let ends_lf = tail.last() == Some(&b'\n');
                return Ok((Some(tail[..line_end].to_vec()), ends_lf));
            }
        } else if pos == 0 {
            return Ok((None, tail.last() == Some(&b'\n')));
        }
        let step = CHUNK.min(pos);
        pos -= step;
        let mut chunk = vec![0u8; step as usize];
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
    }
}

/// The first line of the file (up to `limit` bytes), without its LF.
pub fn read_first_line(file: &mut File, limit: usize) -> std::io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(0))?;
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    while out.len() < limit {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        if let Some(i) = buf[..n].iter().position(|&c| c == b'\n') {
            out.extend_from_slice(&buf[..i]);
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
    Ok(out)
}

/// Space, tab or CR: what a "blank" line may consist of (1.14 step 3).
pub fn is_blank_byte(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b'\r'
}

/// True when the line is empty or only space, tab and CR.
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|&c| is_blank_byte(c))
}

/// Creates missing parent directories with mode 0700 on POSIX ([H-1]).
pub fn create_private_dirs(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

/// Opens `path` for appending, creating it with mode 0600, and tightens group/other bits of an
/// existing file ([H-1]).
pub fn open_append_private(path: &Path) -> std::io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.append(true).read(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let f = o.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = f.metadata()?;
        let mode = meta.permissions().mode();
        // Only regular files: never chmod a device or anything else a path may point at.
        if meta.is_file() && mode & 0o077 != 0 {
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(f)
}

/// fsyncs a directory so that a rename or create in it is durable (best-effort; POSIX only).
pub fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
