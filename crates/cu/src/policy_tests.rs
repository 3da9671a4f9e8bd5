use super::*;

fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn rate_window_rolls() {
    let mut w = RateWindow::new(10);
    for i in 0..10 {
        assert!(w.admit(s(i)), "request {i}");
    }
    assert!(!w.admit(s(30)), "the 11th inside the window");
    assert!(!w.admit(s(59)));
    assert!(w.admit(s(60)), "the first slot expired");
    assert!(!w.admit(s(60)));
}

#[test]
fn writeback_rules() {
    let rec = Writeback {
        hash: sha256("A"),
        counter: Some(4),
        at: s(100),
    };
    assert_eq!(
        writeback_verdict(None, s(0), Some("A"), None),
        WritebackVerdict::NoRecord
    );
    assert_eq!(
        writeback_verdict(Some(&rec), s(110), Some("A"), Some(4)),
        WritebackVerdict::Allow
    );
    assert_eq!(
        writeback_verdict(Some(&rec), s(130), Some("A"), None),
        WritebackVerdict::Allow,
        "exactly 30 s is still inside"
    );
    assert_eq!(
        writeback_verdict(Some(&rec), s(131), Some("A"), Some(4)),
        WritebackVerdict::Expired(31.0)
    );
    assert_eq!(
        writeback_verdict(Some(&rec), s(101), Some("B"), Some(4)),
        WritebackVerdict::Overwritten
    );
    assert_eq!(
        writeback_verdict(Some(&rec), s(101), None, None),
        WritebackVerdict::Overwritten
    );
    assert_eq!(
        writeback_verdict(Some(&rec), s(101), Some("A"), Some(6)),
        WritebackVerdict::Overwritten,
        "same text written again by someone else"
    );
}

#[test]
fn ids_are_fresh_and_well_formed() {
    let a = WindowRegistry::mint();
    assert_eq!(a.len(), 40);
    assert!(a.starts_with("win_"));
    assert_ne!(a, WindowRegistry::mint());
}

#[test]
fn windows_concealment_formats_are_markers() {
    let f = |id: u32, name: Option<&str>, dword: Option<u32>| WinClipFormat {
        id,
        name: name.map(str::to_owned),
        dword,
    };
    let text = f(13, None, None);
    assert_eq!(windows_clipboard_marker(std::slice::from_ref(&text)), None);
    assert_eq!(
        windows_clipboard_marker(&[text.clone(), f(0x0201, None, None)]).as_deref(),
        Some("CF_PRIVATE")
    );
    let exclude = f(
        0xC101,
        Some("ExcludeClipboardContentFromMonitorProcessing"),
        None,
    );
    assert_eq!(
        windows_clipboard_marker(&[text.clone(), exclude]).as_deref(),
        Some("ExcludeClipboardContentFromMonitorProcessing")
    );
    for name in ["CanIncludeInClipboardHistory", "CanUploadToCloudClipboard"] {
        assert_eq!(
            windows_clipboard_marker(&[text.clone(), f(0xC102, Some(name), Some(0))]).as_deref(),
            Some(name)
        );
        // 1 allows it: not a marker.
        assert_eq!(
            windows_clipboard_marker(&[text.clone(), f(0xC102, Some(name), Some(1))]),
            None
        );
        // Unreadable: fail closed.
        assert_eq!(
            windows_clipboard_marker(&[text.clone(), f(0xC102, Some(name), None)]).as_deref(),
            Some(name)
        );
    }
    assert_eq!(
        windows_clipboard_marker(&[text, f(0xC103, Some("HTML Format"), None)]),
        None
    );
}
