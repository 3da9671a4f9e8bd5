//! Autostart entries (AUDIT_AUTH_CLI.md 5.4) for every supported OS: a launchd agent plist
//! (macOS), a systemd user unit (Linux, WSL2) and a Task Scheduler XML definition (Windows).
//! `install` writes the definition and prints how to activate it; it never runs
//! `launchctl`, `systemctl` or `schtasks` itself. Every substituted value is escaped for its
//! format ([H-20]).
//!
//! Restart rules ([H-21]): none of the three relaunches after a deliberate exit 0 (a revoked
//! session). launchd restarts only after a non-zero exit (`KeepAlive.SuccessfulExit=false`,
//! at most every 30 s); systemd restarts on failure except exits 77 and 78; Task Scheduler's
//! `RestartOnFailure` restarts a task that failed to run (3 tries, a minute apart), not one
//! whose program exited, and a single logon trigger starts it once per logon.

use std::path::Path;
use std::path::PathBuf;

use shim_protocol::messages::handshake::Platform;

use crate::paths;
use crate::paths::Os;

/// The launchd label and the plist's name.
pub const LAUNCHD_LABEL: &str = "net.autogpt.shim";
/// The scheduled task's path.
pub const TASK_NAME: &str = r"\AutoGPT\Shim";

/// Where the entry lives and how the user turns it on and off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Autostart {
    /// The service definition file.
    pub file: PathBuf,
    /// The directory of the service's stdout/stderr logs (`shim.out.log`, `shim.err.log`).
    pub log_dir: PathBuf,
    /// The command that activates it.
    pub enable: String,
    /// The command that deactivates it.
    pub disable: String,
    /// Notes printed after the commands.
    pub notes: Vec<String>,
}

/// The entry for `platform` with `home` and the environment `env` (for `XDG_*` and
/// `%LOCALAPPDATA%`); `None` without a place to put it.
pub fn for_platform(platform: Platform, home: &Path, env: paths::Env<'_>) -> Option<Autostart> {
    let os = Os::of(platform);
    let file = paths::service_file(os, Some(home), env)?;
    let log_dir = paths::log_dir(os, Some(home), env)?;
    let shown = file.to_string_lossy().into_owned();
    let (enable, disable, notes) = match platform {
        Platform::Darwin => (
            format!("launchctl load {}", sh_quote(&shown)),
            format!("launchctl unload {}", sh_quote(&shown)),
            vec!["launchd starts it at login and restarts it after a failure exit".to_owned()],
        ),
        Platform::Windows => (
            format!("schtasks /Create /TN \"{TASK_NAME}\" /XML \"{shown}\""),
            format!("schtasks /Delete /TN \"{TASK_NAME}\" /F"),
            vec![
                "the XML is written but not registered; run the create command from an elevated prompt"
                    .to_owned(),
            ],
        ),
        Platform::Linux | Platform::Wsl2 => {
            let linger = if platform == Platform::Wsl2 {
                "run `loginctl enable-linger $USER` to keep it alive with no WSL shell open"
            } else {
                "run `loginctl enable-linger $USER` to start it without a login session"
            };
            (
                "systemctl --user enable --now autogpt-shim.service".to_owned(),
                "systemctl --user disable --now autogpt-shim.service".to_owned(),
                vec![
                    "run `systemctl --user daemon-reload` first".to_owned(),
                    linger.to_owned(),
                ],
            )
        }
    };
    Some(Autostart {
        file,
        log_dir,
        enable,
        disable,
        notes,
    })
}

/// The values substituted into a definition (5.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Substitutions {
    /// The running executable, absolute, symlinks resolved.
    pub program: PathBuf,
    /// The config file, absolute.
    pub config: PathBuf,
    /// The stdout log.
    pub out_log: PathBuf,
    /// The stderr log.
    pub err_log: PathBuf,
}

/// A value that cannot be written into a definition (a control character has no XML 1.0
/// form): `install` refuses rather than write a file the service manager would reject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {what} path {path:?} contains a control character that {format} cannot hold")]
pub struct Unrepresentable {
    /// Which value.
    pub what: &'static str,
    /// The value.
    pub path: String,
    /// The format.
    pub format: &'static str,
}

/// The bytes of the definition file for `platform`: the plist and the unit as UTF-8, the
/// task XML as UTF-16LE with a byte-order mark ([H-22]).
pub fn definition(platform: Platform, s: &Substitutions) -> Result<Vec<u8>, Unrepresentable> {
    Ok(match platform {
        Platform::Darwin => launchd_plist(s)?.into_bytes(),
        Platform::Windows => utf16le_with_bom(&task_xml(s)?),
        Platform::Linux | Platform::Wsl2 => {
            systemd_unit(&s.program, &s.config, &s.out_log, &s.err_log).into_bytes()
        }
    })
}

/// Quotes a value for a POSIX shell command line shown to the user (single quotes).
fn sh_quote(value: &str) -> String {
    if !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,".contains(c))
    {
        return value.to_owned();
    }
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// Escapes text for XML element content: `&`, `<`, `>` as entities ([H-20]); quotes too, so
/// the text is also safe in an attribute. Control characters other than tab, line feed and
/// carriage return have no XML 1.0 form and are refused.
pub fn xml_escape(
    what: &'static str,
    format: &'static str,
    value: &str,
) -> Result<String, Unrepresentable> {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' => out.push(c),
            // A literal CR would be normalised away by the parser.
            '\r' => out.push_str("&#13;"),
            c if c < ' ' || c == '\u{fffe}' || c == '\u{ffff}' => {
                return Err(Unrepresentable {
                    what,
                    path: value.to_owned(),
                    format,
                });
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Quotes one argument for a Windows command line the way `CommandLineToArgvW` (and the
/// C runtime) reads it back: inside double quotes, backslashes doubled where they precede a
/// quote or the closing quote, quotes escaped.
pub fn windows_quote_arg(value: &str) -> String {
    let mut out = String::from("\"");
    let mut backslashes = 0usize;
    for c in value.chars() {
        match c {
            '\\' => backslashes += 1,
            '"' => {
                out.extend(std::iter::repeat_n('\\', backslashes * 2 + 1));
                out.push('"');
                backslashes = 0;
            }
            c => {
                out.extend(std::iter::repeat_n('\\', backslashes));
                out.push(c);
                backslashes = 0;
            }
        }
    }
    out.extend(std::iter::repeat_n('\\', backslashes * 2));
    out.push('"');
    out
}

/// The launchd agent of 5.4 (XML plist 1.0).
pub fn launchd_plist(s: &Substitutions) -> Result<String, Unrepresentable> {
    let esc = |what, p: &Path| xml_escape(what, "a plist", &p.to_string_lossy());
    Ok(format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>{LAUNCHD_LABEL}</string>
	<key>ProgramArguments</key>
	<array>
		<string>{program}</string>
		<string>--config</string>
		<string>{config}</string>
		<string>start</string>
	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ThrottleInterval</key>
	<integer>30</integer>
	<key>ProcessType</key>
	<string>Background</string>
	<key>StandardOutPath</key>
	<string>{out}</string>
	<key>StandardErrorPath</key>
	<string>{err}</string>
</dict>
</plist>
"#,
        program = esc("program", &s.program)?,
        config = esc("config", &s.config)?,
        out = esc("stdout log", &s.out_log)?,
        err = esc("stderr log", &s.err_log)?,
    ))
}

/// The Task Scheduler definition of 5.4 (task schema 1.4), as text; [`definition`] encodes
/// it as UTF-16LE with a BOM, as its declaration says.
pub fn task_xml(s: &Substitutions) -> Result<String, Unrepresentable> {
    let program = xml_escape("program", "task XML", &s.program.to_string_lossy())?;
    let arguments = format!(
        "--config {} start",
        windows_quote_arg(&s.config.to_string_lossy())
    );
    let arguments = xml_escape("config", "task XML", &arguments)?;
    Ok(format!(
        r#"<?xml version="1.0" encoding="UTF-16"?>
<Task version="1.4" xmlns="http://schemas.microsoft.com/windows/2004/02/mit/task">
  <RegistrationInfo>
    <Description>AutoGPT Local PC Executor shim</Description>
    <URI>{TASK_NAME}</URI>
  </RegistrationInfo>
  <Triggers>
    <LogonTrigger>
      <Enabled>true</Enabled>
    </LogonTrigger>
  </Triggers>
  <Principals>
    <Principal id="Author">
      <LogonType>InteractiveToken</LogonType>
      <RunLevel>LeastPrivilege</RunLevel>
    </Principal>
  </Principals>
  <Settings>
    <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>
    <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>
    <StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>
    <AllowHardTerminate>true</AllowHardTerminate>
    <StartWhenAvailable>true</StartWhenAvailable>
    <RunOnlyIfNetworkAvailable>true</RunOnlyIfNetworkAvailable>
    <IdleSettings>
      <StopOnIdleEnd>false</StopOnIdleEnd>
      <RestartOnIdle>false</RestartOnIdle>
    </IdleSettings>
    <AllowStartOnDemand>true</AllowStartOnDemand>
    <Enabled>true</Enabled>
    <Hidden>false</Hidden>
    <RunOnlyIfIdle>false</RunOnlyIfIdle>
    <WakeToRun>false</WakeToRun>
    <ExecutionTimeLimit>PT0S</ExecutionTimeLimit>
    <Priority>7</Priority>
    <RestartOnFailure>
      <Interval>PT1M</Interval>
      <Count>3</Count>
    </RestartOnFailure>
  </Settings>
  <Actions Context="Author">
    <Exec>
      <Command>{program}</Command>
      <Arguments>{arguments}</Arguments>
    </Exec>
  </Actions>
</Task>
"#
    )
    .replace('\n', "\r\n"))
}

/// `text` as UTF-16LE with a byte-order mark ([H-22]).
pub fn utf16le_with_bom(text: &str) -> Vec<u8> {
    let mut out = vec![0xFF, 0xFE];
    for unit in text.encode_utf16() {
        out.extend_from_slice(&unit.to_le_bytes());
    }
    out
}

/// Quotes a value for `ExecStart=` ([H-20]): inside double quotes, `\` and `"` escaped,
/// `%` doubled.
pub fn systemd_quote(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The systemd user unit of 5.4.
pub fn systemd_unit(program: &Path, config: &Path, out_log: &Path, err_log: &Path) -> String {
    let pct = |p: &Path| p.to_string_lossy().replace('%', "%%");
    format!(
        "[Unit]\nDescription=AutoGPT Local PC Executor shim\nAfter=network-online.target\nWants=network-online.target\n\n\
[Service]\nType=simple\nExecStart={} --config {} start\nRestart=on-failure\nRestartSec=5\nRestartPreventExitStatus=77 78\n\
StandardOutput=append:{}\nStandardError=append:{}\n\n[Install]\nWantedBy=default.target\n",
        systemd_quote(&program.to_string_lossy()),
        systemd_quote(&config.to_string_lossy()),
        pct(out_log),
        pct(err_log),
    )
}

#[cfg(test)]
#[path = "autostart_tests.rs"]
mod tests;
