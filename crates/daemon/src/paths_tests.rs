#![allow(clippy::unwrap_used)]

use super::*;

fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |k| {
        vars.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| (*v).to_owned())
    }
}

fn s(p: Option<PathBuf>) -> String {
    p.unwrap().to_string_lossy().into_owned()
}

#[test]
fn macos_defaults() {
    let os = Os::MacOs;
    let e = env_of(&[("HOME", "/Users/ada"), ("XDG_CONFIG_HOME", "/ignored")]);
    let home = home(os, &e);
    let h = home.as_deref();
    assert_eq!(s(home.clone()), "/Users/ada");
    assert_eq!(
        s(config_file(os, h, &e)),
        "/Users/ada/Library/Application Support/autogpt-local-executor/config.toml"
    );
    assert_eq!(
        s(audit_log(os, h, &e)),
        "/Users/ada/Library/Logs/autogpt-local-executor/audit.log"
    );
    assert_eq!(
        s(log_dir(os, h, &e)),
        "/Users/ada/Library/Logs/autogpt-local-executor"
    );
    assert_eq!(
        s(credential_dir(os, h, &e)),
        "/Users/ada/Library/Application Support/autogpt-local-executor"
    );
    assert_eq!(
        s(service_file(os, h, &e)),
        "/Users/ada/Library/LaunchAgents/net.autogpt.shim.plist"
    );
    assert_eq!(
        default_allowed_root(os, h.unwrap()).to_string_lossy(),
        "/Users/ada/Documents/autogpt-workspace"
    );
}

#[test]
fn linux_defaults_and_xdg_overrides() {
    let os = Os::Linux;
    let e = env_of(&[("HOME", "/home/ada")]);
    let h = home(os, &e);
    let h = h.as_deref();
    assert_eq!(
        s(config_file(os, h, &e)),
        "/home/ada/.config/autogpt-local-executor/config.toml"
    );
    assert_eq!(
        s(audit_log(os, h, &e)),
        "/home/ada/.local/state/autogpt-local-executor/audit.log"
    );
    assert_eq!(
        s(credential_dir(os, h, &e)),
        "/home/ada/.local/state/autogpt-local-executor"
    );
    assert_eq!(
        s(service_file(os, h, &e)),
        "/home/ada/.config/systemd/user/autogpt-shim.service"
    );
    assert_eq!(
        default_allowed_root(os, h.unwrap()).to_string_lossy(),
        "/home/ada/autogpt-workspace"
    );
    assert_eq!(
        machine_id_file(os, h.unwrap()).to_string_lossy(),
        "/home/ada/.autogpt-local-executor-machine-id"
    );

    let e = env_of(&[
        ("HOME", "/home/ada"),
        ("XDG_CONFIG_HOME", "/cfg"),
        ("XDG_STATE_HOME", "/st"),
        ("AUTOGPT_SHIM_FALLBACK_DIR", "/secret"),
    ]);
    let h = Some(Path::new("/home/ada"));
    assert_eq!(
        s(config_file(os, h, &e)),
        "/cfg/autogpt-local-executor/config.toml"
    );
    assert_eq!(
        s(audit_log(os, h, &e)),
        "/st/autogpt-local-executor/audit.log"
    );
    assert_eq!(s(credential_dir(os, h, &e)), "/secret");
    assert_eq!(
        s(service_file(os, h, &e)),
        "/cfg/systemd/user/autogpt-shim.service"
    );
}

#[test]
fn linux_ignores_empty_and_relative_xdg_values() {
    let os = Os::Linux;
    let e = env_of(&[
        ("HOME", "/home/ada"),
        ("XDG_CONFIG_HOME", ""),
        ("XDG_STATE_HOME", "relative/state"),
        ("AUTOGPT_SHIM_FALLBACK_DIR", ""),
    ]);
    let h = Some(Path::new("/home/ada"));
    assert_eq!(
        s(config_file(os, h, &e)),
        "/home/ada/.config/autogpt-local-executor/config.toml"
    );
    assert_eq!(
        s(audit_log(os, h, &e)),
        "/home/ada/.local/state/autogpt-local-executor/audit.log"
    );
    assert_eq!(
        s(credential_dir(os, h, &e)),
        "/home/ada/.local/state/autogpt-local-executor"
    );
    assert_eq!(home(os, &env_of(&[("HOME", "")])), None);
    assert_eq!(config_file(os, None, &env_of(&[])), None);
}

#[test]
fn windows_defaults() {
    let os = Os::Windows;
    let e = env_of(&[
        ("USERPROFILE", r"C:\Users\Zoë Müller"),
        ("HOME", "/ignored"),
    ]);
    let h = home(os, &e);
    let h = h.as_deref();
    assert_eq!(s(h.map(Path::to_path_buf)), r"C:\Users\Zoë Müller");
    assert_eq!(
        s(config_file(os, h, &e)),
        r"C:\Users\Zoë Müller\AppData\Roaming\autogpt-local-executor\config.toml"
    );
    assert_eq!(
        s(audit_log(os, h, &e)),
        r"C:\Users\Zoë Müller\AppData\Local\autogpt-local-executor\logs\audit.log"
    );
    assert_eq!(
        s(log_dir(os, h, &e)),
        r"C:\Users\Zoë Müller\AppData\Local\autogpt-local-executor\logs"
    );
    assert_eq!(
        s(credential_dir(os, h, &e)),
        r"C:\Users\Zoë Müller\AppData\Local\autogpt-local-executor"
    );
    assert_eq!(
        s(service_file(os, h, &e)),
        r"C:\Users\Zoë Müller\AppData\Local\autogpt-local-executor\autogpt-shim.xml"
    );
    assert_eq!(
        default_allowed_root(os, h.unwrap()).to_string_lossy(),
        r"C:\Users\Zoë Müller\autogpt-workspace"
    );
}

#[test]
fn windows_appdata_and_homedrive_fallback() {
    let os = Os::Windows;
    let e = env_of(&[
        ("USERPROFILE", ""),
        ("HOMEDRIVE", "D:"),
        ("HOMEPATH", r"\Users\ada"),
        ("APPDATA", r"E:\Roaming"),
        ("LOCALAPPDATA", r"F:\Local\"),
    ]);
    let h = home(os, &e);
    assert_eq!(s(h.clone()), r"D:\Users\ada");
    let h = h.as_deref();
    assert_eq!(
        s(config_file(os, h, &e)),
        r"E:\Roaming\autogpt-local-executor\config.toml"
    );
    // A trailing separator on the variable is not doubled.
    assert_eq!(
        s(audit_log(os, h, &e)),
        r"F:\Local\autogpt-local-executor\logs\audit.log"
    );
    assert_eq!(
        home(os, &env_of(&[("HOMEDRIVE", "D:")])),
        None,
        "HOMEDRIVE without HOMEPATH is no home"
    );
}

#[test]
fn platforms_map_to_path_rules() {
    assert_eq!(Os::of(Platform::Darwin), Os::MacOs);
    assert_eq!(Os::of(Platform::Linux), Os::Linux);
    assert_eq!(Os::of(Platform::Wsl2), Os::Linux);
    assert_eq!(Os::of(Platform::Windows), Os::Windows);
}
