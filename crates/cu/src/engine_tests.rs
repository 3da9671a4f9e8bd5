use super::*;

#[test]
fn drag_paths_thin_from_200_points_and_end_on_the_last() {
    let p: Vec<[i64; 2]> = (0..150).map(|i| [i, 0]).collect();
    assert_eq!(thin_path(&p).len(), 150);
    let p: Vec<[i64; 2]> = (0..250).map(|i| [i, 0]).collect();
    let t = thin_path(&p);
    assert_eq!(t.len(), 126);
    assert_eq!(t.last(), Some(&[249, 0]));
    assert_eq!(thin_path(&[[1, 1]]), vec![[1, 1]]);
}

fn action(json: &str) -> InputAction {
    serde_json::from_str(json).unwrap()
}

#[test]
fn scroll_defaults_and_reversal() {
    assert_eq!(
        scroll_plan(&action(r#"{"action":"scroll"}"#)),
        (Wheel::Down, 3)
    );
    assert_eq!(
        scroll_plan(&action(
            r#"{"action":"scroll","clicks":0,"direction":"up"}"#
        )),
        (Wheel::Up, 3)
    );
    assert_eq!(
        scroll_plan(&action(r#"{"action":"scroll","scroll_amount":0}"#)),
        (Wheel::Down, 0)
    );
    assert_eq!(
        scroll_plan(&action(
            r#"{"action":"scroll","scroll_amount":-2,"scroll_direction":"left","direction":"up"}"#
        )),
        (Wheel::Right, 2)
    );
}
