//! Fuzzes the key-chord grammar and modifier names of COMPUTER_USE_HW.md 4.2 / 4.2.1
//! (`shim_cu::keys::parse_chord`, `parse_modifier`), which parse names sent by the platform.
//!
//! Invariants: both return a value or a typed `CuError`, never panic. An accepted chord has
//! 1..=8 keys, only printable ASCII characters, F1..F24 and keypad 0..9; writing its keys back
//! as names and parsing again gives the same keys; names are case-insensitive (an ASCII input
//! upper-cased parses to the same result); and an accepted modifier name is also a chord of
//! exactly that one modifier.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shim_cu::keys::Key;
use shim_cu::keys::MAX_CHORD_TOKENS;
use shim_cu::keys::Modifier;
use shim_cu::keys::Named;
use shim_cu::keys::parse_chord;
use shim_cu::keys::parse_modifier;

fn modifier(m: Modifier) -> &'static str {
    match m {
        Modifier::Shift => "shift",
        Modifier::Ctrl => "ctrl",
        Modifier::Alt => "alt",
        Modifier::Super => "super",
    }
}

fn named(n: Named) -> &'static str {
    match n {
        Named::Enter => "enter",
        Named::Tab => "tab",
        Named::Escape => "escape",
        Named::Space => "space",
        Named::Backspace => "backspace",
        Named::Delete => "delete",
        Named::Insert => "insert",
        Named::Home => "home",
        Named::End => "end",
        Named::PageUp => "pageup",
        Named::PageDown => "pagedown",
        Named::Up => "up",
        Named::Down => "down",
        Named::Left => "left",
        Named::Right => "right",
        Named::CapsLock => "capslock",
        Named::NumLock => "numlock",
        Named::ScrollLock => "scrolllock",
        Named::PrintScreen => "printscreen",
        Named::Pause => "pause",
        Named::Menu => "menu",
        Named::VolumeUp => "volumeup",
        Named::VolumeDown => "volumedown",
        Named::VolumeMute => "volumemute",
        Named::PlayPause => "playpause",
        Named::NextTrack => "nexttrack",
        Named::PrevTrack => "prevtrack",
    }
}

/// A name the grammar maps back to `k`.
fn name(k: Key) -> String {
    match k {
        Key::Mod(m) => modifier(m).to_owned(),
        Key::ModRight(m) => format!("{}right", modifier(m)),
        Key::Named(n) => named(n).to_owned(),
        Key::F(n) => format!("f{n}"),
        Key::Num(n) => format!("num{n}"),
        Key::Char('+') => "plus".to_owned(),
        Key::Char(c) => c.to_string(),
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(keys) = parse_chord(&text) {
        assert!(
            (1..=MAX_CHORD_TOKENS).contains(&keys.len()),
            "{} keys",
            keys.len()
        );
        for k in &keys {
            match *k {
                Key::F(n) => assert!((1..=24).contains(&n), "F{n}"),
                Key::Num(n) => assert!(n <= 9, "num{n}"),
                Key::Char(c) => assert!(c.is_ascii_graphic(), "char {c:?}"),
                _ => {}
            }
        }
        let spelled: Vec<String> = keys.iter().map(|k| name(*k)).collect();
        let again = parse_chord(&spelled.join("+"));
        assert_eq!(again.ok().as_ref(), Some(&keys), "names do not round-trip");
    }
    if text.is_ascii() {
        let upper = text.to_ascii_uppercase();
        assert_eq!(
            parse_chord(&upper).ok(),
            parse_chord(&text).ok(),
            "chord names are not case-insensitive"
        );
        assert_eq!(parse_modifier(&upper).ok(), parse_modifier(&text).ok());
    }
    if let Ok(m) = parse_modifier(&text) {
        assert_eq!(
            parse_chord(&text).ok(),
            Some(vec![Key::Mod(m)]),
            "modifier {text:?} is not a one-key chord"
        );
    }
});
