//! The isolated desktop while the daemon runs (Linux, docs/desktop.md): a private X server
//! (Xvfb, or Xephyr in a window on the user's desktop) and a window manager, started at the
//! first computer-use request and stopped when the last session using it ends or the daemon
//! stops.
//!
//! Both processes are spawned exactly like shell commands (`shim_exec::spawn_pipe`): own
//! session and process group, `PR_SET_PDEATHSIG`, and registered with the exec sentinel, so
//! they die with the daemon even when it is SIGKILLed. The server picks a free display
//! number itself and reports it on its stdout (`-displayfd 1`), so two daemons (or a user's
//! own servers) never race for a number. They are spawned from the async task serving the
//! request, on a runtime worker thread that lives as long as the daemon; a blocking-pool
//! thread would exit when idle and fire the parent-death signal.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use shim_cu::Engine;
use shim_cu::OpenOptions;
use shim_exec::Channel;
use shim_exec::ChildEnv;
use shim_exec::ProcessHandle;
use shim_exec::SpawnSpec;
use shim_exec::WireEnv;
use shim_exec::WorkDir;
use tokio_util::sync::CancellationToken;
use tokio_util::sync::DropGuard;

use crate::desktop::Plan;
use crate::desktop::Server;

/// How long the server may take to report its display number, and the window manager to
/// manage the screen.
const READY_TIMEOUT: Duration = Duration::from_secs(15);

/// The window title of the Xephyr window on the user's desktop.
pub(crate) const XEPHYR_TITLE: &str = "AutoGPT agent desktop";

/// One supervised process: a task owns its handle, drains its output and ends its process
/// group when the guard is dropped.
struct Supervised {
    alive: Arc<AtomicBool>,
    _stop: DropGuard,
}

/// A private directory holding the desktop's authority file (mode 0700; removed on drop).
struct AuthDir {
    dir: std::path::PathBuf,
    file: std::path::PathBuf,
    cookie: shim_cu::Cookie,
}

impl AuthDir {
    /// A fresh random `MIT-MAGIC-COOKIE-1` in an authority file that matches any local
    /// display (`FamilyWild`, no display number): the server reads it with `-auth`, the
    /// window manager and launched apps with `XAUTHORITY`, so no other local user (or
    /// program without the file) can connect to the isolated desktop.
    fn create() -> Result<AuthDir, StartError> {
        use std::os::unix::fs::DirBuilderExt;
        use std::os::unix::fs::OpenOptionsExt;
        let failed = |e: &dyn std::fmt::Display| {
            StartError::Failed(format!("cannot create the display's authority file: {e}"))
        };
        let mut cookie = vec![0u8; 16];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut cookie)
            .map_err(|_| failed(&"no randomness"))?;
        // The user's runtime directory (private, emptied at logout) when there is one.
        let base = std::env::var_os("XDG_RUNTIME_DIR")
            .map(std::path::PathBuf::from)
            .filter(|d| d.is_absolute() && d.is_dir())
            .unwrap_or_else(std::env::temp_dir);
        let dir = base.join(format!("autogpt-shim-desktop-{}", uuid::Uuid::new_v4()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| failed(&e))?;
        let me = AuthDir {
            file: dir.join("Xauthority"),
            dir,
            cookie: shim_cu::Cookie(cookie),
        };
        let mut entry = Vec::new();
        let field = |out: &mut Vec<u8>, b: &[u8]| {
            out.extend_from_slice(&u16::try_from(b.len()).unwrap_or(0).to_be_bytes());
            out.extend_from_slice(b);
        };
        entry.extend_from_slice(&0xffffu16.to_be_bytes());
        field(&mut entry, b"");
        field(&mut entry, b"");
        field(&mut entry, b"MIT-MAGIC-COOKIE-1");
        field(&mut entry, &me.cookie.0);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&me.file)
            .map_err(|e| failed(&e))?;
        std::io::Write::write_all(&mut f, &entry).map_err(|e| failed(&e))?;
        Ok(me)
    }
}

impl Drop for AuthDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A running isolated desktop. Dropping it stops the window manager and the server.
pub(crate) struct Isolated {
    /// `:N`.
    pub(crate) display: String,
    /// Which server runs it.
    pub(crate) server: Server,
    /// The computer-use engine on it.
    pub(crate) engine: Arc<Engine>,
    // Dropped in order: the window manager first, then the server.
    procs: Vec<Supervised>,
    _auth: AuthDir,
}

impl Isolated {
    /// The cookie that admits a client (the live view's own connection).
    pub(crate) fn cookie(&self) -> &shim_cu::Cookie {
        &self._auth.cookie
    }

    /// Whether the server and the window manager still run and the engine's connection
    /// answers.
    pub(crate) fn alive(&self) -> bool {
        self.procs.iter().all(|p| p.alive.load(Ordering::SeqCst)) && (self.engine.desktop().alive)()
    }
}

impl Drop for Isolated {
    fn drop(&mut self) {
        tracing::info!(
            "stopping the isolated desktop on {} ({})",
            self.display,
            self.server.program()
        );
        while let Some(p) = self.procs.pop() {
            drop(p);
        }
    }
}

/// Why the isolated desktop could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    /// A program is not installed.
    #[error(transparent)]
    Missing(#[from] crate::desktop::Missing),
    /// It was found but did not come up.
    #[error("{0}")]
    Failed(String),
}

impl StartError {
    /// The wire error for the request that needed the desktop.
    pub(crate) fn to_cu(&self, op: &str) -> shim_cu::CuError {
        match self {
            StartError::Missing(m) => {
                let mut e = shim_cu::CuError::dependency(m.program, op);
                e.message = format!("the isolated display cannot start: {m}");
                e
            }
            StartError::Failed(why) => {
                shim_cu::CuError::internal(format!("the isolated display did not start: {why}"))
            }
        }
    }
}

fn spawn(
    program: &std::path::Path,
    argv: &[&str],
    env: &[(&str, &str)],
) -> Result<ProcessHandle, StartError> {
    let failed = |e: &dyn std::fmt::Display| {
        StartError::Failed(format!("cannot start {}: {e}", program.display()))
    };
    let wire = WireEnv::new(
        env.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
    .map_err(|e| failed(&e))?;
    let root = std::fs::File::open("/").map_err(|e| failed(&e))?;
    let cwd = WorkDir::from_fd(root.into(), "/").map_err(|e| failed(&e))?;
    let spec = SpawnSpec {
        program: program.as_os_str().to_owned(),
        argv: argv.iter().map(Into::into).collect(),
        env: ChildEnv::merge(
            shim_exec::HostOs::current(),
            &shim_exec::BaseEnv::from_process(),
            &wire,
        ),
        cwd,
    };
    shim_exec::spawn_pipe(spec, false).map_err(|e| failed(&e))
}

/// Owns `h` in a task: forwards the first stdout line to `first_line`, keeps the last
/// stderr bytes for the error message, and ends the process group when `stop` fires.
fn supervise(
    mut h: ProcessHandle,
    name: &'static str,
    first_line: Option<tokio::sync::oneshot::Sender<Result<String, String>>>,
) -> Supervised {
    let alive = Arc::new(AtomicBool::new(true));
    let stop = CancellationToken::new();
    let (a, s) = (alive.clone(), stop.clone());
    tokio::spawn(async move {
        let mut first_line = first_line;
        let mut out = Vec::new();
        let mut err = Vec::new();
        // Until both pipes end (the process exited or closed them), or the stop.
        loop {
            let chunk = tokio::select! {
                () = s.cancelled() => {
                    h.terminate().await;
                    a.store(false, Ordering::SeqCst);
                    return;
                }
                chunk = h.next_output() => chunk,
            };
            match chunk {
                Some(c) if c.channel == Channel::Stdout && first_line.is_some() => {
                    out.extend_from_slice(&c.data);
                    if let Some(i) = out.iter().position(|b| *b == b'\n')
                        && let Some(tx) = first_line.take()
                    {
                        let line = String::from_utf8_lossy(&out[..i]).trim().to_owned();
                        let _ = tx.send(Ok(line));
                    }
                }
                Some(c) if c.channel == Channel::Stderr => {
                    err.extend_from_slice(&c.data);
                    let keep = err.len().saturating_sub(2048);
                    err.drain(..keep);
                }
                Some(_) => {}
                None => break,
            }
        }
        let code = tokio::select! {
            () = s.cancelled() => h.terminate().await,
            code = h.wait() => code,
        };
        a.store(false, Ordering::SeqCst);
        tracing::warn!(process = name, code, "an isolated-desktop process ended");
        if let Some(tx) = first_line.take() {
            let text = String::from_utf8_lossy(&err);
            let last = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            let _ = tx.send(Err(format!("{name} exited with {code}: {}", last.trim())));
        }
    });
    Supervised {
        alive,
        _stop: stop.drop_guard(),
    }
}

/// Apps launched on the isolated desktop die with the daemon, like commands: their
/// process group is registered with the exec sentinel.
fn register_launched() -> shim_cu::LaunchHook {
    shim_cu::LaunchHook(Arc::new(|pid| {
        let pgid = i32::try_from(pid).map_err(|e| e.to_string())?;
        shim_exec::register_process_group(pgid).map_err(|e| e.to_string())
    }))
}

/// Starts the server of `plan` at `size`, then the window manager, and opens the engine on
/// it with `engine`. Call from an async task (see the module comment). Nothing stays
/// running when it fails.
pub(crate) async fn start(
    plan: Plan,
    size: [u32; 2],
    engine: impl FnOnce(shim_cu::Desktop) -> Engine + Send + 'static,
) -> Result<Isolated, StartError> {
    let began = Instant::now();
    let [w, h] = size;
    let auth = AuthDir::create()?;
    let auth_file = auth.file.to_string_lossy().into_owned();
    let mut env: Vec<(&str, &str)> = Vec::new();
    let (screen, parent);
    let user_auth = std::env::var("XAUTHORITY").ok();
    let mut argv: Vec<&str> = vec![
        plan.server.program(),
        "-displayfd",
        "1",
        "-auth",
        auth_file.as_str(),
    ];
    match &plan.server {
        Server::Xvfb => {
            screen = format!("{w}x{h}x24");
            argv.extend(["-screen", "0", screen.as_str()]);
        }
        Server::Xephyr { parent: p } => {
            parent = p.clone();
            screen = format!("{w}x{h}");
            argv.extend(["-screen", screen.as_str(), "-title", XEPHYR_TITLE]);
            env.push(("DISPLAY", parent.as_str()));
            // Xephyr is a client of the user's display: the user's authority file.
            if let Some(a) = &user_auth {
                env.push(("XAUTHORITY", a.as_str()));
            }
        }
    }
    argv.extend(["-nolisten", "tcp", "-noreset"]);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let server = supervise(
        spawn(&plan.server_path, &argv, &env)?,
        plan.server.program(),
        Some(tx),
    );
    let number = match tokio::time::timeout(READY_TIMEOUT, rx).await {
        Ok(Ok(Ok(n))) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n,
        Ok(Ok(Ok(n))) => {
            return Err(StartError::Failed(format!(
                "{} reported no display number ({n:?})",
                plan.server.program()
            )));
        }
        Ok(Ok(Err(why))) => return Err(StartError::Failed(why)),
        Ok(Err(_)) => return Err(StartError::Failed("the server's output ended".into())),
        Err(_) => {
            return Err(StartError::Failed(format!(
                "{} did not report a display within {} s",
                plan.server.program(),
                READY_TIMEOUT.as_secs()
            )));
        }
    };
    let display = format!(":{number}");
    let wm = supervise(
        spawn(
            &plan.wm_path,
            &[crate::desktop::WINDOW_MANAGER, "--sm-disable"],
            &[
                ("DISPLAY", display.as_str()),
                ("XAUTHORITY", auth_file.as_str()),
            ],
        )?,
        crate::desktop::WINDOW_MANAGER,
        None,
    );
    // The engine on the new display, once the window manager manages it (EWMH present),
    // so window lists and focus work from the first request.
    let d = display.clone();
    let (cookie, launch_env) = (
        auth.cookie.clone(),
        vec![("XAUTHORITY".to_owned(), auth_file.clone())],
    );
    let opened = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let last = match shim_cu::open(&OpenOptions {
                display: Some(d.clone()),
                on_launch: Some(register_launched()),
                cookie: Some(cookie.clone()),
                launch_env: launch_env.clone(),
                private_display: true,
            }) {
                Ok(desktop) if desktop.windows.available() => return Ok(engine(desktop)),
                Ok(_) => "the window manager did not take the screen".to_owned(),
                Err(e) => e.to_string(),
            };
            if Instant::now() > deadline {
                return Err(last);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .await
    .map_err(|e| StartError::Failed(e.to_string()))?;
    let engine = match opened {
        Ok(e) => Arc::new(e),
        Err(why) => {
            return Err(StartError::Failed(format!(
                "{display} did not become usable: {why}"
            )));
        }
    };
    if !wm.alive.load(Ordering::SeqCst) || !server.alive.load(Ordering::SeqCst) {
        return Err(StartError::Failed(
            "a process of the isolated display exited while it started".into(),
        ));
    }
    let shown = display.as_str();
    tracing::info!(
        "isolated desktop started on {} ({}) in {} ms",
        shown,
        plan.server.program(),
        began.elapsed().as_millis()
    );
    Ok(Isolated {
        display,
        server: plan.server,
        engine,
        procs: vec![server, wm],
        _auth: auth,
    })
}
