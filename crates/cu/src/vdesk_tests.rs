use super::*;

fn every_corner(screen: VirtualScreen) -> Vec<[i64; 2]> {
    let [x0, y0] = screen.origin;
    let [x1, y1] = [x0 + screen.size[0] - 1, y0 + screen.size[1] - 1];
    vec![
        [x0, y0],
        [x1, y0],
        [x0, y1],
        [x1, y1],
        [0, 0],
        [0, y1],
        [x1, 0],
    ]
}

fn lands(p: [i64; 2], screen: VirtualScreen) {
    let n = normalise(p, screen).unwrap_or_else(|| panic!("{p:?} refused on {screen:?}"));
    assert_eq!(denormalise(n, screen), p, "{p:?} -> {n:?} on {screen:?}");
}

#[test]
fn a_monitor_left_of_the_primary_shifts_the_origin() {
    // 1920x1080 primary at 0,0; a 2560x1440 monitor to its left at -2560,0.
    let screen = VirtualScreen {
        origin: [-2560, 0],
        size: [4480, 1440],
    };
    for p in every_corner(screen) {
        lands(p, screen);
    }
    // The primary's top-left is 2560/4480 of the way across, not at 0 (rdev's answer).
    let n = normalise([0, 0], screen).unwrap();
    assert!((37_440..37_460).contains(&n[0]), "{n:?}");
    lands([-1, 500], screen);
    lands([-2560, 1439], screen);
}

#[test]
fn a_monitor_above_the_primary_shifts_the_origin() {
    let screen = VirtualScreen {
        origin: [0, -1200],
        size: [1920, 2280],
    };
    for p in every_corner(screen) {
        lands(p, screen);
    }
    lands([100, -1], screen);
    lands([1919, -1200], screen);
}

#[test]
fn monitors_left_and_above_with_odd_sizes_land_on_every_pixel_of_a_row() {
    let screen = VirtualScreen {
        origin: [-1366, -768],
        size: [3286, 1848],
    };
    for x in screen.origin[0]..screen.origin[0] + screen.size[0] {
        lands([x, -1], screen);
    }
    for y in screen.origin[1]..screen.origin[1] + screen.size[1] {
        lands([7, y], screen);
    }
}

#[test]
fn a_single_primary_keeps_the_plain_mapping() {
    let screen = VirtualScreen {
        origin: [0, 0],
        size: [1024, 768],
    };
    for p in every_corner(screen) {
        lands(p, screen);
    }
}

#[test]
fn points_outside_or_an_empty_screen_are_refused() {
    let screen = VirtualScreen {
        origin: [-1920, 0],
        size: [3840, 1080],
    };
    assert_eq!(normalise([-1921, 0], screen), None);
    assert_eq!(normalise([1920, 0], screen), None);
    assert_eq!(normalise([0, 1080], screen), None);
    assert_eq!(normalise([0, -1], screen), None);
    assert_eq!(normalise([i64::MIN, 0], screen), None);
    let empty = VirtualScreen {
        origin: [0, 0],
        size: [0, 0],
    };
    assert_eq!(normalise([0, 0], empty), None);
}
