//! The platform's HELLO field rules (sections 5.1, 5.2) as the daemon and the test peer
//! use them.

use shim_protocol::Capability;
use shim_protocol::hello_rules::Route;
use shim_protocol::hello_rules::validate;
use shim_protocol::messages::handshake::Arch;
use shim_protocol::messages::handshake::Hello;
use shim_protocol::messages::handshake::Platform;

fn hello() -> Hello {
    Hello {
        shim_version: "0.2.0".into(),
        machine_id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301".into(),
        display_name: "ada-laptop".into(),
        platform: Platform::Linux,
        arch: Arch::X86_64,
        screen_resolution: None,
        capabilities: vec![Capability::Files, Capability::DirectoryBrowse],
        allowed_root: None,
        local_llm_models: vec![],
        hardware_devices: vec![],
        computer_use_features: vec![],
        computer_use_features_coarse: vec![],
        recording_channels: vec![],
        recording_routes: vec![],
        protocol_version: "1.1".into(),
    }
}

fn field_of(h: &Hello, route: Route) -> &'static str {
    validate(h, route).unwrap_err().field
}

#[test]
fn a_valid_hello_passes_on_both_routes() {
    assert!(validate(&hello(), Route::Control).is_ok());
    let mut h = hello();
    h.allowed_root = Some("/home/ada/Projects".into());
    assert!(validate(&h, Route::Data).is_ok());
    h.shim_version = String::new();
    assert!(
        validate(&h, Route::Data).is_ok(),
        "an empty shim_version is allowed"
    );
}

#[test]
fn each_field_rule_is_enforced() {
    type Mutation = Box<dyn Fn(&mut Hello)>;
    let cases: Vec<(&str, Mutation)> = vec![
        ("shim_version", Box::new(|h| h.shim_version = "-0.2".into())),
        (
            "shim_version",
            Box::new(|h| h.shim_version = "1".repeat(65)),
        ),
        (
            "shim_version",
            Box::new(|h| h.shim_version = "0.2<b>".into()),
        ),
        ("machine_id", Box::new(|h| h.machine_id = String::new())),
        (
            "machine_id",
            Box::new(|h| h.machine_id = "host_name-1".replace('-', "/")),
        ),
        ("machine_id", Box::new(|h| h.machine_id = "a".repeat(129))),
        (
            "display_name",
            Box::new(|h| h.display_name = "a".repeat(129)),
        ),
        (
            "display_name",
            Box::new(|h| h.display_name = "<script>".into()),
        ),
        (
            "display_name",
            Box::new(|h| h.display_name = "tab\there".into()),
        ),
        (
            "display_name",
            Box::new(|h| h.display_name = "zero\u{200b}width".into()),
        ),
        (
            "display_name",
            Box::new(|h| h.display_name = "line\u{2028}sep".into()),
        ),
        (
            "allowed_root",
            Box::new(|h| h.allowed_root = Some("/home".into())),
        ),
        (
            "computer_use_features",
            Box::new(|h| h.computer_use_features = vec![" screenshot.capture".into()]),
        ),
        (
            "computer_use_features",
            Box::new(|h| h.computer_use_features = vec!["x".repeat(129)]),
        ),
        (
            "computer_use_features",
            Box::new(|h| h.computer_use_features = vec!["a".into(); 129]),
        ),
        (
            "computer_use_features_coarse",
            Box::new(|h| h.computer_use_features_coarse = vec!["<b>".into()]),
        ),
        (
            "recording_channels",
            Box::new(|h| h.recording_channels = vec!["microphone".into()]),
        ),
        (
            "recording_routes",
            Box::new(|h| h.recording_routes = vec!["upload_everything".into()]),
        ),
        (
            "protocol_version",
            Box::new(|h| h.protocol_version = "v1.1".into()),
        ),
    ];
    for (field, mutate) in cases {
        let mut h = hello();
        mutate(&mut h);
        assert_eq!(field_of(&h, Route::Control), field);
    }
}

#[test]
fn data_routes_need_a_clean_allowed_root() {
    let mut h = hello();
    assert_eq!(field_of(&h, Route::Data), "allowed_root");
    for bad in ["", "   ", "/home/<ada>", "/home/a\u{7}"] {
        h.allowed_root = Some(bad.into());
        assert_eq!(field_of(&h, Route::Data), "allowed_root", "{bad:?}");
    }
    h.allowed_root = Some(format!("/{}", "a".repeat(4096)));
    assert_eq!(field_of(&h, Route::Data), "allowed_root");
}
