//! Outbound network set-up shared by every connection to the platform: one TLS
//! configuration (the trust store) and one set of proxy rules, used by the WebSocket and by
//! every OAuth / OpenID request alike.
//!
//! # Trust store
//!
//! [`Net::new`] builds a single rustls [`ClientConfig`](rustls::ClientConfig): the roots of
//! the operating system's trust store as `rustls-native-certs` finds them (on Linux the
//! distribution bundle, including certificates the user or the company added with
//! `update-ca-certificates`; `SSL_CERT_FILE` / `SSL_CERT_DIR` replace it when set; on macOS
//! the keychains, on Windows the system store), plus every certificate of the optional
//! `tls_ca_file` PEM bundle. Only when the OS yields no root at all are the Mozilla roots
//! of `webpki-roots` used. A certificate that does not chain to a root is refused; the error
//! names its issuer and says what to do ([`untrusted_issuer`]).
//!
//! # Proxies
//!
//! The rules are hyper-util's `Matcher` (`hyper_util::client::proxy::matcher`),
//! the code reqwest itself uses: `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` (and lower case),
//! `NO_PROXY` (host and domain suffixes, IP addresses and CIDR ranges, `*`); when no variable
//! is set, the macOS and Windows system proxy settings (and on Windows the per-protocol
//! form hyper-util does not read, `crate::windows_proxy`). On top of that, `NO_PROXY` entries
//! with a port (`host:port`) bypass the proxy for that port only. A `proxy` setting replaces
//! the `*_PROXY` variables (`NO_PROXY` still applies); `proxy = "none"` turns proxies off.
//! `http://` proxies are used through `CONNECT` (basic credentials from the URL),
//! `socks5://` (names resolved here) and `socks5h://` (names resolved by the proxy) through
//! SOCKS5, for the WebSocket ([`Net::connect`]) and for HTTP ([`Net::http_client`]).
//! Proxy credentials never appear in a `Debug` or `Display` of anything here.

use std::fmt;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::SocksV5;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::proxy::matcher::Intercept;
use hyper_util::client::proxy::matcher::Matcher;
use rustls::DigitallySignedStruct;
use rustls::RootCertStore;
use rustls::SignatureScheme;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::client::danger::ServerCertVerified;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::ServerName;
use rustls::pki_types::UnixTime;
use rustls::pki_types::pem::PemObject;
use tokio::net::TcpStream;
use tower_service::Service;

/// What the configuration says about the network (the resolved `tls_ca_file` and `proxy`
/// settings).
#[derive(Clone, Default)]
pub struct NetOptions {
    /// A PEM bundle of extra certificate authorities (`tls_ca_file`).
    pub tls_ca_file: Option<PathBuf>,
    /// The `proxy` setting: a proxy URL that replaces the `*_PROXY` variables, or `"none"`.
    pub proxy: Option<String>,
}

impl fmt::Debug for NetOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetOptions")
            .field("tls_ca_file", &self.tls_ca_file)
            .field("proxy", &self.proxy.as_deref().map(redact))
            .finish()
    }
}

/// A network set-up error or a failed connection. No variant carries proxy credentials.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// The `tls_ca_file` bundle cannot be read or holds no certificate.
    #[error("tls_ca_file {path}: {reason}")]
    CaFile {
        /// The configured path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// No certificate authority at all could be loaded.
    #[error("no trusted certificate authority could be loaded: {0}")]
    NoRoots(String),
    /// The `proxy` setting is not a proxy URL this daemon can use.
    #[error(
        "the proxy setting {0} is not usable: give http://[user:password@]host:port, socks5://host:port, socks5h://host:port or \"none\""
    )]
    BadProxy(String),
    /// The proxy itself could not be reached.
    #[error("cannot reach the proxy {proxy}: {reason}")]
    ProxyUnreachable {
        /// The proxy, without credentials.
        proxy: String,
        /// Why.
        reason: String,
    },
    /// The proxy asked for credentials or refused the ones given (HTTP 407, SOCKS5 1929).
    #[error(
        "the proxy {proxy} refused the credentials ({answer}); check the user name and password in the proxy URL"
    )]
    ProxyAuth {
        /// The proxy, without credentials.
        proxy: String,
        /// What it answered.
        answer: &'static str,
    },
    /// The proxy would not open a tunnel to the target.
    #[error("the proxy {proxy} refused to connect to {target}: {reason}")]
    ProxyRefused {
        /// The proxy, without credentials.
        proxy: String,
        /// `host:port` asked for.
        target: String,
        /// What the proxy said.
        reason: String,
    },
    /// The platform's host name did not resolve (direct connections; through a proxy the
    /// proxy resolves it, or says it could not).
    #[error("cannot resolve {host}: {reason}")]
    Resolve {
        /// The host name.
        host: String,
        /// Why.
        reason: String,
    },
    /// A direct connection failed.
    #[error("cannot connect to {target}: {reason}")]
    Connect {
        /// `host:port`.
        target: String,
        /// Why.
        reason: String,
        /// The OS's error kind, e.g. `NetworkUnreachable` while the machine has no network.
        kind: std::io::ErrorKind,
    },
    /// The URL has no host.
    #[error("the URL {0} has no host")]
    NoHost(String),
}

/// What kind of trouble stopped a connection, for the words `status` and the console show
/// a user ("waiting for network", "proxy refused", "certificate not trusted").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trouble {
    /// The machine seems to have no network: the host name does not resolve, or the OS
    /// says the network or host is unreachable.
    NoNetwork,
    /// The proxy could not be reached, refused the credentials or refused the tunnel.
    Proxy,
    /// The platform's certificate is not trusted.
    Certificate,
    /// A setting is wrong (`tls_ca_file`, `proxy`, the platform URL).
    Settings,
    /// The platform could not be reached for another reason (refused, reset, timed out).
    Unreachable,
}

impl Trouble {
    /// The stable name `status --json` carries: `no_network`, `proxy`, `certificate`,
    /// `settings` or `unreachable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoNetwork => "no_network",
            Self::Proxy => "proxy",
            Self::Certificate => "certificate",
            Self::Settings => "settings",
            Self::Unreachable => "unreachable",
        }
    }
}

impl NetError {
    /// The kind of trouble this is, for the user's words.
    pub fn trouble(&self) -> Trouble {
        use std::io::ErrorKind;
        match self {
            Self::CaFile { .. } | Self::NoRoots(_) | Self::BadProxy(_) | Self::NoHost(_) => {
                Trouble::Settings
            }
            Self::ProxyUnreachable { .. } | Self::ProxyAuth { .. } | Self::ProxyRefused { .. } => {
                Trouble::Proxy
            }
            Self::Resolve { .. } => Trouble::NoNetwork,
            Self::Connect { kind, .. } => match kind {
                ErrorKind::NetworkUnreachable
                | ErrorKind::HostUnreachable
                | ErrorKind::NetworkDown
                | ErrorKind::AddrNotAvailable => Trouble::NoNetwork,
                _ => Trouble::Unreachable,
            },
        }
    }
}

/// The proxy a connection goes through.
#[derive(Clone)]
pub struct ProxyRoute {
    intercept: Intercept,
}

impl ProxyRoute {
    /// `scheme://host:port` of the proxy, without credentials: safe to log and show.
    pub fn display(&self) -> String {
        let u = self.intercept.uri();
        format!(
            "{}://{}",
            u.scheme_str().unwrap_or("http"),
            u.authority().map_or("", |a| a.as_str())
        )
    }

    /// True for `socks5://` and `socks5h://` proxies.
    pub fn is_socks(&self) -> bool {
        matches!(
            self.intercept.uri().scheme_str(),
            Some("socks5" | "socks5h")
        )
    }

    /// The proxy URL with its credentials, for reqwest only.
    fn url_with_credentials(&self) -> Option<url::Url> {
        let mut u = url::Url::parse(&self.display()).ok()?;
        if let Some((user, pass)) = self.credentials() {
            u.set_username(&user).ok()?;
            u.set_password(Some(&pass)).ok()?;
        }
        Some(u)
    }

    /// User name and password, decoded from the basic header or the raw pair.
    fn credentials(&self) -> Option<(String, String)> {
        if let Some((u, p)) = self.intercept.raw_auth() {
            return Some((u.to_owned(), p.to_owned()));
        }
        use base64::Engine as _;
        let header = self.intercept.basic_auth()?.to_str().ok()?;
        let encoded = header.strip_prefix("Basic ")?;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let (u, p) = text.split_once(':')?;
        Some((u.to_owned(), p.to_owned()))
    }
}

impl fmt::Debug for ProxyRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

/// The proxy rules: which destinations go through which proxy.
#[derive(Clone)]
pub struct ProxyRules {
    matcher: Arc<Matcher>,
    /// `NO_PROXY` entries with a port: `(single-entry matcher, port)`.
    port_bypass: Arc<Vec<(Matcher, u16)>>,
    /// Where the rules come from, for `doctor`.
    source: &'static str,
}

impl fmt::Debug for ProxyRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyRules")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

fn first_env(names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| std::env::var(n).ok())
}

/// The rules when no `proxy` setting is given: the `*_PROXY` variables, else the system
/// settings (hyper-util's `Matcher::from_system`), with `no` (the `NO_PROXY` variable)
/// before the system's bypass list. On Windows, a per-protocol `ProxyServer`, which
/// hyper-util cannot read, is read by [`crate::windows_proxy`].
fn system_matcher(no: &str) -> (Matcher, &'static str) {
    let proxy_vars = [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ];
    if first_env(&proxy_vars).is_none()
        && let Some((per, bypass)) = windows_system_per_protocol()
    {
        let no = if no.is_empty() { bypass } else { no.to_owned() };
        let mut b = Matcher::builder().no(no);
        if let Some(h) = per.http {
            b = b.http(h);
        }
        if let Some(h) = per.https {
            b = b.https(h);
        }
        return (b.build(), "the system settings (a proxy per protocol)");
    }
    (Matcher::from_system(), "the environment or system settings")
}

#[cfg(windows)]
fn windows_system_per_protocol() -> Option<(crate::windows_proxy::PerProtocol, String)> {
    crate::windows_proxy::from_registry()
}

#[cfg(not(windows))]
fn windows_system_per_protocol() -> Option<(crate::windows_proxy::PerProtocol, String)> {
    None
}

impl ProxyRules {
    /// The rules from the `proxy` setting (if any) and the environment (see the module
    /// documentation).
    pub fn new(setting: Option<&str>) -> Result<ProxyRules, NetError> {
        let no = first_env(&["NO_PROXY", "no_proxy"]).unwrap_or_default();
        ProxyRules::with_no_proxy(setting, &no)
    }

    /// As [`ProxyRules::new`], with `no` in place of the `NO_PROXY` variable.
    pub fn with_no_proxy(setting: Option<&str>, no: &str) -> Result<ProxyRules, NetError> {
        let (matcher, source) = match setting.map(str::trim) {
            Some(p) if p.eq_ignore_ascii_case("none") => {
                (Matcher::builder().build(), "the proxy setting (none)")
            }
            Some(p) => {
                let parsed = url::Url::parse(p).map_err(|_| NetError::BadProxy(redact(p)))?;
                if !matches!(parsed.scheme(), "http" | "socks5" | "socks5h")
                    || parsed.host_str().is_none()
                {
                    return Err(NetError::BadProxy(redact(p)));
                }
                (
                    Matcher::builder()
                        .all(p.to_owned())
                        .no(no.to_owned())
                        .build(),
                    "the proxy setting",
                )
            }
            None => system_matcher(no),
        };
        let mut port_bypass = Vec::new();
        for entry in no.split(',').map(str::trim) {
            if let Some((host, port)) = split_port(entry) {
                let m = Matcher::builder()
                    .all("http://proxy.invalid".to_owned())
                    .no(host.to_owned())
                    .build();
                port_bypass.push((m, port));
            }
        }
        Ok(ProxyRules {
            matcher: Arc::new(matcher),
            port_bypass: Arc::new(port_bypass),
            source,
        })
    }

    /// Where the rules come from: the `proxy` setting or the environment.
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// The proxy for `url` (`ws`, `wss`, `http` or `https`), or `None` to go direct.
    pub fn route(&self, url: &url::Url) -> Option<ProxyRoute> {
        let scheme = match url.scheme() {
            "ws" | "http" => "http",
            "wss" | "https" => "https",
            _ => return None,
        };
        let host = url.host_str()?;
        let port = url.port_or_known_default()?;
        let uri: http::Uri = format!("{scheme}://{host}:{port}/").parse().ok()?;
        for (m, p) in self.port_bypass.iter() {
            if *p == port && m.intercept(&uri).is_none() {
                return None;
            }
        }
        let intercept = self.matcher.intercept(&uri)?;
        // An https:// proxy from the environment (TLS to the proxy itself) is returned as
        // is: reqwest can use it, `Net::connect` refuses it with `BadProxy`.
        Some(ProxyRoute { intercept })
    }
}

/// `host:port` from a `NO_PROXY` entry that names a port (`[v6]:port` too).
fn split_port(entry: &str) -> Option<(&str, u16)> {
    let (host, port) = entry.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let host = if let Some(h) = host.strip_prefix('[') {
        h.strip_suffix(']')?
    } else if host.contains(':') {
        return None; // a bare IPv6 address, no port
    } else {
        host
    };
    (!host.is_empty()).then_some((host, port))
}

/// A proxy URL with any user information replaced by `***`.
pub fn redact(proxy: &str) -> String {
    match url::Url::parse(proxy) {
        Ok(mut u) => {
            if !u.username().is_empty() || u.password().is_some() {
                let _ = u.set_username("***");
                let _ = u.set_password(None);
            }
            u.to_string()
        }
        Err(_) => match proxy.rsplit_once('@') {
            Some((_, rest)) => format!("***@{rest}"),
            None => proxy.to_owned(),
        },
    }
}

/// The network set-up: the TLS configuration and the proxy rules.
#[derive(Clone)]
pub struct Net {
    tls: Arc<rustls::ClientConfig>,
    proxy: ProxyRules,
    roots: RootsSummary,
}

impl fmt::Debug for Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Net")
            .field("roots", &self.roots)
            .field("proxy", &self.proxy)
            .finish_non_exhaustive()
    }
}

/// How many roots came from where (for `doctor`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RootsSummary {
    /// From the OS store (or `SSL_CERT_FILE` / `SSL_CERT_DIR`).
    pub system: usize,
    /// From `tls_ca_file`.
    pub extra: usize,
    /// True when the OS store was empty and the built-in Mozilla roots are used.
    pub builtin: bool,
}

impl Net {
    /// Loads the trust store and the proxy rules.
    pub fn new(opts: &NetOptions) -> Result<Net, NetError> {
        let mut roots = RootStoreBuilder {
            store: RootCertStore::empty(),
            summary: RootsSummary::default(),
        };
        let native = rustls_native_certs::load_native_certs();
        for e in &native.errors {
            tracing::warn!(error = %e, "a part of the system trust store could not be read");
        }
        for c in native.certs {
            if roots.store.add(c).is_ok() {
                roots.summary.system += 1;
            }
        }
        if let Some(path) = &opts.tls_ca_file {
            roots.summary.extra = add_pem_file(&mut roots.store, path)?;
        }
        if roots.summary.system == 0 {
            tracing::warn!(
                "the system trust store is empty; using the built-in Mozilla roots (install ca-certificates, or set SSL_CERT_FILE)"
            );
            roots
                .store
                .extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            roots.summary.builtin = true;
        }
        if roots.store.is_empty() {
            return Err(NetError::NoRoots("the store is empty".into()));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let inner =
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots.store), provider.clone())
                .build()
                .map_err(|e| NetError::NoRoots(e.to_string()))?;
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| NetError::NoRoots(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NamingVerifier { inner }))
            .with_no_client_auth();
        Ok(Net {
            tls: Arc::new(tls),
            proxy: ProxyRules::new(opts.proxy.as_deref())?,
            roots: roots.summary,
        })
    }

    /// The one TLS configuration (for tungstenite's `Connector::Rustls`).
    pub fn tls(&self) -> Arc<rustls::ClientConfig> {
        self.tls.clone()
    }

    /// The proxy rules.
    pub fn proxy(&self) -> &ProxyRules {
        &self.proxy
    }

    /// Where the trusted roots came from.
    pub fn roots(&self) -> RootsSummary {
        self.roots
    }

    /// A reqwest client builder with this TLS configuration and these proxy rules.
    pub fn http_client(&self) -> reqwest::ClientBuilder {
        let rules = self.proxy.clone();
        reqwest::Client::builder()
            .use_preconfigured_tls((*self.tls).clone())
            .proxy(reqwest::Proxy::custom(move |u| {
                rules.route(u).and_then(|r| r.url_with_credentials())
            }))
    }

    /// A TCP stream to `url`'s host and port: direct, or tunnelled through the proxy the
    /// rules choose (`CONNECT` or SOCKS5). TLS, if any, is the caller's next step.
    pub async fn connect(&self, url: &url::Url) -> Result<TcpStream, NetError> {
        let host = url
            .host_str()
            .ok_or_else(|| NetError::NoHost(url.to_string()))?;
        let port = url
            .port_or_known_default()
            .ok_or_else(|| NetError::NoHost(url.to_string()))?;
        let target = format!("{host}:{port}");
        let stream = match self.proxy.route(url) {
            None => {
                // Resolved apart from the connect, so that a name that does not resolve
                // (the usual sign of no network) is told from a refused connection.
                let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host(target.as_str())
                    .await
                    .map_err(|e| NetError::Resolve {
                        host: host.to_owned(),
                        reason: e.to_string(),
                    })?
                    .collect();
                TcpStream::connect(addrs.as_slice())
                    .await
                    .map_err(|e| NetError::Connect {
                        target: target.clone(),
                        reason: e.to_string(),
                        kind: e.kind(),
                    })?
            }
            Some(route) => through(&route, host, port).await?,
        };
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }
}

async fn through(route: &ProxyRoute, host: &str, port: u16) -> Result<TcpStream, NetError> {
    let proxy = route.display();
    let target = format!("{host}:{port}");
    let proxy_uri = route.intercept.uri();
    let proxy_host = proxy_uri.host().unwrap_or_default();
    let scheme = proxy_uri.scheme_str().unwrap_or("http");
    let proxy_port = proxy_uri
        .port_u16()
        .unwrap_or(if scheme == "http" { 80 } else { 1080 });
    // The connector reaches the proxy itself over plain TCP.
    let hop: http::Uri = format!("http://{proxy_host}:{proxy_port}/")
        .parse()
        .map_err(|_| NetError::BadProxy(proxy.clone()))?;
    let dst: http::Uri = format!("http://{target}/")
        .parse()
        .map_err(|_| NetError::NoHost(target.clone()))?;
    let mut tcp = HttpConnector::new();
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(Some(Duration::from_secs(30)));
    match scheme {
        "http" => {
            let mut t = Tunnel::new(hop, tcp);
            if let Some(auth) = route.intercept.basic_auth() {
                t = t.with_auth(auth.clone());
            }
            let io = t.call(dst).await.map_err(|e| {
                let text = e.to_string();
                if text.contains("authorization required") {
                    NetError::ProxyAuth {
                        proxy: proxy.clone(),
                        answer: "407 Proxy Authentication Required",
                    }
                } else if text.contains("failed to create underlying connection") {
                    NetError::ProxyUnreachable {
                        proxy: proxy.clone(),
                        reason: error_chain(&e),
                    }
                } else {
                    NetError::ProxyRefused {
                        proxy: proxy.clone(),
                        target: target.clone(),
                        reason: error_chain(&e),
                    }
                }
            })?;
            Ok(io.into_inner())
        }
        "socks5" | "socks5h" => {
            let mut s = SocksV5::new(hop, tcp).local_dns(scheme == "socks5");
            if let Some((u, p)) = route.credentials() {
                s = s.with_auth(u, p);
            }
            let io = s.call(dst).await.map_err(|e| {
                // hyper-util's SocksError is not exported: its Display tells the cases apart
                // (the wrong-credentials test fails if that text changes).
                let text = error_chain(&e);
                if text.contains("failed to create underlying connection") {
                    NetError::ProxyUnreachable {
                        proxy: proxy.clone(),
                        reason: text,
                    }
                } else if text.contains("credentials not accepted")
                    || text.contains("user/pass authentication")
                {
                    NetError::ProxyAuth {
                        proxy: proxy.clone(),
                        answer: "SOCKS5 user name / password not accepted",
                    }
                } else {
                    NetError::ProxyRefused {
                        proxy: proxy.clone(),
                        target: target.clone(),
                        reason: text,
                    }
                }
            })?;
            Ok(io.into_inner())
        }
        _ => Err(NetError::BadProxy(proxy)),
    }
}

/// An error and its sources, `: `-joined (the crates' errors hide the interesting part in a
/// source); shared by every error text of this crate's HTTP and TLS paths.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

struct RootStoreBuilder {
    store: RootCertStore,
    summary: RootsSummary,
}

fn add_pem_file(store: &mut RootCertStore, path: &Path) -> Result<usize, NetError> {
    let err = |reason: String| NetError::CaFile {
        path: path.to_owned(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    let mut added = 0;
    for c in CertificateDer::pem_slice_iter(&bytes) {
        let c = c.map_err(|e| err(format!("not a PEM certificate bundle: {e}")))?;
        store
            .add(c)
            .map_err(|e| err(format!("a certificate is not usable: {e}")))?;
        added += 1;
    }
    if added == 0 {
        return Err(err("holds no PEM certificate".into()));
    }
    Ok(added)
}

/// The error a refused certificate carries: names the issuer, says what to do.
#[derive(Clone)]
pub struct UntrustedIssuer {
    /// The issuer's distinguished name (RFC 4514), or a note that it could not be read.
    pub issuer: String,
}

impl fmt::Display for UntrustedIssuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "certificate not trusted: issued by \"{}\", which is not in the system trust store; \
             if this is your organisation's certificate authority, install it in the system \
             trust store or set tls_ca_file (or SSL_CERT_FILE) to its PEM file",
            self.issuer
        )
    }
}

impl fmt::Debug for UntrustedIssuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for UntrustedIssuer {}

/// The [`UntrustedIssuer`] somewhere in `e`'s source chain (a refused certificate), if any.
pub fn untrusted_issuer(e: &(dyn std::error::Error + 'static)) -> Option<UntrustedIssuer> {
    let mut cur = Some(e);
    while let Some(c) = cur {
        if let Some(u) = c.downcast_ref::<UntrustedIssuer>() {
            return Some(u.clone());
        }
        if let Some(rustls::Error::InvalidCertificate(rustls::CertificateError::Other(o))) =
            c.downcast_ref::<rustls::Error>()
            && let Some(u) = o.0.downcast_ref::<UntrustedIssuer>()
        {
            return Some(u.clone());
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(u) = untrusted_issuer(inner)
        {
            return Some(u);
        }
        cur = c.source();
    }
    None
}

/// The issuer of the top certificate of the presented chain.
fn issuer_of(end_entity: &CertificateDer<'_>, intermediates: &[CertificateDer<'_>]) -> String {
    use x509_cert::der::Decode as _;
    let top = intermediates.last().unwrap_or(end_entity);
    match x509_cert::Certificate::from_der(top.as_ref()) {
        Ok(c) => c.tbs_certificate.issuer.to_string(),
        Err(_) => "an issuer whose name could not be read".into(),
    }
}

/// WebPKI verification, with an `UnknownIssuer` refusal turned into [`UntrustedIssuer`].
#[derive(Debug)]
struct NamingVerifier {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for NamingVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
                let issuer = issuer_of(end_entity, intermediates);
                tracing::warn!(issuer = %issuer, "server certificate from an untrusted issuer");
                Err(rustls::Error::InvalidCertificate(
                    rustls::CertificateError::Other(rustls::OtherError(Arc::new(
                        UntrustedIssuer { issuer },
                    ))),
                ))
            }
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
#[path = "net_tests.rs"]
mod tests;
