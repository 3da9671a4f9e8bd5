//! The isolated desktop (`computer_use_display = "isolated"`, docs/desktop.md) through the
//! real binary and the platform peer. A private Xvfb stands in for the user's desktop
//! (`DISPLAY` points at it); a recorder window on it, its clipboard and its window list
//! must not change while the agent types, clicks, launches an app and writes the clipboard,
//! and the same actions with `computer_use_display = "user"` must change them (so the
//! checks can see an escape). The X server and window manager must not outlive the daemon.

use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;
use serde_json::json;
use shim_cu::testing::Recorder;
use shim_cu::testing::Xvfb;
use shim_cu::testing::run;
use shim_cu::testing::wait_for;
use shim_platform_peer::Connection;
use shim_platform_peer::PeerConfig;
use shim_protocol::Capability;
use tokio::process::Child;
use x11rb::connection::Connection as _;
use x11rb::protocol::xproto::ConnectionExt as _;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::ask;
use crate::suite::harness::finish;
use crate::suite::harness::stop_cleanly;
use crate::suite::harness::with_op;

const SID: &str = "isolated-session-01";
/// The programs of an isolated desktop, by process name.
const DESKTOP: [&str; 3] = ["Xvfb", "Xephyr", "openbox"];

fn start(env: &Env, vars: &[(&str, &str)]) -> Child {
    let root = env.root.to_str().unwrap().to_owned();
    let mut c = env.command(&[
        "--allowed-root",
        root.as_str(),
        "start",
        "--session-id",
        SID,
        "--enable-computer-use",
        "--enable-clipboard",
    ]);
    for (k, v) in vars {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

/// (pid, name) of every live descendant of `pid`.
fn descendants(pid: u32) -> Vec<(u32, String)> {
    let mut all = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let (Some(a), Some(b)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[a + 1..b].to_owned();
        let mut f = stat[b + 1..].split_ascii_whitespace();
        let state = f.next().unwrap_or("");
        let ppid: u32 = f.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        if state != "Z" && state != "X" {
            all.push((p, ppid, name));
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for (c, pp, name) in &all {
            if *pp == p {
                out.push((*c, name.clone()));
                frontier.push(*c);
            }
        }
    }
    out
}

pub(crate) fn desktop_procs(daemon: u32) -> Vec<(u32, String)> {
    descendants(daemon)
        .into_iter()
        .filter(|(_, n)| DESKTOP.contains(&n.as_str()))
        .collect()
}

/// Whether `pid` is still a live (not zombie) process.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s
            .rfind(')')
            .and_then(|i| s[i + 1..].split_ascii_whitespace().next());
        !matches!(state, Some("Z" | "X"))
    })
}

async fn all_gone(pids: &[(u32, String)]) -> bool {
    for _ in 0..100 {
        if pids.iter().all(|(p, _)| !alive(*p)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// The display the X server `pid` listens on: its listening Unix socket's path.
pub(crate) fn served_display(pid: u32) -> Option<String> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .flatten()
        .filter_map(|e| {
            let l = std::fs::read_link(e.path()).ok()?;
            let l = l.to_string_lossy();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    std::fs::read_to_string("/proc/net/unix")
        .ok()?
        .lines()
        .find_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (inode, path) = (f.get(6)?, f.get(7)?);
            let n = path.split("/tmp/.X11-unix/X").nth(1)?;
            inodes
                .contains(&(*inode).to_owned())
                .then(|| format!(":{n}"))
        })
}

/// `xprop -root` on `display` as user nobody, without any authority file: its stderr.
fn setpriv_nobody(display: &str) -> String {
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "env",
            "-i",
        ])
        .arg(format!("DISPLAY={display}"))
        .args(["xprop", "-root", "_NET_SUPPORTED"])
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    )
}

/// Top-level windows of `display` with their `WM_NAME`.
fn top_level(display: &str) -> Vec<(u32, String)> {
    let (c, n) = x11rb::rust_connection::RustConnection::connect(Some(display)).unwrap();
    let root = c.setup().roots[n].root;
    let tree = c.query_tree(root).unwrap().reply().unwrap();
    tree.children
        .iter()
        .map(|w| {
            let name = c
                .get_property(
                    false,
                    *w,
                    x11rb::protocol::xproto::AtomEnum::WM_NAME,
                    x11rb::protocol::xproto::AtomEnum::ANY,
                    0,
                    256,
                )
                .ok()
                .and_then(|c| c.reply().ok())
                .map(|r| String::from_utf8_lossy(&r.value).into_owned())
                .unwrap_or_default();
            (*w, name)
        })
        .collect()
}

fn png_size(r: &Value) -> (u32, u32) {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(r["payload"]["image_base64"].as_str().unwrap())
        .unwrap();
    let info = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap()
        .info()
        .clone();
    (info.width, info.height)
}

/// The user's desktop: a recorder over the whole screen, a clipboard the test owns, and
/// the windows there before the agent acts.
struct UserDesktop {
    x: Xvfb,
    rec: Recorder,
    before: Vec<(u32, String)>,
}

const USER_CLIP: &str = "the user clipboard text";

impl UserDesktop {
    fn new() -> UserDesktop {
        let x = Xvfb::start(1280, 800);
        // xclip stays in the background as the owner of CLIPBOARD.
        x.spawn(
            "sh",
            &[
                "-c",
                &format!("printf '%s' '{USER_CLIP}' | xclip -selection clipboard -loops 100"),
            ],
        );
        wait_for(T, || {
            (run(&x.display, "xclip", &["-o", "-selection", "clipboard"]) == USER_CLIP)
                .then_some(())
        })
        .expect("user clipboard set");
        let rec = Recorder::start(&x.display, [0, 0, 1280, 800]);
        let before = top_level(&x.display);
        UserDesktop { x, rec, before }
    }

    fn events(&self) -> usize {
        self.rec.events.lock().unwrap().len()
    }

    fn clipboard(&self) -> String {
        run(&self.x.display, "xclip", &["-o", "-selection", "clipboard"])
    }

    /// Top-level windows added since the start, except the Xephyr window that shows the
    /// agent's screen (which is there by design).
    fn new_windows(&self) -> Vec<(u32, String)> {
        top_level(&self.x.display)
            .into_iter()
            .filter(|w| !self.before.iter().any(|b| b.0 == w.0))
            .filter(|(_, name)| !name.contains("AutoGPT agent desktop"))
            .collect()
    }

    fn has_window(&self, title: &str) -> bool {
        top_level(&self.x.display).iter().any(|(_, n)| n == title)
    }
}

/// The agent's actions: launch an xterm that writes what it gets to `sink`, find it in
/// the window list, focus it, type into it, click, write the clipboard, screenshot.
/// Returns the screenshot's size.
async fn act(conn: &Connection, sink: &std::path::Path, title: &str) -> (u32, u32) {
    let cmd = format!("cat > '{}'", sink.display());
    let r = ask(
        conn,
        "APP_LAUNCH",
        json!({"executable_path": "xterm", "args": ["-T", title, "-geometry", "60x10+40+40", "-e", "sh", "-c", cmd]}),
    )
    .await;
    assert_eq!(r["type"], "ACK", "{r}");
    let id = {
        let mut found = None;
        for _ in 0..100 {
            let r = ask(conn, "WINDOW_LIST_REQUEST", json!({})).await;
            if let Some(w) = r["payload"]["windows"]
                .as_array()
                .and_then(|ws| ws.iter().find(|w| w["title"] == title))
            {
                found = Some(w["window_id"].as_str().unwrap().to_owned());
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        found
    };
    if let Some(id) = id {
        let r = ask(conn, "WINDOW_FOCUS", json!({"window_id": id})).await;
        assert_eq!(r["type"], "ACK", "{r}");
    } else {
        // No window manager on the user's display: click into the xterm instead.
        wait_for(T, || sink.exists().then_some(())).expect("xterm started");
        tokio::time::sleep(Duration::from_millis(300)).await;
        ask(
            conn,
            "INPUT_ACTION",
            json!({"action": "left_click", "coordinate": [80, 80]}),
        )
        .await;
    }
    wait_for(T, || sink.exists().then_some(())).expect("xterm started");
    for (action, extra) in [
        ("type", json!({"text": "typed by the agent"})),
        ("key", json!({"key": "enter"})),
        ("key", json!({"key": "ctrl+d"})),
    ] {
        let mut p = extra;
        p["action"] = json!(action);
        let r = ask(conn, "INPUT_ACTION", p).await;
        assert_eq!(r["type"], "ACK", "{r}");
    }
    let r = ask(
        conn,
        "INPUT_ACTION",
        json!({"action": "left_click", "coordinate": [600, 500]}),
    )
    .await;
    assert_eq!(r["type"], "ACK", "{r}");
    let r = ask(
        conn,
        "CLIPBOARD_WRITE",
        json!({"format": "text", "content": "written by the agent"}),
    )
    .await;
    assert_eq!(r["type"], "ACK", "{r}");
    let r = ask(
        conn,
        "SCREENSHOT_REQUEST",
        json!({"format": "png", "include_cursor": false}),
    )
    .await;
    assert_eq!(r["type"], "SCREENSHOT_RESPONSE", "{r}");
    png_size(&r)
}

#[tokio::test]
async fn isolated_display_leaves_the_users_desktop_untouched() {
    let user = UserDesktop::new();
    let env = Env::new(PeerConfig::default()).await;
    let sink = env.dir.path().join("sink.txt");
    let child = start(
        &env,
        &[
            ("DISPLAY", user.x.display.as_str()),
            ("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "isolated"),
            ("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY_SIZE", "1024x640"),
        ],
    );
    let daemon = child.id().unwrap();
    let conn = env.next().await;
    assert!(conn.hello.capabilities.contains(&Capability::ComputerUse));
    assert_eq!(conn.hello.screen_resolution, Some([1024, 640]));
    assert!(
        conn.hello
            .computer_use_features
            .contains(&"window.list".to_owned())
    );
    // Nothing runs before the first computer-use request.
    assert!(
        desktop_procs(daemon).is_empty(),
        "{:?}",
        desktop_procs(daemon)
    );

    let size = act(&conn, &sink, "agentwin").await;

    // It happened, on the isolated display: the typed text reached the app, the
    // screenshot has the isolated size, the clipboard reads back.
    let got = wait_for(T, || {
        let s = std::fs::read_to_string(&sink).ok()?;
        s.ends_with('\n').then_some(s)
    });
    assert_eq!(got.as_deref(), Some("typed by the agent\n"));
    assert_eq!(size, (1024, 640));
    let r = ask(&conn, "CLIPBOARD_READ", json!({"format": "text"})).await;
    assert_eq!(r["payload"]["content"], "written by the agent", "{r}");
    let procs = desktop_procs(daemon);
    let names: Vec<&str> = procs.iter().map(|(_, n)| n.as_str()).collect();
    assert!(names.contains(&"openbox"), "{procs:?}");
    // The user has a desktop, so the agent's screen is a window on it (xtask installs
    // Xephyr for the tests).
    assert!(names.contains(&"Xephyr"), "{procs:?}");
    let server = procs.iter().find(|(_, n)| n == "Xephyr").unwrap().0;
    let cmdline = std::fs::read_to_string(format!("/proc/{server}/cmdline")).unwrap();
    let args: Vec<&str> = cmdline.split('\0').collect();
    let auth_file = args[args.iter().position(|a| *a == "-auth").unwrap() + 1].to_owned();
    assert!(std::path::Path::new(&auth_file).is_file());
    assert!(
        top_level(&user.x.display)
            .iter()
            .any(|(_, n)| n.contains("AutoGPT agent desktop")),
        "the Xephyr window is on the user's desktop"
    );

    // The user's desktop saw none of it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(user.events(), 0, "{:?}", user.rec.events.lock().unwrap());
    assert_eq!(user.clipboard(), USER_CLIP);
    assert!(!user.has_window("agentwin"));
    assert!(user.new_windows().is_empty(), "{:?}", user.new_windows());

    // Each record says the display mode; the start record too.
    stop_cleanly(child).await;
    let records = env.audit_records();
    let start = with_op(&records, "SHIM_START");
    assert_eq!(start[0]["details"]["computer_use_display"], "isolated");
    for op in [
        "APP_LAUNCH",
        "INPUT_ACTION",
        "CLIPBOARD_WRITE",
        "SCREENSHOT_REQUEST",
    ] {
        let recs = with_op(&records, op);
        assert!(!recs.is_empty(), "{op}");
        assert!(
            recs.iter().all(|r| r["details"]["display"] == "isolated"),
            "{op}"
        );
    }
    // After SIGTERM, nothing of the desktop is left, its authority file neither.
    assert!(all_gone(&procs).await, "{procs:?} still running");
    assert!(!std::path::Path::new(&auth_file).exists(), "{auth_file}");
}

#[tokio::test]
async fn the_same_actions_on_the_users_display_are_seen() {
    // Shows the checks above can see an escape.
    let user = UserDesktop::new();
    let env = Env::new(PeerConfig::default()).await;
    let sink = env.dir.path().join("sink.txt");
    let child = start(
        &env,
        &[
            ("DISPLAY", user.x.display.as_str()),
            ("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "user"),
        ],
    );
    let daemon = child.id().unwrap();
    let conn = env.next().await;
    assert_eq!(conn.hello.screen_resolution, Some([1280, 800]));
    let size = act(&conn, &sink, "userwin").await;
    assert_eq!(size, (1280, 800));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(user.events() > 0, "the recorder saw no input");
    assert_eq!(user.clipboard(), "written by the agent");
    assert!(user.has_window("userwin"));
    assert!(!user.new_windows().is_empty());
    assert!(desktop_procs(daemon).is_empty());
    stop_cleanly(child).await;
    let records = env.audit_records();
    assert_eq!(
        with_op(&records, "SHIM_START")[0]["details"]["computer_use_display"],
        "user"
    );
    assert!(
        with_op(&records, "INPUT_ACTION")
            .iter()
            .all(|r| r["details"].get("display").is_none())
    );
}

/// Starts the daemon and its isolated desktop, and launches an app there that does not
/// need the X server to keep running (so only the sentinel can end it). Returns the
/// desktop's processes and the app.
async fn started_desktop(env: &Env, vars: &[(&str, &str)]) -> (Child, Vec<(u32, String)>) {
    let child = start(env, vars);
    let daemon = child.id().unwrap();
    let conn = env.next().await;
    let r = ask(&conn, "DISPLAY_INFO_REQUEST", json!({})).await;
    assert_eq!(r["type"], "DISPLAY_INFO_RESPONSE", "{r}");
    let mut procs = desktop_procs(daemon);
    assert_eq!(procs.len(), 2, "{procs:?}");
    let r = ask(
        &conn,
        "APP_LAUNCH",
        json!({"executable_path": "sleep", "args": ["987"]}),
    )
    .await;
    assert_eq!(r["type"], "ACK", "{r}");
    let app: Vec<_> = descendants(daemon)
        .into_iter()
        .filter(|(_, n)| n == "sleep")
        .collect();
    assert_eq!(app.len(), 1, "{app:?}");
    // The app sees the isolated display and its key, never the daemon's secrets.
    let environ = std::fs::read(format!("/proc/{}/environ", app[0].0)).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    let vars: Vec<&str> = environ.split('\0').collect();
    assert!(vars.iter().any(|v| v.starts_with("DISPLAY=:")), "{vars:?}");
    assert!(
        vars.iter()
            .any(|v| v.starts_with("XAUTHORITY=") && v.contains("autogpt-shim-desktop-")),
        "{vars:?}"
    );
    assert!(
        !vars.iter().any(|v| v.starts_with("AUTOGPT_SHIM_")),
        "{vars:?}"
    );
    procs.extend(app);
    (child, procs)
}

#[tokio::test]
async fn the_isolated_desktop_dies_with_a_killed_daemon() {
    let env = Env::new(PeerConfig::default()).await;
    // No user desktop: Xvfb.
    let (mut child, procs) =
        started_desktop(&env, &[("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "isolated")]).await;
    let xvfb = procs.iter().find(|(_, n)| n == "Xvfb").expect("Xvfb").0;
    // Its display refuses clients without the daemon's cookie (other local users).
    let display = served_display(xvfb).expect("the server's socket");
    let refused = setpriv_nobody(&display);
    assert!(
        refused.contains("Authorization required") || refused.contains("refused"),
        "{display}: {refused}"
    );
    child.start_kill().unwrap();
    let _ = child.wait().await;
    assert!(
        all_gone(&procs).await,
        "{procs:?} outlived a SIGKILLed daemon"
    );
}

#[tokio::test]
async fn a_missing_or_failing_x_server_is_a_clear_error_and_starts_nothing() {
    // PATH without Xvfb or Xephyr (openbox present).
    let env = Env::new(PeerConfig::default()).await;
    let bin = env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink("/usr/bin/openbox", bin.join("openbox")).unwrap();
    let path = bin.to_str().unwrap().to_owned();
    let child = start(
        &env,
        &[
            ("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "isolated"),
            ("PATH", path.as_str()),
        ],
    );
    let daemon = child.id().unwrap();
    let conn = env.next().await;
    let r = ask(&conn, "SCREENSHOT_REQUEST", json!({"format": "png"})).await;
    assert_eq!(r["type"], "ERROR", "{r}");
    assert_eq!(r["payload"]["code"], "DEPENDENCY_MISSING", "{r}");
    assert_eq!(r["payload"]["details"]["dep"], "Xvfb", "{r}");
    let m = r["payload"]["message"].as_str().unwrap();
    assert!(m.contains("install the xvfb package"), "{m}");
    assert!(
        descendants(daemon)
            .iter()
            .all(|(_, n)| !DESKTOP.contains(&n.as_str()))
    );
    stop_cleanly(child).await;
    let records = env.audit_records();
    let shots = with_op(&records, "SCREENSHOT_REQUEST");
    assert_eq!(shots.len(), 1);
    assert_eq!(shots[0]["result"]["error_code"], "DEPENDENCY_MISSING");

    // An X server that exits at once: INTERNAL_ERROR naming it; the window manager is
    // never started and nothing stays.
    std::fs::write(
        bin.join("Xvfb"),
        "#!/bin/sh\necho 'cannot open display' >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(bin.join("Xvfb"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let sh = "/bin";
    let path = format!("{}:{sh}", bin.display());
    let child = start(
        &env,
        &[
            ("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "isolated"),
            ("PATH", path.as_str()),
        ],
    );
    let daemon = child.id().unwrap();
    let conn = env.next().await;
    let r = ask(&conn, "CURSOR_POSITION_REQUEST", json!({})).await;
    assert_eq!(r["payload"]["code"], "INTERNAL_ERROR", "{r}");
    let m = r["payload"]["message"].as_str().unwrap();
    assert!(m.contains("isolated display did not start"), "{m}");
    assert!(m.contains("cannot open display"), "{m}");
    assert!(
        descendants(daemon)
            .iter()
            .all(|(_, n)| !DESKTOP.contains(&n.as_str()))
    );
    stop_cleanly(child).await;
}

#[tokio::test]
async fn isolated_refuses_a_bad_value_with_exit_78() {
    let env = Env::new(PeerConfig::default()).await;
    let child = start(&env, &[("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "isolate")]);
    let (code, _, err) = finish(child, T).await;
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY"), "{err}");
}

#[tokio::test]
async fn the_isolated_desktop_stops_with_the_session() {
    use crate::suite::control;
    let env = Env::new(PeerConfig::default()).await;
    env.home_dirs(&["A"]);
    let (child, conn) = control::start(
        &env,
        &[
            ("AUTOGPT_SHIM_ENABLE_COMPUTER_USE", "true"),
            ("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "isolated"),
        ],
    )
    .await;
    let daemon = child.id().unwrap();
    let sid = "isolated-chat-0001";
    control::browse_and_attach(&conn, sid, "A").await;
    let data = control::activate_child(&env, &conn, sid).await;
    assert!(desktop_procs(daemon).is_empty());
    let r = ask(&data, "DISPLAY_INFO_REQUEST", json!({})).await;
    assert_eq!(r["type"], "DISPLAY_INFO_RESPONSE", "{r}");
    let procs = desktop_procs(daemon);
    assert_eq!(procs.len(), 2, "{procs:?}");
    // Idle for longer than a blocking-pool thread lives (10 s): the parent-death signal is
    // tied to the spawning thread, so the desktop must not have been spawned from one.
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(desktop_procs(daemon), procs);
    let r = ask(&data, "DISPLAY_INFO_REQUEST", json!({})).await;
    assert_eq!(r["type"], "DISPLAY_INFO_RESPONSE", "{r}");
    assert_eq!(
        desktop_procs(daemon),
        procs,
        "the same desktop serves the chat"
    );
    // The chat ends: its desktop stops while the daemon keeps running.
    let r = conn.request(control::detach(sid), T).await.unwrap();
    assert_eq!(r.frame.message_type().as_str(), "ACK");
    data.closed(T).await.unwrap();
    assert!(all_gone(&procs).await, "{procs:?} outlived the session");
    assert!(desktop_procs(daemon).is_empty());
    stop_cleanly(child).await;
}

#[tokio::test]
async fn two_daemons_starting_at_once_get_different_displays() {
    // -displayfd: each server takes a free display number itself; no race between them.
    let (a, b) = (
        Env::new(PeerConfig::default()).await,
        Env::new(PeerConfig::default()).await,
    );
    let iso = [("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "isolated")];
    let (ca, cb) = (start(&a, &iso), start(&b, &iso));
    let (conn_a, conn_b) = (a.next().await, b.next().await);
    let (ra, rb) = tokio::join!(
        ask(&conn_a, "DISPLAY_INFO_REQUEST", json!({})),
        ask(&conn_b, "DISPLAY_INFO_REQUEST", json!({}))
    );
    assert_eq!(ra["type"], "DISPLAY_INFO_RESPONSE", "{ra}");
    assert_eq!(rb["type"], "DISPLAY_INFO_RESPONSE", "{rb}");
    let server = |daemon: u32| {
        let p = desktop_procs(daemon);
        let x = p.iter().find(|(_, n)| n == "Xvfb").expect("Xvfb").0;
        served_display(x).expect("its socket")
    };
    let (da, db) = (server(ca.id().unwrap()), server(cb.id().unwrap()));
    assert_ne!(da, db);
    stop_cleanly(ca).await;
    stop_cleanly(cb).await;
}

#[tokio::test]
async fn an_unprivileged_daemon_runs_and_reaps_its_isolated_desktop() {
    // Tests run as root; the daemon runs as an ordinary user.
    use crate::suite::sandbox::NOBODY;
    let env = Env::new(PeerConfig::default()).await;
    crate::suite::sandbox::chown_all(env.dir.path(), NOBODY);
    let root = env.root_str().to_owned();
    let mut c = crate::suite::sandbox::daemon_command(
        &env,
        &[
            "--allowed-root",
            root.as_str(),
            "start",
            "--session-id",
            SID,
            "--enable-computer-use",
        ],
        Some(NOBODY),
    );
    c.env("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "isolated");
    let mut child = c.spawn().unwrap();
    let daemon = child.id().unwrap();
    let conn = env.next().await;
    let r = ask(&conn, "SCREENSHOT_REQUEST", json!({"format": "png"})).await;
    assert_eq!(r["type"], "SCREENSHOT_RESPONSE", "{r}");
    assert_eq!(png_size(&r), (1280, 800));
    let procs = desktop_procs(daemon);
    assert_eq!(procs.len(), 2, "{procs:?}");
    for (pid, name) in &procs {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
        assert!(uid.contains(&NOBODY.to_string()), "{name}: {uid}");
    }
    child.start_kill().unwrap();
    let _ = child.wait().await;
    assert!(
        all_gone(&procs).await,
        "{procs:?} outlived a SIGKILLed daemon"
    );
}

/// COMPUTER_USE_HW.md 2.2: in a Wayland session (`WAYLAND_DISPLAY` and `XDG_SESSION_TYPE`
/// set, and an X display that would be the session's XWayland), the private desktop is
/// advertised with the x11 lists and serves its first screenshot; with `user` mode the same
/// session advertises no computer use at all.
#[tokio::test]
async fn under_wayland_the_isolated_desktop_serves_and_the_users_display_is_not_offered() {
    let xwayland = Xvfb::start(800, 600);
    let wayland = [
        ("WAYLAND_DISPLAY", "wayland-test-0"),
        ("XDG_SESSION_TYPE", "wayland"),
        ("DISPLAY", xwayland.display.as_str()),
    ];
    let env = Env::new(PeerConfig::default()).await;
    let mut vars = wayland.to_vec();
    vars.extend([
        ("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "isolated"),
        ("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY_SIZE", "1024x640"),
    ]);
    let child = start(&env, &vars);
    let daemon = child.id().unwrap();
    let conn = env.next().await;
    assert!(conn.hello.capabilities.contains(&Capability::ComputerUse));
    assert_eq!(conn.hello.screen_resolution, Some([1024, 640]));
    assert!(
        conn.hello
            .computer_use_features
            .iter()
            .any(|f| f == "window.list"),
        "{:?}",
        conn.hello.computer_use_features
    );
    let r = ask(
        &conn,
        "SCREENSHOT_REQUEST",
        json!({"format": "png", "include_cursor": false}),
    )
    .await;
    assert_eq!(r["type"], "SCREENSHOT_RESPONSE", "{r}");
    assert_eq!(png_size(&r), (1024, 640));
    assert_eq!(desktop_procs(daemon).len(), 2);
    stop_cleanly(child).await;

    let env = Env::new(PeerConfig::default()).await;
    let mut vars = wayland.to_vec();
    vars.push(("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "user"));
    let child = start(&env, &vars);
    let conn = env.next().await;
    assert!(!conn.hello.capabilities.contains(&Capability::ComputerUse));
    assert!(conn.hello.computer_use_features.is_empty());
    assert!(conn.hello.computer_use_features_coarse.is_empty());
    assert_eq!(conn.hello.screen_resolution, None);
    stop_cleanly(child).await;
}
