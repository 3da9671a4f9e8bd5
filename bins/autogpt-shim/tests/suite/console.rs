//! The web console through the real binary and the platform peer: its security rules on raw
//! HTTP (wrong Host, no cookie, a cross-origin POST, a token used twice, a huge body, no
//! CORS, loopback only), and the page in a real headless Chromium driven over WebDriver
//! (a chat with its folder, approve, deny, kill, pause and resume), with a screenshot saved
//! in the test's output directory.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use serde_json::json;
use shim_platform_peer::PeerConfig;
use shim_protocol::Message;
use shim_protocol::messages::exec::ExecuteCommand;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::error_code;
use crate::suite::harness::finish;
use crate::suite::harness::pgrep;
use crate::suite::harness::wait_until;
use crate::suite::harness::with_op;

const SID: &str = "console-session";

/// Runs `autogpt-shim console --no-open` and returns the URL (its first line of output).
pub(crate) async fn console_url(env: &Env) -> String {
    let (code, out, err) = finish(env.command(&["console", "--no-open"]).spawn().unwrap(), T).await;
    assert_eq!(code, 0, "{out}{err}");
    let url = out.lines().next().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert!(url.contains("/?token="), "{url}");
    url
}

/// One HTTP/1.1 answer.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `head` (request line and headers, without the blank line) and `body` on a fresh
/// connection to `addr`, as a hostile client would: nothing is added or checked.
async fn raw(addr: &str, head: &str, body: &[u8]) -> Answer {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("{head}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    // The server may answer (and close) before it read a large body.
    let _ = s.write_all(body).await;
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(T, s.read_to_end(&mut buf)).await;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// `(address, path and query of the login link)`.
fn split(url: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_once('/').unwrap();
    (addr.to_owned(), format!("/{path}"))
}

fn get(path: &str, host: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {host}{extra}")
}

#[tokio::test]
async fn the_console_refuses_what_it_must_and_serves_its_own_page() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &["--enable-shell"]);
    let _conn = env.next().await;
    let url = console_url(&env).await;
    let (addr, login) = split(&url);

    // The server listens on 127.0.0.1 only.
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default()
        + &std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
    let listening: Vec<&str> = tcp
        .lines()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3
                && f[3] == "0A"
                && f[1].rsplit(':').next() == Some(&format!("{port:04X}")[..])
        })
        .collect();
    assert!(!listening.is_empty(), "the console's port is not listening");
    for l in &listening {
        assert!(
            l.split_whitespace()
                .nth(1)
                .unwrap()
                .starts_with("0100007F:"),
            "{l}"
        );
    }

    // A wrong Host header (DNS rebinding) is refused, even with a valid token, which stays
    // unused.
    for host in ["evil.example", &format!("localhost:{port}"), "127.0.0.1"] {
        let a = raw(&addr, &get(&login, host, ""), b"").await;
        assert_eq!(a.status, 403, "{host}: {a:?}");
        assert!(a.body.contains("Host"), "{a:?}");
    }
    // Without a cookie: the page and the API are refused.
    for path in ["/", "/api/state", "/api/events", "/api/screenshot"] {
        let a = raw(&addr, &get(path, &addr, ""), b"").await;
        assert_eq!(a.status, 401, "{path}: {a:?}");
        assert!(a.header("set-cookie").is_none());
    }
    let a = raw(
        &addr,
        &format!(
            "POST /api/pause HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\nContent-Length: 0"
        ),
        b"",
    )
    .await;
    assert_eq!(a.status, 401, "{a:?}");
    // A made-up token is refused.
    let a = raw(&addr, &get("/?token=00ff", &addr, ""), b"").await;
    assert_eq!(a.status, 403, "{a:?}");

    // The token becomes an HttpOnly, SameSite=Strict cookie, once.
    let a = raw(&addr, &get(&login, &addr, ""), b"").await;
    assert_eq!(a.status, 303, "{a:?}");
    assert_eq!(a.header("location"), Some("/"));
    let set = a.header("set-cookie").unwrap().to_owned();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(part), "{set}");
    }
    let cookie = set.split(';').next().unwrap().to_owned();
    let a = raw(&addr, &get(&login, &addr, ""), b"").await;
    assert_eq!(a.status, 403, "a reused token must be refused: {a:?}");
    assert!(a.body.contains("already used"), "{a:?}");
    assert!(a.header("set-cookie").is_none());

    // With the cookie: the page, with a strict CSP and no inline script.
    let with_cookie = format!("\r\nCookie: {cookie}");
    let a = raw(&addr, &get("/", &addr, &with_cookie), b"").await;
    assert_eq!(a.status, 200, "{a:?}");
    let csp = a.header("content-security-policy").unwrap();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    assert!(a.body.contains("<script src=\"/assets/app.js\""));
    assert!(!a.body.contains("<script>"), "inline script in the page");
    assert_eq!(a.header("x-content-type-options"), Some("nosniff"));
    let a = raw(&addr, &get("/api/state", &addr, &with_cookie), b"").await;
    assert_eq!(a.status, 200, "{a:?}");
    let v: Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(v["status"]["connections"][0]["folder"], env.root_str());

    // No CORS: an answer never names another origin, and a preflight gets nothing.
    let a = raw(
        &addr,
        &get(
            "/api/state",
            &addr,
            &format!("{with_cookie}\r\nOrigin: http://evil.example"),
        ),
        b"",
    )
    .await;
    assert!(a.header("access-control-allow-origin").is_none(), "{a:?}");
    let a = raw(
        &addr,
        &format!("OPTIONS /api/pause HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\nAccess-Control-Request-Method: POST"),
        b"",
    )
    .await;
    assert!(a.status >= 400, "{a:?}");
    assert!(a.header("access-control-allow-origin").is_none(), "{a:?}");

    // A cross-origin POST with the cookie (what a forged form would send) is refused, as is
    // one without an Origin.
    for origin in ["\r\nOrigin: http://evil.example", "\r\nOrigin: null", ""] {
        let a = raw(
            &addr,
            &format!(
                "POST /api/pause HTTP/1.1\r\nHost: {addr}{with_cookie}{origin}\r\nContent-Length: 0"
            ),
            b"",
        )
        .await;
        assert_eq!(a.status, 403, "{origin:?}: {a:?}");
    }
    // A huge body is refused, by its length and when chunked, and the console keeps serving.
    let a = raw(
        &addr,
        &format!("POST /api/pause HTTP/1.1\r\nHost: {addr}{with_cookie}\r\nOrigin: http://{addr}\r\nContent-Length: 100000000"),
        b"",
    )
    .await;
    assert_eq!(a.status, 413, "{a:?}");
    let mut chunked = Vec::new();
    // 6000 bytes in three chunks: over the 4096-byte limit, small enough that the server
    // reads it all (so that closing does not reset the connection before the answer).
    for _ in 0..3 {
        chunked.extend_from_slice(b"7d0\r\n");
        chunked.extend_from_slice(&[b'y'; 2000]);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let a = raw(
        &addr,
        &format!("POST /api/pause HTTP/1.1\r\nHost: {addr}{with_cookie}\r\nOrigin: http://{addr}\r\nTransfer-Encoding: chunked"),
        &chunked,
    )
    .await;
    assert_eq!(a.status, 413, "{a:?}");
    let (_, out, _) = finish(env.command(&["status", "--json"]).spawn().unwrap(), T).await;
    let s: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(s["paused"], false, "a refused request paused the daemon");

    // The right request: the cookie and the console's own Origin.
    let a = raw(
        &addr,
        &format!("POST /api/pause HTTP/1.1\r\nHost: {addr}{with_cookie}\r\nOrigin: http://{addr}\r\nContent-Length: 0"),
        b"",
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    let (_, out, _) = finish(env.command(&["status", "--json"]).spawn().unwrap(), T).await;
    let s: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(s["paused"], true);
    // Unknown approval and operation ids are clear refusals.
    for (path, code) in [
        ("/api/approvals/999/approve", 404),
        ("/api/operations/999/kill", 404),
        // "Always allow" without a policy file: refused, nothing approved.
        ("/api/approvals/999/always", 409),
    ] {
        let a = raw(
            &addr,
            &format!("POST {path} HTTP/1.1\r\nHost: {addr}{with_cookie}\r\nOrigin: http://{addr}\r\nContent-Length: 0"),
            b"",
        )
        .await;
        assert_eq!(a.status, code, "{path}: {a:?}");
    }
    env.stop(child).await;
    let records = env.audit_records();
    let local = with_op(&records, "LOCAL_CONTROL");
    assert_eq!(local.len(), 1, "{local:?}");
    assert_eq!(local[0]["details"]["action"], "pause");
    assert_eq!(local[0]["details"]["decided_by"], "console");
    env.verify_audit();
}

/// A minimal W3C WebDriver client over reqwest (the HTTP client the tests already use):
/// enough for navigate, find, click, text and screenshot. `chromedriver` is Debian's
/// `chromium-driver`.
pub(crate) struct Driver {
    http: reqwest::Client,
    base: String,
    session: String,
    process: tokio::process::Child,
}

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Driver {
    /// Starts chromedriver and a headless Chromium; `None` (the test skips, saying so) when
    /// they are not installed, unless `SHIM_REQUIRE_BROWSER=1` (CI), where it panics.
    pub(crate) async fn start(profile: &std::path::Path) -> Option<Driver> {
        let exe = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists());
        let browser = PathBuf::from("/usr/bin/chromium");
        let (Some(exe), true) = (exe, browser.exists()) else {
            assert!(
                std::env::var("SHIM_REQUIRE_BROWSER").map_or(true, |v| v != "1"),
                "SHIM_REQUIRE_BROWSER=1 but chromium / chromium-driver are not installed"
            );
            eprintln!(
                "skipping: chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
            );
            return None;
        };
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let process = tokio::process::Command::new(exe)
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let mut ready = false;
        for _ in 0..100 {
            if let Ok(r) = http.get(format!("{base}/status")).send().await
                && let Ok(t) = r.text().await
                && let Ok(v) = serde_json::from_str::<Value>(&t)
                && v["value"]["ready"] == true
            {
                ready = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ready, "chromedriver did not start");
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": browser,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                    "--disable-gpu", "--window-size=1400,1100", "--no-first-run",
                    format!("--user-data-dir={}", profile.display()),
                ],
            },
        }}});
        let r = http
            .post(format!("{base}/session"))
            .header("content-type", "application/json")
            .body(caps.to_string())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let r: Value = serde_json::from_str(&r).unwrap();
        let session = r["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {r}"))
            .to_owned();
        Some(Driver {
            http,
            base,
            session,
            process,
        })
    }

    pub(crate) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut req = self.http.request(method, url);
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let text = req.send().await.unwrap().text().await.unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        v["value"].clone()
    }

    pub(crate) async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    /// The element matching `css`, if any.
    pub(crate) async fn find(&self, css: &str) -> Option<String> {
        let v = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        v[ELEMENT].as_str().map(str::to_owned)
    }

    /// Waits until `css` matches and its text contains `text`; returns the element.
    pub(crate) async fn wait_for(&self, css: &str, text: &str) -> String {
        let mut last = String::new();
        for _ in 0..150 {
            if let Some(e) = self.find(css).await {
                last = self.text(&e).await;
                if last.contains(text) {
                    return e;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let page = self.call(reqwest::Method::GET, "/source", None).await;
        let url = self.call(reqwest::Method::GET, "/url", None).await;
        panic!("{css} never showed {text:?} (last: {last:?}); page {url}: {page}");
    }

    pub(crate) async fn text(&self, element: &str) -> String {
        self.call(
            reqwest::Method::GET,
            &format!("/element/{element}/text"),
            None,
        )
        .await
        .as_str()
        .unwrap_or("")
        .to_owned()
    }

    pub(crate) async fn click(&self, css: &str) {
        let e = self
            .find(css)
            .await
            .unwrap_or_else(|| panic!("nothing matches {css}"));
        let r = self
            .call(
                reqwest::Method::POST,
                &format!("/element/{e}/click"),
                Some(json!({})),
            )
            .await;
        assert!(r.is_null(), "click on {css}: {r}");
    }

    pub(crate) async fn screenshot(&self) -> Vec<u8> {
        use base64::Engine as _;
        let v = self.call(reqwest::Method::GET, "/screenshot", None).await;
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap())
            .unwrap()
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page; its result.
    pub(crate) async fn execute(&self, script: &str, args: Value) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
        .await
    }

    /// A real left click (pointer actions) at viewport point (`x`, `y`).
    pub(crate) async fn click_at(&self, x: i64, y: i64) {
        let actions = json!({"actions": [{"type": "pointer", "id": "mouse",
        "parameters": {"pointerType": "mouse"}, "actions": [
            {"type": "pointerMove", "duration": 0, "x": x, "y": y, "origin": "viewport"},
            {"type": "pointerDown", "button": 0},
            {"type": "pointerUp", "button": 0},
        ]}]});
        let r = self
            .call(reqwest::Method::POST, "/actions", Some(actions))
            .await;
        assert!(r.is_null(), "click at ({x}, {y}): {r}");
    }

    /// Types `text` into `css` (key events on the focused element).
    pub(crate) async fn type_into(&self, css: &str, text: &str) {
        let e = self
            .find(css)
            .await
            .unwrap_or_else(|| panic!("nothing matches {css}"));
        self.call(
            reqwest::Method::POST,
            &format!("/element/{e}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Ends the session and the browser (see the `Drop` impl).
    pub(crate) fn quit(self) {
        drop(self);
    }
}

impl Drop for Driver {
    /// Ends the WebDriver session, so that chromedriver closes the browser, also when the
    /// test panics (killing chromedriver alone would leave Chromium running); then
    /// `kill_on_drop` ends chromedriver.
    fn drop(&mut self) {
        use std::io::Read as _;
        use std::io::Write as _;
        let addr = self.base.trim_start_matches("http://").to_owned();
        if let Ok(mut s) = std::net::TcpStream::connect(&addr) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
            let _ = write!(
                s,
                "DELETE /session/{} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n",
                self.session
            );
            let mut answer = Vec::new();
            let _ = s.read_to_end(&mut answer);
        }
        let _ = self.process.start_kill();
    }
}

fn shell(cmd: &str) -> Message {
    Message::ExecuteCommand(ExecuteCommand {
        command: Some(cmd.into()),
        ..ExecuteCommand::default()
    })
}

const POLICY: &str = r#"default = "allow"

[[rule]]
decision = "prompt"
prefix = ["touch"]
"#;

#[tokio::test]
async fn the_console_in_a_real_browser_approves_denies_kills_pauses_and_resumes() {
    let env = Env::new(PeerConfig::default()).await;
    let home = env.home_dirs(&["Site"]);
    let policy = env.dir.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let policy = policy.to_str().unwrap().to_owned();
    let Some(driver) = Driver::start(&env.dir.path().join("chromium-profile")).await else {
        return;
    };
    let started = std::time::Instant::now();
    let (child, control) = crate::suite::control::start(
        &env,
        &[
            ("AUTOGPT_SHIM_ENABLE_SHELL", "true"),
            ("AUTOGPT_SHIM_COMMAND_POLICY_FILE", &policy),
            ("AUTOGPT_SHIM_APPROVAL_TIMEOUT_SECONDS", "20"),
        ],
    )
    .await;
    crate::suite::control::browse_and_attach(&control, "chat-1", "Site").await;
    let data =
        std::sync::Arc::new(crate::suite::control::activate_child(&env, &control, "chat-1").await);
    let folder = std::fs::canonicalize(home.join("Site")).unwrap();
    let folder = folder.to_str().unwrap().to_owned();

    // Log in with the one-time link; the chat shows with its folder.
    driver.goto(&console_url(&env).await).await;
    driver.wait_for("#live", "live").await;
    driver.wait_for("tr[data-session='chat-1']", &folder).await;
    driver
        .wait_for("tr[data-session='chat-1']", "connected")
        .await;

    // A `prompt` command appears; a click on Approve runs it and the peer gets its result.
    let ask = {
        let data = data.clone();
        tokio::spawn(async move { data.request(shell("touch approved"), T).await })
    };
    driver
        .wait_for("#approvals tr[data-approval]", "touch approved")
        .await;
    driver
        .click("#approvals tr[data-approval] button[data-action='approve']")
        .await;
    let r = ask.await.unwrap().unwrap();
    assert!(
        matches!(r.frame.message, Message::CommandResult(_)),
        "{:?}",
        r.frame.message
    );
    assert!(home.join("Site/approved").exists());

    // Deny answers the refusal; nothing runs.
    let ask = {
        let data = data.clone();
        tokio::spawn(async move { data.request(shell("touch denied"), T).await })
    };
    driver
        .wait_for("#approvals tr[data-approval]", "touch denied")
        .await;
    driver
        .click("#approvals tr[data-approval] button[data-action='deny']")
        .await;
    let r = ask.await.unwrap().unwrap();
    assert_eq!(error_code(&r.frame.message), "PERMISSION_PENDING");
    assert!(!home.join("Site/denied").exists());

    // Kill ends a running command and its children.
    let marker = "console-kill-marker-5150";
    let running = {
        let data = data.clone();
        let cmd = format!("sleep 3131 & sleep 3132; echo {marker}");
        tokio::spawn(async move { data.request(shell(&cmd), T).await })
    };
    wait_until("the command runs", || {
        pgrep("sleep 3131") && pgrep("sleep 3132")
    })
    .await;
    driver
        .wait_for("#operations tr[data-operation]", "sleep 3131")
        .await;
    let shot_with_work = driver.screenshot().await;
    driver
        .click("#operations tr[data-operation] button[data-action='kill']")
        .await;
    let r = running.await.unwrap().unwrap();
    match &r.frame.message {
        Message::CommandResult(c) => assert_eq!(c.exit_code, -9, "{c:?}"),
        other => panic!("expected COMMAND_RESULT, got {other:?}"),
    }
    wait_until("the command and its children are gone", || {
        !pgrep("sleep 3131") && !pgrep("sleep 3132")
    })
    .await;

    // Pause makes the next request fail; resume restores it.
    driver.click("#pause").await;
    driver.wait_for("#daemon", "PAUSED").await;
    let r = data.request(shell("echo during-pause"), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "SHIM_OVERLOADED");
    driver.click("#resume").await;
    driver.wait_for("#daemon", "running").await;
    let r = data.request(shell("echo after-resume"), T).await.unwrap();
    assert!(
        matches!(r.frame.message, Message::CommandResult(_)),
        "{:?}",
        r.frame.message
    );
    // The audit log in words shows what happened.
    driver
        .wait_for("#audit", "A command was approved (by console).")
        .await;
    driver
        .wait_for("#audit", "The local user resumed the executor (console).")
        .await;

    // Screenshots of the page, for a person to look at.
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("console");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("console-running.png"), &shot_with_work).unwrap();
    std::fs::write(out.join("console-after.png"), driver.screenshot().await).unwrap();
    eprintln!(
        "browser test took {:.1} s; screenshots in {}",
        started.elapsed().as_secs_f64(),
        out.display()
    );
    driver.quit();
    env.stop(child).await;
    let records = env.audit_records();
    let by_console: Vec<&str> = with_op(&records, "COMMAND_POLICY")
        .iter()
        .map(|r| r["details"]["decided_by"].as_str().unwrap())
        .collect();
    assert_eq!(by_console, ["console", "console"]);
    let killed = with_op(&records, "COMMAND_KILLED");
    assert_eq!(killed[0]["details"]["decided_by"], "console");
    env.verify_audit();
}

/// Logs in with the one-time link; returns the address and the `Cookie:` header line.
async fn login(url: &str) -> (String, String) {
    let (addr, path) = split(url);
    let a = raw(&addr, &get(&path, &addr, ""), b"").await;
    assert_eq!(a.status, 303, "{a:?}");
    let cookie = a
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    (addr, format!("\r\nCookie: {cookie}"))
}

#[tokio::test]
async fn console_true_starts_it_with_the_daemon_and_it_shows_the_latest_screenshot() {
    use tokio::io::AsyncBufReadExt;
    let x = shim_cu::testing::Xvfb::start(640, 480);
    x.spawn("xterm", &["-geometry", "60x20+0+0"]);
    let env = Env::new(PeerConfig::default()).await;
    let mut c = env.legacy_command(SID, &["--enable-computer-use"]);
    c.env("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", &x.display)
        .env("AUTOGPT_SHIM_CONSOLE", "true");
    let mut child = c.spawn().unwrap();
    // `console = true`: the daemon serves the console from start and says where (no token).
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let announced = tokio::time::timeout(T, async {
        while let Some(l) = lines.next_line().await.unwrap() {
            if let Some(rest) = l.strip_prefix("Web console on ") {
                return rest.split(' ').next().unwrap().to_owned();
            }
        }
        panic!("the daemon never announced its console");
    })
    .await
    .unwrap();
    assert!(announced.starts_with("http://127.0.0.1:"), "{announced}");
    assert!(!announced.contains("token"), "{announced}");
    let conn = env.next().await;
    let url = console_url(&env).await;
    assert!(
        url.starts_with(&format!("{announced}/?token=")),
        "{url} vs {announced}"
    );
    let (addr, cookie) = login(&url).await;

    let state = |a: Answer| -> Value {
        assert_eq!(a.status, 200, "{a:?}");
        serde_json::from_str(&a.body).unwrap()
    };
    let v = state(raw(&addr, &get("/api/state", &addr, &cookie), b"").await);
    assert_eq!(v["computer_use"], true);
    assert_eq!(v["screenshot"], Value::Null);
    let a = raw(&addr, &get("/api/screenshot", &addr, &cookie), b"").await;
    assert_eq!(a.status, 404, "{a:?}");

    tokio::time::sleep(Duration::from_millis(500)).await;
    let frame =
        json!({"type": "SCREENSHOT_REQUEST", "id": "x", "ts": 1.0, "payload": {"format": "png"}});
    let m = shim_protocol::frame::decode_bytes(frame.to_string().as_bytes())
        .unwrap()
        .message;
    let r = conn.request(m, T).await.unwrap();
    assert!(
        matches!(r.frame.message, Message::ScreenshotResponse(_)),
        "{:?}",
        r.frame.message.message_type()
    );
    let v = state(raw(&addr, &get("/api/state", &addr, &cookie), b"").await);
    assert_eq!(v["screenshot"], 1);
    let a = raw(&addr, &get("/api/screenshot", &addr, &cookie), b"").await;
    assert_eq!(a.status, 200);
    assert_eq!(a.header("content-type"), Some("image/png"));
    assert!(a.body.contains("PNG"), "not a PNG");
    // Without the cookie the screenshot is not shown.
    let a = raw(&addr, &get("/api/screenshot", &addr, ""), b"").await;
    assert_eq!(a.status, 401);
    env.stop(child).await;
}
