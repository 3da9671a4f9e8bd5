use super::*;
use shim_protocol::ErrorCode;

fn code(wire: &str, os: PathOs) -> ErrorCode {
    match JailPath::parse(wire, os, Some("/home/u")) {
        Ok(_) => panic!("{wire:?} unexpectedly accepted"),
        Err(e) => e.code(),
    }
}

fn win(wire: &str) -> Result<String, ErrorCode> {
    JailPath::parse(wire, PathOs::Windows, Some("C:\\Users\\u"))
        .map(|p| p.normalized(PathOs::Windows))
        .map_err(|e| e.code())
}

fn posix(wire: &str) -> Result<String, ErrorCode> {
    JailPath::parse(wire, PathOs::Linux, Some("/home/u"))
        .map(|p| p.normalized(PathOs::Linux))
        .map_err(|e| e.code())
}

#[test]
fn j_str_1_nul_is_invalid_everywhere() {
    for os in [PathOs::Linux, PathOs::Darwin, PathOs::Windows] {
        assert_eq!(code("/a/b\0c", os), ErrorCode::PathInvalidChars);
        // NUL wins over relative and reserved names.
        assert_eq!(code("CON\0", os), ErrorCode::PathInvalidChars);
    }
}

#[test]
fn j_lex_1_separators_dots_trailing() {
    assert_eq!(posix("//a///./b/./").unwrap(), "/a/b");
    assert_eq!(posix("/a/b/..").unwrap(), "/a/b/..");
    assert_eq!(posix("/").unwrap(), "/");
    assert_eq!(win("C:/a\\b//c/.\\").unwrap(), "C:\\a\\b\\c");
    assert_eq!(win("c:\\").unwrap(), "c:\\");
}

#[test]
fn j_lex_2_home_expansion_only_for_bare_tilde() {
    assert_eq!(posix("~/x/y").unwrap(), "/home/u/x/y");
    assert_eq!(posix("~").unwrap(), "/home/u");
    assert_eq!(posix("~root/x"), Err(ErrorCode::PathOutsideAllowedRoot));
    assert_eq!(posix("/a/~/b").unwrap(), "/a/~/b");
    assert_eq!(win("~\\x").unwrap(), "C:\\Users\\u\\x");
    assert_eq!(
        JailPath::parse("~/x", PathOs::Linux, None).map_err(|e| e.code()),
        Err(ErrorCode::PathOutsideAllowedRoot)
    );
}

#[test]
fn j_lex_3_relative_paths_are_outside() {
    for w in ["", ".", "a/b", "./a", "../a"] {
        assert_eq!(
            code(w, PathOs::Linux),
            ErrorCode::PathOutsideAllowedRoot,
            "{w:?}"
        );
    }
    for w in ["", "C:", "C:foo", "\\Users\\x", "a\\b", "/Users/x"] {
        assert_eq!(
            code(w, PathOs::Windows),
            ErrorCode::PathOutsideAllowedRoot,
            "{w:?}"
        );
    }
}

#[test]
fn j_lex_4_dotdot_kept_on_posix_collapsed_on_windows() {
    let p = JailPath::parse("/r/lnk/../a.txt", PathOs::Linux, None).unwrap();
    assert_eq!(
        p.components(),
        [
            Component::Name("r"),
            Component::Name("lnk"),
            Component::ParentDir,
            Component::Name("a.txt")
        ]
    );
    assert_eq!(win("C:\\r\\lnk\\..\\a.txt").unwrap(), "C:\\r\\a.txt");
    assert_eq!(win("C:\\..\\..\\a").unwrap(), "C:\\a");
    assert_eq!(win("\\\\srv\\share\\..\\x").unwrap(), "\\\\srv\\share\\x");
}

#[test]
fn j_str_2_windows_prefixes() {
    for w in [
        "\\\\?\\C:\\x",
        "\\\\.\\C:",
        "\\??\\C:\\x",
        "//?/C:/x",
        "//./pipe/x",
    ] {
        assert_eq!(win(w), Err(ErrorCode::PathInvalidChars), "{w:?}");
    }
    assert_eq!(win("\\\\srv"), Err(ErrorCode::PathInvalidChars));
    assert_eq!(win("\\\\srv\\"), Err(ErrorCode::PathInvalidChars));
    assert_eq!(win("\\\\srv\\share").unwrap(), "\\\\srv\\share\\");
    assert_eq!(win("//srv/share/a/b").unwrap(), "\\\\srv\\share\\a\\b");
    let p = JailPath::parse("\\\\srv\\share\\a", PathOs::Windows, None).unwrap();
    assert_eq!(
        p.prefix(),
        &Prefix::Unc {
            server: "srv".into(),
            share: "share".into()
        }
    );
}

#[test]
fn j_str_3_lengths() {
    let long = format!("/{}", "a/".repeat(2049));
    assert_eq!(code(&long, PathOs::Linux), ErrorCode::PathInvalidChars);
    let ok = format!("/{}", "a/".repeat(600));
    assert!(posix(&ok).is_ok());
    assert_eq!(code(&ok, PathOs::Darwin), ErrorCode::PathInvalidChars);
    let comp = format!("/x/{}", "b".repeat(256));
    assert_eq!(code(&comp, PathOs::Linux), ErrorCode::PathInvalidChars);
    assert!(posix(&format!("/x/{}", "b".repeat(255))).is_ok());
    // UTF-8 bytes on POSIX, UTF-16 units on Windows: 128 two-byte chars = 256 bytes.
    let e = format!("/x/{}", "é".repeat(128));
    assert_eq!(code(&e, PathOs::Linux), ErrorCode::PathInvalidChars);
    assert!(win(&format!("C:\\{}", "é".repeat(128))).is_ok());
    let wlong = format!("C:\\{}", "a\\".repeat(16_400));
    assert_eq!(win(&wlong), Err(ErrorCode::PathInvalidChars));
    // Length is checked on the normalised string (doubled separators do not count).
    let doubled = format!("/{}", "a//".repeat(1500));
    assert!(posix(&doubled).is_ok());
}

#[test]
fn j_str_4_reserved_names() {
    for n in [
        "CON",
        "con.txt",
        "Nul.tar.gz",
        "aux",
        "CON .txt",
        "COM0",
        "com9",
        "LPT0",
        "lpt5",
        "COM¹",
        "lpt³.x",
        "CONIN$",
        "conout$.log",
        "PRN",
        "nul ",
    ] {
        assert!(is_reserved_windows_name(n), "{n:?}");
        assert_eq!(
            win(&format!("C:\\ws\\{n}")),
            Err(ErrorCode::PathReservedName),
            "{n:?}"
        );
    }
    for n in [
        "CONSOLE", "con_x", "xcon", "COM10", "LPT", "COM", "COM¹0", "CONIN",
    ] {
        assert!(!is_reserved_windows_name(n), "{n:?}");
    }
    // Every component, including one a later `..` removes; directories too.
    assert_eq!(win("C:\\ws\\aux\\f.txt"), Err(ErrorCode::PathReservedName));
    assert_eq!(
        win("C:\\ws\\con\\..\\f.txt"),
        Err(ErrorCode::PathReservedName)
    );
    // Reserved before stream syntax.
    assert_eq!(win("C:\\ws\\CON:x"), Err(ErrorCode::PathReservedName));
    // Reserved beats relative.
    assert_eq!(win("CON"), Err(ErrorCode::PathReservedName));
    // Ordinary names on POSIX.
    assert!(posix("/ws/CON").is_ok());
    assert!(posix("/ws/con.txt").is_ok());
}

#[test]
fn j_str_5_streams() {
    for w in [
        "C:\\ws\\a.txt:hidden",
        "C:\\ws\\a.txt::$DATA",
        "C:\\ws\\d:x\\f",
    ] {
        assert_eq!(win(w), Err(ErrorCode::PathInvalidChars), "{w:?}");
    }
    assert!(posix("/ws/a.txt:hidden").is_ok());
}

#[test]
fn j_str_6_invalid_chars() {
    for c in ['<', '>', '"', '|', '?', '*', '\u{1}', '\n', '\u{1f}'] {
        assert_eq!(
            win(&format!("C:\\ws\\a{c}b")),
            Err(ErrorCode::PathInvalidChars),
            "{c:?}"
        );
        assert!(posix(&format!("/ws/a{c}b")).is_ok(), "{c:?}");
    }
    assert!(win("C:\\ws\\a\u{7f}b").is_ok());
}

#[test]
fn j_str_7_trailing_dot_or_space() {
    for w in ["C:\\ws\\a.txt.", "C:\\ws\\dir \\f", "C:\\ws\\x."] {
        assert_eq!(win(w), Err(ErrorCode::PathInvalidChars), "{w:?}");
    }
    assert!(win("C:\\ws\\..\\x").is_ok());
    assert!(posix("/ws/a.txt.").is_ok());
    assert!(posix("/ws/dir /f").is_ok());
}

#[test]
fn windows_8_3_names_are_ordinary_names() {
    assert_eq!(
        win("C:\\Users\\ALICE~1\\AUTOGP~1\\f").unwrap(),
        "C:\\Users\\ALICE~1\\AUTOGP~1\\f"
    );
}

#[test]
fn wire_is_kept_verbatim() {
    let p = JailPath::parse("/a//b/", PathOs::Linux, None).unwrap();
    assert_eq!(p.wire(), "/a//b/");
}
