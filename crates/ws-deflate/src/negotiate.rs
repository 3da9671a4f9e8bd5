//! The `Sec-WebSocket-Extensions` negotiation of RFC 7692 section 7.1, for both sides.

/// The extension's token.
pub const EXTENSION: &str = "permessage-deflate";

/// The client's offer: the extension, and that the server may limit the client's window.
pub const CLIENT_OFFER: &str = "permessage-deflate; client_max_window_bits";

/// Parameters both sides agreed on. Window bits are 8-15; 15 when not named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// The server starts every message with an empty window.
    pub server_no_context_takeover: bool,
    /// The client starts every message with an empty window.
    pub client_no_context_takeover: bool,
    /// The server's LZ77 window, in bits.
    pub server_max_window_bits: u8,
    /// The client's LZ77 window, in bits.
    pub client_max_window_bits: u8,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            server_no_context_takeover: false,
            client_no_context_takeover: false,
            server_max_window_bits: 15,
            client_max_window_bits: 15,
        }
    }
}

/// A server answer that the client must refuse (RFC 7692 section 7.1: "the client MUST
/// _Fail the WebSocket Connection_").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NegotiationError {
    /// An extension that was not offered.
    #[error("the server accepted an extension that was not offered: {0}")]
    NotOffered(String),
    /// More than one extension, or the same one twice.
    #[error("the server accepted more than one extension")]
    Several,
    /// An unknown parameter, a repeated one, or a bad value.
    #[error("bad permessage-deflate parameter in the server's answer: {0}")]
    BadParameter(String),
}

/// One extension element: its name and its parameters (value without quotes).
type Element = (String, Vec<(String, Option<String>)>);

/// Splits a header value into extension elements (RFC 6455 section 9.1), lower-cased
/// names, quoted values unquoted.
fn elements(header: &str) -> Vec<Element> {
    header
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| {
            let mut parts = e.split(';').map(str::trim);
            let name = parts.next().unwrap_or("").to_ascii_lowercase();
            let params = parts
                .filter(|p| !p.is_empty())
                .map(|p| match p.split_once('=') {
                    Some((k, v)) => (
                        k.trim().to_ascii_lowercase(),
                        Some(v.trim().trim_matches('"').to_owned()),
                    ),
                    None => (p.to_ascii_lowercase(), None),
                })
                .collect();
            (name, params)
        })
        .collect()
}

fn bits(name: &str, v: Option<&str>) -> Result<u8, NegotiationError> {
    let v = v.ok_or_else(|| NegotiationError::BadParameter(format!("{name} needs a value")))?;
    // 1*DIGIT without leading zeros (RFC 7692 section 7.1.2.1).
    if v.starts_with('0') || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(NegotiationError::BadParameter(format!("{name}={v}")));
    }
    match v.parse::<u8>() {
        Ok(b @ 8..=15) => Ok(b),
        _ => Err(NegotiationError::BadParameter(format!("{name}={v}"))),
    }
}

/// Client side: the parameters in force after the server's answer (`None` header: the
/// server declined, and frames travel uncompressed). `offered` says whether the client sent
/// [`CLIENT_OFFER`]; without an offer any accepted extension is an error.
pub fn client_accept(
    header: Option<&str>,
    offered: bool,
) -> Result<Option<Params>, NegotiationError> {
    let Some(header) = header else {
        return Ok(None);
    };
    let els = elements(header);
    if els.is_empty() {
        return Ok(None);
    }
    if els.len() > 1 {
        return Err(NegotiationError::Several);
    }
    let Some((name, params)) = els.into_iter().next() else {
        return Ok(None);
    };
    if name != EXTENSION || !offered {
        return Err(NegotiationError::NotOffered(name));
    }
    let mut p = Params::default();
    let mut seen: Vec<String> = Vec::new();
    for (k, v) in params {
        if seen.contains(&k) {
            return Err(NegotiationError::BadParameter(format!("{k} given twice")));
        }
        seen.push(k.clone());
        match k.as_str() {
            "server_no_context_takeover" if v.is_none() => p.server_no_context_takeover = true,
            "client_no_context_takeover" if v.is_none() => p.client_no_context_takeover = true,
            "server_max_window_bits" => p.server_max_window_bits = bits(&k, v.as_deref())?,
            // Allowed in the answer because the offer named it (7.1.2.2).
            "client_max_window_bits" => p.client_max_window_bits = bits(&k, v.as_deref())?,
            _ => return Err(NegotiationError::BadParameter(k)),
        }
    }
    Ok(Some(p))
}

/// What a server accepts: it may insist on no context takeover or smaller windows (saves
/// memory per connection).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerLimits {
    /// Answer `server_no_context_takeover`.
    pub server_no_context_takeover: bool,
    /// Answer `client_no_context_takeover`.
    pub client_no_context_takeover: bool,
    /// The largest window the server compresses with.
    pub server_max_window_bits: Option<u8>,
    /// The largest window the client may compress with (needs the client's consent,
    /// `client_max_window_bits` in its offer).
    pub client_max_window_bits: Option<u8>,
}

/// Server side: the first acceptable offer of the request's `Sec-WebSocket-Extensions`
/// value, as agreed parameters and the value of the response header. `None`: nothing
/// acceptable was offered (frames travel uncompressed).
pub fn server_accept(offers: &str, limits: &ServerLimits) -> Option<(Params, String)> {
    'offers: for (name, params) in elements(offers) {
        if name != EXTENSION {
            continue;
        }
        let mut p = Params::default();
        let mut client_bits_ok = false;
        let mut client_bits_offered: Option<u8> = None;
        let mut server_bits_offered: Option<u8> = None;
        let mut seen: Vec<String> = Vec::new();
        for (k, v) in params {
            if seen.contains(&k) {
                continue 'offers;
            }
            seen.push(k.clone());
            match (k.as_str(), v.as_deref()) {
                ("server_no_context_takeover", None) => p.server_no_context_takeover = true,
                ("client_no_context_takeover", None) => p.client_no_context_takeover = true,
                ("server_max_window_bits", v) => match bits(&k, v) {
                    Ok(b) => server_bits_offered = Some(b),
                    Err(_) => continue 'offers,
                },
                ("client_max_window_bits", None) => client_bits_ok = true,
                ("client_max_window_bits", v) => match bits(&k, v) {
                    Ok(b) => {
                        client_bits_ok = true;
                        client_bits_offered = Some(b);
                    }
                    Err(_) => continue 'offers,
                },
                _ => continue 'offers,
            }
        }
        if limits.client_max_window_bits.is_some() && !client_bits_ok {
            continue;
        }
        p.server_no_context_takeover |= limits.server_no_context_takeover;
        p.client_no_context_takeover |= limits.client_no_context_takeover;
        let mut answer = EXTENSION.to_owned();
        if p.server_no_context_takeover {
            answer.push_str("; server_no_context_takeover");
        }
        if p.client_no_context_takeover {
            answer.push_str("; client_no_context_takeover");
        }
        let server_bits = match (server_bits_offered, limits.server_max_window_bits) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(b) = server_bits {
            p.server_max_window_bits = b.clamp(8, 15);
            answer.push_str(&format!(
                "; server_max_window_bits={}",
                p.server_max_window_bits
            ));
        }
        let client_bits = match (client_bits_offered, limits.client_max_window_bits) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(b) = client_bits {
            p.client_max_window_bits = b.clamp(8, 15);
            answer.push_str(&format!(
                "; client_max_window_bits={}",
                p.client_max_window_bits
            ));
        }
        return Some((p, answer));
    }
    None
}

/// The memory one side's zlib state takes for `window_bits` (zlib's own formula, `zconf.h`:
/// deflate `(1 << (windowBits+2)) + (1 << (memLevel+9))` with memLevel 8, inflate
/// `1 << windowBits`), plus the state structs: the deflate and inflate halves one connection
/// holds while context takeover keeps them.
pub fn memory_estimate(deflate_bits: u8, inflate_bits: u8) -> (usize, usize) {
    let deflate = (1usize << (u32::from(deflate_bits) + 2)) + (1 << (8 + 9)) + 6 * 1024;
    let inflate = (1usize << u32::from(inflate_bits)) + 7 * 1024;
    (deflate, inflate)
}

#[cfg(test)]
#[path = "negotiate_tests.rs"]
mod tests;
