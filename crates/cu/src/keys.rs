//! The key-chord grammar and names of COMPUTER_USE_HW.md 4.2.1, and modifier names of 4.2.

use crate::error::CuError;
use crate::error::CuResult;

/// A modifier key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Modifier {
    /// Shift.
    Shift,
    /// Control (also Control on macOS, not Command).
    Ctrl,
    /// Alt / Option.
    Alt,
    /// Super_L on X11, Command on macOS, the Windows key.
    Super,
}

/// One key the backends know how to press.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    /// A left-hand modifier.
    Mod(Modifier),
    /// A right-hand modifier.
    ModRight(Modifier),
    /// A named, layout-independent key.
    Named(Named),
    /// A function key `F1`..`F24`.
    F(u8),
    /// A keypad digit.
    Num(u8),
    /// The key producing this printable ASCII character on the active layout.
    Char(char),
}

/// Named keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Named {
    Enter,
    Tab,
    Escape,
    Space,
    Backspace,
    Delete,
    Insert,
    Home,
    End,
    PageUp,
    PageDown,
    Up,
    Down,
    Left,
    Right,
    CapsLock,
    NumLock,
    ScrollLock,
    PrintScreen,
    Pause,
    Menu,
    VolumeUp,
    VolumeDown,
    VolumeMute,
    PlayPause,
    NextTrack,
    PrevTrack,
}

/// Maximum tokens in one chord.
pub const MAX_CHORD_TOKENS: usize = 8;

/// Parses one lower-cased, trimmed token.
fn token(t: &str) -> Option<Key> {
    use self::Named as N;
    use Key::Char;
    use Key::F;
    use Key::Mod;
    use Key::ModRight;
    use Key::Num;
    use Modifier as M;
    let named = Key::Named;
    Some(match t {
        "shift" => Mod(M::Shift),
        "ctrl" | "control" => Mod(M::Ctrl),
        "alt" | "option" => Mod(M::Alt),
        "super" | "meta" | "cmd" | "command" | "win" | "windows" => Mod(M::Super),
        "shiftright" => ModRight(M::Shift),
        "ctrlright" => ModRight(M::Ctrl),
        "altright" => ModRight(M::Alt),
        "superright" => ModRight(M::Super),
        "enter" | "return" => named(N::Enter),
        "tab" => named(N::Tab),
        "esc" | "escape" => named(N::Escape),
        "space" => named(N::Space),
        "backspace" => named(N::Backspace),
        "delete" | "del" => named(N::Delete),
        "insert" | "ins" => named(N::Insert),
        "home" => named(N::Home),
        "end" => named(N::End),
        "pageup" | "pgup" | "page_up" => named(N::PageUp),
        "pagedown" | "pgdn" | "page_down" => named(N::PageDown),
        "up" => named(N::Up),
        "down" => named(N::Down),
        "left" => named(N::Left),
        "right" => named(N::Right),
        "capslock" => named(N::CapsLock),
        "numlock" => named(N::NumLock),
        "scrolllock" => named(N::ScrollLock),
        "printscreen" | "prtsc" | "print" => named(N::PrintScreen),
        "pause" => named(N::Pause),
        "menu" | "apps" => named(N::Menu),
        "plus" => Char('+'),
        "minus" => Char('-'),
        "equal" => Char('='),
        "comma" => Char(','),
        "period" => Char('.'),
        "slash" => Char('/'),
        "backslash" => Char('\\'),
        "semicolon" => Char(';'),
        "apostrophe" | "quote" => Char('\''),
        "grave" | "backtick" => Char('`'),
        "bracketleft" => Char('['),
        "bracketright" => Char(']'),
        "volumeup" => named(N::VolumeUp),
        "volumedown" => named(N::VolumeDown),
        "volumemute" => named(N::VolumeMute),
        "playpause" => named(N::PlayPause),
        "nexttrack" => named(N::NextTrack),
        "prevtrack" => named(N::PrevTrack),
        _ => {
            if let Some(n) = t.strip_prefix('f').and_then(|d| d.parse::<u8>().ok())
                && (1..=24).contains(&n)
                && !t.starts_with("f0")
            {
                return Some(F(n));
            }
            if let Some(n) = t.strip_prefix("num").and_then(|d| d.parse::<u8>().ok())
                && n <= 9
                && t.len() == 4
            {
                return Some(Num(n));
            }
            let mut chars = t.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) if c.is_ascii_graphic() && c != '+' => Char(c),
                _ => return None,
            }
        }
    })
}

/// Parses a chord (`ctrl+shift+t`) into keys in press order. Nothing is pressed when
/// this fails.
pub fn parse_chord(key: &str) -> CuResult<Vec<Key>> {
    let tokens: Vec<String> = key
        .split('+')
        .map(|t| t.trim().to_lowercase())
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.is_empty() {
        return Err(CuError::unsupported("input.key", "key is required"));
    }
    if tokens.len() > MAX_CHORD_TOKENS {
        return Err(CuError::unsupported(
            "input.key",
            format!("at most {MAX_CHORD_TOKENS} keys per chord"),
        ));
    }
    tokens
        .iter()
        .map(|t| {
            token(t)
                .ok_or_else(|| CuError::unsupported("input.key", format!("unknown key name '{t}'")))
        })
        .collect()
}

/// Normalises a click/scroll modifier name (4.2 aliases, case-insensitive).
pub fn parse_modifier(name: &str) -> CuResult<Modifier> {
    match name.trim().to_lowercase().as_str() {
        "shift" => Ok(Modifier::Shift),
        "ctrl" | "control" => Ok(Modifier::Ctrl),
        "alt" | "option" => Ok(Modifier::Alt),
        "super" | "meta" | "cmd" | "command" | "win" => Ok(Modifier::Super),
        _ => Err(CuError::unsupported(
            "input.click.modifiers",
            format!("unknown modifier '{name}'"),
        )),
    }
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
