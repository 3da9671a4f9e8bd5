//! `autogpt-shim doctor` (AUDIT_AUTH_CLI.md 5.5): the real binary against real credential
//! files, directories and, for the display checks, a real Xvfb with a window manager.

use std::collections::BTreeMap;

use shim_auth::CredentialStore;
use shim_platform_peer::PeerConfig;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::finish;

const SID: &str = "4f6b2d8e-1c3a-4e5f-9a7b-8c9d0e1f2a3b";

/// One report line: marker and detail by label, plus the labels in order.
pub(crate) struct Report {
    code: i32,
    lines: BTreeMap<String, (String, String)>,
    order: Vec<String>,
    raw: String,
}

impl Report {
    /// Whether a line with `label` was printed.
    #[cfg_attr(not(windows), allow(dead_code))]
    pub(crate) fn has(&self, label: &str) -> bool {
        self.lines.contains_key(label)
    }

    pub(crate) fn get(&self, label: &str) -> (&str, &str) {
        let (m, d) = self
            .lines
            .get(label)
            .unwrap_or_else(|| panic!("no {label} line in:\n{}", self.raw));
        (m.as_str(), d.as_str())
    }

    /// Everything the command printed (stdout, then stderr).
    #[cfg_attr(not(unix), allow(dead_code))]
    pub(crate) fn raw(&self) -> &str {
        &self.raw
    }

    fn marker(&self, label: &str) -> &str {
        self.get(label).0
    }
}

/// Runs `autogpt-shim GLOBAL... doctor` with `vars` and parses its report.
pub(crate) async fn doctor(env: &Env, global: &[&str], vars: &[(&str, &str)]) -> Report {
    let mut args = global.to_vec();
    args.push("doctor");
    let mut c = env.command(&args);
    c.envs(vars.iter().copied());
    let (code, out, err) = finish(c.spawn().unwrap(), T).await;
    let mut lines = BTreeMap::new();
    let mut order = Vec::new();
    for l in out.lines() {
        // `[<MARKER padded to 4>] <label padded>  <detail>`
        assert!(l.starts_with('[') && &l[5..7] == "] ", "bad line {l:?}");
        let marker = l[1..5].trim_end().to_owned();
        let (label, detail) = l[7..].split_once("  ").unwrap();
        order.push(label.trim_end().to_owned());
        lines.insert(
            label.trim_end().to_owned(),
            (marker, detail.trim_start().to_owned()),
        );
    }
    Report {
        code,
        lines,
        order,
        raw: format!("{out}\n--- stderr\n{err}"),
    }
}

#[tokio::test]
async fn legacy_mode_with_everything_in_place_passes_and_creates_the_root() {
    let env = Env::new(PeerConfig::default()).await;
    let root = env.root.join("not-yet");
    let r = doctor(
        &env,
        &[
            "--allowed-root",
            root.to_str().unwrap(),
            "--session-id",
            SID,
        ],
        &[],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.raw);
    // The checks, in the order of 5.5 (no display server in this environment).
    assert_eq!(
        r.order,
        [
            "allowed_root",
            "keychain",
            "audit_log",
            "audit_key",
            "credentials",
            "trust_store",
            "proxy",
            "recording",
            "local_llm",
            "hardware",
            "shell_sandbox",
            "shell_network",
            "display_server",
            "window_list",
            "display",
            "isolated_display"
        ],
        "{}",
        r.raw
    );
    assert_eq!(
        r.get("allowed_root"),
        (
            "OK",
            format!("{} exists, writable", root.display()).as_str()
        )
    );
    assert!(root.is_dir());
    assert_eq!(r.get("keychain"), ("INFO", "file backend selected"));
    assert_eq!(r.marker("audit_log"), "OK");
    assert_eq!(r.get("audit_key"), ("OK", "present and valid"));
    assert_eq!(r.marker("credentials"), "OK");
    assert_eq!(r.get("recording"), ("OK", "not enabled"));
    // The command sandbox: this kernel has Landlock and user namespaces (issue 14).
    let (m, d) = r.get("shell_sandbox");
    assert_eq!(m, "OK", "{}", r.raw);
    assert!(d.starts_with("workspace-write via landlock ABI "), "{d}");
    let (m, d) = r.get("shell_network");
    assert_eq!(m, "INFO", "{}", r.raw);
    assert!(
        d.starts_with("allow; deny uses a fresh user and network namespace"),
        "{d}"
    );
    assert_eq!(
        r.get("display_server"),
        ("WARN", "unknown session type (none)")
    );
    assert_eq!(r.get("display"), ("WARN", "no displays detected"));
    // Read-only for the credential store: nothing was created or changed.
    assert!(!env.audit_log().exists() || std::fs::read(env.audit_log()).unwrap().is_empty());
}

#[tokio::test]
async fn the_sandbox_lines_follow_the_settings() {
    let env = Env::new(PeerConfig::default()).await;
    let r = doctor(
        &env,
        &["--allowed-root", env.root_str(), "--session-id", SID],
        &[
            ("AUTOGPT_SHIM_SHELL_SANDBOX", "off"),
            ("AUTOGPT_SHIM_SHELL_NETWORK", "deny"),
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.raw);
    let (m, d) = r.get("shell_sandbox");
    assert_eq!(m, "WARN");
    assert!(
        d.starts_with("off by setting: commands are not confined"),
        "{d}"
    );
    let (m, d) = r.get("shell_network");
    assert_eq!(m, "OK");
    assert!(d.starts_with("deny via network-namespace+seccomp"), "{d}");
    // A value that is not one of the three is a configuration error (exit 78).
    let r = doctor(
        &env,
        &["--allowed-root", env.root_str(), "--session-id", SID],
        &[("AUTOGPT_SHIM_SHELL_SANDBOX", "strict")],
    )
    .await;
    assert_eq!(r.code, 78, "{}", r.raw);
}

#[tokio::test]
async fn control_mode_without_tokens_warns_and_never_creates_the_default_root() {
    let env = Env::with_tokens(PeerConfig::default(), false).await;
    let r = doctor(&env, &[], &[]).await;
    assert_eq!(r.code, 0, "{}", r.raw);
    assert_eq!(r.order[0], "folder_browser");
    // The home folder; on Windows the drives too (PROTOCOL.md 9.2), e.g. C: and Z: under Wine;
    // on macOS the mounted volumes under /Volumes.
    let (m, d) = r.get("folder_browser");
    assert_eq!(m, "OK");
    let roots: usize = d
        .strip_suffix(" accessible host root(s)")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{d}"));
    if cfg!(any(windows, target_os = "macos")) {
        assert!(roots >= 1, "{d}");
    } else {
        assert_eq!(roots, 1, "{d}");
    }
    assert_eq!(r.get("credentials"), ("WARN", "run autogpt-shim auth"));
    let home = env.dir.path().join("home");
    assert_eq!(std::fs::read_dir(&home).unwrap().count(), 0, "{}", r.raw);
}

#[tokio::test]
async fn each_blocking_problem_exits_78() {
    let env = Env::new(PeerConfig::default()).await;
    let legacy = ["--session-id", SID];

    let r = doctor(&env, &legacy, &[("AUTOGPT_SHIM_ENABLE_RECORDING", "true")]).await;
    assert_eq!(r.code, 78, "{}", r.raw);
    assert_eq!(r.marker("recording"), "FAIL");

    // An audit log whose directory would have to be inside a regular file.
    let file = env.dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let bad = file.join("audit.log");
    let r = doctor(
        &env,
        &legacy,
        &[("AUTOGPT_SHIM_AUDIT_LOG_PATH", bad.to_str().unwrap())],
    )
    .await;
    assert_eq!(r.code, 78, "{}", r.raw);
    assert_eq!(r.marker("audit_log"), "FAIL");

    // Computer use asked for in a Wayland session: start could not offer it.
    let r = doctor(
        &env,
        &legacy,
        &[
            ("AUTOGPT_SHIM_ENABLE_COMPUTER_USE", "true"),
            ("XDG_SESSION_TYPE", "wayland"),
        ],
    )
    .await;
    assert_eq!(r.code, 78, "{}", r.raw);
    assert_eq!(r.marker("display_server"), "WARN");
    // Without computer use the same session is only a warning.
    let r = doctor(&env, &legacy, &[("XDG_SESSION_TYPE", "wayland")]).await;
    assert_eq!(r.code, 0, "{}", r.raw);

    // A corrupt audit key is reported, never replaced (H-6).
    let store = shim_auth::EncryptedFileStore::with_params(
        &env.dir.path().join("creds"),
        shim_auth::Secret::new(crate::suite::harness::PASSPHRASE),
        shim_auth::KdfParams::MIN_ACCEPTED,
    )
    .unwrap();
    store
        .set(
            shim_auth::account::AUDIT_KEY,
            &shim_auth::Secret::new("not-hex"),
        )
        .unwrap();
    let r = doctor(&env, &legacy, &[]).await;
    assert_eq!(r.code, 78, "{}", r.raw);
    assert_eq!(r.marker("audit_key"), "FAIL");
    assert_eq!(
        store
            .get(shim_auth::account::AUDIT_KEY)
            .unwrap()
            .unwrap()
            .expose(),
        "not-hex"
    );

    // The OS keychain demanded where none answers (no session bus here).
    let r = doctor(
        &env,
        &legacy,
        &[("AUTOGPT_SHIM_CREDENTIAL_STORE", "keychain")],
    )
    .await;
    assert_eq!(r.code, 78, "{}", r.raw);
    assert_eq!(r.marker("keychain"), "FAIL");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn an_x11_desktop_is_enumerated() {
    let x = shim_cu::testing::Xvfb::start(1024, 768);
    x.openbox();
    let env = Env::new(PeerConfig::default()).await;
    let r = doctor(
        &env,
        &["--session-id", SID],
        &[
            ("DISPLAY", x.display.as_str()),
            ("AUTOGPT_SHIM_ENABLE_COMPUTER_USE", "true"),
            ("AUTOGPT_SHIM_ENABLE_CLIPBOARD", "true"),
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.raw);
    assert_eq!(r.get("display_server"), ("OK", "x11"));
    assert_eq!(r.marker("window_list"), "OK", "{}", r.raw);
    assert_eq!(r.get("clipboard"), ("OK", "X11 selections (built in)"));
    assert_eq!(r.get("display"), ("OK", "1 display(s): 1024x768"));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_isolated_display_line_names_its_x_server() {
    let env = Env::new(PeerConfig::default()).await;
    let legacy = ["--allowed-root", env.root_str(), "--session-id", SID];
    let r = doctor(&env, &legacy, &[]).await;
    assert_eq!(r.marker("isolated_display"), "INFO");
    assert!(r.get("isolated_display").1.starts_with("off"), "{}", r.raw);

    let iso = ("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "isolated");
    // No user desktop: Xvfb.
    let r = doctor(&env, &legacy, &[iso]).await;
    assert_eq!(r.code, 0, "{}", r.raw);
    let (m, d) = r.get("isolated_display");
    assert_eq!(m, "OK", "{}", r.raw);
    assert!(
        d.starts_with("Xvfb (") && d.contains("1280x800 with openbox"),
        "{d}"
    );
    // A reachable user desktop: Xephyr, shown on it.
    let x = shim_cu::testing::Xvfb::start(640, 480);
    let r = doctor(&env, &legacy, &[iso, ("DISPLAY", x.display.as_str())]).await;
    let (m, d) = r.get("isolated_display");
    assert_eq!(m, "OK", "{}", r.raw);
    assert!(d.starts_with("Xephyr ("), "{d}");
    assert!(
        d.ends_with(&format!("shown as a window on {}", x.display)),
        "{d}"
    );
    // Nothing to start it with: named, with the package.
    let bin = env.dir.path().join("bin-no-x");
    std::fs::create_dir_all(&bin).unwrap();
    let r = doctor(&env, &legacy, &[iso, ("PATH", bin.to_str().unwrap())]).await;
    let (m, d) = r.get("isolated_display");
    assert_eq!(m, "WARN", "{}", r.raw);
    assert!(d.starts_with("openbox is not installed"), "{d}");
}

#[tokio::test]
async fn local_model_and_hardware_state_are_reported() {
    let env = Env::new(PeerConfig::default()).await;
    let legacy = ["--allowed-root", env.root_str(), "--session-id", SID];
    let r = doctor(&env, &legacy, &[]).await;
    assert_eq!(r.get("local_llm"), ("INFO", "not enabled"));
    assert_eq!(r.get("hardware"), ("INFO", "not enabled"));

    let ollama = shim_platform_peer::ollama::FakeOllama::start(
        shim_platform_peer::ollama::Tags::Models(vec!["llama3:8b".into()]),
        shim_platform_peer::ollama::Chat::Hang,
    )
    .await
    .unwrap();
    let url = ollama.url();
    let dir = tempfile::tempdir().unwrap();
    let dev = dir.path().join("dev");
    std::fs::create_dir_all(&dev).unwrap();
    let double = serde_json::json!({
        "double": shim_hw::gpio::DOUBLE_MAGIC, "label": "gpio-sim", "lines": 8,
    });
    std::fs::write(dev.join("gpiochip0"), double.to_string()).unwrap();
    let vars = [
        ("AUTOGPT_SHIM_ENABLE_LOCAL_LLM", "true"),
        ("AUTOGPT_SHIM_OLLAMA_URL", url.as_str()),
        ("AUTOGPT_SHIM_ENABLE_HARDWARE", "true"),
        ("AUTOGPT_SHIM_HARDWARE_DEVFS_ROOT", dev.to_str().unwrap()),
        (
            "AUTOGPT_SHIM_HARDWARE_SYSFS_ROOT",
            dir.path().to_str().unwrap(),
        ),
    ];
    let r = doctor(&env, &legacy, &vars).await;
    assert_eq!(r.code, 0, "{}", r.raw);
    let (m, detail) = r.get("local_llm");
    assert_eq!(m, "OK");
    assert!(detail.contains("offers 1 model(s): llama3:8b"), "{detail}");
    let (m, detail) = r.get("hardware");
    assert_eq!(m, "OK");
    assert!(
        detail.contains("hardware_serial, hardware_usb, hardware_gpio")
            && detail.contains("0 serial, 0 USB (listed by sysfs tree), 1 GPIO chip(s)")
            && detail.contains("protocol none"),
        "{detail}"
    );
    // An Ollama that is not there: a warning, not a failure.
    drop(ollama);
    let r = doctor(&env, &legacy, &vars).await;
    assert_eq!(r.code, 0, "{}", r.raw);
    assert_eq!(r.marker("local_llm"), "WARN");
}
