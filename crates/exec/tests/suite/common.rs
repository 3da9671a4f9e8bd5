//! Shared fixtures: a temporary root, jailed cwd handles made with cap-std, an executor.

use std::ffi::OsString;
use std::path::Path;
use std::path::PathBuf;

use cap_std::ambient_authority;
use shim_exec::BaseEnv;
use shim_exec::CommandLimiter;
use shim_exec::CommandLimits;
use shim_exec::CommandRequest;
use shim_exec::CwdError;
use shim_exec::ExecConfig;
use shim_exec::Execution;
use shim_exec::Executor;
use shim_exec::HostOs;
use shim_exec::WorkDir;

pub(crate) struct Root {
    pub(crate) dir: tempfile::TempDir,
}

impl Root {
    pub(crate) fn new() -> Root {
        Root {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A resolver that plays the jail: `None` → the root, a relative name → that directory.
    pub(crate) fn resolver(&self) -> impl FnOnce(Option<&str>) -> Result<WorkDir, CwdError> + '_ {
        move |cwd| {
            let p: PathBuf = match cwd {
                None => self.path().to_owned(),
                Some(c) => self.path().join(c),
            };
            open_workdir(&p)
        }
    }
}

pub(crate) fn open_workdir(p: &Path) -> Result<WorkDir, CwdError> {
    let dir = cap_std::fs::Dir::open_ambient_dir(p, ambient_authority())
        .map_err(|_| CwdError::new(shim_protocol::ErrorCode::PathNotFound, "Path not found"))?;
    WorkDir::new(dir, p.display().to_string()).map_err(|e| CwdError::new(e.code(), e.to_string()))
}

pub(crate) fn test_base_env() -> BaseEnv {
    BaseEnv::filter(
        HostOs::Posix,
        [
            (
                OsString::from("PATH"),
                OsString::from("/usr/local/bin:/usr/bin:/bin"),
            ),
            (OsString::from("HOME"), OsString::from("/nonexistent-home")),
            (
                OsString::from("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE"),
                OsString::from("secret"),
            ),
        ],
    )
}

pub(crate) fn config() -> ExecConfig {
    let mut c = ExecConfig::from_process(true);
    c.command_timeout_seconds = 30;
    c.max_file_size_bytes = 10_485_760;
    c.base_env = test_base_env();
    c.shell_search_path = Some("/usr/local/bin:/usr/bin:/bin".into());
    c.os = HostOs::Posix;
    c
}

/// An executor with a private, generous limiter (tests run in parallel).
pub(crate) fn executor() -> Executor {
    executor_with(config())
}

pub(crate) fn executor_with(config: ExecConfig) -> Executor {
    Executor::new(
        config,
        CommandLimiter::new(CommandLimits {
            max_commands_per_minute: 10_000,
            max_concurrent_commands: 100,
            window: std::time::Duration::from_secs(60),
        }),
    )
}

pub(crate) fn argv(v: &[&str]) -> CommandRequest {
    CommandRequest {
        argv: Some(v.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    }
}

pub(crate) fn sh(cmd: &str) -> CommandRequest {
    CommandRequest {
        command: Some(cmd.to_owned()),
        shell: shim_exec::Shell::Sh,
        ..Default::default()
    }
}

pub(crate) async fn run(exec: &Executor, root: &Root, req: CommandRequest) -> Execution {
    exec.execute(&req, &root.path().display().to_string(), root.resolver())
        .await
}

/// Every pid whose process group is `pgid` (from /proc/PID/stat).
pub(crate) fn group_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Some((_, ppid, pg)) = stat(pid) {
            let _ = ppid;
            if pg == pgid {
                out.push(pid);
            }
        }
    }
    out
}

/// `(state, ppid, pgid)` of a live, non-zombie process.
pub(crate) fn stat(pid: i32) -> Option<(char, i32, i32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let mut f = rest.split(' ');
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgid = f.next()?.parse().ok()?;
    if state == 'Z' || state == 'X' {
        return None;
    }
    Some((state, ppid, pgid))
}

/// Polls until `f` holds or `secs` pass.
pub(crate) async fn eventually(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < end {
        if f() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    f()
}

/// What the sandbox tests attack: a root inside a temporary top directory, beside a home
/// holding a fake SSH key and a directory outside the root.
pub(crate) struct SandboxFixture {
    _top: tempfile::TempDir,
    pub(crate) root: Root,
    pub(crate) home: PathBuf,
    pub(crate) outside: PathBuf,
}

pub(crate) fn sandbox_fixture() -> SandboxFixture {
    let top = tempfile::tempdir().unwrap();
    let home = top.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "SECRET-KEY").unwrap();
    let outside = top.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let root = Root {
        dir: tempfile::tempdir_in(top.path()).unwrap(),
    };
    SandboxFixture {
        _top: top,
        root,
        home,
        outside,
    }
}

/// An executor whose commands run under `mode` and `network` in the fixture's root and home.
pub(crate) fn sandboxed(
    f: &SandboxFixture,
    mode: shim_exec::sandbox::SandboxMode,
    network: shim_exec::sandbox::NetworkMode,
    mech: shim_exec::sandbox::NetMechanism,
) -> Executor {
    let mut cfg = config();
    cfg.sandbox = shim_exec::sandbox::SandboxPolicy {
        mode,
        network,
        net_mechanism: mech,
        folder: f.root.path().to_owned(),
        home: Some(f.home.clone()),
        writable: Vec::new(),
        readable: Vec::new(),
    };
    executor_with(cfg)
}
