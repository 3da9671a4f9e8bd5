use serde_json::json;
use shim_cu::engine::Reply;
use shim_cu::engine::Request;
use shim_protocol::messages::cu::WindowInfo;

use super::common::*;

fn list(rig: &Rig) -> Vec<WindowInfo> {
    match rig.ok(Request::WindowList(Default::default())) {
        Reply::Windows(w) => w.windows,
        other => panic!("{other:?}"),
    }
}

fn focus(rig: &Rig, id: &str) -> shim_cu::engine::Outcome {
    rig.go(Request::WindowFocus(
        serde_json::from_value(json!({"window_id": id})).unwrap(),
    ))
}

fn wait_titles(rig: &Rig, titles: &[&str]) -> Vec<WindowInfo> {
    wait_for(T, || {
        let w = list(rig);
        titles
            .iter()
            .all(|t| w.iter().any(|x| x.title.as_deref() == Some(*t)))
            .then_some(w)
    })
    .expect("windows never listed")
}

#[test]
fn without_a_window_manager_windows_are_not_advertised() {
    let rig = Rig::new();
    assert!(!rig.features.has("windows") && !rig.features.has("window.list"));
    let o = rig.go(Request::WindowList(Default::default()));
    assert_eq!(code(&o), "FEATURE_NOT_SUPPORTED");
    assert_eq!(
        details(&o),
        json!({"feature": "window.list", "reason": "not advertised on this host"})
    );
    let Reply::Apps(a) = rig.ok(Request::AppList(Default::default())) else {
        panic!()
    };
    assert!(
        a.apps
            .iter()
            .any(|x| x.pid == i64::from(std::process::id())),
        "own user's processes without a WM"
    );
}

#[test]
fn openbox_list_focus_stale_ids_and_apps() {
    let x = Xvfb::start(1280, 800);
    x.openbox();
    let mut rig = Rig::with(x, cfg());
    rig.refeature();
    assert!(rig.features.has("windows") && rig.features.has("window.focus"));
    let pid_a = rig
        .x
        .spawn("xterm", &["-T", "alpha", "-geometry", "40x10+10+10"]);
    let pid_b = rig
        .x
        .spawn("xterm", &["-T", "beta", "-geometry", "40x10+500+300"]);
    let w = wait_titles(&rig, &["alpha", "beta"]);
    let a = w
        .iter()
        .find(|x| x.title.as_deref() == Some("alpha"))
        .unwrap()
        .clone();
    let b = w
        .iter()
        .find(|x| x.title.as_deref() == Some("beta"))
        .unwrap()
        .clone();
    assert_eq!(a.pid, i64::from(pid_a));
    assert_eq!(b.pid, i64::from(pid_b));
    assert_eq!(a.app_name.as_deref(), Some("XTerm"));
    assert!(a.window_id.starts_with("win_") && a.window_id.len() == 40);
    assert!(
        (a.bounds[0] - 10).abs() <= 10 && (a.bounds[1] - 10).abs() <= 40,
        "{:?}",
        a.bounds
    );

    // Focus alternates the root's _NET_ACTIVE_WINDOW (window ids found independently).
    let xid = |title: &str| -> u32 {
        let out = run(
            &rig.x.display,
            "xdotool",
            &["search", "--name", &format!("^{title}$")],
        );
        out.lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .expect("xdotool found the window")
    };
    let (xa, xb) = (xid("alpha"), xid("beta"));
    for (id, want) in [(&a.window_id, xa), (&b.window_id, xb), (&a.window_id, xa)] {
        assert!(focus(&rig, id).reply.is_ok());
        assert_eq!(
            wait_for(T, || Some(rig.x.active_window()).filter(|w| *w == want)),
            Some(want)
        );
    }

    // Apps: the xterm pids with their executable.
    let Reply::Apps(apps) = rig.ok(Request::AppList(Default::default())) else {
        panic!()
    };
    let xa = apps
        .apps
        .iter()
        .find(|p| p.pid == i64::from(pid_a))
        .expect("xterm listed");
    assert!(xa.executable_path.as_deref().unwrap().ends_with("xterm"));
    assert_eq!(xa.window_count, 1);

    // A second listing makes the first ids stale; a new session does not know them.
    let w2 = list(&rig);
    let a2 = w2
        .iter()
        .find(|x| x.title.as_deref() == Some("alpha"))
        .unwrap()
        .clone();
    assert_ne!(a2.window_id, a.window_id);
    let o = focus(&rig, &a.window_id);
    assert_eq!(code(&o), "WINDOW_STALE");
    assert_eq!(
        details(&o),
        json!({"window_id": a.window_id, "hint": "re-list windows"})
    );
    let other = shim_cu::policy::SessionState::default();
    let o = rig.go_in(
        &other,
        Request::WindowFocus(serde_json::from_value(json!({"window_id": a2.window_id})).unwrap()),
    );
    assert_eq!(code(&o), "WINDOW_STALE");
    // A HELLO wipes the registry.
    rig.session.on_hello();
    assert_eq!(code(&focus(&rig, &a2.window_id)), "WINDOW_STALE");

    // Killing the window: the id no longer maps to a live window.
    let pid_c = rig
        .x
        .spawn("xterm", &["-T", "gamma", "-geometry", "40x10+200+200"]);
    let w5 = wait_titles(&rig, &["gamma"]);
    let c = w5
        .iter()
        .find(|x| x.title.as_deref() == Some("gamma"))
        .unwrap()
        .clone();
    rig.x.kill(pid_c);
    let o = wait_for(T, || {
        let o = focus(&rig, &c.window_id);
        (code(&o) == "WINDOW_STALE").then_some(o)
    })
    .expect("stale after kill");
    assert_eq!(
        o.reply.unwrap_err().message,
        format!("window_id {} no longer maps to a live window", c.window_id)
    );

    // APP_LAUNCH of xclock: ACK only, the pid in the audit, the window appears.
    let o = rig.go(Request::AppLaunch(
        serde_json::from_value(
            json!({"executable_path": "xclock", "args": ["-title", "clockwin"]}),
        )
        .unwrap(),
    ));
    assert!(matches!(o.reply, Ok(Reply::Ack)));
    let d = serde_json::Value::Object(o.audit.unwrap().details);
    let pid = d["pid"].as_i64().unwrap();
    assert_eq!(d["args_count"], 2);
    assert!(
        !d.to_string().contains("clockwin"),
        "argument values never logged"
    );
    let w = wait_titles(&rig, &["clockwin"]);
    assert_eq!(
        w.iter()
            .find(|x| x.title.as_deref() == Some("clockwin"))
            .unwrap()
            .pid,
        pid
    );
    let o = rig.go(Request::AppLaunch(
        serde_json::from_value(json!({"executable_path": "/nonexistent/app"})).unwrap(),
    ));
    assert_eq!(code(&o), "INTERNAL_ERROR");
    assert!(o.audit.is_some());
    let o = rig.go(Request::AppLaunch(
        serde_json::from_value(json!({"bundle_id": "com.x"})).unwrap(),
    ));
    assert_eq!(
        details(&o)["reason"],
        "executable_path is required on Linux"
    );
}
