use super::*;

fn url(s: &str) -> url::Url {
    url::Url::parse(s).unwrap()
}

#[test]
fn the_proxy_setting_routes_everything_and_never_shows_credentials() {
    let r = ProxyRules::with_no_proxy(Some("http://alice:s3cret@proxy.example:3128"), "").unwrap();
    let route = r.route(&url("wss://platform.example/ws")).unwrap();
    assert_eq!(route.display(), "http://proxy.example:3128");
    assert!(!format!("{route:?}").contains("s3cret"));
    assert!(!format!("{r:?}").contains("s3cret"));
    assert_eq!(
        route.credentials(),
        Some(("alice".to_owned(), "s3cret".to_owned()))
    );
    assert!(r.route(&url("http://platform.example/")).is_some());
}

#[test]
fn no_proxy_suffix_cidr_and_port_rules() {
    let no = "internal.example, 10.0.0.0/8, platform.example:8443, [::1]:9000";
    let r = ProxyRules::with_no_proxy(Some("http://proxy.example:3128"), no).unwrap();
    assert!(
        r.route(&url("wss://a.internal.example/")).is_none(),
        "suffix"
    );
    assert!(r.route(&url("wss://internal.example/")).is_none(), "exact");
    assert!(r.route(&url("wss://notinternal.example/")).is_some());
    assert!(r.route(&url("wss://10.2.3.4/")).is_none(), "CIDR");
    assert!(r.route(&url("wss://11.2.3.4/")).is_some());
    assert!(
        r.route(&url("wss://platform.example:8443/")).is_none(),
        "port"
    );
    assert!(
        r.route(&url("wss://platform.example/")).is_some(),
        "other port"
    );
    assert!(r.route(&url("ws://[::1]:9000/")).is_none(), "v6 port");
    assert!(r.route(&url("ws://[::1]:9001/")).is_some());
}

#[test]
fn none_turns_proxies_off_and_bad_settings_are_refused_without_credentials() {
    let r = ProxyRules::with_no_proxy(Some("none"), "").unwrap();
    assert!(r.route(&url("wss://platform.example/")).is_none());
    let e = ProxyRules::with_no_proxy(Some("ftp://bob:hunter2@proxy:21"), "").unwrap_err();
    assert!(matches!(e, NetError::BadProxy(_)));
    assert!(!e.to_string().contains("hunter2"), "{e}");
    let e = ProxyRules::with_no_proxy(Some("not a url bob:hunter2@x"), "").unwrap_err();
    assert!(!e.to_string().contains("hunter2"), "{e}");
}

#[test]
fn socks_routes_keep_their_scheme_and_credentials() {
    let r = ProxyRules::with_no_proxy(Some("socks5h://u:p@127.0.0.1:1080"), "").unwrap();
    let route = r.route(&url("wss://platform.example/")).unwrap();
    assert!(route.is_socks());
    assert_eq!(route.display(), "socks5h://127.0.0.1:1080");
    assert_eq!(route.credentials(), Some(("u".to_owned(), "p".to_owned())));
    let with = route.url_with_credentials().unwrap();
    assert_eq!(with.password(), Some("p"));
}

#[test]
fn redact_hides_user_information() {
    assert_eq!(redact("http://a:b@h:1"), "http://***@h:1/");
    assert_eq!(redact("http://h:1"), "http://h:1/");
}

#[test]
fn a_bad_ca_file_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ca.pem");
    std::fs::write(&p, "not pem").unwrap();
    let e = Net::new(&NetOptions {
        tls_ca_file: Some(p.clone()),
        proxy: None,
    })
    .unwrap_err();
    assert!(matches!(e, NetError::CaFile { .. }), "{e}");
    let e = Net::new(&NetOptions {
        tls_ca_file: Some(dir.path().join("missing.pem")),
        proxy: None,
    })
    .unwrap_err();
    assert!(matches!(e, NetError::CaFile { .. }), "{e}");
}

#[tokio::test]
async fn troubles_tell_no_network_from_a_refused_connection() {
    let net = Net::new(&NetOptions {
        tls_ca_file: None,
        proxy: Some("none".into()),
    })
    .unwrap();
    // `.invalid` never resolves (RFC 6761): what a machine without network sees.
    let e = net
        .connect(&url("wss://platform.invalid:443/ws"))
        .await
        .unwrap_err();
    assert!(matches!(e, NetError::Resolve { .. }), "{e}");
    assert_eq!(e.trouble(), Trouble::NoNetwork);
    assert!(e.to_string().contains("platform.invalid"), "{e}");

    // A port nobody listens on: reachable network, refused connection.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let e = net
        .connect(&url(&format!("ws://127.0.0.1:{port}/ws")))
        .await
        .unwrap_err();
    assert!(matches!(e, NetError::Connect { .. }), "{e}");
    assert_eq!(e.trouble(), Trouble::Unreachable);

    // A dead proxy is the proxy's trouble; a bad setting is a setting's.
    let net = Net::new(&NetOptions {
        tls_ca_file: None,
        proxy: Some(format!("http://127.0.0.1:{port}")),
    })
    .unwrap();
    let e = net
        .connect(&url("wss://platform.example/ws"))
        .await
        .unwrap_err();
    assert_eq!(e.trouble(), Trouble::Proxy, "{e}");
    assert_eq!(Trouble::NoNetwork.as_str(), "no_network");
    assert_eq!(NetError::BadProxy("x".into()).trouble(), Trouble::Settings);
}
