//! Canonical JSON (AUDIT_AUTH_CLI.md 1.9) and the on-disk line form (1.4).
//!
//! Scalars are written identically in both forms; they differ only in separators and member
//! order (canonical: sorted by UTF-16 code units, no whitespace; line: insertion order,
//! `", "` and `": "`).

use std::cmp::Ordering;
use std::fmt::Write as _;

use crate::value::Map;
use crate::value::Value;

/// A float that 1.9 cannot represent (NaN or an infinity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("NaN and infinite numbers cannot be written to the audit log")]
pub struct NonFiniteFloat;

/// Appends the 1.9 float layout of `x` (Python `repr` compatible, not RFC 8785).
pub fn write_float(out: &mut Vec<u8>, x: f64) -> Result<(), NonFiniteFloat> {
    if !x.is_finite() {
        return Err(NonFiniteFloat);
    }
    if x == 0.0 {
        out.extend_from_slice(if x.is_sign_negative() {
            b"-0.0"
        } else {
            b"0.0"
        });
        return Ok(());
    }
    // Schubfach (zmij) yields the shortest digit string that round-trips and, among those,
    // the one closest to the exact value: exactly the digits 1.9 asks for. Only its layout
    // differs, so take the digits and the decimal exponent from its output.
    let mut zbuf = zmij::Buffer::new();
    let text = zbuf.format_finite(x.abs());
    let (mant, exp10) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let (int_part, frac_part) = mant.split_once('.').unwrap_or((mant, ""));
    let mut digits = [0u8; 40];
    let mut n = 0usize;
    let mut point = int_part.len() as i32;
    for b in int_part.bytes().chain(frac_part.bytes()) {
        if n == 0 && b == b'0' {
            point -= 1; // a leading zero moves the point left
            continue;
        }
        if n < digits.len() {
            digits[n] = b;
            n += 1;
        }
    }
    while n > 1 && digits[n - 1] == b'0' {
        n -= 1;
    }
    let digits = &digits[..n];
    let exp = point + exp10 - 1;
    // 1.9's e: |x| = 0.d1d2..dn * 10^e.
    let e = exp + 1;
    if x.is_sign_negative() {
        out.push(b'-');
    }
    let n_i = n as i32;
    if -4 < e && e <= 16 {
        if e <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-e) as usize));
            out.extend_from_slice(digits);
        } else if e < n_i {
            out.extend_from_slice(&digits[..e as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[e as usize..]);
        } else {
            out.extend_from_slice(digits);
            out.extend(std::iter::repeat_n(b'0', (e - n_i) as usize));
            out.extend_from_slice(b".0");
        }
    } else {
        out.push(digits[0]);
        if n > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        let shown = e - 1;
        out.push(if shown < 0 { b'-' } else { b'+' });
        let abs = shown.unsigned_abs();
        if abs < 10 {
            out.push(b'0');
        }
        let _ = write!(tmp_writer(out), "{abs}");
    }
    Ok(())
}

/// `fmt::Write` adapter over a byte buffer (used only for ASCII numbers).
fn tmp_writer(out: &mut Vec<u8>) -> impl std::fmt::Write + '_ {
    struct W<'a>(&'a mut Vec<u8>);
    impl std::fmt::Write for W<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.extend_from_slice(s.as_bytes());
            Ok(())
        }
    }
    W(out)
}

/// The float layout of 1.9 as a `String`.
pub fn float_to_string(x: f64) -> Result<String, NonFiniteFloat> {
    let mut v = Vec::with_capacity(24);
    write_float(&mut v, x)?;
    Ok(String::from_utf8_lossy(&v).into_owned())
}

/// Appends `s` as a quoted string with the escapes of 1.9 rule 4.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0c => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xf) as usize]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Orders two keys by their UTF-16 code-unit sequences (1.9 rule 6).
pub fn cmp_keys(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let i = x.iter().zip(y).position(|(p, q)| p != q);
    match i {
        // One is a prefix of the other: shorter first, as in both orders.
        None => x.len().cmp(&y.len()),
        // UTF-8 byte order is code point order, which equals UTF-16 order except between
        // U+E000..U+FFFF (lead byte 0xEE/0xEF) and supplementary characters (0xF0..).
        Some(i) if x[i] < 0xEE && y[i] < 0xEE => x[i].cmp(&y[i]),
        Some(_) => a.encode_utf16().cmp(b.encode_utf16()),
    }
}

/// Appends the canonical form of `v`.
pub fn write_canonical(out: &mut Vec<u8>, v: &Value) -> Result<(), NonFiniteFloat> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(i) => {
            let _ = write!(tmp_writer(out), "{i}");
        }
        Value::UInt(u) => {
            let _ = write!(tmp_writer(out), "{u}");
        }
        Value::Float(f) => write_float(out, *f)?,
        Value::Str(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(out, item)?;
            }
            out.push(b']');
        }
        Value::Object(map) => write_canonical_map(out, map)?,
    }
    Ok(())
}

/// Appends the canonical form of an object.
pub fn write_canonical_map(out: &mut Vec<u8>, map: &Map) -> Result<(), NonFiniteFloat> {
    let mut members: Vec<(&str, &Value)> = map.iter().collect();
    members.sort_by(|a, b| cmp_keys(a.0, b.0));
    out.push(b'{');
    for (i, (k, item)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        write_canonical(out, item)?;
    }
    out.push(b'}');
    Ok(())
}

/// Appends the on-disk form of `v` (1.4): insertion order, `", "` and `": "` separators.
pub fn write_line_form(out: &mut Vec<u8>, v: &Value) -> Result<(), NonFiniteFloat> {
    match v {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                write_line_form(out, item)?;
            }
            out.push(b']');
        }
        Value::Object(map) => write_line_form_map(out, map)?,
        scalar => write_canonical(out, scalar)?,
    }
    Ok(())
}

/// Appends the on-disk form of an object (insertion order).
pub fn write_line_form_map(out: &mut Vec<u8>, map: &Map) -> Result<(), NonFiniteFloat> {
    out.push(b'{');
    for (i, (k, item)) in map.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        write_str(out, k);
        out.extend_from_slice(b": ");
        write_line_form(out, item)?;
    }
    out.push(b'}');
    Ok(())
}

/// The canonical form of `v` as bytes.
pub fn to_canonical(v: &Value) -> Result<Vec<u8>, NonFiniteFloat> {
    let mut out = Vec::with_capacity(256);
    write_canonical(&mut out, v)?;
    Ok(out)
}

#[cfg(test)]
#[path = "canon_tests.rs"]
mod tests;
