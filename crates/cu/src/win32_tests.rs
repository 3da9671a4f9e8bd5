//! The Windows clipboard's concealment formats and change counter, on the real clipboard
//! (run under Wine by `cargo xtask wine-test`). The test plays the password manager: it
//! puts each concealment format next to text, as such programs do.

use windows_sys::Win32::System::DataExchange::CloseClipboard;
use windows_sys::Win32::System::DataExchange::EmptyClipboard;
use windows_sys::Win32::System::DataExchange::OpenClipboard;
use windows_sys::Win32::System::DataExchange::RegisterClipboardFormatW;
use windows_sys::Win32::System::DataExchange::SetClipboardData;
use windows_sys::Win32::System::Memory::GMEM_MOVEABLE;
use windows_sys::Win32::System::Memory::GlobalAlloc;
use windows_sys::Win32::System::Memory::GlobalLock;
use windows_sys::Win32::System::Memory::GlobalUnlock;

use crate::backend::ClipboardState;

const CF_UNICODETEXT: u32 = 13;

/// The clipboard is one per session: the tests take turns.
static CLIPBOARD: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A format to put next to the text: a registered name or a private id, with its bytes.
enum Extra {
    Named(&'static str, Vec<u8>),
    Id(u32, Vec<u8>),
}

fn global(bytes: &[u8]) -> *mut std::ffi::c_void {
    // SAFETY: a fresh moveable block of the given size, filled while locked.
    unsafe {
        let h = GlobalAlloc(GMEM_MOVEABLE, bytes.len().max(1));
        assert!(!h.is_null());
        let p = GlobalLock(h).cast::<u8>();
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
        GlobalUnlock(h);
        h
    }
}

/// Replaces the clipboard with `text` plus `extras`, as another program would.
fn copy(text: &str, extras: &[Extra]) {
    let utf16: Vec<u8> = text
        .encode_utf16()
        .chain(std::iter::once(0))
        .flat_map(u16::to_le_bytes)
        .collect();
    // SAFETY: the clipboard is opened, filled with blocks it takes over, and closed.
    unsafe {
        assert_ne!(OpenClipboard(std::ptr::null_mut()), 0);
        assert_ne!(EmptyClipboard(), 0);
        assert!(!SetClipboardData(CF_UNICODETEXT, global(&utf16)).is_null());
        for e in extras {
            let (id, bytes) = match e {
                Extra::Named(name, bytes) => {
                    let w: Vec<u16> = name.encode_utf16().chain(std::iter::once(0)).collect();
                    (RegisterClipboardFormatW(w.as_ptr()), bytes)
                }
                Extra::Id(id, bytes) => (*id, bytes),
            };
            assert!(!SetClipboardData(id, global(bytes)).is_null());
        }
        assert_ne!(CloseClipboard(), 0);
    }
}

fn read() -> ClipboardState {
    let d = crate::open(&crate::OpenOptions::default()).unwrap();
    d.clipboard.read().unwrap()
}

#[test]
fn each_concealment_format_hides_the_text_and_a_plain_copy_does_not() {
    let _turn = CLIPBOARD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let zero = 0u32.to_le_bytes().to_vec();
    let one = 1u32.to_le_bytes().to_vec();
    for (extra, marker) in [
        (
            Extra::Named("ExcludeClipboardContentFromMonitorProcessing", zero.clone()),
            Some("ExcludeClipboardContentFromMonitorProcessing"),
        ),
        (
            Extra::Named("CanIncludeInClipboardHistory", zero.clone()),
            Some("CanIncludeInClipboardHistory"),
        ),
        (
            Extra::Named("CanUploadToCloudClipboard", zero.clone()),
            Some("CanUploadToCloudClipboard"),
        ),
        (Extra::Id(0x0200, one.clone()), Some("CF_PRIVATE")),
        (
            Extra::Named("CanIncludeInClipboardHistory", one.clone()),
            None,
        ),
        (Extra::Named("CanUploadToCloudClipboard", one.clone()), None),
    ] {
        copy("hunter2", &[extra]);
        let s = read();
        assert_eq!(s.marker.as_deref(), marker);
        if marker.is_some() {
            assert_eq!(s.text, None);
        } else {
            assert_eq!(s.text.as_deref(), Some("hunter2"));
        }
    }
    copy("plain text", &[]);
    let s = read();
    assert_eq!((s.marker, s.text.as_deref()), (None, Some("plain text")));
}

#[test]
fn the_counter_moves_with_every_copy_so_a_newer_user_copy_is_seen() {
    let _turn = CLIPBOARD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let d = crate::open(&crate::OpenOptions::default()).unwrap();
    let ours = d.clipboard.write("written by the agent").unwrap();
    assert!(ours.is_some());
    assert_eq!(d.clipboard.counter(), ours);
    assert_eq!(d.clipboard.read().unwrap().counter, ours);
    copy("the user's newer copy", &[]);
    let now = d.clipboard.counter();
    assert!(now.is_some() && now != ours, "{now:?} {ours:?}");
}

/// The pointer, as this process reads it.
fn cursor() -> [i64; 2] {
    let mut p = windows_sys::Win32::Foundation::POINT { x: 0, y: 0 };
    // SAFETY: `p` is a valid POINT for the call to fill.
    assert_ne!(
        unsafe { windows_sys::Win32::UI::WindowsAndMessaging::GetCursorPos(&mut p) },
        0
    );
    [i64::from(p.x), i64::from(p.y)]
}

#[test]
fn pointer_moves_land_on_the_virtual_screens_corners_and_inside() {
    let d = crate::open(&crate::OpenOptions::default()).unwrap();
    let s = super::virtual_screen();
    let [x0, y0] = s.origin;
    let [x1, y1] = [x0 + s.size[0] - 1, y0 + s.size[1] - 1];
    for p in [[x0, y0], [x1, y1], [x0, y1], [x1, y0], [x0 + 123, y0 + 77]] {
        d.input.move_to(p).unwrap();
        let mut at = cursor();
        for _ in 0..50 {
            if at == p {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            at = cursor();
        }
        assert_eq!(at, p, "on {s:?}");
    }
    // Outside the virtual screen: a typed error, no move.
    assert!(d.input.move_to([x1 + 1, y0]).is_err());
}

#[test]
fn the_elevation_probe_reads_the_token() {
    // Wine gives every process a readable token; the answer itself depends on the prefix.
    let e = super::elevated();
    eprintln!("win32: elevated = {e:?}");
    assert!(e.is_some());
}
