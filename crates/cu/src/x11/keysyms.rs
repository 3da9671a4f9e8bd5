//! X keysyms of the chord names (4.2.1) and of characters.

use crate::keys::Key;
use crate::keys::Modifier;
use crate::keys::Named;

/// `Shift_L`.
pub(super) const SHIFT_L: u32 = 0xffe1;

/// The keysym of a character: Latin-1 directly, anything else as a Unicode keysym.
pub(super) fn for_char(c: char) -> u32 {
    let cp = u32::from(c);
    if (0x20..=0x7e).contains(&cp) || (0xa0..=0xff).contains(&cp) {
        cp
    } else {
        0x0100_0000 | cp
    }
}

/// The keysym of a chord key.
pub(super) fn for_key(k: Key) -> u32 {
    match k {
        Key::Mod(m) => match m {
            Modifier::Shift => SHIFT_L,
            Modifier::Ctrl => 0xffe3,
            Modifier::Alt => 0xffe9,
            Modifier::Super => 0xffeb,
        },
        Key::ModRight(m) => match m {
            Modifier::Shift => 0xffe2,
            Modifier::Ctrl => 0xffe4,
            Modifier::Alt => 0xffea,
            Modifier::Super => 0xffec,
        },
        Key::F(n) => 0xffbe + u32::from(n.saturating_sub(1)),
        Key::Num(n) => 0xffb0 + u32::from(n),
        Key::Char(c) => for_char(c.to_ascii_lowercase()),
        Key::Named(n) => match n {
            Named::Enter => 0xff0d,
            Named::Tab => 0xff09,
            Named::Escape => 0xff1b,
            Named::Space => 0x20,
            Named::Backspace => 0xff08,
            Named::Delete => 0xffff,
            Named::Insert => 0xff63,
            Named::Home => 0xff50,
            Named::End => 0xff57,
            Named::PageUp => 0xff55,
            Named::PageDown => 0xff56,
            Named::Up => 0xff52,
            Named::Down => 0xff54,
            Named::Left => 0xff51,
            Named::Right => 0xff53,
            Named::CapsLock => 0xffe5,
            Named::NumLock => 0xff7f,
            Named::ScrollLock => 0xff14,
            Named::PrintScreen => 0xff61,
            Named::Pause => 0xff13,
            Named::Menu => 0xff67,
            Named::VolumeUp => 0x1008_ff13,
            Named::VolumeDown => 0x1008_ff11,
            Named::VolumeMute => 0x1008_ff12,
            Named::PlayPause => 0x1008_ff14,
            Named::NextTrack => 0x1008_ff17,
            Named::PrevTrack => 0x1008_ff16,
        },
    }
}
