//! Take-over, hand-back and the live view (docs/console.md, "Live view and take-over")
//! through the real binary and the platform peer, on a private Xvfb that stands in for the
//! user's display: while the user holds the desktop the agent's INPUT_ACTION is refused with
//! `DESKTOP_IN_USE` and nothing reaches the recorder window, screenshots are still served,
//! and after the hand-back the same action is served; the live view's WebSocket is refused
//! without the cookie, with a foreign `Origin` or `Host`, and otherwise pushes a first frame
//! and then frames only when the screen changes.

use std::time::Duration;

use futures_util::SinkExt;
use futures_util::StreamExt;
use serde_json::Value;
use serde_json::json;
use shim_cu::testing::Recorder;
use shim_cu::testing::Xvfb;
use shim_cu::testing::run;
use shim_platform_peer::PeerConfig;
use tokio_tungstenite::tungstenite::Message as Ws;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::ask;
use crate::suite::harness::finish;
use crate::suite::harness::with_op;

const SID: &str = "live-session";

async fn cli(env: &Env, args: &[&str]) -> (i32, String, String) {
    finish(env.command(args).spawn().unwrap(), T).await
}

async fn status(env: &Env) -> Value {
    let (code, out, err) = cli(env, &["status", "--json"]).await;
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(&out).unwrap()
}

fn click(at: [i64; 2]) -> Value {
    json!({"action": "left_click", "coordinate": at})
}

#[tokio::test]
async fn a_take_over_refuses_agent_input_until_the_hand_back() {
    let x = Xvfb::start(640, 480);
    let rec = Recorder::start(&x.display, [100, 100, 200, 150]);
    let env = Env::new(PeerConfig::default()).await;
    let mut c = env.legacy_command(SID, &["--enable-computer-use", "--enable-clipboard"]);
    c.env("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", &x.display);
    let child = c.spawn().unwrap();
    let conn = env.next().await;

    assert_eq!(status(&env).await["desktop"]["held_by"], Value::Null);
    let (code, out, err) = cli(&env, &["takeover"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("You hold the desktop"), "{out}");
    let s = status(&env).await;
    assert_eq!(s["desktop"]["held_by"], "cli", "{s}");
    let (_, human, _) = cli(&env, &["status"]).await;
    assert!(human.contains("Desktop: taken over"), "{human}");

    // Input, focus, launch and clipboard writes are refused; nothing reaches the window.
    let r = ask(&conn, "INPUT_ACTION", click([150, 150])).await;
    assert_eq!(r["type"], "ERROR", "{r}");
    assert_eq!(r["payload"]["code"], "DESKTOP_IN_USE", "{r}");
    let msg = r["payload"]["message"].as_str().unwrap().to_lowercase();
    assert!(
        msg.contains("user") && msg.contains("wait") && msg.contains("new screenshot"),
        "{msg}"
    );
    for (ty, payload) in [
        ("WINDOW_FOCUS", json!({"window_id": "w1"})),
        ("APP_LAUNCH", json!({"app_id": "xterm"})),
        ("CLIPBOARD_WRITE", json!({"content": "x", "format": "text"})),
    ] {
        let r = ask(&conn, ty, payload).await;
        assert_eq!(r["payload"]["code"], "DESKTOP_IN_USE", "{ty}: {r}");
    }
    // Reads stay allowed.
    let r = ask(&conn, "SCREENSHOT_REQUEST", json!({"format": "png"})).await;
    assert_eq!(r["type"], "SCREENSHOT_RESPONSE", "{r}");
    let r = ask(&conn, "CURSOR_POSITION_REQUEST", json!({})).await;
    assert_eq!(r["type"], "CURSOR_POSITION_RESPONSE", "{r}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = rec.take();
    assert!(
        !seen.iter().any(|e| e.kind == "button_press"),
        "a refused click reached the desktop: {seen:?}"
    );

    // Hand back: the same action is served and the window sees the click.
    let (code, out, err) = cli(&env, &["handback"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = cli(&env, &["handback"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("not taken over"), "{err}");
    let r = ask(&conn, "INPUT_ACTION", click([150, 150])).await;
    assert_eq!(r["type"], "ACK", "{r}");
    let seen = rec.wait(T, |e| e.iter().any(|e| e.kind == "button_press"));
    assert!(
        seen.iter()
            .any(|e| e.kind == "button_press" && e.root == [150, 150]),
        "{seen:?}"
    );
    // The live state shows the agent's last action (where, which chat).
    let s = status(&env).await;
    let a = &s["desktop"]["last_action"];
    assert_eq!(a["action"], "left_click", "{s}");
    assert_eq!(a["point"], json!([150, 150]), "{s}");
    assert_eq!(a["session_id"], SID, "{s}");

    // A timeout hands back by itself.
    let (code, out, err) = cli(&env, &["takeover", "--timeout", "1"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let r = ask(&conn, "INPUT_ACTION", click([160, 160])).await;
    assert_eq!(r["payload"]["code"], "DESKTOP_IN_USE", "{r}");
    let mut back = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if status(&env).await["desktop"]["held_by"].is_null() {
            back = true;
            break;
        }
    }
    assert!(back, "the timeout did not hand the desktop back");
    let r = ask(&conn, "INPUT_ACTION", click([160, 160])).await;
    assert_eq!(r["type"], "ACK", "{r}");

    env.stop(child).await;
    let records = env.audit_records();
    let local: Vec<(String, String)> = with_op(&records, "LOCAL_CONTROL")
        .iter()
        .map(|r| {
            (
                r["details"]["action"].as_str().unwrap().to_owned(),
                r["details"]["decided_by"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let want = [
        ("takeover", "cli"),
        ("handback", "cli"),
        ("takeover", "cli"),
        ("handback", "timeout"),
    ];
    assert_eq!(
        local,
        want.map(|(a, b)| (a.to_owned(), b.to_owned())),
        "{local:?}"
    );
    let refused: Vec<&Value> = with_op(&records, "INPUT_ACTION")
        .into_iter()
        .filter(|r| r["result"]["error_code"] == "DESKTOP_IN_USE")
        .collect();
    assert_eq!(refused.len(), 2, "{records:?}");
    env.verify_audit();
}

/// Logs in with a one-time link: `(address, cookie header value)`.
async fn login(env: &Env) -> (String, String) {
    let (code, out, err) = cli(env, &["console", "--no-open"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let url = out.lines().next().unwrap().to_owned();
    let r = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(&url)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    let cookie = r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let addr = url
        .strip_prefix("http://")
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    (addr, cookie)
}

type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// Opens `/api/live` with the given headers: the socket, or the refusal's status.
async fn open_live(addr: &str, headers: &[(&str, &str)]) -> Result<Socket, u16> {
    let mut req = format!("ws://{addr}/api/live")
        .into_client_request()
        .unwrap();
    req.headers_mut().remove("host");
    for (k, v) in headers {
        let name: tokio_tungstenite::tungstenite::http::HeaderName = k.parse().unwrap();
        req.headers_mut().insert(name, v.parse().unwrap());
    }
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    match tokio_tungstenite::client_async(req, tcp).await {
        Ok((ws, _)) => Ok(ws),
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => Err(r.status().as_u16()),
        Err(e) => panic!("{e}"),
    }
}

/// The next message that is not a ping: text as JSON, a frame as its header.
async fn next(ws: &mut Socket, wait: Duration) -> Option<Value> {
    loop {
        let m = tokio::time::timeout(wait, ws.next()).await.ok()??.ok()?;
        match m {
            Ws::Text(t) => return Some(serde_json::from_str(t.as_str()).unwrap()),
            Ws::Binary(b) => {
                assert_eq!(&b[..4], b"AGL1");
                let n = u32::from_be_bytes(b[4..8].try_into().unwrap()) as usize;
                let mut head: Value = serde_json::from_slice(&b[8..8 + n]).unwrap();
                let sum: u64 = head["tiles"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["bytes"].as_u64().unwrap())
                    .sum();
                assert_eq!(8 + n as u64 + sum, b.len() as u64, "{head}");
                head["type"] = json!("frame");
                return Some(head);
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn the_live_view_is_refused_by_attack_and_otherwise_sends_frames_only_on_change() {
    let x = Xvfb::start(640, 480);
    run(&x.display, "xsetroot", &["-solid", "#203040"]);
    let env = Env::new(PeerConfig::default()).await;
    let mut c = env.legacy_command(SID, &["--enable-computer-use"]);
    c.env("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", &x.display).env(
        "AUTOGPT_SHIM_COMPUTER_USE_MASKED_REGIONS",
        r#"["0,0,64,64"]"#,
    );
    let child = c.spawn().unwrap();
    let _conn = env.next().await;
    let (addr, cookie) = login(&env).await;
    let origin = format!("http://{addr}");

    // Attacks: no cookie, a forged cookie, a foreign or missing Origin, a rebinding Host.
    let cases: [(&[(&str, &str)], u16); 6] = [
        (&[("host", &addr), ("origin", &origin)], 401),
        (
            &[
                ("host", &addr),
                ("origin", &origin),
                ("cookie", "autogpt_shim_console=00"),
            ],
            401,
        ),
        (
            &[
                ("host", &addr),
                ("cookie", &cookie),
                ("origin", "http://evil.example"),
            ],
            403,
        ),
        (&[("host", &addr), ("cookie", &cookie)], 403),
        (
            &[("host", &addr), ("cookie", &cookie), ("origin", "null")],
            403,
        ),
        (
            &[
                ("host", "evil.example"),
                ("cookie", &cookie),
                ("origin", &origin),
            ],
            403,
        ),
    ];
    for (headers, want) in cases {
        assert_eq!(
            open_live(&addr, headers).await.err(),
            Some(want),
            "{headers:?}"
        );
    }
    // A plain GET (no upgrade) is refused too.
    let r = reqwest::Client::new()
        .get(format!("http://{addr}/api/live"))
        .header("cookie", &cookie)
        .header("origin", &origin)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(
        status(&env).await["desktop"]["viewers"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // The real page's request: a hello, the whole screen, then nothing while it is still.
    let mut ws = open_live(
        &addr,
        &[("host", &addr), ("cookie", &cookie), ("origin", &origin)],
    )
    .await
    .unwrap();
    let hello = next(&mut ws, T).await.unwrap();
    assert_eq!(hello["type"], "hello", "{hello}");
    assert_eq!(hello["screen"], json!([640, 480]));
    assert_eq!(
        hello["input"], false,
        "the user's own display takes no input from the page"
    );
    let first = next(&mut ws, T).await.unwrap();
    assert_eq!(first["type"], "frame", "{first}");
    assert_eq!(
        first["tiles"][0],
        json!({"x": 0, "y": 0, "w": 640, "h": 480, "bytes": first["tiles"][0]["bytes"]})
    );
    assert!(
        next(&mut ws, Duration::from_millis(800)).await.is_none(),
        "a still screen sent a frame"
    );
    let s = status(&env).await;
    assert_eq!(s["desktop"]["viewers"].as_array().unwrap().len(), 1, "{s}");

    // A change: a frame with just the changed rectangle.
    run(&x.display, "xsetroot", &["-solid", "#a04020"]);
    let f = next(&mut ws, T).await.unwrap();
    assert_eq!(f["type"], "frame", "{f}");
    assert!(f["seq"].as_u64().unwrap() > first["seq"].as_u64().unwrap());
    // Input from the page is refused on the user's own display.
    ws.send(Ws::text(
        json!({"type": "move", "x": 5, "y": 5}).to_string(),
    ))
    .await
    .unwrap();
    let r = next(&mut ws, T).await.unwrap();
    assert_eq!(r["type"], "refused", "{r}");
    ws.close(None).await.unwrap();
    drop(ws);
    let mut gone = false;
    for _ in 0..50 {
        if status(&env).await["desktop"]["viewers"]
            .as_array()
            .unwrap()
            .is_empty()
        {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(gone, "the closed view is still listed");

    env.stop(child).await;
    let records = env.audit_records();
    let views: Vec<&str> = with_op(&records, "LIVE_VIEW")
        .iter()
        .map(|r| r["details"]["action"].as_str().unwrap())
        .collect();
    assert_eq!(views, ["open", "close"], "{records:?}");
    env.verify_audit();
}

/// The masked corner is black in the live view's first frame.
#[tokio::test]
async fn masked_regions_are_black_in_the_live_view() {
    let x = Xvfb::start(320, 240);
    run(&x.display, "xsetroot", &["-solid", "#ffffff"]);
    let env = Env::new(PeerConfig::default()).await;
    let mut c = env.legacy_command(SID, &["--enable-computer-use"]);
    c.env("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", &x.display).env(
        "AUTOGPT_SHIM_COMPUTER_USE_MASKED_REGIONS",
        r#"["0,0,64,64"]"#,
    );
    let child = c.spawn().unwrap();
    let _conn = env.next().await;
    let (addr, cookie) = login(&env).await;
    let origin = format!("http://{addr}");
    let mut ws = open_live(
        &addr,
        &[("host", &addr), ("cookie", &cookie), ("origin", &origin)],
    )
    .await
    .unwrap();
    let _hello = next(&mut ws, T).await.unwrap();
    let frame = loop {
        let m = tokio::time::timeout(T, ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let Ws::Binary(b) = m {
            break b;
        }
    };
    let n = u32::from_be_bytes(frame[4..8].try_into().unwrap()) as usize;
    let jpeg = &frame[8 + n..];
    let mut d = jpeg_decoder::Decoder::new(jpeg);
    let px = d.decode().unwrap();
    let info = d.info().unwrap();
    assert_eq!((info.width, info.height), (320, 240));
    let at = |x: usize, y: usize| &px[(y * 320 + x) * 3..(y * 320 + x) * 3 + 3];
    assert!(
        at(20, 20).iter().all(|v| *v < 30),
        "masked pixel {:?}",
        at(20, 20)
    );
    assert!(
        at(200, 200).iter().all(|v| *v > 225),
        "open pixel {:?}",
        at(200, 200)
    );
    drop(ws);
    env.stop(child).await;
}

/// The page's canvas: `[frames drawn, r, g, b at desktop point (x, y)]`.
async fn canvas(driver: &crate::suite::console::Driver, at: [i64; 2]) -> Vec<i64> {
    let v = driver
        .execute(
            "const c = document.getElementById('livecanvas');
             const p = c.getContext('2d').getImageData(arguments[0], arguments[1], 1, 1).data;
             return [Number(c.dataset.frames || '0'), p[0], p[1], p[2]];",
            json!([at[0], at[1]]),
        )
        .await;
    v.as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|n| n.as_i64().unwrap())
        .collect()
}

async fn canvas_until(
    driver: &crate::suite::console::Driver,
    at: [i64; 2],
    what: &str,
    f: impl Fn(&[i64]) -> bool,
) -> Vec<i64> {
    let mut last = Vec::new();
    for _ in 0..150 {
        last = canvas(driver, at).await;
        if f(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the canvas never showed {what}: {last:?}");
}

/// Sets the root window's background of the private desktop to `pixel` (a program drawing
/// there).
fn paint_root(c: &x11rb::rust_connection::RustConnection, n: usize, pixel: u32) {
    use x11rb::connection::Connection as _;
    use x11rb::protocol::xproto::ConnectionExt as _;
    use x11rb::wrapper::ConnectionExt as _;
    let root = c.setup().roots[n].root;
    c.change_window_attributes(
        root,
        &x11rb::protocol::xproto::ChangeWindowAttributesAux::new().background_pixel(pixel),
    )
    .unwrap();
    c.clear_area(false, root, 0, 0, 0, 0).unwrap();
    c.sync().unwrap();
}

#[tokio::test]
async fn in_a_real_browser_the_user_watches_takes_over_clicks_and_hands_back() {
    let env = Env::new(PeerConfig::default()).await;
    let Some(driver) =
        crate::suite::console::Driver::start(&env.dir.path().join("chromium-profile")).await
    else {
        return;
    };
    let mut c = env.legacy_command(SID, &["--enable-computer-use"]);
    c.env("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "isolated")
        .env("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY_SIZE", "640x480");
    let child = c.spawn().unwrap();
    let daemon = child.id().unwrap();
    let conn = env.next().await;
    // The first computer-use request starts the private desktop.
    let r = ask(&conn, "DISPLAY_INFO_REQUEST", json!({})).await;
    assert_eq!(r["type"], "DISPLAY_INFO_RESPONSE", "{r}");
    let xvfb = crate::suite::isolated::desktop_procs(daemon)
        .into_iter()
        .find(|(_, n)| n == "Xvfb")
        .expect("Xvfb")
        .0;
    let display = crate::suite::isolated::served_display(xvfb).expect("its display");
    let auth = std::fs::read_dir(env.dir.path().join("run"))
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("autogpt-shim-desktop-")
        })
        .expect("the desktop's authority directory")
        .path()
        .join("Xauthority");
    let cookie = shim_cu::testing::cookie_of(&auth);
    let (painter, n) = shim_cu::testing::connect_authed(&display, &cookie);
    paint_root(&painter, n, 0x0000_c000);
    let rec = Recorder::start_authed(&display, &cookie, [100, 100, 200, 150]);

    // Log in, watch: frames arrive, and change while a program draws on the desktop.
    driver
        .goto(&crate::suite::console::console_url(&env).await)
        .await;
    driver.wait_for("#live", "live").await;
    driver.wait_for("#desk h2", "desktop, live").await;
    driver.click("#watch").await;
    driver.wait_for("#desk-state", "private desktop").await;
    let green = canvas_until(&driver, [500, 400], "the green desktop", |v| {
        v[0] >= 1 && v[2] > 150 && v[1] < 80
    })
    .await;
    paint_root(&painter, n, 0x00c0_0000);
    canvas_until(&driver, [500, 400], "the desktop turning red", |v| {
        v[0] > green[0] && v[1] > 150 && v[2] < 80
    })
    .await;
    let s = status(&env).await;
    assert_eq!(s["desktop"]["viewers"].as_array().unwrap().len(), 1, "{s}");

    // Take over: the agent's click is refused and reaches nothing.
    driver.click("#takeover").await;
    driver.wait_for("#holder", "you hold the desktop").await;
    let r = ask(&conn, "INPUT_ACTION", click([150, 150])).await;
    assert_eq!(r["payload"]["code"], "DESKTOP_IN_USE", "{r}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !rec.take().iter().any(|e| e.kind == "button_press"),
        "the refused agent click reached the desktop"
    );
    // The user's click on the canvas arrives at the same desktop point.
    let off = driver
        .execute(
            "const c = document.getElementById('livecanvas');
             c.scrollIntoView({block: 'center'});
             const r = c.getBoundingClientRect();
             return [r.left + arguments[0] * r.width / c.width,
                     r.top + arguments[1] * r.height / c.height];",
            json!([150, 150]),
        )
        .await;
    let (dx, dy) = (
        off[0].as_f64().unwrap().round() as i64,
        off[1].as_f64().unwrap().round() as i64,
    );
    driver.click_at(dx, dy).await;
    let seen = rec.wait(T, |e| e.iter().any(|e| e.kind == "button_release"));
    let press = seen
        .iter()
        .find(|e| e.kind == "button_press")
        .unwrap_or_else(|| panic!("the user's click did not arrive: {seen:?}"));
    assert!(
        (press.root[0] - 150).abs() <= 2 && (press.root[1] - 150).abs() <= 2,
        "{press:?}"
    );
    // Keys typed on the page are typed on the desktop.
    rec.take();
    driver.type_into("#livecanvas", "hi").await;
    let keys = rec.wait(T, |e| {
        e.iter().filter(|e| e.kind == "key_press").count() >= 2
    });
    assert!(
        keys.iter().filter(|e| e.kind == "key_press").count() >= 2,
        "{keys:?}"
    );

    // Hand back: the agent's click is served.
    rec.take();
    driver.click("#handback").await;
    driver
        .wait_for("#holder", "the agent has the desktop")
        .await;
    let r = ask(&conn, "INPUT_ACTION", click([200, 180])).await;
    assert_eq!(r["type"], "ACK", "{r}");
    let seen = rec.wait(T, |e| e.iter().any(|e| e.kind == "button_press"));
    assert!(
        seen.iter()
            .any(|e| e.kind == "button_press" && e.root == [200, 180]),
        "{seen:?}"
    );
    // The page marks where the agent's last action landed.
    driver
        .wait_for("#last-action", "left_click at (200, 180)")
        .await;

    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("console");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("console-live.png"), driver.screenshot().await).unwrap();

    // A page on another origin, in the same logged-in browser, cannot open the live view.
    let console = driver
        .execute("return location.host;", json!([]))
        .await
        .as_str()
        .unwrap()
        .to_owned();
    let viewers_before = status(&env).await["desktop"]["viewers"]
        .as_array()
        .unwrap()
        .len();
    driver.goto("data:text/html,<p>another site</p>").await;
    driver
        .execute(
            "window.result = 'pending';
             const ws = new WebSocket('ws://' + arguments[0] + '/api/live');
             ws.onopen = () => { window.result = 'opened'; };
             ws.onmessage = () => { window.result = 'message'; };
             ws.onerror = () => { if (window.result === 'pending') window.result = 'refused'; };",
            json!([console]),
        )
        .await;
    let mut result = String::new();
    for _ in 0..50 {
        result = driver
            .execute("return window.result;", json!([]))
            .await
            .as_str()
            .unwrap_or("")
            .to_owned();
        if result != "pending" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(result, "refused", "a foreign page opened the live view");
    let s = status(&env).await;
    assert!(
        s["desktop"]["viewers"].as_array().unwrap().len() <= viewers_before,
        "{s}"
    );
    driver.quit();
    drop(rec);
    env.stop(child).await;
    let records = env.audit_records();
    let local: Vec<(String, String)> = with_op(&records, "LOCAL_CONTROL")
        .iter()
        .map(|r| {
            (
                r["details"]["action"].as_str().unwrap().to_owned(),
                r["details"]["decided_by"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        local,
        [
            ("takeover".to_owned(), "console".to_owned()),
            ("handback".to_owned(), "console".to_owned())
        ]
    );
    assert_eq!(
        with_op(&records, "LIVE_VIEW")[0]["details"]["action"],
        "open"
    );
    env.verify_audit();
}
