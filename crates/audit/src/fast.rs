//! The verifier's fast path: canonical JSON straight from the line bytes, without building a
//! tree, for the lines every writer produces (no backslash escapes, no control bytes).
//!
//! It accepts a strict subset of what [`crate::parse`] accepts and produces byte-identical
//! canonical output for it (a property test checks both on random documents). Anything else —
//! an escape, a control byte, a duplicate key, deep nesting, a non-finite number, any syntax
//! error — returns `None`, and the caller takes the general path, which also produces the exact
//! error message.

use crate::canon::cmp_keys;
use crate::canon::write_float;
/// Deeper documents take the general path (which allows up to `parse::MAX_DEPTH`).
const MAX_DEPTH: usize = 64;

/// What a top-level value was, for the members the verifier reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Other,
    Str,
    Int,
    Null,
}

#[derive(Debug, Clone, Copy)]
struct Span {
    /// Key (without quotes) in the line.
    ks: usize,
    ke: usize,
    /// Canonical value bytes in the output buffer.
    vs: usize,
    ve: usize,
    /// Raw string contents or integer token in the line.
    rs: usize,
    re: usize,
    kind: Kind,
}

/// `prev_hmac` as found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FastPrev<'a> {
    /// Absent or `null`.
    Null,
    /// A string.
    Str(&'a str),
    /// Any other value.
    Other,
}

/// The top-level members the verifier needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Top<'a> {
    /// `seq` if it is an integer token.
    pub seq: Option<&'a str>,
    /// `prev_hmac`.
    pub prev: FastPrev<'a>,
    /// `hmac` if it is a string.
    pub hmac: Option<&'a str>,
    /// `op` if it is a string.
    pub op: Option<&'a str>,
}

/// Reusable buffers of the fast path (one per verifying thread).
#[derive(Debug, Default)]
pub(crate) struct Fast {
    tmp: Vec<u8>,
    spans: Vec<Span>,
    /// Key sequences seen before (keys joined by NUL, which no key here can contain) and the
    /// member order that sorts them: records repeat a handful of shapes.
    shapes: Vec<(Vec<u8>, Vec<u32>)>,
    sig: Vec<u8>,
    order: Vec<u32>,
}

/// At most this many shapes are remembered.
const MAX_SHAPES: usize = 32;

struct P<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl P<'_> {
    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// A string without escapes: returns the contents' range.
    #[inline]
    fn string(&mut self) -> Option<(usize, usize)> {
        self.i += 1;
        let start = self.i;
        let off = memchr::memchr(b'"', &self.b[start..])?;
        self.i = start + off + 1;
        Some((start, start + off))
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.b.get(self.i) {
            self.i += 1;
        }
        self.i - start
    }
}

impl Fast {
    /// Writes the canonical form of `line` without its top-level `hmac` member to `out`
    /// (cleared first) and returns the members the verifier reads; `None` means "use the
    /// general path".
    pub(crate) fn line<'a>(&mut self, line: &'a [u8], out: &mut Vec<u8>) -> Option<Top<'a>> {
        // Escapes and control bytes (CR, TAB included) are left to the general path.
        if memchr::memchr(b'\\', line).is_some()
            || !line.iter().fold(true, |ok, &c| ok & (c >= 0x20))
        {
            return None;
        }
        let s = std::str::from_utf8(line).ok()?;
        let mut p = P { s, b: line, i: 0 };
        out.clear();
        self.spans.clear();
        p.ws();
        if p.peek() != Some(b'{') {
            return None;
        }
        let top = self.object(&mut p, out, 1, true)?;
        p.ws();
        if p.i != line.len() {
            return None;
        }
        top
    }

    fn value(
        &mut self,
        p: &mut P<'_>,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Option<(Kind, usize, usize)> {
        match p.peek()? {
            b'{' => {
                self.object(p, out, depth + 1, false)?;
                Some((Kind::Other, 0, 0))
            }
            b'[' => {
                if depth + 1 > MAX_DEPTH {
                    return None;
                }
                p.i += 1;
                p.ws();
                out.push(b'[');
                if p.peek() == Some(b']') {
                    p.i += 1;
                    out.push(b']');
                    return Some((Kind::Other, 0, 0));
                }
                loop {
                    p.ws();
                    self.value(p, out, depth + 1)?;
                    p.ws();
                    match p.peek()? {
                        b',' => {
                            p.i += 1;
                            out.push(b',');
                        }
                        b']' => {
                            p.i += 1;
                            out.push(b']');
                            return Some((Kind::Other, 0, 0));
                        }
                        _ => return None,
                    }
                }
            }
            b'"' => {
                let (s, e) = p.string()?;
                out.push(b'"');
                out.extend_from_slice(&p.b[s..e]);
                out.push(b'"');
                Some((Kind::Str, s, e))
            }
            b't' => lit(p, out, b"true").map(|()| (Kind::Other, 0, 0)),
            b'f' => lit(p, out, b"false").map(|()| (Kind::Other, 0, 0)),
            b'n' => lit(p, out, b"null").map(|()| (Kind::Null, 0, 0)),
            b'-' | b'0'..=b'9' => {
                let start = p.i;
                if p.b[p.i] == b'-' {
                    p.i += 1;
                }
                match p.peek()? {
                    b'0' => p.i += 1,
                    b'1'..=b'9' => {
                        p.digits();
                    }
                    _ => return None,
                }
                let mut float = false;
                if p.peek() == Some(b'.') {
                    p.i += 1;
                    if p.digits() == 0 {
                        return None;
                    }
                    float = true;
                }
                if let Some(b'e' | b'E') = p.peek() {
                    p.i += 1;
                    if let Some(b'+' | b'-') = p.peek() {
                        p.i += 1;
                    }
                    if p.digits() == 0 {
                        return None;
                    }
                    float = true;
                }
                let tok = &p.s[start..p.i];
                if float {
                    let f: f64 = tok.parse().ok()?;
                    write_float(out, f).ok()?;
                    Some((Kind::Other, 0, 0))
                } else {
                    out.extend_from_slice(if tok == "-0" { b"0" } else { tok.as_bytes() });
                    Some((Kind::Int, start, p.i))
                }
            }
            _ => None,
        }
    }

    fn object<'a>(
        &mut self,
        p: &mut P<'a>,
        out: &mut Vec<u8>,
        depth: usize,
        top: bool,
    ) -> Option<Option<Top<'a>>> {
        if depth > MAX_DEPTH {
            return None;
        }
        p.i += 1;
        p.ws();
        if p.peek() == Some(b'}') {
            p.i += 1;
            out.extend_from_slice(b"{}");
            return Some(top.then_some(Top {
                seq: None,
                prev: FastPrev::Null,
                hmac: None,
                op: None,
            }));
        }
        let base_span = self.spans.len();
        let base_out = out.len();
        loop {
            p.ws();
            if p.peek() != Some(b'"') {
                return None;
            }
            let (ks, ke) = p.string()?;
            p.ws();
            if p.peek() != Some(b':') {
                return None;
            }
            p.i += 1;
            p.ws();
            let vs = out.len();
            let (kind, rs, re) = self.value(p, out, depth)?;
            self.spans.push(Span {
                ks,
                ke,
                vs,
                ve: out.len(),
                rs,
                re,
                kind,
            });
            p.ws();
            match p.peek()? {
                b',' => p.i += 1,
                b'}' => {
                    p.i += 1;
                    break;
                }
                _ => return None,
            }
        }
        let s = p.s;
        let key = |m: &Span| &s[m.ks..m.ke];
        let members = &self.spans[base_span..];
        self.sig.clear();
        for m in members {
            self.sig.extend_from_slice(key(m).as_bytes());
            self.sig.push(0);
        }
        self.order.clear();
        if let Some((_, perm)) = self.shapes.iter().find(|(sig, _)| *sig == self.sig) {
            self.order.extend_from_slice(perm);
        } else {
            self.order.extend(0..members.len() as u32);
            self.order.sort_unstable_by(|&a, &b| {
                cmp_keys(key(&members[a as usize]), key(&members[b as usize]))
            });
            if self
                .order
                .windows(2)
                .any(|w| key(&members[w[0] as usize]) == key(&members[w[1] as usize]))
            {
                return None;
            }
            if self.shapes.len() < MAX_SHAPES {
                self.shapes.push((self.sig.clone(), self.order.clone()));
            }
        }
        let mut facts = None;
        if top {
            let mut t = Top {
                seq: None,
                prev: FastPrev::Null,
                hmac: None,
                op: None,
            };
            for m in members.iter() {
                let raw = &s[m.rs..m.re];
                match (key(m), m.kind) {
                    ("seq", Kind::Int) => t.seq = Some(raw),
                    ("prev_hmac", Kind::Str) => t.prev = FastPrev::Str(raw),
                    ("prev_hmac", Kind::Null) => t.prev = FastPrev::Null,
                    ("prev_hmac", _) => t.prev = FastPrev::Other,
                    ("hmac", Kind::Str) => t.hmac = Some(raw),
                    ("op", Kind::Str) => t.op = Some(raw),
                    _ => {}
                }
            }
            facts = Some(t);
        }
        // Re-emit the members of this object in sorted order.
        self.tmp.clear();
        self.tmp.extend_from_slice(&out[base_out..]);
        out.truncate(base_out);
        out.push(b'{');
        let mut first = true;
        for &i in &self.order {
            let m = &self.spans[base_span + i as usize];
            let k = &p.b[m.ks..m.ke];
            if top && k == b"hmac" {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            out.push(b'"');
            out.extend_from_slice(k);
            out.extend_from_slice(b"\":");
            out.extend_from_slice(&self.tmp[m.vs - base_out..m.ve - base_out]);
        }
        out.push(b'}');
        self.spans.truncate(base_span);
        Some(facts)
    }
}

fn lit(p: &mut P<'_>, out: &mut Vec<u8>, word: &[u8]) -> Option<()> {
    if p.b[p.i..].starts_with(word) {
        p.i += word.len();
        out.extend_from_slice(word);
        Some(())
    } else {
        None
    }
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
