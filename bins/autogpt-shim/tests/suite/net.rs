//! Networks people actually have (issue 28): the platform behind TLS with a private CA,
//! HTTP and SOCKS5 proxies. Real parts on loopback: a CA and certificates made here
//! (rcgen), a TLS front (tokio-rustls) before the real platform peer, and small recording
//! proxies (HTTP `CONNECT` and SOCKS5) that are the only ones to resolve `platform.test`,
//! so a daemon that bypasses the proxy cannot connect. The daemon is the real binary.
//!
//! Each test stores only a refresh token, so the daemon makes an OAuth token request
//! (reqwest) before its WebSocket upgrade (tungstenite): both go through the same trust
//! store and proxy rules, and each test checks both.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use shim_auth::CredentialStore;
use shim_auth::EncryptedFileStore;
use shim_auth::KdfParams;
use shim_auth::Secret;
use shim_platform_peer::PeerConfig;
#[cfg(target_os = "linux")]
use shim_platform_peer::relay::BlackholeRelay;
use shim_protocol::Message;
use shim_protocol::messages::handshake::Empty;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::net::TcpStream;
use tokio::process::Child;

use crate::suite::harness::Env;
use crate::suite::harness::PASSPHRASE;
use crate::suite::harness::T;
use crate::suite::harness::finish;
use crate::suite::harness::sigterm;
use crate::suite::harness::stop_cleanly;

/// The name only the test proxies resolve.
const HIDDEN_HOST: &str = "platform.test";
const CA_NAME: &str = "Test Corp Inspection CA";
const PROXY_USER: &str = "alice";
const PROXY_PASSWORD: &str = "pr0xy-s3cret-pw";

/// A CA made for one test and a server certificate it issued for `localhost` and
/// `platform.test`.
struct Pki {
    ca_pem: String,
    server: Arc<rustls::ServerConfig>,
}

fn pki() -> Pki {
    pki_named(CA_NAME)
}

/// As [`pki`], with a CA named `ca_name` (the system-store test uses its own name: a CA of
/// the same name in the system store would make the other tests' refusals a bad
/// signature instead of an unknown issuer while it is installed).
fn pki_named(ca_name: &str) -> Pki {
    use rcgen::BasicConstraints;
    use rcgen::CertificateParams;
    use rcgen::DnType;
    use rcgen::IsCa;
    use rcgen::Issuer;
    use rcgen::KeyPair;
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, ca_name);
    ca.distinguished_name
        .push(DnType::OrganizationName, "Test Corp");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::from_params(&ca, &ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_owned(), HIDDEN_HOST.to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der()).unwrap();
    let server = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![leaf.der().clone(), ca_cert.der().clone()], key)
    .unwrap();
    Pki {
        ca_pem: ca_cert.pem(),
        server: Arc::new(server),
    }
}

/// TLS on loopback in front of the platform peer (like a reverse proxy): returns its port.
async fn tls_front(server: Arc<rustls::ServerConfig>, backend: std::net::SocketAddr) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor = tokio_rustls::TlsAcceptor::from(server);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut back) = TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut back).await;
            });
        }
    });
    port
}

/// `platform.test` is 127.0.0.1 for the proxies only; other names resolve as usual.
async fn dial(host: &str, port: u16) -> std::io::Result<TcpStream> {
    let host = if host == HIDDEN_HOST {
        "127.0.0.1"
    } else {
        host
    };
    TcpStream::connect((host, port)).await
}

/// What a test proxy saw: one line per tunnel asked for.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn push(&self, s: String) {
        self.0.lock().unwrap().push(s);
    }
    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// A small HTTP proxy that only does `CONNECT`, with basic credentials when `auth` is set;
/// records `CONNECT host:port auth=ok|missing|wrong`.
async fn http_proxy(auth: Option<(&str, &str)>) -> (u16, Seen) {
    use base64::Engine as _;
    let expected = auth.map(|(u, p)| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
        )
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Seen::default();
    let rec = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let rec = rec.clone();
            let expected = expected.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut b = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 16_384 {
                    if tcp.read(&mut b).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(b[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let mut lines = head.lines();
                let first = lines.next().unwrap_or_default().to_owned();
                let given = lines.find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("proxy-authorization")
                        .then(|| v.trim().to_owned())
                });
                let verdict = match (&expected, &given) {
                    (None, _) => "none",
                    (Some(_), None) => "missing",
                    (Some(e), Some(g)) if e == g => "ok",
                    _ => "wrong",
                };
                let target = first
                    .strip_prefix("CONNECT ")
                    .and_then(|r| r.split_whitespace().next())
                    .unwrap_or_default()
                    .to_owned();
                rec.push(format!(
                    "{} {target} auth={verdict}",
                    &first[..first.find(' ').unwrap_or(0)]
                ));
                if verdict == "missing" || verdict == "wrong" {
                    let _ = tcp
                        .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n")
                        .await;
                    return;
                }
                let Some((host, port)) = target.rsplit_once(':') else {
                    let _ = tcp.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
                    return;
                };
                let Ok(mut up) = dial(host, port.parse().unwrap_or(0)).await else {
                    let _ = tcp.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
                    return;
                };
                let _ = tcp
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await;
                let _ = tokio::io::copy_bidirectional(&mut tcp, &mut up).await;
            });
        }
    });
    (port, seen)
}

/// A small SOCKS5 proxy (RFC 1928, user/password RFC 1929 when `auth` is set); records
/// `SOCKS5 name|ip host:port auth=...`.
async fn socks5_proxy(auth: Option<(&'static str, &'static str)>) -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Seen::default();
    let rec = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let rec = rec.clone();
            tokio::spawn(async move {
                let r: std::io::Result<()> = async {
                    let mut h = [0u8; 2];
                    tcp.read_exact(&mut h).await?;
                    let mut methods = vec![0u8; h[1] as usize];
                    tcp.read_exact(&mut methods).await?;
                    let mut verdict = "none";
                    if let Some((u, p)) = auth {
                        if !methods.contains(&2) {
                            tcp.write_all(&[5, 0xff]).await?;
                            rec.push("SOCKS5 auth=missing".into());
                            return Ok(());
                        }
                        tcp.write_all(&[5, 2]).await?;
                        let mut v = [0u8; 2];
                        tcp.read_exact(&mut v).await?;
                        let mut user = vec![0u8; v[1] as usize];
                        tcp.read_exact(&mut user).await?;
                        let mut l = [0u8; 1];
                        tcp.read_exact(&mut l).await?;
                        let mut pass = vec![0u8; l[0] as usize];
                        tcp.read_exact(&mut pass).await?;
                        if user != u.as_bytes() || pass != p.as_bytes() {
                            tcp.write_all(&[1, 1]).await?;
                            rec.push("SOCKS5 auth=wrong".into());
                            return Ok(());
                        }
                        tcp.write_all(&[1, 0]).await?;
                        verdict = "ok";
                    } else {
                        tcp.write_all(&[5, 0]).await?;
                    }
                    let mut req = [0u8; 4];
                    tcp.read_exact(&mut req).await?;
                    let (kind, host) = match req[3] {
                        1 => {
                            let mut a = [0u8; 4];
                            tcp.read_exact(&mut a).await?;
                            ("ip", std::net::Ipv4Addr::from(a).to_string())
                        }
                        3 => {
                            let mut l = [0u8; 1];
                            tcp.read_exact(&mut l).await?;
                            let mut n = vec![0u8; l[0] as usize];
                            tcp.read_exact(&mut n).await?;
                            ("name", String::from_utf8_lossy(&n).into_owned())
                        }
                        _ => {
                            let mut a = [0u8; 16];
                            tcp.read_exact(&mut a).await?;
                            ("ip", std::net::Ipv6Addr::from(a).to_string())
                        }
                    };
                    let mut p = [0u8; 2];
                    tcp.read_exact(&mut p).await?;
                    let port = u16::from_be_bytes(p);
                    rec.push(format!("SOCKS5 {kind} {host}:{port} auth={verdict}"));
                    let Ok(mut up) = dial(&host, port).await else {
                        tcp.write_all(&[5, 4, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
                        return Ok(());
                    };
                    tcp.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
                    let _ = tokio::io::copy_bidirectional(&mut tcp, &mut up).await;
                    Ok(())
                }
                .await;
                let _ = r;
            });
        }
    });
    (port, seen)
}

/// A daemon environment whose platform is `https://HOST:PORT` behind the TLS front, with
/// only a refresh token stored (so the first thing the daemon does is an OAuth request).
struct Site {
    env: Env,
    pki: Pki,
    port: u16,
    host: &'static str,
}

impl Site {
    async fn new(host: &'static str) -> Site {
        let env = Env::with_tokens(PeerConfig::default(), false).await;
        let pki = pki();
        let port = tls_front(pki.server.clone(), env.peer.addr()).await;
        let site = Site {
            env,
            pki,
            port,
            host,
        };
        let (_, refresh) = site.env.peer.issue_tokens();
        site.store_refresh(&refresh);
        site
    }

    fn store_refresh(&self, refresh: &str) {
        let store = EncryptedFileStore::with_params(
            &self.env.dir.path().join("creds"),
            Secret::new(PASSPHRASE),
            KdfParams::MIN_ACCEPTED,
        )
        .unwrap();
        store
            .set(
                &shim_auth::account::refresh_token(&format!(
                    "autogpt-local-executor@{}",
                    self.base()
                )),
                &Secret::new(refresh),
            )
            .unwrap();
    }

    fn base(&self) -> String {
        format!("https://{}:{}", self.host, self.port)
    }

    fn ca_file(&self) -> PathBuf {
        let p = self.env.dir.path().join("corp-ca.pem");
        std::fs::write(&p, &self.pki.ca_pem).unwrap();
        p
    }

    /// `start` in control mode against this site, with `extra` environment.
    fn start(&self, extra: &[(&str, &str)]) -> Child {
        let mut c = self.env.command(&["start"]);
        c.env("AUTOGPT_SHIM_PLATFORM_URL", self.base())
            .env("AUTOGPT_SHIM_PLATFORM_WS_URL", "")
            .env("RUST_LOG", "info");
        c.envs(extra.iter().copied());
        c.spawn().unwrap()
    }

    /// The daemon made its token request and its WebSocket: one ping answered.
    async fn assert_serving(&self) {
        let conn = self.env.next().await;
        conn.request(Message::Ping(Empty {}), T).await.unwrap();
        assert_eq!(self.env.peer.token_requests("refresh_token"), 1);
    }

    /// No connection reaches the peer for a while; the daemon is stopped and its stderr
    /// returned.
    async fn assert_refused(&self, child: Child) -> String {
        self.env.assert_no_connection(Duration::from_secs(3)).await;
        let status = self.last_disconnect().await;
        sigterm(&child);
        let (_, out, err) = finish(child, T).await;
        format!("{out}{err}\n--- status last_disconnect: {status}")
    }

    /// `status --json`: why the control connection's last attempt ended; then the words
    /// plain `status` shows for it.
    async fn last_disconnect(&self) -> String {
        let c = self.env.command(&["status", "--json"]).spawn().unwrap();
        let (code, out, err) = finish(c, T).await;
        assert_eq!(code, 0, "{out}{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let why = v["connections"][0]["last_disconnect"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        format!("{why}\n--- words: {}", self.control_words().await)
    }

    /// The control connection's line of plain `status` (empty while no daemon answers).
    async fn control_words(&self) -> String {
        let c = self.env.command(&["status"]).spawn().unwrap();
        let (_, out, _) = finish(c, T).await;
        out.lines()
            .find_map(|l| l.trim().strip_prefix("control connection: "))
            .unwrap_or_default()
            .to_owned()
    }
}

fn assert_no_secret(site: &Site, output: &str) {
    assert!(!output.contains(PROXY_PASSWORD), "password in the output");
    let audit = std::fs::read_to_string(site.env.audit_log()).unwrap_or_default();
    assert!(!audit.contains(PROXY_PASSWORD), "password in the audit log");
    assert!(!audit.contains(PROXY_USER), "user name in the audit log");
}

#[tokio::test]
async fn a_ca_given_through_ssl_cert_file_is_trusted_for_oauth_and_websocket() {
    let site = Site::new("localhost").await;
    let ca = site.ca_file();
    let child = site.start(&[("SSL_CERT_FILE", ca.to_str().unwrap())]);
    site.assert_serving().await;
    stop_cleanly(child).await;
}

#[tokio::test]
async fn a_ca_given_through_tls_ca_file_is_trusted_for_oauth_and_websocket() {
    let site = Site::new("localhost").await;
    let ca = site.ca_file();
    let cfg = site.env.dir.path().join("config").join("autogpt-shim");
    std::fs::create_dir_all(&cfg).unwrap();
    let file = site.env.dir.path().join("shim.toml");
    std::fs::write(&file, format!("tls_ca_file = {:?}\n", ca.to_str().unwrap())).unwrap();
    let mut c = site
        .env
        .command(&["--config", file.to_str().unwrap(), "start"]);
    c.env("AUTOGPT_SHIM_PLATFORM_URL", site.base())
        .env("AUTOGPT_SHIM_PLATFORM_WS_URL", "");
    let child = c.spawn().unwrap();
    site.assert_serving().await;
    stop_cleanly(child).await;
}

#[tokio::test]
async fn an_untrusted_ca_is_refused_with_its_name_for_oauth_and_websocket() {
    // Only a refresh token: the OAuth request is refused.
    let site = Site::new("localhost").await;
    let child = site.start(&[]);
    let out = site.assert_refused(child).await;
    assert_eq!(site.env.peer.token_requests("refresh_token"), 0);
    assert!(
        out.contains("certificate not trusted: issued by ") && out.contains(CA_NAME),
        "the issuer is named: {out}"
    );
    assert!(out.contains("tls_ca_file"), "says what to do: {out}");
    let status = out.rsplit("--- status last_disconnect: ").next().unwrap();
    assert!(
        status.contains("certificate not trusted") && status.contains(CA_NAME),
        "status says why: {status}"
    );
    assert!(
        status.contains("--- words: certificate not trusted, trying"),
        "status says it in words: {status}"
    );

    // An access token too: the WebSocket is refused the same way.
    let site = Site::new("localhost").await;
    let (access, _) = site.env.peer.issue_tokens();
    let store = EncryptedFileStore::with_params(
        &site.env.dir.path().join("creds"),
        Secret::new(PASSPHRASE),
        KdfParams::MIN_ACCEPTED,
    )
    .unwrap();
    store
        .set(
            &shim_auth::account::access_token(&format!("autogpt-local-executor@{}", site.base())),
            &Secret::new(access.as_str()),
        )
        .unwrap();
    let child = site.start(&[]);
    let out = site.assert_refused(child).await;
    assert!(out.contains(CA_NAME), "the issuer is named: {out}");
    let status = out.rsplit("--- status last_disconnect: ").next().unwrap();
    assert!(
        status.contains("certificate not trusted") && status.contains(CA_NAME),
        "status says why: {status}"
    );
    assert!(
        status.contains("--- words: certificate not trusted, trying"),
        "status says it in words: {status}"
    );
    assert!(
        site.env.peer.rejections().is_empty(),
        "no upgrade reached the peer"
    );
}

#[tokio::test]
async fn https_proxy_with_credentials_carries_oauth_and_websocket() {
    let site = Site::new(HIDDEN_HOST).await;
    let ca = site.ca_file();
    let (pport, seen) = http_proxy(Some((PROXY_USER, PROXY_PASSWORD))).await;
    let proxy = format!("http://{PROXY_USER}:{PROXY_PASSWORD}@127.0.0.1:{pport}");
    let child = site.start(&[
        ("HTTPS_PROXY", proxy.as_str()),
        ("AUTOGPT_SHIM_TLS_CA_FILE", ca.to_str().unwrap()),
    ]);
    site.assert_serving().await;
    let (out, err) = stop_cleanly(child).await;
    let want = format!("CONNECT {HIDDEN_HOST}:{} auth=ok", site.port);
    assert_eq!(
        seen.all(),
        vec![want.clone(), want],
        "token request, then upgrade"
    );
    assert_no_secret(&site, &format!("{out}{err}"));
}

#[tokio::test]
async fn wrong_proxy_credentials_give_a_clear_error_without_the_password() {
    let site = Site::new(HIDDEN_HOST).await;
    let ca = site.ca_file();
    let (pport, seen) = http_proxy(Some((PROXY_USER, "the-right-one"))).await;
    let proxy = format!("http://{PROXY_USER}:{PROXY_PASSWORD}@127.0.0.1:{pport}");
    // The configuration's `proxy` replaces the environment's (a dead one here).
    let child = site.start(&[
        ("HTTPS_PROXY", "http://127.0.0.1:9"),
        ("AUTOGPT_SHIM_PROXY", proxy.as_str()),
        ("AUTOGPT_SHIM_TLS_CA_FILE", ca.to_str().unwrap()),
    ]);
    let out = site.assert_refused(child).await;
    assert!(
        seen.all().iter().any(|s| s.ends_with("auth=wrong")),
        "{:?}",
        seen.all()
    );
    assert!(out.contains("407"), "{out}");
    assert!(out.contains("refused the credentials"), "{out}");
    let status = out.rsplit("--- status last_disconnect: ").next().unwrap();
    assert!(
        status.contains("refused the credentials"),
        "status says why: {status}"
    );
    assert!(
        status.contains("--- words: proxy refused, trying"),
        "status says it in words: {status}"
    );
    assert_no_secret(&site, &out);
}

/// A name that never resolves (`.invalid`, RFC 6761) is what the daemon sees on a machine
/// without network: `status` says "waiting for network", for the OAuth request and for the
/// WebSocket, with the time to the next attempt.
#[tokio::test]
async fn a_platform_name_that_does_not_resolve_reads_waiting_for_network() {
    for with_access in [false, true] {
        let site = Site::new("platform.invalid").await;
        if with_access {
            let (access, _) = site.env.peer.issue_tokens();
            let store = EncryptedFileStore::with_params(
                &site.env.dir.path().join("creds"),
                Secret::new(PASSPHRASE),
                KdfParams::MIN_ACCEPTED,
            )
            .unwrap();
            store
                .set(
                    &shim_auth::account::access_token(&format!(
                        "autogpt-local-executor@{}",
                        site.base()
                    )),
                    &Secret::new(access.as_str()),
                )
                .unwrap();
        }
        let child = site.start(&[]);
        let deadline = std::time::Instant::now() + T;
        let mut words = String::new();
        while std::time::Instant::now() < deadline {
            words = site.control_words().await;
            if words.contains("trying again in") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            words.starts_with("waiting for network, trying again in "),
            "access token {with_access}: {words}"
        );
        let c = site.env.command(&["status", "--json"]).spawn().unwrap();
        let (_, out, _) = finish(c, T).await;
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let conn = &v["connections"][0];
        assert_eq!(conn["problem"], "no_network", "{conn}");
        assert!(
            conn["last_disconnect"]
                .as_str()
                .unwrap_or_default()
                .contains("platform.invalid"),
            "names the host: {conn}"
        );
        sigterm(&child);
        finish(child, T).await;
    }
}

#[tokio::test]
async fn no_proxy_goes_direct() {
    let site = Site::new("localhost").await;
    let ca = site.ca_file();
    let (pport, seen) = http_proxy(None).await;
    let proxy = format!("http://127.0.0.1:{pport}");
    let no = format!("example.com,localhost:{}", site.port);
    let child = site.start(&[
        ("https_proxy", proxy.as_str()),
        ("no_proxy", no.as_str()),
        ("SSL_CERT_FILE", ca.to_str().unwrap()),
    ]);
    site.assert_serving().await;
    stop_cleanly(child).await;
    assert!(seen.all().is_empty(), "{:?}", seen.all());
}

#[tokio::test]
async fn socks5h_resolves_the_platform_at_the_proxy() {
    let site = Site::new(HIDDEN_HOST).await;
    let ca = site.ca_file();
    let (sport, seen) = socks5_proxy(Some((PROXY_USER, PROXY_PASSWORD))).await;
    let proxy = format!("socks5h://{PROXY_USER}:{PROXY_PASSWORD}@127.0.0.1:{sport}");
    let child = site.start(&[
        ("ALL_PROXY", proxy.as_str()),
        ("SSL_CERT_FILE", ca.to_str().unwrap()),
    ]);
    site.assert_serving().await;
    let (out, err) = stop_cleanly(child).await;
    let want = format!("SOCKS5 name {HIDDEN_HOST}:{} auth=ok", site.port);
    assert_eq!(seen.all(), vec![want.clone(), want]);
    assert_no_secret(&site, &format!("{out}{err}"));
}

#[tokio::test]
async fn wrong_socks5_credentials_give_a_clear_error_without_the_password() {
    let site = Site::new(HIDDEN_HOST).await;
    let ca = site.ca_file();
    let (sport, seen) = socks5_proxy(Some((PROXY_USER, "the-right-one"))).await;
    let proxy = format!("socks5h://{PROXY_USER}:{PROXY_PASSWORD}@127.0.0.1:{sport}");
    // An access token too: the WebSocket upgrade (not OAuth) is what meets the proxy here.
    let (access, _) = site.env.peer.issue_tokens();
    EncryptedFileStore::with_params(
        &site.env.dir.path().join("creds"),
        Secret::new(PASSPHRASE),
        KdfParams::MIN_ACCEPTED,
    )
    .unwrap()
    .set(
        &shim_auth::account::access_token(&format!("autogpt-local-executor@{}", site.base())),
        &Secret::new(access.as_str()),
    )
    .unwrap();
    let child = site.start(&[
        ("ALL_PROXY", proxy.as_str()),
        ("SSL_CERT_FILE", ca.to_str().unwrap()),
    ]);
    let out = site.assert_refused(child).await;
    assert!(
        seen.all().iter().all(|s| s == "SOCKS5 auth=wrong"),
        "{:?}",
        seen.all()
    );
    assert!(
        out.contains(&format!(
            "the proxy socks5h://127.0.0.1:{sport} refused the credentials (SOCKS5"
        )),
        "{out}"
    );
    assert_no_secret(&site, &out);
}

#[tokio::test]
async fn socks5_resolves_the_platform_locally() {
    let site = Site::new("localhost").await;
    let ca = site.ca_file();
    let (sport, seen) = socks5_proxy(None).await;
    let proxy = format!("socks5://127.0.0.1:{sport}");
    let child = site.start(&[
        ("ALL_PROXY", proxy.as_str()),
        ("SSL_CERT_FILE", ca.to_str().unwrap()),
    ]);
    site.assert_serving().await;
    stop_cleanly(child).await;
    let all = seen.all();
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(
        all.iter().all(|s| s.starts_with("SOCKS5 ip ")),
        "addresses, not names: {all:?}"
    );
}

#[tokio::test]
async fn doctor_shows_the_proxy_and_whether_a_tunnel_opens() {
    use crate::suite::doctor::doctor;
    let site = Site::new(HIDDEN_HOST).await;
    let ca = site.ca_file();
    let base = site.base();
    let (pport, seen) = http_proxy(Some((PROXY_USER, PROXY_PASSWORD))).await;
    let good = format!("http://{PROXY_USER}:{PROXY_PASSWORD}@127.0.0.1:{pport}");
    let vars = |proxy: &str| {
        vec![
            ("AUTOGPT_SHIM_PLATFORM_URL", base.clone()),
            ("AUTOGPT_SHIM_PLATFORM_WS_URL", String::new()),
            ("AUTOGPT_SHIM_TLS_CA_FILE", ca.to_str().unwrap().to_owned()),
            ("HTTPS_PROXY", proxy.to_owned()),
        ]
    };
    let run = |v: Vec<(&'static str, String)>| {
        let env = &site.env;
        async move {
            let v: Vec<(&str, &str)> = v.iter().map(|(k, x)| (*k, x.as_str())).collect();
            doctor(env, &[], &v).await
        }
    };
    let r = run(vars(&good)).await;
    let (marker, detail) = r.get("proxy");
    assert_eq!(marker, "OK", "{detail}");
    assert!(
        detail.contains(&format!("http://127.0.0.1:{pport}")),
        "{detail}"
    );
    assert!(
        detail.contains(&format!("a tunnel to {HIDDEN_HOST}:{} opened", site.port)),
        "{detail}"
    );
    let (marker, detail) = r.get("trust_store");
    assert_eq!(marker, "OK", "{detail}");
    assert!(detail.contains("1 from tls_ca_file"), "{detail}");
    assert_eq!(
        seen.all(),
        vec![format!("CONNECT {HIDDEN_HOST}:{} auth=ok", site.port)]
    );

    let wrong = format!("http://{PROXY_USER}:wrong-{PROXY_PASSWORD}@127.0.0.1:{pport}");
    let r = run(vars(&wrong)).await;
    let (marker, detail) = r.get("proxy");
    assert_eq!(marker, "WARN", "{detail}");
    assert!(detail.contains("407"), "{detail}");
    assert!(!r.raw().contains(PROXY_PASSWORD), "password shown");

    let mut direct = vars("");
    direct.push(("NO_PROXY", HIDDEN_HOST.to_owned()));
    let r = run(direct).await;
    let (marker, detail) = r.get("proxy");
    assert_eq!(marker, "INFO", "{detail}");
    assert!(detail.starts_with("none"), "{detail}");
}

/// The test that sets the user's system proxy: it changes a setting every program of the
/// user sees, so it runs only with `SHIM_TEST_SYSTEM_PROXY=1`, and alone (`--exact`, one
/// thread): `cargo xtask wine-test` runs it so under Wine, native-tests.yml on the macOS
/// and Windows runners. `false` (after a SKIP line) otherwise.
#[cfg(any(windows, target_os = "macos"))]
fn system_proxy_test_allowed(name: &str) -> bool {
    if std::env::var_os("SHIM_TEST_SYSTEM_PROXY").is_some() {
        return true;
    }
    eprintln!(
        "SKIP {name}: changes the user's system proxy; runs alone with SHIM_TEST_SYSTEM_PROXY=1 (cargo xtask wine-test, native-tests.yml)"
    );
    false
}

/// Starts the daemon with no proxy variable and the site's CA as `tls_ca_file`, and checks
/// that its token request and its upgrade both went through the proxy that recorded `seen`
/// (the system proxy `what` names).
#[cfg(any(windows, target_os = "macos"))]
async fn assert_both_through_the_system_proxy(
    site: &Site,
    ca: &std::path::Path,
    seen: &Seen,
    what: &str,
) {
    let child = site.start(&[("AUTOGPT_SHIM_TLS_CA_FILE", ca.to_str().unwrap())]);
    site.assert_serving().await;
    stop_cleanly(child).await;
    let want = format!("CONNECT {HIDDEN_HOST}:{} auth=none", site.port);
    assert_eq!(
        seen.all(),
        vec![want.clone(), want],
        "{what}: token request, then upgrade, both through the system proxy"
    );
}

/// With no proxy variable set, the proxy of the system settings carries OAuth and the
/// WebSocket. On Windows the user's Internet Settings (what Settings > Network & internet >
/// Proxy writes) in both forms: one proxy for every protocol, with local addresses bypassed
/// (read by hyper-util's `Matcher::from_system`), and a proxy per protocol, whose `http=`
/// entry here leads nowhere (read by shim-auth's `windows_proxy`).
#[cfg(windows)]
#[tokio::test]
async fn the_windows_system_proxy_carries_oauth_and_websocket() {
    if !system_proxy_test_allowed(
        "suite::net::the_windows_system_proxy_carries_oauth_and_websocket",
    ) {
        return;
    }
    for per_protocol in [false, true] {
        let site = Site::new(HIDDEN_HOST).await;
        let ca = site.ca_file();
        let (pport, seen) = http_proxy(None).await;
        let server = if per_protocol {
            format!("http=127.0.0.1:9;https=127.0.0.1:{pport};ftp=127.0.0.1:9")
        } else {
            format!("127.0.0.1:{pport}")
        };
        let _settings = WindowsSystemProxy::set(&server, "<local>;*.intranet.example");
        assert_both_through_the_system_proxy(&site, &ca, &seen, &server).await;
    }
}

/// The user's proxy values under `HKCU\...\Internet Settings`, set for one test and put
/// back as they were on drop (also when the test fails).
#[cfg(windows)]
struct WindowsSystemProxy {
    key: windows_registry::Key,
    saved: Vec<(&'static str, Option<windows_registry::Value>)>,
}

#[cfg(windows)]
impl WindowsSystemProxy {
    const KEY: &'static str = r"Software\Microsoft\Windows\CurrentVersion\Internet Settings";
    const VALUES: [&'static str; 3] = ["ProxyEnable", "ProxyServer", "ProxyOverride"];

    fn set(server: &str, bypass: &str) -> WindowsSystemProxy {
        let key = windows_registry::CURRENT_USER.create(Self::KEY).unwrap();
        let saved = Self::VALUES
            .into_iter()
            .map(|name| (name, key.get_value(name).ok()))
            .collect();
        let settings = WindowsSystemProxy { key, saved };
        settings.key.set_u32("ProxyEnable", 1).unwrap();
        settings.key.set_string("ProxyServer", server).unwrap();
        settings.key.set_string("ProxyOverride", bypass).unwrap();
        settings
    }
}

#[cfg(windows)]
impl Drop for WindowsSystemProxy {
    fn drop(&mut self) {
        for (name, value) in &self.saved {
            let _ = match value {
                Some(v) => self.key.set_value(name, v),
                None => self.key.remove_value(name),
            };
        }
    }
}

/// macOS: the same through the network services' web proxies (`networksetup`, as System
/// Settings > Network > Proxies sets them), which hyper-util reads from the
/// SystemConfiguration dynamic store. Needs administrator rights (`sudo -n`, as on the
/// GitHub macOS runners). Compiled here; runs only on a Mac (native-tests.yml).
#[cfg(target_os = "macos")]
#[tokio::test]
async fn the_macos_system_proxy_carries_oauth_and_websocket() {
    if !system_proxy_test_allowed("suite::net::the_macos_system_proxy_carries_oauth_and_websocket")
    {
        return;
    }
    let site = Site::new(HIDDEN_HOST).await;
    let ca = site.ca_file();
    let (pport, seen) = http_proxy(None).await;
    let _settings = MacSystemProxy::set(pport);
    // The dynamic store takes a moment to publish a change.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !MacSystemProxy::published(pport) {
        assert!(
            std::time::Instant::now() < deadline,
            "the system proxy did not show in scutil --proxy"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_both_through_the_system_proxy(&site, &ca, &seen, "networksetup").await;
}

/// The web and secure web proxies of every enabled network service, set to
/// `127.0.0.1:PORT` for one test; on drop each is put back as `networksetup` reported it.
#[cfg(target_os = "macos")]
struct MacSystemProxy {
    /// (service, `-setwebproxy` or `-setsecurewebproxy`, was enabled, server, port).
    saved: Vec<(String, &'static str, bool, String, String)>,
}

#[cfg(target_os = "macos")]
impl MacSystemProxy {
    fn networksetup(args: &[&str]) -> String {
        let out = std::process::Command::new("sudo")
            .args(["-n", "networksetup"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "networksetup {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn set(port: u16) -> MacSystemProxy {
        let services: Vec<String> = Self::networksetup(&["-listallnetworkservices"])
            .lines()
            .skip(1)
            .filter(|l| !l.starts_with('*') && !l.trim().is_empty())
            .map(str::to_owned)
            .collect();
        assert!(!services.is_empty(), "no enabled network service");
        let mut settings = MacSystemProxy { saved: Vec::new() };
        for service in &services {
            for (get, set) in [
                ("-getwebproxy", "-setwebproxy"),
                ("-getsecurewebproxy", "-setsecurewebproxy"),
            ] {
                let now = Self::networksetup(&[get, service]);
                let field = |k: &str| {
                    now.lines()
                        .find_map(|l| l.strip_prefix(k))
                        .unwrap_or_default()
                        .trim()
                        .to_owned()
                };
                settings.saved.push((
                    service.clone(),
                    set,
                    field("Enabled:") == "Yes",
                    field("Server:"),
                    field("Port:"),
                ));
                Self::networksetup(&[set, service, "127.0.0.1", &port.to_string()]);
            }
        }
        settings
    }

    /// `scutil --proxy` shows the proxy on `port`.
    fn published(port: u16) -> bool {
        std::process::Command::new("scutil")
            .arg("--proxy")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(&format!(": {port}")))
    }
}

#[cfg(target_os = "macos")]
impl Drop for MacSystemProxy {
    fn drop(&mut self) {
        for (service, set, enabled, server, port) in &self.saved {
            let state = format!("{set}state");
            let mut args: Vec<&str> = vec!["-n", "networksetup"];
            if *enabled && !server.is_empty() {
                args.extend([*set, service.as_str(), server.as_str(), port.as_str()]);
            } else {
                args.extend([state.as_str(), service.as_str(), "off"]);
            }
            let _ = std::process::Command::new("sudo").args(&args).status();
        }
    }
}

/// Our CA in the system trust store (Debian's `/usr/local/share/ca-certificates` and
/// `update-ca-certificates`) for as long as it lives; removed again on drop, so also when
/// the test fails (a panic unwinds through it). Leftovers of a killed run are removed
/// before installing.
#[cfg(target_os = "linux")]
struct SystemCa {
    file: PathBuf,
}

#[cfg(target_os = "linux")]
impl SystemCa {
    const DIR: &'static str = "/usr/local/share/ca-certificates";
    const PREFIX: &'static str = "autogpt-shim-test-";

    /// `None` (the test is skipped, and says so) unless root with update-ca-certificates.
    fn install(pem: &str) -> Option<SystemCa> {
        let tool = std::path::Path::new("/usr/sbin/update-ca-certificates");
        if !rustix::process::geteuid().is_root() || !tool.exists() {
            eprintln!("skipped: needs root and update-ca-certificates");
            return None;
        }
        for e in std::fs::read_dir(Self::DIR).ok()?.flatten() {
            if e.file_name().to_string_lossy().starts_with(Self::PREFIX) {
                let _ = std::fs::remove_file(e.path());
            }
        }
        let file =
            PathBuf::from(Self::DIR).join(format!("{}{}.crt", Self::PREFIX, std::process::id()));
        std::fs::write(&file, pem).unwrap();
        let guard = SystemCa { file };
        guard.update();
        Some(guard)
    }

    fn update(&self) {
        let out = std::process::Command::new("/usr/sbin/update-ca-certificates")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
}

#[cfg(target_os = "linux")]
impl Drop for SystemCa {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
        let _ = std::process::Command::new("/usr/sbin/update-ca-certificates").output();
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_ca_in_the_system_trust_store_is_trusted_for_oauth_and_websocket() {
    let mut site = Site::new("localhost").await;
    site.pki = pki_named("Test Corp System Store CA");
    site.port = tls_front(site.pki.server.clone(), site.env.peer.addr()).await;
    // The refresh token is stored under the base with the old port: store it again.
    let (_, refresh) = site.env.peer.issue_tokens();
    site.store_refresh(&refresh);
    let Some(installed) = SystemCa::install(&site.pki.ca_pem) else {
        return;
    };
    let child = site.start(&[]);
    site.assert_serving().await;
    stop_cleanly(child).await;
    drop(installed);
    // Removed again: a new daemon refuses the same CA.
    let bundle = std::fs::read_to_string("/etc/ssl/certs/ca-certificates.crt").unwrap();
    let body: String = site
        .pki
        .ca_pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    assert!(
        !bundle.lines().collect::<String>().contains(&body),
        "the test CA is still in the system bundle"
    );
}

/// A loopback address added for the test's lifetime (a local address change the netlink
/// watch sees), removed on drop.
#[cfg(target_os = "linux")]
struct ExtraAddress(&'static str);

#[cfg(target_os = "linux")]
impl ExtraAddress {
    fn add(addr: &'static str) -> Option<ExtraAddress> {
        let ip = std::process::Command::new("ip").arg("-V").output();
        if !rustix::process::geteuid().is_root() || !ip.is_ok_and(|o| o.status.success()) {
            eprintln!("skipped: adding an address needs root and `ip` (iproute2)");
            return None;
        }
        let _ = std::process::Command::new("ip")
            .args(["addr", "del", addr, "dev", "lo"])
            .output();
        let out = std::process::Command::new("ip")
            .args(["addr", "add", addr, "dev", "lo"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        Some(ExtraAddress(addr))
    }
}

#[cfg(target_os = "linux")]
impl Drop for ExtraAddress {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["addr", "del", self.0, "dev", "lo"])
            .output();
    }
}

/// A half-open link (packets silently dropped), then a local address change: the daemon
/// probes at once and is serving again within seconds, where the ping alone (60 s here)
/// would take a minute. Prints the time from the change to serving again.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn an_address_change_probes_a_dead_link_and_reconnects_in_seconds() {
    let env = Env::new(PeerConfig::default()).await;
    let relay = BlackholeRelay::start(env.peer.addr()).await.unwrap();
    let rport = relay.port();
    let ws = format!("ws://127.0.0.1:{rport}/ws/local-executor");
    let child = env.start_control(&[
        ("AUTOGPT_SHIM_PLATFORM_WS_URL", ws.as_str()),
        ("AUTOGPT_SHIM_WS_PING_INTERVAL_SECONDS", "60"),
        ("AUTOGPT_SHIM_WS_PONG_TIMEOUT_SECONDS", "10"),
    ]);
    let first = env.next().await;
    first.request(Message::Ping(Empty {}), T).await.unwrap();
    // The link goes silent: the first connection is black-holed both ways.
    relay.black_hole();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    let Some(_addr) = ExtraAddress::add("127.0.0.77/32") else {
        stop_cleanly(child).await;
        return;
    };
    let second = env
        .peer
        .next_connection(Duration::from_secs(15))
        .await
        .expect("no reconnect within 15 s of the address change");
    let took = started.elapsed();
    second.request(Message::Ping(Empty {}), T).await.unwrap();
    eprintln!(
        "address change -> serving again: {:.2} s (target under 3 s; the 60 s ping would not have noticed yet)",
        took.as_secs_f64()
    );
    assert!(took < Duration::from_secs(15));
    stop_cleanly(child).await;
}

/// A request in flight when the link goes silent is not executed twice: a shell command
/// that appends a line to a file has run (the line is there) but its reply is lost in the
/// black-holed link. The daemon notices the dead link by its ping (0.2 s here, pong 1 s),
/// reconnects, and nothing replays the command: one line in the file, one
/// `EXECUTE_COMMAND` record in the audit log, which verifies.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_request_in_flight_on_a_black_holed_link_runs_at_most_once() {
    use shim_protocol::messages::exec::ExecuteCommand;

    use crate::suite::harness::wait_until;
    use crate::suite::harness::with_op;
    const SID: &str = "7d1e8c8e-1b9f-4d41-a0a8-52f0f7d3c0ab";
    let env = Env::new(PeerConfig::default()).await;
    let relay = BlackholeRelay::start(env.peer.addr()).await.unwrap();
    let rport = relay.port();
    let ws = format!("ws://127.0.0.1:{rport}/ws/local-executor");
    let mut c = env.legacy_command(SID, &["--enable-shell"]);
    c.env("AUTOGPT_SHIM_PLATFORM_WS_URL", &ws)
        .env("AUTOGPT_SHIM_WS_PING_INTERVAL_SECONDS", "0.2")
        .env("AUTOGPT_SHIM_WS_PONG_TIMEOUT_SECONDS", "1");
    let child = c.spawn().unwrap();
    let first = Arc::new(env.next().await);
    let out = env.root.join("appended.txt");
    let gate = env.root.join("gate");
    // Appends at once, then holds its reply until the test opens the gate.
    let command = format!(
        "echo ran >> '{}'; while [ ! -e '{}' ]; do sleep 0.05; done",
        out.display(),
        gate.display()
    );
    let conn = first.clone();
    let pending = tokio::spawn(async move {
        conn.request(
            Message::ExecuteCommand(ExecuteCommand {
                command: Some(command),
                ..ExecuteCommand::default()
            }),
            Duration::from_secs(10),
        )
        .await
    });
    wait_until("the command appended its line", || out.exists()).await;
    // The link goes silent, then the command ends: its reply goes into the black hole.
    relay.black_hole();
    std::fs::write(&gate, "").unwrap();
    let second = env
        .peer
        .next_connection(Duration::from_secs(15))
        .await
        .expect("no reconnect after the link went silent");
    second.request(Message::Ping(Empty {}), T).await.unwrap();
    // Had the reply crossed, it would have come before the reconnect.
    let answered = tokio::time::timeout(Duration::from_millis(200), pending).await;
    assert!(
        !matches!(answered, Ok(Ok(Ok(_)))),
        "the reply crossed the black hole: {answered:?}"
    );
    // Time for a replay to show, then the file and the audit log.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "ran\n");
    stop_cleanly(child).await;
    let records = env.audit_records();
    let runs = with_op(&records, "EXECUTE_COMMAND");
    assert_eq!(runs.len(), 1, "{runs:?}");
    env.verify_audit();
}
