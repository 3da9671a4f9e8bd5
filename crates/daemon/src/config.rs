//! Configuration (AUDIT_AUTH_CLI.md 4): TOML file, `AUTOGPT_SHIM_*` environment and
//! command-line flags, resolved once into [`Settings`] with the precedence
//! flags > environment > file > defaults and strict types.

use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::ConfigError;

/// The value type of a setting (4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Bool,
    Int,
    Float,
    Path,
    StrList,
}

/// Every key of 4.3, plus the tuning keys of this implementation (\[addition\]; they exist so
/// that tests and slow links can shorten or stretch intervals; the defaults are the
/// protocol's).
const KEYS: &[(&str, Kind)] = &[
    ("platform_url", Kind::Str),
    ("platform_ws_url", Kind::Str),
    ("platform_oauth_url", Kind::Str),
    ("allow_insecure_platform_url", Kind::Bool),
    ("oauth_client_id", Kind::Str),
    ("oauth_redirect_port", Kind::Int),
    // [addition] Networks (docs/network.md): an extra CA bundle and a proxy that replaces
    // the *_PROXY variables.
    ("tls_ca_file", Kind::Path),
    ("proxy", Kind::Str),
    // [addition] Offer permessage-deflate (RFC 7692) on the platform connection
    // (docs/network.md); on by default.
    ("websocket_compression", Kind::Bool),
    // [addition] An OpenID Connect issuer instead of the fixed endpoints (docs/daemon.md).
    ("oauth_issuer", Kind::Str),
    ("session_id", Kind::Str),
    ("machine_id", Kind::Str),
    ("display_name", Kind::Str),
    ("allowed_root", Kind::Path),
    ("audit_log_path", Kind::Path),
    ("enable_shell", Kind::Bool),
    ("enable_computer_use", Kind::Bool),
    ("enable_local_llm", Kind::Bool),
    ("enable_hardware", Kind::Bool),
    ("enable_clipboard", Kind::Bool),
    ("enable_clipboard_read_foreign", Kind::Bool),
    ("enable_recording", Kind::Bool),
    ("max_concurrent", Kind::Int),
    ("max_concurrent_commands", Kind::Int),
    ("command_timeout_seconds", Kind::Int),
    ("max_file_size_bytes", Kind::Int),
    // Command confinement [addition] (docs/sandbox.md).
    ("shell_sandbox", Kind::Str),
    ("shell_network", Kind::Str),
    ("shell_sandbox_writable", Kind::StrList),
    ("shell_sandbox_readable", Kind::StrList),
    ("max_commands_per_minute", Kind::Int),
    ("max_screenshots_per_minute", Kind::Int),
    // Computer use [addition]: which X display to drive ("user", "isolated" or a display
    // name such as ":77"), the isolated display's size ("WxH"), and screen rectangles
    // ("x1,y1,x2,y2", desktop coordinates) blacked out in every screenshot.
    ("computer_use_display", Kind::Str),
    ("computer_use_display_size", Kind::Str),
    ("computer_use_masked_regions", Kind::StrList),
    ("reconnect_base_delay", Kind::Float),
    ("reconnect_max_delay", Kind::Float),
    ("reconnect_jitter_seconds", Kind::Float),
    ("ollama_url", Kind::Str),
    ("recording_buffer_dir", Kind::Path),
    ("recording_default_interpretation_route", Kind::Str),
    ("recording_channels", Kind::StrList),
    ("recording_retention_limit", Kind::Int),
    // [addition] The command policy (docs/policy.md) and how long a `prompt` command waits
    // for the local user's answer.
    ("command_policy_file", Kind::Path),
    ("approval_timeout_seconds", Kind::Float),
    // [addition] Serve the local web console from start (docs/console.md).
    ("console", Kind::Bool),
    // Tuning [addition].
    ("status_interval_seconds", Kind::Float),
    ("idle_timeout_seconds", Kind::Float),
    ("idle_check_interval_seconds", Kind::Float),
    ("ws_ping_interval_seconds", Kind::Float),
    ("ws_pong_timeout_seconds", Kind::Float),
    ("handshake_timeout_seconds", Kind::Float),
    ("oauth_callback_timeout_seconds", Kind::Float),
    // The local-model route's per-I/O chat timeout (COMPUTER_USE_HW.md 8.4: 60 s).
    ("local_llm_timeout_seconds", Kind::Float),
    // Hardware (COMPUTER_USE_HW.md 9.2, PROPOSED): the opt-in, the allowlists, and where
    // devices are enumerated from (fixture trees in tests).
    ("hardware_protocol", Kind::Str),
    ("hardware_serial_allow", Kind::StrList),
    ("hardware_gpio_writable", Kind::StrList),
    ("hardware_sysfs_root", Kind::Path),
    ("hardware_devfs_root", Kind::Path),
    ("hardware_handle_expiry_seconds", Kind::Float),
];

/// Environment names after the prefix that are not settings (4.6).
const RESERVED_ENV: &[&str] = &["keychain_passphrase", "fallback_dir", "credential_store"];

/// The environment prefix.
pub const ENV_PREFIX: &str = "AUTOGPT_SHIM_";

/// The default `approval_timeout_seconds`: below the platform's 30 s deadline for a
/// data-plane request (PROTOCOL.md 12), so that a denial reaches it as an answer.
pub const DEFAULT_APPROVAL_TIMEOUT_SECONDS: f64 = 25.0;

/// The `proxy` setting. Its `Debug` hides any user name and password.
#[derive(Clone, PartialEq)]
pub struct ProxySetting(pub String);

impl std::fmt::Debug for ProxySetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&shim_auth::net::redact(&self.0))
    }
}

/// The default platform base URL.
pub const DEFAULT_PLATFORM_URL: &str = "wss://platform.autogpt.net";

#[derive(Debug, Clone, PartialEq)]
enum Val {
    Str(String),
    Bool(bool),
    Int(i64),
    Float(f64),
    List(Vec<String>),
}

/// Values given on the command line; `None`/`false` means "not given".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlagOverrides {
    /// `--allowed-root` (made absolute against the current directory).
    pub allowed_root: Option<PathBuf>,
    /// `--platform-url`.
    pub platform_url: Option<String>,
    /// `--session-id` (before or after `start`; the later one wins).
    pub session_id: Option<String>,
    /// `start --enable-shell`.
    pub enable_shell: bool,
    /// `start --enable-computer-use`.
    pub enable_computer_use: bool,
    /// `start --enable-clipboard`.
    pub enable_clipboard: bool,
    /// `start --enable-clipboard-read-foreign`.
    pub enable_clipboard_read_foreign: bool,
    /// `start --enable-recording`.
    pub enable_recording: bool,
    /// `start --shell-sandbox`.
    pub shell_sandbox: Option<String>,
    /// `start --shell-network`.
    pub shell_network: Option<String>,
    /// `start --computer-use-display`.
    pub computer_use_display: Option<String>,
}

/// Everything the loader reads, injectable for tests.
#[derive(Debug, Clone, Default)]
pub struct ConfigSources {
    /// `--config PATH`, if given.
    pub config_path: Option<PathBuf>,
    /// The process environment (name, value).
    pub env: Vec<(String, String)>,
    /// Command-line values.
    pub flags: FlagOverrides,
    /// The home directory (for `~` and defaults).
    pub home: Option<PathBuf>,
    /// The current directory (for relative command-line paths).
    pub cwd: PathBuf,
}

impl ConfigSources {
    /// Sources from this process: its environment, home and working directory.
    pub fn from_process(config_path: Option<PathBuf>, flags: FlagOverrides) -> Self {
        ConfigSources {
            config_path,
            env: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            flags,
            home: crate::host::home_dir(),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        }
    }

    fn env_get(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }
}

/// Intervals of the protocol, configurable for tests (\[addition\]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Periodic `STATUS` (10.5): 30 s.
    pub status_interval: Duration,
    /// Idle stop of child runtimes (9.9): 600 s.
    pub idle_timeout: Duration,
    /// Idle reaper wake-up (9.9): 30 s.
    pub idle_check_interval: Duration,
    /// WebSocket ping interval (2.4): 20 s.
    pub ws_ping_interval: Duration,
    /// WebSocket pong deadline (2.4): 10 s.
    pub ws_pong_timeout: Duration,
    /// Wait for `HELLO_ACK` (2.5): 10 s.
    pub handshake_timeout: Duration,
    /// `auth`'s wait for the OAuth callback (AUDIT_AUTH_CLI.md 3.3 step 6): 300 s.
    pub oauth_callback_timeout: Duration,
    /// Each I/O operation of a local-model chat (COMPUTER_USE_HW.md 8.4): 60 s.
    pub local_llm_timeout: Duration,
    /// A serial handle unused this long is closed (COMPUTER_USE_HW.md 9.2 P3): 300 s.
    pub hardware_handle_expiry: Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            status_interval: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(600),
            idle_check_interval: Duration::from_secs(30),
            ws_ping_interval: Duration::from_secs(20),
            ws_pong_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(10),
            oauth_callback_timeout: Duration::from_secs(300),
            local_llm_timeout: Duration::from_secs(60),
            hardware_handle_expiry: Duration::from_secs(300),
        }
    }
}

/// The resolved configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Where the file came from (default location or `--config`).
    pub config_path: Option<PathBuf>,
    /// The user's home directory (browse root, `~` expansion in paths).
    pub home: Option<PathBuf>,
    /// `platform_url`.
    pub platform_url: String,
    /// `platform_ws_url` (empty = unset).
    pub platform_ws_url: Option<String>,
    /// `platform_oauth_url` (empty = unset).
    pub platform_oauth_url: Option<String>,
    /// `allow_insecure_platform_url`.
    pub allow_insecure_platform_url: bool,
    /// `websocket_compression`: offer `permessage-deflate` on the platform connection.
    pub websocket_compression: bool,
    /// `oauth_client_id`.
    pub oauth_client_id: String,
    /// `oauth_redirect_port`.
    pub oauth_redirect_port: u16,
    /// `tls_ca_file` \[addition\]: a PEM bundle of certificate authorities trusted in
    /// addition to the system trust store.
    pub tls_ca_file: Option<PathBuf>,
    /// `proxy` \[addition\]: replaces `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY`; `"none"`
    /// turns proxies off. May hold credentials: never shown by `Debug`.
    pub proxy: Option<ProxySetting>,
    /// `oauth_issuer` \[addition\]: an OpenID Connect issuer whose discovery document supplies
    /// the OAuth endpoints; `None` = the platform's fixed endpoints (3.2).
    pub oauth_issuer: Option<String>,
    /// Trimmed legacy session id; `None` = machine control mode.
    pub session_id: Option<String>,
    /// `machine_id` override.
    pub machine_id: Option<String>,
    /// `display_name` override.
    pub display_name: Option<String>,
    /// The legacy-mode jail root.
    pub allowed_root: PathBuf,
    /// The current audit log file.
    pub audit_log_path: PathBuf,
    /// `enable_shell`.
    pub enable_shell: bool,
    /// `enable_computer_use`.
    pub enable_computer_use: bool,
    /// `enable_local_llm`.
    pub enable_local_llm: bool,
    /// `enable_hardware`.
    pub enable_hardware: bool,
    /// `enable_clipboard`.
    pub enable_clipboard: bool,
    /// `enable_clipboard_read_foreign`.
    pub enable_clipboard_read_foreign: bool,
    /// `enable_recording` (start refuses to run when true).
    pub enable_recording: bool,
    /// Local `max_concurrent` ceiling.
    pub max_concurrent: u32,
    /// Machine-wide concurrent commands.
    pub max_concurrent_commands: u32,
    /// Local `command_timeout_seconds` ceiling.
    pub command_timeout_seconds: u64,
    /// Local `max_file_size_bytes` ceiling.
    pub max_file_size_bytes: u64,
    /// Commands per sliding minute.
    pub max_commands_per_minute: u32,
    /// Screenshots per sliding minute.
    pub max_screenshots_per_minute: u32,
    /// `shell_sandbox` as given; `None` = the default (`workspace-write` where the OS can
    /// enforce it, else `off`; see docs/sandbox.md).
    pub shell_sandbox: Option<shim_exec::sandbox::SandboxMode>,
    /// `shell_network` as given; `None` = `allow`.
    pub shell_network: Option<shim_exec::sandbox::NetworkMode>,
    /// `shell_sandbox_writable`: absolute paths a confined command may also write.
    pub shell_sandbox_writable: Vec<PathBuf>,
    /// `shell_sandbox_readable`: absolute paths in the home a confined command may read.
    pub shell_sandbox_readable: Vec<PathBuf>,
    /// `computer_use_display`: which X display computer use drives (docs/desktop.md).
    pub computer_use_display: DisplayMode,
    /// `computer_use_display_size`: width and height of the isolated display.
    pub computer_use_display_size: [u32; 2],
    /// `computer_use_masked_regions`: `[x1, y1, x2, y2)` rectangles blacked out before
    /// any screenshot is encoded.
    pub computer_use_masked_regions: Vec<[i64; 4]>,
    /// Backoff base, seconds.
    pub reconnect_base_delay: f64,
    /// Backoff cap, seconds.
    pub reconnect_max_delay: f64,
    /// Backoff jitter, seconds.
    pub reconnect_jitter_seconds: f64,
    /// `ollama_url`.
    pub ollama_url: String,
    /// `command_policy_file` \[addition\]: the command policy; `None` allows every command.
    pub command_policy_file: Option<PathBuf>,
    /// `approval_timeout_seconds` \[addition\]: how long a `prompt` command waits for the
    /// local user before it is denied (25 s: the platform gives up on a request after 30 s).
    pub approval_timeout: Duration,
    /// `console` \[addition\]: serve the local web console on 127.0.0.1 from start (otherwise
    /// it starts on the first `autogpt-shim console`).
    pub console: bool,
    /// The hardware keys (COMPUTER_USE_HW.md 9).
    pub hardware: HardwareSettings,
    /// Protocol intervals.
    pub tuning: Tuning,
}

impl Settings {
    /// True in legacy direct mode (a session id was configured).
    pub fn is_legacy(&self) -> bool {
        self.session_id.is_some()
    }

    /// The platform base with trailing `/` removed.
    fn base(&self) -> &str {
        self.platform_url.trim_end_matches('/')
    }

    /// The HTTP base of 3.2.
    pub fn http_base(&self) -> String {
        let base = self.base();
        if let Some(rest) = base.strip_prefix("wss://") {
            format!("https://{rest}")
        } else if let Some(rest) = base.strip_prefix("ws://") {
            format!("http://{rest}")
        } else {
            base.to_owned()
        }
    }

    /// The WebSocket base of 3.2 / PROTOCOL.md 2.1.
    pub fn ws_base(&self) -> String {
        if let Some(ws) = &self.platform_ws_url {
            return ws.trim_end_matches('/').to_owned();
        }
        let base = self.base();
        let base = if let Some(rest) = base.strip_prefix("https://") {
            format!("wss://{rest}")
        } else if let Some(rest) = base.strip_prefix("http://") {
            format!("ws://{rest}")
        } else {
            base.to_owned()
        };
        format!("{base}/ws/local-executor")
    }

    /// The network options of `shim_auth::net` (trust store and proxy).
    pub fn net_options(&self) -> shim_auth::net::NetOptions {
        shim_auth::net::NetOptions {
            tls_ca_file: self.tls_ca_file.clone(),
            proxy: self.proxy.as_ref().map(|p| p.0.clone()),
        }
    }

    /// Where the OAuth endpoints come from: the issuer if one is configured, else the fixed
    /// endpoints of 3.2.
    pub fn oauth_source(&self) -> shim_auth::oauth::EndpointSource {
        match &self.oauth_issuer {
            Some(i) => shim_auth::oauth::EndpointSource::Issuer(i.clone()),
            None => shim_auth::oauth::EndpointSource::Fixed {
                http_base: self.http_base(),
                oauth_base: self.platform_oauth_url.clone(),
            },
        }
    }

    /// The deployment id of 3.8: `<client_id>@<normalized HTTP base>`.
    pub fn deployment_id(&self) -> String {
        format!(
            "{}@{}",
            self.oauth_client_id,
            normalize_http_base(&self.http_base())
        )
    }
}

/// Normalises an HTTP base for the deployment id (3.8): scheme and host lower-cased, the
/// default port removed, query and fragment removed, trailing `/` removed.
pub fn normalize_http_base(base: &str) -> String {
    match url::Url::parse(base) {
        Ok(mut u) => {
            u.set_query(None);
            u.set_fragment(None);
            let default = match u.scheme() {
                "https" => Some(443),
                "http" => Some(80),
                _ => None,
            };
            if u.port().is_some() && u.port() == default {
                let _ = u.set_port(None);
            }
            u.to_string().trim_end_matches('/').to_owned()
        }
        Err(_) => base.trim_end_matches('/').to_owned(),
    }
}

/// True for `localhost`, 127.0.0.0/8 and `::1`.
pub fn is_loopback_host(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    }
}

/// The default config file of 4.2 for this OS.
pub fn default_config_path(home: Option<&Path>, env: &ConfigSources) -> Option<PathBuf> {
    crate::paths::config_file(crate::paths::Os::current(), home, &|k| {
        env.env_get(k).map(str::to_owned)
    })
}

fn default_audit_path(home: Option<&Path>, env: &ConfigSources) -> Option<PathBuf> {
    crate::paths::audit_log(crate::paths::Os::current(), home, &|k| {
        env.env_get(k).map(str::to_owned)
    })
}

fn kind_of(key: &str) -> Option<Kind> {
    KEYS.iter().find(|(k, _)| *k == key).map(|(_, kind)| *kind)
}

fn toml_value(key: &str, kind: Kind, v: &toml::Value) -> Result<Val, ConfigError> {
    let bad =
        |want: &str| ConfigError::new(key, format!("expected {want}, found {}", v.type_str()));
    Ok(match kind {
        Kind::Str | Kind::Path => Val::Str(v.as_str().ok_or_else(|| bad("a string"))?.to_owned()),
        Kind::Bool => Val::Bool(v.as_bool().ok_or_else(|| bad("a boolean"))?),
        Kind::Int => Val::Int(v.as_integer().ok_or_else(|| bad("an integer"))?),
        Kind::Float => match v {
            toml::Value::Float(f) => Val::Float(*f),
            #[expect(
                clippy::cast_precision_loss,
                reason = "an integer given for a float key"
            )]
            toml::Value::Integer(i) => Val::Float(*i as f64),
            _ => return Err(bad("a number")),
        },
        Kind::StrList => {
            let arr = v.as_array().ok_or_else(|| bad("an array of strings"))?;
            let mut out = Vec::new();
            for e in arr {
                out.push(
                    e.as_str()
                        .ok_or_else(|| bad("an array of strings"))?
                        .to_owned(),
                );
            }
            Val::List(out)
        }
    })
}

/// Parses an environment value (4.4).
fn env_value(var: &str, kind: Kind, raw: &str) -> Result<Val, ConfigError> {
    let bad = |want: &str| ConfigError::new(var, format!("expected {want}, got {raw:?}"));
    Ok(match kind {
        Kind::Str | Kind::Path => Val::Str(raw.to_owned()),
        Kind::Bool => match raw.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" | "y" | "t" => Val::Bool(true),
            "0" | "false" | "no" | "off" | "n" | "f" => Val::Bool(false),
            _ => return Err(bad("a boolean")),
        },
        Kind::Int => {
            let digits = raw.strip_prefix(['+', '-']).unwrap_or(raw);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("an integer"));
            }
            Val::Int(raw.parse::<i64>().map_err(|_| bad("an integer"))?)
        }
        Kind::Float => {
            let ok = raw
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
            let f: f64 = raw.parse().map_err(|_| bad("a number"))?;
            if !ok || !f.is_finite() {
                return Err(bad("a number"));
            }
            Val::Float(f)
        }
        Kind::StrList => {
            let list: Vec<String> =
                serde_json::from_str(raw).map_err(|_| bad("a JSON array of strings"))?;
            Val::List(list)
        }
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    File,
    Env,
    Flag,
}

struct Raw {
    vals: BTreeMap<&'static str, (Val, Source, String)>,
}

impl Raw {
    fn set(&mut self, key: &str, val: Val, src: Source, loc: String) {
        if let Some((k, _)) = KEYS.iter().find(|(k, _)| *k == key) {
            self.vals.insert(k, (val, src, loc));
        }
    }

    fn str(&self, key: &str) -> Option<(&str, &str)> {
        match self.vals.get(key) {
            Some((Val::Str(s), _, loc)) => Some((s.as_str(), loc.as_str())),
            _ => None,
        }
    }

    fn bool(&self, key: &str, default: bool) -> bool {
        match self.vals.get(key) {
            Some((Val::Bool(b), _, _)) => *b,
            _ => default,
        }
    }

    fn int(&self, key: &str, default: i64, min: i64, max: i64) -> Result<i64, ConfigError> {
        match self.vals.get(key) {
            Some((Val::Int(i), _, loc)) => {
                if *i < min || *i > max {
                    Err(ConfigError::new(
                        loc.clone(),
                        format!("must be between {min} and {max}"),
                    ))
                } else {
                    Ok(*i)
                }
            }
            _ => Ok(default),
        }
    }

    fn float(&self, key: &str, default: f64) -> (f64, String) {
        match self.vals.get(key) {
            Some((Val::Float(f), _, loc)) => (*f, loc.clone()),
            _ => (default, key.to_owned()),
        }
    }

    fn path(
        &self,
        key: &str,
        home: Option<&Path>,
        cwd: &Path,
    ) -> Result<Option<PathBuf>, ConfigError> {
        let Some((Val::Str(s), src, loc)) = self.vals.get(key) else {
            return Ok(None);
        };
        let expanded = expand_tilde(s, home)
            .ok_or_else(|| ConfigError::new(loc.clone(), "cannot expand ~: no home directory"))?;
        if expanded.is_absolute() {
            Ok(Some(expanded))
        } else if *src == Source::Flag {
            Ok(Some(cwd.join(expanded)))
        } else {
            Err(ConfigError::new(loc.clone(), "path must be absolute"))
        }
    }
}

fn expand_tilde(s: &str, home: Option<&Path>) -> Option<PathBuf> {
    if s == "~" {
        return home.map(Path::to_path_buf);
    }
    if let Some(rest) = s.strip_prefix("~/") {
        return home.map(|h| h.join(rest));
    }
    Some(PathBuf::from(s))
}

/// Checks the scheme rule of [H-15] for a platform URL.
fn check_url(
    loc: &str,
    value: &str,
    schemes: &[&str],
    allow_insecure: bool,
) -> Result<(), ConfigError> {
    let u = url::Url::parse(value)
        .map_err(|e| ConfigError::new(loc, format!("not an absolute URL: {e}")))?;
    if !schemes.contains(&u.scheme()) {
        return Err(ConfigError::new(
            loc,
            format!("scheme must be one of {}", schemes.join(", ")),
        ));
    }
    let plaintext = matches!(u.scheme(), "http" | "ws");
    if plaintext && !allow_insecure {
        let loopback = u.host().is_some_and(|h| is_loopback_host(&h));
        if !loopback {
            return Err(ConfigError::new(
                loc,
                "plaintext http:// and ws:// are allowed only for loopback hosts (set allow_insecure_platform_url = true to override)",
            ));
        }
    }
    Ok(())
}

/// The largest value of a setting in seconds (about 31 years). Without a bound, a value such
/// as `1e300` passed validation and then panicked when turned into a `Duration` (found by the
/// `config_toml` fuzz target).
const MAX_SECONDS: f64 = 1e9;

fn positive_float(loc: &str, v: f64, allow_zero: bool) -> Result<f64, ConfigError> {
    if v.is_finite() && v > MAX_SECONDS {
        return Err(ConfigError::new(
            loc,
            "must be at most 1000000000 (seconds)",
        ));
    }
    if !v.is_finite() || v < 0.0 || (!allow_zero && v == 0.0) {
        return Err(ConfigError::new(
            loc,
            if allow_zero {
                "must be >= 0"
            } else {
                "must be > 0"
            },
        ));
    }
    Ok(v)
}

fn secs(v: f64) -> Duration {
    Duration::from_secs_f64(v)
}

/// Loads and validates the configuration (4.1-4.4). Warnings (unknown keys, a missing
/// `--config` file) are logged.
pub fn load(src: &ConfigSources) -> Result<Settings, ConfigError> {
    let home = src.home.as_deref();
    let mut raw = Raw {
        vals: BTreeMap::new(),
    };

    // File.
    let path = match &src.config_path {
        Some(p) => Some(p.clone()),
        None => default_config_path(home, src),
    };
    if let Some(p) = &path {
        match std::fs::read_to_string(p) {
            Ok(text) => {
                let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
                    let loc = match e.span() {
                        Some(span) => {
                            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                            format!("{} line {line}", p.display())
                        }
                        None => p.display().to_string(),
                    };
                    ConfigError::new(loc, e.message().to_owned())
                })?;
                for (k, v) in &table {
                    match kind_of(k) {
                        Some(kind) => {
                            let val = toml_value(k, kind, v)?;
                            raw.set(k, val, Source::File, k.clone());
                        }
                        None => {
                            tracing::warn!(key = %k, file = %p.display(), "ignoring unknown configuration key")
                        }
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if src.config_path.is_some() {
                    tracing::warn!(file = %p.display(), "configuration file not found; using defaults");
                }
            }
            Err(e) => {
                return Err(ConfigError::new(p.display().to_string(), e.to_string()));
            }
        }
    }

    // Environment.
    for (name, value) in &src.env {
        if name.len() <= ENV_PREFIX.len()
            || !name.is_char_boundary(ENV_PREFIX.len())
            || !name[..ENV_PREFIX.len()].eq_ignore_ascii_case(ENV_PREFIX)
        {
            continue;
        }
        let key = name[ENV_PREFIX.len()..].to_ascii_lowercase();
        if RESERVED_ENV.contains(&key.as_str()) {
            continue;
        }
        if let Some(kind) = kind_of(&key) {
            let val = env_value(name, kind, value)?;
            raw.set(&key, val, Source::Env, name.clone());
        }
    }

    // Flags.
    let f = &src.flags;
    if let Some(p) = &f.allowed_root {
        raw.set(
            "allowed_root",
            Val::Str(p.to_string_lossy().into_owned()),
            Source::Flag,
            "--allowed-root".into(),
        );
    }
    if let Some(u) = &f.platform_url {
        raw.set(
            "platform_url",
            Val::Str(u.clone()),
            Source::Flag,
            "--platform-url".into(),
        );
    }
    if let Some(s) = &f.session_id {
        raw.set(
            "session_id",
            Val::Str(s.clone()),
            Source::Flag,
            "--session-id".into(),
        );
    }
    for (value, key, flag) in [
        (&f.shell_sandbox, "shell_sandbox", "--shell-sandbox"),
        (&f.shell_network, "shell_network", "--shell-network"),
        (
            &f.computer_use_display,
            "computer_use_display",
            "--computer-use-display",
        ),
    ] {
        if let Some(v) = value {
            raw.set(key, Val::Str(v.clone()), Source::Flag, flag.into());
        }
    }
    for (on, key, flag) in [
        (f.enable_shell, "enable_shell", "--enable-shell"),
        (
            f.enable_computer_use,
            "enable_computer_use",
            "--enable-computer-use",
        ),
        (f.enable_clipboard, "enable_clipboard", "--enable-clipboard"),
        (
            f.enable_clipboard_read_foreign,
            "enable_clipboard_read_foreign",
            "--enable-clipboard-read-foreign",
        ),
        (f.enable_recording, "enable_recording", "--enable-recording"),
    ] {
        if on {
            raw.set(key, Val::Bool(true), Source::Flag, flag.into());
        }
    }

    resolve(&raw, src, path)
}

/// Parses `computer_use_masked_regions`: each entry `"x1,y1,x2,y2"` with x1 < x2, y1 < y2.
fn masked_regions(raw: &Raw) -> Result<Vec<[i64; 4]>, ConfigError> {
    let Some((Val::List(items), _, loc)) = raw.vals.get("computer_use_masked_regions") else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .map(|item| {
            let n: Vec<i64> = item
                .split(',')
                .map(|p| p.trim().parse::<i64>())
                .collect::<Result<_, _>>()
                .map_err(|_| {
                    ConfigError::new(loc.clone(), format!("'{item}' is not \"x1,y1,x2,y2\""))
                })?;
            match n[..] {
                [x1, y1, x2, y2] if x1 < x2 && y1 < y2 => Ok([x1, y1, x2, y2]),
                _ => Err(ConfigError::new(
                    loc.clone(),
                    format!("'{item}' is not \"x1,y1,x2,y2\" with x1 < x2 and y1 < y2"),
                )),
            }
        })
        .collect()
}

/// Parses one of the closed spellings of a confinement setting.
fn spelled<T>(
    raw: &Raw,
    key: &str,
    parse: fn(&str) -> Option<T>,
    allowed: &str,
) -> Result<Option<T>, ConfigError> {
    match raw.str(key) {
        None => Ok(None),
        Some((s, loc)) => parse(s).map(Some).ok_or_else(|| {
            ConfigError::new(
                loc,
                format!("'{s}' is not one of {allowed}\nhint: see docs/sandbox.md for what each mode protects"),
            )
        }),
    }
}

/// Which X display computer use drives (`computer_use_display`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DisplayMode {
    /// The user's own desktop (`DISPLAY`): the default.
    #[default]
    User,
    /// A private X server the daemon starts at the first computer-use request and stops
    /// with the session or the daemon (Linux only).
    Isolated,
    /// An X display the user runs and names (`":77"`).
    Named(String),
}

impl DisplayMode {
    /// The explicit display name to open, if one was configured.
    pub fn named(&self) -> Option<String> {
        match self {
            DisplayMode::Named(d) => Some(d.clone()),
            DisplayMode::User | DisplayMode::Isolated => None,
        }
    }

    /// The word for records and `doctor`: `user`, `isolated` or `named`.
    pub fn as_str(&self) -> &'static str {
        match self {
            DisplayMode::User => "user",
            DisplayMode::Isolated => "isolated",
            DisplayMode::Named(_) => "named",
        }
    }
}

/// Parses `computer_use_display`: `user`, `isolated`, or an X display name (`[host]:N`).
fn display_mode(raw: &Raw) -> Result<DisplayMode, ConfigError> {
    let Some((s, loc)) = raw.str("computer_use_display") else {
        return Ok(DisplayMode::User);
    };
    match s {
        "" | "user" => Ok(DisplayMode::User),
        "isolated" => Ok(DisplayMode::Isolated),
        d if d.contains(':') && !d.contains(char::is_whitespace) => {
            Ok(DisplayMode::Named(d.to_owned()))
        }
        other => Err(ConfigError::new(
            loc,
            format!(
                "'{other}' is not one of user, isolated, or an X display name such as :77\nhint: see docs/desktop.md"
            ),
        )),
    }
}

/// The smallest and largest side of the isolated display.
const DISPLAY_SIDE: std::ops::RangeInclusive<u32> = 64..=8192;

/// Parses `computer_use_display_size` (`"WxH"`, default `1280x800`).
fn display_size(raw: &Raw) -> Result<[u32; 2], ConfigError> {
    let Some((s, loc)) = raw.str("computer_use_display_size") else {
        return Ok([1280, 800]);
    };
    let parsed = s.trim().split_once(['x', 'X']).and_then(|(w, h)| {
        let w = w.trim().parse::<u32>().ok()?;
        let h = h.trim().parse::<u32>().ok()?;
        (DISPLAY_SIDE.contains(&w) && DISPLAY_SIDE.contains(&h)).then_some([w, h])
    });
    parsed.ok_or_else(|| {
        ConfigError::new(
            loc,
            format!(
                "'{s}' is not a size WIDTHxHEIGHT with each side {}-{} (e.g. 1280x800)",
                DISPLAY_SIDE.start(),
                DISPLAY_SIDE.end()
            ),
        )
    })
}

/// A list of absolute paths (`~/` expanded).
fn path_list(raw: &Raw, key: &str, home: Option<&Path>) -> Result<Vec<PathBuf>, ConfigError> {
    let Some((Val::List(items), _, loc)) = raw.vals.get(key) else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .map(|item| {
            let p = expand_tilde(item, home).ok_or_else(|| {
                ConfigError::new(loc.clone(), "cannot expand ~: no home directory")
            })?;
            if p.is_absolute() {
                Ok(p)
            } else {
                Err(ConfigError::new(
                    loc.clone(),
                    format!("'{item}' must be an absolute path (or start with ~/)"),
                ))
            }
        })
        .collect()
}

fn opt_str(raw: &Raw, key: &str) -> Option<(String, String)> {
    raw.str(key)
        .filter(|(s, _)| !s.is_empty())
        .map(|(s, l)| (s.to_owned(), l.to_owned()))
}

fn resolve(
    raw: &Raw,
    src: &ConfigSources,
    config_path: Option<PathBuf>,
) -> Result<Settings, ConfigError> {
    let home = src.home.as_deref();
    let allow_insecure = raw.bool("allow_insecure_platform_url", false);

    let (platform_url, loc) = opt_str(raw, "platform_url")
        .unwrap_or_else(|| (DEFAULT_PLATFORM_URL.to_owned(), "platform_url".to_owned()));
    check_url(
        &loc,
        &platform_url,
        &["https", "wss", "http", "ws"],
        allow_insecure,
    )?;
    let platform_ws_url = match opt_str(raw, "platform_ws_url") {
        Some((u, loc)) => {
            check_url(&loc, &u, &["wss", "ws"], allow_insecure)?;
            Some(u)
        }
        None => None,
    };
    let platform_oauth_url = match opt_str(raw, "platform_oauth_url") {
        Some((u, loc)) => {
            check_url(&loc, &u, &["https", "http"], allow_insecure)?;
            Some(u)
        }
        None => None,
    };
    let oauth_issuer = match opt_str(raw, "oauth_issuer") {
        Some((u, loc)) => {
            check_url(&loc, &u, &["https", "http"], allow_insecure)?;
            Some(u)
        }
        None => None,
    };
    let oauth_client_id = match raw.str("oauth_client_id") {
        Some(("", loc)) => return Err(ConfigError::new(loc, "must not be empty")),
        Some((s, _)) => s.to_owned(),
        None => "autogpt-local-executor".to_owned(),
    };
    let oauth_redirect_port = u16::try_from(raw.int("oauth_redirect_port", 41_899, 1, 65_524)?)
        .map_err(|_| ConfigError::new("oauth_redirect_port", "out of range"))?;
    let tls_ca_file = raw.path("tls_ca_file", home, &src.cwd)?;
    let proxy = match opt_str(raw, "proxy") {
        Some((p, loc)) => {
            // Checked here so that a bad value stops `start` with the key's name.
            shim_auth::net::ProxyRules::with_no_proxy(Some(&p), "")
                .map_err(|e| ConfigError::new(loc, e.to_string()))?;
            Some(ProxySetting(p))
        }
        None => None,
    };
    let session_id = raw
        .str("session_id")
        .map(|(s, _)| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    let machine_id = match raw.str("machine_id") {
        Some(("", loc)) => return Err(ConfigError::new(loc, "must not be empty")),
        Some((s, _)) => Some(s.to_owned()),
        None => None,
    };
    let display_name = match raw.str("display_name") {
        Some((s, loc)) => {
            let n = s.chars().count();
            if !(1..=128).contains(&n) {
                return Err(ConfigError::new(loc, "must be 1-128 characters"));
            }
            Some(s.to_owned())
        }
        None => None,
    };
    let allowed_root = match raw.path("allowed_root", home, &src.cwd)? {
        Some(p) => p,
        None => {
            let h = home
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from("/"));
            crate::paths::default_allowed_root(crate::paths::Os::current(), &h)
        }
    };
    let audit_log_path = match raw.path("audit_log_path", home, &src.cwd)? {
        Some(p) => p,
        None => default_audit_path(home, src).ok_or_else(|| {
            ConfigError::new(
                "audit_log_path",
                "no home directory to derive the default from",
            )
        })?,
    };
    let _ = raw.path("recording_buffer_dir", home, &src.cwd)?;
    let command_policy_file = raw.path("command_policy_file", home, &src.cwd)?;
    let (approval, loc) = raw.float("approval_timeout_seconds", DEFAULT_APPROVAL_TIMEOUT_SECONDS);
    let approval_timeout = secs(positive_float(&loc, approval, false)?);

    let u32_key = |key: &str, default: i64| -> Result<u32, ConfigError> {
        let v = raw.int(key, default, 1, i64::from(u32::MAX))?;
        u32::try_from(v).map_err(|_| ConfigError::new(key, "out of range"))
    };
    let u64_key = |key: &str, default: i64| -> Result<u64, ConfigError> {
        let v = raw.int(key, default, 1, i64::MAX)?;
        u64::try_from(v).map_err(|_| ConfigError::new(key, "out of range"))
    };
    let max_concurrent = u32_key("max_concurrent", 4)?;
    let max_concurrent_commands = u32_key("max_concurrent_commands", 10)?;
    let command_timeout_seconds = u64_key("command_timeout_seconds", 30)?;
    let max_file_size_bytes = u64_key("max_file_size_bytes", 10_485_760)?;
    let max_commands_per_minute = u32_key("max_commands_per_minute", 60)?;
    let max_screenshots_per_minute = u32_key("max_screenshots_per_minute", 10)?;
    let _ = u32_key("recording_retention_limit", 10)?;
    let shell_sandbox = spelled(
        raw,
        "shell_sandbox",
        shim_exec::sandbox::SandboxMode::parse,
        "off, workspace-write, read-only",
    )?;
    let shell_network = spelled(
        raw,
        "shell_network",
        shim_exec::sandbox::NetworkMode::parse,
        "allow, deny",
    )?;
    let shell_sandbox_writable = path_list(raw, "shell_sandbox_writable", home)?;
    let shell_sandbox_readable = path_list(raw, "shell_sandbox_readable", home)?;

    let (base, loc) = raw.float("reconnect_base_delay", 1.0);
    let reconnect_base_delay = positive_float(&loc, base, false)?;
    let (max, loc) = raw.float("reconnect_max_delay", 60.0);
    let reconnect_max_delay = positive_float(&loc, max, false)?;
    if reconnect_max_delay < reconnect_base_delay {
        return Err(ConfigError::new(loc, "must be >= reconnect_base_delay"));
    }
    let (jitter, loc) = raw.float("reconnect_jitter_seconds", 5.0);
    let reconnect_jitter_seconds = positive_float(&loc, jitter, true)?;

    let d = Tuning::default();
    let tuning_key = |key: &str, default: Duration| -> Result<Duration, ConfigError> {
        let (v, loc) = raw.float(key, default.as_secs_f64());
        Ok(secs(positive_float(&loc, v, false)?))
    };
    let tuning = Tuning {
        status_interval: tuning_key("status_interval_seconds", d.status_interval)?,
        idle_timeout: tuning_key("idle_timeout_seconds", d.idle_timeout)?,
        idle_check_interval: tuning_key("idle_check_interval_seconds", d.idle_check_interval)?,
        ws_ping_interval: tuning_key("ws_ping_interval_seconds", d.ws_ping_interval)?,
        ws_pong_timeout: tuning_key("ws_pong_timeout_seconds", d.ws_pong_timeout)?,
        handshake_timeout: tuning_key("handshake_timeout_seconds", d.handshake_timeout)?,
        oauth_callback_timeout: tuning_key(
            "oauth_callback_timeout_seconds",
            d.oauth_callback_timeout,
        )?,
        local_llm_timeout: tuning_key("local_llm_timeout_seconds", d.local_llm_timeout)?,
        hardware_handle_expiry: tuning_key(
            "hardware_handle_expiry_seconds",
            d.hardware_handle_expiry,
        )?,
    };
    let hardware = hardware_settings(raw, home, &src.cwd)?;

    Ok(Settings {
        config_path,
        home: src.home.clone(),
        platform_url,
        platform_ws_url,
        platform_oauth_url,
        allow_insecure_platform_url: allow_insecure,
        websocket_compression: raw.bool("websocket_compression", true),
        oauth_client_id,
        oauth_redirect_port,
        tls_ca_file,
        proxy,
        oauth_issuer,
        session_id,
        machine_id,
        display_name,
        allowed_root,
        audit_log_path,
        enable_shell: raw.bool("enable_shell", false),
        enable_computer_use: raw.bool("enable_computer_use", false),
        enable_local_llm: raw.bool("enable_local_llm", false),
        enable_hardware: raw.bool("enable_hardware", false),
        enable_clipboard: raw.bool("enable_clipboard", false),
        enable_clipboard_read_foreign: raw.bool("enable_clipboard_read_foreign", false),
        enable_recording: raw.bool("enable_recording", false),
        max_concurrent,
        max_concurrent_commands,
        command_timeout_seconds,
        max_file_size_bytes,
        max_commands_per_minute,
        max_screenshots_per_minute,
        shell_sandbox,
        shell_network,
        shell_sandbox_writable,
        shell_sandbox_readable,
        computer_use_display: display_mode(raw)?,
        computer_use_display_size: display_size(raw)?,
        computer_use_masked_regions: masked_regions(raw)?,
        reconnect_base_delay,
        reconnect_max_delay,
        reconnect_jitter_seconds,
        ollama_url: opt_str(raw, "ollama_url")
            .map(|(s, _)| s)
            .unwrap_or_else(|| "http://localhost:11434".to_owned()),
        command_policy_file,
        approval_timeout,
        console: raw.bool("console", false),
        tuning,
        hardware,
    })
}

/// The hardware keys (COMPUTER_USE_HW.md 9.2, PROPOSED).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HardwareSettings {
    /// `hardware_protocol = "proposed"`: serve the PROPOSED operations to a platform that
    /// grants `hardware_*` (default off: today's behaviour, 9.1).
    pub proposed: bool,
    /// `hardware_serial_allow`: exact port names or glob patterns; empty refuses every open.
    pub serial_allow: Vec<String>,
    /// `hardware_gpio_writable`: `"gpiochip0:17"` entries.
    pub gpio_writable: Vec<String>,
    /// `hardware_sysfs_root` (default `/sys`).
    pub sysfs_root: Option<PathBuf>,
    /// `hardware_devfs_root` (default `/dev`).
    pub devfs_root: Option<PathBuf>,
}

fn hardware_settings(
    raw: &Raw,
    home: Option<&Path>,
    cwd: &Path,
) -> Result<HardwareSettings, ConfigError> {
    let proposed = match raw.str("hardware_protocol") {
        None => false,
        Some(("" | "none", _)) => false,
        Some(("proposed", _)) => true,
        Some((other, loc)) => {
            return Err(ConfigError::new(
                loc.to_owned(),
                format!("expected \"none\" or \"proposed\", found {other:?}"),
            ));
        }
    };
    let list = |key: &str| match raw.vals.get(key) {
        Some((Val::List(items), _, _)) => items.clone(),
        _ => Vec::new(),
    };
    Ok(HardwareSettings {
        proposed,
        serial_allow: list("hardware_serial_allow"),
        gpio_writable: list("hardware_gpio_writable"),
        sysfs_root: raw.path("hardware_sysfs_root", home, cwd)?,
        devfs_root: raw.path("hardware_devfs_root", home, cwd)?,
    })
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;

/// Every configuration key with its value type and environment variable, in the order of
/// the key table: the source of the generated docs/reference/config.md.
pub fn reference() -> Vec<(&'static str, &'static str, String)> {
    KEYS.iter()
        .map(|(key, kind)| {
            let ty = match kind {
                Kind::Str => "string",
                Kind::Bool => "boolean",
                Kind::Int => "integer",
                Kind::Float => "number",
                Kind::Path => "path",
                Kind::StrList => "list of strings",
            };
            (
                *key,
                ty,
                format!("{ENV_PREFIX}{}", key.to_ascii_uppercase()),
            )
        })
        .collect()
}
