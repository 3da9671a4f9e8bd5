use std::io::Write;
use std::process::Command;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use shim_cu::engine::Reply;
use shim_cu::engine::Request;

use super::common::*;

fn write(rig: &Rig, text: &str) -> shim_cu::engine::Outcome {
    rig.go(Request::ClipboardWrite(
        serde_json::from_value(json!({"content": text})).unwrap(),
    ))
}

fn read(rig: &Rig) -> shim_cu::engine::Outcome {
    rig.go(Request::ClipboardRead(Default::default()))
}

fn read_text(o: &shim_cu::engine::Outcome) -> String {
    match &o.reply {
        Ok(Reply::Clipboard(c)) => {
            assert_eq!(c.size_bytes, c.content.len() as u64);
            c.content.clone()
        }
        other => panic!("{other:?}"),
    }
}

fn xclip_out(d: &str) -> String {
    run(d, "xclip", &["-selection", "clipboard", "-o"])
}

/// A foreign owner: `xclip -i` keeps serving in the background until killed.
fn xclip_in(x: &Xvfb, text: &str) {
    let mut c = Command::new("xclip")
        .args(["-selection", "clipboard", "-i", "-quiet"])
        .env("DISPLAY", &x.display)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let pid = c.id();
    // Handed to the Xvfb's process list so it stops with the server.
    std::mem::forget(Proc(c));
    let _ = pid;
    wait_for(T, || (xclip_out(&x.display) == text).then_some(())).expect("xclip never owned");
}

fn reason(o: &shim_cu::engine::Outcome) -> serde_json::Value {
    details(o)["reason"].clone()
}

#[test]
fn writeback_foreign_overwritten_expiry_and_audit() {
    let rig = Rig::new();
    assert!(rig.features.has("clipboard.read"));
    let o = read(&rig);
    assert_eq!(
        (code(&o), reason(&o)),
        ("CLIPBOARD_CONCEALED".into(), json!("writeback_only"))
    );
    assert!(details(&o).get("writeback_age_seconds").is_none());

    let secret = "s3cret clipboard text";
    let o = write(&rig, secret);
    assert!(matches!(o.reply, Ok(Reply::Ack)));
    assert_eq!(
        serde_json::Value::Object(o.audit.unwrap().details),
        json!({"format": "text", "size_bytes": 21})
    );
    assert_eq!(xclip_out(&rig.x.display), secret, "independent read");
    let o = read(&rig);
    assert_eq!(read_text(&o), secret);
    let d = serde_json::Value::Object(o.audit.unwrap().details);
    assert_eq!(d, json!({"format": "text", "size_bytes": 21}));

    // Foreign content replaces ours: overwritten.
    xclip_in(&rig.x, "foo");
    let o = read(&rig);
    assert_eq!(reason(&o), json!("writeback_overwritten"));

    // Time passes: writeback_only with the age.
    write(&rig, "A").reply.unwrap();
    rig.clock.advance(Duration::from_secs(31));
    let o = read(&rig);
    assert_eq!(reason(&o), json!("writeback_only"));
    assert!(details(&o)["writeback_age_seconds"].as_f64().unwrap() >= 31.0);

    // Another session's writes are not ours.
    write(&rig, "B").reply.unwrap();
    let other = shim_cu::policy::SessionState::default();
    let o = rig.go_in(&other, Request::ClipboardRead(Default::default()));
    assert_eq!(reason(&o), json!("writeback_only"));

    let o = rig.go(Request::ClipboardRead(
        serde_json::from_value(json!({"format": "image"})).unwrap(),
    ));
    assert_eq!(
        details(&o),
        json!({"feature": "clipboard.read", "reason": "format 'image' not supported"})
    );
}

#[test]
fn foreign_reads_markers_and_large_texts() {
    let mut c = cfg();
    c.enable_clipboard_read_foreign = true;
    let mut rig = Rig::with(Xvfb::start(640, 480), c);
    xclip_in(&rig.x, "foo");
    assert_eq!(read_text(&read(&rig)), "foo");

    {
        let _owner = ClipOwner::start(&rig.x.display, "hunter2", "x-kde-passwordManagerHint");
        let o = read(&rig);
        assert_eq!(code(&o), "CLIPBOARD_CONCEALED");
        assert_eq!(
            details(&o),
            json!({"reason": "concealed_type", "marker": "x-kde-passwordManagerHint"})
        );
    }

    // 1 MiB round trip (INCR both ways), cross-checked with xclip.
    let big: String = (0..1_048_576)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    write(&rig, &big).reply.unwrap();
    assert_eq!(xclip_out(&rig.x.display).len(), big.len());
    assert_eq!(read_text(&read(&rig)), big);

    // Over TEXT_LIMIT on read; over max_file_size on write (checked first).
    rig.max_file_size = 4_000_000;
    let huge = "x".repeat(2_785_281);
    write(&rig, &huge).reply.unwrap();
    let o = read(&rig);
    assert_eq!(code(&o), "FILE_TOO_LARGE");
    assert_eq!(
        serde_json::Value::Object(o.audit.unwrap().details)["size_bytes"],
        2_785_281
    );
    rig.max_file_size = 10;
    let o = write(&rig, "12345678901");
    assert_eq!(code(&o), "FILE_TOO_LARGE");
    assert_eq!(
        xclip_out(&rig.x.display).len(),
        huge.len(),
        "nothing written"
    );
}

#[test]
fn clipboard_disabled_is_refused() {
    let mut c = cfg();
    c.enable_clipboard = false;
    let rig = Rig::with(Xvfb::start(640, 480), c);
    assert!(!rig.features.has("clipboard"));
    let o = write(&rig, "x");
    assert_eq!(
        details(&o),
        json!({"feature": "clipboard.write", "reason": "--enable-clipboard not set"})
    );
    let o = read(&rig);
    assert_eq!(
        details(&o),
        json!({"feature": "clipboard.read", "reason": "--enable-clipboard not set"})
    );
}

#[test]
fn paste_path_restore_and_threshold() {
    let rig = Rig::new();
    let dir = tempfile::tempdir().unwrap();
    let file = text_sink(
        &rig.x,
        dir.path(),
        &[
            "-xrm",
            "XTerm*VT100.translations: #override Ctrl<Key>v: insert-selection(CLIPBOARD)",
        ],
    );
    rig.input_ok(json!({"action": "mouse_move", "coordinate": [100, 100]}));
    xclip_in(&rig.x, "prior");
    let text: String = (0..250)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let o = rig
        .input(json!({"action": "type", "text": text, "paste": true, "preserve_clipboard": true}));
    assert!(o.reply.is_ok(), "{:?}", o.reply);
    assert_eq!(
        serde_json::Value::Object(o.audit.unwrap().details)["paste"],
        true
    );
    assert_eq!(
        xclip_out(&rig.x.display),
        "prior",
        "prior clipboard restored"
    );
    let o = read(&rig);
    assert_eq!(
        reason(&o),
        json!("writeback_overwritten"),
        "the restore is not a writeback"
    );
    rig.input_ok(json!({"action": "key", "key": "enter"}));
    rig.input_ok(json!({"action": "key", "key": "ctrl+d"}));
    let got = wait_for(T, || {
        let s = std::fs::read_to_string(&file).ok()?;
        s.ends_with('\n').then_some(s)
    });
    assert_eq!(got, Some(format!("{text}\n")));

    // A concealed prior clipboard is not restored.
    {
        let _owner = ClipOwner::start(&rig.x.display, "hunter2", "x-kde-passwordManagerHint");
        let rec = Recorder::start(&rig.x.display, [600, 400, 200, 200]);
        rig.input_ok(json!({"action": "mouse_move", "coordinate": [700, 500]}));
        rig.input_ok(
            json!({"action": "type", "text": text, "paste": true, "preserve_clipboard": true}),
        );
        assert_eq!(
            xclip_out(&rig.x.display),
            text,
            "hunter2 was not republished"
        );
        drop(rec);
    }

    // 199 characters are typed, not pasted: key events only, no Ctrl.
    let rec = Recorder::start(&rig.x.display, [600, 400, 200, 200]);
    rig.input_ok(json!({"action": "mouse_move", "coordinate": [700, 500]}));
    rec.wait(T, |e| !e.is_empty());
    rec.take();
    let short: String = "b".repeat(199);
    rig.input_ok(json!({"action": "type", "text": short, "paste": true}));
    let ev = rec.wait(T, |e| {
        e.iter().filter(|x| x.kind == "key_release").count() >= 199
    });
    let presses: Vec<_> = ev.iter().filter(|x| x.kind == "key_press").collect();
    assert_eq!(presses.len(), 199);
    let ctrl = keycode_of(&rig.x.display, 0xffe3).unwrap();
    assert!(presses.iter().all(|p| p.detail != ctrl && p.state & 4 == 0));
}
