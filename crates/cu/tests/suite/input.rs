use std::time::Duration;

use serde_json::json;

use super::common::*;

const SHIFT: u16 = 1;
const CONTROL: u16 = 4;
const MOD1: u16 = 8;
const MOD4: u16 = 0x40;

fn presses(ev: &[Rec], kind: &str) -> Vec<Rec> {
    ev.iter().filter(|e| e.kind == kind).cloned().collect()
}

fn rig_with_recorder() -> (Rig, Recorder) {
    let rig = Rig::new();
    let rec = Recorder::start(&rig.x.display, [100, 100, 600, 400]);
    rig.input_ok(json!({"action": "mouse_move", "coordinate": [300, 300]}));
    rec.wait(T, |e| !e.is_empty());
    rec.take();
    (rig, rec)
}

#[test]
fn typing_reaches_the_text_sink_byte_exact() {
    let rig = Rig::new();
    let dir = tempfile::tempdir().unwrap();
    let file = text_sink(&rig.x, dir.path(), &[]);
    rig.input_ok(json!({"action": "mouse_move", "coordinate": [100, 100]}));
    rig.input_ok(json!({"action": "type", "text": "hello World 123 héllo € 日本"}));
    rig.input_ok(json!({"action": "key", "key": "enter"}));
    rig.input_ok(json!({"action": "key", "key": "ctrl+d"}));
    let got = wait_for(T, || {
        let s = std::fs::read_to_string(&file).ok()?;
        s.ends_with('\n').then_some(s)
    });
    assert_eq!(got.as_deref(), Some("hello World 123 héllo € 日本\n"));
}

#[test]
fn typing_is_paced_and_audited_without_text() {
    let (rig, rec) = rig_with_recorder();
    let o = rig.input(json!({"action": "type", "text": "abcdef"}));
    assert!(o.reply.is_ok());
    let d = serde_json::Value::Object(o.audit.unwrap().details);
    assert_eq!(
        d,
        json!({"action": "type", "coordinate": null, "key": null, "direction": null, "clicks": null,
               "text_length": 6, "modifiers": null, "button": null, "paste": false})
    );
    let ev = rec.wait(T, |e| presses(e, "key_release").len() >= 6);
    let p = presses(&ev, "key_press");
    assert_eq!(p.len(), 6);
    for w in p.windows(2) {
        assert!(w[1].time.wrapping_sub(w[0].time) >= 15, "pacing: {:?}", p);
    }
}

#[test]
fn chords_produce_keycodes_and_masks() {
    let (rig, rec) = rig_with_recorder();
    let d = rig.x.display.clone();
    let kc = |sym: u32| keycode_of(&d, sym).unwrap();

    rig.input_ok(json!({"action": "key", "key": "ctrl+shift+a"}));
    let ev = rec.wait(T, |e| presses(e, "key_release").len() >= 3);
    let p = presses(&ev, "key_press");
    assert_eq!(
        p.iter().map(|e| e.detail).collect::<Vec<_>>(),
        vec![kc(0xffe3), kc(0xffe1), kc(0x61)]
    );
    assert_eq!(p[2].state & (SHIFT | CONTROL), SHIFT | CONTROL);
    let r = presses(&ev, "key_release");
    assert_eq!(
        r.iter().map(|e| e.detail).collect::<Vec<_>>(),
        vec![kc(0x61), kc(0xffe1), kc(0xffe3)],
        "reverse release"
    );
    rec.take();

    rig.input_ok(json!({"action": "key", "key": "super+l"}));
    let ev = rec.wait(T, |e| presses(e, "key_release").len() >= 2);
    let p = presses(&ev, "key_press");
    assert_eq!(p[1].detail, kc(0x6c));
    assert_eq!(p[1].state & MOD4, MOD4);
    rec.take();

    rig.input_ok(json!({"action": "key", "key": "F5"}));
    let ev = rec.wait(T, |e| !presses(e, "key_release").is_empty());
    assert_eq!(presses(&ev, "key_press")[0].detail, kc(0xffc2));
    rec.take();

    for (chord, base) in [("plus", 0x3d_u32), ("!", 0x31)] {
        rig.input_ok(json!({"action": "key", "key": chord}));
        let ev = rec.wait(T, |e| presses(e, "key_release").len() >= 2);
        let p = presses(&ev, "key_press");
        assert_eq!(p.last().unwrap().detail, kc(base), "{chord}");
        assert_eq!(p.last().unwrap().state & SHIFT, SHIFT, "{chord} adds Shift");
        rec.take();
    }

    for bad in [
        json!({"action": "key", "key": "ctrl+nosuchkey"}),
        json!({"action": "hold_key", "key": "hyperdrive"}),
    ] {
        let o = rig.input(bad);
        assert_eq!(code(&o), "FEATURE_NOT_SUPPORTED");
        assert!(o.audit.is_none(), "gating step 3 is not audited");
    }
    let o = rig.input(json!({"action": "key"}));
    assert_eq!(
        details(&o),
        json!({"feature": "key", "reason": "key is required"})
    );
    let o = rig.input(json!({"action": "teleport", "coordinate": [1, 1]}));
    assert_eq!(
        details(&o),
        json!({"feature": "teleport", "reason": "unknown action 'teleport'"})
    );
    let o = rig
        .input(json!({"action": "left_click", "coordinate": [300, 300], "modifiers": ["hyper"]}));
    assert_eq!(details(&o)["reason"], "unknown modifier 'hyper'");
    let o = rig.input(json!({"action": "left_click"}));
    assert_eq!(
        details(&o),
        json!({"feature": "left_click", "reason": "coordinate is required"})
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(rec.take().is_empty(), "no event for any refused request");

    let t0 = std::time::Instant::now();
    rig.input_ok(json!({"action": "hold_key", "key": "shift", "duration_ms": 400}));
    assert!(t0.elapsed() < Duration::from_secs(5));
    let ev = rec.wait(T, |e| !presses(e, "key_release").is_empty());
    let gap = presses(&ev, "key_release")[0]
        .time
        .wrapping_sub(presses(&ev, "key_press")[0].time);
    assert!((400..=5000).contains(&gap), "held {gap} ms");
}

#[test]
fn mouse_buttons_clicks_modifiers_drag_and_scroll() {
    let (rig, rec) = rig_with_recorder();
    for (action, button) in [("left_click", 1), ("middle_click", 2), ("right_click", 3)] {
        rig.input_ok(json!({"action": action, "coordinate": [310, 320]}));
        let ev = rec.wait(T, |e| !presses(e, "button_release").is_empty());
        let p = presses(&ev, "button_press");
        assert_eq!(
            (p.len(), p[0].detail, p[0].root),
            (1, button, [310, 320]),
            "{action}"
        );
        rec.take();
    }
    rig.input_ok(json!({"action": "double_click", "coordinate": [300, 300]}));
    let ev = rec.wait(T, |e| presses(e, "button_release").len() >= 2);
    assert_eq!(presses(&ev, "button_press").len(), 2);
    rec.take();
    rig.input_ok(json!({"action": "triple_click", "coordinate": [300, 300]}));
    let ev = rec.wait(T, |e| presses(e, "button_release").len() >= 3);
    let p = presses(&ev, "button_press");
    assert_eq!(p.len(), 3);
    assert!(p[2].time.wrapping_sub(p[1].time) >= 40, "50 ms spacing");
    rec.take();

    rig.input_ok(json!({"action": "left_click", "coordinate": [300, 300], "modifiers": ["shift", "ctrl", "alt", "super"]}));
    let ev = rec.wait(T, |e| {
        !presses(e, "button_release").is_empty() && presses(e, "key_release").len() >= 4
    });
    let b = &presses(&ev, "button_press")[0];
    assert_eq!(
        b.state & (SHIFT | CONTROL | MOD1 | MOD4),
        SHIFT | CONTROL | MOD1 | MOD4
    );
    let last_release = ev.iter().rposition(|e| e.kind == "key_release").unwrap();
    let button_release = ev.iter().position(|e| e.kind == "button_release").unwrap();
    assert!(
        last_release > button_release,
        "modifiers released after the click"
    );
    rec.take();

    rig.input_ok(json!({"action": "mouse_down", "coordinate": [320, 320], "button": "right"}));
    rig.input_ok(json!({"action": "mouse_up", "coordinate": [330, 330], "button": "right"}));
    let ev = rec.wait(T, |e| !presses(e, "button_release").is_empty());
    assert_eq!(presses(&ev, "button_press")[0].detail, 3);
    assert_eq!(presses(&ev, "button_release")[0].root, [330, 330]);
    rec.take();

    rig.input_ok(
        json!({"action": "drag", "path": [[200, 200], [250, 220], [300, 240], [350, 260]]}),
    );
    let ev = rec.wait(T, |e| !presses(e, "button_release").is_empty());
    let first_press = ev.iter().position(|e| e.kind == "button_press").unwrap();
    let release = ev.iter().position(|e| e.kind == "button_release").unwrap();
    assert_eq!(ev[first_press].root, [200, 200]);
    let motions = ev[first_press..release]
        .iter()
        .filter(|e| e.kind == "motion")
        .count();
    assert!(motions >= 3, "{ev:?}");
    assert_eq!(ev[release].root, [350, 260]);
    rec.take();

    let o = rig.input(json!({"action": "drag", "path": [[200, 200], [250, 220], [5000, 220]]}));
    assert_eq!(code(&o), "INPUT_OUT_OF_BOUNDS");
    assert_eq!(details(&o)["requested_coordinate"], json!([5000, 220]));
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        rec.take().is_empty(),
        "a drag with one bad point injects nothing"
    );

    for (dir, button) in [("up", 4), ("down", 5), ("left", 6), ("right", 7)] {
        rig.input_ok(
            json!({"action": "scroll", "coordinate": [300, 300], "scroll_direction": dir}),
        );
        let ev = rec.wait(T, |e| presses(e, "button_release").len() >= 3);
        let p = presses(&ev, "button_press");
        assert_eq!(p.len(), 3, "{dir}: default 3 ticks");
        assert!(p.iter().all(|e| e.detail == button), "{dir}");
        rec.take();
    }
    rig.input_ok(json!({"action": "scroll", "scroll_amount": 5, "scroll_direction": "down", "modifiers": ["shift"]}));
    let ev = rec.wait(T, |e| presses(e, "button_release").len() >= 5);
    let p = presses(&ev, "button_press");
    assert_eq!(p.len(), 5);
    assert!(
        p.iter().all(|e| e.state & SHIFT == SHIFT),
        "modifiers held while scrolling"
    );
}
