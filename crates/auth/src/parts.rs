//! A secret longer than one OS credential item can hold, split across several items
//! **[Rust extension]**. Windows Credential Manager keeps at most 2,560 bytes in a credential
//! blob, and keyring writes text as UTF-16, so an item holds at most 1,280 UTF-16 code units;
//! an OAuth access token can be longer. The spec (AUDIT_AUTH_CLI.md 3.8) names one item per
//! account; a longer secret keeps that item, which then holds a header instead of the secret,
//! and the secret itself goes to items `<account>#part1` … `<account>#partN`:
//!
//! ```text
//! <account>          "\0autogpt-shim-parts:v1:<N>:<SHA-256 of the secret, hex>"
//! <account>#part1    the first ≤ 1,280 UTF-16 code units, split on character boundaries
//! …
//! <account>#partN    the rest
//! ```
//!
//! The header starts with NUL, which no token contains, so a secret that fits one item is
//! never mistaken for a header. The digest makes parts from two different writes (an
//! interrupted save) an error instead of a wrong token.

use ring::digest;

/// What starts a header.
const HEADER: &str = "\u{0}autogpt-shim-parts:v1:";

/// At most this many parts: 16 × 1,280 code units is far beyond any token seen, and bounds
/// what a damaged header can make a reader look up.
pub(crate) const MAX_PARTS: usize = 16;

/// The item that holds part `i` (1-based) of `account`.
pub(crate) fn part_account(account: &str, i: usize) -> String {
    format!("{account}#part{i}")
}

/// The length of `s` in UTF-16 code units.
pub(crate) fn units(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// `secret` split into pieces of at most `max_units` UTF-16 code units each, on character
/// boundaries (a surrogate pair is never cut). Empty for an empty secret.
pub(crate) fn split(secret: &str, max_units: usize) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut used = 0;
    for (at, c) in secret.char_indices() {
        if used + c.len_utf16() > max_units {
            parts.push(&secret[start..at]);
            start = at;
            used = 0;
        }
        used += c.len_utf16();
    }
    if start < secret.len() {
        parts.push(&secret[start..]);
    }
    parts
}

/// The header for `secret` stored in `n` parts.
pub(crate) fn header(n: usize, secret: &str) -> String {
    format!(
        "{HEADER}{n}:{}",
        hex::encode(digest::digest(&digest::SHA256, secret.as_bytes()))
    )
}

/// A parsed header: how many parts, and the digest of the whole secret.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// The number of parts, 1..=[`MAX_PARTS`].
    pub(crate) parts: usize,
    digest: String,
}

impl Header {
    /// `None` when `value` is a plain secret; `Some(Err(why))` for a damaged header.
    pub(crate) fn parse(value: &str) -> Option<Result<Self, &'static str>> {
        let rest = value.strip_prefix(HEADER)?;
        let Some((n, digest)) = rest.split_once(':') else {
            return Some(Err("its header has no digest"));
        };
        let parts = match n.parse::<usize>() {
            Ok(p) if (1..=MAX_PARTS).contains(&p) => p,
            _ => return Some(Err("its header has a bad part count")),
        };
        if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Some(Err("its header has a bad digest"));
        }
        Some(Ok(Self {
            parts,
            digest: digest.to_ascii_lowercase(),
        }))
    }

    /// Whether `joined` is the secret this header was written for.
    pub(crate) fn matches(&self, joined: &str) -> bool {
        // Not a secret comparison: the digest is stored in the clear beside the parts.
        hex::encode(digest::digest(&digest::SHA256, joined.as_bytes())) == self.digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_characters_whole_and_parts_within_the_limit() {
        assert!(split("", 4).is_empty());
        assert_eq!(split("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(split("abcd", 4), ["abcd"]);
        // A surrogate pair (2 units) never straddles two parts.
        let s = "a😀b😀😀";
        let parts = split(s, 3);
        assert_eq!(parts, ["a😀", "b😀", "😀"]);
        assert!(parts.iter().all(|p| units(p) <= 3));
        assert_eq!(parts.concat(), s);
        let long = "é😀x".repeat(1000);
        let parts = split(&long, 1280);
        assert!(parts.iter().all(|p| units(p) <= 1280 && !p.is_empty()));
        assert_eq!(parts.concat(), long);
    }

    #[test]
    fn a_header_round_trips_and_checks_the_whole_secret() {
        let h = header(3, "secret");
        assert!(h.starts_with('\0'));
        let parsed = Header::parse(&h).unwrap().unwrap();
        assert_eq!(parsed.parts, 3);
        assert!(parsed.matches("secret"));
        assert!(!parsed.matches("secreT"));
        assert_eq!(Header::parse("eyJhbGciOi.plain.token"), None);
    }

    #[test]
    fn a_damaged_header_is_an_error_not_a_secret() {
        let h = header(2, "s");
        for bad in [
            h.replace(":2:", ":0:"),
            h.replace(":2:", ":17:"),
            h.replace(":2:", ":x:"),
            h[..h.len() - 1].to_owned(),
            "\0autogpt-shim-parts:v1:2".to_owned(),
        ] {
            assert!(matches!(Header::parse(&bad), Some(Err(_))), "{bad:?}");
        }
    }
}
