//! Step 1 of the jail: string validation and lexical normalisation (JAIL_FILES_EXEC.md 4.2,
//! 4.3). Pure functions, parametrised by the path rules of an OS, so that the Windows rules
//! are tested on every host. No filesystem access happens here.

use crate::error::JailError;

/// Which path rules apply (1.1: `wsl2` uses the Linux rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathOs {
    /// Linux and WSL2: `/`, NUL is the only invalid character, 4096 bytes.
    Linux,
    /// macOS: as Linux but 1024 bytes.
    Darwin,
    /// Windows: drive and UNC prefixes, reserved names, 32 767 UTF-16 units.
    Windows,
}

impl PathOs {
    /// The rules of the OS this binary was built for.
    pub fn host() -> PathOs {
        if cfg!(windows) {
            PathOs::Windows
        } else if cfg!(target_os = "macos") {
            PathOs::Darwin
        } else {
            PathOs::Linux
        }
    }

    fn sep(self) -> char {
        match self {
            PathOs::Windows => '\\',
            PathOs::Linux | PathOs::Darwin => '/',
        }
    }
}

/// Where an absolute path starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prefix {
    /// POSIX `/`.
    Posix,
    /// Windows `X:\` (upper- or lower-case letter as received).
    Drive(char),
    /// Windows `\\server\share\`.
    Unc {
        /// Server name.
        server: String,
        /// Share name.
        share: String,
    },
}

/// One component after normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component<'a> {
    /// A name, exactly as spelled (no case folding, no Unicode normalisation: J-NORM-1).
    Name(&'a str),
    /// `..`; only kept on POSIX (applied physically during the walk, J-LEX-4).
    ParentDir,
}

/// A wire path that passed 4.2: absolute, validated, normalised. Parse, don't validate:
/// the resolver only ever sees this type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JailPath {
    wire: String,
    prefix: Prefix,
    /// The names, concatenated; `spans` index into it (`None` = `..`). One buffer instead
    /// of a string per component keeps the hot path cheap.
    names: String,
    spans: Vec<Option<(usize, usize)>>,
}

impl JailPath {
    /// Validates and normalises `wire` under the rules of `os`, expanding a leading `~`
    /// component to `home` (when given). Returns the first error in 4.2 order.
    pub fn parse(wire: &str, os: PathOs, home: Option<&str>) -> Result<JailPath, JailError> {
        parse_inner(wire, wire, os, home)
    }

    /// The path exactly as received.
    pub fn wire(&self) -> &str {
        &self.wire
    }

    /// Where the path starts.
    pub fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    /// The normalised components below the prefix.
    pub fn components(&self) -> Vec<Component<'_>> {
        self.spans
            .iter()
            .map(|sp| match sp {
                Some((a, b)) => Component::Name(self.names.get(*a..*b).unwrap_or_default()),
                None => Component::ParentDir,
            })
            .collect()
    }

    /// The normalised path as a string in the native separator of `os`.
    pub fn normalized(&self, os: PathOs) -> String {
        render(&self.prefix, &self.components(), os)
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Absolute(Prefix),
    Relative,
}

fn render(prefix: &Prefix, comps: &[Component<'_>], os: PathOs) -> String {
    let sep = os.sep();
    let mut s = match prefix {
        Prefix::Posix => String::from("/"),
        Prefix::Drive(c) => format!("{c}:\\"),
        Prefix::Unc { server, share } => format!("\\\\{server}\\{share}\\"),
    };
    for (i, c) in comps.iter().enumerate() {
        if i > 0 {
            s.push(sep);
        }
        match c {
            Component::Name(n) => s.push_str(n),
            Component::ParentDir => s.push_str(".."),
        }
    }
    s
}

fn parse_inner(
    wire: &str,
    text: &str,
    os: PathOs,
    home: Option<&str>,
) -> Result<JailPath, JailError> {
    // J-STR-1.
    if text.contains('\0') {
        return Err(JailError::invalid(wire, "NUL character"));
    }
    // J-STR-2: classify.
    let (kind, rest): (Kind, std::borrow::Cow<'_, str>) = match os {
        PathOs::Windows => {
            let (k, r) = classify_windows(wire, &text.replace('/', "\\"))?;
            (k, std::borrow::Cow::Owned(r))
        }
        PathOs::Linux | PathOs::Darwin => match text.strip_prefix('/') {
            Some(r) => (Kind::Absolute(Prefix::Posix), std::borrow::Cow::Borrowed(r)),
            None => (Kind::Relative, std::borrow::Cow::Borrowed(text)),
        },
    };
    // J-LEX-1: split, drop empty and `.` components.
    let sep = os.sep();
    let mut raw: Vec<&str> = rest
        .split(sep)
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    // J-LEX-2: `~` as the first component of a relative path.
    if kind == Kind::Relative
        && raw.first() == Some(&"~")
        && let Some(h) = home.filter(|h| !h.is_empty())
    {
        raw.remove(0);
        let mut expanded = h.to_owned();
        for c in raw {
            expanded.push(sep);
            expanded.push_str(c);
        }
        return parse_inner(wire, &expanded, os, None);
    }
    // J-STR-3: lengths.
    let prefix_for_len = match &kind {
        Kind::Absolute(p) => p.clone(),
        Kind::Relative => Prefix::Posix,
    };
    let comps_for_len: Vec<Component<'_>> = raw
        .iter()
        .map(|c| {
            if *c == ".." {
                Component::ParentDir
            } else {
                Component::Name(c)
            }
        })
        .collect();
    // POSIX: one byte for `/`, the names, and a separator between names.
    let posix_len = 1 + raw.iter().map(|c| c.len()).sum::<usize>() + raw.len().saturating_sub(1);
    let (total, limit) = match os {
        PathOs::Linux => (posix_len, 4096),
        PathOs::Darwin => (posix_len, 1024),
        PathOs::Windows => (
            render(&prefix_for_len, &comps_for_len, os)
                .encode_utf16()
                .count(),
            32_767,
        ),
    };
    if total > limit {
        return Err(JailError::invalid(wire, "path too long"));
    }
    for c in &raw {
        let n = match os {
            PathOs::Windows => c.encode_utf16().count(),
            PathOs::Linux | PathOs::Darwin => c.len(),
        };
        if n > 255 {
            return Err(JailError::invalid(wire, "name too long"));
        }
    }
    if os == PathOs::Windows {
        // J-STR-4 before J-STR-5..7, each over every component.
        if raw.iter().any(|c| is_reserved_windows_name(c)) {
            return Err(JailError::ReservedName {
                path: wire.to_owned(),
            });
        }
        if raw.iter().any(|c| c.contains(':')) {
            return Err(JailError::invalid(wire, "alternate data stream syntax"));
        }
        if raw.iter().any(|c| c.chars().any(is_invalid_windows_char)) {
            return Err(JailError::invalid(wire, "invalid character"));
        }
        if raw
            .iter()
            .any(|c| *c != ".." && (c.ends_with('.') || c.ends_with(' ')))
        {
            return Err(JailError::invalid(wire, "name ends in a dot or space"));
        }
    }
    // J-LEX-3.
    let prefix = match kind {
        Kind::Absolute(p) => p,
        Kind::Relative => return Err(JailError::outside(wire)),
    };
    // J-LEX-4.
    let components: Vec<Component<'_>> = if os == PathOs::Windows {
        let mut out: Vec<Component<'_>> = Vec::new();
        for c in raw {
            if c == ".." {
                out.pop();
            } else {
                out.push(Component::Name(c));
            }
        }
        out
    } else {
        comps_for_len
    };
    let mut names = String::with_capacity(rest.len());
    let mut spans = Vec::with_capacity(components.len());
    for c in &components {
        match c {
            Component::Name(n) => {
                let start = names.len();
                names.push_str(n);
                spans.push(Some((start, names.len())));
            }
            Component::ParentDir => spans.push(None),
        }
    }
    Ok(JailPath {
        wire: wire.to_owned(),
        prefix,
        names,
        spans,
    })
}

/// J-STR-2 for Windows, on a string whose `/` are already `\`. Returns the kind and the
/// text after the prefix. Drive-relative and rooted paths are `Relative` (rejected by
/// J-LEX-3 after the character checks ran on their components).
fn classify_windows(wire: &str, s: &str) -> Result<(Kind, String), JailError> {
    if s.starts_with("\\\\?\\") || s.starts_with("\\\\.\\") || s.starts_with("\\??\\") {
        return Err(JailError::invalid(wire, "device or verbatim path"));
    }
    if let Some(unc) = s.strip_prefix("\\\\") {
        let mut parts = unc.splitn(3, '\\');
        let server = parts.next().unwrap_or("");
        let share = parts.next().unwrap_or("");
        let rest = parts.next().unwrap_or("");
        if server.is_empty() || share.is_empty() {
            return Err(JailError::invalid(wire, "incomplete UNC path"));
        }
        // Server and share go through the same character checks as components.
        let check = format!("{server}\\{share}");
        if check
            .chars()
            .any(|c| c == ':' || is_invalid_windows_char(c))
        {
            return Err(JailError::invalid(wire, "invalid character"));
        }
        return Ok((
            Kind::Absolute(Prefix::Unc {
                server: server.to_owned(),
                share: share.to_owned(),
            }),
            rest.to_owned(),
        ));
    }
    let b = s.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        let letter = char::from(b[0]);
        let after = &s[2..];
        return match after.strip_prefix('\\') {
            Some(rest) => Ok((Kind::Absolute(Prefix::Drive(letter)), rest.to_owned())),
            // Drive-relative `C:` / `C:foo`: validate the rest, then J-LEX-3.
            None => Ok((Kind::Relative, after.to_owned())),
        };
    }
    if let Some(rest) = s.strip_prefix('\\') {
        // Rooted without a drive.
        return Ok((Kind::Relative, rest.to_owned()));
    }
    Ok((Kind::Relative, s.to_owned()))
}

/// J-STR-4: is `component` a Windows reserved device name?
pub fn is_reserved_windows_name(component: &str) -> bool {
    // The stem ends at the first `.` (or at stream syntax: `CON:x` is reserved, 4.2).
    let stem = component.split(['.', ':']).next().unwrap_or("");
    let stem = stem.trim_end_matches(' ').to_ascii_uppercase();
    const FIXED: [&str; 6] = ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];
    if FIXED.contains(&stem.as_str()) {
        return true;
    }
    for base in ["COM", "LPT"] {
        if let Some(tail) = stem.strip_prefix(base) {
            let mut it = tail.chars();
            if let (Some(d), None) = (it.next(), it.next())
                && (d.is_ascii_digit() || matches!(d, '¹' | '²' | '³'))
            {
                return true;
            }
        }
    }
    false
}

/// J-STR-6: characters Windows forbids in a name.
pub fn is_invalid_windows_char(c: char) -> bool {
    matches!(c, '<' | '>' | '"' | '|' | '?' | '*') || ('\u{1}'..='\u{1f}').contains(&c)
}

#[cfg(test)]
#[path = "lexical_tests.rs"]
mod tests;
