use super::*;

fn input(json: serde_json::Value) -> InputAction {
    serde_json::from_value(json).unwrap()
}

#[test]
fn only_acting_requests_are_refused_while_held() {
    let a = input(serde_json::json!({"action": "left_click", "coordinate": [1, 2]}));
    assert!(acts(&Request::Input(a)));
    assert!(!acts(&Request::CursorPosition));
    assert!(!acts(&Request::DisplayInfo));
    let e = refusal();
    assert_eq!(e.code.as_str(), "DESKTOP_IN_USE");
    assert!(e.message.contains("new screenshot"), "{}", e.message);
}

#[test]
fn the_marker_keeps_the_point_the_chord_and_a_count_never_the_text() {
    let d = Desk::default();
    d.note_action(
        Some("chat-1"),
        &input(serde_json::json!({"action": "type", "text": "secret words"})),
    );
    let s = d.status();
    let l = s.last_action.unwrap();
    assert_eq!(l.session_id.as_deref(), Some("chat-1"));
    assert_eq!(l.typed_chars, Some(12));
    let shown = serde_json::to_string(&d.status()).unwrap();
    assert!(!shown.contains("secret"), "{shown}");
    d.note_action(
        None,
        &input(serde_json::json!({"action": "left_click_drag", "coordinate": [1, 2], "path": [[1, 2], [30, 40]]})),
    );
    assert_eq!(d.status().last_action.unwrap().point, Some([30, 40]));
    d.note_action(
        None,
        &input(serde_json::json!({"action": "key", "key": "ctrl+s"})),
    );
    assert_eq!(
        d.status().last_action.unwrap().chord.as_deref(),
        Some("ctrl+s")
    );
}

#[test]
fn viewers_are_listed_with_their_frames() {
    let d = Desk::default();
    let a = d.add_viewer();
    let b = d.add_viewer();
    d.frame_sent(a);
    d.frame_sent(a);
    let v = d.status().viewers;
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].frames, 2);
    assert_eq!(d.remove_viewer(a), 2);
    assert_eq!(d.status().viewers.len(), 1);
    assert_eq!(d.remove_viewer(b), 0);
}
