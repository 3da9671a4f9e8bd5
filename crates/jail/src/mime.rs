//! FILE_STAT `mime_type` (JAIL_FILES_EXEC.md 8.2): a fixed table, deterministic on every
//! host, keyed on the final name of a regular file.

/// The MIME type for a regular file named `name`, or `None`.
pub fn mime_for_name(name: &str) -> Option<&'static str> {
    // A name with no `.` after its first character has no extension.
    let first_len = name.chars().next()?.len_utf8();
    let dot = name.get(first_len..)?.rfind('.')? + first_len;
    let ext_raw = name.get(dot + 1..)?;
    let ends_with_ci = |suffix: &str| {
        name.len() > suffix.len()
            && name
                .get(name.len() - suffix.len()..)
                .is_some_and(|t| t.eq_ignore_ascii_case(suffix))
    };
    if [".tar.gz", ".tar.bz2", ".tar.xz"]
        .iter()
        .any(|c| ends_with_ci(c))
    {
        return Some("application/x-tar");
    }
    // Every listed extension is short ASCII: lower-case it on the stack.
    let mut buf = [0u8; 8];
    let bytes = ext_raw.as_bytes();
    if bytes.len() > buf.len() || !ext_raw.is_ascii() {
        return None;
    }
    let lower = &mut buf[..bytes.len()];
    lower.copy_from_slice(bytes);
    lower.make_ascii_lowercase();
    let ext = std::str::from_utf8(lower).ok()?;
    Some(match ext {
        "tgz" => "application/x-tar",
        "txt" => "text/plain",
        "csv" => "text/csv",
        "tsv" => "text/tab-separated-values",
        "md" | "markdown" => "text/markdown",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "js" | "mjs" => "text/javascript",
        "json" => "application/json",
        "xml" => "application/xml",
        "py" => "text/x-python",
        "sh" => "text/x-sh",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "bmp" => "image/bmp",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "ico" => "image/vnd.microsoft.icon",
        "tif" | "tiff" => "image/tiff",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "tar" => "application/x-tar",
        "7z" => "application/x-7z-compressed",
        "doc" => "application/msword",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls" => "application/vnd.ms-excel",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt" => "application/vnd.ms-powerpoint",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "mp3" => "audio/mpeg",
        "wav" => "audio/x-wav",
        "ogg" => "audio/ogg",
        "mp4" => "video/mp4",
        "mov" => "video/quicktime",
        "webm" => "video/webm",
        "avi" => "video/x-msvideo",
        "wasm" => "application/wasm",
        "rtf" => "application/rtf",
        "bin" => "application/octet-stream",
        _ => return None,
    })
}

#[cfg(test)]
#[path = "mime_tests.rs"]
mod tests;
