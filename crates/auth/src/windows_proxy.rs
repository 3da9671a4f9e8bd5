//! The Windows system proxy in the form hyper-util does not read.
//!
//! Windows keeps the user's proxy in `HKCU\Software\Microsoft\Windows\CurrentVersion\Internet
//! Settings`: `ProxyEnable`, `ProxyServer` and the bypass list `ProxyOverride`. With "Use the
//! same proxy server for all protocols" (the Settings app's only form) `ProxyServer` is
//! `host:port`, which hyper-util's `Matcher::from_system` reads. With a proxy per protocol
//! (Internet Options > LAN settings > Advanced, and what company policies often push) it is
//! `http=host:port;https=host:port;ftp=...`, which hyper-util takes as one proxy address
//! and cannot use. [`PerProtocol`] reads that form: `https=` for `wss://` and `https://`,
//! `http=` for `ws://` and `http://`, both `http://` proxies (WinINet reaches a secure site
//! through a `CONNECT` to the `https=` proxy); other entries (`ftp=`, `socks=`, which WinINet
//! speaks as SOCKS4) are not used.
//!
//! The parsing and the bypass list are plain functions, tested on every OS; only
//! [`from_registry`] reads the registry.

// Elsewhere only the tests call the parsers: they are the rules, tested on every OS.
#![cfg_attr(not(windows), allow(dead_code))]

/// The per-protocol proxies of a `ProxyServer` value, as proxy URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PerProtocol {
    /// `http=`: for `http://` and `ws://`.
    pub(crate) http: Option<String>,
    /// `https=`: for `https://` and `wss://`.
    pub(crate) https: Option<String>,
}

impl PerProtocol {
    /// `Some` for the per-protocol form (entries `scheme=host:port` separated by `;`),
    /// `None` for the single form (`host:port`, read by hyper-util) or an empty value.
    pub(crate) fn parse(value: &str) -> Option<PerProtocol> {
        if !value.contains('=') {
            return None;
        }
        let mut p = PerProtocol {
            http: None,
            https: None,
        };
        for entry in value.split(';') {
            let Some((scheme, addr)) = entry.split_once('=') else {
                continue;
            };
            let addr = addr.trim();
            if addr.is_empty() {
                continue;
            }
            let url = if addr.contains("://") {
                addr.to_owned()
            } else {
                format!("http://{addr}")
            };
            match scheme.trim().to_ascii_lowercase().as_str() {
                "http" => p.http = Some(url),
                "https" => p.https = Some(url),
                _ => {}
            }
        }
        Some(p)
    }
}

/// `ProxyOverride` as `NO_PROXY` entries: `;`-separated, `*.example.com` as the domain
/// suffix `example.com`, `10.*` and the like as CIDR ranges; `<local>` (host names without
/// a dot) has no `NO_PROXY` form and is left out.
pub(crate) fn bypass_as_no_proxy(value: &str) -> String {
    value
        .split(';')
        .map(str::trim)
        .filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("<local>"))
        .map(|e| ipv4_wildcard_as_cidr(e).unwrap_or_else(|| e.trim_start_matches("*.").to_owned()))
        .collect::<Vec<_>>()
        .join(",")
}

/// `10.*` -> `10.0.0.0/8`, `192.168.*` -> `192.168.0.0/16`, `1.2.3.*` -> `1.2.3.0/24`.
fn ipv4_wildcard_as_cidr(entry: &str) -> Option<String> {
    let parts: Vec<&str> = entry.split('.').collect();
    let star = parts.iter().position(|p| *p == "*")?;
    if star == 0 || star > 3 || parts.get(star..)?.iter().any(|p| *p != "*") {
        return None;
    }
    let mut octets = [0u8; 4];
    for (o, p) in octets.iter_mut().zip(parts.get(..star)?) {
        *o = p.parse().ok()?;
    }
    let [a, b, c, d] = octets;
    Some(format!("{a}.{b}.{c}.{d}/{}", star * 8))
}

/// The user's per-protocol proxies and bypass list when the proxy is on and `ProxyServer`
/// has the per-protocol form; `None` otherwise (off, unreadable, or the single form that
/// hyper-util reads itself).
#[cfg(windows)]
pub(crate) fn from_registry() -> Option<(PerProtocol, String)> {
    let key = windows_registry::CURRENT_USER
        .open(r"Software\Microsoft\Windows\CurrentVersion\Internet Settings")
        .ok()?;
    if key.get_u32("ProxyEnable").unwrap_or(0) == 0 {
        return None;
    }
    let per = PerProtocol::parse(&key.get_string("ProxyServer").ok()?)?;
    let bypass = key
        .get_string("ProxyOverride")
        .map(|v| bypass_as_no_proxy(&v))
        .unwrap_or_default();
    Some((per, bypass))
}

#[cfg(test)]
#[path = "windows_proxy_tests.rs"]
mod tests;
