//! Windows absolute pointer coordinates (COMPUTER_USE_HW.md, negative coordinates).
//!
//! `SendInput` with `MOUSEEVENTF_ABSOLUTE | MOUSEEVENTF_VIRTUALDESK` takes coordinates
//! normalised to 0..=65535 across the virtual screen, whose origin
//! (`SM_XVIRTUALSCREEN`, `SM_YVIRTUALSCREEN`) is negative whenever a monitor sits left of
//! or above the primary. rdev divides by the virtual screen's size but ignores its origin,
//! so its moves land one monitor off there. This is the arithmetic, kept free of OS calls
//! so it is tested on every OS.

/// The virtual screen: origin and size in pixels, as `GetSystemMetrics` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VirtualScreen {
    /// Top-left corner (`SM_XVIRTUALSCREEN`, `SM_YVIRTUALSCREEN`); negative when a monitor
    /// sits left of or above the primary.
    pub origin: [i64; 2],
    /// Width and height (`SM_CXVIRTUALSCREEN`, `SM_CYVIRTUALSCREEN`).
    pub size: [i64; 2],
}

/// The normalised `SendInput` coordinates of pixel `p` (virtual-screen pixels, the
/// primary's top-left at 0,0): the centre of the pixel's span, so Windows' own
/// `n * size / 65536` lands on `p` itself. `None` when the screen is empty or `p` lies
/// outside it.
pub fn normalise(p: [i64; 2], screen: VirtualScreen) -> Option<[i32; 2]> {
    let axis = |v: i64, origin: i64, size: i64| -> Option<i32> {
        let rel = v.checked_sub(origin)?;
        if size <= 0 || rel < 0 || rel >= size {
            return None;
        }
        let n = ((2 * rel + 1) * 32_768) / size;
        i32::try_from(n.min(65_535)).ok()
    };
    Some([
        axis(p[0], screen.origin[0], screen.size[0])?,
        axis(p[1], screen.origin[1], screen.size[1])?,
    ])
}

/// The pixel Windows moves the pointer to for normalised `n` (the inverse of
/// [`normalise`], as documented for `MOUSEEVENTF_VIRTUALDESK`).
pub fn denormalise(n: [i32; 2], screen: VirtualScreen) -> [i64; 2] {
    [
        screen.origin[0] + i64::from(n[0]) * screen.size[0] / 65_536,
        screen.origin[1] + i64::from(n[1]) * screen.size[1] / 65_536,
    ]
}

#[cfg(test)]
#[path = "vdesk_tests.rs"]
mod tests;
