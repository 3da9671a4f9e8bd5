#![allow(clippy::unwrap_used)]

use super::*;

fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |k| {
        vars.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| (*v).to_owned())
    }
}

/// Values with spaces, both quote kinds, XML specials, `%`, backslashes and non-ASCII.
fn awkward() -> Substitutions {
    Substitutions {
        program: PathBuf::from(r#"/Applications/Zoë's "AutoGPT" & <co>/bin\x%y/autogpt-shim"#),
        config: PathBuf::from(
            r#"/Users/zoë/Library/Application Support/a&b <c> "d" 100%/config.toml"#,
        ),
        out_log: PathBuf::from("/Users/zoë/Library/Logs/日本 & co/shim.out.log"),
        err_log: PathBuf::from("/Users/zoë/Library/Logs/日本 & co/shim.err.log"),
    }
}

#[test]
fn linux_paths_and_commands() {
    let e = env_of(&[]);
    let a = for_platform(Platform::Linux, Path::new("/home/ada"), &e).unwrap();
    assert_eq!(
        a.file,
        PathBuf::from("/home/ada/.config/systemd/user/autogpt-shim.service")
    );
    assert_eq!(
        a.log_dir,
        PathBuf::from("/home/ada/.local/state/autogpt-local-executor")
    );
    assert_eq!(
        a.enable,
        "systemctl --user enable --now autogpt-shim.service"
    );
    assert!(a.notes.iter().any(|n| n.contains("daemon-reload")));
    assert!(a.notes.iter().any(|n| n.contains("enable-linger")));
    let e = env_of(&[("XDG_CONFIG_HOME", "/x")]);
    let w = for_platform(Platform::Wsl2, Path::new("/h"), &e).unwrap();
    assert_eq!(
        w.file,
        PathBuf::from("/x/systemd/user/autogpt-shim.service")
    );
    assert!(w.notes.iter().any(|n| n.contains("enable-linger")));
}

#[test]
fn macos_paths_and_commands() {
    let e = env_of(&[]);
    let a = for_platform(Platform::Darwin, Path::new("/Users/Zoë M"), &e).unwrap();
    assert_eq!(
        a.file,
        PathBuf::from("/Users/Zoë M/Library/LaunchAgents/net.autogpt.shim.plist")
    );
    assert_eq!(
        a.log_dir,
        PathBuf::from("/Users/Zoë M/Library/Logs/autogpt-local-executor")
    );
    assert_eq!(
        a.enable,
        "launchctl load '/Users/Zoë M/Library/LaunchAgents/net.autogpt.shim.plist'"
    );
    assert_eq!(
        a.disable,
        "launchctl unload '/Users/Zoë M/Library/LaunchAgents/net.autogpt.shim.plist'"
    );
    assert!(a.notes.iter().any(|n| n.contains("failure exit")));
}

#[test]
fn windows_paths_and_commands() {
    let e = env_of(&[("LOCALAPPDATA", r"C:\Users\Zoë M\AppData\Local")]);
    let a = for_platform(Platform::Windows, Path::new(r"C:\Users\Zoë M"), &e).unwrap();
    let file = r"C:\Users\Zoë M\AppData\Local\autogpt-local-executor\autogpt-shim.xml";
    assert_eq!(a.file.to_string_lossy(), file);
    assert_eq!(
        a.log_dir.to_string_lossy(),
        r"C:\Users\Zoë M\AppData\Local\autogpt-local-executor\logs"
    );
    assert_eq!(
        a.enable,
        format!(r#"schtasks /Create /TN "\AutoGPT\Shim" /XML "{file}""#)
    );
    assert_eq!(a.disable, r#"schtasks /Delete /TN "\AutoGPT\Shim" /F"#);
    assert!(a.notes.iter().any(|n| n.contains("elevated")));
}

#[test]
fn unit_escapes_substituted_values() {
    let unit = systemd_unit(
        Path::new("/opt/my \"shim\"/bin\\x%y"),
        Path::new("/c/config%.toml"),
        Path::new("/l/out%.log"),
        Path::new("/l/err.log"),
    );
    assert!(
        unit.contains(
            r#"ExecStart="/opt/my \"shim\"/bin\\x%%y" --config "/c/config%%.toml" start"#
        )
    );
    assert!(unit.contains("StandardOutput=append:/l/out%%.log\n"));
    assert!(unit.contains("RestartPreventExitStatus=77 78\n"));
    assert!(unit.contains("Restart=on-failure\n"));
    assert!(unit.contains("WantedBy=default.target\n"));
}

/// A double for macOS: launchd cannot run here, so the generated plist is read back by the
/// `plist` crate's XML parser (what `launchctl` reads is the same XML plist 1.0) and every
/// value must come back exactly, awkward paths included.
#[test]
fn launchd_double_the_plist_parses_back_to_the_exact_values() {
    let s = awkward();
    let bytes = definition(Platform::Darwin, &s).unwrap();
    let v: plist::Value = plist::Value::from_reader_xml(&bytes[..]).unwrap();
    let d = v.as_dictionary().unwrap();
    assert_eq!(d["Label"].as_string(), Some("net.autogpt.shim"));
    let args: Vec<&str> = d["ProgramArguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_string().unwrap())
        .collect();
    assert_eq!(
        args,
        [
            s.program.to_str().unwrap(),
            "--config",
            s.config.to_str().unwrap(),
            "start"
        ]
    );
    assert_eq!(d["RunAtLoad"].as_boolean(), Some(true));
    // Restart only after a failure exit: an orderly exit 0 is not relaunched.
    let keep = d["KeepAlive"].as_dictionary().unwrap();
    assert_eq!(keep.len(), 1);
    assert_eq!(keep["SuccessfulExit"].as_boolean(), Some(false));
    assert_eq!(d["ThrottleInterval"].as_signed_integer(), Some(30));
    assert_eq!(d["ProcessType"].as_string(), Some("Background"));
    assert_eq!(d["StandardOutPath"].as_string(), s.out_log.to_str());
    assert_eq!(d["StandardErrorPath"].as_string(), s.err_log.to_str());
    assert_eq!(d.len(), 8, "no key beyond those of 5.4");
}

/// Decodes a UTF-16LE file with a BOM, failing on anything else.
fn utf16_file(bytes: &[u8]) -> String {
    assert_eq!(&bytes[..2], &[0xFF, 0xFE], "UTF-16LE byte-order mark");
    assert_eq!(bytes.len() % 2, 0);
    let units: Vec<u16> = bytes[2..]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16(&units).unwrap()
}

fn text<'a>(doc: &'a roxmltree::Document<'_>, path: &[&str]) -> Vec<&'a str> {
    let mut nodes = vec![doc.root_element()];
    for name in path {
        nodes = nodes
            .iter()
            .flat_map(|n| n.children().filter(|c| c.has_tag_name(*name)))
            .collect();
    }
    nodes.iter().map(|n| n.text().unwrap_or("")).collect()
}

/// Windows's inverse of [`windows_quote_arg`] for one quoted argument (the rules of
/// `CommandLineToArgvW`: 2n backslashes + quote = n backslashes and a delimiter,
/// 2n+1 backslashes + quote = n backslashes and a literal quote).
fn unquote_windows(arg: &str) -> String {
    let inner = arg.strip_prefix('"').unwrap();
    let mut out = String::new();
    let mut backslashes = 0;
    for c in inner.chars() {
        match c {
            '\\' => backslashes += 1,
            '"' if backslashes % 2 == 1 => {
                out.extend(std::iter::repeat_n('\\', backslashes / 2));
                out.push('"');
                backslashes = 0;
            }
            '"' => {
                out.extend(std::iter::repeat_n('\\', backslashes / 2));
                return out;
            }
            c => {
                out.extend(std::iter::repeat_n('\\', backslashes));
                out.push(c);
                backslashes = 0;
            }
        }
    }
    panic!("unterminated argument {arg:?}");
}

#[test]
fn task_xml_is_utf16_and_parses_back_to_the_exact_values() {
    let s = Substitutions {
        program: PathBuf::from(r"C:\Program Files\Zoë & <Co>\autogpt-shim.exe"),
        config: PathBuf::from(r"C:\Users\Zoë M\AppData\Roaming\a&b 日本\config's.toml"),
        out_log: PathBuf::from(r"C:\unused"),
        err_log: PathBuf::from(r"C:\unused"),
    };
    let bytes = definition(Platform::Windows, &s).unwrap();
    let xml = utf16_file(&bytes);
    assert!(xml.starts_with(r#"<?xml version="1.0" encoding="UTF-16"?>"#));
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "Task");
    assert_eq!(root.attribute("version"), Some("1.4"));
    assert_eq!(
        text(&doc, &["Actions", "Exec", "Command"]),
        [s.program.to_str().unwrap()]
    );
    let args = text(&doc, &["Actions", "Exec", "Arguments"]);
    let rest = args[0].strip_prefix("--config ").unwrap();
    let quoted = rest.strip_suffix(" start").unwrap();
    assert_eq!(unquote_windows(quoted), s.config.to_str().unwrap());
    assert_eq!(text(&doc, &["RegistrationInfo", "URI"]), [r"\AutoGPT\Shim"]);
    // One logon trigger, nothing that repeats or relaunches a task whose program exited.
    assert_eq!(
        text(&doc, &["Triggers", "LogonTrigger", "Enabled"]),
        ["true"]
    );
    assert_eq!(
        root.descendants()
            .filter(|n| n.has_tag_name("Repetition"))
            .count(),
        0
    );
    assert_eq!(
        text(&doc, &["Triggers"]).len(),
        1,
        "exactly one Triggers element"
    );
    assert_eq!(
        text(&doc, &["Settings", "RestartOnFailure", "Interval"]),
        ["PT1M"]
    );
    assert_eq!(
        text(&doc, &["Settings", "RestartOnFailure", "Count"]),
        ["3"]
    );
    assert_eq!(
        text(&doc, &["Settings", "MultipleInstancesPolicy"]),
        ["IgnoreNew"]
    );
    assert_eq!(text(&doc, &["Settings", "ExecutionTimeLimit"]), ["PT0S"]);
    assert_eq!(
        text(&doc, &["Principals", "Principal", "LogonType"]),
        ["InteractiveToken"]
    );
    assert_eq!(
        text(&doc, &["Principals", "Principal", "RunLevel"]),
        ["LeastPrivilege"]
    );
}

#[test]
fn windows_arguments_survive_trailing_backslashes_and_quotes() {
    for v in [
        r"C:\plain.toml",
        r"C:\dir with space\",
        r"C:\x\\",
        r#"a"b"#,
        r#"a\"b"#,
        "",
        "日本 ünï",
    ] {
        assert_eq!(unquote_windows(&windows_quote_arg(v)), v, "{v:?}");
    }
}

#[test]
fn control_characters_are_refused_not_written() {
    let mut s = awkward();
    s.config = PathBuf::from("/tmp/a\u{1}b/config.toml");
    let err = definition(Platform::Darwin, &s).unwrap_err();
    assert_eq!(err.what, "config");
    assert!(err.to_string().contains("control character"), "{err}");
    assert!(definition(Platform::Windows, &s).is_err());
    // Tab, newline and carriage return have an XML form and survive.
    s.config = PathBuf::from("/tmp/a\tb\nc\rd");
    let v: plist::Value =
        plist::Value::from_reader_xml(&definition(Platform::Darwin, &s).unwrap()[..]).unwrap();
    let args = v.as_dictionary().unwrap()["ProgramArguments"].clone();
    assert_eq!(
        args.as_array().unwrap()[2].as_string(),
        Some("/tmp/a\tb\nc\rd")
    );
}
