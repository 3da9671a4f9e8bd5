use super::*;

#[test]
fn the_per_protocol_form_gives_the_http_and_https_proxies() {
    assert_eq!(
        PerProtocol::parse("http=proxy.corp:8080;https=secure.corp:8443;ftp=ftp.corp:21"),
        Some(PerProtocol {
            http: Some("http://proxy.corp:8080".to_owned()),
            https: Some("http://secure.corp:8443".to_owned()),
        })
    );
    assert_eq!(
        PerProtocol::parse(" HTTPS = 10.0.0.1:3128 ; socks=10.0.0.2:1080 ;"),
        Some(PerProtocol {
            http: None,
            https: Some("http://10.0.0.1:3128".to_owned()),
        })
    );
    assert_eq!(
        PerProtocol::parse("https=http://proxy.corp:3128").and_then(|p| p.https),
        Some("http://proxy.corp:3128".to_owned())
    );
}

#[test]
fn the_single_form_is_left_to_hyper_util() {
    assert_eq!(PerProtocol::parse("proxy.corp:8080"), None);
    assert_eq!(PerProtocol::parse(""), None);
}

#[test]
fn the_bypass_list_becomes_no_proxy_entries() {
    assert_eq!(
        bypass_as_no_proxy("*.corp.example;10.*;192.168.1.*;intranet;<local>; "),
        "corp.example,10.0.0.0/8,192.168.1.0/24,intranet"
    );
    assert_eq!(bypass_as_no_proxy("<local>"), "");
}
