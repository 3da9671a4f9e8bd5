//! A strict RFC 8259 parser for audit lines (1.14 step 1).
//!
//! It keeps what the verifier needs and general-purpose parsers lose: member order, the
//! integer/float distinction of each number token (integers are kept as their token, so
//! arbitrarily large ones canonicalise exactly), and duplicate keys (rejected). Strings without
//! escapes are borrowed from the input.

use std::borrow::Cow;

use crate::canon::cmp_keys;
use crate::canon::write_float;
use crate::canon::write_str;

/// Nesting deeper than this is refused (a hostile line must not overflow the stack).
pub const MAX_DEPTH: usize = 128;

/// A parsed JSON value borrowing from the line.
#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer token (no fraction, no exponent), exactly as written.
    Int(&'a str),
    /// A float token (has a fraction or an exponent), as its finite value.
    Float(f64),
    /// A string, unescaped.
    Str(Cow<'a, str>),
    /// An array.
    Array(Vec<Node<'a>>),
    /// An object, members in file order, keys unique.
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

/// Why a line is not strict JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {offset}")]
pub struct ParseError {
    /// Byte offset in the line.
    pub offset: usize,
    /// What was wrong.
    pub what: &'static str,
}

impl<'a> Node<'a> {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Object(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string value, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value of an integer token within the signed 64-bit range.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Node::Int(t) => t.parse().ok(),
            _ => None,
        }
    }

    /// The numeric value of an integer or float token.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Node::Int(t) => t.parse().ok(),
            Node::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The boolean value, if this is `true` or `false`.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Node::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

/// Parses one line (which may end in CR) as a single JSON value.
pub fn parse(line: &[u8]) -> Result<Node<'_>, ParseError> {
    let text = std::str::from_utf8(line).map_err(|e| ParseError {
        offset: e.valid_up_to(),
        what: "invalid UTF-8",
    })?;
    let mut p = Parser {
        s: text,
        b: text.as_bytes(),
        i: 0,
        // Without any control byte in the line, strings can be scanned with memchr for their
        // end or first escape (a control byte is never valid inside a string).
        no_ctrl: line.iter().fold(true, |ok, &c| ok & (c >= 0x20)),
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i != p.b.len() {
        return Err(p.err("trailing characters"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    no_ctrl: bool,
}

impl<'a> Parser<'a> {
    fn err(&self, what: &'static str) -> ParseError {
        ParseError {
            offset: self.i,
            what,
        }
    }

    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            if c == b' ' || c == b'\t' || c == b'\n' || c == b'\r' {
                self.i += 1;
            } else {
                break;
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node<'a>, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        match self.b.get(self.i) {
            None => Err(self.err("unexpected end of line")),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Node::Str(self.string()?)),
            Some(b't') => self.literal(b"true", Node::Bool(true)),
            Some(b'f') => self.literal(b"false", Node::Bool(false)),
            Some(b'n') => self.literal(b"null", Node::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("unexpected character")),
        }
    }

    fn literal(&mut self, word: &[u8], node: Node<'a>) -> Result<Node<'a>, ParseError> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(node)
        } else {
            Err(self.err("invalid literal"))
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<Node<'a>, ParseError> {
        let start = self.i;
        if self.b[self.i] == b'-' {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err("invalid number")),
        }
        let mut float = false;
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(self.err("invalid number"));
            }
            float = true;
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(self.err("invalid number"));
            }
            float = true;
        }
        let tok = &self.s[start..self.i];
        if float {
            match tok.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(Node::Float(f)),
                _ => Err(ParseError {
                    offset: start,
                    what: "number out of range",
                }),
            }
        } else {
            Ok(Node::Int(tok))
        }
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let h = self
            .b
            .get(self.i..self.i + 4)
            .ok_or_else(|| self.err("invalid \\u escape"))?;
        let mut v = 0u32;
        for &c in h {
            let d = (c as char)
                .to_digit(16)
                .ok_or_else(|| self.err("invalid \\u escape"))?;
            v = v * 16 + d;
        }
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<Cow<'a, str>, ParseError> {
        self.i += 1; // opening quote
        let start = self.i;
        if self.no_ctrl {
            match memchr::memchr2(b'"', b'\\', &self.b[self.i..]) {
                None => {
                    self.i = self.b.len();
                    return Err(self.err("unterminated string"));
                }
                Some(off) => {
                    self.i += off;
                    if self.b[self.i] == b'"' {
                        let s = &self.s[start..self.i];
                        self.i += 1;
                        return Ok(Cow::Borrowed(s));
                    }
                }
            }
        }
        // Fast scan: no escapes.
        loop {
            match self.b.get(self.i) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    let s = &self.s[start..self.i];
                    self.i += 1;
                    return Ok(Cow::Borrowed(s));
                }
                Some(b'\\') => break,
                Some(&c) if c < 0x20 => return Err(self.err("control character in string")),
                Some(_) => self.i += 1,
            }
        }
        let mut out = String::with_capacity(self.i - start + 16);
        out.push_str(&self.s[start..self.i]);
        loop {
            match self.b.get(self.i) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(Cow::Owned(out));
                }
                Some(b'\\') => {
                    self.i += 1;
                    let c = self
                        .b
                        .get(self.i)
                        .copied()
                        .ok_or_else(|| self.err("unterminated string"))?;
                    self.i += 1;
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&hi) {
                                if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                                    return Err(self.err("lone surrogate"));
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err("lone surrogate"));
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&hi) {
                                return Err(self.err("lone surrogate"));
                            } else {
                                hi
                            };
                            out.push(char::from_u32(cp).ok_or_else(|| self.err("bad escape"))?);
                        }
                        _ => return Err(self.err("invalid escape")),
                    }
                }
                Some(&c) if c < 0x20 => return Err(self.err("control character in string")),
                Some(_) => {
                    // Copy a run of plain characters (UTF-8 boundaries are respected because
                    // the run stops only at ASCII bytes).
                    let run = self.i;
                    while let Some(&c) = self.b.get(self.i) {
                        if c == b'"' || c == b'\\' || c < 0x20 {
                            break;
                        }
                        self.i += 1;
                    }
                    out.push_str(&self.s[run..self.i]);
                }
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Node<'a>, ParseError> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(Node::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth + 1)?);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Node::Array(items));
                }
                _ => return Err(self.err("expected ',' or ']'")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Node<'a>, ParseError> {
        let open = self.i;
        self.i += 1;
        let mut members: Vec<(Cow<'a, str>, Node<'a>)> = Vec::with_capacity(12);
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Node::Object(members));
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return Err(self.err("expected a string key"));
            }
            let k = self.string()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return Err(self.err("expected ':'"));
            }
            self.i += 1;
            self.ws();
            let v = self.value(depth + 1)?;
            members.push((k, v));
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    if has_duplicate(&members) {
                        return Err(ParseError {
                            offset: open,
                            what: "duplicate key in object",
                        });
                    }
                    return Ok(Node::Object(members));
                }
                _ => return Err(self.err("expected ',' or '}'")),
            }
        }
    }
}

fn has_duplicate(members: &[(Cow<'_, str>, Node<'_>)]) -> bool {
    if members.len() <= 16 {
        for (i, (a, _)) in members.iter().enumerate() {
            let a = a.as_bytes();
            if members[i + 1..].iter().any(|(b, _)| {
                let b = b.as_bytes();
                a.len() == b.len() && a.first() == b.first() && a == b
            }) {
                return true;
            }
        }
        return false;
    }
    let mut keys: Vec<&str> = members.iter().map(|(k, _)| k.as_ref()).collect();
    keys.sort_unstable();
    keys.windows(2).any(|w| w[0] == w[1])
}

static EMPTY_MEMBER: (Cow<'static, str>, Node<'static>) = (Cow::Borrowed(""), Node::Null);

/// A string without `"`, `\\` or control characters (every string the parser borrowed) is
/// copied as is; anything else is escaped by the rules of 1.9.
fn write_jstr(out: &mut Vec<u8>, s: &str) {
    match s {
        b if !b.bytes().any(|c| c == b'"' || c == b'\\' || c < 0x20) => {
            out.reserve(b.len() + 2);
            out.push(b'"');
            out.extend_from_slice(b.as_bytes());
            out.push(b'"');
        }
        other => write_str(out, other),
    }
}

/// Appends the canonical form (1.9) of `node`. At the top level, a member named `skip` is left
/// out (the verifier passes `Some("hmac")`).
pub fn write_canonical_node(out: &mut Vec<u8>, node: &Node<'_>, skip: Option<&str>) {
    match node {
        Node::Null => out.extend_from_slice(b"null"),
        Node::Bool(true) => out.extend_from_slice(b"true"),
        Node::Bool(false) => out.extend_from_slice(b"false"),
        Node::Int(t) => {
            // A valid integer token is already minimal; only "-0" has a shorter form.
            if *t == "-0" {
                out.push(b'0');
            } else {
                out.extend_from_slice(t.as_bytes());
            }
        }
        // Parsed floats are finite by construction.
        Node::Float(f) => {
            let _ = write_float(out, *f);
        }
        Node::Str(s) => write_jstr(out, s),
        Node::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical_node(out, item, None);
            }
            out.push(b']');
        }
        Node::Object(members) => {
            // Small objects (every record's) are ordered on the stack.
            let mut small: [&(Cow<'_, str>, Node<'_>); 24] = [&EMPTY_MEMBER; 24];
            let mut large: Vec<&(Cow<'_, str>, Node<'_>)> = Vec::new();
            let kept = members.iter().filter(|(k, _)| skip != Some(k.as_ref()));
            let order: &mut [&(Cow<'_, str>, Node<'_>)] = if members.len() <= small.len() {
                let mut n = 0;
                for m in kept {
                    small[n] = m;
                    n += 1;
                }
                &mut small[..n]
            } else {
                large.extend(kept);
                &mut large
            };
            order.sort_unstable_by(|a, b| cmp_keys(&a.0, &b.0));
            out.push(b'{');
            for (i, (k, v)) in order.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_jstr(out, k);
                out.push(b':');
                write_canonical_node(out, v, None);
            }
            out.push(b'}');
        }
    }
}

/// Appends `node` pretty-printed: 2-space indent, members in file order, non-ASCII raw
/// (the layout of `audit show`).
pub fn write_pretty(out: &mut Vec<u8>, node: &Node<'_>, indent: usize) {
    match node {
        Node::Array(items) if !items.is_empty() => {
            out.extend_from_slice(b"[\n");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b",\n");
                }
                out.extend(std::iter::repeat_n(b' ', indent + 2));
                write_pretty(out, item, indent + 2);
            }
            out.push(b'\n');
            out.extend(std::iter::repeat_n(b' ', indent));
            out.push(b']');
        }
        Node::Object(members) if !members.is_empty() => {
            out.extend_from_slice(b"{\n");
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b",\n");
                }
                out.extend(std::iter::repeat_n(b' ', indent + 2));
                write_str(out, k);
                out.extend_from_slice(b": ");
                write_pretty(out, v, indent + 2);
            }
            out.push(b'\n');
            out.extend(std::iter::repeat_n(b' ', indent));
            out.push(b'}');
        }
        other => write_canonical_node(out, other, None),
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
